//! Host<->device copies through two reusable page-locked slots, so that a copy from ordinary
//! (pageable) memory runs at the bus's speed: while the device copies slot A, the host fills (or
//! empties) slot B. Small copies go direct: staging them would only add a host copy.

use super::api::{Queue, RawEvent, RawPinned};
use super::buffer::RawBuf;
use anyhow::Result;
use rayon::prelude::*;
use std::sync::Mutex;

/// Copies `src` to `dst` on every core: one thread's memcpy (~10 GB/s on the H100 host) is
/// slower than the DMA engine it feeds (~55 GB/s from pinned memory, `bench layer`).
///
/// # Safety
/// `dst` must be valid for `src.len()` bytes and not overlap `src`.
unsafe fn par_copy(src: &[u8], dst: *mut u8) {
    const PIECE: usize = 1 << 20;
    let d = dst as usize;
    src.par_chunks(PIECE).enumerate().for_each(|(i, c)| unsafe { std::ptr::copy_nonoverlapping(c.as_ptr(), (d as *mut u8).add(i * PIECE), c.len()) });
}

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
        if src.is_empty() {
            return Ok(());
        }
        if src.len() > DIRECT {
            let done = self.with_slots(q, |slots| {
                for (i, chunk) in src.chunks(SLOT).enumerate() {
                    let s = &mut slots[i % 2];
                    if let Some(e) = s.busy.take() {
                        e.wait()?;
                    }
                    // SAFETY: the slot holds SLOT bytes and its previous copy has completed.
                    unsafe {
                        par_copy(chunk, s.mem.ptr);
                        s.busy = q.write_async(dst, offset + i * SLOT, s.mem.ptr, chunk.len(), true)?;
                    }
                }
                Ok(())
            })?;
            if done.is_some() {
                return Ok(());
            }
        }
        // SAFETY: waiting on the event before returning keeps `src` alive for the copy.
        marked(unsafe { q.write_async(dst, offset, src.as_ptr(), src.len(), true)? })?.wait()
    }

    /// Copies `dst.len()` bytes of `src` from byte `offset`; returns when they are in `dst`.
    pub fn read(&self, q: &dyn Queue, src: &RawBuf, offset: usize, dst: &mut [u8]) -> Result<()> {
        if dst.is_empty() {
            return Ok(());
        }
        if dst.len() > DIRECT {
            let done = self.with_slots(q, |slots| {
                for s in slots.iter_mut() {
                    if let Some(e) = s.busy.take() {
                        e.wait()?;
                    }
                }
                let n = dst.len().div_ceil(SLOT);
                let mut chunks: Vec<&mut [u8]> = dst.chunks_mut(SLOT).collect();
                // Two copies in flight: chunk i+1 lands in one slot while chunk i leaves the other.
                let mut pending: [Option<(usize, RawEvent)>; 2] = [None, None];
                for i in 0..=n {
                    if i < n {
                        let s = &slots[i % 2];
                        let len = chunks[i].len();
                        pending[i % 2] = Some((i, marked(unsafe { q.read_async(src, offset + i * SLOT, s.mem.ptr, len, true)? })?));
                    }
                    if i >= 1 {
                        let (j, e) = pending[(i - 1) % 2].take().expect("queued above");
                        e.wait()?;
                        let c = &mut chunks[j];
                        let len = c.len();
                        // SAFETY: the slot holds this chunk's bytes, its copy has completed.
                        unsafe { par_copy(std::slice::from_raw_parts(slots[j % 2].mem.ptr, len), c.as_mut_ptr()) };
                    }
                }
                Ok(())
            })?;
            if done.is_some() {
                return Ok(());
            }
        }
        marked(unsafe { q.read_async(src, offset, dst.as_mut_ptr(), dst.len(), true)? })?.wait()
    }
}

/// The event of a copy queued with `mark`.
fn marked(e: Option<RawEvent>) -> Result<RawEvent> {
    e.ok_or_else(|| anyhow::anyhow!("a marked copy returned no event"))
}
