//! One stick's merged sample volumes (bedpostx's merged_th/ph/f samples: the canonical angles and
//! the fraction of every sample, on the grid) and the means of its angles (mean_th/ph samples).
//!
//! A run of the grid a task: each task reads its voxels' samples a sample at a time (contiguous
//! along the voxels), writes their slots of every sample volume and sums the angles in sample
//! order, so each angle is made once and no voxel's samples are walked down strided volumes
//! (round 26 made the means that way, a cache line a value). The same values as that route.

use super::post::canonical;
use crate::volume::planes::RUN;
use rayon::prelude::*;

/// The merged volumes (theta, phi, f: `nsamp` volumes of `nv` each) and the angles' means
/// (`nv` each) of one stick.
pub struct Merged {
    pub th: Vec<f32>,
    pub ph: Vec<f32>,
    pub f: Vec<f32>,
    pub mean_th: Vec<f32>,
    pub mean_ph: Vec<f32>,
}

/// `v` (volumes of `nv`) cut into runs of [`RUN`] grid voxels: item r holds run r of every volume.
fn grid_runs(v: &mut [f32], nv: usize) -> Vec<Vec<&mut [f32]>> {
    let mut out: Vec<Vec<&mut [f32]>> = (0..nv.div_ceil(RUN)).map(|_| Vec::new()).collect();
    for vol in v.chunks_mut(nv.max(1)) {
        for (r, piece) in vol.chunks_mut(RUN).enumerate() {
            out[r].push(piece);
        }
    }
    out
}

/// [`Merged`] of the stick whose parameters are `(th, ph, f)` in `samples` (8 x `ns` x the mask's
/// `voxels`, ascending flat indices of a grid of `nv`).
pub fn merged(voxels: &[usize], ns: usize, samples: &[f32], nv: usize, (th, ph, f): (usize, usize, usize)) -> Merged {
    let n = voxels.len();
    let row = |k: usize, s: usize| &samples[(k * ns + s) * n..][..n];
    let mut m = Merged { th: vec![0.0; ns * nv], ph: vec![0.0; ns * nv], f: vec![0.0; ns * nv], mean_th: vec![0.0; nv], mean_ph: vec![0.0; nv] };
    let runs: Vec<_> = grid_runs(&mut m.th, nv).into_iter().zip(grid_runs(&mut m.ph, nv)).zip(grid_runs(&mut m.f, nv)).zip(m.mean_th.chunks_mut(RUN).zip(m.mean_ph.chunks_mut(RUN))).collect();
    runs.into_par_iter().enumerate().for_each(|(g, (((mut vth, mut vph), mut vf), (mth, mph)))| {
        let g0 = g * RUN;
        // The mask's voxels in this run of the grid (the voxels ascend).
        let js = voxels.partition_point(|&v| v < g0)..voxels.partition_point(|&v| v < g0 + RUN);
        let rows = |k: usize| -> Vec<&[f32]> { (0..ns).map(|s| &row(k, s)[js.clone()]).collect() };
        let run = Run { voxels: &voxels[js.clone()], g0, th: rows(th), ph: rows(ph), f: rows(f) };
        run.place(&mut vth, &mut vph, &mut vf, mth, mph);
    });
    m
}

/// One run of the grid: its mask voxels, and their samples' rows (one a sample).
struct Run<'a> {
    voxels: &'a [usize],
    g0: usize,
    th: Vec<&'a [f32]>,
    ph: Vec<&'a [f32]>,
    f: Vec<&'a [f32]>,
}

