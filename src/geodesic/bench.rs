//! Timed tracing runs shared by `neuroport bench geodesic` and the reproduce targets: the long
//! synthetic volume of 001 Sec. 5 with fibres that never leave it, and a warm-up-then-median
//! measurement of the tracing kernel.

use super::phantoms::long_volume;
use crate::synth::phantom::voxel_axes_to_fsl;
use super::{kernels, prepare, FibreBatch, Fields, GeodesicKernels, Seed, TraceParams, BYTES_PER_SAMPLE};
use crate::runtime::timing::median;
use crate::runtime::{Device, Timings};
use crate::synth::rng;
use crate::volume::Geometry;
use anyhow::{bail, Result};
use rand::Rng;

/// What one configuration measured: medians over the repeats after one warm-up run.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Measured {
    pub fibres: usize,
    /// Integration steps taken by all fibres together.
    pub steps: u64,
    /// Fibres that stopped before `max_steps`.
    pub stopped_early: usize,
    pub timings: Timings,
}

impl Measured {
    pub fn steps_per_s(&self) -> f64 {
        self.steps as f64 / (self.timings.kernel_ms * 1e-3)
    }
}

/// Traces `seeds` once to warm up (when `warmup`), then `repeats` times, and keeps the median of
/// each timing. The native CPU needs no warm-up (nothing is compiled or cached on first use).
pub fn measure(k: &mut dyn GeodesicKernels, seeds: &[Seed], p: &TraceParams, repeats: usize, warmup: bool) -> Result<(Measured, FibreBatch)> {
    k.take_timings();
    let mut last = FibreBatch::default();
    if warmup {
        last = k.trace(seeds, p)?;
    }
    k.take_timings();
    let (mut kern, mut xfer, mut host) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..repeats.max(1) {
        last = k.trace(seeds, p)?;
        let t = k.take_timings();
        kern.push(t.kernel_ms);
        xfer.push(t.transfer_ms);
        host.push(t.host_ms);
    }
    let m = Measured {
        fibres: seeds.len(),
        steps: last.total_steps(),
        stopped_early: last.ends.iter().filter(|e| e.steps < p.max_steps).count(),
        timings: Timings { kernel_ms: median(&mut kern), transfer_ms: median(&mut xfer), host_ms: median(&mut host) },
    };
    Ok((m, last))
}

/// The long volume (x by `dims`) with its metric fields, prepared on the CPU reference.
pub fn long_fields(dims: [usize; 3]) -> Result<Fields> {
    // The tensor, the metric and its derivatives in float32 and float64: ~500 bytes a voxel.
    let nv = dims.iter().try_fold(1usize, |a, &d| a.checked_mul(d)).unwrap_or(usize::MAX);
    crate::runtime::memory::room_for(&format!("--dims {},{},{}", dims[0], dims[1], dims[2]), nv, 500)?;
    let geom = Geometry::synthetic(dims, [1.0; 3]);
    let mut tensor = long_volume(dims);
    voxel_axes_to_fsl(&mut tensor, &geom);
    let cpu = Device::Cpu(std::sync::Arc::new(crate::runtime::cpu::Cpu::new(None)?));
    let mask = vec![1u8; geom.nvox()];
    Ok(prepare(&cpu, &tensor, &geom, &mask, None)?.0)
}

/// `n` seeds at random points of the long volume, heading along +x (tilted by at most 0.01 rad, so
/// fibres cross voxel rows), placed so that `reach` voxels of travel keep every fibre inside
/// (001 Sec. 5: "no thread would terminate prematurely").
pub fn long_seeds(dims: [usize; 3], n: usize, reach: f64, seed: u64) -> Result<Vec<Seed>> {
    let room = dims[0] as f64 - 16.0 - reach;
    if room < 1.0 {
        bail!("a {}-voxel volume is too short for {reach:.0} voxels of travel", dims[0]);
    }
    let mut r = rng(seed);
    let (y0, y1) = (dims[1] as f64 * 0.25, dims[1] as f64 * 0.75);
    let (z0, z1) = (dims[2] as f64 * 0.25, dims[2] as f64 * 0.75);
    Ok((0..n)
        .map(|_| Seed {
            pos: [8.0 + r.random_range(0.0..room), r.random_range(y0..y1), r.random_range(z0..z1)].map(|x| x as f32),
            dir: [1.0, r.random_range(-0.01..0.01), r.random_range(-0.01..0.01)],
        })
        .collect())
}

/// Bytes a step reads (`groups` float4 groups from 8 voxels per sample) and writes (one point),
/// the sum of 001 Sec. 5.2.
pub fn bytes_per_step(p: &TraceParams) -> usize {
    let read = BYTES_PER_SAMPLE * p.groups as usize / super::GROUPS;
    read * p.method.samples_per_step() + if p.record { 12 } else { 0 }
}

/// The steps/s benchmark: `fibres` x `steps` on the long 1024 x 64 x 64 volume, on one device.
pub fn steps_per_second(device: &Device, fields: &Fields, fibres: usize, p: &TraceParams, repeats: usize, seed: u64) -> Result<Measured> {
    let seeds = long_seeds(fields.dims, fibres, p.step as f64 * p.max_steps as f64 * 1.05, seed)?;
    let mut k = kernels(device)?;
    k.upload(fields)?;
    let cap = k.max_batch(p);
    let mut total = Measured { fibres, ..Default::default() };
    for chunk in seeds.chunks(cap.max(1)) {
        let (m, _) = measure(k.as_mut(), chunk, p, repeats, !device.is_cpu())?;
        total.steps += m.steps;
        total.stopped_early += m.stopped_early;
        total.timings.add(&m.timings);
    }
    Ok(total)
}
