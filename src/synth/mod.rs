//! Deterministic, seeded phantoms with known ground truth, standing in for the papers' data:
//! gradient tables, tensor fields, and DWI simulated from them with Rician noise.

pub mod dataset;
pub mod phantom;
pub mod sticks;
pub mod t1;

use crate::dti::sym3;
use crate::volume::GradientTable;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Normal};
use rand_xoshiro::Xoshiro256PlusPlus;

pub type SeededRng = Xoshiro256PlusPlus;

pub fn rng(seed: u64) -> SeededRng {
    SeededRng::seed_from_u64(seed)
}

/// A test's generator of fresh random inputs, seeded from the clock, and its seed (which a
/// failing assertion names, so the inputs can be made again).
#[cfg(test)]
pub fn fresh_rng() -> (u64, SeededRng) {
    let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64);
    (seed, rng(seed))
}

/// `ndirs` directions spread over the sphere (Fibonacci lattice on a hemisphere, as a scanner's
/// table is antipodally symmetric) at `bval`, after `nb0` b=0 volumes.
pub fn gradient_table(nb0: usize, ndirs: usize, bval: f64) -> GradientTable {
    let mut bvals = vec![0.0; nb0];
    let mut bvecs = vec![[0.0; 3]; nb0];
    let golden = std::f64::consts::PI * (3.0 - 5f64.sqrt());
    for i in 0..ndirs {
        let z = 1.0 - (i as f64 + 0.5) / ndirs as f64; // hemisphere z in (0, 1]
        let r = (1.0 - z * z).sqrt();
        let phi = golden * i as f64;
        bvals.push(bval);
        bvecs.push([r * phi.cos(), r * phi.sin(), z]);
    }
    GradientTable::new(bvals, bvecs).expect("lengths match")
}

/// Two-shell table (b = 1000 and 2000 s/mm^2) for multi-fibre models.
pub fn two_shell_table(nb0: usize, ndirs_per_shell: usize) -> GradientTable {
    let a = gradient_table(nb0, ndirs_per_shell, 1000.0);
    let b = gradient_table(0, ndirs_per_shell, 2000.0);
    GradientTable::new([a.bvals, b.bvals].concat(), [a.bvecs, b.bvecs].concat()).expect("lengths match")
}

/// A random unit vector.
pub fn unit_vector(r: &mut impl Rng) -> [f64; 3] {
    loop {
        let v: [f64; 3] = std::array::from_fn(|_| r.random_range(-1.0..1.0));
        let n = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
        if n > 0.1 && n <= 1.0 {
            return v.map(|x| x / n);
        }
    }
}

/// A random white-matter-like tensor (mm^2/s): random orientation, FA roughly 0.2-0.9.
pub fn random_tensor(r: &mut impl Rng) -> [f64; 6] {
    let e1 = unit_vector(r);
    let mut e2 = unit_vector(r);
    let d = e1[0] * e2[0] + e1[1] * e2[1] + e1[2] * e2[2];
    e2 = std::array::from_fn(|i| e2[i] - d * e1[i]);
    let n = (e2[0] * e2[0] + e2[1] * e2[1] + e2[2] * e2[2]).sqrt();
    e2 = e2.map(|x| x / n);
    let l1 = r.random_range(1.2e-3..2.0e-3);
    let l2 = r.random_range(0.25e-3..0.9e-3);
    let l3 = r.random_range(0.2e-3..1.0) * l2;
    sym3::from_eigen([l1, l2, l3.max(0.15e-3)], e1, e2)
}

/// `nvox` random white-matter-like tensors, component-major (FSL order, mm^2/s).
pub fn random_tensor_field(nvox: usize, seed: u64) -> Vec<f32> {
    let mut r = rng(seed);
    let mut tensor = vec![0.0f32; 6 * nvox];
    for v in 0..nvox {
        let t = random_tensor(&mut r);
        for e in 0..6 {
            tensor[e * nvox + v] = t[e] as f32;
        }
    }
    tensor
}

/// Noise-free tensor-model signal of one measurement.
pub fn tensor_signal(t: &[f64; 6], s0: f64, b: f64, g: &[f64; 3]) -> f64 {
    let q = t[0] * g[0] * g[0] + 2.0 * t[1] * g[0] * g[1] + 2.0 * t[2] * g[0] * g[2] + t[3] * g[1] * g[1] + 2.0 * t[4] * g[1] * g[2] + t[5] * g[2] * g[2];
    s0 * (-b * q).exp()
}

/// Adds Rician noise of sigma = s0 / snr: |s + n1 + i n2|. `snr = inf` leaves the signal as is.
pub fn rician(s: f64, sigma: f64, r: &mut impl Rng) -> f64 {
    if !(sigma > 0.0) || !sigma.is_finite() {
        return s;
    }
    let n = Normal::new(0.0, sigma).expect("positive sigma");
    let (a, b) = (s + n.sample(r), n.sample(r));
    (a * a + b * b).sqrt()
}

/// DWI (component-major: `ngrad` volumes of `nvox`) from a tensor field; voxels with a zero
/// tensor get zero signal. Noise is seeded per voxel so the result does not depend on threads.
pub fn simulate_dwi(tensor: &[f32], s0: f64, g: &GradientTable, snr: f64, seed: u64) -> Vec<f32> {
    use rayon::prelude::*;
    let nvox = tensor.len() / 6;
    let n = g.len();
    let sigma = s0 / snr;
    let per_voxel: Vec<Vec<f32>> = (0..nvox)
        .into_par_iter()
        .with_min_len(256)
        .map(|v| {
            let t: [f64; 6] = std::array::from_fn(|e| tensor[e * nvox + v] as f64);
            if !(t[0] + t[3] + t[5] > 0.0) {
                return Vec::new();
            }
            let mut r = rng(seed ^ (v as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
            (0..n).map(|i| rician(tensor_signal(&t, s0, g.bvals[i], &g.bvecs[i]), sigma, &mut r) as f32).collect()
        })
        .collect();
    let mut out = vec![0.0f32; n * nvox];
    for (v, s) in per_voxel.iter().enumerate() {
        for (i, x) in s.iter().enumerate() {
            out[i * nvox + v] = *x;
        }
    }
    out
}
