//! Host<->device copies through two reusable page-locked slots, so that a copy from ordinary
//! (pageable) memory runs at the bus's speed: while the device copies slot A, the host fills (or
//! empties) slot B. Small copies go direct: staging them would only add a host copy.

use super::api::{Queue, RawEvent, RawPinned};
use super::buffer::RawBuf;
use anyhow::Result;
use rayon::prelude::*;
use std::ops::Range;
use std::sync::Mutex;

/// Bytes per slot: large enough that per-copy latency is a few percent at ~25 GB/s.
const SLOT: usize = 16 << 20;
/// Below this a copy goes straight from the caller's memory (one synchronous driver copy).
const DIRECT: usize = 1 << 20;

pub struct Staging {
    slots: Mutex<Option<[Slot; 2]>>,
}

struct Slot {
    mem: RawPinned,
    busy: Option<RawEvent>,
}

impl Staging {
    pub fn new() -> Staging {
        Staging { slots: Mutex::new(None) }
    }

    fn with_slots<R>(&self, q: &dyn Queue, f: impl FnOnce(&mut [Slot; 2]) -> Result<R>) -> Result<Option<R>> {
        let mut g = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        if g.is_none() {
            // A device without page-locked memory (or out of it) copies directly instead.
            let (Ok(a), Ok(b)) = (q.pinned(SLOT), q.pinned(SLOT)) else { return Ok(None) };
            *g = Some([Slot { mem: a, busy: None }, Slot { mem: b, busy: None }]);
        }
        f(g.as_mut().expect("slots set above")).map(Some)
    }

    /// Allocates the slots now if they are not yet (see `Gpu::stage_ahead`).
    pub fn warm(&self, q: &dyn Queue) {
        let _ = self.with_slots(q, |_| Ok(()));
    }

    /// Copies `src` into `dst` at byte `offset`; returns when `src` is no longer needed.
    pub fn write(&self, q: &dyn Queue, dst: &RawBuf, offset: usize, src: &[u8]) -> Result<()> {
        self.write_runs(q, dst, offset, &[src])
    }

    /// Copies the concatenation of `runs` into `dst` at byte `offset`, gathering the runs into
    /// the slots (a split's share of a component-major array: one run a component); returns when
    /// the runs are no longer needed.
    pub fn write_runs(&self, q: &dyn Queue, dst: &RawBuf, offset: usize, runs: &[&[u8]]) -> Result<()> {
        let total: usize = runs.iter().map(|r| r.len()).sum();
        if total == 0 {
            return Ok(());
        }
        if total > DIRECT {
            let lens: Vec<usize> = runs.iter().map(|r| r.len()).collect();
            let done = self.with_slots(q, |slots| {
                for i in 0..total.div_ceil(SLOT) {
                    let window = i * SLOT..((i + 1) * SLOT).min(total);
                    let s = &mut slots[i % 2];
                    if let Some(e) = s.busy.take() {
                        e.wait()?;
                    }
                    let at = s.mem.ptr as usize;
                    pieces(&lens, window.clone()).into_par_iter().for_each(|p| {
                        // SAFETY: the slot holds SLOT bytes, each piece lands inside the window's
                        // slot bytes, pieces do not overlap, and the slot's last copy has completed.
                        unsafe { std::ptr::copy_nonoverlapping(runs[p.run][p.at..].as_ptr(), (at as *mut u8).add(p.to), p.len) }
                    });
                    // SAFETY: the slot's bytes stay untouched until this copy's event has completed.
                    s.busy = unsafe { q.write_async(dst, offset + window.start, s.mem.ptr, window.len(), true)? };
                }
                Ok(())
            })?;
            if done.is_some() {
                return Ok(());
            }
        }
        let joined;
        let src: &[u8] = if runs.len() == 1 {
            runs[0]
        } else {
            joined = runs.concat();
            &joined
        };
        // SAFETY: waiting on the event before returning keeps `src` alive for the copy.
        marked(unsafe { q.write_async(dst, offset, src.as_ptr(), src.len(), true)? })?.wait()
    }

    /// Copies `dst.len()` bytes of `src` from byte `offset`; returns when they are in `dst`.
    pub fn read(&self, q: &dyn Queue, src: &RawBuf, offset: usize, dst: &mut [u8]) -> Result<()> {
        self.read_runs(q, src, offset, &mut [dst])
    }

