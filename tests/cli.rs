//! The command line end to end: `devices` with no OpenCL runtime and no CUDA, `check --backend
//! all`, `synth` + `dti` determinism, and the global options.

mod common;
use common::*;
use neuroport::volume::read_nifti;
use std::path::Path;

/// An environment with no OpenCL platform (the ICD loader looks in an empty place) and no NVRTC
/// (LD_LIBRARY_PATH without it; this machine has no libcuda either).
fn bare_env() -> Vec<(&'static str, &'static str)> {
    vec![("OCL_ICD_VENDORS", "/nonexistent"), ("OPENCL_VENDOR_PATH", "/nonexistent"), ("LD_LIBRARY_PATH", "/nonexistent"), ("RUST_BACKTRACE", "1")]
}

#[test]
fn devices_without_opencl_or_cuda_lists_the_cpu() {
    let (code, out, err) = run(&["devices"], &bare_env());
    assert_eq!(code, 0, "{out}{err}");
    let first = out.lines().nth(1).unwrap_or("");
    assert!(first.starts_with("cpu "), "the cpu row: {out}");
    assert!(!out.contains("opencl:"), "no OpenCL device: {out}");
    assert!(!out.contains("cuda:"), "no CUDA device: {out}");
    assert!(out.contains("CUDA unavailable: "), "{out}");
    assert!(out.contains("OpenCL unavailable: ") || !out.contains("opencl"), "{out}");
    assert!(!err.contains("panicked"), "{err}");

    let (code, out, _) = run(&["devices", "--json"], &bare_env());
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).expect("devices --json prints JSON");
    let devs = v["devices"].as_array().unwrap();
    assert_eq!(devs.len(), 1);
    assert_eq!(devs[0]["spec"], "cpu");
    assert!(v["notes"].as_array().unwrap().iter().any(|n| n.as_str().unwrap().starts_with("CUDA unavailable: ")));

    // `check --backend all` says which backends it could not try instead of passing silently
    let (code, out, err) = run(&["check", "--backend", "all", "--seed", "1"], &bare_env());
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("OpenCL unavailable: ") && out.contains("CUDA unavailable: "), "{out}");

    // asking for a backend that is not there: one clean line
    for (args, says) in [
        (vec!["check", "--backend", "cuda"], "no CUDA device cuda:0"),
        (vec!["--backend", "cuda:1", "check"], "no CUDA device cuda:1"),
        (vec!["check", "--backend", "opencl"], "no OpenCL device"),
        (vec!["check", "--backend", "opencl:3:0"], "no OpenCL device opencl:3:0"),
    ] {
        let (code, out, err) = run(&args, &bare_env());
        assert_ne!(code, 0, "{args:?}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("error: ") && err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(out.is_empty(), "{out}");
    }
    // ...while auto falls back to the CPU
    let (code, out, err) = run(&["check", "--backend", "auto", "--seed", "5"], &bare_env());
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("cpu") && out.contains("pass") && !out.contains("FAIL"), "{out}");
}

