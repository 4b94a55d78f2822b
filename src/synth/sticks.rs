//! Ball-and-sticks DWI (the multiple partial-volume model of paper 003 eq. 1, as FSL bedpostx
//! fits it with two sticks):
//!
//! `S = S0 [ (1 - f1 - f2) exp(-b d) + sum_j f_j exp(-b d (g . v_j)^2) ]`
//!
//! with b in s/mm^2, d in mm^2/s, g the unit gradient direction and v_j the unit stick
//! directions, all in the gradient table's frame (for tables read from FSL files: the bvecs'
//! frame). One-fibre voxels have `f[1] = 0`. The truth comes back in bedpostx's layout so a fit
//! can be compared with it volume by volume.

use super::{rician, rng};
use crate::volume::GradientTable;
use rand::Rng;

/// The sticks of the model (FSL bedpostx's default `--nfibres 2`).
pub const NSTICKS: usize = 2;

/// One voxel's ball-and-sticks parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SticksVoxel {
    /// Signal without diffusion weighting.
    pub s0: f64,
    /// Diffusivity (mm^2/s), shared by the ball and the sticks.
    pub d: f64,
    /// Volume fractions of the sticks, f[0] + f[1] <= 1 (f[1] = 0 for one fibre).
    pub f: [f64; NSTICKS],
    /// Unit stick directions (ignored where the fraction is zero).
    pub v: [[f64; 3]; NSTICKS],
}

fn normalise(v: [f64; 3]) -> [f64; 3] {
    let n = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
    if n > 0.0 { v.map(|x| x / n) } else { v }
}

impl SticksVoxel {
    /// Isotropic tissue: the ball alone.
    pub fn ball(s0: f64, d: f64) -> SticksVoxel {
        SticksVoxel { s0, d, f: [0.0; 2], v: [[0.0, 0.0, 1.0]; 2] }
    }
    /// One fibre of fraction `f` along `v`.
    pub fn one(s0: f64, d: f64, f: f64, v: [f64; 3]) -> SticksVoxel {
        SticksVoxel { s0, d, f: [f, 0.0], v: [normalise(v), [0.0, 0.0, 1.0]] }
    }
    /// Two fibres crossing.
    pub fn two(s0: f64, d: f64, f: [f64; 2], v1: [f64; 3], v2: [f64; 3]) -> SticksVoxel {
        SticksVoxel { s0, d, f, v: [normalise(v1), normalise(v2)] }
    }
    /// Sticks with a non-zero fraction.
    pub fn nfibres(&self) -> usize {
        self.f.iter().filter(|&&f| f > 0.0).count()
    }
    /// Angle between the two sticks in degrees (0 for fewer than two fibres).
    pub fn crossing_deg(&self) -> f64 {
        if self.nfibres() < 2 {
            return 0.0;
        }
        angle_deg(self.v[0], self.v[1])
    }
}

/// Angle between two axes (sign-free, 0-90 degrees).
pub fn angle_deg(a: [f64; 3], b: [f64; 3]) -> f64 {
    let (a, b) = (normalise(a), normalise(b));
    let c = (a[0] * b[0] + a[1] * b[1] + a[2] * b[2]).abs().min(1.0);
    c.acos().to_degrees()
}

/// The noise-free signal of one measurement (b in s/mm^2, `g` a unit vector or zero for b = 0).
pub fn signal(p: &SticksVoxel, b: f64, g: &[f64; 3]) -> f64 {
    let ball = (1.0 - p.f[0] - p.f[1]) * (-b * p.d).exp();
    let sticks: f64 = (0..NSTICKS)
        .map(|j| {
            let c = g[0] * p.v[j][0] + g[1] * p.v[j][1] + g[2] * p.v[j][2];
            p.f[j] * (-b * p.d * c * c).exp()
        })
        .sum();
    p.s0 * (ball + sticks)
}

