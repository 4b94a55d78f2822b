//! Chunked work on two queues of one device: kernels on the compute queue, copies on the copy
//! queue, so that chunk k+1 uploads and chunk k-1 downloads while chunk k computes. The order of
//! the host's calls is [`steps`], written once for every chunked method; [`Lanes`] holds the two
//! queues and the events between them. Each chunk owns its device buffers (two chunks are alive
//! at a time) and the copies go through each queue's own double-buffered pinned staging. The
//! device computes the same thing in the same order on each chunk either way, so the results are
//! those of the serial run bit for bit (tests/pipeline.rs).

use super::{Event, Gpu};
use crate::runtime::Timings;
use anyhow::Result;

/// Whether chunked methods overlap copies with kernels: only with `NEUROPORT_PIPELINE=1` (or
/// `on`). Off by default because on the H100 it cost time and saved none (docs/performance.md,
/// round 4): bedpost's and tracking's copies are 20-40 ms of a 3-5 s command, so there is almost
/// nothing to hide, while splitting one chunk into two halves cost bedpost ~0.4 s of host time.
pub fn overlap_default() -> bool {
    matches!(std::env::var("NEUROPORT_PIPELINE").ok().as_deref().map(str::trim), Some("1" | "on" | "yes" | "true"))
}

/// One call of a chunked host sequence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Queue chunk k's uploads (copy queue).
    Load(usize),
    /// Queue chunk k's kernels (compute queue, after its uploads).
    Compute(usize),
    /// Chunk k's downloads (copy queue, after its kernels); returns with the results on the host.
    Unload(usize),
}

/// The calls for `n` chunks. Serial: load, compute, unload per chunk. Overlapped:
/// `L0 C0, L1 C1 U0, L2 C2 U1, ..., U(n-1)`: chunk k+1's upload is queued while chunk k's
/// kernels run, and the host waits for chunk k-1's download (and consumes it) while chunk k's
/// run. At most two chunks are alive at once.
pub fn steps(n: usize, overlap: bool) -> Vec<Step> {
    let mut s = Vec::with_capacity(3 * n);
    for k in 0..n {
        s.push(Step::Load(k));
        s.push(Step::Compute(k));
        if !overlap {
            s.push(Step::Unload(k));
        } else if k >= 1 {
            s.push(Step::Unload(k - 1));
        }
    }
    if overlap && n > 0 {
        s.push(Step::Unload(n - 1));
    }
    s
}

/// Items per chunk when overlapping: the device's `fits` when the work needs several chunks
/// anyway, else two halves of at least `min_piece` each (one chunk has nothing to overlap with),
/// else everything at once.
pub fn chunk_len(total: usize, fits: usize, min_piece: usize, overlap: bool) -> usize {
    let fits = fits.max(1);
    if !overlap || total > fits || total < 2 * min_piece.max(1) {
        return fits.min(total.max(1));
    }
    total.div_ceil(2)
}

/// The two queues of chunked work (one queue, twice, when not overlapping).
pub struct Lanes {
    compute: Gpu,
    copy: Gpu,
    overlap: bool,
}

impl Lanes {
    /// Copies on a second queue of `gpu`'s device when `overlap`, else on `gpu`'s own queue.
    pub fn new(gpu: Gpu, overlap: bool) -> Result<Lanes> {
        let copy = if overlap { gpu.second_queue()? } else { gpu.clone() };
        Ok(Lanes { compute: gpu, copy, overlap })
    }
    pub fn overlap(&self) -> bool {
        self.overlap
    }
    /// The queue kernels go on.
    pub fn compute(&self) -> &Gpu {
        &self.compute
    }
    /// The queue copies (and download-preparing kernels) go on.
    pub fn copy(&self) -> &Gpu {
        &self.copy
    }
    /// Later kernels wait for the copies queued so far (a chunk's uploads).
    pub fn loaded(&self) -> Result<()> {
        if self.overlap {
            let e = self.copy.record()?;
            self.compute.wait_for(&e)?;
        }
        Ok(())
    }
    /// A mark after the kernels queued so far (a chunk's), for [`Lanes::after`]; None when one
    /// queue keeps the order by itself.
    pub fn computed(&self) -> Result<Option<Event>> {
        if self.overlap {
            self.compute.record().map(Some)
        } else {
            Ok(None)
        }
    }
    /// Later copies wait for `mark` (a chunk's kernels) before they read its results.
    pub fn after(&self, mark: Option<&Event>) -> Result<()> {
        match mark {
            Some(e) => self.copy.wait_for(e),
            None => Ok(()),
        }
    }
    /// Device time of both queues since the last call: the compute queue's kernels, and the
    /// copy queue's copies with any kernel it ran counted as transfer (it only prepares one).
    pub fn take_timings(&self) -> Result<Timings> {
        let mut t = self.compute.take_timings()?;
        if self.overlap {
            let c = self.copy.take_timings()?;
            t.transfer_ms += c.transfer_ms + c.kernel_ms;
        }
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapped_steps_keep_each_chunk_in_order_and_two_alive() {
        for n in 0..6 {
            let serial = steps(n, false);
            let over = steps(n, true);
            assert_eq!(serial.len(), 3 * n);
            assert_eq!(over.len(), 3 * n);
            for k in 0..n {
                let pos = |s: &[Step], x: Step| s.iter().position(|&y| y == x).unwrap();
                assert!(pos(&over, Step::Load(k)) < pos(&over, Step::Compute(k)));
                assert!(pos(&over, Step::Compute(k)) < pos(&over, Step::Unload(k)));
                // Chunk k+1 is queued before chunk k is unloaded: the overlap.
                if k + 1 < n {
                    assert!(pos(&over, Step::Compute(k + 1)) < pos(&over, Step::Unload(k)));
                }
                // Chunk k+2 loads only after chunk k is unloaded: two chunks alive at most.
                if k + 2 < n {
                    assert!(pos(&over, Step::Unload(k)) < pos(&over, Step::Load(k + 2)));
                }
            }
        }
    }

    #[test]
    fn overlap_splits_a_chunk_that_would_hold_everything() {
        assert_eq!(chunk_len(100, 1000, 10, true), 50);
        assert_eq!(chunk_len(100, 1000, 10, false), 100);
        assert_eq!(chunk_len(100, 30, 10, true), 30);
        assert_eq!(chunk_len(15, 1000, 10, true), 15);
    }
}
