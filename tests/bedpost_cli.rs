//! `neuroport bedpost` end to end on the sticks phantom of `neuroport synth` (FSL layout and
//! bvecs convention on disk): bedpostx's files with the right shapes, mean directions that
//! match the phantom's truth, byte-identical reruns with the same seed, and clean errors.

mod common;
use common::{run, s};
use neuroport::bedpost::Variant;
use neuroport::runtime::{BackendSpec, Inventory};
use neuroport::synth::sticks::angle_deg;
use neuroport::volume::read_nifti;
use std::path::Path;

const OUTPUTS: [&str; 21] = [
    "merged_th1samples", "merged_ph1samples", "merged_f1samples", "merged_th2samples", "merged_ph2samples", "merged_f2samples",
    "mean_f1samples", "mean_f2samples", "mean_dsamples", "mean_S0samples", "dyads1", "dyads2", "dyads1_dispersion",
    "dyads2_dispersion", "acceptance", "mean_th1samples", "mean_th2samples", "mean_ph1samples", "mean_ph2samples",
    "mean_fsumsamples", "nodif_brain_mask",
];

fn bedpost(data: &Path, out: &Path, backend: &str, seed: &str) -> (i32, String, String) {
    run(
        &[
            "bedpost", "--dwi", s(&data.join("dwi.nii.gz")), "--bvals", s(&data.join("bvals")), "--bvecs", s(&data.join("bvecs")),
            "--mask", s(&data.join("wm.nii.gz")), "--samples", "10", "--burnin", "200", "--thin", "2", "--seed", seed, "--out", s(out),
            "--backend", backend,
        ],
        &[],
    )
}

#[test]
fn bedpost_writes_fsl_outputs_that_match_the_truth_and_reruns_identically() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (code, _, err) = run(&["synth", "--model", "sticks", "--dims", "16,16,5", "--snr", "40", "--out", s(&data)], &[]);
    assert_eq!(code, 0, "{err}");
    let out = dir.path().join("bp");
    let (code, stdout, err) = bedpost(&data, &out, "cpu", "4");
    assert_eq!(code, 0, "{err}");
    assert_eq!(stdout.lines().count(), OUTPUTS.len(), "{stdout}");
    let dwi = read_nifti(&data.join("dwi.nii.gz")).unwrap();
    for name in OUTPUTS {
        let v = read_nifti(&out.join(format!("{name}.nii.gz"))).unwrap_or_else(|e| panic!("{name}: {e:#}"));
        assert_eq!(v.geom.dims, dwi.geom.dims, "{name}");
        let want = if name.starts_with("merged") { 10 } else if name.starts_with("dyads") && !name.ends_with("dispersion") { 3 } else { 1 };
        assert_eq!(v.nvol(), want, "{name}");
    }
    // mean directions against the phantom's truth (bvecs frame on both sides)
    let wm = read_nifti(&data.join("wm.nii.gz")).unwrap();
    let truth = read_nifti(&data.join("truth_dyads1.nii.gz")).unwrap();
    let tf2 = read_nifti(&data.join("truth_f2.nii.gz")).unwrap();
    let dy = read_nifti(&out.join("dyads1.nii.gz")).unwrap();
    let nv = dwi.nvox();
    let mut errs: Vec<f64> = (0..nv)
        .filter(|&v| wm.as_flat()[v] != 0.0 && tf2.as_flat()[v] == 0.0)
        .map(|v| {
            let t = [0, 1, 2].map(|c| truth.as_flat()[c * nv + v] as f64);
            let d = [0, 1, 2].map(|c| dy.as_flat()[c * nv + v] as f64);
            angle_deg(t, d)
        })
        .collect();
    assert!(errs.len() > 20, "{} one-fibre voxels", errs.len());
    errs.sort_by(|a, b| a.total_cmp(b));
    let med = errs[errs.len() / 2];
    assert!(med < 5.0, "median angular error of dyads1 on one-fibre voxels {med:.2} deg");
    // stderr here is a pipe, as in a batch job's log: the bar hid itself and the run said
    // nothing until its summary; now plain progress lines, without a bar's carriage returns or
    // escapes.
    assert!(err.lines().any(|l| l.starts_with("bedpost: ") && l.contains(" voxels (") && l.contains("%), ")), "{err}");
    assert!(!err.contains('\r') && !err.contains('\x1b'), "{err:?}");
    // same seed, same bytes
    let again = dir.path().join("bp2");
    let (code, _, err) = bedpost(&data, &again, "cpu", "4");
    assert_eq!(code, 0, "{err}");
    for name in OUTPUTS {
        let f = format!("{name}.nii.gz");
        assert!(std::fs::read(out.join(&f)).unwrap() == std::fs::read(again.join(&f)).unwrap(), "{f} differs between reruns");
    }
    let other = dir.path().join("bp3");
    assert_eq!(bedpost(&data, &other, "cpu", "5").0, 0);
    assert!(std::fs::read(out.join("merged_th1samples.nii.gz")).unwrap() != std::fs::read(other.join("merged_th1samples.nii.gz")).unwrap());
}