#[test]
fn unknown_backend_and_bad_options_are_clean_errors() {
    let (code, _, err) = run(&["devices", "--backend", "gpu"], &[]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown backend 'gpu'"), "{err}");
    assert!(!err.contains("panicked"));
    let (code, _, err) = run(&["synth", "--out", "/nonexistent/x", "--dims", "4,4"], &[]);
    assert_eq!(code, 2);
    assert!(err.contains("--dims must be three numbers"), "{err}");
    let (code, _, err) = run(&["dti", "--dwi", "x.nii.gz", "--bvals", "b", "--bvecs", "c", "--out", "o", "--backend", "all"], &[]);
    assert_eq!(code, 1);
    assert!(err.starts_with("error: --backend all is for check, bench and reproduce"), "{err}");
    // --threads 0 ran one thread without a word; 10^5 made threads for minutes, then died of
    // their stacks with a backtrace. Refused by the parser, before any work.
    for n in ["0", "100000", "-3", "two"] {
        let (code, _, err) = run(&["dti", "--dwi", "x.nii.gz", "--bvals", "b", "--bvecs", "c", "--out", "o", "--backend", "cpu", "--threads", n], &[]);
        assert_eq!(code, 2, "{n}: {err}");
        assert!(err.starts_with("error: invalid value") && err.contains("--threads") && err.contains("must be a whole number from 1 to"), "{n}: {err}");
        assert!(!err.contains("panicked"), "{n}: {err}");
    }
}

#[test]
fn check_all_passes_on_this_machine() {
    let (code, out, err) = run(&["check", "--backend", "all", "--seed", "7"], &[]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.starts_with("seed 7"), "{out}");
    assert!(!out.contains("FAIL"), "{out}");
    // Where OpenCL is present (required in CI) every method's kernels were checked on it, not
    // only some: each family below names rows of one method's conformance check.
    let opencl: Vec<&str> = out.lines().filter(|l| l.starts_with("opencl:")).collect();
    let required = std::env::var("NEUROPORT_REQUIRE_OPENCL").map(|v| v == "1").unwrap_or(false);
    assert!(!required || !opencl.is_empty(), "no OpenCL rows: {out}");
    if !opencl.is_empty() {
        let families = [
            "layer copies", "layer alloc poison", "layer_axpy", "dti_fit", "dti_scalars", "metric_inverse+metric_derivs", "metric_sharpen", "geodesic_trace_kernel_rk2",
            "geodesic_trace_kernel_euler", "bedpost_rng (uniforms)", "bedpost_energy", "bedpost_chain[naive]", "bedpost_chain[warp]", "probtrack[device compaction]",
            "register ncc in-kernel", "register mi in-kernel", "register ncc batch of 3", "fim_block[device list]", "fim_block[004 local]",
            "fim_block[004 local, fixed point]", "fim_block[same bits]",
        ];
        for f in families {
            assert!(opencl.iter().any(|l| l.contains(&format!(" {f}"))), "no OpenCL row for {f}: {out}");
        }
        assert!(opencl.iter().all(|l| l.contains(" pass ")), "{out}");
        assert!(opencl.len() >= families.len(), "{out}");
    }
    // the CPU rows compare with float64 references, not only finiteness
    assert!(out.contains("dti_scalars (vs f64 invariants)") && out.contains("(vs exact lines)"), "{out}");
    let (code, out, _) = run(&["check", "--backend", "cpu", "--seed", "7", "--json"], &[]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["seed"], 7);
    assert!(v["rows"].as_array().unwrap().iter().all(|r| r["pass"] == true));
}

fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    entries(dir).into_iter().map(|n| (n.clone(), std::fs::read(dir.join(&n)).unwrap())).collect()
}

