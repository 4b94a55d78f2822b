//! `neuroport fim` end to end: outputs, the run summary, the .tck path, and bad input.

mod common;
use common::{run, s};
use neuroport::volume::{read_nifti, write_nifti, Geometry};
use std::path::Path;

const D: [usize; 3] = [20, 12, 10];

/// Tensors (mm^2/s) along x with a 10:1 ratio, a full-box mask, R1 at x = 2, R2 at x = 17.
fn inputs(dir: &Path, voxel: [f32; 3]) {
    let g = Geometry::synthetic(D, voxel);
    let n = g.nvox();
    let t = [1.7e-3f32, 0.0, 0.0, 0.17e-3, 0.0, 0.17e-3];
    let tensor: Vec<f32> = (0..6).flat_map(|c| std::iter::repeat_n(t[c], n)).collect();
    write_nifti(&dir.join("t.nii.gz"), &g, 6, &tensor).unwrap();
    write_nifti(&dir.join("wm.nii.gz"), &g, 1, &vec![1.0; n]).unwrap();
    let region = |x0: usize| -> Vec<f32> { (0..n).map(|v| (v % D[0] == x0 && (v / D[0]) % D[1] == 6 && v / (D[0] * D[1]) == 5) as u8 as f32).collect() };
    write_nifti(&dir.join("r1.nii.gz"), &g, 1, &region(2)).unwrap();
    write_nifti(&dir.join("r2.nii.gz"), &g, 1, &region(17)).unwrap();
}

#[test]
fn two_regions_write_costs_pathway_and_path() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    inputs(d, [1.0, 1.5, 2.0]);
    let out = d.join("res");
    let tck = d.join("path.tck");
    let j = |f: &str| d.join(f);
    let (code, stdout, stderr) = run(
        &["fim", "--tensor", s(&j("t.nii.gz")), "--mask", s(&j("wm.nii.gz")), "--source", s(&j("r1.nii.gz")), "--target", s(&j("r2.nii.gz")), "--out-tck", s(&tck), "--out", s(&out), "--backend", "cpu"],
        &[],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("E(gamma) = "), "{stderr}");
    // Solver and metric named as the command line spells them.
    assert!(stderr.contains("fim solver, sharpened metric"), "{stderr}");
    for f in ["res_cost1.nii.gz", "res_cost2.nii.gz", "res_total.nii.gz", "res_pathway.nii.gz"] {
        assert!(stdout.contains(f), "{f} not listed: {stdout}");
    }
    let u1 = read_nifti(&j("res_cost1.nii.gz")).unwrap();
    assert_eq!(u1.geom.dims, D);
    assert_eq!(u1.geom.voxel_size, [1.0, 1.5, 2.0]);
    let u1 = u1.into_flat();
    // Along the fibre axis the cost of 15 voxels of 1 mm is 15 / sqrt(S_xx), S = M^-1 of eq. 3:
    // for D = diag(l, l/10, l/10), |D|^(1/3) = l / 10^(2/3), S_xx = |D|^(1/3) (l / |D|^(1/3))^3.
    let l = 1.7e-3f64;
    let cr = l / 10f64.powf(2.0 / 3.0);
    let sxx = cr * (l / cr).powi(3);
    let at = |x: usize| x + D[0] * (6 + D[1] * 5);
    let want = 15.0 / sxx.sqrt();
    assert!(((u1[at(17)] as f64) - want).abs() < want * 1e-5, "{} vs {want}", u1[at(17)]);
    let pathway = read_nifti(&j("res_pathway.nii.gz")).unwrap().into_flat();
    for x in 2..=17 {
        assert_eq!(pathway[at(x)], 1.0, "voxel x = {x} on the straight path is outside the pathway");
    }
    let paths = neuroport::io::tck::read_tck(&tck).unwrap();
    assert_eq!(paths.len(), 1);
    let p = &paths[0];
    assert!((p[0][0] - 2.0).abs() < 0.51 && (p.last().unwrap()[0] - 17.0).abs() < 0.51, "path {:?} .. {:?}", p[0], p.last());
}

