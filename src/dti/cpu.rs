//! DTI on the CPU: the reference implementation (f64 arithmetic, same steps as
//! `cl/common/dti.h`), parallel over voxel blocks on the backend's rayon pool.

use super::{fastmath, sym3, Design, DtiKernels, FitShare, Frame, BACKGROUND, D_ISO, FITTED, LAMBDA_FLOOR, NFIELDS, NSCALARS, REPAIRED};
use crate::io::progress::Progress;
use crate::runtime::columns::{Columns, ColumnsMut};
use crate::runtime::cpu::{avx2_twin, Cpu};
use crate::runtime::{timing::wall_ms, Timings};
use crate::volume::xyz_of;
use anyhow::{bail, Result};
use rayon::prelude::*;
use std::sync::Arc;

/// Voxels per task: a block's measurements are gathered gradient by gradient (contiguous reads)
/// into a voxel-major scratch before fitting.
const BLOCK: usize = 256;

pub struct CpuDti {
    cpu: Arc<Cpu>,
    t: Timings,
}

impl CpuDti {
    pub fn new(cpu: Arc<Cpu>) -> CpuDti {
        CpuDti { cpu, t: Timings::default() }
    }
}

/// Per-thread scratch of the CPU fit (one allocation per voxel block, not per voxel).
pub struct Scratch {
    y: Vec<f64>,
    resid: Vec<f64>,
    /// w_i * B[i][k], column-major (7 columns of n).
    wb: Vec<f64>,
}

impl Scratch {
    pub fn new(n: usize) -> Scratch {
        Scratch { y: vec![0.0; n], resid: vec![0.0; n], wb: vec![0.0; 7 * n] }
    }
}

/// sum_i x_i y_i over contiguous slices with four independent partial sums, so the reduction
/// vectorises and pipelines in a fixed, deterministic order.
#[inline(always)]
fn dot(x: &[f64], y: &[f64]) -> f64 {
    let mut acc = [0.0f64; 4];
    let (xc, yc) = (x.chunks_exact(4), y.chunks_exact(4));
    let tail: f64 = xc.remainder().iter().zip(yc.remainder()).map(|(a, b)| a * b).sum();
    for (a, b) in xc.zip(yc) {
        for l in 0..4 {
            acc[l] += a[l] * b[l];
        }
    }
    (acc[0] + acc[1]) + (acc[2] + acc[3]) + tail
}

/// One voxel's weighted least-squares fit; `s` holds its `n` measurements. On x86-64 CPUs with
/// AVX2 the same code is compiled a second time for 4-wide vectors and chosen at run time.
pub fn fit_voxel(s: &[f32], d: &Design, lam_floor: f64, sc: &mut Scratch) -> ([f64; 6], f64, i32) {
    avx2_twin!(fit_voxel_body, (s: &[f32], d: &Design, lam_floor: f64, sc: &mut Scratch) -> ([f64; 6], f64, i32))
}

