//! DTI conformance: fit, scalar maps, metric fields and sharpened metric on fresh random input.
//! On the CPU itself the fit is checked against the ground truth of noiseless data instead.

use crate::runtime::columns::Columns;
use super::{kernels, Design, DtiKernels, FitShare, Frame, TensorFit, FITTED, NSCALARS};
use crate::check::{max_rel_err, CheckRow, F32_TOL};
use crate::runtime::Device;
use crate::synth;
use anyhow::Result;

/// Voxels per check: enough to fill a few work-groups, small enough for PoCL in CI.
const NVOX: usize = 4096;

/// The CPU's scalars are float64 eigen-decompositions stored as float32: against float64
/// invariants that need no eigen-solver they agree to a few float32 ulps (relative 6e-8 each; the
/// eigenvalue sums and products below add a few of them). 1e-5 leaves room for the Jacobi
/// solver's own 1e-12 and is still 100x below what a wrong formula gives.
const SCALAR_TOL: f64 = 1e-5;

/// Largest error of the CPU scalars (FA, MD, V1, L1-L3) against float64 identities of the tensor
/// T: MD = tr/3; FA^2 = 3/2 (|T|^2 - tr^2/3) / |T|^2; L1 + L2 + L3 = tr, L1 L2 L3 = det and
/// L1 L2 + L2 L3 + L3 L1 = the second invariant; |T V1 - L1 V1| = 0, |V1| = 1. Errors are relative
/// to the tensor's size (|T|, |T|^2, |T|^3), so they compare with float32 precision.
fn scalar_identity_error(tensor: &[f32], sc: &[f32]) -> f64 {
    let n = tensor.len() / 6;
    let mut err = 0.0f64;
    for v in 0..n {
        let t: [f64; 6] = std::array::from_fn(|c| tensor[c * n + v] as f64);
        let g = |c: usize| sc[c * n + v] as f64;
        let tr = t[0] + t[3] + t[5];
        let norm2 = t[0] * t[0] + t[3] * t[3] + t[5] * t[5] + 2.0 * (t[1] * t[1] + t[2] * t[2] + t[4] * t[4]);
        let norm = norm2.sqrt();
        let det = t[0] * (t[3] * t[5] - t[4] * t[4]) - t[1] * (t[1] * t[5] - t[4] * t[2]) + t[2] * (t[1] * t[4] - t[3] * t[2]);
        let i2 = t[0] * t[3] + t[3] * t[5] + t[0] * t[5] - t[1] * t[1] - t[2] * t[2] - t[4] * t[4];
        let fa = (1.5 * (norm2 - tr * tr / 3.0) / norm2).max(0.0).sqrt();
        let (l1, l2, l3) = (g(5), g(6), g(7));
        let v1 = [g(2), g(3), g(4)];
        let tv = [t[0] * v1[0] + t[1] * v1[1] + t[2] * v1[2], t[1] * v1[0] + t[3] * v1[1] + t[4] * v1[2], t[2] * v1[0] + t[4] * v1[1] + t[5] * v1[2]];
        let resid = (0..3).map(|a| (tv[a] - l1 * v1[a]).powi(2)).sum::<f64>().sqrt();
        let errs = [
            (g(0) - fa).abs(),
            (g(1) - tr / 3.0).abs() / norm,
            (l1 + l2 + l3 - tr).abs() / norm,
            (l1 * l2 + l2 * l3 + l3 * l1 - i2).abs() / norm2,
            (l1 * l2 * l3 - det).abs() / (norm2 * norm),
            resid / norm,
            (v1.iter().map(|x| x * x).sum::<f64>().sqrt() - 1.0).abs(),
            if l1 >= l2 && l2 >= l3 { 0.0 } else { f64::INFINITY },
        ];
        for e in errs {
            err = if e.is_finite() { err.max(e) } else { f64::INFINITY };
        }
    }
    err
}