/// With --target two solves write log lines (stderr is a pipe here) that looked alike; each now
/// names its region, and a run from --source alone keeps the plain "fim:".
#[test]
fn each_solve_names_its_region_in_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    inputs(d, [1.0; 3]);
    let [t, wm, r1, r2, two, one] = ["t.nii.gz", "wm.nii.gz", "r1.nii.gz", "r2.nii.gz", "two", "one"].map(|f| d.join(f));
    let base = ["fim", "--tensor", s(&t), "--mask", s(&wm), "--source", s(&r1), "--backend", "cpu"];
    let (code, _, stderr) = run(&[&base[..], &["--target", s(&r2), "--out", s(&two)]].concat(), &[]);
    assert_eq!(code, 0, "{stderr}");
    let starting = |e: &str, w: &str| e.lines().filter(|l| l.starts_with(w)).count();
    assert!(starting(&stderr, "fim u1 (from --source): ") > 0 && starting(&stderr, "fim u2 (from --target): ") > 0, "{stderr}");
    assert_eq!(starting(&stderr, "fim: "), 0, "{stderr}");
    let (code, _, stderr) = run(&[&base[..], &["--out", s(&one)]].concat(), &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(starting(&stderr, "fim: ") > 0 && !stderr.contains("from --"), "{stderr}");
}

/// The largest alpha the data allow runs, and a tiny alpha gives the isotropic metric's costs
/// (S = |D|^(1/3) I: 15 voxels cost 15 / sqrt(|D|^(1/3))).
#[test]
fn alpha_near_its_limits_runs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    inputs(d, [1.0; 3]);
    let j = |f: &str| d.join(f);
    let l = 1.7e-3f64;
    let cr = l / 10f64.powf(2.0 / 3.0);
    let at = |x: usize| x + D[0] * (6 + D[1] * 5);
    for (alpha, name) in [("24", "big"), ("1e-30", "tiny")] {
        let out = d.join(name);
        let (code, _, stderr) = run(&["fim", "--tensor", s(&j("t.nii.gz")), "--mask", s(&j("wm.nii.gz")), "--source", s(&j("r1.nii.gz")), "--alpha", alpha, "--out", s(&out), "--backend", "cpu"], &[]);
        assert_eq!(code, 0, "--alpha {alpha}: {stderr}");
        let u1 = read_nifti(&d.join(format!("{name}_cost1.nii.gz"))).unwrap().into_flat();
        let u = u1[at(17)] as f64;
        assert!(u.is_finite() && u > 0.0, "--alpha {alpha}: cost {u}");
        if name == "tiny" {
            let want = 15.0 / cr.sqrt();
            assert!((u - want).abs() < want * 1e-5, "{u} vs {want}");
        }
    }
}

#[test]
fn solvers_agree_through_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    inputs(d, [1.0; 3]);
    let j = |f: &str| d.join(f);
    let mut got = Vec::new();
    for solver in ["fim", "sweep"] {
        let out = d.join(solver);
        let (code, _, stderr) = run(&["fim", "--tensor", s(&j("t.nii.gz")), "--mask", s(&j("wm.nii.gz")), "--source", s(&j("r1.nii.gz")), "--solver", solver, "--out", s(&out), "--backend", "cpu"], &[]);
        assert_eq!(code, 0, "{stderr}");
        got.push(read_nifti(&d.join(format!("{solver}_cost1.nii.gz"))).unwrap().into_flat());
    }
    // Same discrete fixed point; both stop when an update moves u by at most 1e-6 * u, and
    // carry f32 rounding along ~30 voxels: 3e-6 relative covers both.
    for (a, b) in got[0].iter().zip(&got[1]) {
        assert!((a - b).abs() <= 3e-6 * b.abs(), "{a} vs {b}");
    }
}