/// Ground truth of simulated voxels, component-major like the DWI and like bedpostx's outputs:
/// `dyads[(3 * j + c) * nvox + v]` is component c of stick j's direction in voxel v.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SticksTruth {
    pub s0: Vec<f32>,
    pub d: Vec<f32>,
    /// `f[j * nvox + v]`.
    pub f: Vec<f32>,
    /// `dyads[(3 * j + c) * nvox + v]`; zero where stick j is absent.
    pub dyads: Vec<f32>,
    pub nfibres: Vec<u8>,
}

/// Simulates every voxel of `configs` for `table`, with Rician noise of sigma = S0 / snr
/// (`snr = f64::INFINITY` for none). Returns the DWI, component-major (`ngrad` volumes of
/// `configs.len()` voxels: `dwi[i * nvox + v]`), and the truth. Noise is seeded per voxel, so the
/// result depends on `seed` and the voxel's index only.
pub fn simulate_voxels(configs: &[SticksVoxel], table: &GradientTable, snr: f64, seed: u64) -> (Vec<f32>, SticksTruth) {
    let nvox = configs.len();
    let n = table.len();
    let mut dwi = vec![0.0f32; n * nvox];
    let mut t = SticksTruth {
        s0: vec![0.0; nvox],
        d: vec![0.0; nvox],
        f: vec![0.0; NSTICKS * nvox],
        dyads: vec![0.0; 3 * NSTICKS * nvox],
        nfibres: vec![0; nvox],
    };
    for (v, p) in configs.iter().enumerate() {
        t.s0[v] = p.s0 as f32;
        t.d[v] = p.d as f32;
        t.nfibres[v] = p.nfibres() as u8;
        for j in 0..NSTICKS {
            t.f[j * nvox + v] = p.f[j] as f32;
            if p.f[j] > 0.0 {
                for c in 0..3 {
                    t.dyads[(3 * j + c) * nvox + v] = p.v[j][c] as f32;
                }
            }
        }
        if p.s0 <= 0.0 {
            continue;
        }
        let sigma = p.s0 / snr;
        let mut r = rng(seed ^ (v as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        for i in 0..n {
            dwi[i * nvox + v] = rician(signal(p, table.bvals[i], &table.bvecs[i]), sigma, &mut r) as f32;
        }
    }
    (dwi, t)
}

/// A unit vector at `deg` degrees from `a`, rotated towards a random perpendicular.
pub fn at_angle(a: [f64; 3], deg: f64, r: &mut impl Rng) -> [f64; 3] {
    let a = normalise(a);
    let mut p = super::unit_vector(r);
    let d = p[0] * a[0] + p[1] * a[1] + p[2] * a[2];
    p = normalise(std::array::from_fn(|i| p[i] - d * a[i]));
    let (c, s) = (deg.to_radians().cos(), deg.to_radians().sin());
    std::array::from_fn(|i| c * a[i] + s * p[i])
}

/// A test set of `n` voxels with known configurations, cycling through: one fibre (f 0.2-0.6),
/// two fibres crossing at 90 degrees, at 60 degrees, and at 45 degrees (each f 0.25-0.4); random
/// orientations, d from 0.9e-3 to 1.5e-3 mm^2/s, S0 = `s0`. Deterministic in `seed`.
pub fn test_set(n: usize, s0: f64, seed: u64) -> Vec<SticksVoxel> {
    let mut r = rng(seed);
    (0..n)
        .map(|i| {
            let d = r.random_range(0.9e-3..1.5e-3);
            let v1 = super::unit_vector(&mut r);
            match i % 4 {
                0 => SticksVoxel::one(s0, d, r.random_range(0.2..0.6), v1),
                k => {
                    let deg = [90.0, 60.0, 45.0][k - 1];
                    let f = [r.random_range(0.25..0.4), r.random_range(0.25..0.4)];
                    SticksVoxel::two(s0, d, f, v1, at_angle(v1, deg, &mut r))
                }
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::{gradient_table, two_shell_table};

    #[test]
    fn signal_limits_and_symmetry() {
        let v = SticksVoxel::two(1000.0, 1.0e-3, [0.3, 0.2], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]);
        // b = 0 gives S0 whatever the direction
        assert!((signal(&v, 0.0, &[0.0; 3]) - 1000.0).abs() < 1e-9);
        // along stick 1: stick 1 is attenuated like the ball, stick 2 not at all
        let b = 1000.0;
        let e = (-b * 1.0e-3f64).exp();
        let want = 1000.0 * (0.5 * e + 0.3 * e + 0.2);
        assert!((signal(&v, b, &[1.0, 0.0, 0.0]) - want).abs() < 1e-9);
        // antipodal symmetry
        let g = [0.48, -0.6, 0.64];
        assert!((signal(&v, b, &g) - signal(&v, b, &g.map(|x| -x))).abs() < 1e-12);
        // perpendicular to both sticks: only the ball decays
        let want = 1000.0 * (0.5 * e + 0.5);
        assert!((signal(&v, b, &[0.0, 0.0, 1.0]) - want).abs() < 1e-9);
        // f = 0: the ball alone, the tensor model's isotropic signal
        let ball = SticksVoxel::ball(500.0, 0.8e-3);
        assert!((signal(&ball, b, &g) - 500.0 * (-0.8f64).exp()).abs() < 1e-9);
    }

    #[test]
    fn simulate_is_component_major_seeded_and_has_truth() {
        let g = two_shell_table(2, 12);
        let configs = test_set(8, 1000.0, 5);
        let (dwi, truth) = simulate_voxels(&configs, &g, f64::INFINITY, 1);
        let nvox = configs.len();
        assert_eq!(dwi.len(), g.len() * nvox);
        for (v, c) in configs.iter().enumerate() {
            for i in 0..g.len() {
                let want = signal(c, g.bvals[i], &g.bvecs[i]) as f32;
                assert!((dwi[i * nvox + v] - want).abs() <= 1e-3 * want.abs().max(1.0), "voxel {v} vol {i}");
            }
            assert_eq!(truth.nfibres[v] as usize, if v % 4 == 0 { 1 } else { 2 });
            assert_eq!(truth.f[v], c.f[0] as f32);
            assert_eq!(truth.dyads[2 * nvox + v], c.v[0][2] as f32);
            if v % 4 == 0 {
                assert_eq!(truth.f[nvox + v], 0.0);
                assert_eq!(truth.dyads[3 * nvox + v], 0.0);
            }
        }
        // known crossings at 90, 60 and 45 degrees
        for (v, want) in [(1, 90.0), (2, 60.0), (3, 45.0), (5, 90.0)] {
            assert!((configs[v].crossing_deg() - want).abs() < 1e-9, "voxel {v}: {}", configs[v].crossing_deg());
        }
        assert_eq!(configs[0].crossing_deg(), 0.0);
        // Rician noise: same seed same data, other seed other data, and a sensible spread
        let (a, _) = simulate_voxels(&configs, &g, 20.0, 7);
        let (b, _) = simulate_voxels(&configs, &g, 20.0, 7);
        let (c, _) = simulate_voxels(&configs, &g, 20.0, 8);
        assert_eq!(a, b);
        assert_ne!(a, c);
        let dev: f64 = a.iter().zip(&dwi).map(|(x, y)| ((x - y) as f64).powi(2)).sum::<f64>() / a.len() as f64;
        let sd = dev.sqrt();
        assert!(sd > 25.0 && sd < 75.0, "noise sd {sd}, want about 1000 / 20 = 50");
    }

    #[test]
    fn one_stick_with_full_fraction_is_a_zero_radial_tensor() {
        // f = 1: S = S0 exp(-b d (g.v)^2), the tensor d v v^T; compare with the tensor model.
        let v = [0.6, 0.0, 0.8];
        let p = SticksVoxel::one(1.0, 1.2e-3, 1.0, v);
        let t = [0.36, 0.0, 0.48, 0.0, 0.0, 0.64].map(|x| x * 1.2e-3);
        for g in gradient_table(0, 10, 1500.0).bvecs {
            let a = signal(&p, 1500.0, &g);
            let b = crate::synth::tensor_signal(&t, 1.0, 1500.0, &g);
            assert!((a - b).abs() < 1e-12);
        }
    }
}
