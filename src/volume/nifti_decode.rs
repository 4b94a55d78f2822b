//! Voxel bytes to numbers while streaming: datatype, byte order and scl_slope/scl_inter applied
//! per read buffer, so a volume is never held twice.

use anyhow::Result;
use rayon::prelude::*;
use std::io::Read;

#[derive(Clone, Copy, Debug)]
enum Kind {
    U8,
    I8,
    U16,
    I16,
    U32,
    I32,
    U64,
    I64,
    F32,
    F64,
}

/// How to turn one voxel's bytes into its value.
#[derive(Clone, Copy, Debug)]
pub struct Decode {
    kind: Kind,
    big_endian: bool,
    /// (slope, intercept) when the header asks for scaling.
    scale: Option<(f64, f64)>,
    /// Bytes per voxel.
    pub bytes: usize,
}

/// Read buffer size: one writer's member (nifti_write BLOCK), converted on every core in
/// pieces of PIECE bytes. One thread's conversion (bytes -> f64 -> the caller's type) held a
/// 157 MB tensor's read to ~1 GB/s however many cores inflated it.
const CHUNK: usize = 4 << 20;
const PIECE: usize = 64 << 10;

impl Decode {
    /// From a header already checked by `check_header` (`elem` is its type name).
    pub fn of(h: &nifti::NiftiHeader, elem: &str) -> Result<Decode> {
        let (kind, bytes) = match elem {
            "uint8" => (Kind::U8, 1),
            "int8" => (Kind::I8, 1),
            "uint16" => (Kind::U16, 2),
            "int16" => (Kind::I16, 2),
            "uint32" => (Kind::U32, 4),
            "int32" => (Kind::I32, 4),
            "uint64" => (Kind::U64, 8),
            "int64" => (Kind::I64, 8),
            "float32" => (Kind::F32, 4),
            "float64" => (Kind::F64, 8),
            other => anyhow::bail!("unsupported data type {other}"),
        };
        // NIfTI: a slope of 0 (or a non-finite one) means "no scaling".
        let (s, i) = (h.scl_slope as f64, h.scl_inter as f64);
        let scale = (s != 0.0 && s.is_finite() && i.is_finite() && !(s == 1.0 && i == 0.0)).then_some((s, i));
        Ok(Decode { kind, big_endian: h.endianness == nifti::Endianness::Big, scale, bytes })
    }

    /// Fills `out` from `r`, one voxel per element, through `conv`.
    pub fn read<O: Copy + Send>(&self, r: &mut dyn Read, out: &mut [O], conv: &(impl Fn(f64) -> O + Sync)) -> std::io::Result<()> {
        let per = CHUNK / self.bytes;
        let mut buf = vec![0u8; per * self.bytes];
        let step = PIECE / self.bytes;
        for o in out.chunks_mut(per) {
            let b = &mut buf[..o.len() * self.bytes];
            r.read_exact(b)?;
            o.par_chunks_mut(step).zip(b.par_chunks(step * self.bytes)).for_each(|(o, b)| self.convert(b, o, conv));
        }
        Ok(())
    }

    fn convert<O: Copy>(&self, b: &[u8], out: &mut [O], conv: &impl Fn(f64) -> O) {
        macro_rules! each {
            ($t:ty, $n:expr) => {{
                for (o, c) in out.iter_mut().zip(b.chunks_exact($n)) {
                    let a: [u8; $n] = c.try_into().expect("chunk size");
                    let v = if self.big_endian { <$t>::from_be_bytes(a) } else { <$t>::from_le_bytes(a) } as f64;
                    *o = conv(match self.scale {
                        Some((s, i)) => v * s + i,
                        None => v,
                    });
                }
            }};
        }
        match self.kind {
            Kind::U8 => each!(u8, 1),
            Kind::I8 => each!(i8, 1),
            Kind::U16 => each!(u16, 2),
            Kind::I16 => each!(i16, 2),
            Kind::U32 => each!(u32, 4),
            Kind::I32 => each!(i32, 4),
            Kind::U64 => each!(u64, 8),
            Kind::I64 => each!(i64, 8),
            Kind::F32 => each!(f32, 4),
            Kind::F64 => each!(f64, 8),
        }
    }
}
