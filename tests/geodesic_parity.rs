//! CPU reference against OpenCL (PoCL in CI), point by point, for both interpolations and both
//! integrators, on the smooth random field of `neuroport check`; and batches are independent:
//! tracing seeds in two batches gives the fibres of one.

mod geodesic_common;

use neuroport::geodesic::check::{compare, random_case, texture_tolerance, TOL_KERNEL};
use neuroport::geodesic::{kernels, trace_batched, Interp, Method, TraceParams};

#[test]
fn opencl_matches_the_cpu_reference_point_by_point() {
    let Some(cl) = geodesic_common::opencl() else { return };
    let (fields, seeds) = random_case(11, 300).unwrap();
    let mut cpu = kernels(&geodesic_common::cpu()).unwrap();
    cpu.upload(&fields).unwrap();
    let mut k = kernels(&cl).unwrap();
    k.upload(&fields).unwrap();
    for method in [Method::Rk2, Method::Euler] {
        let p = TraceParams { step: 0.1, max_steps: 250, method, interp: Interp::Kernel, ..Default::default() };
        let want = cpu.trace(&seeds, &p).unwrap();
        assert!(want.total_steps() > 10_000, "too few steps to compare: {}", want.total_steps());
        assert!(want.ends.iter().any(|e| e.target_step.is_some()) && want.ends.iter().any(|e| e.target_step.is_none()));
        for interp in [Interp::Kernel, Interp::Texture] {
            let got = k.trace(&seeds, &TraceParams { interp, ..p }).unwrap();
            let par = compare(&got, &want);
            let (tol, allowed) = if interp == Interp::Texture { texture_tolerance(&geodesic_common::cpu(), &fields, &seeds, &p, &want).unwrap() } else { (TOL_KERNEL, 0) };
            eprintln!("{method:?} {interp:?}: {par:?} (tolerance {tol:.1e}, {allowed} mismatches allowed)");
            assert!(par.max_dist < tol && par.mismatched <= allowed, "{method:?} {interp:?}: {par:?}");
            // PoCL filters with float weights: its texture path is as exact as the kernel path.
            assert!(par.max_dist < TOL_KERNEL && par.mismatched == 0, "{method:?} {interp:?}: {par:?}");
            assert!(par.max_cm_rel < 1e-3, "{method:?} {interp:?}: connectivity {par:?}");
            for i in 0..seeds.len() {
                assert_eq!(got.ends[i].target_step.is_some(), want.ends[i].target_step.is_some(), "fibre {i}: target reached on one side only");
            }
        }
    }
}

#[test]
fn batches_split_anywhere_give_the_same_fibres() {
    let (fields, seeds) = random_case(4, 90).unwrap();
    for dev in geodesic_common::devices() {
        let mut k = kernels(&dev).unwrap();
        k.upload(&fields).unwrap();
        let p = TraceParams { step: 0.2, max_steps: 100, interp: Interp::Kernel, ..Default::default() };
        let whole = k.trace(&seeds, &p).unwrap();
        let parts = trace_batched(k.as_mut(), &seeds, &p, 37, false).unwrap();
        assert_eq!(whole.ends, parts.ends, "{}", dev.label());
        assert_eq!(whole.offsets, parts.offsets, "{}", dev.label());
        assert_eq!(whole.points, parts.points, "{}", dev.label());
        assert_eq!(parts.fibre(89).len(), parts.ends[89].steps as usize + 1);
        // summaries alone agree with the recorded run
        let bare = k.trace(&seeds, &TraceParams { record: false, ..p }).unwrap();
        assert_eq!(bare.ends, whole.ends, "{}", dev.label());
        assert!(bare.points.is_empty());
    }
}
