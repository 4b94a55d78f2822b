//! `neuroport check`: every kernel on a device against the CPU reference on freshly drawn
//! random inputs, so whoever ports neuroport to a new device knows at once whether it computes
//! the right thing.
//!
//! Error measure: for each output element, |device - reference| / (|reference| + floor), where
//! floor is 1e-3 x the largest |reference| of that output (so elements that are nearly zero are
//! judged on the output's scale). Any NaN or infinity fails. float32 kernels pass at a largest
//! relative error of 1e-3 unless a kernel documents its own tolerance.

use crate::runtime::Device;
use anyhow::Result;
use serde::Serialize;

pub const F32_TOL: f64 = 1e-3;

#[derive(Clone, Debug, Serialize)]
pub struct CheckRow {
    pub kernel: String,
    pub device: String,
    pub max_rel_err: f64,
    pub tolerance: f64,
    pub pass: bool,
    pub note: String,
}

impl CheckRow {
    pub fn new(kernel: &str, device: &Device, err: f64, tol: f64, note: impl Into<String>) -> CheckRow {
        CheckRow {
            kernel: kernel.into(),
            device: device.info().spec.clone(),
            max_rel_err: err,
            tolerance: tol,
            pass: err.is_finite() && err <= tol,
            note: note.into(),
        }
    }
}

/// A method's conformance check: run its kernels on `dev` and on `reference` (the CPU).
pub type CheckFn = fn(dev: &Device, reference: &Device, seed: u64) -> Result<Vec<CheckRow>>;

/// Every method's checks; later methods add theirs here.
pub fn registry() -> Vec<(&'static str, CheckFn)> {
    vec![
        ("gpu-layer", crate::runtime::gpu::selftest::run),
        ("dti", crate::dti::check::run),
        ("geodesic", crate::geodesic::check::run),
        ("bedpost", crate::bedpost::check::run),
        ("probtrack", crate::probtrack::check::run),
        ("register", crate::register::check::run),
        ("fim", crate::fim::check::run),
    ]
}

/// Largest relative error as documented above; NaN/Inf anywhere (either side) gives infinity,
/// as does a length mismatch.
pub fn max_rel_err(dev: &[f32], reference: &[f32]) -> f64 {
    if dev.len() != reference.len() {
        return f64::INFINITY;
    }
    let scale = reference.iter().fold(0.0f64, |m, &r| m.max((r as f64).abs()));
    let floor = 1e-3 * scale + f64::MIN_POSITIVE;
    let mut worst = 0.0f64;
    for (&d, &r) in dev.iter().zip(reference) {
        if !d.is_finite() || !r.is_finite() {
            return f64::INFINITY;
        }
        worst = worst.max((d as f64 - r as f64).abs() / ((r as f64).abs() + floor));
    }
    worst
}

/// Runs every registered check on every device; a check that errors is a failing row.
pub fn run_all(devices: &[Device], reference: &Device, seed: u64) -> Vec<CheckRow> {
    let mut rows = Vec::new();
    for dev in devices {
        for (name, f) in registry() {
            match f(dev, reference, seed) {
                Ok(r) => rows.extend(r),
                Err(e) => rows.push(CheckRow {
                    kernel: name.into(),
                    device: dev.info().spec.clone(),
                    max_rel_err: f64::INFINITY,
                    tolerance: 0.0,
                    pass: false,
                    note: format!("error: {e:#}"),
                }),
            }
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn nan_and_length_mismatch_fail() {
        assert!(max_rel_err(&[1.0, f32::NAN], &[1.0, 1.0]).is_infinite());
        assert!(max_rel_err(&[1.0], &[1.0, 1.0]).is_infinite());
        assert!(max_rel_err(&[1.0, 2.0], &[1.0, 2.0]) == 0.0);
        assert!((max_rel_err(&[1.01], &[1.0]) - 0.01 / 1.001).abs() < 1e-6);
    }
}
