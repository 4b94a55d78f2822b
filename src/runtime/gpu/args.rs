//! Typed kernel arguments: what a launch hands the layer, checked against the kernel's signature
//! before either API sees it.

use super::buffer::{Buf, RawBuf};
use super::texture::Texture3d;

/// Element types a device buffer may hold, with the name the signature check uses.
pub trait Elem: bytemuck::Pod + Send + Sync {
    const NAME: &'static str;
}
macro_rules! elem {
    ($($t:ty => $n:literal),*) => { $(impl Elem for $t { const NAME: &'static str = $n; })* };
}
elem!(f32 => "f32", i32 => "i32", u32 => "u32", u8 => "u8", u64 => "u64", i64 => "i64", u16 => "u16", [f32; 4] => "f32x4");

/// A buffer seen without its element type.
pub trait AnyBuf {
    fn elem_name(&self) -> &'static str;
    fn elem_count(&self) -> usize;
    fn raw(&self) -> &RawBuf;
}

impl<T: Elem> AnyBuf for Buf<T> {
    fn elem_name(&self) -> &'static str {
        T::NAME
    }
    fn elem_count(&self) -> usize {
        self.len()
    }
    fn raw(&self) -> &RawBuf {
        &self.raw
    }
}

/// One kernel argument.
pub enum Arg<'a> {
    Buf(&'a dyn AnyBuf),
    I32(i32),
    U32(u32),
    F32(f32),
    U64(u64),
    Tex(&'a Texture3d),
    /// A `#[repr(C)]` struct passed by value, as its bytes.
    Struct(&'a [u8]),
}

impl<'a> Arg<'a> {
    pub fn structure<T: bytemuck::Pod>(v: &'a T) -> Arg<'a> {
        Arg::Struct(bytemuck::bytes_of(v))
    }
    pub fn kind_name(&self) -> &'static str {
        match self {
            Arg::Buf(_) => "a buffer",
            Arg::I32(_) => "an int",
            Arg::U32(_) => "a uint",
            Arg::F32(_) => "a float",
            Arg::U64(_) => "a 64-bit uint",
            Arg::Tex(_) => "a texture",
            Arg::Struct(_) => "a struct",
        }
    }
}

impl<'a, T: Elem> From<&'a Buf<T>> for Arg<'a> {
    fn from(b: &'a Buf<T>) -> Self {
        Arg::Buf(b)
    }
}
impl<'a, T: Elem> From<&'a mut Buf<T>> for Arg<'a> {
    fn from(b: &'a mut Buf<T>) -> Self {
        Arg::Buf(b)
    }
}
impl<'a> From<&'a Texture3d> for Arg<'a> {
    fn from(t: &'a Texture3d) -> Self {
        Arg::Tex(t)
    }
}
impl From<i32> for Arg<'_> {
    fn from(v: i32) -> Self {
        Arg::I32(v)
    }
}
impl From<u32> for Arg<'_> {
    fn from(v: u32) -> Self {
        Arg::U32(v)
    }
}
impl From<f32> for Arg<'_> {
    fn from(v: f32) -> Self {
        Arg::F32(v)
    }
}
impl From<u64> for Arg<'_> {
    fn from(v: u64) -> Self {
        Arg::U64(v)
    }
}

/// `args![&buf, n as i32, 0.5f32, Arg::structure(&p)]` — a launch's argument list.
#[macro_export]
macro_rules! gpu_args {
    ($($a:expr),* $(,)?) => { &[$($crate::runtime::gpu::Arg::from($a)),*][..] };
}
pub use crate::gpu_args as args;
