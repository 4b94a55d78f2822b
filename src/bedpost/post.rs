//! From samples to FSL bedpostx's outputs: merged sample volumes, posterior means, mean
//! directions (dyads: principal eigenvector of the samples' scatter matrix sum v v^T) and their
//! dispersion (1 - largest eigenvalue of the mean scatter matrix), and the acceptance map.

use super::merged::{Part, Stick};
use super::{trig, BedpostResult, D, F1, F2, NPARAM, PH1, PH2, S0, TH1, TH2};
use crate::dti::{sym3, sym3_lanes};
use crate::runtime::cpu::avx2_twin;
use crate::volume::{Geometry, Outputs, Voxels};
use anyhow::{bail, Result};
use rayon::prelude::*;
use std::path::{Path, PathBuf};

/// Unit stick direction of (theta, phi), f64.
pub fn direction(th: f32, ph: f32) -> [f64; 3] {
    unit(trig::sincos(th as f64), trig::sincos(ph as f64))
}

/// The unit vector of (sin, cos) of theta and of phi: one expression for [`direction`] and
/// [`directions`], so both give the same bits.
#[inline(always)]
fn unit((st, ct): (f64, f64), (sp, cp): (f64, f64)) -> [f64; 3] {
    [st * cp, st * sp, ct]
}

/// [`direction`] of each (theta, phi) pair of two rows, the same values, without a branch per
/// angle where the rows are all in the reduction's range (the loop then vectorises; on x86-64
/// CPUs with AVX2 it is compiled a second time for 4-wide vectors, no FMA, so the same bits).
pub fn directions(ths: &[f32], phs: &[f32], out: &mut [[f64; 3]]) {
    if !ths.iter().chain(phs).all(|&a| trig::in_range(a as f64)) {
        for ((o, &t), &p) in out.iter_mut().zip(ths).zip(phs) {
            *o = direction(t, p);
        }
        return;
    }
    avx2_twin!(directions_reduced, (ths: &[f32], phs: &[f32], out: &mut [[f64; 3]]))
}

#[inline(always)]
fn directions_reduced(ths: &[f32], phs: &[f32], out: &mut [[f64; 3]]) {
    for ((o, &t), &p) in out.iter_mut().zip(ths).zip(phs) {
        *o = unit(trig::sincos_reduced(t as f64), trig::sincos_reduced(p as f64));
    }
}

/// The same direction with theta in [0, pi] and phi in (-pi, pi] (a chain may wander outside).
/// Angle arithmetic, not trigonometry: it runs once per sample of every voxel (tens of millions
/// on a whole brain). theta -> -theta is the same axis with phi + pi; theta and phi are 2 pi
/// periodic.
#[inline]
pub fn canonical(th: f32, ph: f32) -> (f32, f32) {
    use std::f64::consts::{PI, TAU};
    let wrap = |a: f64| {
        let r = a - TAU * ((a + PI) / TAU).floor();
        if r <= -PI {
            r + TAU
        } else {
            r
        }
    };
    let (mut t, mut p) = (wrap(th as f64), ph as f64);
    if t < 0.0 {
        t = -t;
        p += PI;
    }
    (t as f32, wrap(p) as f32)
}

/// Posterior summaries of one voxel.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct VoxelSummary {
    pub mean: [f32; NPARAM],
    /// Mean directions (z >= 0) and 1 - largest eigenvalue of the mean scatter matrix.
    pub dyads: [[f32; 3]; 2],
    pub dispersion: [f32; 2],
}

/// v v^T added to the scatter sum m (upper triangle, xx xy xz yy yz zz).
fn add_dyadic(m: &mut [f64; 6], v: [f64; 3]) {
    m[0] += v[0] * v[0];
    m[1] += v[0] * v[1];
    m[2] += v[0] * v[2];
    m[3] += v[1] * v[1];
    m[4] += v[1] * v[2];
    m[5] += v[2] * v[2];
}

/// Mean direction (z >= 0) and dispersion from the scatter sum of n unit vectors.
#[cfg(test)]
fn dyadic_mean(m: [f64; 6], n: usize) -> ([f64; 3], f64) {
    if n == 0 {
        return ([0.0; 3], 1.0);
    }
    let (lam, vec) = sym3::eigen(&m.map(|x| x / n as f64));
    from_eigen(&lam, &vec)
}