#[test]
fn synth_writes_the_dataset_and_is_deterministic() {
    let tmp = tempfile::tempdir().unwrap();
    let synth = |dir: &str, seed: &str, model: &str| {
        let out = tmp.path().join(dir);
        let (code, stdout, err) = run(&["synth", "--out", s(&out), "--dims", "16,14,6", "--snr", "25", "--seed", seed, "--model", model], &[]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(stdout.lines().count(), entries(&out).len(), "one line per file written");
        out
    };
    let a = synth("a", "3", "tensor");
    assert_eq!(entries(&a), ["bvals", "bvecs", "dwi.nii.gz", "mask.nii.gz", "roi1.nii.gz", "roi2.nii.gz", "truth_V1.nii.gz", "truth_tensor.nii.gz", "wm.nii.gz"]);
    let b = synth("b", "3", "tensor");
    let c = synth("c", "4", "tensor");
    assert_eq!(files(&a), files(&b), "same seed, same bytes");
    assert_ne!(std::fs::read(a.join("dwi.nii.gz")).unwrap(), std::fs::read(c.join("dwi.nii.gz")).unwrap());
    let dwi = read_nifti(&a.join("dwi.nii.gz")).unwrap();
    assert_eq!((dwi.geom.dims, dwi.nvol()), ([16, 14, 6], 3 + 32));
    let t = read_nifti(&a.join("truth_tensor.nii.gz")).unwrap();
    assert_eq!(t.nvol(), 6);

    let st = synth("sticks", "3", "sticks");
    assert_eq!(
        entries(&st),
        ["bvals", "bvecs", "dwi.nii.gz", "mask.nii.gz", "roi1.nii.gz", "roi2.nii.gz", "truth_S0.nii.gz", "truth_d.nii.gz", "truth_dyads1.nii.gz", "truth_dyads2.nii.gz", "truth_f1.nii.gz", "truth_f2.nii.gz", "wm.nii.gz"]
    );
    assert_eq!(files(&st), files(&synth("sticks2", "3", "sticks")));
    assert_eq!(read_nifti(&st.join("dwi.nii.gz")).unwrap().nvol(), 3 + 2 * 32);
}

#[test]
fn dti_is_deterministic_across_runs_and_thread_counts() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("data");
    let (code, _, err) = run(&["synth", "--out", s(&d), "--dims", "20,20,8", "--seed", "9"], &[]);
    assert_eq!(code, 0, "{err}");
    let dti = |out: &str, extra: &[&str]| {
        let o = tmp.path().join(out);
        let p: Vec<String> = ["dwi.nii.gz", "bvals", "bvecs", "mask.nii.gz"].iter().map(|n| s(&d.join(n)).to_string()).collect();
        let prefix = s(&o.join("dti")).to_string();
        let mut args = vec!["dti", "--dwi", &p[0], "--bvals", &p[1], "--bvecs", &p[2], "--mask", &p[3], "--out", &prefix];
        args.extend_from_slice(extra);
        let (code, stdout, err) = run(&args, &[]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(
            stdout.lines().map(|l| Path::new(l).file_name().unwrap().to_string_lossy().into_owned()).collect::<Vec<_>>(),
            ["tensor", "FA", "MD", "MO", "V1", "V2", "V3", "L1", "L2", "L3", "RGB", "S0"].map(|m| format!("dti_{m}.nii.gz"))
        );
        files(&o)
    };
    let a = dti("a", &["--backend", "cpu"]);
    assert_eq!(a, dti("b", &["--backend", "cpu"]), "same inputs, same bytes");
    assert_eq!(a, dti("c", &["--backend", "cpu", "--threads", "1"]), "thread count does not change the result");
    if std::env::var("NEUROPORT_REQUIRE_OPENCL").as_deref() == Ok("1") || neuroport::runtime::opencl::probe().map(|v| !v.is_empty()).unwrap_or(false) {
        let x = dti("x", &["--backend", "opencl"]);
        assert_eq!(x, dti("y", &["--backend", "opencl"]), "OpenCL: same inputs, same bytes");
        // and the same maps as the CPU: the float32 fit agrees with the float64 one to ~1e-5
        // relative on the tensor (the check's dti_fit row), so FA (in [0, 1]) within 1e-3 and
        // MD within 1e-3 relative leave 10x margin and still catch a wrong fit.
        for (m, rel) in [("FA", false), ("MD", true)] {
            let c = read_nifti(&tmp.path().join(format!("a/dti_{m}.nii.gz"))).unwrap();
            let o = read_nifti(&tmp.path().join(format!("x/dti_{m}.nii.gz"))).unwrap();
            let scale = if rel { c.as_flat().iter().fold(0f32, |a, &b| a.max(b.abs())) } else { 1.0 };
            let worst = c.as_flat().iter().zip(o.as_flat()).map(|(a, b)| ((a - b).abs() / scale, a, b)).fold((0f32, &0f32, &0f32), |w, e| if !(e.0 <= w.0) { e } else { w });
            assert!(worst.0 < 1e-3, "{m}: OpenCL {} vs CPU {}", worst.2, worst.1);
        }
    }
    // the outputs carry the input's geometry and the FSL dtifit layout
    let fa = read_nifti(&tmp.path().join("a/dti_FA.nii.gz")).unwrap();
    let dwi = read_nifti(&d.join("dwi.nii.gz")).unwrap();
    assert_eq!(fa.geom.affine, dwi.geom.affine);
    assert_eq!(fa.nvol(), 1);
    assert_eq!(read_nifti(&tmp.path().join("a/dti_tensor.nii.gz")).unwrap().nvol(), 6);
    assert_eq!(read_nifti(&tmp.path().join("a/dti_V1.nii.gz")).unwrap().nvol(), 3);
    // and compare with the written truth: the tensor's frame is the bvecs' frame
    let t = read_nifti(&tmp.path().join("a/dti_tensor.nii.gz")).unwrap();
    let truth = read_nifti(&d.join("truth_tensor.nii.gz")).unwrap();
    let wm = read_nifti(&d.join("wm.nii.gz")).unwrap();
    let n = t.nvox();
    let mut sign_agree = 0;
    let mut counted = 0;
    for v in (0..n).filter(|&v| wm.as_flat()[v] != 0.0) {
        for e in [1usize, 2] {
            let (a, b) = (t.frame(e)[v], truth.frame(e)[v]);
            if b.abs() > 2e-4 {
                counted += 1;
                sign_agree += (a.signum() == b.signum()) as usize;
            }
        }
    }
    assert!(counted > 50 && sign_agree as f64 > 0.95 * counted as f64, "Dxy/Dxz signs agree with the truth in {sign_agree} of {counted}");
}

/// dti said nothing until its summary, through a read and a fit of half a minute each on an
/// HCP-size DWI; in a log (stderr a pipe, as here) it now writes bedpost's plain lines as the
/// CPU fit's blocks of voxels are done, counting the mask's voxels.
#[test]
fn dti_reports_its_fit_in_a_log() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("data");
    assert_eq!(run(&["synth", "--out", s(&d), "--dims", "20,20,8"], &[]).0, 0);
    let inside = read_nifti(&d.join("mask.nii.gz")).unwrap().as_flat().iter().filter(|&&m| m != 0.0).count();
    let p = |n: &str| s(&d.join(n)).to_string();
    let o = s(&tmp.path().join("o").join("dti")).to_string();
    let (code, _, err) = run(&["dti", "--dwi", &p("dwi.nii.gz"), "--bvals", &p("bvals"), "--bvecs", &p("bvecs"), "--mask", &p("mask.nii.gz"), "--out", &o, "--backend", "cpu"], &[]);
    assert_eq!(code, 0, "{err}");
    // 3200 voxels in blocks of 256: the first tenth of the mask is passed before its end.
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("dti: ")).collect();
    assert!(!lines.is_empty(), "{err}");
    for l in &lines {
        let (done, rest) = l["dti: ".len()..].split_once('/').unwrap();
        let done: usize = done.parse().unwrap();
        assert!(rest.starts_with(&format!("{inside} voxels (")) && (inside / 10..inside).contains(&done), "{l}");
    }
    assert!(!err.contains('\r') && !err.contains('\x1b'), "{err:?}");
}

