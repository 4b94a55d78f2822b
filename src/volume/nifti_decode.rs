//! Voxel bytes to numbers while streaming: datatype, byte order and scl_slope/scl_inter applied
//! per read buffer, so a volume is never held twice.

use anyhow::Result;
use super::gz_members::ParallelMembers;
use super::read_pieces::{place_whole, Place};
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

    /// Fills `out` from `r`, one voxel per element, through `conv`; `done(n)` as each `n` bytes
    /// are converted (a read's progress).
    pub fn read<O: Copy + Send>(&self, r: &mut dyn Read, out: &mut [O], conv: &(impl Fn(f64) -> O + Sync), done: &(dyn Fn(usize) + Sync)) -> std::io::Result<()> {
        let per = CHUNK / self.bytes;
        let mut buf = vec![0u8; per * self.bytes];
        let step = PIECE / self.bytes;
        for o in out.chunks_mut(per) {
            let b = &mut buf[..o.len() * self.bytes];
            r.read_exact(b)?;
            o.par_chunks_mut(step).zip(b.par_chunks(step * self.bytes)).for_each(|(o, b)| self.convert(b, o, conv));
            done(b.len());
        }
        Ok(())
    }

    /// Fills `out` from what is left of a stream of gzip members that say their lengths
    /// (gz_members): one task per core takes the next member, inflates it and converts it
    /// straight into its voxels of `out` ([`Decode::read_pieces`]). Round 24's first version
    /// went in waves of one member per core, and a 157 MB file's last wave held 7 of 4 MiB for 16
    /// cores; before that every inflated byte went through one thread's copy into a read buffer
    /// (145-160 ms for that file on the H100 host's 16 cores, ~4x one core). `done(n)` as each
    /// member's `n` bytes are converted, in whatever order the tasks finish.
    pub fn read_members<O: Copy + Send, R: Read + Send>(&self, src: &mut ParallelMembers<R>, out: &mut [O], conv: &(impl Fn(f64) -> O + Sync), done: &(dyn Fn(usize) + Sync)) -> std::io::Result<()> {
        let b = self.bytes;
        let whole = Whole(out.as_mut_ptr(), out.len());
        let place = |v: usize, x: &[u8]| {
            // SAFETY: pieces cover disjoint byte ranges of the data, so their voxels are
            // disjoint ranges of `out`, each placed once.
            let mine = unsafe { whole.range(v, v + x.len() / b) };
            mine.par_chunks_mut(PIECE / b).zip(x.par_chunks(PIECE)).for_each(|(o, x)| self.convert(x, o, conv));
        };
        self.read_members_to(src, out.len(), &place, done)
    }

    /// What is left of a stream of our members, its first `nvox` voxels handed to `place`
    /// ([`Decode::read_pieces`]).
    pub(super) fn read_members_to<R: Read + Send>(&self, src: &mut ParallelMembers<R>, nvox: usize, place: &Place, done: &(dyn Fn(usize) + Sync)) -> std::io::Result<()> {
        let want = nvox * self.bytes;
        // What the header's read inflated beyond the header (our writer's header is a member of
        // its own, so usually nothing), placed here first, in order.
        let (mut at, mut edges) = (0, Vec::new());
        for r in src.take_inflated() {
            let (s, e) = (at.min(want), (at + r.len()).min(want));
            at += r.len();
            edges.extend(place_whole(self.bytes, &r, s, e, place));
            done(e - s);
        }
        self.read_pieces(src, at, want, edges, place, done)
    }

    pub(super) fn convert<O: Copy>(&self, b: &[u8], out: &mut [O], conv: &impl Fn(f64) -> O) {
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

/// `out` for the member tasks of `Decode::read_members`, each of which writes its own range.
pub(crate) struct Whole<O>(pub(crate) *mut O, pub(crate) usize);
// SAFETY: only disjoint ranges are handed out (`range`), each to one task.
unsafe impl<O: Send> Send for Whole<O> {}
unsafe impl<O: Send> Sync for Whole<O> {}

impl<O> Whole<O> {
    /// # Safety
    /// No other live slice may overlap `a..b`.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn range(&self, a: usize, b: usize) -> &mut [O] {
        assert!(a <= b && b <= self.1, "a voxel range past the volume");
        unsafe { std::slice::from_raw_parts_mut(self.0.add(a), b - a) }
    }
}

/// The voxels wholly inside data bytes [s, e) of `b` bytes each: [fe, le), empty (fe = le)
/// where none is.
pub(super) fn whole_voxels(s: usize, e: usize, b: usize) -> (usize, usize) {
    let fe = s.div_ceil(b);
    (fe, (e / b).max(fe))
}

/// The bytes of one voxel that straddles pieces, gathered in stream order.
#[derive(Default)]
pub(super) struct Joint {
    voxel: usize,
    got: usize,
    bytes: [u8; 8],
}

impl Joint {
    /// Adds the bytes at data offset `off`; `whole(voxel, bytes)` for each voxel completed.
    pub(super) fn add(&mut self, d: &Decode, off: usize, bytes: &[u8], whole: &mut impl FnMut(usize, &[u8])) {
        for (j, &x) in bytes.iter().enumerate() {
            let p = off + j;
            if p / d.bytes != self.voxel || self.got == 0 {
                self.voxel = p / d.bytes;
                self.got = 0;
            }
            self.bytes[p % d.bytes] = x;
            self.got += 1;
            if self.got == d.bytes {
                whole(self.voxel, &self.bytes[..d.bytes]);
                self.got = 0;
            }
        }
    }
}