#[inline(always)]
fn fit_voxel_body(s: &[f32], d: &Design, lam_floor: f64, sc: &mut Scratch) -> ([f64; 6], f64, i32) {
    let n = d.ngrad;
    let smax = s.iter().copied().fold(0.0f32, f32::max) as f64;
    if smax <= 0.0 {
        return ([0.0; 6], 0.0, BACKGROUND);
    }
    let sfloor = 1e-4 * smax;
    // Log-signals relative to the largest, as in dti.h (where it matters for float32). Separate
    // passes over the measurements (log, OLS, weights, normal equations) keep each loop's
    // iterations independent, so the polynomial exp/ln pipeline instead of serialising.
    let lsmax = fastmath::ln(smax);
    let y = &mut sc.y[..n];
    for (yi, &si) in y.iter_mut().zip(s) {
        *yi = fastmath::ln((si as f64).max(sfloor)) - lsmax;
    }
    fn col(m: &[f64], n: usize, k: usize) -> &[f64] {
        &m[k * n..(k + 1) * n]
    }
    let beta: [f64; 7] = std::array::from_fn(|k| dot(col(&d.pinv_cols, n, k), y));
    // residuals of the OLS fit, and the weights (predicted S / S0)^2 in wb's first column
    let wb = &mut sc.wb[..7 * n];
    let resid = &mut sc.resid[..n];
    // prediction without the intercept, column by column so the loops run along contiguous data
    wb[..n].fill(0.0);
    for k in 1..7 {
        for (p, &b) in wb[..n].iter_mut().zip(col(&d.b_cols, n, k)) {
            *p += b * beta[k];
        }
    }
    for i in 0..n {
        resid[i] = y[i] - beta[0] - wb[i];
        wb[i] *= 2.0;
    }
    for i in 0..n {
        wb[i] = fastmath::exp(wb[i]);
    }
    // w * B, column by column; column 0 of B is all ones, so wb's column 0 is w itself
    let (w, rest) = wb.split_at_mut(n);
    for (k, dst) in rest.chunks_exact_mut(n).enumerate() {
        for ((o, &wi), &b) in dst.iter_mut().zip(w.iter()).zip(col(&d.b_cols, n, k + 1)) {
            *o = wi * b;
        }
    }
    // normal equations B^T W B delta = B^T W (y - B beta_ols), lower triangle
    let mut a = [[0.0f64; 7]; 7];
    let mut r = [0.0f64; 7];
    for p in 0..7 {
        r[p] = dot(col(wb, n, p), resid);
        for q in 0..=p {
            a[p][q] = dot(col(wb, n, p), col(&d.b_cols, n, q));
        }
    }
    // Cholesky, lower triangle; the system is solved for the correction to the OLS solution, as
    // in dti.h, where float32 needs it.
    for p in 0..7 {
        for q in 0..=p {
            let mut s = a[p][q];
            for k in 0..q {
                s -= a[p][k] * a[q][k];
            }
            if p == q {
                if s.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
                    return ([0.0; 6], 0.0, BACKGROUND);
                }
                a[p][p] = s.sqrt();
            } else {
                a[p][q] = s / a[q][q];
            }
        }
    }
    for p in 0..7 {
        let mut s = r[p];
        for k in 0..p {
            s -= a[p][k] * r[k];
        }
        r[p] = s / a[p][p];
    }
    for p in (0..7).rev() {
        let mut s = r[p];
        for k in p + 1..7 {
            s -= a[k][p] * r[k];
        }
        r[p] = s / a[p][p];
    }
    for k in 0..7 {
        r[k] += beta[k];
    }
    let mut t: [f64; 6] = std::array::from_fn(|e| r[e + 1] * 1e-3);
    let mut flag = FITTED;
    if let Some(r) = repair(&t, lam_floor) {
        t = r;
        flag = REPAIRED;
    }
    if t.iter().any(|v| !v.is_finite()) {
        return ([0.0; 6], 0.0, BACKGROUND);
    }
    (t, (r[0] + lsmax).exp(), flag)
}

/// The repair rule: a tensor whose smallest eigenvalue is below `lam_floor` gets those
/// eigenvalues raised to it (eigenvectors kept); `None` when it needs none.
pub fn repair(t: &[f64; 6], lam_floor: f64) -> Option<[f64; 6]> {
    if sym3::surely_above(t, lam_floor) {
        return None;
    }
    let (lam, vec) = sym3::eigen(t);
    (lam[2] < lam_floor).then(|| sym3::compose(lam.map(|l| l.max(lam_floor)), &vec))
}

fn tensor_at(tensor: &[f32], nvox: usize, v: usize) -> [f64; 6] {
    std::array::from_fn(|e| tensor[e * nvox + v] as f64)
}

/// FA, MD, V1, L1-L3 of one tensor ([`NSCALARS`] components).
fn scalar_row(t: &[f64; 6]) -> [f32; NSCALARS] {
    let (lam, vec) = sym3::eigen(t);
    let v1 = sym3::v1(&vec);
    [sym3::fractional_anisotropy(&lam) as f32, ((lam[0] + lam[1] + lam[2]) / 3.0) as f32, v1[0] as f32, v1[1] as f32, v1[2] as f32, lam[0] as f32, lam[1] as f32, lam[2] as f32]
}

/// Items [b * block, (b + 1) * block) of every component of `out`, one entry per b: each
/// block's voxels written where they lie, from any core, with no whole-grid rows beside the
/// outputs (the fit's rows and its maps' rows had been ~224 MiB at HCP size).
fn blocks<'a, T: Copy + Send + Sync>(out: &'a mut ColumnsMut<T>, block: usize) -> Vec<Vec<&'a mut [T]>> {
    let nblocks = out.len().div_ceil(block);
    let mut runs: Vec<_> = out.runs_mut().into_iter().map(|r| r.chunks_mut(block)).collect();
    (0..nblocks).map(|_| runs.iter_mut().map(|r| r.next().expect("every run has the same blocks")).collect()).collect()
}

/// Voxels per task of [`per_voxel_into`].
const RUN: usize = 1024;

/// Per-voxel results of `f`, laid out component-major (`C` components), on every core.
fn per_voxel<const C: usize>(cpu: &Cpu, nvox: usize, f: impl Fn(usize) -> [f32; C] + Sync) -> Vec<f32> {
    let mut out = vec![0.0f32; C * nvox];
    cpu.install(|| per_voxel_into(&mut ColumnsMut::whole(&mut out, C), &f));
    out
}

