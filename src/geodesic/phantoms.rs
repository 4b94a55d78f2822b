//! Tensor volumes for the geodesic tests and benchmarks, each standing in for data of 001 that
//! cannot be had: a uniform field (straight geodesics), a smoothly varying analytic field (for
//! comparison with an exact integration), the long synthetic volume of 001 Sec. 5 and the seed
//! region of the brain-like phantom (Sec. 5.3).

use crate::dti::sym3;
use crate::synth::phantom::Phantom;
use crate::volume::Geometry;

/// Component-major tensors (FSL order) from a function of the voxel index.
pub fn tensor_field(dims: [usize; 3], f: impl Fn([f64; 3]) -> [f64; 6]) -> Vec<f32> {
    let nvox: usize = dims.iter().product();
    let mut out = vec![0.0f32; 6 * nvox];
    for z in 0..dims[2] {
        for y in 0..dims[1] {
            for x in 0..dims[0] {
                let v = x + dims[0] * (y + dims[1] * z);
                let t = f([x as f64, y as f64, z as f64]);
                for e in 0..6 {
                    out[e * nvox + v] = t[e] as f32;
                }
            }
        }
    }
    out
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

/// A tensor with principal direction at angle `theta` in the x-y plane.
pub fn planar(theta: f64, lam: [f64; 3]) -> [f64; 6] {
    let e1 = [theta.cos(), theta.sin(), 0.0];
    let e2 = [-theta.sin(), theta.cos(), 0.0];
    sym3::from_eigen(lam, e1, e2)
}

pub const WM: [f64; 3] = [1.7e-3, 0.4e-3, 0.3e-3];

/// The smoothly varying analytic tensor field of the accuracy test (mm^2/s, voxel axes, at a
/// voxel index of a 1 mm grid): the principal direction turns in the x-y plane with y and the
/// diffusivities change along x and z, over tens of voxels.
pub fn analytic(p: [f64; 3]) -> [f64; 6] {
    let theta = 0.5 * (std::f64::consts::TAU * p[1] / 128.0).sin();
    let s = 1.0 + 0.25 * (std::f64::consts::TAU * p[0] / 96.0).cos() + 0.1 * (std::f64::consts::TAU * p[2] / 80.0).sin();
    planar(theta, [WM[0] * s, WM[1], WM[2] * (2.0 - s)])
}

/// The volume of 001 Sec. 5 (Table 1, Fig. 6): principal direction along x (the long axis)
/// everywhere, the diffusivities changing only along x (period 64 voxels). A geodesic heading
/// along x therefore runs parallel to the long edge for the whole volume, as the paper's benchmark
/// fibres do, while every step still interpolates all 24 components and forms all 18 symbols.
/// The fields' y and z derivatives are exactly zero, which makes float4 groups 3-5 (dG/dy,
/// dG/dz) zero and skippable without changing a fibre (Table 1's reduced reads).
pub fn long_volume(dims: [usize; 3]) -> Vec<f32> {
    tensor_field(dims, |p| {
        let ph = std::f64::consts::TAU * p[0] / 64.0;
        planar(0.0, [WM[0] * (1.0 + 0.3 * ph.sin()), WM[1] * (1.0 + 0.2 * ph.cos()), WM[2]])
    })
}

/// The 22 x 4-voxel seed region of 001 Table 3 on the brain-like phantom: one axial slice at mid
/// height, where the arched commissural bundle (the corpus callosum stand-in) crosses the midline
/// running along x. Scaled with the grid (22 x 4 at 128 voxels across).
pub fn callosal_region(ph: &Phantom) -> Vec<u8> {
    let g: &Geometry = &ph.geom;
    let [nx, ny, nz] = g.dims;
    let (fx, fy) = (nx as f64, ny as f64);
    let width = ((22.0 * fx / 128.0).round() as usize).max(1);
    let height = ((4.0 * fx / 128.0).round() as usize).max(1);
    // Top of the arch: the phantom's arch centre and radius (synth::phantom::brain_like).
    let top = fy / 2.0 - 0.5 - fy * 0.12 + fx.min(fy) * 0.3;
    let x0 = (fx / 2.0 - width as f64 / 2.0).round() as usize;
    let y0 = (top - height as f64 / 2.0 + 0.5).round() as usize;
    let z = nz / 2;
    let mut roi = vec![0u8; g.nvox()];
    for y in y0..(y0 + height).min(ny) {
        for x in x0..(x0 + width).min(nx) {
            let v = g.index(x, y, z);
            roi[v] = ph.wm[v];
        }
    }
    roi
}