#[test]
fn bench_dti_reports_rates_per_stage() {
    let (code, out, err) = run(&["bench", "dti", "--voxels", "4096", "--repeats", "1", "--backend", "cpu", "--threads", "2", "--json"], &[]);
    assert_eq!(code, 0, "{err}");
    let rows: Vec<serde_json::Value> = serde_json::from_str(&out).expect("JSON rows");
    let stages: Vec<&str> = rows.iter().map(|r| r["stage"].as_str().unwrap()).collect();
    assert_eq!(stages, ["fit", "scalars", "metric", "sharpen", "fit+metric"]);
    for r in &rows {
        let vps = r["voxels_per_s"].as_f64().unwrap();
        let per_core = r["voxels_per_s_per_core"].as_f64().unwrap();
        assert!(vps.is_finite() && vps > 0.0, "{r}");
        assert!((per_core * 2.0 - vps).abs() < 1e-6 * vps, "per core = rate / threads: {r}");
        assert!((r["ms_per_mvox"].as_f64().unwrap() - 1e9 / vps).abs() < 1e-6 * 1e9 / vps, "{r}");
    }
}

#[test]
fn bench_geodesic_says_what_it_is_doing() {
    // A full run takes minutes on CPUs: each device and interpolation is announced on stderr
    // before it runs and its rate after, while stdout keeps the table only.
    let (code, out, err) = run(&["bench", "geodesic", "--fibres", "64", "--steps", "20", "--dims", "64,16,16", "--repeats", "1", "--backend", "cpu"], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("bench geodesic on cpu") && err.contains("64 fibres x 20 steps") && err.contains("steps/s ("), "{err}");
    assert!(out.starts_with("geodesic rk2 steps/s") && !out.contains("bench geodesic on"), "{out}");
    // The table says the native CPU runs no warm-up (geodesic::bench::measure); its progress
    // line said "after a warm-up".
    assert!(out.contains("(none on the native CPU)") && err.contains("1 timed runs (no warm-up on the native CPU)") && !err.contains("after a warm-up"), "{err}");
}

