//! `reproduce fim-t1` at quick scale on the CPU: every example, node FIM on all cores and one
//! thread, both sweeping baselines (L-F on examples 1-2 only), report files, and every solver's
//! u within 1 % of node FIM's (the Godunov solvers) or reached where node FIM reached (L-F).

mod common;
use common::{run, s};

#[test]
fn fim_t1_quick_writes_its_report() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    let (code, stdout, err) = run(&["reproduce", "fim-t1", "--scale", "quick", "--repeats", "1", "--backend", "cpu", "--out", s(&out)], &[]);
    assert_eq!(code, 0, "{err}");
    for ext in ["csv", "md", "png"] {
        assert!(out.join(format!("fim-t1.{ext}")).exists(), "fim-t1.{ext} missing");
    }
    let rows = neuroport::repro::read_csv(&out.join("fim-t1.csv")).unwrap();
    // 3 examples x (all cores, all cores with 004's local solver, 1 thread, Godunov) + L-F on
    // examples 1-2
    assert_eq!(rows.len(), 14, "{rows:?}");
    assert_eq!(rows.iter().filter(|r| r.variant.contains("004 local solver")).count(), 3);
    assert!(rows.iter().all(|r| r.ours.is_finite() && r.ours > 0.0 && r.metric == "run time" && r.unit == "s"));
    assert_eq!(rows.iter().filter(|r| r.variant.contains("Lax-Friedrichs")).count(), 2);
    assert!(rows.iter().filter(|r| r.config.starts_with("example 3")).all(|r| r.substituted.contains("not available")));
    assert!(rows.iter().all(|r| r.published.is_none()), "quick runs list published figures in the notes only");
    assert!(stdout.contains("GeForce 8800 GTX") && stdout.contains("Core 2 Duo"), "published figures in the notes: {stdout}");
    // every solver against node FIM: the Godunov sweeps agree to 1e-2 of the range (measured
    // <= 2.1e-3: their stopping rules differ); L-F is a more diffusive scheme (0.4-0.8 measured),
    // only required to reach the same voxels with a finite error.
    let diffs: Vec<(String, f64)> = stdout
        .lines()
        .filter_map(|l| {
            let d: f64 = l.split("relative to its largest u, ").nth(1)?.trim_end_matches('.').parse().ok()?;
            Some((l.to_string(), d))
        })
        .collect();
    assert_eq!(diffs.len(), 14, "{stdout}");
    for (l, d) in &diffs {
        let bound = if l.contains("Lax-Friedrichs") { 1.0 } else { 1e-2 };
        assert!(d.is_finite() && *d <= bound, "{l}");
    }
    assert!(stdout.contains("updates per voxel"), "{stdout}");
}