/// The fit of a share of voxels written where it lies, with its scalar maps (a GPU makes them
/// from the tensors it keeps): every bit as the same device's `fit` and `scalars` of that share
/// alone give, and nothing outside the share touched (its neighbours keep their poison).
fn share_row(k: &mut dyn DtiKernels, dev: &Device, dwi: &[f32], design: &Design, seed: u64) -> Result<CheckRow> {
    use rand::Rng;
    let nvox = NVOX;
    let mut r = synth::rng(seed ^ 0x5a);
    let mask: Vec<u8> = (0..nvox).map(|_| (r.random::<f32>() < 0.9) as u8).collect();
    let a = r.random_range(1..nvox / 3);
    let b = r.random_range(2 * nvox / 3..nvox - 1);
    let dwi = Columns::whole(dwi, design.ngrad);
    let mut fit = TensorFit { tensor: vec![f32::NAN; 6 * nvox], s0: vec![f32::NAN; nvox], flags: vec![-7; nvox] };
    let mut maps = vec![f32::NAN; NSCALARS * nvox];
    k.fit_into(dwi.part(a..b), &mask[a..b], design, &mut FitShare::whole(&mut fit, Some(&mut maps)).part(a..b), &crate::io::progress::Progress::hidden())?;
    let alone = k.fit(dwi.part(a..b), &mask[a..b], design)?;
    let alone_maps = k.scalars(&alone.tensor)?;
    let n = b - a;
    // Bits compared (NaN poison equal to itself), component by component, inside and outside.
    let same = |whole: &[f32], ncomp: usize, part: &[f32]| {
        (0..ncomp).all(|c| {
            let run = &whole[c * nvox..(c + 1) * nvox];
            run[..a].iter().chain(&run[b..]).all(|x| x.is_nan()) && run[a..b].iter().zip(&part[c * n..(c + 1) * n]).all(|(x, y)| x.to_bits() == y.to_bits())
        })
    };
    let flags = fit.flags[..a].iter().chain(&fit.flags[b..]).all(|&f| f == -7) && fit.flags[a..b] == alone.flags[..];
    let checks = [("tensor", same(&fit.tensor, 6, &alone.tensor)), ("S0", same(&fit.s0, 1, &alone.s0)), ("flags", flags), ("scalar maps", same(&maps, NSCALARS, &alone_maps))];
    let wrong: Vec<&str> = checks.iter().filter(|c| !c.1).map(|c| c.0).collect();
    let note = if wrong.is_empty() { format!("voxels {a}..{b} of {nvox}: the same bits, neighbours untouched") } else { format!("differs: {}", wrong.join(", ")) };
    Ok(CheckRow::new("dti fit shares in place (+ scalar maps)", dev, if wrong.is_empty() { 0.0 } else { f64::INFINITY }, 0.0, note))
}