/// `synth` refuses an existing output before building the phantom, as every command refuses
/// before its work: it built the whole phantom (5.7 s for 200x200x100 on 2 cores) first. Each
/// model's own files count (the truth volumes differ).
#[test]
fn synth_refuses_existing_outputs_before_building() {
    let tmp = tempfile::tempdir().unwrap();
    for (model, name) in [("tensor", "dwi.nii.gz"), ("tensor", "roi2.nii.gz"), ("tensor", "truth_V1.nii.gz"), ("sticks", "truth_S0.nii.gz"), ("sticks", "bvecs")] {
        let out = tmp.path().join(format!("{model}-{name}"));
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(out.join(name), b"mine").unwrap();
        // seconds to build, so only a refusal before building ends at once
        let t = std::time::Instant::now();
        let (code, _, err) = run(&["synth", "--model", model, "--out", s(&out), "--dims", "200,200,100"], &[]);
        assert_eq!(code, 1, "{model} {name}: {err}");
        assert_eq!(err.trim(), format!("error: {} already exists (use --force to overwrite)", out.join(name).display()));
        assert!(t.elapsed() < std::time::Duration::from_secs(2), "{model} {name}: refused after {:?}", t.elapsed());
        assert_eq!(entries(&out), vec![name.to_string()]);
    }
    // The names checked are the names written.
    for (model, m) in [("tensor", neuroport::synth::dataset::Model::Tensor), ("sticks", neuroport::synth::dataset::Model::Sticks)] {
        let out = tmp.path().join(format!("ok-{model}"));
        assert_eq!(run(&["synth", "--model", model, "--out", s(&out), "--dims", "8,8,4"], &[]).0, 0);
        let mut want: Vec<String> = neuroport::synth::dataset::file_names(m, &out).iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
        want.sort();
        assert_eq!(entries(&out), want, "{model}");
    }
}

/// A phantom larger than the memory available is refused before anything is built or written:
/// 64^3 voxels x 2000003 volumes (2 TB of DWI) ended in an allocation abort.
#[test]
fn synth_refuses_a_phantom_larger_than_memory() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("big");
    let (code, _, err) = run(&["synth", "--out", s(&out), "--dims", "64,64,64", "--dirs", "2000000"], &[]);
    assert_eq!(code, 1, "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert!(lines.len() == 1 && lines[0].starts_with("error: a 64x64x64 phantom with 2000003 volumes needs about 1.9 TiB of memory") && lines[0].contains("available"), "{err}");
    assert!(!out.exists());
}

