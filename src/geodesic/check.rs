//! Geodesic conformance: both interpolation variants traced on the device against the CPU
//! reference, point by point, on a freshly drawn smooth random tensor field with a mask and a
//! target region.
//!
//! Error measure: the largest distance (voxels) between corresponding points of the two traces of
//! a fibre, over the points both have. A fibre may end one step earlier or later than the
//! reference (a step landing within rounding of the mask or volume boundary); fibres whose
//! lengths differ more, or whose stop reasons differ, are counted as mismatches. NaN fails.
//!
//! In-kernel interpolation must agree within float32 rounding: TOL_KERNEL = 2e-3 voxel over a few
//! hundred steps, no mismatch. Texture filtering hardware weights with fixed-point fractions
//! (NVIDIA: 8 bits, 1/256 voxel), which moves every sample by up to 1/256 voxel; geodesics through
//! a curved field amplify such perturbations along the fibre (tens of times over 15 voxels here).
//! So the texture tolerance is measured, not guessed: the CPU reference is traced again with its
//! weights rounded down to 1/256, and the device may deviate at most 3x as far as that (at least
//! TOL_KERNEL) with at most 3x as many mismatched fibres (plus 1% of the fibres).

use super::{kernels, FibreBatch, Fields, GeodesicKernels, Interp, Method, Seed, TraceParams};
use crate::check::CheckRow;
use crate::dti::sym3;
use crate::runtime::Device;
use crate::synth::{rng, unit_vector};
use crate::volume::Geometry;
use anyhow::Result;
use rand::Rng;

pub const TOL_KERNEL: f64 = 2e-3;
/// Fractional bits of the texture hardware's interpolation weights (NVIDIA; PoCL uses float).
pub const FILTER_BITS: u32 = 8;

/// How two traces of the same seeds differ.
#[derive(Clone, Copy, Debug, Default)]
pub struct Parity {
    /// Largest distance between corresponding points, voxels (infinite on NaN).
    pub max_dist: f64,
    /// Fibres whose step counts differ by one.
    pub off_by_one: usize,
    /// Fibres whose step counts differ by more, or that stop for different reasons.
    pub mismatched: usize,
    /// Largest relative difference of the connectivity measure among fibres of equal length.
    pub max_cm_rel: f64,
}

pub fn compare(a: &FibreBatch, b: &FibreBatch) -> Parity {
    let mut p = Parity::default();
    if a.len() != b.len() {
        p.max_dist = f64::INFINITY;
        return p;
    }
    for i in 0..a.len() {
        let (ea, eb) = (&a.ends[i], &b.ends[i]);
        let ds = (ea.steps as i64 - eb.steps as i64).abs();
        p.mismatched += (ds > 1 || (ds == 0 && ea.stop != eb.stop)) as usize;
        p.off_by_one += (ds == 1) as usize;
        for (pa, pb) in a.fibre(i).iter().zip(b.fibre(i)) {
            let d = ((0..3).map(|c| (pa[c] as f64 - pb[c] as f64).powi(2)).sum::<f64>()).sqrt();
            p.max_dist = if d.is_finite() { p.max_dist.max(d) } else { f64::INFINITY };
        }
        if ds == 0 && ea.stop == eb.stop {
            let (ca, cb) = (ea.connectivity() as f64, eb.connectivity() as f64);
            let r = (ca - cb).abs() / cb.abs().max(1e-30);
            p.max_cm_rel = if r.is_finite() { p.max_cm_rel.max(r) } else { f64::INFINITY };
        }
    }
    p
}

