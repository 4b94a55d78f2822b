//! DTI conformance: fit, scalar maps, metric fields and sharpened metric on fresh random input.
//! On the CPU itself the fit is checked against the ground truth of noiseless data instead.

use super::{kernels, Design, Frame, FITTED, NSCALARS};
use crate::check::{max_rel_err, CheckRow, F32_TOL};
use crate::runtime::Device;
use crate::synth;
use anyhow::Result;

/// Voxels per check: enough to fill a few work-groups, small enough for PoCL in CI.
const NVOX: usize = 4096;

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
        let fit = k.fit(&dwi, &mask, &design)?;
        let ok = fit.count(FITTED) == nvox;
        rows.push(CheckRow::new("dti_fit (vs ground truth)", dev, max_rel_err(&fit.tensor, &tensor), 1e-4, if ok { "" } else { "voxels not fitted" }));
        let sc = k.scalars(&tensor)?;
        rows.push(CheckRow::new("dti_scalars (finite)", dev, if sc.iter().all(|x| x.is_finite()) { 0.0 } else { f64::INFINITY }, 0.0, "reference backend"));
        return Ok(rows);
    }

    let mut refk = kernels(reference)?;
    let dwi = synth::simulate_dwi(&tensor, 1000.0, &g, 30.0, seed ^ 1);
    let a = k.fit(&dwi, &mask, &design)?;
    let b = refk.fit(&dwi, &mask, &design)?;
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
