//! A read's voxel bytes handed out in pieces to every core, each piece's whole voxels given to a
//! `place` that puts them where the reader wants them: the whole array (the whole read), or
//! only a mask's voxels of it (bedpost's, `nifti_stream`), so that a masked read inflates,
//! converts and gathers on every core, holding the pieces in flight and not the series.

use super::gz_members::{self, ParallelMembers};
use super::nifti_decode::{whole_voxels, Decode, Joint};
use rayon::prelude::*;
use std::io::{self, Read};
use std::sync::Mutex;

/// Bytes of a piece read from a plain file or one stream (a multiple of every voxel size).
const CHUNK: usize = 4 << 20;

/// Takes voxels `v..` (their bytes, whole voxels only), from any task; never twice the same.
pub(super) type Place<'a> = dyn Fn(usize, &[u8]) + Sync + 'a;

/// Where the pieces come from: the next piece's job is taken in stream order under a lock
/// (`next`, told `at`, the bytes handed out so far, of `want`), and made into its bytes outside
/// it (`bytes`), side by side.
pub(super) trait Pieces: Send {
    type Job: Send;
    /// The next piece's job and its length in bytes (None at the end), `buf` a buffer to fill.
    fn next(&mut self, at: usize, want: usize, buf: Vec<u8>) -> io::Result<Option<(Self::Job, usize)>>;
    fn bytes(job: Self::Job) -> io::Result<Vec<u8>>;
}

/// Our gzip members: each inflated by the task that took it.
impl<R: Read + Send> Pieces for &mut ParallelMembers<R> {
    type Job = (Vec<u8>, Vec<u8>);
    fn next(&mut self, _: usize, _: usize, buf: Vec<u8>) -> io::Result<Option<(Self::Job, usize)>> {
        Ok(self.next_member()?.map(|m| {
            let n = gz_members::raw_len(&m);
            ((m, buf), n)
        }))
    }
    fn bytes((m, buf): Self::Job) -> io::Result<Vec<u8>> {
        gz_members::inflate(&m, buf)
    }
}

/// A plain file whose voxels start at byte `base`: each piece read at its offset by its task.
pub(super) struct Plain<'a> {
    pub(super) file: &'a std::fs::File,
    pub(super) base: u64,
}

