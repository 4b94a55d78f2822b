//! Ball-and-sticks volumes with known fibres, standing in for paper 003's brains (the model and
//! the per-voxel simulation are `synth::sticks`'): white-matter-like mixes of one- and
//! two-fibre voxels, and volumes of the papers' grids with exact mask counts.

use crate::synth::sticks::{at_angle, simulate_voxels, SticksVoxel};
use crate::synth::{rng, unit_vector};
use crate::volume::{xyz_of, Geometry, GradientTable, Volume};
use rand::Rng;
use rayon::prelude::*;

/// Measurements of every voxel (ndir x nvox, component-major), Rician noise of sigma = S0 / snr.
pub fn simulate(truths: &[SticksVoxel], g: &GradientTable, snr: f64, seed: u64) -> Vec<f32> {
    simulate_voxels(truths, g, snr, seed).0
}

/// A single fibre of fraction `f` in a random direction.
pub fn single(r: &mut impl Rng, f: f64, s0: f64, d: f64) -> SticksVoxel {
    SticksVoxel::one(s0, d, f, unit_vector(r))
}

/// Two fibres of fractions f1, f2 crossing at `deg` degrees in a random plane.
pub fn crossing(r: &mut impl Rng, deg: f64, f1: f64, f2: f64, s0: f64, d: f64) -> SticksVoxel {
    let a = unit_vector(r);
    SticksVoxel::two(s0, d, [f1, f2], a, at_angle(a, deg, r))
}

/// Synthetic white matter: 60 % single fibres (f 0.3-0.7), 40 % crossings at 45-90 degrees
/// (f 0.2-0.45 each); S0 = 1000, d = 1.0e-3 to 1.7e-3 mm^2/s. Voxel v depends on (seed, v) only.
pub fn white_matter(n: usize, seed: u64) -> Vec<SticksVoxel> {
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

/// A volume holding `truths` in the mask voxels `voxels` of a `geom` grid (zero elsewhere).
pub fn volume(geom: Geometry, voxels: &[usize], truths: &[SticksVoxel], g: &GradientTable, snr: f64, seed: u64) -> Volume {
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
pub fn row(truths: &[SticksVoxel], g: &GradientTable, snr: f64, seed: u64) -> (Volume, Vec<u8>) {
    let n = truths.len();
    let voxels: Vec<usize> = (0..n).collect();
    (volume(Geometry::synthetic([n, 1, 1], [2.0; 3]), &voxels, truths, g, snr, seed), vec![1; n])
}

/// A volume of grid `dims` whose mask holds exactly `nmask` voxels (the `nmask` nearest the
/// centre in the ellipsoid's metric), filled with [`white_matter`] at `snr`; zero outside.
/// Returns the volume, the mask and the truths of the mask voxels in flat-index order.
pub fn phantom(dims: [usize; 3], voxel_size: [f32; 3], nmask: usize, g: &GradientTable, snr: f64, seed: u64) -> (Volume, Vec<u8>, Vec<SticksVoxel>) {
    let geom = Geometry::synthetic(dims, voxel_size);
    let nv = geom.nvox();
    let nmask = nmask.min(nv);
    let c = dims.map(|d| d as f64 / 2.0 - 0.5);
    let mut order: Vec<(f64, usize)> = (0..nv)
        .map(|v| {
            let p = xyz_of(v, dims);
            ((0..3).map(|a| ((p[a] as f64 - c[a]) / dims[a] as f64).powi(2)).sum::<f64>(), v)
        })
        .collect();
    order.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let mut mask = vec![0u8; nv];
    for &(_, v) in &order[..nmask] {
        mask[v] = 1;
    }
    let voxels = crate::volume::masks::inside(&mask);
    let truths = white_matter(voxels.len(), seed);
    (volume(geom, &voxels, &truths, g, snr, seed ^ 0x5EED), mask, truths)
}