/// [`per_voxel`] into a share of `C` components (on the calling pool).
fn per_voxel_into<const C: usize>(out: &mut ColumnsMut<f32>, f: impl Fn(usize) -> [f32; C] + Sync) {
    blocks(out, RUN).into_par_iter().enumerate().for_each(|(b, mut runs)| {
        for j in 0..runs[0].len() {
            let row = f(b * RUN + j);
            for (run, x) in runs.iter_mut().zip(row) {
                run[j] = x;
            }
        }
    });
}

/// D of voxel `v` in the trackers' frame: the tensor, or free water where there is none.
fn frame_tensor(tensor: &[f32], nvox: usize, v: usize, frame: Frame) -> [f64; 6] {
    let mut t = tensor_at(tensor, nvox, v);
    if !(t[0] + t[3] + t[5] > 0.0) {
        t = [D_ISO as f64, 0.0, 0.0, D_ISO as f64, 0.0, D_ISO as f64];
    }
    voxel_frame(&t, frame)
}

/// Voxels of G = D^-1 held at once by [`metric_slabs`]: a slab of z planes and its two neighbour
/// planes (48 bytes a voxel), not D and G of the whole grid (~350 MB at HCP size).
const SLAB_VOXELS: usize = 1 << 19;

/// The [`NFIELDS`] fields of every voxel, slab by slab along z: `write(v0, v1, f)` writes voxels
/// [v0, v1) with `f(v)` giving voxel v's.
fn metric_slabs(tensor: &[f32], dims: [usize; 3], frame: Frame, mut write: impl FnMut(usize, usize, &(dyn Fn(usize) -> [f32; NFIELDS] + Sync))) {
    let [nx, ny, nz] = dims;
    let nvox = nx * ny * nz;
    let plane = nx * ny;
    let slab = (SLAB_VOXELS / plane).clamp(1, nz);
    let (len, step) = ([nx, ny, nz], [1, nx, plane]);
    for z0 in (0..nz).step_by(slab) {
        let z1 = (z0 + slab).min(nz);
        let g0 = z0.saturating_sub(1) * plane;
        let g: Vec<[f64; 6]> = (g0..(z1 + 1).min(nz) * plane).into_par_iter().with_min_len(RUN).map(|v| sym3::inverse(&frame_tensor(tensor, nvox, v, frame))).collect();
        write(z0 * plane, z1 * plane, &|v| {
            let mut o = [0.0f32; NFIELDS];
            for (o, d) in o.iter_mut().zip(frame_tensor(tensor, nvox, v, frame)) {
                *o = d as f32;
            }
            let pos = xyz_of(v, dims);
            for a in 0..3 {
                let lo = if pos[a] > 0 { v - step[a] } else { v };
                let hi = if pos[a] + 1 < len[a] { v + step[a] } else { v };
                let span = ((hi - lo) / step[a]) as f64;
                for e in 0..6 {
                    o[6 + 6 * a + e] = if span > 0.0 { ((g[hi - g0][e] - g[lo - g0][e]) / span) as f32 } else { 0.0 };
                }
            }
            o
        });
    }
}

pub fn voxel_frame(t: &[f64; 6], frame: Frame) -> [f64; 6] {
    let [ix, iy, iz] = frame.inv_voxel.map(|v| v as f64);
    let sx = if frame.flip_x { -ix } else { ix };
    [t[0] * sx * sx, t[1] * sx * iy, t[2] * sx * iz, t[3] * iy * iy, t[4] * iy * iz, t[5] * iz * iz]
}

pub fn sharpen_one(t: &[f64; 6], alpha: f64, lam_floor: f64) -> [f64; 6] {
    sharpen_eigen(sym3::eigen(t), alpha, lam_floor)
}

/// [`sharpen_one`] from the tensor's eigen-decomposition (for callers that need it too).
pub fn sharpen_eigen((lam, vec): ([f64; 3], [f64; 9]), alpha: f64, lam_floor: f64) -> [f64; 6] {
    let lam = lam.map(|l| l.max(lam_floor));
    let cr = (lam[0] * lam[1] * lam[2]).cbrt();
    sym3::compose(lam.map(|l| (l / cr).powf(-alpha) / cr), &vec)
}

