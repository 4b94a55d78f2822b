//! Global options a subcommand accepted and dropped without a word: `devices --backend` listed
//! every device whatever it named; `compare`, `synth` and `bench nifti`, which run on no device,
//! took `--backend` and `--threads` silently.

mod common;
use common::*;

/// The spec column of `devices`' table, and its lines that are not rows.
fn listed(out: &str) -> (Vec<String>, usize) {
    let lines: Vec<&str> = out.lines().skip(1).collect();
    let rows: Vec<String> = lines.iter().filter(|l| l.starts_with("cpu ") || l.starts_with("opencl ") || l.starts_with("cuda ")).map(|l| l.split_whitespace().nth(1).unwrap().to_string()).collect();
    (rows.clone(), lines.len() - rows.len())
}

#[test]
fn devices_lists_what_backend_names() {
    let (code, out, err) = run(&["devices", "--backend", "cpu"], &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(listed(&out), (vec!["cpu".to_string()], 0), "{out}");
    let (code, out, _) = run(&["devices", "--backend", "cpu", "--json"], &[]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["devices"].as_array().unwrap().iter().map(|d| d["spec"].as_str().unwrap()).collect::<Vec<_>>(), ["cpu"]);
    // The default is every device, as before.
    let (code, all, _) = run(&["devices"], &[]);
    assert_eq!(code, 0);
    assert_eq!(listed(&all).0[0], "cpu");
    // A backend that is not there: the error a command meets, on one line.
    if !all.contains("cuda:") {
        let (code, _, err) = run(&["devices", "--backend", "cuda:0"], &[("RUST_BACKTRACE", "1")]);
        assert_eq!(code, 1, "{err}");
        assert!(err.starts_with("error: no CUDA device cuda:0") && err.lines().count() == 1, "{err}");
    }
    // Where OpenCL is present (PoCL here): its devices alone.
    if all.contains("opencl:") {
        let (code, out, err) = run(&["devices", "--backend", "opencl"], &[]);
        assert_eq!(code, 0, "{err}");
        let (specs, notes) = listed(&out);
        assert!(specs.len() == 1 && specs[0].starts_with("opencl:") && notes == 0, "{out}");
    }
}

#[test]
fn commands_that_run_on_no_device_say_so() {
    let d = tempfile::tempdir().unwrap();
    let csv = d.path().join("a.csv");
    std::fs::write(&csv, "table,config,x,device,device_name,vendor,compute_units,clock_mhz,memory_gib,variant,metric,unit,published,published_device,ours,ratio,kernel_ms,transfer_ms,host_ms,speedup_vs_1thread,speedup_vs_all_cores,substituted,machine,scale,source\ngeodesic-prep,tensor fit (WLS),,cpu,AMD EPYC,AuthenticAMD,1,2596,23.5,1 thread,time per million voxels,ms,,,911.4,,50.4,0.0,0.0,1.0,0.51,phantom,vm,quick,\n").unwrap();
    let synth = d.path().join("ph");
    let nii = synth.join("mask.nii.gz");
    let (c1, c2) = (d.path().join("c1"), d.path().join("c2"));
    let cases: [(Vec<&str>, &str); 4] = [
        (vec!["compare", s(&csv), "--out", s(&c1)], ""),
        (vec!["compare", s(&csv), "--out", s(&c2), "--backend", "cuda:1", "--threads", "2"], "warning: --backend cuda:1 and --threads 2 do not apply to compare, which merges result files and runs nothing"),
        (vec!["synth", "--out", s(&synth), "--dims", "6,6,4", "--dirs", "6", "--backend", "cpu"], "warning: --backend cpu does not apply to synth, which builds its phantoms on the host, on every core"),
        (vec!["bench", "nifti", "--input", s(&nii), "--read-only", "--threads", "1"], "warning: --threads 1 does not apply to bench nifti, which times the disk and the host's cores (--cores)"),
    ];
    for (args, want) in cases {
        let (code, _, err) = run(&args, &[]);
        assert_eq!(code, 0, "{args:?}: {err}");
        let warnings: Vec<&str> = err.lines().filter(|l| l.starts_with("warning:")).collect();
        assert_eq!(warnings, if want.is_empty() { vec![] } else { vec![want] }, "{args:?}: {err}");
    }
}

/// `--threads` sizes the cpu backend's pool: a run on GPUs (or PoCL, which sizes its own) alone
/// took it without a word.
#[test]
fn threads_on_a_run_without_the_cpu_backend_is_said() {
    let (_, devices, _) = run(&["devices"], &[]);
    let Some(cl) = devices.lines().find_map(|l| l.split_whitespace().nth(1).filter(|s| s.starts_with("opencl:"))) else {
        eprintln!("no OpenCL device: skipped");
        return;
    };
    let d = tempfile::tempdir().unwrap();
    small_dataset(d.path(), [8, 8, 4], 30.0, 1);
    let j = |f: &str| d.path().join(f);
    for (backend, want) in [(cl, Some(format!("warning: --threads 1 applies to the cpu backend; this run is on {cl}"))), (&format!("cpu,{cl}"), None), ("cpu", None)] {
        let out = j(&format!("{}/", backend.replace([':', ','], "_")));
        let (code, _, err) = run(&["dti", "--dwi", s(&j("dwi.nii.gz")), "--bvals", s(&j("bvals")), "--bvecs", s(&j("bvecs")), "--out", s(&out), "--backend", backend, "--threads", "1"], &[]);
        assert_eq!(code, 0, "{backend}: {err}");
        let warnings: Vec<String> = err.lines().filter(|l| l.starts_with("warning:")).map(String::from).collect();
        assert_eq!(warnings, want.into_iter().collect::<Vec<_>>(), "{backend}: {err}");
    }
}