impl Run<'_> {
    /// Writes the run's slots of every sample volume and of the means. On x86-64 CPUs with AVX2
    /// it is compiled a second time, where `canonical`'s floor is an instruction, not a call
    /// (no FMA: the same bits).
    fn place(&self, vth: &mut [&mut [f32]], vph: &mut [&mut [f32]], vf: &mut [&mut [f32]], mth: &mut [f32], mph: &mut [f32]) {
        #[cfg(target_arch = "x86_64")]
        {
            if crate::runtime::cpu::avx2() {
                // SAFETY: the feature was just detected on this CPU.
                return unsafe { self.place_avx2(vth, vph, vf, mth, mph) };
            }
        }
        self.place_body(vth, vph, vf, mth, mph)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn place_avx2(&self, vth: &mut [&mut [f32]], vph: &mut [&mut [f32]], vf: &mut [&mut [f32]], mth: &mut [f32], mph: &mut [f32]) {
        self.place_body(vth, vph, vf, mth, mph)
    }

    #[inline(always)]
    fn place_body(&self, vth: &mut [&mut [f32]], vph: &mut [&mut [f32]], vf: &mut [&mut [f32]], mth: &mut [f32], mph: &mut [f32]) {
        let ns = self.th.len();
        // Sums from -0.0, as f64's `Sum` starts, so a run of -0.0 keeps its sign as before.
        let mut sums = vec![(-0.0f64, -0.0f64); self.voxels.len()];
        for s in 0..ns {
            let (t, p, fr) = (self.th[s], self.ph[s], self.f[s]);
            for (i, &v) in self.voxels.iter().enumerate() {
                let (a, b) = canonical(t[i], p[i]);
                let x = v - self.g0;
                vth[s][x] = a;
                vph[s][x] = b;
                vf[s][x] = fr[i];
                sums[i].0 += a as f64;
                sums[i].1 += b as f64;
            }
        }
        for (&v, &(st, sp)) in self.voxels.iter().zip(&sums) {
            mth[v - self.g0] = (st / ns.max(1) as f64) as f32;
            mph[v - self.g0] = (sp / ns.max(1) as f64) as f32;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{F1, NPARAM, PH1, TH1};
    use super::*;
    use rand::Rng;

    /// The same bits as round 30's route (each sample volume a task, then each voxel's mean down
    /// the merged volumes), on fresh random samples with -0.0 and wandering angles, masks across
    /// the runs' edges.
    #[test]
    fn the_same_as_a_volume_at_a_time() {
        let (seed, mut rng) = crate::synth::fresh_rng();
        for (nv, ns) in [(1usize, 3usize), (RUN + 5, 7), (3 * RUN - 1, 4), (5000, 1)] {
            let voxels: Vec<usize> = (0..nv).filter(|_| rng.random_bool(0.6)).collect();
            let n = voxels.len();
            let samples: Vec<f32> = (0..NPARAM * ns * n).map(|_| if rng.random_bool(0.05) { -0.0 } else { rng.random_range(-9.0f32..9.0) }).collect();
            let got = merged(&voxels, ns, &samples, nv, (TH1, PH1, F1));
            let at = |k: usize, s: usize, j: usize| samples[(k * ns + s) * n + j];
            let (mut th, mut ph, mut f) = (vec![0.0f32; ns * nv], vec![0.0f32; ns * nv], vec![0.0f32; ns * nv]);
            for s in 0..ns {
                for (j, &v) in voxels.iter().enumerate() {
                    (th[s * nv + v], ph[s * nv + v]) = canonical(at(TH1, s, j), at(PH1, s, j));
                    f[s * nv + v] = at(F1, s, j);
                }
            }
            let mean = |m: &[f32]| {
                let mut out = vec![0.0f32; nv];
                for &v in &voxels {
                    out[v] = ((0..ns).map(|s| m[s * nv + v] as f64).sum::<f64>() / ns.max(1) as f64) as f32;
                }
                out
            };
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&got.th), bits(&th), "seed {seed}");
            assert_eq!(bits(&got.ph), bits(&ph), "seed {seed}");
            assert_eq!(bits(&got.f), bits(&f), "seed {seed}");
            assert_eq!(bits(&got.mean_th), bits(&mean(&th)), "seed {seed}");
            assert_eq!(bits(&got.mean_ph), bits(&mean(&ph)), "seed {seed}");
        }
    }
}