#[test]
fn bad_input_is_one_error_line_and_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    inputs(d, [1.0; 3]);
    let j = |f: &str| d.join(f).to_string_lossy().into_owned();
    // A region outside the mask, a 3-D file as the tensor, a missing file, a bad alpha.
    let g = Geometry::synthetic(D, [1.0; 3]);
    write_nifti(&d.join("empty.nii.gz"), &g, 1, &vec![0.0; g.nvox()]).unwrap();
    let small = Geometry::synthetic([4, 4, 4], [1.0; 3]);
    write_nifti(&d.join("small.nii.gz"), &small, 1, &[1.0; 64]).unwrap();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec!["--tensor".into(), j("t.nii.gz"), "--mask".into(), j("wm.nii.gz"), "--source".into(), j("empty.nii.gz")], "the region is empty"),
        (vec!["--tensor".into(), j("wm.nii.gz"), "--mask".into(), j("wm.nii.gz"), "--source".into(), j("r1.nii.gz")], "6 volumes"),
        (vec!["--tensor".into(), j("missing.nii.gz"), "--mask".into(), j("wm.nii.gz"), "--source".into(), j("r1.nii.gz")], "missing.nii.gz"),
        (vec!["--tensor".into(), j("t.nii.gz"), "--mask".into(), j("small.nii.gz"), "--source".into(), j("r1.nii.gz")], "does not match"),
        (vec!["--tensor".into(), j("t.nii.gz"), "--mask".into(), j("wm.nii.gz"), "--source".into(), j("r1.nii.gz"), "--alpha=-1".into()], "--alpha"),
        // S = M^-1 of eq. 3 leaves f32's range: every cost came out 0 with exit 0.
        (vec!["--tensor".into(), j("t.nii.gz"), "--mask".into(), j("wm.nii.gz"), "--source".into(), j("r1.nii.gz"), "--alpha=1e30".into()], "--alpha 1e30: the speed matrix S"),
        (vec!["--tensor".into(), j("t.nii.gz"), "--mask".into(), j("wm.nii.gz"), "--source".into(), j("r1.nii.gz"), "--alpha=30".into()], "--alpha 30: the speed matrix S = M^-1 of eq. 3 leaves f32's range at voxel (0,0,0); the largest --alpha these tensors allow is 24."),
        (vec!["--tensor".into(), j("t.nii.gz"), "--mask".into(), j("wm.nii.gz"), "--source".into(), j("r1.nii.gz"), "--target".into(), j("r2.nii.gz"), "--out-tck".into(), j("p.trk")], ".tck"),
    ];
    for (args, want) in cases {
        let mut a = vec!["fim".to_string()];
        a.extend(args);
        a.extend(["--out".into(), j("bad"), "--backend".into(), "cpu".into()]);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let (code, _, stderr) = run(&a, &[]);
        assert_ne!(code, 0, "{a:?} succeeded");
        let lines: Vec<&str> = stderr.lines().collect();
        assert!(lines.len() == 1 && lines[0].starts_with("error: ") && lines[0].contains(want), "{a:?}: {stderr}");
        assert!(!d.join("bad_cost1.nii.gz").exists());
        assert!(!std::fs::read_dir(d).unwrap().any(|e| e.unwrap().file_name().to_string_lossy().contains(".part-")));
    }
}

/// A region inside the mask whose tensors are all NaN (taken out of the mask, with a warning)
/// was refused as having "no voxel inside the mask", which it had.
#[test]
fn a_region_whose_tensors_are_nan_is_not_said_to_lie_outside_the_mask() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    inputs(d, [1.0; 3]);
    let t = read_nifti(&d.join("t.nii.gz")).unwrap();
    let r1 = read_nifti(&d.join("r1.nii.gz")).unwrap();
    let n = t.geom.nvox();
    let mut v = t.as_flat().to_vec();
    (0..n).filter(|&i| r1.as_flat()[i] != 0.0).for_each(|i| v[i] = f32::NAN);
    let nan = d.join("t_nan.nii.gz");
    write_nifti(&nan, &t.geom, 6, &v).unwrap();
    let (out, wm, r1p) = (d.join("bad"), d.join("wm.nii.gz"), d.join("r1.nii.gz"));
    let (code, _, err) = run(&["fim", "--backend", "cpu", "--tensor", s(&nan), "--mask", s(&wm), "--source", s(&r1p), "--out", s(&out)], &[]);
    assert_ne!(code, 0, "{err}");
    let last = err.lines().last().unwrap();
    assert!(last.starts_with(&format!("error: {}: ", s(&r1p))) && last.contains("was taken out of it") && last.contains(s(&nan)) && !last.contains("no voxel inside"), "{err}");
    assert!(!d.join("bad_cost1.nii.gz").exists());
}