impl<'a> Pieces for Plain<'a> {
    type Job = (&'a std::fs::File, u64, Vec<u8>);
    fn next(&mut self, at: usize, want: usize, mut buf: Vec<u8>) -> io::Result<Option<(Self::Job, usize)>> {
        let n = CHUNK.min(want - at);
        buf.resize(n, 0);
        Ok(Some(((self.file, self.base + at as u64, buf), n)))
    }
    fn bytes((f, at, mut buf): Self::Job) -> io::Result<Vec<u8>> {
        read_at(f, &mut buf, at)?;
        Ok(buf)
    }
}

#[cfg(unix)]
fn read_at(f: &std::fs::File, buf: &mut [u8], at: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(f, buf, at)
}

#[cfg(windows)]
fn read_at(f: &std::fs::File, mut buf: &mut [u8], mut at: u64) -> io::Result<()> {
    while !buf.is_empty() {
        match std::os::windows::fs::FileExt::seek_read(f, buf, at)? {
            0 => return Err(io::ErrorKind::UnexpectedEof.into()),
            k => {
                buf = &mut buf[k..];
                at += k as u64;
            }
        }
    }
    Ok(())
}

/// A lock, whether or not another task panicked holding it.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Decode {
    /// Bytes `start..want` of the voxels from `src`, one task per core taking the next piece
    /// (its place in the data known from the lengths before it), making its bytes and placing
    /// its whole voxels; the few voxels whose bytes straddle two pieces (`edges`: bytes with
    /// their offsets, some from before `start`) are put together at the end. No piece waits for
    /// another's. `done(n)` as each piece's `n` bytes are placed, in whatever order.
    pub(super) fn read_pieces<P: Pieces>(&self, src: P, start: usize, want: usize, edges: Vec<(usize, Vec<u8>)>, place: &Place, done: &(dyn Fn(usize) + Sync)) -> io::Result<()> {
        let b = self.bytes;
        let next = Mutex::new((src, start));
        let pool = Mutex::new(Vec::<Vec<u8>>::new());
        let edges = Mutex::new(edges);
        let failed = Mutex::new(None::<io::Error>);
        (0..rayon::current_num_threads().max(1)).into_par_iter().for_each(|_| loop {
            if lock(&failed).is_some() {
                return;
            }
            let buf = lock(&pool).pop().unwrap_or_default();
            let (job, s) = {
                let mut g = lock(&next);
                if g.1 >= want {
                    return;
                }
                let at = g.1;
                match g.0.next(at, want, buf) {
                    Ok(Some((job, n))) => {
                        g.1 += n;
                        (job, at)
                    }
                    Ok(None) => return,
                    Err(e) => {
                        *lock(&failed) = Some(e);
                        return;
                    }
                }
            };
            let r = match P::bytes(job) {
                Ok(r) => r,
                Err(e) => {
                    *lock(&failed) = Some(e);
                    return;
                }
            };
            let e = (s + r.len()).min(want);
            // Placed before the lock is taken: a place may run on every core, and this worker,
            // waiting for it, may take up another piece's task, which would wait on a lock that
            // its own thread holds (the H200 host's dti hung so, now and then).
            let edge = place_whole(b, &r, s, e, place);
            lock(&edges).extend(edge);
            done(e.saturating_sub(s));
            lock(&pool).push(r);
        });
        if let Some(e) = lock(&failed).take() {
            return Err(e);
        }
        if lock(&next).1 < want {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        join_edges(self, edges.into_inner().unwrap_or_else(|e| e.into_inner()), place);
        Ok(())
    }

    /// Bytes `0..want` of the voxels from a stream read in order (one gzip stream, or another
    /// writer's member inflated in pieces, whose waves are made on a task of the pool: a task
    /// here waiting on them under a lock could leave none to make them). This thread reads a
    /// batch of pieces, every core places them; a batch is one piece per core.
    pub(super) fn read_in_order(&self, r: &mut dyn Read, want: usize, place: &Place, done: &(dyn Fn(usize) + Sync)) -> io::Result<()> {
        let batch = rayon::current_num_threads().max(1);
        let mut bufs: Vec<Vec<u8>> = Vec::new();
        let mut at = 0;
        while at < want {
            let mut filled = Vec::with_capacity(batch);
            while filled.len() < batch && at < want {
                let mut buf = bufs.pop().unwrap_or_default();
                buf.resize(CHUNK.min(want - at), 0);
                r.read_exact(&mut buf)?;
                filled.push((at, buf));
                at += filled.last().map_or(0, |f| f.1.len());
            }
            filled.par_iter().for_each(|(s, buf)| {
                place(s / self.bytes, buf);
                done(buf.len());
            });
            bufs.extend(filled.into_iter().map(|f| f.1));
        }
        Ok(())
    }
}

/// A piece `r` holding bytes [s, e) of the data (clipped): its whole voxels placed, and the
/// bytes of the voxels it shares with its neighbours (with their offsets) returned.
pub(super) fn place_whole(b: usize, r: &[u8], s: usize, e: usize, place: &Place) -> Vec<(usize, Vec<u8>)> {
    let (fe, le) = whole_voxels(s, e, b);
    let mut edge = Vec::new();
    if fe < le {
        let (lo, hi) = (fe * b - s, le * b - s);
        place(fe, &r[lo..hi]);
        if lo > 0 {
            edge.push((s, r[..lo].to_vec()));
        }
        if hi < e - s {
            edge.push((s + hi, r[hi..e - s].to_vec()));
        }
    } else if s < e {
        edge.push((s, r[..e - s].to_vec()));
    }
    edge
}

/// The voxels that straddle pieces, put together in stream order and placed.
fn join_edges(d: &Decode, mut edges: Vec<(usize, Vec<u8>)>, place: &Place) {
    edges.sort_unstable_by_key(|e| e.0);
    let mut joint = Joint::default();
    for (off, bytes) in edges {
        joint.add(d, off, &bytes, &mut |v, x| place(v, x));
    }
}