/// A smooth random tensor field (principal direction and diffusivities varying over ~10-30
/// voxels with random phases), an ellipsoidal mask, a target box and random seeds.
pub fn random_case(seed: u64, nseeds: usize) -> Result<(Fields, Vec<Seed>)> {
    let mut r = rng(seed);
    let dims = [28, 24, 16];
    let geom = Geometry::synthetic(dims, [1.5, 1.5, 2.0]);
    let ph: [f64; 6] = std::array::from_fn(|_| r.random_range(0.0..std::f64::consts::TAU));
    let k: [f64; 6] = std::array::from_fn(|_| r.random_range(0.2..0.5));
    let field = |p: [f64; 3]| {
        let th = 1.2 * (k[0] * p[0] * 0.5 + ph[0]).sin() + 0.8 * (k[1] * p[1] * 0.5 + ph[1]).cos();
        let ps = 0.4 * (k[2] * p[2] * 0.5 + ph[2]).sin();
        let s = 1.0 + 0.3 * (k[3] * (p[0] + p[1]) * 0.4 + ph[3]).sin();
        let e1 = [th.cos() * ps.cos(), th.sin() * ps.cos(), ps.sin()];
        let h = [0.0, 0.0, 1.0];
        let e2 = [e1[1] * h[2] - e1[2] * h[1], e1[2] * h[0] - e1[0] * h[2], e1[0] * h[1] - e1[1] * h[0]];
        let n = (e2[0] * e2[0] + e2[1] * e2[1] + e2[2] * e2[2]).sqrt();
        let l3 = 0.3e-3 * (1.0 + 0.2 * (k[4] * p[2] + ph[4]).cos());
        sym3::from_eigen([1.6e-3 * s, 0.45e-3, l3], e1, e2.map(|c| c / n))
    };
    let tensor = super::phantoms::tensor_field(dims, field);
    let c = dims.map(|d| (d as f64 - 1.0) / 2.0);
    let mut mask = vec![0u8; geom.nvox()];
    let mut target = vec![0u8; geom.nvox()];
    for z in 0..dims[2] {
        for y in 0..dims[1] {
            for x in 0..dims[0] {
                let p = [x as f64, y as f64, z as f64];
                let e: f64 = (0..3).map(|a| ((p[a] - c[a]) / (c[a] + 1.0)).powi(2)).sum();
                mask[geom.index(x, y, z)] = (e < 1.0) as u8;
                target[geom.index(x, y, z)] = (x > dims[0] * 2 / 3) as u8;
            }
        }
    }
    let cpu = Device::Cpu(std::sync::Arc::new(crate::runtime::cpu::Cpu::new(Some(1))?));
    let (fields, _) = super::prepare(&cpu, &tensor, &geom, &mask, Some(&target))?;
    let seeds = (0..nseeds)
        .map(|_| {
            let pos = std::array::from_fn(|a| (c[a] + r.random_range(-0.4..0.4) * c[a]) as f32);
            Seed { pos, dir: unit_vector(&mut r).map(|x| x as f32) }
        })
        .collect();
    Ok((fields, seeds))
}

/// Tolerance of the CPU's straight lines, in voxels: the CPU traces in float64 (error ~1e-13 over
/// hundreds of steps) and stores points as float32, whose spacing at 32 voxels is 3.8e-6.
const STRAIGHT_TOL: f64 = 1e-5;

/// In a constant tensor field every Christoffel symbol is zero and the geodesic through (x0, d)
/// is x0 + s d at arc length s = j h (voxels): the largest distance, in voxels, of any traced
/// point from it, and the number of steps checked.
fn straight_line_error(dev: &Device, seed: u64, method: Method) -> Result<(f64, u64)> {
    let mut r = rng(seed ^ 0x5eed);
    let dims = [32, 28, 20];
    let geom = Geometry::synthetic(dims, [1.5, 1.8, 2.5]);
    let e1 = unit_vector(&mut r);
    let h = [0.0, 0.0, 1.0];
    let e2 = [e1[1] * h[2] - e1[2] * h[1], e1[2] * h[0] - e1[0] * h[2], e1[0] * h[1] - e1[1] * h[0]];
    let n = e2.iter().map(|c| c * c).sum::<f64>().sqrt();
    let t = sym3::from_eigen([1.7e-3, 0.5e-3, 0.3e-3], e1, e2.map(|c| c / n));
    let tensor = super::phantoms::tensor_field(dims, |_| t);
    let (fields, _) = super::prepare(dev, &tensor, &geom, &vec![1u8; geom.nvox()], None)?;
    let c = dims.map(|d| (d as f64 - 1.0) / 2.0);
    let seeds: Vec<Seed> = (0..64)
        .map(|_| Seed { pos: std::array::from_fn(|a| (c[a] + r.random_range(-0.3..0.3) * c[a]) as f32), dir: unit_vector(&mut r).map(|x| x as f32) })
        .collect();
    let step = 0.25f32;
    let p = TraceParams { step, max_steps: 300, method, record: true, ..Default::default() };
    let mut k = kernels(dev)?;
    k.upload(&fields)?;
    let b = k.trace(&seeds, &p)?;
    let mut err = 0.0f64;
    for (i, sd) in seeds.iter().enumerate() {
        let d: [f64; 3] = sd.dir.map(|x| x as f64);
        let nd = d.iter().map(|x| x * x).sum::<f64>().sqrt();
        for (j, q) in b.fibre(i).iter().enumerate() {
            for a in 0..3 {
                let want = sd.pos[a] as f64 + j as f64 * step as f64 * d[a] / nd;
                let e = (q[a] as f64 - want).abs();
                err = if e.is_finite() { err.max(e) } else { f64::INFINITY };
            }
        }
    }
    Ok((err, b.total_steps()))
}