/// `bench geodesic` refuses sizes that measure nothing, as the other benches do: --fibres 0 or
/// --cpu-fibres 0 printed a table row of NaN steps/s, --steps 0 a rate of 0, --step 0 a rate of
/// fibres that never move, --repeats 0 a "median of 0", all with exit 0.
#[test]
fn bench_geodesic_refuses_sizes_that_measure_nothing() {
    for bad in [&["--fibres", "0"][..], &["--cpu-fibres", "0"], &["--steps", "0"], &["--repeats", "0"], &["--step", "0"], &["--step", "nan"]] {
        let mut a = vec!["bench", "geodesic", "--backend", "cpu", "--dims", "64,16,16"];
        for (flag, v) in [("--fibres", "64"), ("--steps", "20"), ("--repeats", "1")] {
            if flag != bad[0] {
                a.extend([flag, v]);
            }
        }
        a.extend_from_slice(bad);
        let (code, out, err) = run(&a, &[]);
        assert_eq!(code, 1, "{bad:?}: {out}{err}");
        assert!(err.starts_with("error:") && err.trim().lines().count() == 1 && err.contains(bad[0]), "{bad:?}: {err}");
    }
}

/// `synth --dirs 0`, `--dirs 3` or `--b0 0` (one shell) wrote a phantom `dti` then refused;
/// synth refuses it with dti's own design check and the minimum, writing nothing. Two shells
/// without b=0 determine a tensor and are still written.
#[test]
fn synth_refuses_a_phantom_dti_cannot_fit() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("p");
    for bad in [&["--dirs", "0"][..], &["--dirs", "3"], &["--dirs", "5"], &["--b0", "0"]] {
        let mut a = vec!["synth", "--out", s(&out), "--dims", "6,6,4"];
        a.extend_from_slice(bad);
        let (code, _, err) = run(&a, &[]);
        assert_eq!(code, 1, "{bad:?}: {err}");
        assert!(err.starts_with("error: ") && err.contains("dti could not fit this phantom") && err.contains("at least 6 directions and 1 b=0 volume") && err.lines().count() == 1, "{bad:?}: {err}");
        assert!(!out.exists(), "{bad:?}");
    }
    let (code, _, err) = run(&["synth", "--out", s(&out), "--dims", "6,6,4", "--b0", "0", "--shells", "1000,2000", "--dirs", "6"], &[]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = run(&["dti", "--backend", "cpu", "--dwi", s(&out.join("dwi.nii.gz")), "--bvals", s(&out.join("bvals")), "--bvecs", s(&out.join("bvecs")), "--out", s(&tmp.path().join("d").join("dti"))], &[]);
    assert_eq!(code, 0, "{err}");
}

/// `synth --shells 1000,1000` wrote the same 32 directions twice as two "shells"; a shell at or
/// below 10 s/mm^2 wrote b-values the readers take for b = 0 (and warn of as ms/um^2), and one
/// above 1e6 a table every command refuses. All are refused, naming --shells, writing nothing.
#[test]
fn synth_refuses_repeated_shells_and_b_values_its_readers_would_not_take() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("p");
    for (shells, says) in [
        ("1000,1000", "--shells gives 1000 twice"),
        ("1000,2000,1000", "--shells gives 1000 twice"),
        ("5", "above 10 s/mm^2"),
        ("10", "above 10 s/mm^2"),
        ("1e9", "at most 1e6, got 1000000000"),
    ] {
        let (code, _, err) = run(&["synth", "--out", s(&out), "--dims", "6,6,4", "--shells", shells], &[("RUST_BACKTRACE", "1")]);
        assert_eq!(code, 1, "{shells}: {err}");
        assert!(err.starts_with("error: ") && err.contains(says) && err.lines().count() == 1, "{shells}: {err}");
        assert!(!out.exists(), "{shells}");
    }
    // the limits themselves read back
    let (code, _, err) = run(&["synth", "--out", s(&out), "--dims", "6,6,4", "--shells", "11,1e6"], &[]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = run(&["dti", "--backend", "cpu", "--dwi", s(&out.join("dwi.nii.gz")), "--bvals", s(&out.join("bvals")), "--bvecs", s(&out.join("bvecs")), "--out", s(&tmp.path().join("d").join("dti"))], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("warning"), "{err}");
}