/// Mean direction (z >= 0) and dispersion from the decomposed mean scatter matrix.
fn from_eigen(lam: &[f64; 3], vec: &[f64; 9]) -> ([f64; 3], f64) {
    let mut d = sym3::v1(vec);
    if d[2] < 0.0 {
        d = d.map(|x| -x);
    }
    (d, 1.0 - lam[0])
}

/// Mean direction and dispersion of unit vectors, as bedpostx's make_dyadic_vectors: one voxel's
/// walk down its samples, the reference the tests hold `summarise`'s tiles to.
#[cfg(test)]
fn mean_direction(vs: impl Iterator<Item = [f64; 3]>) -> ([f64; 3], f64) {
    let mut m = [0.0f64; 6];
    let mut n = 0usize;
    for v in vs {
        add_dyadic(&mut m, v);
        n += 1;
    }
    dyadic_mean(m, n)
}

/// Summaries of every voxel from samples laid out 8 x nsamp x nvox.
pub fn summarise(samples: &[f32], nsamp: usize, nvox: usize) -> Vec<VoxelSummary> {
    // A tile of voxels at a time, each sample's row read along the voxels: a voxel's own walk down
    // its samples strides nvox floats, a cache line per value (round 26). Each voxel's sums still
    // run over its samples in order, so the same bits.
    const TILE: usize = 256;
    let at = |k: usize, s: usize, v: usize| samples[(k * nsamp + s) * nvox + v];
    let mut out = vec![VoxelSummary::default(); nvox];
    out.par_chunks_mut(TILE).enumerate().for_each(|(t, out)| {
        let v0 = t * TILE;
        let mut sum = [[0.0f64; NPARAM]; TILE];
        for k in 0..NPARAM {
            for s in 0..nsamp {
                for (i, acc) in sum[..out.len()].iter_mut().enumerate() {
                    acc[k] += at(k, s, v0 + i) as f64;
                }
            }
        }
        let mut dyad = [[[0.0f64; 6]; 2]; TILE];
        let mut dirs = [[0.0f64; 3]; TILE];
        let row = |k: usize, s: usize| &samples[(k * nsamp + s) * nvox + v0..][..out.len()];
        for (j, (th, ph)) in [(TH1, PH1), (TH2, PH2)].into_iter().enumerate() {
            for s in 0..nsamp {
                directions(row(th, s), row(ph, s), &mut dirs[..out.len()]);
                for (m, &d) in dyad[..out.len()].iter_mut().zip(&dirs) {
                    add_dyadic(&mut m[j], d);
                }
            }
        }
        // Both sticks' mean scatter matrices decomposed side by side (the same bits as one at a
        // time: sym3_lanes).
        let means: Vec<[f64; 6]> = dyad[..out.len()].iter().flat_map(|m| m.map(|m| m.map(|x| x / nsamp as f64))).collect();
        let eig = sym3_lanes::eigen_many(&means);
        for (i, o) in out.iter_mut().enumerate() {
            for k in 0..NPARAM {
                o.mean[k] = (sum[i][k] / nsamp.max(1) as f64) as f32;
            }
            for j in 0..2 {
                let (d, disp) = if nsamp == 0 { ([0.0; 3], 1.0) } else { from_eigen(&eig[2 * i + j].0, &eig[2 * i + j].1) };
                o.dyads[j] = d.map(|x| x as f32);
                o.dispersion[j] = disp as f32;
            }
        }
    });
    out
}

/// The names (without .nii.gz) of the files [`write`] writes.
pub fn file_names() -> Vec<String> {
    let mut v = Vec::new();
    for s in 1..=2 {
        for k in ["mean_th", "mean_ph", "merged_th", "merged_ph", "merged_f"] {
            v.push(format!("{k}{s}samples"));
        }
    }
    for k in ["mean_f1samples", "mean_f2samples", "mean_fsumsamples", "mean_dsamples", "mean_S0samples", "dyads1", "dyads1_dispersion", "dyads2", "dyads2_dispersion", "acceptance", "nodif_brain_mask"]
    {
        v.push(k.to_string());
    }
    v
}

