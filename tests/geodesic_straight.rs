//! In a constant tensor field G is constant, every Christoffel symbol vanishes and every geodesic
//! is a straight line travelled at h voxels per step, on every device and interpolation. Along the
//! principal direction the connectivity measure (Euclidean over Riemannian length) is sqrt(lambda1).

mod geodesic_common;

use neuroport::geodesic::phantoms::{tensor_field, voxel_axes_to_fsl};
use neuroport::geodesic::{kernels, prepare, Interp, Method, Seed, Stop, TraceParams};
use neuroport::synth::{rng, unit_vector};
use neuroport::volume::Geometry;

#[test]
fn constant_field_gives_straight_lines() {
    let dims = [24, 20, 12];
    // Anisotropic voxels and a positive-determinant affine (the FSL x flip applies).
    let geom = Geometry::synthetic(dims, [1.5, 1.8, 2.5]);
    let lam = [1.7e-3, 0.4e-3, 0.3e-3];
    let t = neuroport::dti::sym3::from_eigen(lam, [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]);
    let mut tensor = tensor_field(dims, |_| t);
    voxel_axes_to_fsl(&mut tensor, &geom);
    let mask = vec![1u8; geom.nvox()];
    let mut r = rng(7);
    let mut seeds: Vec<Seed> = (0..64)
        .map(|_| Seed { pos: [11.5, 9.5, 5.5].map(|c: f32| c + 2.0 * unit_vector(&mut r)[0] as f32), dir: unit_vector(&mut r).map(|c| c as f32) })
        .collect();
    seeds.push(Seed { pos: [3.0, 9.0, 5.0], dir: [1.0, 0.0, 0.0] }); // along V1
    for dev in geodesic_common::devices() {
        let (fields, _) = prepare(&dev, &tensor, &geom, &mask, None).unwrap();
        let mut k = kernels(&dev).unwrap();
        k.upload(&fields).unwrap();
        let interps: &[Interp] = if dev.is_cpu() { &[Interp::Kernel] } else { &[Interp::Kernel, Interp::Texture] };
        for &interp in interps {
            for method in [Method::Rk2, Method::Euler] {
                let h = 0.25f32;
                let p = TraceParams { step: h, max_steps: 400, method, interp, ..Default::default() };
                let b = k.trace(&seeds, &p).unwrap();
                let what = format!("{} {interp:?} {method:?}", dev.label());
                for (i, s) in seeds.iter().enumerate() {
                    let f = b.fibre(i);
                    let e = b.ends[i];
                    assert_eq!(f.len(), e.steps as usize + 1, "{what}");
                    assert!(e.steps > 10, "{what}: fibre {i} only {} steps", e.steps);
                    assert_eq!(e.stop, Stop::LeftVolume, "{what}");
                    let n = (s.dir.iter().map(|c| c * c).sum::<f32>()).sqrt();
                    let d = s.dir.map(|c| c / n);
                    for (j, q) in f.iter().enumerate() {
                        // on the line, at arc length j * h
                        for c in 0..3 {
                            let want = s.pos[c] + j as f32 * h * d[c];
                            assert!((q[c] - want).abs() < 2e-4 * (1.0 + j as f32 * h), "{what}: fibre {i} point {j} axis {c}: {} vs {want}", q[c]);
                        }
                    }
                    // the last point is inside, the next step would leave
                    let last = f[f.len() - 1];
                    let next: Vec<f32> = (0..3).map(|c| last[c] + h * d[c]).collect();
                    let out = (0..3).any(|c| next[c] < -0.5 || next[c] >= dims[c] as f32 - 0.5);
                    assert!(out, "{what}: fibre {i} stopped inside at {last:?}");
                }
                let along = b.ends[seeds.len() - 1];
                let cm = along.connectivity() as f64;
                assert!((cm - lam[0].sqrt()).abs() < 1e-4 * lam[0].sqrt(), "{what}: connectivity {cm} vs sqrt(lambda1) {}", lam[0].sqrt());
                assert!((along.length_mm as f64 - along.steps as f64 * h as f64 * 1.5).abs() < 1e-3 * along.length_mm as f64, "{what}: length in mm");
            }
        }
    }
}
