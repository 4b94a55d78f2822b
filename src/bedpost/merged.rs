//! One stick's merged sample volumes (bedpostx's merged_th/ph/f samples: the canonical angles and
//! the fraction of every sample, on the grid) and the means of its angles (mean_th/ph samples).
//!
//! The merged volumes are made where the writer compresses them, a member's stretch of voxels at a
//! time (each a sample's rows of the mask's voxels, contiguous); the means a run of the grid a
//! task, each voxel's angles summed in sample order (round 26 had walked each voxel's samples
//! down strided volumes, a cache line a value).

use super::post::canonical;
use crate::volume::planes::RUN;
use crate::runtime::cpu::avx2_twin;
use rayon::prelude::*;

/// One stick's merged sample volumes made a stretch at a time, where the writer compresses them
/// (`volume::Voxels::Made`), and its angles' means: the merged volumes are never held (they were
/// 0.93 GB on the issue-7 volume, made before their compression; round 33). The same values as
/// round 30's route (each sample volume a task, then each voxel's mean down them): tested.
pub struct Stick<'a> {
    voxels: &'a [usize],
    ns: usize,
    nv: usize,
    samples: &'a [f32],
    params: (usize, usize, usize),
}

/// Which of a stick's merged volumes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Part {
    Theta,
    Phi,
    F,
}

impl<'a> Stick<'a> {
    /// The stick whose parameters are `(th, ph, f)` in `samples` (8 x `ns` x the mask's
    /// `voxels`, ascending flat indices of a grid of `nv`).
    pub fn new(voxels: &'a [usize], ns: usize, samples: &'a [f32], nv: usize, params: (usize, usize, usize)) -> Stick<'a> {
        Stick { voxels, ns, nv, samples, params }
    }

    fn row(&self, k: usize, s: usize) -> &'a [f32] {
        let n = self.voxels.len();
        &self.samples[(k * self.ns + s) * n..][..n]
    }

    /// [`Stick::fill`] of `part`, for a writer (`volume::Voxels::Made`).
    pub fn maker(&self, part: Part) -> impl Fn(usize, &mut [f32]) + Sync + '_ {
        move |first, out| self.fill(part, first, out)
    }

    /// Voxels [first, first + out.len()) of the merged volume `part` (flat: sample s, grid voxel
    /// v at s * nv + v); 0 outside the mask.
    pub fn fill(&self, part: Part, first: usize, out: &mut [f32]) {
        let s = self;
        avx2_twin!(Stick::fill_body, (s: &Stick, part: Part, first: usize, out: &mut [f32]))
    }

    #[inline(always)]
    fn fill_body(&self, part: Part, first: usize, out: &mut [f32]) {
        out.fill(0.0);
        let (nv, end) = (self.nv.max(1), first + out.len());
        let mut k = first;
        while k < end {
            let (s, v0) = (k / nv, k % nv);
            let v1 = nv.min(v0 + (end - k));
            let js = self.voxels.partition_point(|&v| v < v0)..self.voxels.partition_point(|&v| v < v1);
            let at = &mut out[k - first..];
            let (t, p, f) = (self.row(self.params.0, s), self.row(self.params.1, s), self.row(self.params.2, s));
            for j in js {
                at[self.voxels[j] - v0] = match part {
                    Part::Theta => canonical(t[j], p[j]).0,
                    Part::Phi => canonical(t[j], p[j]).1,
                    Part::F => f[j],
                };
            }
            k += v1 - v0;
        }
    }

    /// The means of the canonical angles over the samples (mean_th, mean_ph; grid of nv), summed
    /// in sample order from -0.0 (as f64's `Sum` starts, so a run of -0.0 keeps its sign).
    pub fn means(&self) -> (Vec<f32>, Vec<f32>) {
        let nv = self.nv;
        let (mut mth, mut mph) = (vec![0.0f32; nv], vec![0.0f32; nv]);
        mth.par_chunks_mut(RUN).zip(mph.par_chunks_mut(RUN)).enumerate().for_each(|(g, (mth, mph))| self.mean_run(g * RUN, mth, mph));
        (mth, mph)
    }

    /// The means of a run of the grid from voxel g0. On x86-64 CPUs with AVX2 it is compiled a
    /// second time, where `canonical`'s floor is an instruction, not a call (no FMA: the same
    /// bits).
    fn mean_run(&self, g0: usize, mth: &mut [f32], mph: &mut [f32]) {
        let s = self;
        avx2_twin!(Stick::mean_run_body, (s: &Stick, g0: usize, mth: &mut [f32], mph: &mut [f32]))
    }

    #[inline(always)]
    fn mean_run_body(&self, g0: usize, mth: &mut [f32], mph: &mut [f32]) {
        let ns = self.ns;
        let js = self.voxels.partition_point(|&v| v < g0)..self.voxels.partition_point(|&v| v < g0 + mth.len());
        let mut sums = vec![(-0.0f64, -0.0f64); js.len()];
        for s in 0..ns {
            let (t, p) = (&self.row(self.params.0, s)[js.clone()], &self.row(self.params.1, s)[js.clone()]);
            for (i, (&a, &b)) in t.iter().zip(p).enumerate() {
                let (a, b) = canonical(a, b);
                sums[i].0 += a as f64;
                sums[i].1 += b as f64;
            }
        }
        for (&v, &(st, sp)) in self.voxels[js].iter().zip(&sums) {
            mth[v - g0] = (st / ns.max(1) as f64) as f32;
            mph[v - g0] = (sp / ns.max(1) as f64) as f32;
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
            // A stick's volumes made in stretches of any length (across samples' and runs'
            // edges), poisoned first, and its means: the same bits.
            let stick = Stick::new(&voxels, ns, &samples, nv, (TH1, PH1, F1));
            for (part, want) in [(Part::Theta, &th), (Part::Phi, &ph), (Part::F, &f)] {
                let mut made = vec![f32::from_bits(0x7fc0_dead); ns * nv];
                let mut k = 0;
                while k < made.len() {
                    let len = rng.random_range(1..2 * nv + 3).min(made.len() - k);
                    stick.fill(part, k, &mut made[k..k + len]);
                    k += len;
                }
                assert_eq!(bits(&made), bits(want), "seed {seed}: {part:?}");
            }
            let (mth, mph) = stick.means();
            assert_eq!(bits(&mth), bits(&mean(&th)), "seed {seed}");
            assert_eq!(bits(&mph), bits(&mean(&ph)), "seed {seed}");
        }
    }
}
