//! From diffusion tensors to the speed matrix S = M^-1 the solver reads (004 eq. 3-5).

use crate::dti::{cpu::sharpen_eigen, sym3, LAMBDA_FLOOR};
use anyhow::{bail, Result};
use crate::volume::{planes, xyz_of, Geometry};
use rayon::prelude::*;

/// The path-cost metric M of 004 eq. 2.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Metric {
    /// 004 eq. 3: M = |D|^(-1/3) (D / |D|^(1/3))^(-alpha).
    #[default]
    Sharpened,
    /// M = D^-1 (the common choice 004 argues against).
    Inverse,
}

/// The range S's eigenvalues must keep: the local solver multiplies up to three entries of S
/// (its 3x3 determinants) in f32, so each stays within the cube roots of f32's normal range.
const S_RANGE: (f64, f64) = (2.3e-13, 6.9e12);

/// S per voxel (6 x nvox, component-major, image voxel axes) and how many tensors inside the
/// mask were repaired: eigenvalues below [`LAMBDA_FLOOR`] raised to it, as the tensor fit does.
/// `tensor` is in the FSL frame (x negated when the affine's determinant is positive), mm^2/s.
/// An error when some mask voxel's S leaves [`S_RANGE`] (a large alpha: S's eigenvalues are
/// |D|^(1/3) (lambda / |D|^(1/3))^alpha), naming the largest alpha the tensors allow.
pub fn speed_from_tensor(tensor: &[f32], geom: &Geometry, mask: &[u8], metric: Metric, alpha: f64) -> Result<(Vec<f32>, usize)> {
    let n = geom.nvox();
    let alpha = match metric {
        Metric::Sharpened => alpha,
        // eq. 3 with alpha = 1 is exactly D^-1: the normalisations cancel.
        Metric::Inverse => 1.0,
    };
    let flip = if geom.det() > 0.0 { -1.0 } else { 1.0 };
    let tensor_at = |v: usize| -> [f64; 6] { std::array::from_fn(|c| tensor[c * n + v] as f64) };
    // Written straight into the six component planes, a run of voxels per task (a row of
    // (S, repaired) per voxel first cost 56 B x nvox, ~0.4 GB on a 256x256x100 brain, and a
    // serial transpose).
    let mut out = vec![0.0f32; 6 * n];
    let (repaired, outside) = planes::runs(planes::split::<6>(&mut out, n))
        .into_par_iter()
        .enumerate()
        .map(|(r, run)| {
            let (mut repaired, mut outside) = (0, None);
            for i in 0..run[0].len() {
                let v = r * planes::RUN + i;
                let s = if mask[v] == 0 {
                    [1.0, 0.0, 0.0, 1.0, 0.0, 1.0]
                } else {
                    let t = tensor_at(v);
                    let eig = sym3::eigen(&t);
                    repaired += (!sym3::surely_above(&t, LAMBDA_FLOOR as f64) && eig.0[2] < LAMBDA_FLOOR as f64) as usize;
                    if outside.is_none() && alpha_limit(&eig.0, alpha).is_some() {
                        outside = Some(v);
                    }
                    let s = sym3::inverse(&sharpen_eigen(eig, alpha, LAMBDA_FLOOR as f64));
                    [s[0], flip * s[1], flip * s[2], s[3], s[4], s[5]]
                };
                for c in 0..6 {
                    run[c][i] = s[c] as f32;
                }
            }
            (repaired, outside)
        })
        .reduce(|| (0, None), |a, b| (a.0 + b.0, a.1.or(b.1)));
    if let Some(v) = outside {
        // Only on failure: a second pass for the bound over every mask voxel.
        let most = (0..n).into_par_iter().filter(|&v| mask[v] != 0).map(|v| alpha_limit(&sym3::eigen(&tensor_at(v)).0, f64::INFINITY).unwrap_or(f64::INFINITY)).reduce(|| f64::INFINITY, f64::min);
        let [x, y, z] = xyz_of(v, geom.dims);
        // 1e30 as given, not its 31 digits.
        let shown = if alpha >= 1e6 { format!("{alpha:e}") } else { alpha.to_string() };
        let what = format!("--alpha {shown}: the speed matrix S = M^-1 of eq. 3 leaves f32's range at voxel ({x},{y},{z})");
        if most > 0.0 {
            // Rounded down, so the value shown is itself allowed.
            bail!("{what}; the largest --alpha these tensors allow is {}", (most * 100.0).floor() / 100.0);
        }
        bail!("{what} for any --alpha (are the tensors in mm^2/s?)");
    }
    Ok((out, repaired))
}

/// With `alpha` outside the voxel's allowed range, the largest alpha that keeps S's eigenvalues
/// |D|^(1/3) (lambda / |D|^(1/3))^alpha inside [`S_RANGE`] (0 or less when none does).
fn alpha_limit(lam: &[f64; 3], alpha: f64) -> Option<f64> {
    let lam = lam.map(|l| l.max(LAMBDA_FLOOR as f64));
    let cr = (lam[0] * lam[1] * lam[2]).cbrt();
    let (lo, hi) = (S_RANGE.0.ln() - cr.ln(), S_RANGE.1.ln() - cr.ln());
    let most = lam
        .iter()
        .map(|l| (l / cr).ln())
        .map(|r| if r > 0.0 { hi / r } else if r < 0.0 { lo / r } else if lo <= 0.0 && hi >= 0.0 { f64::INFINITY } else { 0.0 })
        .fold(f64::INFINITY, f64::min);
    (alpha > most).then_some(most)
}

/// A constant speed matrix over `n` voxels (the synthetic examples give S directly).
pub fn constant(s: [f64; 6], n: usize) -> Vec<f32> {
    (0..6).flat_map(|c| std::iter::repeat_n(s[c] as f32, n)).collect()
}
