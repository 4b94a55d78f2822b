//! `reproduce probtrack-t2 probtrack-t4` at quick scale on the CPU: report files, every row a
//! finite positive figure, the same total steps on every device and variant of a config (the
//! schedule and compaction path cannot change the result), nothing extrapolated.

mod common;
use common::{run, s};

#[test]
fn probtrack_tables_quick_write_their_reports() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    let (code, stdout, err) = run(&["reproduce", "probtrack-t2", "probtrack-t4", "--scale", "quick", "--repeats", "1", "--backend", "cpu", "--out", s(&out)], &[]);
    assert_eq!(code, 0, "{err}");
    for t in ["probtrack-t2", "probtrack-t4"] {
        for ext in ["csv", "md", "png"] {
            assert!(out.join(format!("{t}.{ext}")).exists(), "{t}.{ext} missing");
        }
    }
    let t2 = neuroport::repro::read_csv(&out.join("probtrack-t2.csv")).unwrap();
    // 6 configs x 2 CPU baselines x 7 metrics
    assert_eq!(t2.len(), 6 * 2 * 7, "{t2:?}");
    assert!(t2.iter().all(|r| r.ours.is_finite() && r.ours >= 0.0 && !r.substituted.contains("extrapolated")));
    for cfg in t2.iter().map(|r| r.config.clone()) {
        let steps: Vec<f64> = t2.iter().filter(|r| r.config == cfg && r.metric == "total steps").map(|r| r.ours).collect();
        assert!(steps.len() == 2 && steps[0] == steps[1] && steps[0] > 0.0, "{cfg}: {steps:?}");
    }
    // The step column holds the table's decimals (0.1), not float32's 0.10000000149011612.
    assert!(t2.iter().all(|r| [0.1, 0.2, 0.3].contains(&r.x.unwrap())), "{:?}", t2.iter().map(|r| r.x).collect::<Vec<_>>());
    let t4 = neuroport::repro::read_csv(&out.join("probtrack-t4.csv")).unwrap();
    assert_eq!(t4.len(), 11 * 5, "11 schedules x 5 metrics on the all-cores CPU");
    assert!(t4.iter().any(|r| r.config == "B") && t4.iter().any(|r| r.config == "AMaxStep"));
    assert!(stdout.contains("fastest schedule"), "{stdout}");
}
