//! A brain-like tensor phantom: an ellipsoidal head of grey-matter-like isotropic tissue, an
//! arched commissural bundle (a corpus-callosum stand-in) crossing the midline, and two vertical
//! projection bundles that cross it. Orientation is known everywhere, so trackers and fits can
//! be checked against it; it stands in for the papers' brains, which cannot be had.

use super::{rng, sym3};
use crate::volume::Geometry;
use rand::Rng;

pub struct Phantom {
    pub geom: Geometry,
    /// Component-major tensors (mm^2/s), zero outside the head, along the voxel axes (not the FSL
    /// bvecs frame a tensor file holds: see [`voxel_axes_to_fsl`]).
    pub tensor: Vec<f32>,
    /// Inside the head.
    pub mask: Vec<u8>,
    /// Inside a bundle ("white matter").
    pub wm: Vec<u8>,
    /// The bundle direction where `wm` is set (unit, voxel axes); where two bundles cross, the
    /// normalised mean of the two (the principal direction of the tensor given there).
    pub direction: Vec<[f32; 3]>,
    /// The bundles' own directions (voxel axes): `[first, zero]` in one-bundle voxels, both
    /// where two bundles cross (at 90 degrees), zero outside white matter.
    pub bundles: Vec<[[f32; 3]; 2]>,
}

/// Tensors given along the voxel axes (as the phantoms define them) in the FSL frame a tensor file
/// holds: x negated where the affine's determinant is positive (`dti::Frame`). The flip is its own
/// inverse.
pub fn voxel_axes_to_fsl(tensor: &mut [f32], geom: &Geometry) {
    if geom.det() > 0.0 {
        let n = geom.nvox();
        for e in [1, 2] {
            for x in &mut tensor[e * n..(e + 1) * n] {
                *x = -*x;
            }
        }
    }
}

fn perp(a: [f64; 3]) -> [f64; 3] {
    let h = if a[0].abs() < 0.9 { [1.0, 0.0, 0.0] } else { [0.0, 1.0, 0.0] };
    let c = [a[1] * h[2] - a[2] * h[1], a[2] * h[0] - a[0] * h[2], a[0] * h[1] - a[1] * h[0]];
    let n = (c[0] * c[0] + c[1] * c[1] + c[2] * c[2]).sqrt();
    c.map(|x| x / n)
}

/// The bundles' thickness, as fractions of the grid: `tube` of the smaller in-plane edge (the
/// arch's half-width; the projection bundles' half-width is 0.8 of it), `slab` of the z edge (the
/// arch's half-height). Each at least 1.5 voxels.
#[derive(Clone, Copy, Debug)]
pub struct Bundles {
    pub tube: f64,
    pub slab: f64,
}

impl Default for Bundles {
    fn default() -> Self {
        Bundles { tube: 0.06, slab: 0.25 }
    }
}

/// The phantom on a `dims` grid; `seed` jitters eigenvalues by a few percent.
pub fn brain_like(dims: [usize; 3], voxel_size: [f32; 3], seed: u64) -> Phantom {
    brain_like_with(dims, voxel_size, seed, Bundles::default())
}