/// Writes bedpostx's files into `dir` (all or nothing) and returns their paths.
pub fn write(r: &BedpostResult, geom: &Geometry, dir: &Path) -> Result<Vec<PathBuf>> {
    let nv = geom.nvox();
    let n = r.voxels.len();
    let ns = r.nsamp;
    if r.samples.len() != NPARAM * ns * n {
        bail!("sample array does not match {n} voxels x {ns} samples");
    }
    let mut out = Outputs::new();
    let p = |name: &str| dir.join(format!("{name}.nii.gz"));
    // Each batch's files are compressed side by side (Outputs::niftis), not one after another,
    // where each small map had a round of every core for a few megabytes (round 26, issue-7
    // volume on the H100 host: the write 1.16 -> 1.12 s; the rest is compressing the samples).
    // Both sticks' merged samples are one batch: they are made where they are compressed
    // (`merged::Stick`), so none is held (before round 33, one stick's three at a time).
    let scatter = |vals: &dyn Fn(usize) -> f32| {
        let mut m = vec![0.0f32; nv];
        for (j, &v) in r.voxels.iter().enumerate() {
            m[v] = vals(j);
        }
        m
    };
    // The angles' means, the summaries and their maps are made on a thread of their own while the
    // samples' files are compressed (the compression alone leaves some cores idle); started
    // before round 32's merged samples were made, they had slowed them 3x on the shared cores.
    let sticks = [Stick::new(&r.voxels, ns, &r.samples, nv, (TH1, PH1, F1)), Stick::new(&r.voxels, ns, &r.samples, nv, (TH2, PH2, F2))];
    let make_maps = || -> Vec<(&str, usize, Vec<f32>)> {
        let [(th1, ph1), (th2, ph2)] = crate::runtime::stages::stage("mean angles", || sticks.each_ref().map(|st| st.means()));
        let sum = crate::runtime::stages::stage("summaries", || summarise(&r.samples, ns, n));
        let map = |f: &dyn Fn(&VoxelSummary) -> f32| scatter(&|j| f(&sum[j]));
        let dyads = |j: usize| (0..3).flat_map(|c| map(&|s| s.dyads[j][c])).collect::<Vec<f32>>();
        vec![
            ("mean_f1samples", 1, map(&|s| s.mean[F1])),
            ("mean_f2samples", 1, map(&|s| s.mean[F2])),
            ("mean_fsumsamples", 1, map(&|s| s.mean[F1] + s.mean[F2])),
            ("mean_dsamples", 1, map(&|s| s.mean[D])),
            ("mean_S0samples", 1, map(&|s| s.mean[S0])),
            ("dyads1", 3, dyads(0)),
            ("dyads1_dispersion", 1, map(&|s| s.dispersion[0])),
            ("dyads2", 3, dyads(1)),
            ("dyads2_dispersion", 1, map(&|s| s.dispersion[1])),
            ("acceptance", 1, scatter(&|j| r.acceptance[j])),
            // probtrackx reads the mask of the sampled voxels from here.
            ("nodif_brain_mask", 1, scatter(&|_| 1.0)),
            ("mean_th1samples", 1, th1),
            ("mean_ph1samples", 1, ph1),
            ("mean_th2samples", 1, th2),
            ("mean_ph2samples", 1, ph2),
        ]
    };
    let fills: Vec<_> = sticks.iter().flat_map(|st| [st.maker(Part::Theta), st.maker(Part::Phi), st.maker(Part::F)]).collect();
    let mut files = Vec::new();
    for (k, fill) in fills.chunks(3).enumerate() {
        for (name, f) in ["th", "ph", "f"].iter().zip(fill) {
            files.push((p(&format!("merged_{name}{}samples", k + 1)), ns, Voxels::Made(ns * nv, f as &(dyn Fn(usize, &mut [f32]) + Sync))));
        }
    }
    let (written, maps) = std::thread::scope(|sc| {
        let maps = sc.spawn(make_maps);
        (out.niftis_of(geom, &files), maps.join())
    });
    written?;
    let maps = maps.map_err(|_| anyhow::anyhow!("bedpost's summaries panicked"))?;
    out.niftis(geom, &maps.iter().map(|(name, nvol, d)| (p(name), *nvol, &d[..])).collect::<Vec<_>>())?;
    out.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tiled summaries equal each voxel's own walk down its samples (the route before round
    /// 26), bit for bit, on fresh random samples over voxel counts around the tile's edge.
    #[test]
    fn tiled_summaries_equal_each_voxels_own_walk() {
        use rand::Rng;
        let (seed, mut rng) = crate::synth::fresh_rng();
        for (nvox, ns) in [(1usize, 3usize), (255, 7), (256, 1), (257, 5), (700, 4)] {
            let samples: Vec<f32> = (0..NPARAM * ns * nvox).map(|_| rng.random_range(-4.0f32..4.0)).collect();
            let at = |k: usize, s: usize, v: usize| samples[(k * ns + s) * nvox + v];
            let got = summarise(&samples, ns, nvox);
            for v in 0..nvox {
                let mut want = VoxelSummary::default();
                for k in 0..NPARAM {
                    want.mean[k] = ((0..ns).map(|s| at(k, s, v) as f64).sum::<f64>() / ns as f64) as f32;
                }
                for (j, (th, ph)) in [(TH1, PH1), (TH2, PH2)].into_iter().enumerate() {
                    let (d, disp) = mean_direction((0..ns).map(|s| direction(at(th, s, v), at(ph, s, v))));
                    want.dyads[j] = d.map(|x| x as f32);
                    want.dispersion[j] = disp as f32;
                }
                assert_eq!(got[v], want, "seed {seed}: {nvox} voxels, voxel {v}");
            }
        }
    }

    /// `summarise`'s time on the issue-7 volume's size (358,600 voxels x 50 samples; `cargo test
    /// --release --lib summarise_rate -- --ignored --nocapture`).
    #[test]
    #[ignore]
    fn summarise_rate() {
        use rand::Rng;
        let (nvox, ns) = (358_600usize, 50usize);
        let mut rng = crate::synth::rng(3);
        let samples: Vec<f32> = (0..NPARAM * ns * nvox).map(|_| rng.random_range(-4.0f32..4.0)).collect();
        for _ in 0..3 {
            let t = std::time::Instant::now();
            let s = summarise(&samples, ns, nvox);
            println!("summarise {:.1} ms ({} threads), {:?}", t.elapsed().as_secs_f64() * 1e3, rayon::current_num_threads(), s[7].dyads[0]);
        }
    }

    #[test]
    fn canonical_keeps_the_direction() {
        for (th, ph) in [(-0.3f32, 4.0f32), (3.5, -7.0), (0.2, 0.1)] {
            let (a, b) = canonical(th, ph);
            assert!((0.0..=std::f32::consts::PI).contains(&a) && b.abs() <= std::f32::consts::PI);
            let (u, w) = (direction(th, ph), direction(a, b));
            assert!((0..3).all(|c| (u[c] - w[c]).abs() < 1e-5), "{u:?} {w:?}");
        }
    }

    #[test]
    fn canonical_matches_the_trigonometric_route() {
        // Against acos/atan2 of the direction, both in f64 from the same f32 inputs: they differ
        // by the f32 rounding of the result (half an ulp of pi, 1.2e-7) plus acos's sqrt(eps)
        // sensitivity at the poles (1.5e-8); phi is compared where it means something.
        let mut r = crate::synth::rng(7);
        use rand::Rng;
        for _ in 0..20000 {
            let (th, ph) = (r.random_range(-20.0f32..20.0), r.random_range(-20.0f32..20.0));
            let (a, b) = canonical(th, ph);
            let v = direction(th, ph);
            let (ta, pb) = (v[2].clamp(-1.0, 1.0).acos(), v[1].atan2(v[0]));
            assert!((a as f64 - ta).abs() < 1e-6, "theta {th} {ph}: {a} vs {ta}");
            if ta.sin() > 1e-3 {
                let dp = (b as f64 - pb).abs();
                assert!(dp.min(std::f64::consts::TAU - dp) < 1e-6, "phi {th} {ph}: {b} vs {pb}");
            }
        }
    }

    #[test]
    fn dispersion_is_zero_for_equal_and_large_for_spread_directions() {
        let (d, disp) = mean_direction([[0.0, 0.0, 1.0], [0.0, 0.0, -1.0]].into_iter());
        assert!((d[2] - 1.0).abs() < 1e-9 && disp.abs() < 1e-9);
        let (_, disp) = mean_direction([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]].into_iter());
        assert!((disp - 2.0 / 3.0).abs() < 1e-9);
    }
}