    /// Copies as many bytes of `src` from byte `offset` as `runs` hold, scattering them over the
    /// runs in order (the inverse of [`write_runs`](Self::write_runs)); returns when they are in.
    pub fn read_runs(&self, q: &dyn Queue, src: &RawBuf, offset: usize, runs: &mut [&mut [u8]]) -> Result<()> {
        let total: usize = runs.iter().map(|r| r.len()).sum();
        if total == 0 {
            return Ok(());
        }
        let lens: Vec<usize> = runs.iter().map(|r| r.len()).collect();
        // Written through addresses so that pieces of the runs fill from every core at once.
        let outs: Vec<usize> = runs.iter_mut().map(|r| r.as_mut_ptr() as usize).collect();
        // SAFETY (both scatters): each piece lies inside its run, pieces do not overlap, and the
        // runs are borrowed mutably for this call.
        let scatter = |from: *const u8, window: Range<usize>| {
            let from = from as usize;
            pieces(&lens, window).into_par_iter().for_each(|p| unsafe { std::ptr::copy_nonoverlapping((from as *const u8).add(p.to), (outs[p.run] as *mut u8).add(p.at), p.len) });
        };
        if total > DIRECT {
            let done = self.with_slots(q, |slots| {
                for s in slots.iter_mut() {
                    if let Some(e) = s.busy.take() {
                        e.wait()?;
                    }
                }
                let n = total.div_ceil(SLOT);
                let window = |i: usize| i * SLOT..((i + 1) * SLOT).min(total);
                // Two copies in flight: chunk i+1 lands in one slot while chunk i leaves the other.
                let mut pending: [Option<(usize, RawEvent)>; 2] = [None, None];
                for i in 0..=n {
                    if i < n {
                        let s = &slots[i % 2];
                        pending[i % 2] = Some((i, marked(unsafe { q.read_async(src, offset + i * SLOT, s.mem.ptr, window(i).len(), true)? })?));
                    }
                    if i >= 1 {
                        let (j, e) = pending[(i - 1) % 2].take().expect("queued above");
                        e.wait()?;
                        // The slot holds chunk j's bytes: its copy has completed.
                        scatter(slots[j % 2].mem.ptr, window(j));
                    }
                }
                Ok(())
            })?;
            if done.is_some() {
                return Ok(());
            }
        }
        if runs.len() == 1 {
            let dst = &mut runs[0];
            return marked(unsafe { q.read_async(src, offset, dst.as_mut_ptr(), dst.len(), true)? })?.wait();
        }
        let mut joined = vec![0u8; total];
        marked(unsafe { q.read_async(src, offset, joined.as_mut_ptr(), total, true)? })?.wait()?;
        scatter(joined.as_ptr(), 0..total);
        Ok(())
    }
}

/// A piece of a copy: `len` bytes at byte `at` of run `run`, at byte `to` of its slot.
struct Piece {
    run: usize,
    at: usize,
    to: usize,
    len: usize,
}

/// The pieces of the runs (lengths `lens`, concatenated) that fall in bytes `window` of the
/// concatenation, cut to at most 1 MB each so that every core takes some (one thread's memcpy,
/// ~10 GB/s on the H100 host, is slower than the DMA engine it feeds, ~55 GB/s from pinned
/// memory, `bench layer`); `to` is relative to the window's start.
fn pieces(lens: &[usize], window: Range<usize>) -> Vec<Piece> {
    const MOST: usize = 1 << 20;
    let mut out = Vec::new();
    let mut run_start = 0;
    for (run, &len) in lens.iter().enumerate() {
        let (lo, hi) = (window.start.max(run_start), window.end.min(run_start + len));
        let mut b = lo;
        while b < hi {
            let e = hi.min(b + MOST);
            out.push(Piece { run, at: b - run_start, to: b - window.start, len: e - b });
            b = e;
        }
        run_start += len;
        if run_start >= window.end {
            break;
        }
    }
    out
}

/// The event of a copy queued with `mark`.
fn marked(e: Option<RawEvent>) -> Result<RawEvent> {
    e.ok_or_else(|| anyhow::anyhow!("a marked copy returned no event"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_tile_the_window_in_order() {
        let lens = [3usize << 20, 5, 0, (1 << 20) + 7, 2];
        let total: usize = lens.iter().sum();
        for window in [0..total, 0..1, (3 << 20) - 2..(3 << 20) + 9, (3 << 20) + 4..total - 1, total - 2..total] {
            let ps = pieces(&lens, window.clone());
            // Back to back in the window, each inside its run, none over 1 MB.
            let mut to = 0;
            let mut starts = vec![0usize; lens.len()];
            for i in 1..lens.len() {
                starts[i] = starts[i - 1] + lens[i - 1];
            }
            for p in &ps {
                assert_eq!(p.to, to);
                assert!(p.len > 0 && p.len <= 1 << 20 && p.at + p.len <= lens[p.run]);
                assert_eq!(starts[p.run] + p.at, window.start + p.to);
                to += p.len;
            }
            assert_eq!(to, window.len());
        }
    }
}
