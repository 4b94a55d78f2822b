//! `reproduce bedpost-t3` at quick scale: both datasets, both CPU baselines, report files, and
//! nothing extrapolated (quick runs every voxel it reports).

mod common;
use common::{run, s};

#[test]
fn bedpost_t3_quick_writes_its_report() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    let (code, stdout, err) = run(&["reproduce", "bedpost-t3", "--scale", "quick", "--repeats", "1", "--backend", "cpu", "--out", s(&out)], &[]);
    assert_eq!(code, 0, "{err}");
    for ext in ["csv", "md", "png"] {
        assert!(out.join(format!("bedpost-t3.{ext}")).exists(), "bedpost-t3.{ext} missing");
    }
    let rows = neuroport::repro::read_csv(&out.join("bedpost-t3.csv")).unwrap();
    assert_eq!(rows.len(), 4, "{rows:?}");
    assert!(rows.iter().all(|r| r.ours.is_finite() && r.ours > 0.0 && r.metric == "sampling time" && r.unit == "s"));
    assert!(rows.iter().all(|r| !r.substituted.contains("extrapolated")));
    assert!(rows.iter().any(|r| r.variant == "1 thread" && r.speedup_vs_1thread == Some(1.0)));
    assert!(stdout.contains("Phenom X4 965") && stdout.contains("Radeon HD 5870"), "published figures in the notes: {stdout}");
    // every run is checked against the phantom's truth in the notes
    let errs: Vec<f64> = stdout
        .lines()
        .filter_map(|l| l.split("single-fibre voxels ").nth(1))
        .filter_map(|t| t.split(' ').next()?.parse().ok())
        .collect();
    assert_eq!(errs.len(), 4, "{stdout}");
    assert!(errs.iter().all(|&e| e < 3.0), "median angular errors {errs:?}");
}
