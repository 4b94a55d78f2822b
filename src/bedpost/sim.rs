//! Ball-and-sticks data with known fibres, standing in for paper 003's brains: single-fibre and
//! crossing voxels, Rician noise, and volumes of the papers' shapes with exact mask counts.

use crate::synth::{rician, rng, unit_vector};
use crate::volume::{Geometry, GradientTable, Volume};
use rand::Rng;
use rayon::prelude::*;

/// One voxel's true configuration (d in mm^2/s, unit stick directions).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Truth {
    pub s0: f64,
    pub d: f64,
    pub f: [f64; 2],
    pub dirs: [[f64; 3]; 2],
}

/// Noise-free signal of the ball-and-two-sticks model.
pub fn signal(t: &Truth, b: f64, g: &[f64; 3]) -> f64 {
    let mut s = (1.0 - t.f[0] - t.f[1]) * (-b * t.d).exp();
    for j in 0..2 {
        let x = g[0] * t.dirs[j][0] + g[1] * t.dirs[j][1] + g[2] * t.dirs[j][2];
        s += t.f[j] * (-b * t.d * x * x).exp();
    }
    t.s0 * s
}

/// Measurements of every voxel (ndir x nvox, component-major) with Rician noise of
/// sigma = s0 / snr, seeded per voxel so the result does not depend on threads.
pub fn simulate(truths: &[Truth], g: &GradientTable, snr: f64, seed: u64) -> Vec<f32> {
    let n = truths.len();
    let cols: Vec<Vec<f32>> = truths
        .par_iter()
        .enumerate()
        .map(|(v, t)| {
            let mut r = rng(seed ^ (v as u64).wrapping_mul(0xD1B5_4A32_D192_ED03));
            (0..g.len()).map(|i| rician(signal(t, g.bvals[i], &g.bvecs[i]), t.s0 / snr, &mut r) as f32).collect()
        })
        .collect();
    let mut y = vec![0.0f32; g.len() * n];
    for (v, c) in cols.iter().enumerate() {
        for (i, &x) in c.iter().enumerate() {
            y[i * n + v] = x;
        }
    }
    y
}

/// A unit vector at `deg` degrees from `a`, in a random plane through it.
pub fn at_angle(a: [f64; 3], deg: f64, r: &mut impl Rng) -> [f64; 3] {
    let mut p = unit_vector(r);
    let dot = p[0] * a[0] + p[1] * a[1] + p[2] * a[2];
    p = std::array::from_fn(|i| p[i] - dot * a[i]);
    let n = (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]).sqrt();
    let (c, s) = (deg.to_radians().cos(), deg.to_radians().sin());
    std::array::from_fn(|i| c * a[i] + s * p[i] / n)
}

/// A single fibre (f2 = 0) of fraction `f` in a random direction.
pub fn single(r: &mut impl Rng, f: f64, s0: f64, d: f64) -> Truth {
    let a = unit_vector(r);
    Truth { s0, d, f: [f, 0.0], dirs: [a, at_angle(a, 90.0, r)] }
}

/// Two fibres of fractions f1 >= f2 crossing at `deg` degrees in a random plane.
pub fn crossing(r: &mut impl Rng, deg: f64, f1: f64, f2: f64, s0: f64, d: f64) -> Truth {
    let a = unit_vector(r);
    Truth { s0, d, f: [f1, f2], dirs: [a, at_angle(a, deg, r)] }
}

/// Angle in degrees between two axes (sign-blind).
pub fn axis_angle(a: [f64; 3], b: [f64; 3]) -> f64 {
    let na = (a[0] * a[0] + a[1] * a[1] + a[2] * a[2]).sqrt();
    let nb = (b[0] * b[0] + b[1] * b[1] + b[2] * b[2]).sqrt();
    let c = ((a[0] * b[0] + a[1] * b[1] + a[2] * b[2]) / (na * nb)).abs().min(1.0);
    c.acos().to_degrees()
}

/// Synthetic white matter: 60 % single fibres (f 0.3-0.7), 40 % crossings at 45-90 degrees
/// (f 0.2-0.45 each); S0 = 1000, d = 1.0e-3 to 1.7e-3 mm^2/s.
pub fn white_matter(n: usize, seed: u64) -> Vec<Truth> {
    (0..n)
        .into_par_iter()
        .map(|v| {
            let mut r = rng(seed ^ (v as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
            let d = r.random_range(1.0e-3..1.7e-3);
            if r.random_bool(0.6) {
                let f = r.random_range(0.3..0.7);
                single(&mut r, f, 1000.0, d)
            } else {
                let f1 = r.random_range(0.25..0.45);
                let f2 = r.random_range(0.2..f1);
                let deg = r.random_range(45.0..90.0);
                crossing(&mut r, deg, f1, f2, 1000.0, d)
            }
        })
        .collect()
}

/// A volume holding `truths` in the mask voxels `voxels` of a `geom` grid (zero elsewhere),
/// measured with [`simulate`].
pub fn volume(geom: Geometry, voxels: &[usize], truths: &[Truth], g: &GradientTable, snr: f64, seed: u64) -> Volume {
    let nv = geom.nvox();
    let n = voxels.len();
    let y = simulate(truths, g, snr, seed);
    let mut data = vec![0.0f32; g.len() * nv];
    for i in 0..g.len() {
        for (j, &v) in voxels.iter().enumerate() {
            data[i * nv + v] = y[i * n + j];
        }
    }
    Volume::from_flat(geom, g.len(), data)
}

/// A row of voxels (n x 1 x 1, 2 mm) holding `truths`, every voxel in the mask.
pub fn row(truths: &[Truth], g: &GradientTable, snr: f64, seed: u64) -> (Volume, Vec<u8>) {
    let n = truths.len();
    let voxels: Vec<usize> = (0..n).collect();
    (volume(Geometry::synthetic([n, 1, 1], [2.0; 3]), &voxels, truths, g, snr, seed), vec![1; n])
}

/// A volume of grid `dims` whose mask holds exactly `nmask` voxels (the `nmask` nearest the
/// centre in the ellipsoid's metric), filled with [`white_matter`] at `snr`; zero outside.
pub fn phantom(dims: [usize; 3], voxel_size: [f32; 3], nmask: usize, g: &GradientTable, snr: f64, seed: u64) -> (Volume, Vec<u8>, Vec<Truth>) {
    let geom = Geometry::synthetic(dims, voxel_size);
    let nv = geom.nvox();
    let nmask = nmask.min(nv);
    let c = dims.map(|d| d as f64 / 2.0 - 0.5);
    let mut order: Vec<(f64, usize)> = (0..nv)
        .map(|v| {
            let p = [v % dims[0], (v / dims[0]) % dims[1], v / (dims[0] * dims[1])];
            ((0..3).map(|a| ((p[a] as f64 - c[a]) / dims[a] as f64).powi(2)).sum::<f64>(), v)
        })
        .collect();
    order.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let mut mask = vec![0u8; nv];
    for &(_, v) in &order[..nmask] {
        mask[v] = 1;
    }
    let voxels: Vec<usize> = (0..nv).filter(|&v| mask[v] != 0).collect();
    let truths = white_matter(voxels.len(), seed);
    (volume(geom, &voxels, &truths, g, snr, seed ^ 0x5EED), mask, truths)
}