pub fn run(dev: &Device, reference: &Device, seed: u64) -> Result<Vec<CheckRow>> {
    let dims = [16, 16, NVOX / 256];
    let nvox = NVOX;
    let tensor = synth::random_tensor_field(nvox, seed);
    let g = synth::gradient_table(3, 30, 1000.0);
    let design = Design::new(&g)?;
    let mask = vec![1u8; nvox];
    let mut rows = Vec::new();
    let mut k = kernels(dev)?;

    if dev.is_cpu() {
        let dwi = synth::simulate_dwi(&tensor, 1000.0, &g, f64::INFINITY, seed);
        let fit = k.fit(Columns::whole(&dwi, design.ngrad), &mask, &design)?;
        let ok = fit.count(FITTED) == nvox;
        rows.push(CheckRow::new("dti_fit (vs ground truth)", dev, max_rel_err(&fit.tensor, &tensor), 1e-4, if ok { "" } else { "voxels not fitted" }));
        let sc = k.scalars(&tensor)?;
        rows.push(CheckRow::new("dti_scalars (vs f64 invariants)", dev, scalar_identity_error(&tensor, &sc), SCALAR_TOL, "FA, MD from trace and norm; L from trace, det; V1 as T v = L1 v"));
        rows.push(share_row(k.as_mut(), dev, &dwi, &design, seed)?);
        return Ok(rows);
    }

    let mut refk = kernels(reference)?;
    let dwi = synth::simulate_dwi(&tensor, 1000.0, &g, 30.0, seed ^ 1);
    rows.push(share_row(k.as_mut(), dev, &dwi, &design, seed)?);
    let a = k.fit(Columns::whole(&dwi, design.ngrad), &mask, &design)?;
    let b = refk.fit(Columns::whole(&dwi, design.ngrad), &mask, &design)?;
    let flags_same = a.flags == b.flags;
    rows.push(CheckRow::new(
        "dti_fit",
        dev,
        if flags_same { max_rel_err(&a.tensor, &b.tensor).max(max_rel_err(&a.s0, &b.s0)) } else { f64::INFINITY },
        F32_TOL,
        if flags_same { String::new() } else { "voxel flags differ".into() },
    ));

    // scalars: FA, MD and eigenvalues elementwise; V1 up to sign
    let a = k.scalars(&tensor)?;
    let b = refk.scalars(&tensor)?;
    let mut err = max_rel_err(&a[..2 * nvox], &b[..2 * nvox]).max(max_rel_err(&a[5 * nvox..], &b[5 * nvox..]));
    for v in 0..nvox {
        let dot: f32 = (0..3).map(|c| a[(2 + c) * nvox + v] * b[(2 + c) * nvox + v]).sum();
        let e = 1.0 - dot.abs() as f64;
        err = if e.is_finite() { err.max(e) } else { f64::INFINITY };
    }
    debug_assert_eq!(a.len(), NSCALARS * nvox);
    rows.push(CheckRow::new("dti_scalars", dev, err, F32_TOL, "V1 compared as 1 - |cos|"));

    let frame = Frame { flip_x: true, inv_voxel: [1.0 / 2.0, 1.0 / 2.0, 1.0 / 2.5] };
    let a = k.metric(&tensor, dims, frame)?;
    let b = refk.metric(&tensor, dims, frame)?;
    // The derivative fields are differences of inverses: judge each 6-component block on its own scale.
    let err = (0..4).map(|blk| max_rel_err(&a[blk * 6 * nvox..(blk + 1) * 6 * nvox], &b[blk * 6 * nvox..(blk + 1) * 6 * nvox])).fold(0.0, f64::max);
    rows.push(CheckRow::new("metric_inverse+metric_derivs", dev, err, F32_TOL, ""));

    let a = k.sharpen(&tensor, 3.0)?;
    let b = refk.sharpen(&tensor, 3.0)?;
    rows.push(CheckRow::new("metric_sharpen", dev, max_rel_err(&a, &b), F32_TOL, "alpha = 3"));
    Ok(rows)
}

#[cfg(test)]
mod tests {
    #[test]
    fn scalar_identities_catch_a_wrong_scalar() {
        let n = 64;
        let tensor = crate::synth::random_tensor_field(n, 3);
        let mut k = super::kernels(&crate::runtime::Device::Cpu(std::sync::Arc::new(crate::runtime::cpu::Cpu::new(Some(1)).unwrap()))).unwrap();
        let sc = k.scalars(&tensor).unwrap();
        assert!(super::scalar_identity_error(&tensor, &sc) < super::SCALAR_TOL);
        // MD off by 0.1 %, the second eigenvalue off by 0.1 %, V1 turned by ~0.003 rad: each fails
        for (c, f) in [(1usize, 1.001f32), (6, 1.001), (3, 1.003)] {
            let mut bad = sc.clone();
            bad[c * n + 5] *= f;
            if c == 3 {
                bad[2 * n + 5] += 0.003;
            }
            assert!(super::scalar_identity_error(&tensor, &bad) > super::SCALAR_TOL, "component {c}");
        }
        let mut nan = sc.clone();
        nan[0] = f32::NAN;
        assert!(super::scalar_identity_error(&tensor, &nan).is_infinite());
    }
}
