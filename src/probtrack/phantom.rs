//! Sample volumes with known bundles, made directly from the truth (the sticks model of
//! `synth::sticks`) plus noise, as bedpost would leave them: each sample's stick directions are
//! the true ones turned by a random angle (|N(0, spread)|) in a random plane, fractions jittered
//! by 10 %. Tests, `neuroport check` and the harness use these instead of running the MCMC.

use super::field::{Field, INSIDE};
use crate::synth::sticks::{at_angle, SticksVoxel};
use crate::synth::rng;
use crate::volume::{Geometry, Outputs};
use anyhow::Result;
use rand::Rng;
use rand_distr::{Distribution, Normal};
use rayon::prelude::*;
use std::path::Path;

/// A grid and the true sticks of each voxel (voxel axes; `f = 0` where there is no fibre).
pub struct Truth {
    pub geom: Geometry,
    pub sticks: Vec<SticksVoxel>,
}

/// bedpost's six sample volumes (th1, ph1, f1, th2, ph2, f2), each nsamp x nvox, FSL frame.
pub struct Angles {
    pub nsamp: usize,
    pub vols: [Vec<f32>; 6],
}

fn empty(dims: [usize; 3]) -> Truth {
    let geom = Geometry::synthetic(dims, [2.0; 3]);
    let n = geom.nvox();
    Truth { geom, sticks: vec![SticksVoxel::ball(1000.0, 1e-3); n] }
}

fn one(v: [f64; 3]) -> SticksVoxel {
    SticksVoxel::one(1000.0, 1e-3, 0.6, v)
}

/// A bundle along x, 6 x 6 voxels across (y, z in 2..8), through a 24 x 10 x 10 grid.
pub fn straight() -> Truth {
    let mut t = empty([24, 10, 10]);
    for z in 2..8 {
        for y in 2..8 {
            for x in 0..24 {
                let i = t.geom.index(x, y, z);
                t.sticks[i] = one([1.0, 0.0, 0.0]);
            }
        }
    }
    t
}

/// A quarter-circle bundle in the x-y plane about voxel (0, 0): radii 9 to 15 voxels, from the
/// x axis (running along y) to the y axis (running along x), 6 slices thick (z 1..7).
pub fn curved() -> Truth {
    let mut t = empty([20, 20, 8]);
    for z in 1..7 {
        for y in 0..20 {
            for x in 0..20 {
                let r = ((x * x + y * y) as f64).sqrt();
                if (9.0..=15.0).contains(&r) {
                    let i = t.geom.index(x, y, z);
                    t.sticks[i] = one([-(y as f64) / r, x as f64 / r, 0.0]);
                }
            }
        }
    }
    t
}

/// Two bundles crossing at 90 degrees: along x (y 7..13) and along y (x 9..15) of a
/// 24 x 20 x 8 grid, 6 slices thick (z 1..7); voxels in both hold both sticks (f 0.3 each).
pub fn crossing() -> Truth {
    let mut t = empty([24, 20, 8]);
    for z in 1..7 {
        for y in 0..20 {
            for x in 0..24 {
                let (a, b) = ((7..13).contains(&y), (9..15).contains(&x));
                let i = t.geom.index(x, y, z);
                t.sticks[i] = match (a, b) {
                    (true, true) => SticksVoxel::two(1000.0, 1e-3, [0.3, 0.3], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]),
                    (true, false) => one([1.0, 0.0, 0.0]),
                    (false, true) => one([0.0, 1.0, 0.0]),
                    _ => continue,
                };
            }
        }
    }
    t
}

impl Truth {
    /// Voxels where a bundle runs.
    pub fn mask(&self) -> Vec<u8> {
        self.sticks.iter().map(|s| (s.f[0] > 0.0) as u8).collect()
    }

    /// `nsamp` noisy samples per voxel; voxel v depends on (seed, v) only.
    pub fn angles(&self, nsamp: usize, spread_deg: f64, seed: u64) -> Angles {
        let nv = self.geom.nvox();
        let per: Vec<Vec<[f32; 6]>> = (0..nv)
            .into_par_iter()
            .map(|v| {
                let mut r = rng(seed ^ (v as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
                let turn = Normal::new(0.0, spread_deg.max(1e-9)).expect("finite spread");
                let t = &self.sticks[v];
                (0..nsamp)
                    .map(|_| {
                        let mut o = [0.0f32; 6];
                        for j in 0..2 {
                            if t.f[j] <= 0.0 {
                                continue;
                            }
                            let d = at_angle(t.v[j], turn.sample(&mut r).abs(), &mut r);
                            // Voxel axes to the FSL bvecs frame (the flip is its own inverse).
                            let b = self.geom.bvecs_to_voxel(d);
                            let (th, ph) = (b[2].clamp(-1.0, 1.0).acos(), b[1].atan2(b[0]));
                            o[3 * j] = th as f32;
                            o[3 * j + 1] = ph as f32;
                            o[3 * j + 2] = (t.f[j] * r.random_range(0.9..1.1)) as f32;
                        }
                        o
                    })
                    .collect()
            })
            .collect();
        let vols = std::array::from_fn(|c| {
            let mut out = vec![0.0f32; nsamp * nv];
            for (v, s) in per.iter().enumerate() {
                for (k, o) in s.iter().enumerate() {
                    out[k * nv + v] = o[c];
                }
            }
            out
        });
        Angles { nsamp, vols }
    }

    /// The tracker's field for these samples; tracking mask = the bundles.
    pub fn field(&self, a: &Angles) -> Field {
        let mask = self.mask();
        let mut f = Field::from_angles(self.geom.clone(), a.nsamp, std::array::from_fn(|c| a.vols[c].as_slice()));
        f.roi = mask.iter().map(|&m| if m != 0 { INSIDE } else { 0 }).collect();
        f
    }

    /// Writes the samples as a bedpost folder: merged_{th,ph,f}{1,2}samples and mean_f1samples.
    pub fn write_bedpost(&self, a: &Angles, dir: &Path) -> Result<()> {
        let mut out = Outputs::new();
        let names = ["merged_th1samples", "merged_ph1samples", "merged_f1samples", "merged_th2samples", "merged_ph2samples", "merged_f2samples"];
        for (name, vol) in names.iter().zip(&a.vols) {
            out.nifti(&dir.join(format!("{name}.nii.gz")), &self.geom, a.nsamp, vol)?;
        }
        let nv = self.geom.nvox();
        let mean: Vec<f32> = (0..nv).map(|v| (0..a.nsamp).map(|k| a.vols[2][k * nv + v]).sum::<f32>() / a.nsamp as f32).collect();
        out.nifti(&dir.join("mean_f1samples.nii.gz"), &self.geom, 1, &mean)?;
        out.commit()?;
        Ok(())
    }
}