/// The README's connectivity example on built-in data: synth's two end regions are joined
/// through the phantom's white matter, the pathway holds the path's voxels, and the .tck has the
/// path (first and last points in the two regions).
#[test]
fn synth_end_regions_connect_through_the_white_matter() {
    let dir = tempfile::tempdir().unwrap();
    let j = |f: &str| dir.path().join(f);
    let (code, _, err) = run(&["synth", "--out", s(&j("demo"))], &[]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = run(&["dti", "--backend", "cpu", "--dwi", s(&j("demo/dwi.nii.gz")), "--bvals", s(&j("demo/bvals")), "--bvecs", s(&j("demo/bvecs")), "--mask", s(&j("demo/mask.nii.gz")), "--out", s(&j("demo/dti"))], &[]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = run(
        &["fim", "--backend", "cpu", "--tensor", s(&j("demo/dti_tensor.nii.gz")), "--mask", s(&j("demo/wm.nii.gz")), "--source", s(&j("demo/roi1.nii.gz")), "--target", s(&j("demo/roi2.nii.gz")), "--out-tck", s(&j("demo/conn_path.tck")), "--out", s(&j("demo/conn"))],
        &[],
    );
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("E(gamma) = ") && err.contains("pathway (eps = 0.05)"), "{err}");
    let pathway = read_nifti(&j("demo/conn_pathway.nii.gz")).unwrap();
    assert!(pathway.as_flat().iter().filter(|&&x| x == 1.0).count() >= 2, "a pathway of more than the minimiser");
    assert!(std::fs::metadata(j("demo/conn_path.tck")).unwrap().len() > 0);
}

/// `--out res/` names a folder, as for dti and register: res/fim_cost1.nii.gz ..., not
/// res/_cost1.nii.gz (fim wrote `_cost1`, `_cost2`, `_total`, `_pathway` into the folder).
#[test]
fn out_with_a_trailing_slash_is_a_folder() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    inputs(d, [1.0; 3]);
    let j = |f: &str| d.join(f);
    let out = format!("{}/", d.join("res").display());
    let (code, stdout, stderr) = run(
        &["fim", "--tensor", s(&j("t.nii.gz")), "--mask", s(&j("wm.nii.gz")), "--source", s(&j("r1.nii.gz")), "--target", s(&j("r2.nii.gz")), "--out", &out, "--backend", "cpu"],
        &[],
    );
    assert_eq!(code, 0, "{stderr}");
    let want = ["fim_cost1.nii.gz", "fim_cost2.nii.gz", "fim_pathway.nii.gz", "fim_total.nii.gz"];
    assert_eq!(common::entries(&d.join("res")), want, "{stdout}");
    for f in want {
        assert!(stdout.contains(&*d.join("res").join(f).to_string_lossy()), "{f} not listed: {stdout}");
    }
}

/// A target that overlaps the source: E(gamma) is 0 at every shared voxel and the pathway
/// degenerates to one of them, which the run reported as a result without a word. It still
/// runs (the regions may be meant to touch), with a warning counting the shared voxels.
#[test]
fn overlapping_regions_are_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    inputs(d, [1.0; 3]);
    let j = |f: &str| d.join(f);
    let (code, _, stderr) = run(&["fim", "--tensor", s(&j("t.nii.gz")), "--mask", s(&j("wm.nii.gz")), "--source", s(&j("r1.nii.gz")), "--target", s(&j("r1.nii.gz")), "--out", s(&j("o")), "--backend", "cpu"], &[]);
    assert_eq!(code, 0, "{stderr}");
    let warnings: Vec<&str> = stderr.lines().filter(|l| l.starts_with("warning:")).collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(warnings[0].contains("r1.nii.gz") && warnings[0].contains("1 voxel of the mask") && warnings[0].contains("E(gamma) is 0"), "{stderr}");
    assert!(stderr.contains("E(gamma) = 0.000000"), "{stderr}");
    let (_, _, stderr) = run(&["fim", "--tensor", s(&j("t.nii.gz")), "--mask", s(&j("wm.nii.gz")), "--source", s(&j("r1.nii.gz")), "--target", s(&j("r2.nii.gz")), "--out", s(&j("p")), "--backend", "cpu"], &[]);
    assert!(!stderr.contains("warning:"), "{stderr}");
}

/// In a log the GPU's block FIM and the sweeps said nothing until their summary, where the CPU
/// node FIM writes the voxels reached; they now write the iteration and the active list (the
/// first line at once, the next after minutes), and the node FIM only its own lines.
#[test]
fn gpu_and_sweep_solves_report_progress_in_a_log() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    inputs(d, [1.0; 3]);
    let j = |f: &str| d.join(f);
    let mut cases = vec![(["--solver", "sweep", "--backend", "cpu"], Some(" active nodes (sweep), ")), (["--solver", "fim", "--backend", "cpu"], None)];
    if common::opencl().is_some() {
        cases.push((["--solver", "fim", "--backend", "opencl"], Some(" active blocks, ")));
    }
    for (extra, unit) in cases {
        let out = j(&extra.join("_"));
        let (code, _, err) = run(&[&["fim", "--tensor", s(&j("t.nii.gz")), "--mask", s(&j("wm.nii.gz")), "--source", s(&j("r1.nii.gz")), "--out", s(&out)][..], &extra].concat(), &[]);
        assert_eq!(code, 0, "{extra:?}: {err}");
        let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("fim: iteration ")).collect();
        match unit {
            Some(unit) => assert!(!lines.is_empty() && lines.iter().all(|l| l.contains(unit) && l.ends_with(" elapsed")), "{extra:?}: {err}"),
            None => assert!(lines.is_empty() && err.contains(" mask voxels reached ("), "{extra:?}: {err}"),
        }
        assert!(!err.contains('\r') && !err.contains('\x1b'), "{extra:?}: {err:?}");
    }
}

