//! Geodesic tracking on the CPU: the reference (float64 arithmetic, the same steps and stopping
//! rules as `cl/common/geodesic.h`), one rayon task per fibre, as 001 Sec. 5.3.2 splits fibres
//! over threads.

use super::{is_kept, offsets_of, FibreBatch, FibreEnd, Fields, GeodesicKernels, Method, Seed, Stop, TraceParams, IN_MASK, IN_TARGET, NCOMP};
use crate::dti::sym3;
use crate::runtime::cpu::Cpu;
use crate::runtime::{timing::wall_ms, Timings};
use anyhow::{bail, Result};
use rayon::prelude::*;
use std::sync::Arc;

pub type Sample = [f64; NCOMP];

/// The tracer's view of [`Fields`]: their voxel-major metric itself, shared, not copied.
pub struct CpuFields {
    pub dims: [usize; 3],
    pub voxel_size: [f64; 3],
    pub vox: Arc<Vec<[f32; NCOMP]>>,
    pub labels: Vec<u8>,
    /// Interpolation weights rounded down to multiples of this (texture-hardware emulation for
    /// the conformance check's tolerance; None: exact).
    pub weight_quantum: Option<f64>,
}

impl CpuFields {
    pub fn new(f: &Fields) -> CpuFields {
        CpuFields { dims: f.dims, voxel_size: f.voxel_size.map(|x| x as f64), vox: f.metric.clone(), labels: f.labels.clone(), weight_quantum: None }
    }

    /// Inside the voxel boxes, [-0.5, n - 0.5) per axis.
    pub fn inside(&self, x: &[f64; 3]) -> bool {
        (0..3).all(|a| x[a] >= -0.5 && x[a] < self.dims[a] as f64 - 0.5)
    }

    /// Label of the nearest voxel (the point is inside the grid).
    pub fn label(&self, x: &[f64; 3]) -> u8 {
        let i: [usize; 3] = std::array::from_fn(|a| (floor(x[a] + 0.5).max(0.0) as usize).min(self.dims[a] - 1));
        self.labels[i[0] + self.dims[0] * (i[1] + self.dims[1] * i[2])]
    }

    /// Trilinear interpolation, edges clamped; components of groups at or past `ngroups` are zero.
    pub fn sample(&self, q: &[f64; 3], ngroups: usize) -> Sample {
        let mut idx = [[0usize; 2]; 3];
        let mut w = [[0.0f64; 2]; 3];
        for a in 0..3 {
            let f = floor(q[a]);
            let mut t = q[a] - f;
            if let Some(qw) = self.weight_quantum {
                t = (t / qw).floor() * qw;
            }
            w[a] = [1.0 - t, t];
            let n = self.dims[a] as i64;
            idx[a] = [(f as i64).clamp(0, n - 1) as usize, (f as i64 + 1).clamp(0, n - 1) as usize];
        }
        let (nx, nxy) = (self.dims[0], self.dims[0] * self.dims[1]);
        let mut out = [0.0f64; NCOMP];
        for cz in 0..2 {
            for cy in 0..2 {
                let row = idx[1][cy] * nx + idx[2][cz] * nxy;
                let wyz = w[1][cy] * w[2][cz];
                for cx in 0..2 {
                    let wt = wyz * w[0][cx];
                    let vals = &self.vox[row + idx[0][cx]];
                    for c in 0..NCOMP {
                        out[c] += wt * vals[c] as f64;
                    }
                }
            }
        }
        for x in out.iter_mut().skip(4 * ngroups.min(super::GROUPS)) {
            *x = 0.0;
        }
        out
    }
}

/// floor() without a libm call (baseline x86-64 has no rounding instruction); exact for the
/// finite in-grid coordinates it is given.
fn floor(x: f64) -> f64 {
    let t = x as i64 as f64;
    if t > x { t - 1.0 } else { t }
}

/// Index of (i, j) among the six unique elements of a symmetric 3x3 tensor (FSL order).
pub fn sym(i: usize, j: usize) -> usize {
    const IDX: [[usize; 3]; 3] = [[0, 1, 2], [1, 3, 4], [2, 4, 5]];
    IDX[i][j]
}

const PA: [usize; 6] = [0, 0, 0, 1, 1, 2];
const PB: [usize; 6] = [0, 1, 2, 1, 2, 2];

