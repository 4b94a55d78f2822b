//! `neuroport bench probtrack`: steps per second of a fixed workload (003 Table II's stand-in
//! datasets, `repro::data`) on one device, device time apart from wall time, and the memory
//! floor of that workload.
//!
//! The floor counts the bytes a run must move at least: per step one 32-byte sample record and
//! one 4-byte ROI word (the record of the voxel read, the word of the point reached); per path
//! its 48-byte state written at the start and read by its first segment, and its 8-byte result
//! (visit counts, survivors' state per segment and compaction come on top). Divided by the device's memory bandwidth it is the time no
//! schedule can beat; the records of one sample volume (dataset 2: 20 MB) fit a large L2, so a
//! kernel can beat a DRAM-only floor, which is why the floor is quoted at DRAM bandwidth as an
//! upper bound on the time a memory-bound kernel would need.

use super::{kernels, Config, Field, Tracks};
use crate::runtime::{timing::median, Device};
use anyhow::Result;
use serde::Serialize;

/// Bytes a step reads at least: the voxel's row in the held field's index, its sample record
/// and the ROI word of the point reached.
pub const BYTES_PER_STEP: f64 = 4.0 + 32.0 + 4.0;
/// Bytes a path moves at least: its 48-byte state written at the start and read by its first
/// segment, and its 8-byte result (compactions of survivors come on top).
pub const PATH_MIN_BYTES: f64 = 48.0 + 48.0 + 8.0;

/// One measured configuration.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Measured {
    pub seeds: usize,
    pub streamlines: u64,
    pub steps: u64,
    pub launches: usize,
    pub batches: usize,
    /// Device time of the tracing launches (start, segments) and of the compactions.
    pub trace_kernel_ms: f64,
    pub compact_kernel_ms: f64,
    /// Host side of the compaction (003's path: the reduction on the host).
    pub compact_host_ms: f64,
    pub transfer_ms: f64,
    /// Wall time turning results into outputs (the tally launches, the keep bits' copy, the
    /// counters' download; the CPU: its tally loops).
    pub tally_ms: f64,
    /// Device time of the tally kernels (the CPU: its tally loops).
    pub tally_kernel_ms: f64,
    /// The run, upload to visitation map.
    pub wall_ms: f64,
    /// Minimum bytes moved (see the module comment).
    pub floor_bytes: f64,
}

impl Measured {
    pub fn kernel_ms(&self) -> f64 {
        self.trace_kernel_ms + self.compact_kernel_ms
    }
    pub fn steps_per_s_kernel(&self) -> f64 {
        self.steps as f64 / (self.kernel_ms() * 1e-3).max(1e-12)
    }
    pub fn steps_per_s_wall(&self) -> f64 {
        self.steps as f64 / (self.wall_ms * 1e-3).max(1e-12)
    }
    /// The floor in ms at `gb_s` GB/s.
    pub fn floor_ms(&self, gb_s: f64) -> f64 {
        self.floor_bytes / (gb_s * 1e9) * 1e3
    }
}

fn of(t: &Tracks) -> Measured {
    let s = &t.stats;
    Measured {
        seeds: t.nseeds,
        streamlines: (t.nseeds * t.nsamples) as u64,
        steps: t.total_steps,
        launches: s.launches,
        batches: s.batches,
        trace_kernel_ms: s.trace.kernel_ms,
        compact_kernel_ms: s.compact.kernel_ms,
        compact_host_ms: s.compact.host_ms,
        transfer_ms: s.trace.transfer_ms + s.compact.transfer_ms,
        tally_ms: s.tally_ms,
        tally_kernel_ms: s.tally.kernel_ms,
        wall_ms: s.wall_ms,
        floor_bytes: t.total_steps as f64 * BYTES_PER_STEP + s.paths as f64 * PATH_MIN_BYTES,
    }
}

/// `bench probtrack`'s --step (in voxels) and --threshold (a cosine) checked under their own
/// names and in their own units, before the run's `Config::validate` would report them as
/// `probtrack`'s options (--step in mm, --curvature) with a step scaled by the voxel size.
pub fn check_options(step_vox: f32, threshold: f32, dims: [usize; 3]) -> Result<()> {
    if !(step_vox > 0.0 && step_vox.is_finite()) {
        anyhow::bail!("--step must be a positive number of voxels, not {step_vox}");
    }
    let longest = dims.iter().copied().max().unwrap_or(0);
    if step_vox > longest as f32 {
        anyhow::bail!("--step {step_vox} voxels is longer than the stand-in grid ({}x{}x{} voxels): every streamline would end after one step", dims[0], dims[1], dims[2]);
    }
    if !(-1.0..=1.0).contains(&threshold) {
        anyhow::bail!("--threshold is a cosine: between -1 and 1, not {threshold}");
    }
    Ok(())
}

/// `repeats` runs after a warm-up on a few seeds (unless `warmup` is off: for a profiler that
/// must see the measured run's first launches); the one of median wall time.
pub fn measure(dev: &Device, field: &Field, seeds: &[u32], cfg: &Config, repeats: usize, warmup: bool) -> Result<Measured> {
    let mut k = kernels(dev)?;
    if warmup {
        super::run(k.as_mut(), field, &seeds[..seeds.len().min(64)], cfg)?;
    }
    let mut runs: Vec<Measured> = Vec::new();
    for _ in 0..repeats.max(1) {
        runs.push(of(&super::run(k.as_mut(), field, seeds, cfg)?));
    }
    let mut walls: Vec<f64> = runs.iter().map(|m| m.wall_ms).collect();
    let mid = median(&mut walls);
    Ok(runs.into_iter().min_by(|a, b| (a.wall_ms - mid).abs().total_cmp(&(b.wall_ms - mid).abs())).unwrap_or_default())
}
