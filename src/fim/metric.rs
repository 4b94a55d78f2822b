//! From diffusion tensors to the speed matrix S = M^-1 the solver reads (004 eq. 3-5).

use crate::dti::{cpu::sharpen_one, sym3, LAMBDA_FLOOR};
use crate::volume::{planes, Geometry};
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

/// S per voxel (6 x nvox, component-major, image voxel axes) and how many tensors inside the
/// mask were repaired: eigenvalues below [`LAMBDA_FLOOR`] raised to it, as the tensor fit does.
/// `tensor` is in the FSL frame (x negated when the affine's determinant is positive), mm^2/s.
pub fn speed_from_tensor(tensor: &[f32], geom: &Geometry, mask: &[u8], metric: Metric, alpha: f64) -> (Vec<f32>, usize) {
    let n = geom.nvox();
    let alpha = match metric {
        Metric::Sharpened => alpha,
        // eq. 3 with alpha = 1 is exactly D^-1: the normalisations cancel.
        Metric::Inverse => 1.0,
    };
    let flip = if geom.det() > 0.0 { -1.0 } else { 1.0 };
    // Written straight into the six component planes, a run of voxels per task (a row of
    // (S, repaired) per voxel first cost 56 B x nvox, ~0.4 GB on a 256x256x100 brain, and a
    // serial transpose).
    let mut out = vec![0.0f32; 6 * n];
    let repaired = planes::runs(planes::split::<6>(&mut out, n))
        .into_par_iter()
        .enumerate()
        .map(|(r, run)| {
            let mut repaired = 0;
            for i in 0..run[0].len() {
                let v = r * planes::RUN + i;
                let s = if mask[v] == 0 {
                    [1.0, 0.0, 0.0, 1.0, 0.0, 1.0]
                } else {
                    let t: [f64; 6] = std::array::from_fn(|c| tensor[c * n + v] as f64);
                    repaired += (!sym3::surely_above(&t, LAMBDA_FLOOR as f64) && sym3::eigen(&t).0[2] < LAMBDA_FLOOR as f64) as usize;
                    let s = sym3::inverse(&sharpen_one(&t, alpha, LAMBDA_FLOOR as f64));
                    [s[0], flip * s[1], flip * s[2], s[3], s[4], s[5]]
                };
                for c in 0..6 {
                    run[c][i] = s[c] as f32;
                }
            }
            repaired
        })
        .sum();
    (out, repaired)
}

/// A constant speed matrix over `n` voxels (the synthetic examples give S directly).
pub fn constant(s: [f64; 6], n: usize) -> Vec<f32> {
    (0..6).flat_map(|c| std::iter::repeat_n(s[c] as f32, n)).collect()
}