#[test]
fn bad_input_is_one_clean_error_line_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    assert_eq!(run(&["synth", "--model", "sticks", "--dims", "8,8,4", "--out", s(&data)], &[]).0, 0);
    let small = dir.path().join("small");
    assert_eq!(run(&["synth", "--model", "sticks", "--dims", "6,6,4", "--out", s(&small)], &[]).0, 0);
    let out = dir.path().join("bp");
    let base = |mask: &Path, extra: &[&str]| {
        let (dwi, bvals, bvecs) = (data.join("dwi.nii.gz"), data.join("bvals"), data.join("bvecs"));
        let mut a = vec!["bedpost", "--dwi", s(&dwi), "--bvals", s(&bvals), "--bvecs", s(&bvecs), "--mask", s(mask), "--out", s(&out)];
        a.extend_from_slice(extra);
        if !extra.contains(&"--backend") {
            a.extend_from_slice(&["--backend", "cpu"]);
        }
        run(&a, &[])
    };
    for (mask, extra, want) in [
        (small.join("mask.nii.gz"), vec![], "does not match the data grid"),
        (dir.path().join("nope.nii.gz"), vec![], "nope.nii.gz: no such file"),
        (data.join("mask.nii.gz"), vec!["--thin", "0"], "must be positive"),
        (data.join("mask.nii.gz"), vec!["--backend", "all"], "is for check, bench and reproduce"),
    ] {
        let (code, _, err) = base(&mask, &extra);
        assert_eq!(code, 1, "{err}");
        assert!(err.starts_with("error:") && err.contains(want) && err.lines().count() == 1, "{err}");
        assert!(!err.contains("panicked"));
    }
    assert!(!out.exists() || std::fs::read_dir(&out).unwrap().next().is_none(), "partial output left behind");
}

/// Samples that cannot fit in memory (`--samples` far too large for the mask) are an error line,
/// not an allocation failure that aborts with a backtrace.
#[test]
fn samples_beyond_memory_are_an_error_not_an_abort() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (code, _, err) = run(&["synth", "--model", "sticks", "--dims", "8,8,4", "--out", s(&data)], &[]);
    assert_eq!(code, 0, "{err}");
    let out = dir.path().join("bp");
    // 8 parameters x 1e9 samples x the mask's voxels: terabytes
    let (code, _, err) = run(
        &[
            "bedpost", "--backend", "cpu", "--dwi", s(&data.join("dwi.nii.gz")), "--bvals", s(&data.join("bvals")), "--bvecs", s(&data.join("bvecs")),
            "--mask", s(&data.join("mask.nii.gz")), "--samples", "1000000000", "--burnin", "0", "--thin", "1", "--out", s(&out),
        ],
        &[("RUST_BACKTRACE", "1")],
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.starts_with("error: ") && err.trim_end().lines().count() == 1 && err.contains("memory"), "{err}");
    assert!(!out.exists());
}

/// `--variant` on the cpu backend (one layout) used to be dropped without a word; it is a
/// warning now, and the run goes on with the cpu layout.
#[test]
fn variant_on_the_cpu_backend_is_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    assert_eq!(run(&["synth", "--model", "sticks", "--dims", "6,6,4", "--out", s(&data)], &[]).0, 0);
    let (code, _, err) = run(
        &[
            "bedpost", "--backend", "cpu", "--dwi", s(&data.join("dwi.nii.gz")), "--bvals", s(&data.join("bvals")), "--bvecs", s(&data.join("bvecs")),
            "--mask", s(&data.join("mask.nii.gz")), "--samples", "2", "--burnin", "2", "--thin", "1", "--variant", "warp", "--out", s(&dir.path().join("bp")),
        ],
        &[],
    );
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("warning: --variant warp applies to OpenCL/CUDA only; the cpu backend runs its one layout"), "{err}");
}

/// `--help` gave the default layout as "the device's fastest measured" while
/// `Variant::default_for` picks moments whatever the device (as docs/bedpost.md says): the help
/// names the layout the code picks.
#[test]
fn variant_help_names_the_default_layout() {
    let cpu = Inventory::discover(None).select_one(&BackendSpec::Cpu).unwrap();
    let v = Variant::default_for(cpu.info());
    let (code, out, err) = run(&["bedpost", "--help"], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&format!("(default: {}, `Variant::default_for`", v.name())), "{out}");
}