/// Texture tolerance and allowed mismatches: 3x what 8-bit weights alone do to the reference.
pub fn texture_tolerance(reference: &Device, fields: &Fields, seeds: &[Seed], p: &TraceParams, exact: &FibreBatch) -> Result<(f64, usize)> {
    let Device::Cpu(c) = reference else { anyhow::bail!("the reference must be the CPU backend") };
    let mut q = super::cpu::CpuGeodesic::new(c.clone()).emulating_filter_bits(FILTER_BITS);
    q.upload(fields)?;
    let probe = compare(&q.trace(seeds, p)?, exact);
    Ok(((3.0 * probe.max_dist).max(TOL_KERNEL), 3 * probe.mismatched + seeds.len() / 100))
}

pub fn run(dev: &Device, reference: &Device, seed: u64) -> Result<Vec<CheckRow>> {
    let (fields, seeds) = random_case(seed, 256)?;
    let mut refk = kernels(reference)?;
    refk.upload(&fields)?;
    let mut rows = Vec::new();
    let variants: &[(Method, Option<Interp>)] = if dev.is_cpu() {
        &[(Method::Rk2, None)]
    } else if dev.info().image_support {
        &[(Method::Rk2, Some(Interp::Kernel)), (Method::Rk2, Some(Interp::Texture)), (Method::Euler, Some(Interp::Kernel))]
    } else {
        &[(Method::Rk2, Some(Interp::Kernel)), (Method::Euler, Some(Interp::Kernel))]
    };
    let mut k = kernels(dev)?;
    k.upload(&fields)?;
    for &(method, interp) in variants {
        let p = TraceParams { step: 0.1, max_steps: 150, method, interp: interp.unwrap_or(Interp::Kernel), record: true, ..Default::default() };
        let b = refk.trace(&seeds, &p)?;
        let name = format!("geodesic_trace_{}_{}", interp.map_or("cpu", |i| i.name()), method.name());
        if dev.is_cpu() {
            // The reference against itself would prove nothing: on the random field it must stay
            // finite and advance, and against the exact solution of a constant field it must
            // trace straight lines.
            let finite = b.ends.iter().all(|e| e.length_mm.is_finite() && e.riemann.is_finite()) && b.points.iter().all(|q| q.iter().all(|c| c.is_finite()));
            let moved = b.total_steps() > 0;
            let (err, steps) = straight_line_error(dev, seed, method)?;
            let ok = finite && moved && steps > 0;
            rows.push(CheckRow::new(
                &format!("{name} (vs exact lines)"),
                dev,
                if ok { err } else { f64::INFINITY },
                STRAIGHT_TOL,
                format!("voxels; constant random tensor, 64 fibres, {steps} steps; random field finite and advancing"),
            ));
            continue;
        }
        let a = k.trace(&seeds, &p)?;
        let par = compare(&a, &b);
        let (tol, allowed) = if interp == Some(Interp::Texture) { texture_tolerance(reference, &fields, &seeds, &p, &b)? } else { (TOL_KERNEL, 0) };
        let err = if par.mismatched > allowed { f64::INFINITY } else { par.max_dist };
        let note = format!(
            "voxels; {} fibres, {} steps; {} off by one step, {} mismatched (allowed {allowed}); connectivity rel err {:.1e}",
            seeds.len(),
            b.total_steps(),
            par.off_by_one,
            par.mismatched,
            par.max_cm_rel
        );
        rows.push(CheckRow::new(&name, dev, err, tol, note));
    }
    Ok(rows)
}
