//! Device buffers: typed on the host side, one raw allocation per API underneath.

use super::args::Elem;
use std::marker::PhantomData;

/// A device allocation of either API; freed on drop.
pub enum RawBuf {
    Cl(super::cl::ClMem),
    Cu(super::cu::CuMem),
}

/// A typed device buffer of `len` elements.
pub struct Buf<T: Elem> {
    pub(crate) raw: RawBuf,
    len: usize,
    _t: PhantomData<T>,
}

impl<T: Elem> Buf<T> {
    pub(crate) fn new(raw: RawBuf, len: usize) -> Buf<T> {
        Buf { raw, len, _t: PhantomData }
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn bytes(&self) -> usize {
        self.len * std::mem::size_of::<T>()
    }
}

/// Bytes of an allocation for `n` elements: never zero, since neither API allocates nothing.
pub(crate) fn alloc_bytes<T>(n: usize) -> usize {
    (n * std::mem::size_of::<T>()).max(16)
}
