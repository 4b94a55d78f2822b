//! Where a run's time went, split as the papers split it: device kernels, host<->device
//! transfers (both measured with device events), and host work (wall clock).

use serde::Serialize;
use std::time::Instant;

#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq)]
pub struct Timings {
    pub kernel_ms: f64,
    pub transfer_ms: f64,
    pub host_ms: f64,
}

impl Timings {
    pub fn total_ms(&self) -> f64 {
        self.kernel_ms + self.transfer_ms + self.host_ms
    }
    pub fn add(&mut self, o: &Timings) {
        self.kernel_ms += o.kernel_ms;
        self.transfer_ms += o.transfer_ms;
        self.host_ms += o.host_ms;
    }
    /// Device times measured on `timed` of `all` like units of work (launches, iterations),
    /// scaled to all of them; host time is wall clock, already whole.
    pub fn scale_sampled(&mut self, all: u64, timed: u64) {
        let k = all as f64 / timed.max(1) as f64;
        self.kernel_ms *= k;
        self.transfer_ms *= k;
    }
}

/// Wall-clock milliseconds of `f`, for host work and for the CPU backend's "kernels".
pub fn wall_ms<R>(f: impl FnOnce() -> R) -> (R, f64) {
    let t = Instant::now();
    let r = f();
    (r, t.elapsed().as_secs_f64() * 1e3)
}

/// Median of repeated measurements (the harness's summary statistic).
pub fn median(xs: &mut [f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    xs.sort_by(|a, b| a.total_cmp(b));
    let n = xs.len();
    if n % 2 == 1 { xs[n / 2] } else { 0.5 * (xs[n / 2 - 1] + xs[n / 2]) }
}
