//! DTI on the CPU: the reference implementation (f64 arithmetic, same steps as
//! `cl/common/dti.h`), parallel over voxel blocks on the backend's rayon pool.

use super::{sym3, Design, DtiKernels, Frame, TensorFit, BACKGROUND, D_ISO, FITTED, LAMBDA_FLOOR, NFIELDS, NSCALARS, REPAIRED};
use crate::runtime::cpu::Cpu;
use crate::runtime::{timing::wall_ms, Timings};
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

/// One voxel's weighted least-squares fit; `s` holds its `n` measurements.
pub fn fit_voxel(s: &[f32], d: &Design, lam_floor: f64) -> ([f64; 6], f64, i32) {
    let n = d.ngrad;
    let smax = s.iter().copied().fold(0.0f32, f32::max) as f64;
    if smax <= 0.0 {
        return ([0.0; 6], 0.0, BACKGROUND);
    }
    let sfloor = 1e-4 * smax;
    // log-signals relative to the largest, as in dti.h (where it matters for float32)
    let lsmax = smax.ln();
    let mut y = [0.0f64; 1024];
    let y = &mut y[..n.min(1024)];
    let mut beta = [0.0f64; 7];
    for i in 0..y.len() {
        y[i] = (s[i] as f64).max(sfloor).ln() - lsmax;
        let p = &d.pinv64[i];
        for k in 0..7 {
            beta[k] += p[k] * y[i];
        }
    }
    let mut a = [[0.0f64; 7]; 7];
    let mut r = [0.0f64; 7];
    for (i, b) in d.b64.iter().enumerate().take(y.len()) {
        let pred: f64 = (0..7).map(|k| b[k] * beta[k]).sum();
        let w = (2.0 * (pred - beta[0])).exp();
        for p in 0..7 {
            let wbp = w * b[p];
            r[p] += wbp * (y[i] - pred);
            for q in 0..=p {
                a[p][q] += wbp * b[q];
            }
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
    let (lam, vec) = sym3::eigen(&t);
    if lam[2] < lam_floor {
        t = sym3::compose(lam.map(|l| l.max(lam_floor)), &vec);
        flag = REPAIRED;
    }
    if t.iter().any(|v| !v.is_finite()) {
        return ([0.0; 6], 0.0, BACKGROUND);
    }
    (t, (r[0] + lsmax).exp(), flag)
}

fn tensor_at(tensor: &[f32], nvox: usize, v: usize) -> [f64; 6] {
    std::array::from_fn(|e| tensor[e * nvox + v] as f64)
}

/// Writes per-voxel results computed by `f` into a component-major array of `ncomp` components.
fn per_voxel<const C: usize>(cpu: &Cpu, nvox: usize, f: impl Fn(usize) -> [f32; C] + Sync) -> Vec<f32> {
    let rows: Vec<[f32; C]> = cpu.install(|| (0..nvox).into_par_iter().with_min_len(1024).map(&f).collect());
    let mut out = vec![0.0f32; C * nvox];
    for (v, r) in rows.iter().enumerate() {
        for c in 0..C {
            out[c * nvox + v] = r[c];
        }
    }
    out
}

pub fn voxel_frame(t: &[f64; 6], frame: Frame) -> [f64; 6] {
    let [ix, iy, iz] = frame.inv_voxel.map(|v| v as f64);
    let sx = if frame.flip_x { -ix } else { ix };
    [t[0] * sx * sx, t[1] * sx * iy, t[2] * sx * iz, t[3] * iy * iy, t[4] * iy * iz, t[5] * iz * iz]
}

pub fn sharpen_one(t: &[f64; 6], alpha: f64, lam_floor: f64) -> [f64; 6] {
    let (lam, vec) = sym3::eigen(t);
    let lam = lam.map(|l| l.max(lam_floor));
    let cr = (lam[0] * lam[1] * lam[2]).cbrt();
    sym3::compose(lam.map(|l| (l / cr).powf(-alpha) / cr), &vec)
}

impl DtiKernels for CpuDti {
    fn fit(&mut self, dwi: &[f32], mask: &[u8], d: &Design) -> Result<TensorFit> {
        let nvox = mask.len();
        if dwi.len() != nvox * d.ngrad {
            bail!("DWI holds {} values, expected {} voxels x {} volumes", dwi.len(), nvox, d.ngrad);
        }
        let n = d.ngrad;
        let (blocks, ms) = wall_ms(|| {
            self.cpu.install(|| {
                (0..nvox.div_ceil(BLOCK))
                    .into_par_iter()
                    .map(|b| {
                        let v0 = b * BLOCK;
                        let len = BLOCK.min(nvox - v0);
                        let mut scratch = vec![0.0f32; len * n];
                        for i in 0..n {
                            let row = &dwi[i * nvox + v0..i * nvox + v0 + len];
                            for (j, &x) in row.iter().enumerate() {
                                scratch[j * n + i] = x;
                            }
                        }
                        (0..len)
                            .map(|j| {
                                if mask[v0 + j] == 0 {
                                    ([0.0; 6], 0.0, BACKGROUND)
                                } else {
                                    fit_voxel(&scratch[j * n..(j + 1) * n], d, LAMBDA_FLOOR as f64)
                                }
                            })
                            .collect::<Vec<_>>()
                    })
                    .collect::<Vec<_>>()
            })
        });
        self.t.kernel_ms += ms;
        let mut fit = TensorFit { tensor: vec![0.0; 6 * nvox], s0: vec![0.0; nvox], flags: vec![0; nvox] };
        for (v, (t, s0, f)) in blocks.into_iter().flatten().enumerate() {
            for e in 0..6 {
                fit.tensor[e * nvox + v] = t[e] as f32;
            }
            fit.s0[v] = s0 as f32;
            fit.flags[v] = f;
        }
        Ok(fit)
    }

    fn scalars(&mut self, tensor: &[f32]) -> Result<Vec<f32>> {
        let nvox = tensor.len() / 6;
        let (out, ms) = wall_ms(|| {
            per_voxel::<NSCALARS>(&self.cpu, nvox, |v| {
                let (lam, vec) = sym3::eigen(&tensor_at(tensor, nvox, v));
                let v1 = sym3::v1(&vec);
                [
                    sym3::fractional_anisotropy(&lam) as f32,
                    ((lam[0] + lam[1] + lam[2]) / 3.0) as f32,
                    v1[0] as f32,
                    v1[1] as f32,
                    v1[2] as f32,
                    lam[0] as f32,
                    lam[1] as f32,
                    lam[2] as f32,
                ]
            })
        });
        self.t.kernel_ms += ms;
        Ok(out)
    }

    fn metric(&mut self, tensor: &[f32], dims: [usize; 3], frame: Frame) -> Result<Vec<f32>> {
        let nvox = dims.iter().product::<usize>();
        if tensor.len() != 6 * nvox {
            bail!("tensor field size does not match the grid");
        }
        let ((fields, _), ms) = wall_ms(|| {
            let dg: Vec<([f64; 6], [f64; 6])> = self.cpu.install(|| {
                (0..nvox)
                    .into_par_iter()
                    .with_min_len(1024)
                    .map(|v| {
                        let mut t = tensor_at(tensor, nvox, v);
                        if !(t[0] + t[3] + t[5] > 0.0) {
                            t = [D_ISO as f64, 0.0, 0.0, D_ISO as f64, 0.0, D_ISO as f64];
                        }
                        let d = voxel_frame(&t, frame);
                        (d, sym3::inverse(&d))
                    })
                    .collect()
            });
            let [nx, ny, nz] = dims;
            let fields = per_voxel::<NFIELDS>(&self.cpu, nvox, |v| {
                let (x, y, z) = (v % nx, (v / nx) % ny, v / (nx * ny));
                let mut o = [0.0f32; NFIELDS];
                for e in 0..6 {
                    o[e] = dg[v].0[e] as f32;
                }
                let pos = [x, y, z];
                let len = [nx, ny, nz];
                let step = [1, nx, nx * ny];
                for a in 0..3 {
                    let lo = if pos[a] > 0 { v - step[a] } else { v };
                    let hi = if pos[a] + 1 < len[a] { v + step[a] } else { v };
                    let span = ((hi - lo) / step[a]) as f64;
                    for e in 0..6 {
                        o[6 + 6 * a + e] = if span > 0.0 { ((dg[hi].1[e] - dg[lo].1[e]) / span) as f32 } else { 0.0 };
                    }
                }
                o
            });
            (fields, ())
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