/// The sweeping baselines run on the CPU whatever --backend says: the summary said `cpu` and
/// nothing told the user their --backend opencl went unused. One warning line now; none for
/// --backend cpu or for fim.
#[test]
fn sweeps_warn_when_the_backend_goes_unused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    inputs(d, [1.0; 3]);
    let j = |f: &str| d.join(f);
    let fim = |solver: &str, backend: &str, out: &str| run(&["fim", "--tensor", s(&j("t.nii.gz")), "--mask", s(&j("wm.nii.gz")), "--source", s(&j("r1.nii.gz")), "--solver", solver, "--out", s(&j(out)), "--backend", backend], &[]);
    for (solver, backend) in [("sweep", "opencl"), ("sweep-lf", "cuda")] {
        let (code, _, stderr) = fim(solver, backend, &format!("{solver}_{backend}"));
        assert_eq!(code, 0, "{stderr}");
        let warnings: Vec<&str> = stderr.lines().filter(|l| l.starts_with("warning:")).collect();
        assert_eq!(warnings.len(), 1, "{stderr}");
        assert!(warnings[0].contains(&format!("--solver {solver} ")) && warnings[0].contains(&format!("--backend {backend}")), "{stderr}");
        assert!(stderr.contains(&format!("{solver} solver")) && !stderr.contains("panicked"), "{stderr}");
    }
    let (code, _, stderr) = fim("sweep", "cpu", "quiet");
    assert_eq!(code, 0, "{stderr}");
    assert!(!stderr.contains("warning:"), "{stderr}");
}

/// Options the run does not read were accepted and dropped: --eps without --target (no pathway
/// is made), --alpha with --metric inverse, --local and --validity with --solver sweep-lf. --eps
/// is refused, as --out-tck without --target is; the others are warned about.
#[test]
fn options_the_run_does_not_read_are_said() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    inputs(d, [1.0; 3]);
    let j = |f: &str| d.join(f);
    let fim = |extra: &[&str], out: &str| run(&[&["--backend", "cpu", "fim", "--tensor", s(&j("t.nii.gz")), "--mask", s(&j("wm.nii.gz")), "--source", s(&j("r1.nii.gz")), "--out", s(&j(out))][..], extra].concat(), &[]);
    let (code, _, err) = fim(&["--eps", "0.1"], "eps/");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--target") && !j("eps").exists(), "{err}");
    for (extra, want) in [
        (&["--metric", "inverse", "--alpha", "2"][..], Some("warning: --alpha 2 applies to --metric sharpened; --metric inverse (D^-1) has no sharpening power")),
        (&["--solver", "sweep-lf", "--validity", "tsai"], Some("warning: --validity tsai applies to the Godunov solvers (fim, sweep); --solver sweep-lf (Lax-Friedrichs) has none")),
        (&["--solver", "sweep", "--validity", "tsai", "--local", "paper", "--alpha", "2"], None),
        (&["--target", s(&j("r2.nii.gz")), "--eps", "0.1"], None),
    ] {
        let (code, _, err) = fim(extra, &format!("o{}/", extra.join("_").replace('/', "")));
        assert_eq!(code, 0, "{extra:?}: {err}");
        let warnings: Vec<&str> = err.lines().filter(|l| l.starts_with("warning:")).collect();
        assert_eq!(warnings, want.into_iter().collect::<Vec<_>>(), "{extra:?}: {err}");
    }
}

/// In a batch job's log (stderr not a terminal) the spinner hid itself and a CPU solve said
/// nothing until its summary; it now writes plain lines of the mask voxels reached.
#[test]
fn a_solve_reports_progress_in_a_log() {
    let dir = tempfile::tempdir().unwrap();
    inputs(dir.path(), [1.0; 3]);
    let j = |n: &str| dir.path().join(n);
    let (code, _, err) = run(&["fim", "--tensor", s(&j("t.nii.gz")), "--mask", s(&j("wm.nii.gz")), "--source", s(&j("r1.nii.gz")), "--out", s(&j("o")), "--backend", "cpu"], &[]);
    assert_eq!(code, 0, "{err}");
    // 20x12x10 voxels, as the summary counts them.
    let line = err.lines().find(|l| l.starts_with("fim: ")).unwrap_or_else(|| panic!("{err}"));
    assert!(line.contains("/2400 mask voxels reached (") && line.contains(" active nodes, ") && err.contains("reached 2400 of 2400 mask voxels"), "{err}");
    assert!(!err.contains('\r') && !err.contains('\x1b'), "{err:?}");
}