/// The 18 unique Christoffel symbols of the second kind (001 eq. 3), `chr[6 * gamma + pair]`,
/// from f = D (g^ij) and dG (d/dx_k g_ij at f[6 + 6k + e]).
pub fn christoffel(f: &Sample) -> [f64; 18] {
    let dg = |k: usize, i: usize, j: usize| f[6 + 6 * k + sym(i, j)];
    let mut first = [0.0f64; 18];
    for s in 0..3 {
        for p in 0..6 {
            let (a, b) = (PA[p], PB[p]);
            first[6 * s + p] = 0.5 * (dg(a, b, s) + dg(b, a, s) - dg(s, a, b));
        }
    }
    let mut chr = [0.0f64; 18];
    for g in 0..3 {
        for p in 0..6 {
            chr[6 * g + p] = (0..3).map(|s| f[sym(g, s)] * first[6 * s + p]).sum();
        }
    }
    chr
}

/// a^gamma = -sum Gamma^gamma_{alpha beta} u^alpha u^beta (001 eq. 2).
pub fn accel(chr: &[f64; 18], u: &[f64; 3]) -> [f64; 3] {
    let uu = [u[0] * u[0], 2.0 * u[0] * u[1], 2.0 * u[0] * u[2], u[1] * u[1], 2.0 * u[1] * u[2], u[2] * u[2]];
    std::array::from_fn(|g| -(0..6).map(|p| chr[6 * g + p] * uu[p]).sum::<f64>())
}

fn axpy(x: &[f64; 3], h: f64, d: &[f64; 3]) -> [f64; 3] {
    std::array::from_fn(|c| x[c] + h * d[c])
}

/// One fibre, following `np_geo_begin` / `np_geo_feed` / `np_geo_finish`.
pub fn trace_one(fl: &CpuFields, seed: &Seed, p: &TraceParams) -> (Vec<[f32; 3]>, FibreEnd) {
    let mut x: [f64; 3] = seed.pos.map(|c| c as f64);
    let d: [f64; 3] = seed.dir.map(|c| c as f64);
    let nrm = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
    let mut v = d.map(|c| c / nrm);
    let mut pts = Vec::with_capacity(if p.record { (p.max_steps as usize + 1).min(4096) } else { 0 });
    let record = |pts: &mut Vec<[f32; 3]>, x: &[f64; 3]| {
        if p.record {
            pts.push(x.map(|c| c as f32));
        }
    };
    record(&mut pts, &x);
    let mut end = FibreEnd { steps: 0, stop: Stop::Running, length_mm: 0.0, riemann: 0.0, target_step: None, target_length_mm: 0.0, target_riemann: 0.0 };
    let (mut le, mut lg) = (0.0f64, 0.0f64);
    let visit = |end: &mut FibreEnd, lab: u8, step: u32, le: f64, lg: f64| {
        if lab & IN_TARGET != 0 && end.target_step.is_none() {
            end.target_step = Some(step);
            end.target_length_mm = le as f32;
            end.target_riemann = lg as f32;
        }
    };
    if !(nrm > 0.0) || !nrm.is_finite() || !x.iter().all(|c| c.is_finite()) {
        end.stop = Stop::Numeric;
    } else if !fl.inside(&x) {
        end.stop = Stop::LeftVolume;
    } else {
        let lab = fl.label(&x);
        visit(&mut end, lab, 0, 0.0, 0.0);
        if lab & IN_MASK == 0 {
            end.stop = Stop::LeftMask;
        } else if p.max_steps == 0 {
            end.stop = Stop::MaxSteps;
        }
    }
    let h = p.step as f64;
    let ng = p.groups as usize;
    let vs = fl.voxel_size;
    let mut step = 0u32;
    while end.stop == Stop::Running {
        // RK2: Strang splitting, one sample at the half-step point (np_geo_feed).
        let rk2 = p.method == Method::Rk2;
        let f = fl.sample(&if rk2 { axpy(&x, 0.5 * h, &v) } else { x }, ng);
        let chr = christoffel(&f);
        let mut a = accel(&chr, &v);
        if rk2 {
            a = accel(&chr, &axpy(&v, 0.5 * h, &a));
        }
        let mut vn = axpy(&v, h, &a);
        let n2 = vn[0] * vn[0] + vn[1] * vn[1] + vn[2] * vn[2];
        let inv = 1.0 / n2.sqrt();
        vn = vn.map(|c| c * inv);
        let xn: [f64; 3] = if rk2 { std::array::from_fn(|c| x[c] + 0.5 * h * (v[c] + vn[c])) } else { axpy(&x, h, &v) };
        let cosv = vn[0] * v[0] + vn[1] * v[1] + vn[2] * v[2];
        if !(n2 > 0.0) || !inv.is_finite() || !xn.iter().all(|c| c.is_finite()) {
            end.stop = Stop::Numeric;
            break;
        }
        if !fl.inside(&xn) {
            end.stop = Stop::LeftVolume;
            break;
        }
        // Curvature before the mask, as the kernels test them (the label arrives a step later).
        if cosv < p.min_cos as f64 {
            end.stop = Stop::Curvature;
            break;
        }
        let lab = fl.label(&xn);
        if lab & IN_MASK == 0 {
            end.stop = Stop::LeftMask;
            break;
        }
        let dx: [f64; 3] = std::array::from_fn(|c| xn[c] - x[c]);
        let g = sym3::inverse(&[f[0], f[1], f[2], f[3], f[4], f[5]]);
        let qg = g[0] * dx[0] * dx[0] + g[3] * dx[1] * dx[1] + g[5] * dx[2] * dx[2] + 2.0 * (g[1] * dx[0] * dx[1] + g[2] * dx[0] * dx[2] + g[4] * dx[1] * dx[2]);
        le += ((vs[0] * dx[0]).powi(2) + (vs[1] * dx[1]).powi(2) + (vs[2] * dx[2]).powi(2)).sqrt();
        lg += qg.max(0.0).sqrt();
        x = xn;
        v = vn;
        step += 1;
        record(&mut pts, &x);
        visit(&mut end, lab, step, le, lg);
        if step >= p.max_steps {
            end.stop = Stop::MaxSteps;
        }
    }
    end.steps = step;
    end.length_mm = le as f32;
    end.riemann = lg as f32;
    (pts, end)
}

