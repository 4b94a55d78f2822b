//! Device-event intervals of queued work, resolved into `Timings` when asked (or when many have
//! piled up), so launches and copies never wait to be timed. One copy for both APIs: each gives
//! its interval type (an OpenCL profiling event, a CUDA start/end event pair).

use crate::runtime::Timings;
use anyhow::Result;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// A timed piece of queued work; `ms` waits for it.
pub trait Interval: Send {
    fn ms(&self) -> Result<f64>;
}

/// Intervals kept before the oldest half is resolved, so a long run does not hold thousands.
const MAX_PENDING: usize = 2048;

pub struct Timeline<I: Interval> {
    /// (kernel?, interval) not yet added to the timings.
    pending: Mutex<Vec<(bool, I)>>,
    /// Figures of intervals already resolved, handed out on the next `take`.
    carry: Mutex<Timings>,
    /// Off: work is queued without timing events (a CUDA event pair per operation costs
    /// microseconds, which a loop of tiny launches such as registration's evaluations feels).
    enabled: AtomicBool,
}

fn resolve<I: Interval>(evs: Vec<(bool, I)>) -> Result<Timings> {
    let mut t = Timings::default();
    for (kernel, i) in evs {
        let ms = i.ms()?;
        if kernel {
            t.kernel_ms += ms;
        } else {
            t.transfer_ms += ms;
        }
    }
    Ok(t)
}

impl<I: Interval> Timeline<I> {
    pub fn new() -> Timeline<I> {
        Timeline { pending: Mutex::new(Vec::new()), carry: Mutex::new(Timings::default()), enabled: AtomicBool::new(true) }
    }

    pub fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    pub fn set_enabled(&self, on: bool) {
        self.enabled.store(on, Ordering::Relaxed);
    }

    pub fn push(&self, kernel: bool, i: I) -> Result<()> {
        if !self.enabled() {
            return Ok(());
        }
        let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        p.push((kernel, i));
        if p.len() > MAX_PENDING {
            let old: Vec<_> = p.drain(..MAX_PENDING / 2).collect();
            drop(p);
            let t = resolve(old)?;
            self.carry.lock().unwrap_or_else(|e| e.into_inner()).add(&t);
        }
        Ok(())
    }

    /// Everything since the last call (waits for it).
    pub fn take(&self) -> Result<Timings> {
        let evs = std::mem::take(&mut *self.pending.lock().unwrap_or_else(|e| e.into_inner()));
        let mut t = resolve(evs)?;
        t.add(&std::mem::take(&mut *self.carry.lock().unwrap_or_else(|e| e.into_inner())));
        Ok(t)
    }
}
