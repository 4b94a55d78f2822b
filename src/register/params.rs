//! The optimiser's parameters: 6 (rigid), 9 (+ scales) or 12 (+ shears) numbers in millimetres,
//! degrees and percent, about the fixed image's centre, so one simplex step moves points of a
//! brain-sized image by comparable distances (1 mm, 1 degree ~ 1.4 mm at 80 mm, 1 % ~ 0.8 mm).
//!
//! A parameter vector p gives the map P(x) = R S K (x - c) + c + t of fixed world points, with
//! t = p[0..3] (mm), R = Rz(p[5]) Ry(p[4]) Rx(p[3]) (degrees), S = diag(1 + p[6..9] / 100) and
//! K the upper unit-triangular shear with entries p[9..12] / 100 (xy, xz, yz). The registration
//! transform is T = T0 P, with T0 the start (centre-of-mass translation or `--init`).

use super::affine::{mul, Mat4, IDENTITY};
use anyhow::{bail, Result};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dof {
    Rigid = 6,
    Similarity = 9,
    Affine = 12,
}

impl Dof {
    pub fn count(self) -> usize {
        self as usize
    }
    pub fn from_count(n: usize) -> Result<Dof> {
        Ok(match n {
            6 => Dof::Rigid,
            9 => Dof::Similarity,
            12 => Dof::Affine,
            _ => bail!("--dof must be 6, 9 or 12, got {n}"),
        })
    }
}

impl std::str::FromStr for Dof {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> Result<Dof> {
        match s.trim().parse::<usize>() {
            Ok(n) => Dof::from_count(n),
            Err(_) => bail!("--dof must be 6, 9 or 12, got '{s}'"),
        }
    }
}

/// P(p) about `centre`; `p` may be shorter than 12 (the missing parameters are zero).
pub fn matrix(p: &[f64], centre: [f64; 3]) -> Mat4 {
    let g = |i: usize| p.get(i).copied().unwrap_or(0.0);
    let (rx, ry, rz) = (g(3).to_radians(), g(4).to_radians(), g(5).to_radians());
    let rot_x: Mat4 = [[1.0, 0.0, 0.0, 0.0], [0.0, rx.cos(), -rx.sin(), 0.0], [0.0, rx.sin(), rx.cos(), 0.0], [0.0, 0.0, 0.0, 1.0]];
    let rot_y: Mat4 = [[ry.cos(), 0.0, ry.sin(), 0.0], [0.0, 1.0, 0.0, 0.0], [-ry.sin(), 0.0, ry.cos(), 0.0], [0.0, 0.0, 0.0, 1.0]];
    let rot_z: Mat4 = [[rz.cos(), -rz.sin(), 0.0, 0.0], [rz.sin(), rz.cos(), 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]];
    let mut s = IDENTITY;
    for i in 0..3 {
        s[i][i] = 1.0 + g(6 + i) / 100.0;
    }
    let mut k = IDENTITY;
    k[0][1] = g(9) / 100.0;
    k[0][2] = g(10) / 100.0;
    k[1][2] = g(11) / 100.0;
    let mut m = mul(&rot_z, &mul(&rot_y, &mul(&rot_x, &mul(&s, &k))));
    // x -> M (x - c) + c + t
    for r in 0..3 {
        let mc: f64 = (0..3).map(|j| m[r][j] * centre[j]).sum();
        m[r][3] = centre[r] - mc + g(r);
    }
    m
}

/// Initial simplex steps at a level whose voxels are `voxel_mm` wide: two voxels of
/// translation, and rotations, scales and shears that move points at brain radius by about
/// as much (the units above make these the same numbers).
pub fn steps(dof: Dof, voxel_mm: f64) -> Vec<f64> {
    vec![2.0 * voxel_mm.max(0.5); dof.count()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::register::affine::apply;

    #[test]
    fn centre_is_fixed_by_rotation_and_scale() {
        let c = [10.0, -20.0, 30.0];
        let m = matrix(&[0.0, 0.0, 0.0, 10.0, -5.0, 7.0, 3.0, -2.0, 4.0, 1.0, 2.0, 3.0], c);
        let q = apply(&m, c);
        for k in 0..3 {
            assert!((q[k] - c[k]).abs() < 1e-12);
        }
        let t = matrix(&[1.0, 2.0, 3.0], c);
        assert_eq!(apply(&t, [0.0; 3]), [1.0, 2.0, 3.0]);
    }

    #[test]
    fn rotation_about_z_by_90_degrees() {
        let m = matrix(&[0.0, 0.0, 0.0, 0.0, 0.0, 90.0], [0.0; 3]);
        let q = apply(&m, [1.0, 0.0, 0.0]);
        assert!((q[0]).abs() < 1e-12 && (q[1] - 1.0).abs() < 1e-12);
        assert!("7".parse::<Dof>().is_err() && "12".parse::<Dof>().unwrap() == Dof::Affine);
    }
}