/// `synth --voxel 1e-30,1,1` wrote a phantom whose affine every reader then refused as
/// singular, and `--voxel 1e30,...` one whose fibres took no step; sizes outside 1 um to 1 m are
/// refused naming --voxel, as zero, negative and NaN ones were, for both phantoms.
#[test]
fn synth_refuses_voxel_sizes_no_mri_has() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("p");
    for voxel in ["0,2,2", "-1,2,2", "nan,2,2", "inf,2,2", "1e30,2,2", "2,2,1e-30", "1e-4,1e-4,1e-4", "1001,2,2"] {
        for kind in [&[][..], &["t1"]] {
            let arg = format!("--voxel={voxel}");
            let a: Vec<&str> = ["synth"].into_iter().chain(kind.iter().copied()).chain(["--out", s(&out), "--dims", "8,8,8", &arg]).collect();
            let (code, _, err) = run(&a, &[("RUST_BACKTRACE", "1")]);
            assert_ne!(code, 0, "{a:?}: {err}");
            assert!(err.starts_with("error: ") && err.contains("--voxel sizes must be from 0.001 to 1000 mm"), "{a:?}: {err}");
            assert!(!out.exists(), "{a:?}");
        }
    }
    // the limits themselves are phantoms dti fits
    for voxel in ["0.001,0.001,0.001", "1000,1000,1000"] {
        let _ = std::fs::remove_dir_all(&out);
        let (code, _, err) = run(&["synth", "--out", s(&out), "--dims", "6,6,4", "--voxel", voxel], &[]);
        assert_eq!(code, 0, "{voxel}: {err}");
        let (code, _, err) = run(&["dti", "--backend", "cpu", "--dwi", s(&out.join("dwi.nii.gz")), "--bvals", s(&out.join("bvals")), "--bvecs", s(&out.join("bvecs")), "--out", s(&out.join("dti"))], &[]);
        assert_eq!(code, 0, "{voxel}: {err}");
    }
}

/// The subcommands listed under "Commands:" in a help text (but `help`).
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| l.trim() != "Commands:")
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(String::from)
        .collect()
}

/// The options whose help is only their name (and a default or a list of values): fim's and
/// track geodesic's --bvals/--bvecs, track geodesic --method and seven bench options printed a
/// bare `--bvals <BVALS>` above an empty line.
fn options_without_help(help: &str) -> Vec<String> {
    let lines: Vec<&str> = help.lines().collect();
    let mut bare = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let indent = l.len() - l.trim_start().len();
        let mut words = l.split_whitespace().peekable();
        if words.peek() == Some(&"-h,") || (indent <= 6 && words.peek().is_some_and(|w| w.starts_with('-') && w.ends_with(','))) {
            words.next();
        }
        let Some(name) = words.next().filter(|w| indent <= 6 && w.starts_with("--")) else { continue };
        if words.peek().is_some_and(|w| w.starts_with('<')) {
            words.next();
        }
        let rest = words.collect::<Vec<_>>().join(" ");
        let said = |s: &str| !s.is_empty() && !s.starts_with("[default") && !s.starts_with("[possible") && !s.starts_with("Possible values");
        // Short help puts the text on the option's line; long help on the lines below it.
        if !said(&rest) && !said(lines.get(i + 1).map_or("", |n| n.trim())) {
            bare.push(name.to_string());
        }
    }
    bare
}

#[test]
fn every_option_says_what_it_is() {
    let mut todo = vec![Vec::<String>::new()];
    let mut bare = Vec::new();
    let mut seen = 0;
    while let Some(path) = todo.pop() {
        let mut args: Vec<&str> = path.iter().map(|s| s.as_str()).collect();
        args.push("--help");
        let (code, out, err) = run(&args, &[]);
        assert_eq!(code, 0, "{args:?}: {err}");
        seen += 1;
        bare.extend(options_without_help(&out).into_iter().map(|o| format!("{} {o}", path.join(" "))));
        todo.extend(subcommands(&out).into_iter().map(|c| [path.clone(), vec![c]].concat()));
    }
    assert!(seen > 20, "the walk found {seen} help texts");
    assert!(bare.is_empty(), "options with no help text: {bare:?}");
}