impl DtiKernels for CpuDti {
    fn fit_into(&mut self, dwi: Columns<f32>, mask: &[u8], d: &Design, out: &mut FitShare, bar: &Progress) -> Result<()> {
        let nvox = mask.len();
        if dwi.len() != nvox || dwi.ncomp() != d.ngrad || out.len() != nvox {
            bail!("DWI holds {} x {} values and the outputs {} voxels, expected {} voxels x {} volumes", dwi.ncomp(), dwi.len(), out.len(), nvox, d.ngrad);
        }
        let n = d.ngrad;
        let ((), ms) = wall_ms(|| {
            self.cpu.install(|| {
                let nblocks = nvox.div_ceil(BLOCK);
                let maps: Vec<Option<Vec<&mut [f32]>>> = match &mut out.scalars {
                    Some(m) => blocks(m, BLOCK).into_iter().map(Some).collect(),
                    None => (0..nblocks).map(|_| None).collect(),
                };
                let outs = blocks(&mut out.tensor, BLOCK).into_par_iter().zip(blocks(&mut out.s0, BLOCK)).zip(blocks(&mut out.flags, BLOCK)).zip(maps);
                outs.enumerate().for_each(|(b, (((mut tensor, mut s0), mut flags), mut maps))| {
                    let v0 = b * BLOCK;
                    let len = BLOCK.min(nvox - v0);
                    let mut scratch = vec![0.0f32; len * n];
                    let mut sc = Scratch::new(n);
                    for i in 0..n {
                        let row = &dwi.run(i)[v0..v0 + len];
                        for (j, &x) in row.iter().enumerate() {
                            scratch[j * n + i] = x;
                        }
                    }
                    for j in 0..len {
                        let (t, s, f) = if mask[v0 + j] == 0 { ([0.0; 6], 0.0, BACKGROUND) } else { fit_voxel(&scratch[j * n..(j + 1) * n], d, LAMBDA_FLOOR as f64, &mut sc) };
                        let t = t.map(|x| x as f32);
                        for (run, x) in tensor.iter_mut().zip(t) {
                            run[j] = x;
                        }
                        (s0[0][j], flags[0][j]) = (s as f32, f);
                        // The maps of the tensors as stored (f32), as `scalars` makes them from a file's.
                        if let Some(maps) = &mut maps {
                            for (run, x) in maps.iter_mut().zip(scalar_row(&t.map(|x| x as f64))) {
                                run[j] = x;
                            }
                        }
                    }
                    bar.inc(mask[v0..v0 + len].iter().filter(|&&m| m != 0).count() as u64);
                });
            })
        });
        self.t.kernel_ms += ms;
        Ok(())
    }

    fn scalars(&mut self, tensor: &[f32]) -> Result<Vec<f32>> {
        let nvox = tensor.len() / 6;
        let (out, ms) = wall_ms(|| per_voxel::<NSCALARS>(&self.cpu, nvox, |v| scalar_row(&tensor_at(tensor, nvox, v))));
        self.t.kernel_ms += ms;
        Ok(out)
    }

    fn metric(&mut self, tensor: &[f32], dims: [usize; 3], frame: Frame) -> Result<Vec<f32>> {
        let nvox = dims.iter().product::<usize>();
        if tensor.len() != 6 * nvox {
            bail!("tensor field size does not match the grid");
        }
        let mut fields = vec![0.0f32; NFIELDS * nvox];
        let ((), ms) = wall_ms(|| {
            let mut out = ColumnsMut::whole(&mut fields, NFIELDS);
            self.cpu.install(|| metric_slabs(tensor, dims, frame, |v0, v1, f| per_voxel_into(&mut out.part(v0..v1), |i| f(v0 + i))))
        });
        self.t.kernel_ms += ms;
        Ok(fields)
    }

    fn metric_voxels(&mut self, tensor: &[f32], dims: [usize; 3], frame: Frame) -> Result<Vec<[f32; NFIELDS]>> {
        let nvox = dims.iter().product::<usize>();
        if tensor.len() != 6 * nvox {
            bail!("tensor field size does not match the grid");
        }
        let mut fields = vec![[0.0f32; NFIELDS]; nvox];
        let ((), ms) = wall_ms(|| {
            self.cpu.install(|| {
                metric_slabs(tensor, dims, frame, |v0, v1, f| {
                    fields[v0..v1].par_chunks_mut(RUN).enumerate().for_each(|(b, run)| {
                        for (j, o) in run.iter_mut().enumerate() {
                            *o = f(v0 + b * RUN + j);
                        }
                    })
                })
            })
        });
        self.t.kernel_ms += ms;
        Ok(fields)
    }

    fn sharpen(&mut self, tensor: &[f32], alpha: f32) -> Result<Vec<f32>> {
        let nvox = tensor.len() / 6;
        let (out, ms) = wall_ms(|| {
            per_voxel::<6>(&self.cpu, nvox, |v| {
                let t = tensor_at(tensor, nvox, v);
                if !(t[0] + t[3] + t[5] > 0.0) {
                    return [0.0; 6];
                }
                sharpen_one(&t, alpha as f64, LAMBDA_FLOOR as f64).map(|x| x as f32)
            })
        });
        self.t.kernel_ms += ms;
        Ok(out)
    }

    fn take_timings(&mut self) -> Timings {
        std::mem::take(&mut self.t)
    }
}
