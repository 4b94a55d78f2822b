//! The four geodesic tables at quick scale through `neuroport reproduce`: each writes its CSV,
//! Markdown and plot, with finite times on every device present and the published figures where
//! the scale matches (paper scale only, so none here).

use std::process::Command;

#[test]
fn geodesic_tables_quick() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    let ids = ["geodesic-t1", "geodesic-t3", "geodesic-f6", "geodesic-f7"];
    let o = Command::new(env!("CARGO_BIN_EXE_neuroport"))
        .args(["reproduce", "--scale", "quick", "--repeats", "1", "--backend", "all", "--out"])
        .arg(&out)
        .args(ids)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    // Without an OpenCL device, Fig. 6 (GPU devices only) has nothing to run on.
    let no_opencl = !err.contains("opencl:");
    let required = std::env::var("NEUROPORT_REQUIRE_OPENCL").map(|v| v == "1").unwrap_or(false);
    assert!(!(required && no_opencl), "NEUROPORT_REQUIRE_OPENCL=1 but no OpenCL device ran: {err}");
    assert!(o.status.success() || (no_opencl && err.contains("geodesic-f6")), "{err}");
    for id in ids {
        if id == "geodesic-f6" && no_opencl {
            continue;
        }
        for ext in ["csv", "md", "png"] {
            assert!(out.join(format!("{id}.{ext}")).exists(), "{id}.{ext} missing: {err}");
        }
        let rows = neuroport::repro::read_csv(&out.join(format!("{id}.csv"))).unwrap();
        assert!(!rows.is_empty());
        assert!(rows.iter().all(|r| r.ours.is_finite() && r.ours > 0.0), "{id}: {rows:?}");
        assert!(rows.iter().all(|r| r.published.is_none()), "{id}: published figures at quick scale");
    }
    let t3 = neuroport::repro::read_csv(&out.join("geodesic-t3.csv")).unwrap();
    assert!(t3.iter().any(|r| r.variant == "1 thread") && t3.iter().all(|r| r.speedup_vs_1thread.is_some()));
    assert_eq!(t3.iter().filter(|r| r.variant == "1 thread").count(), 4, "four seed counts");
    let md = std::fs::read_to_string(out.join("geodesic-t3.md")).unwrap();
    assert!(md.contains("standing in for the paper's brain") && md.contains("region"), "{md}");
    let f7 = neuroport::repro::read_csv(&out.join("geodesic-f7.csv")).unwrap();
    assert_eq!(f7.iter().map(|r| r.x.unwrap() as usize).collect::<Vec<_>>()[..3], [1, 2, 4]);
}