/// `neuroport devices | head -1`: a closed stdout made `println!` panic with a backtrace
/// (RUST_BACKTRACE=1); the command stops quietly instead, with SIGPIPE's shell status. synth
/// prints its files' names once they are written, so its phantom is whole.
#[test]
fn a_closed_stdout_stops_quietly() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("p");
    // check, compare and reproduce print through cli::print_out and finish their work with
    // their own exit status (tests/reproduce.rs a_closed_stdout_is_not_a_crash).
    for args in [&["devices"][..], &["synth", "--out", s(&out), "--dims", "6,6,4"]] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let o = bin().args(args).env("RUST_BACKTRACE", "1").stdout(writer).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!err.contains("panicked") && !err.contains("backtrace"), "{args:?}: {err}");
        assert_eq!(o.status.code(), Some(141), "{args:?}: {err}");
    }
    assert!(read_nifti(&out.join("dwi.nii.gz")).is_ok() && out.join("bvecs").exists());
}

/// A phantom wider than a NIfTI-1 header holds (32767 voxels along an axis, or volumes) was
/// simulated and only then refused at the write, naming dwi.nii.gz and a "dimension" rather than
/// the option; it is refused before any work, naming the options, writing nothing.
#[test]
fn synth_refuses_a_phantom_nifti_cannot_hold_before_building_it() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("p");
    for (args, needle) in [
        (&["--dims", "40000,4,4"][..], "at most 32767 each (a NIfTI-1 header's limit), got [40000, 4, 4]"),
        (&["--dims", "6,6,4", "--b0", "40000"], "--b0 40000 + --dirs 32 x 1 shell = 40032 volumes: a NIfTI-1 file holds at most 32767"),
        (&["--dims", "6,6,4", "--dirs", "20000", "--shells", "1000,2000"], "--b0 3 + --dirs 20000 x 2 shells = 40003 volumes"),
    ] {
        let mut a = vec!["synth", "--out", s(&out)];
        a.extend_from_slice(args);
        let (code, _, err) = run(&a, &[]);
        assert_eq!(code, 1, "{args:?}: {err}");
        assert!(err.starts_with("error: ") && err.contains(needle) && err.lines().count() == 1, "{args:?}: {err}");
        assert!(!out.exists(), "{args:?}");
    }
    // The limit itself is written.
    let (code, _, err) = run(&["synth", "--out", s(&out), "--dims", "6,6,4", "--b0", "32735"], &[]);
    assert_eq!(code, 0, "{err}");
}

/// stdout or stderr on a full disk (/dev/full): one plain line where stderr takes it, exit 1, no
/// panic. `println!` panicked ("failed printing to stdout", exit 101 with a backtrace), and
/// reproduce said only "No space left on device (os error 28)". The outputs, committed before
/// their names are printed, stay.
#[cfg(target_os = "linux")]
#[test]
fn a_full_stdout_or_stderr_is_one_line_and_exit_1() {
    use std::process::Stdio;
    let tmp = tempfile::tempdir().unwrap();
    let full = || Stdio::from(std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap());
    let want = "error: cannot write to standard output: No space left on device";
    let (synth_out, repro_out) = (tmp.path().join("s"), tmp.path().join("r"));
    let cases: [&[&str]; 2] = [&["synth", "--dims", "8,8,4", "--out", s(&synth_out)], &["--backend", "cpu", "reproduce", "geodesic-prep", "--repeats", "1", "--out", s(&repro_out)]];
    for a in cases {
        let o = bin().args(a).env("RUST_BACKTRACE", "1").stdout(full()).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{a:?}: {err}");
        assert_eq!(err.lines().last(), Some(want), "{a:?}: {err}");
        assert!(!err.contains("panicked") && !err.contains("backtrace"), "{a:?}: {err}");
    }
    assert!(entries(&tmp.path().join("s")).contains(&"dwi.nii.gz".to_string()));
    let o = bin().args(["synth", "--dims", "8,8,4", "--out", s(&tmp.path().join("e"))]).env("RUST_BACKTRACE", "1").stdout(Stdio::null()).stderr(full()).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "stderr full");
}
