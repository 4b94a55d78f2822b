//! Voxel bytes to numbers while streaming: datatype, byte order and scl_slope/scl_inter applied
//! per read buffer, so a volume is never held twice.

use anyhow::Result;
use super::gz_members::{self, ParallelMembers};
use rayon::prelude::*;
use std::io::Read;
use std::sync::Mutex;

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

    /// Fills `out` from what is left of a stream of gzip members that say their lengths
    /// (gz_members), each member inflated and converted on one core straight into its place in
    /// `out`; the few voxels whose bytes straddle two members are put together afterwards. On
    /// the H100 host [`Self::read`] took a 157 MB tensor to 145-160 ms on 16 cores, ~4x one core:
    /// every byte went through one thread's copy into the read buffer, and a wave's conversion
    /// waited for its inflation.
    pub fn read_members<O: Copy + Send, R: Read + Send>(&self, src: &mut ParallelMembers<R>, out: &mut [O], conv: &(impl Fn(f64) -> O + Sync)) -> std::io::Result<()> {
        let want = out.len() * self.bytes;
        let mut place = Placer { at: 0, want, joint: Joint::default() };
        let pool = Mutex::new(Vec::<Vec<u8>>::new());
        let first = src.take_inflated();
        let lens: Vec<usize> = first.iter().map(|p| p.len()).collect();
        place.wave(self, &lens, out, conv, |i| Ok(std::borrow::Cow::Borrowed(&first[i][..])))?;
        let mut wave = src.next_wave()?;
        while !wave.is_empty() && place.at < want {
            let lens: Vec<usize> = wave.iter().map(|m| gz_members::raw_len(m)).collect();
            let take = || pool.lock().unwrap_or_else(|e| e.into_inner()).pop().unwrap_or_default();
            let inflate = |i: usize| gz_members::inflate(&wave[i], take()).map(std::borrow::Cow::Owned);
            let give = |b: Vec<u8>| pool.lock().unwrap_or_else(|e| e.into_inner()).push(b);
            // The next wave read while this one is inflated and converted.
            let (next, placed) = rayon::join(|| src.next_wave(), || place.wave_with(self, &lens, out, conv, inflate, give));
            placed?;
            wave = next?;
        }
        if place.at < want {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
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

/// Where the next piece of a member stream goes: `at` bytes of the `want` placed so far.
struct Placer {
    at: usize,
    want: usize,
    joint: Joint,
}

impl Placer {
    fn wave<'a, O: Copy + Send>(&mut self, d: &Decode, lens: &[usize], out: &mut [O], conv: &(impl Fn(f64) -> O + Sync), raw: impl Fn(usize) -> std::io::Result<std::borrow::Cow<'a, [u8]>> + Sync) -> std::io::Result<()> {
        self.wave_with(d, lens, out, conv, raw, |_| ())
    }

    /// Pieces `0..lens.len()` of the stream in order (piece i of `lens[i]` bytes, got by `raw(i)`
    /// on some core and handed back to `give` when converted): the voxels wholly inside a piece
    /// converted there, the bytes of those that straddle pieces joined in order afterwards.
    fn wave_with<'a, O: Copy + Send>(
        &mut self,
        d: &Decode,
        lens: &[usize],
        out: &mut [O],
        conv: &(impl Fn(f64) -> O + Sync),
        raw: impl Fn(usize) -> std::io::Result<std::borrow::Cow<'a, [u8]>> + Sync,
        give: impl Fn(Vec<u8>) + Sync,
    ) -> std::io::Result<()> {
        let b = d.bytes;
        // Each piece's byte range [s, e) of the data (clipped to what is wanted) and its whole
        // voxels [fe, le).
        let mut spans = Vec::with_capacity(lens.len());
        for &len in lens {
            let s = self.at.min(self.want);
            let e = (self.at + len).min(self.want);
            self.at += len;
            let (fe, le) = (s.div_ceil(b), e / b);
            spans.push((s, e, fe, le.max(fe)));
        }
        // Disjoint slices of `out` for the pieces' whole voxels, in order.
        let mut rest = &mut out[..];
        let mut base = 0;
        let mut parts = Vec::with_capacity(spans.len());
        for &(_, _, fe, le) in &spans {
            let (_, r) = std::mem::take(&mut rest).split_at_mut(fe - base);
            let (mine, r) = r.split_at_mut(le - fe);
            parts.push(mine);
            rest = r;
            base = le;
        }
        let edges: Vec<std::io::Result<Vec<(usize, Vec<u8>)>>> = parts
            .into_par_iter()
            .zip(spans.par_iter())
            .enumerate()
            .map(|(i, (mine, &(s, e, fe, le)))| {
                if s == e {
                    return Ok(Vec::new());
                }
                let r = raw(i)?;
                let (lo, hi) = (fe * b - s, le * b - s);
                let mut edge = Vec::new();
                if fe < le {
                    mine.par_chunks_mut(PIECE / b).zip(r[lo..hi].par_chunks(PIECE)).for_each(|(o, x)| d.convert(x, o, conv));
                    if lo > 0 {
                        edge.push((s, r[..lo].to_vec()));
                    }
                    if hi < e - s {
                        edge.push((s + hi, r[hi..e - s].to_vec()));
                    }
                } else {
                    edge.push((s, r[..e - s].to_vec()));
                }
                if let std::borrow::Cow::Owned(v) = r {
                    give(v);
                }
                Ok(edge)
            })
            .collect();
        for edge in edges {
            for (off, bytes) in edge? {
                self.joint.add(d, off, &bytes, out, conv);
            }
        }
        Ok(())
    }
}

/// The bytes of one voxel that straddles pieces, gathered in stream order.
#[derive(Default)]
struct Joint {
    voxel: usize,
    got: usize,
    bytes: [u8; 8],
}

impl Joint {
    fn add<O: Copy>(&mut self, d: &Decode, off: usize, bytes: &[u8], out: &mut [O], conv: &impl Fn(f64) -> O) {
        for (j, &x) in bytes.iter().enumerate() {
            let p = off + j;
            if p / d.bytes != self.voxel || self.got == 0 {
                self.voxel = p / d.bytes;
                self.got = 0;
            }
            self.bytes[p % d.bytes] = x;
            self.got += 1;
            if self.got == d.bytes {
                d.convert(&self.bytes[..d.bytes], &mut out[self.voxel..self.voxel + 1], conv);
                self.got = 0;
            }
        }
    }
}
