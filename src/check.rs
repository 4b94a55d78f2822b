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

/// The table `neuroport check` prints: the seed, the devices checked (`spec (name)`) and those
/// `unavailable`, one row per kernel, the counts, then each failure again with its error against
/// the bound, so a porter need not hunt for FAIL among sixty rows.
pub fn text(rows: &[CheckRow], seed: u64, devices: &[String], unavailable: &[String]) -> String {
    let failed = rows.iter().filter(|r| !r.pass).count();
    let mut text = format!("seed {seed}\n");
    if !devices.is_empty() {
        text += &format!("devices: {}\n", devices.join(", "));
    }
    for n in unavailable {
        text += &format!("{n}\n");
    }
    // The bound at the error's precision: 0.025 printed as "3e-2" made a failing 2.70e-2 look
    // within it (and 1.95e-6 as "2e-6", 37 as "4e1").
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|r| vec![r.device.clone(), r.kernel.clone(), if r.pass { "pass" } else { "FAIL" }.into(), format!("{:.2e}", r.max_rel_err), format!("{:.2e}", r.tolerance)])
        .collect();
    // A note as a last column made rows ~250 characters wide: each note goes below its row,
    // under the kernel column, wrapped to a 100-column terminal. Rows still start with their
    // device and notes with a space, so scripts can tell them apart.
    let aligned = crate::io::table::aligned(&["device", "kernel", "result", "max rel err", "tol"], &table);
    let indent = rows.iter().map(|r| r.device.chars().count()).chain([6]).max().unwrap_or(6) + 2;
    let mut lines = aligned.lines();
    text += &format!("{}\n", lines.next().unwrap_or_default());
    for (r, line) in rows.iter().zip(lines) {
        text += &format!("{line}\n");
        for l in wrap(&r.note, NOTE_WIDTH.saturating_sub(indent)) {
            text += &format!("{:indent$}{l}\n", "");
        }
    }
    text += &format!("{} passed, {} failed\n", rows.len() - failed, failed);
    for r in rows.iter().filter(|r| !r.pass) {
        let by = if r.max_rel_err.is_finite() {
            let times = if r.tolerance > 0.0 { format!(" ({:.1}x the bound)", r.max_rel_err / r.tolerance) } else { String::new() };
            format!("{:.2e} > {:.2e}{times}", r.max_rel_err, r.tolerance)
        } else if r.note.starts_with("error:") {
            String::new()
        } else {
            "not finite (NaN or infinity in an output, or a wrong length)".to_string()
        };
        let sep = if by.is_empty() || r.note.is_empty() { "" } else { "; " };
        text += &format!("FAIL {} {}: {by}{sep}{}\n", r.device, r.kernel, r.note);
    }
    text
}

/// The terminal width the notes of [`text`] are wrapped to.
const NOTE_WIDTH: usize = 100;

/// `s` in lines of at most `width` characters, broken at spaces (a longer word gets a line).
fn wrap(s: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for w in s.split_whitespace() {
        match lines.last_mut() {
            Some(l) if l.chars().count() + 1 + w.chars().count() <= width => {
                l.push(' ');
                l.push_str(w);
            }
            _ => lines.push(w.to_string()),
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(kernel: &str, err: f64, tol: f64, note: &str) -> CheckRow {
        CheckRow { kernel: kernel.into(), device: "opencl:0:0".into(), max_rel_err: err, tolerance: tol, pass: err.is_finite() && err <= tol, note: note.into() }
    }

    #[test]
    fn a_porter_sees_the_device_the_bound_and_each_failure_at_the_end() {
        let rows = vec![row("dti_fit", 5e-5, 1e-3, ""), row("bedpost_chain[warp]", 0.027, 0.025, "diverged share"), row("fim", f64::INFINITY, 0.0, "error: build failed")];
        let t = text(&rows, 7, &["opencl:0:0 (pthread-skylake)".into()], &[]);
        // Which device the spec is.
        assert!(t.contains("devices: opencl:0:0 (pthread-skylake)\n"), "{t}");
        // A bound of 0.025 printed as 3e-2 made a failing 2.70e-2 look within it.
        let chain = t.lines().find(|l| l.contains("bedpost_chain[warp]")).unwrap();
        assert!(chain.contains("FAIL") && chain.contains("2.70e-2") && chain.contains("2.50e-2") && !chain.contains("3e-2"), "{chain}");
        // After the counts, each failure again: kernel, device, error against the bound, by how much.
        let tail = t.split("1 passed, 2 failed\n").nth(1).expect("counts line");
        assert!(tail.contains("FAIL opencl:0:0 bedpost_chain[warp]: 2.70e-2 > 2.50e-2 (1.1x the bound); diverged share"), "{tail}");
        assert!(tail.contains("FAIL opencl:0:0 fim: error: build failed"), "{tail}");
        assert!(!tail.contains("dti_fit"), "{tail}");
        // Nothing after the counts when everything passed.
        assert!(text(&rows[..1], 7, &[], &[]).ends_with("1 passed, 0 failed\n"));
    }
    #[test]
    fn a_row_s_note_goes_below_it_within_100_columns() {
        let long = "13x14x9 random anisotropic field: largest lowering by one more update, which a 004 local solver with roots deferred may still make on a slow device";
        let rows = vec![row("fim_block[004 local, fixed point, roots deferred]", 1.4e-7, 1.95e-6, long), row("dti_fit", 5e-5, 1e-3, "")];
        let t = text(&rows, 7, &[], &[]);
        // The header and rows hold no note column (they were ~250 characters wide with one).
        assert!(t.lines().all(|l| l.chars().count() <= 100), "{t}");
        assert!(t.lines().any(|l| l.ends_with("tol")), "{t}");
        let lines: Vec<&str> = t.lines().collect();
        let at = lines.iter().position(|l| l.starts_with("opencl:0:0  fim_block[004 local, fixed point, roots deferred]  pass")).expect("the row");
        assert!(lines[at].ends_with("1.95e-6"), "{t}");
        // The note follows on indented lines under the kernel column, every word kept in order;
        // the next row starts again at the margin.
        let note: Vec<&str> = lines[at + 1..].iter().take_while(|l| l.starts_with(' ')).copied().collect();
        assert!(note.len() == 2 && note.iter().all(|l| l.starts_with("            ") && !l.starts_with("             ")), "{t}");
        assert_eq!(note.iter().map(|l| l.trim()).collect::<Vec<_>>().join(" "), long);
        assert!(lines[at + 1 + note.len()].starts_with("opencl:0:0  dti_fit"), "{t}");
        // A row without a note has no line below it.
        assert_eq!(lines[at + 2 + note.len()], "2 passed, 0 failed");
    }
    #[test]
    fn nan_and_length_mismatch_fail() {
        assert!(max_rel_err(&[1.0, f32::NAN], &[1.0, 1.0]).is_infinite());
        assert!(max_rel_err(&[1.0], &[1.0, 1.0]).is_infinite());
        assert!(max_rel_err(&[1.0, 2.0], &[1.0, 2.0]) == 0.0);
        assert!((max_rel_err(&[1.01], &[1.0]) - 0.01 / 1.001).abs() < 1e-6);
    }
}
