//! The maps dtifit writes beyond FA/MD/V1/L1: the second and third eigenvectors and eigenvalues
//! and the mode of anisotropy, from the fitted tensors on the host (f64 Jacobi, as the CPU
//! reference decomposes), so FSL users' next steps find every file they expect.

use super::sym3_lanes;
use crate::volume::planes;

/// V2 (3 volumes), V3 (3), L2, L3 and MO of `tensor` (6 volumes, FSL order), each `nvox` long,
/// held as nine planes.
pub struct ExtraMaps {
    planes: Vec<f32>,
    nvox: usize,
}

impl ExtraMaps {
    fn planes(&self, first: usize, count: usize) -> &[f32] {
        &self.planes[first * self.nvox..(first + count) * self.nvox]
    }
    pub fn v2(&self) -> &[f32] {
        self.planes(0, 3)
    }
    pub fn v3(&self) -> &[f32] {
        self.planes(3, 3)
    }
    pub fn l2(&self) -> &[f32] {
        self.planes(6, 1)
    }
    pub fn l3(&self) -> &[f32] {
        self.planes(7, 1)
    }
    pub fn mo(&self) -> &[f32] {
        self.planes(8, 1)
    }
}

/// Mode of anisotropy (Ennis & Kindlmann 2006, as dtifit): 3 sqrt(6) det(A / |A|) with A the
/// deviatoric part; -1 planar, +1 linear; 0 where the tensor is isotropic or zero.
pub fn mode(t: &[f64; 6]) -> f64 {
    let m = (t[0] + t[3] + t[5]) / 3.0;
    let a = [t[0] - m, t[1], t[2], t[3] - m, t[4], t[5] - m];
    let norm = (a[0] * a[0] + a[3] * a[3] + a[5] * a[5] + 2.0 * (a[1] * a[1] + a[2] * a[2] + a[4] * a[4])).sqrt();
    if !(norm > 1e-30) {
        return 0.0;
    }
    let a = a.map(|x| x / norm);
    let det = a[0] * (a[3] * a[5] - a[4] * a[4]) - a[1] * (a[1] * a[5] - a[4] * a[2]) + a[2] * (a[1] * a[4] - a[3] * a[2]);
    (3.0 * 6f64.sqrt() * det).clamp(-1.0, 1.0)
}

pub fn extra_maps(tensor: &[f32], nvox: usize) -> ExtraMaps {
    let planes = planes::fill_runs::<9>(nvox, |first, rows| {
        // The run's fitted tensors decomposed side by side (sym3_lanes: the same bits as one at
        // a time); voxels of all-zero tensors stay 0.
        let fitted: Vec<(usize, [f64; 6])> = (0..rows.len())
            .filter_map(|i| {
                let t: [f64; 6] = std::array::from_fn(|k| tensor[k * nvox + first + i] as f64);
                (!t.iter().all(|&x| x == 0.0)).then_some((i, t))
            })
            .collect();
        let ts: Vec<[f64; 6]> = fitted.iter().map(|f| f.1).collect();
        let eig = sym3_lanes::eigen_many(&ts);
        for (&(i, t), (lam, vec)) in fitted.iter().zip(&eig) {
            rows[i] = [vec[1], vec[4], vec[7], vec[2], vec[5], vec[8], lam[1], lam[2], mode(&t)].map(|x| x as f32);
        }
    });
    ExtraMaps { planes, nvox }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mode_is_one_for_a_line_and_minus_one_for_a_plane() {
        // Linear: eigenvalues (3,1,1); planar: (3,3,1); isotropic: 0.
        assert!((mode(&[3.0, 0.0, 0.0, 1.0, 0.0, 1.0]) - 1.0).abs() < 1e-12);
        assert!((mode(&[3.0, 0.0, 0.0, 3.0, 0.0, 1.0]) + 1.0).abs() < 1e-12);
        assert_eq!(mode(&[2.0, 0.0, 0.0, 2.0, 0.0, 2.0]), 0.0);
    }

    #[test]
    fn second_and_third_eigenpairs_of_a_diagonal_tensor() {
        // One voxel, eigenvalues 3 (x), 2 (z), 1 (y): V2 = ±z, V3 = ±y.
        let t = [3.0f32, 0.0, 0.0, 1.0, 0.0, 2.0];
        let m = extra_maps(&t, 1);
        assert_eq!((m.l2()[0], m.l3()[0]), (2.0, 1.0));
        assert_eq!(m.v2().iter().map(|x| x.abs()).collect::<Vec<_>>(), vec![0.0, 0.0, 1.0]);
        assert_eq!(m.v3().iter().map(|x| x.abs()).collect::<Vec<_>>(), vec![0.0, 1.0, 0.0]);
    }
}