/// [`brain_like`] with bundles of the given thickness.
pub fn brain_like_with(dims: [usize; 3], voxel_size: [f32; 3], seed: u64, bundles_shape: Bundles) -> Phantom {
    let geom = Geometry::synthetic(dims, voxel_size);
    let nvox = geom.nvox();
    let [nx, ny, nz] = dims.map(|d| d as f64);
    let c = [nx / 2.0 - 0.5, ny / 2.0 - 0.5, nz / 2.0 - 0.5];
    let mut tensor = vec![0.0f32; 6 * nvox];
    let mut mask = vec![0u8; nvox];
    let mut wm = vec![0u8; nvox];
    let mut direction = vec![[0.0f32; 3]; nvox];
    let mut bundles = vec![[[0.0f32; 3]; 2]; nvox];
    let mut r = rng(seed);
    let (vx, vy) = (voxel_size[0] as f64, voxel_size[1] as f64);
    // arch: a half circle in the x-y plane centred at (cx, cy - ny/8), radius ~ nx/3
    let arch_r = nx.min(ny) * 0.3;
    let arch_c = [c[0], c[1] - ny * 0.12];
    let tube = (nx.min(ny) * bundles_shape.tube).max(1.5);
    let slab = (nz * bundles_shape.slab).max(1.5);
    for z in 0..dims[2] {
        for y in 0..dims[1] {
            for x in 0..dims[0] {
                let v = geom.index(x, y, z);
                let p = [x as f64, y as f64, z as f64];
                let e = ((p[0] - c[0]) / (nx * 0.48)).powi(2) + ((p[1] - c[1]) / (ny * 0.48)).powi(2) + ((p[2] - c[2]) / (nz * 0.48)).powi(2);
                if e > 1.0 {
                    continue;
                }
                mask[v] = 1;
                let jitter = 1.0 + 0.03 * r.random_range(-1.0..1.0);
                let mut dir: Option<[f64; 3]> = None;
                let mut own: [Option<[f64; 3]>; 2] = [None, None];
                // arch bundle (upper half circle, y above its centre)
                let (dx, dy) = (p[0] - arch_c[0], p[1] - arch_c[1]);
                let rho = (dx * dx + dy * dy).sqrt();
                if dy >= 0.0 && (rho - arch_r).abs() < tube && (p[2] - c[2]).abs() < slab {
                    // The arch is a circle on the voxel grid: in mm, with unequal x and y voxel
                    // sizes, an ellipse, whose direction is the grid tangent scaled by the voxel
                    // sizes (it was the grid tangent itself, so the fibres the tensors gave left
                    // the bundle drawn in wm). Equal sizes: the grid tangent, as before.
                    dir = Some(if vx == vy {
                        [-dy / rho, dx / rho, 0.0]
                    } else {
                        let (a, b) = (-dy * vx, dx * vy);
                        let n = (a * a + b * b).sqrt();
                        [a / n, b / n, 0.0]
                    });
                    own[0] = dir;
                }
                // vertical bundles at x = c +- arch_r, crossing the arch's feet
                for side in [-1.0, 1.0] {
                    let bx = c[0] + side * arch_r;
                    if (p[0] - bx).abs() < tube * 0.8 && (p[1] - arch_c[1] - arch_r * 0.3).abs() < tube * 0.8 {
                        own[own[0].is_some() as usize] = Some([0.0, 0.0, 1.0]);
                        dir = Some(match dir {
                            Some(d) => {
                                // crossing: average of the two (oblate-ish), normalised
                                let s = [d[0], d[1], d[2] + 1.0];
                                let n = (s[0] * s[0] + s[1] * s[1] + s[2] * s[2]).sqrt();
                                s.map(|q| q / n)
                            }
                            None => [0.0, 0.0, 1.0],
                        });
                    }
                }
                let t = match dir {
                    Some(d) => {
                        wm[v] = 1;
                        direction[v] = d.map(|q| q as f32);
                        for (k, o) in own.iter().enumerate() {
                            bundles[v][k] = o.unwrap_or([0.0; 3]).map(|q| q as f32);
                        }
                        sym3::from_eigen([1.7e-3 * jitter, 0.35e-3 * jitter, 0.3e-3 * jitter], d, perp(d))
                    }
                    None => {
                        let l = 0.8e-3 * jitter;
                        [l, 0.0, 0.0, l, 0.0, l]
                    }
                };
                for k in 0..6 {
                    tensor[k * nvox + v] = t[k] as f32;
                }
            }
        }
    }
    Phantom { geom, tensor, mask, wm, direction, bundles }
}

#[cfg(test)]
mod tests {
    use super::brain_like;

    /// The arch's fibres run along the arch as drawn in wm whatever the voxel sizes: a direction
    /// d (mm, voxel axes) moves (d_x / v_x, d_y / v_y) voxels, tangent to the arch's circle on
    /// the grid. With 1 x 2 mm voxels the direction was the grid tangent itself, up to ~19
    /// degrees off the bundle.
    #[test]
    fn arch_directions_follow_the_arch_in_mm() {
        let dims = [40usize, 40, 8];
        for vox in [[2.0f32, 2.0, 2.0], [1.0, 2.0, 2.0], [2.5, 1.0, 3.0]] {
            let ph = brain_like(dims, vox, 3);
            let [nx, ny] = [dims[0] as f64, dims[1] as f64];
            let arch_c = [nx / 2.0 - 0.5, ny / 2.0 - 0.5 - ny * 0.12];
            let mut checked = 0;
            let mut worst = 0.0f64;
            for v in 0..ph.geom.nvox() {
                let [b0, b1] = ph.bundles[v];
                // one-bundle arch voxels: in the x-y plane, no second bundle
                if ph.wm[v] == 0 || b1 != [0.0; 3] || b0[2] != 0.0 {
                    continue;
                }
                let (x, y) = ((v % dims[0]) as f64, ((v / dims[0]) % dims[1]) as f64);
                let (dx, dy) = (x - arch_c[0], y - arch_c[1]);
                let d = ph.direction[v].map(|q| q as f64);
                let g = [d[0] / vox[0] as f64, d[1] / vox[1] as f64];
                let cos = (g[0] * dx + g[1] * dy).abs() / ((g[0] * g[0] + g[1] * g[1]).sqrt() * (dx * dx + dy * dy).sqrt());
                worst = worst.max(cos);
                checked += 1;
            }
            assert!(checked > 50, "{vox:?}: {checked} arch voxels");
            assert!(worst < 1e-6, "{vox:?}: an arch direction is {:.2} degrees off the arch's tangent", 90.0 - worst.acos().to_degrees());
        }
    }
}
