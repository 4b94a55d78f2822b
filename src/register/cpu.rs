//! The CPU cost kernel: the reference every device is checked against and the CPU backend.
//!
//! Positions and samples are computed in float32 with the very operations, in the very order,
//! of cl/common/register.h (no fused multiply-add: Rust never contracts, the device header
//! forbids it), so a device's in-kernel trilinear samples, and hence MI/NMI histogram bins,
//! are bit-identical to these. Sums are accumulated in float64, per z slice and then over
//! slices, on the backend's rayon pool.

use super::cost::{bin, CostKind, CostSpec, Stats};
use super::CostKernels;
use crate::runtime::cpu::Cpu;
use crate::runtime::{timing::wall_ms, Timings};
use crate::volume::Volume;
use anyhow::{bail, Result};
use rayon::prelude::*;
use std::sync::Arc;

/// Position of fixed voxel (x, y, z) in moving voxel coordinates: row r of `m` applied as
/// ((m0 x + m1 y) + m2 z) + m3, each operation rounded to float32.
#[inline(always)]
pub fn map_point(m: &[f32; 12], x: f32, y: f32, z: f32) -> [f32; 3] {
    std::array::from_fn(|r| m[4 * r] * x + m[4 * r + 1] * y + m[4 * r + 2] * z + m[4 * r + 3])
}

/// Trilinear sample at continuous voxel coordinates (centres at integers), or None when the
/// point is outside the box of voxel centres [0, n - 1]^3 (or not finite).
#[inline(always)]
pub fn sample(data: &[f32], dims: [usize; 3], p: [f32; 3]) -> Option<f32> {
    let [nx, ny, nz] = dims;
    let inside = |v: f32, n: usize| v >= 0.0 && v <= (n - 1) as f32;
    if !(inside(p[0], nx) && inside(p[1], ny) && inside(p[2], nz)) {
        return None;
    }
    let i0 = [p[0] as usize, p[1] as usize, p[2] as usize];
    let f = [p[0] - i0[0] as f32, p[1] - i0[1] as f32, p[2] - i0[2] as f32];
    let step = [(i0[0] + 1 < nx) as usize, ((i0[1] + 1 < ny) as usize) * nx, ((i0[2] + 1 < nz) as usize) * nx * ny];
    let base = i0[0] + nx * (i0[1] + ny * i0[2]);
    let lerp = |a: f32, b: f32, t: f32| a + t * (b - a);
    let v = |o: usize| data[base + o];
    let c00 = lerp(v(0), v(step[0]), f[0]);
    let c10 = lerp(v(step[1]), v(step[1] + step[0]), f[0]);
    let c01 = lerp(v(step[2]), v(step[2] + step[0]), f[0]);
    let c11 = lerp(v(step[2] + step[1]), v(step[2] + step[1] + step[0]), f[0]);
    let c0 = lerp(c00, c10, f[1]);
    let c1 = lerp(c01, c11, f[1]);
    Some(lerp(c0, c1, f[2]))
}

/// The statistics of one evaluation over fixed slices `z_range`, float64 sums.
fn slice_stats(fixed: &Volume, moving: &Volume, spec: &CostSpec, m: &[f32; 12], z: usize) -> Stats {
    let [nx, ny, _] = fixed.geom.dims;
    let fd = fixed.as_flat();
    let kind = spec.kind();
    let mut s = Stats { hist: if kind.uses_histogram() { vec![0; (spec.bins * spec.bins) as usize] } else { Vec::new() }, ..Default::default() };
    for y in 0..ny {
        for x in 0..nx {
            s.total += 1;
            let Some(mv) = sample(moving.as_flat(), moving.geom.dims, map_point(m, x as f32, y as f32, z as f32)) else { continue };
            let fv = fd[x + nx * (y + ny * z)];
            s.inside += 1;
            match kind {
                CostKind::Sad => s.sums[0] += (fv - mv).abs() as f64,
                CostKind::Ssd => s.sums[0] += ((fv - mv) as f64).powi(2),
                CostKind::Ncc => {
                    let (a, b) = ((fv - spec.fixed_shift) as f64, (mv - spec.moving_shift) as f64);
                    s.sums[0] += a;
                    s.sums[1] += b;
                    s.sums[2] += a * a;
                    s.sums[3] += b * b;
                    s.sums[4] += a * b;
                }
                CostKind::Mi | CostKind::Nmi => {
                    let i = bin(fv, spec.fixed_lo, spec.fixed_inv_width, spec.bins);
                    let j = bin(mv, spec.moving_lo, spec.moving_inv_width, spec.bins);
                    s.hist[(i * spec.bins + j) as usize] += 1;
                }
            }
        }
    }
    s
}

fn merge(mut a: Stats, b: Stats) -> Stats {
    a.inside += b.inside;
    a.total += b.total;
    for k in 0..5 {
        a.sums[k] += b.sums[k];
    }
    if a.hist.is_empty() {
        a.hist = b.hist;
    } else {
        for (x, y) in a.hist.iter_mut().zip(&b.hist) {
            *x += y;
        }
    }
    a
}

/// One evaluation on the calling rayon pool.
pub fn evaluate(fixed: &Volume, moving: &Volume, spec: &CostSpec, m: &[f32; 12]) -> Stats {
    (0..fixed.geom.dims[2]).into_par_iter().map(|z| slice_stats(fixed, moving, spec, m, z)).reduce(Stats::default, merge)
}

pub struct CpuCost {
    cpu: Arc<Cpu>,
    images: Option<(Volume, Volume, CostSpec)>,
    timings: Timings,
}

impl CpuCost {
    pub fn new(cpu: Arc<Cpu>) -> CpuCost {
        CpuCost { cpu, images: None, timings: Timings::default() }
    }
}

impl CostKernels for CpuCost {
    fn load(&mut self, fixed: &Volume, moving: &Volume, spec: &CostSpec) -> Result<()> {
        self.images = Some((fixed.clone(), moving.clone(), *spec));
        Ok(())
    }
    fn evaluate(&mut self, m: &[f32; 12]) -> Result<Stats> {
        let Some((f, mv, spec)) = &self.images else { bail!("register: evaluate before load") };
        let (s, ms) = wall_ms(|| self.cpu.install(|| evaluate(f, mv, spec, m)));
        self.timings.kernel_ms += ms;
        Ok(s)
    }
    fn take_timings(&mut self) -> Timings {
        std::mem::take(&mut self.timings)
    }
    fn variant(&self) -> &'static str {
        "native"
    }
}
