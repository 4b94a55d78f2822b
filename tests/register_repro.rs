//! `reproduce airwc` at quick scale on the CPU: both experiments, both CPU baselines, report
//! files, and both registrations accurate against their known transforms.

mod common;
use common::{run, s};

#[test]
fn airwc_quick_writes_its_report() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    let (code, stdout, err) = run(&["reproduce", "airwc", "--scale", "quick", "--repeats", "1", "--backend", "cpu", "--out", s(&out)], &[]);
    assert_eq!(code, 0, "{err}");
    for ext in ["csv", "md", "png"] {
        assert!(out.join(format!("airwc.{ext}")).exists(), "airwc.{ext} missing");
    }
    let rows = neuroport::repro::read_csv(&out.join("airwc.csv")).unwrap();
    // per experiment: 1 thread (time per evaluation) + all cores (4 metrics); the first also
    // times each of the 5 costs on all cores
    assert_eq!(rows.len(), 15, "{rows:?}");
    assert!(rows.iter().all(|r| r.ours.is_finite() && r.ours >= 0.0));
    let same = rows.iter().find(|r| r.config.starts_with("same subject") && r.metric.starts_with("mean displacement")).unwrap();
    assert!(same.ours < 0.5, "same-subject error {} mm", same.ours);
    // Two subjects at 12 dof: the truth is only approximate (folding and ventricles differ), so
    // the bar is one 5 mm voxel, as tests/register_real.rs's two brains; a lost registration is
    // off by more (a 12-dof coarse level, where the heads are bare ellipsoids, once traded
    // rotations for shears and ended 12.9 mm off).
    let two = rows.iter().find(|r| r.config.starts_with("two subjects") && r.metric.starts_with("mean displacement")).unwrap();
    assert!(two.ours < 5.0, "two-subject error {} mm", two.ours);
    assert!(stdout.contains("FLIRT"), "{stdout}");
}
