//! Starting points of the chains, from the tensor fit (bedpostx also starts from dtifit).
//!
//! A ball plus one stick of fraction f along e1 has the tensor eigenvalues (d, d(1-f), d(1-f)),
//! so a fitted tensor gives d = L1 and f1 = 1 - (L2 + L3) / (2 L1). Stick 1 starts along V1,
//! stick 2 along V2 with f2 = 0.05 (ARD decides whether it stays); S0 is the fit's. Proposal
//! widths start as bedpostx's: d/10, S0/10 and 0.2 for angles and fractions.

use super::{rng, ChainState, Table, D, DMAX, F1, F2, NPARAM, PH1, PH2, S0, TH1, TH2};
use crate::dti::{sym3_lanes, TensorFit, BACKGROUND};
use crate::volume::planes::RUN;
use crate::volume::Volume;
use rayon::prelude::*;

/// The measurements of `voxels`, component-major (ndir x nvox).
pub fn gather(dwi: &Volume, voxels: &[usize]) -> Vec<f32> {
    let n = voxels.len();
    let mut y = vec![0.0f32; dwi.nvol() * n];
    // One volume per task: a strided gather from a frame is memory-bound, so every core helps.
    y.par_chunks_mut(n.max(1)).enumerate().for_each(|(i, yi)| {
        let frame = dwi.frame(i);
        for (out, &v) in yi.iter_mut().zip(voxels) {
            *out = frame[v];
        }
    });
    y
}

/// (theta, phi) of a unit vector, flipped into z >= 0 (a stick is antipodally symmetric) and
/// kept off the pole, where the sin(theta) prior's energy is infinite.
pub fn angles(v: [f64; 3]) -> (f32, f32) {
    let v = if v[2] < 0.0 { v.map(|x| -x) } else { v };
    let th = v[2].clamp(-1.0, 1.0).acos().max(1e-3);
    (th as f32, v[1].atan2(v[0]) as f32)
}

/// The starting parameters of one voxel from its tensor's eigenvalues and vectors (mm^2/s,
/// `sym3::eigen`), fitted S0, fit flag, and measurements `y` (for S0 when the fit failed:
/// gathered only then).
pub fn start(lam: &[f64; 3], vec: &[f64; 9], s0: f64, flag: i32, y: impl FnOnce() -> Vec<f32>, table: &Table) -> [f32; NPARAM] {
    let ok = flag != BACKGROUND && lam[0] > 0.0 && lam.iter().all(|l| l.is_finite());
    let (d, f1, v1, v2) = if ok {
        let f1 = (1.0 - (lam[1].max(0.0) + lam[2].max(0.0)) / (2.0 * lam[0])).clamp(0.05, 0.9);
        let col = |c: usize| [vec[c], vec[3 + c], vec[6 + c]];
        (lam[0].clamp(1e-5, 0.9 * DMAX as f64), f1, col(0), col(1))
    } else {
        (1e-3, 0.05, [1.0, 0.0, 0.0], [0.0, 1.0, 0.0])
    };
    let s0 = if s0.is_finite() && s0 > 0.0 {
        s0
    } else {
        let y = y();
        let b0: Vec<f64> = (0..table.ndir).filter(|&i| table.gtab[i] < 50.0).map(|i| y[i] as f64).collect();
        let m = if b0.is_empty() { y.iter().fold(0.0f64, |m, &x| m.max(x as f64)) } else { b0.iter().sum::<f64>() / b0.len() as f64 };
        if m > 0.0 {
            m
        } else {
            1.0
        }
    };
    let (th1, ph1) = angles(v1);
    let (th2, ph2) = angles(v2);
    let mut p = [0.0f32; NPARAM];
    p[D] = d as f32;
    p[S0] = s0 as f32;
    p[TH1] = th1;
    p[PH1] = ph1;
    p[F1] = f1 as f32;
    p[TH2] = th2;
    p[PH2] = ph2;
    p[F2] = 0.05f32.min(0.5 * (1.0 - f1 as f32));
    p
}

/// Initial widths for parameters `p`.
pub fn widths(p: &[f32; NPARAM]) -> [f32; NPARAM] {
    let mut w = [0.2f32; NPARAM];
    w[D] = p[D] / 10.0;
    w[S0] = p[S0] / 10.0;
    w
}

/// The initial state of every chain: starting points from the fit, widths, zero counters, and
/// the voxel's Tausworthe streams seeded from (`seed`, flat voxel index). `fit` and `y` hold
/// the mask's `voxels` in order (the tensors fitted from `y`, ndir x nvox).
pub fn from_tensors(fit: &TensorFit, y: &[f32], table: &Table, voxels: &[usize], seed: u64) -> ChainState {
    let n = voxels.len();
    // A run of voxels a task, their tensors decomposed side by side (sym3_lanes: the same bits
    // as one at a time).
    let starts: Vec<[f32; NPARAM]> = (0..n.div_ceil(RUN))
        .into_par_iter()
        .flat_map_iter(|r| {
            let js = r * RUN..((r + 1) * RUN).min(n);
            let ts: Vec<[f64; 6]> = js.clone().map(|j| std::array::from_fn(|e| fit.tensor[e * n + j] as f64)).collect();
            let eig = sym3_lanes::eigen_many(&ts);
            js.zip(eig).map(|(j, (lam, vec))| start(&lam, &vec, fit.s0[j] as f64, fit.flags[j], || (0..table.ndir).map(|i| y[i * n + j]).collect(), table)).collect::<Vec<_>>()
        })
        .collect();
    let mut st = ChainState { par: vec![0.0; NPARAM * n], prop: vec![0.0; NPARAM * n], acc: vec![0; NPARAM * n], rng: vec![0; rng::VOXEL_WORDS * n], nacc: vec![0; n] };
    // Component-major, a plane a task (a voxel's 8 + 8 + 32 values are n apart).
    let widths: Vec<[f32; NPARAM]> = starts.par_iter().map(widths).collect();
    st.par.par_chunks_mut(n.max(1)).zip(st.prop.par_chunks_mut(n.max(1))).enumerate().for_each(|(k, (par, prop))| {
        for (j, (p, w)) in starts.iter().zip(&widths).enumerate() {
            par[j] = p[k];
            prop[j] = w[k];
        }
    });
    let streams: Vec<[u32; rng::VOXEL_WORDS]> = voxels.par_iter().map(|&v| rng::voxel_streams(seed, v)).collect();
    st.rng.par_chunks_mut(n.max(1)).enumerate().for_each(|(w, plane)| {
        for (word, r) in plane.iter_mut().zip(&streams) {
            *word = r[w];
        }
    });
    st
}