pub struct CpuGeodesic {
    cpu: Arc<Cpu>,
    fields: Option<CpuFields>,
    weight_bits: Option<u32>,
    t: Timings,
}

impl CpuGeodesic {
    pub fn new(cpu: Arc<Cpu>) -> CpuGeodesic {
        CpuGeodesic { cpu, fields: None, weight_bits: None, t: Timings::default() }
    }
    /// Rounds interpolation weights down to `bits` fractional bits, as texture filtering hardware
    /// does (NVIDIA: 8), so the check can measure how much that alone moves the fibres.
    pub fn emulating_filter_bits(mut self, bits: u32) -> CpuGeodesic {
        self.weight_bits = Some(bits);
        self
    }
}

impl GeodesicKernels for CpuGeodesic {
    fn upload(&mut self, fields: &Fields) -> Result<()> {
        let (mut f, ms) = wall_ms(|| CpuFields::new(fields));
        f.weight_quantum = self.weight_bits.map(|b| 0.5f64.powi(b as i32));
        self.t.transfer_ms += ms;
        self.fields = Some(f);
        Ok(())
    }

    fn max_batch(&self, p: &TraceParams) -> usize {
        let mem = self.cpu.info.global_mem_bytes.max(1 << 30);
        super::batch_within(mem / 4, p)
    }

    fn trace(&mut self, seeds: &[Seed], p: &TraceParams) -> Result<FibreBatch> {
        let Some(fl) = &self.fields else { bail!("geodesic fields not uploaded") };
        let (fibres, ms) = wall_ms(|| {
            self.cpu.install(|| seeds.par_iter().with_max_len(16).map(|s| trace_one(fl, s, p)).collect::<Vec<_>>())
        });
        self.t.kernel_ms += ms;
        let mut batch = FibreBatch { ends: fibres.iter().map(|f| f.1).collect(), ..Default::default() };
        if p.record {
            batch.offsets = offsets_of(&batch.ends, p.every);
            batch.points = fibres.into_iter().flat_map(|(pts, e)| pts.into_iter().enumerate().filter(move |&(j, _)| is_kept(j, e.steps, p.every)).map(|(_, q)| q)).collect();
        }
        Ok(batch)
    }

    fn take_timings(&mut self) -> Timings {
        std::mem::take(&mut self.t)
    }
}
