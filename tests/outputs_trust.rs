//! Issue 11, "Outputs a user can trust": a failed, interrupted or killed run leaves nothing
//! behind; existing files are kept unless --force; messages name the final file in plain words;
//! the FSL files the next step expects are written.

mod common;
use common::*;
use neuroport::volume::read_nifti;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn data(dir: &Path) -> [String; 4] {
    small_dataset(dir, [8, 8, 5], 30.0, 3);
    ["dwi.nii.gz", "bvals", "bvecs", "mask.nii.gz"].map(|n| dir.join(n).to_str().unwrap().to_string())
}

fn dti(d: &[String; 4], out: &Path, extra: &[&str]) -> (i32, String, String) {
    let mut a = vec!["dti", "--backend", "cpu", "--dwi", &d[0], "--bvals", &d[1], "--bvecs", &d[2], "--mask", &d[3], "--out", s(out)];
    a.extend_from_slice(extra);
    run(&a, &[("RUST_BACKTRACE", "1")])
}

const DTI_FILES: [&str; 12] = ["FA", "L1", "L2", "L3", "MD", "MO", "RGB", "S0", "V1", "V2", "V3", "tensor"];

#[test]
fn existing_outputs_are_kept_unless_force() {
    let tmp = tempfile::tempdir().unwrap();
    let d = data(&tmp.path().join("d"));
    let out = tmp.path().join("o");
    assert_eq!(dti(&d, &out.join("x"), &[]).0, 0);
    let md = out.join("x_MD.nii.gz");
    std::fs::write(&md, b"old").unwrap();
    let before = std::fs::read(out.join("x_FA.nii.gz")).unwrap();
    let (code, _, err) = dti(&d, &out.join("x"), &[]);
    assert_ne!(code, 0);
    // the first of the command's files that exists, in its order (tensor first)
    assert!(err.trim() == format!("error: {} already exists (use --force to overwrite)", out.join("x_tensor.nii.gz").display()), "{err}");
    assert_eq!(std::fs::read(&md).unwrap(), b"old");
    let (code, _, err) = dti(&d, &out.join("x"), &["--force"]);
    assert_eq!(code, 0, "{err}");
    assert!(read_nifti(&md).is_ok(), "--force replaced the file");
    assert_eq!(std::fs::read(out.join("x_FA.nii.gz")).unwrap(), before, "same inputs, same bytes");
    assert_eq!(entries(&out).len(), 12, "{:?}", entries(&out));
}

#[test]
fn a_failed_move_rolls_back_and_says_so_plainly() {
    let tmp = tempfile::tempdir().unwrap();
    let d = data(&tmp.path().join("d"));
    let out = tmp.path().join("o");
    std::fs::create_dir_all(&out).unwrap();
    // An old FA (replaced with --force before MD fails) and a folder where MD goes.
    std::fs::write(out.join("dti_FA.nii.gz"), b"old FA").unwrap();
    std::fs::create_dir_all(out.join("dti_MD.nii.gz").join("inside")).unwrap();
    let (code, stdout, err) = dti(&d, &out.join("dti"), &["--force"]);
    assert_ne!(code, 0);
    assert!(stdout.is_empty());
    let want = format!("error: cannot write {}: a folder stands there", out.join("dti_MD.nii.gz").display());
    // The fit's progress lines (stderr is a log here) come before the write; the error is one line.
    let err: String = err.lines().filter(|l| !l.starts_with("dti: ")).collect();
    assert_eq!(err.trim(), want);
    for bad in [".part", "Os {", "os error", "Io("] {
        assert!(!err.contains(bad), "{err}");
    }
    // FA is the old one again, nothing else was left: no new file, no temporary, no backup
    assert_eq!(std::fs::read(out.join("dti_FA.nii.gz")).unwrap(), b"old FA");
    assert_eq!(entries(&out), vec!["dti_FA.nii.gz".to_string(), "dti_MD.nii.gz".to_string()]);
}

#[test]
fn out_documents_its_meaning_and_a_trailing_slash_is_a_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let d = data(&tmp.path().join("d"));
    let out = tmp.path().join("res");
    let (code, _, err) = dti(&d, Path::new(&format!("{}/", out.display())), &[]);
    assert_eq!(code, 0, "{err}");
    let mut want: Vec<String> = DTI_FILES.iter().map(|f| format!("dti_{f}.nii.gz")).collect();
    want.sort();
    assert_eq!(entries(&out), want);
    for (cmd, words) in [
        (&["dti", "--help"][..], "prefix"),
        (&["bedpost", "--help"][..], "folder"),
        (&["synth", "--help"][..], "folder"),
        (&["track", "geodesic", "--help"][..], "file"),
    ] {
        let (_, help, _) = run(cmd, &[]);
        let line = help.lines().skip_while(|l| !l.trim_start().starts_with("--out")).take(3).collect::<Vec<_>>().join(" ").to_lowercase();
        assert!(line.contains(words), "{cmd:?}: {line}");
    }
    let (_, help, _) = run(&["--help"], &[]);
    assert!(help.contains("FSLOUTPUTTYPE") && help.contains("--force"), "{help}");
}

/// `--out DIR/.` (or `--out .`, `..`) names a folder too: dti wrote the hidden files
/// DIR/._FA.nii.gz ... (the prefix "." plus "_FA"), which `ls` does not show.
#[test]
fn out_ending_in_a_dot_is_a_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let d = data(&tmp.path().join("d"));
    let res = tmp.path().join("res");
    std::fs::create_dir_all(res.join("sub")).unwrap();
    let mut want: Vec<String> = DTI_FILES.iter().map(|f| format!("dti_{f}.nii.gz")).collect();
    want.sort();
    for (out, folder) in [(res.join("sub").join("."), res.join("sub")), (res.join("sub").join(".."), res.clone())] {
        let (code, _, err) = dti(&d, Path::new(&format!("{}", out.display())), &[]);
        assert_eq!(code, 0, "{err}");
        let got: Vec<String> = entries(&folder).into_iter().filter(|e| e != "sub").collect();
        assert_eq!(got, want, "--out {}", out.display());
    }
}

#[test]
fn dti_writes_every_map_dtifit_writes() {
    let tmp = tempfile::tempdir().unwrap();
    let d = data(&tmp.path().join("d"));
    let p = tmp.path().join("o").join("dti");
    assert_eq!(dti(&d, &p, &[]).0, 0);
    let map = |f: &str| read_nifti(&PathBuf::from(format!("{}_{f}.nii.gz", p.display()))).unwrap();
    let (l1, l2, l3, mo) = (map("L1"), map("L2"), map("L3"), map("MO"));
    let (v1, v2, v3) = (map("V1"), map("V2"), map("V3"));
    let mask = read_nifti(Path::new(&d[3])).unwrap();
    let n = mask.nvox();
    let mut checked = 0;
    for v in (0..n).filter(|&v| mask.as_flat()[v] != 0.0) {
        let (a, b, c) = (l1.as_flat()[v], l2.as_flat()[v], l3.as_flat()[v]);
        // float32 eigenvalues of one tensor: ordered up to rounding (1e-9 mm^2/s at ~1e-3)
        assert!(a >= b - 1e-9 && b >= c - 1e-9, "voxel {v}: {a} {b} {c}");
        let m = mo.as_flat()[v];
        assert!((-1.0..=1.0).contains(&m), "mode {m}");
        let vec = |x: &neuroport::volume::Volume| [0, 1, 2].map(|k| x.as_flat()[k * n + v] as f64);
        let (e1, e2, e3) = (vec(&v1), vec(&v2), vec(&v3));
        let dot = |p: [f64; 3], q: [f64; 3]| p[0] * q[0] + p[1] * q[1] + p[2] * q[2];
        // unit and orthogonal to float32 precision (Jacobi in f64, stored in f32: ~1e-6),
        // except where two eigenvalues coincide and the pair's vectors are arbitrary
        if (a - b).abs() > 1e-5 * a.abs() && (b - c).abs() > 1e-5 * a.abs() {
            assert!(dot(e1, e2).abs() < 1e-3 && dot(e2, e3).abs() < 1e-5, "voxel {v}: {e1:?} {e2:?} {e3:?}");
            assert!((dot(e2, e2) - 1.0).abs() < 1e-5);
            checked += 1;
        }
    }
    assert!(checked > 100, "{checked} voxels checked");
}

#[test]
fn bedpost_writes_the_files_probtrackx_expects() {
    let tmp = tempfile::tempdir().unwrap();
    let d = data(&tmp.path().join("d"));
    let out = tmp.path().join("bp");
    let (code, _, err) = run(
        &["bedpost", "--backend", "cpu", "--dwi", &d[0], "--bvals", &d[1], "--bvecs", &d[2], "--mask", &d[3], "--out", s(&out), "--burnin", "20", "--samples", "4", "--thin", "1"],
        &[],
    );
    assert_eq!(code, 0, "{err}");
    let files = entries(&out);
    for f in ["mean_th1samples", "mean_th2samples", "mean_ph1samples", "mean_ph2samples", "mean_fsumsamples", "nodif_brain_mask"] {
        assert!(files.contains(&format!("{f}.nii.gz")), "{f} missing: {files:?}");
    }
    let mask = read_nifti(Path::new(&d[3])).unwrap();
    assert_eq!(read_nifti(&out.join("nodif_brain_mask.nii.gz")).unwrap().as_flat(), mask.as_flat());
    let f1 = read_nifti(&out.join("mean_f1samples.nii.gz")).unwrap();
    let f2 = read_nifti(&out.join("mean_f2samples.nii.gz")).unwrap();
    let fs = read_nifti(&out.join("mean_fsumsamples.nii.gz")).unwrap();
    for v in 0..mask.nvox() {
        assert!((f1.as_flat()[v] + f2.as_flat()[v] - fs.as_flat()[v]).abs() < 1e-6);
    }
    let th = read_nifti(&out.join("mean_th1samples.nii.gz")).unwrap();
    assert!(th.as_flat().iter().all(|&t| (0.0..=std::f32::consts::PI).contains(&t)));
}

/// Starts `synth` writing a volume big enough to take a while, and returns the child.
fn slow_synth(out: &Path, extra_env: &[(&str, &str)]) -> std::process::Child {
    let mut c = bin();
    c.args(["synth", "--out", s(out), "--dims", "96,96,60", "--dirs", "60"]);
    for (k, v) in extra_env {
        c.env(k, v);
    }
    c.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).spawn().unwrap()
}

fn wait_for(cond: impl Fn() -> bool, secs: u64) -> bool {
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(secs) {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    false
}

#[cfg(unix)]
#[test]
fn an_interrupted_run_removes_its_temporaries() {
    // Hidden-name temporaries (as on filesystems without O_TMPFILE): SIGTERM removes them.
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("s");
    let mut child = slow_synth(&out, &[("NEUROPORT_NO_TMPFILE", "1")]);
    let seen = wait_for(|| entries(&out).iter().any(|e| e.starts_with(".neuroport-")), 60);
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert!(seen, "no temporary was ever seen");
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.code().or(status.signal().map(|s| 128 + s)), Some(128 + libc::SIGTERM));
    assert_eq!(entries(&out), Vec::<String>::new(), "left behind after SIGTERM");
}

#[cfg(target_os = "linux")]
#[test]
fn a_killed_run_leaves_no_file_and_stale_temporaries_are_removed() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("s");
    std::fs::create_dir_all(&out).unwrap();
    // SIGKILL cannot be caught: unnamed temporaries die with the process.
    let mut child = slow_synth(&out, &[]);
    std::thread::sleep(Duration::from_millis(300));
    let _ = child.kill();
    let _ = child.wait();
    let left: Vec<String> = entries(&out).into_iter().filter(|e| e.starts_with('.')).collect();
    assert_eq!(left, Vec::<String>::new());
    // Temporaries of dead processes (ours, and the older .PID.part- names) go on the next run.
    let dead = 4_194_000; // above any PID in use on a test machine
    for n in [format!(".neuroport-{dead}.part-0-dwi.nii.gz"), format!(".{dead}.part-3-mask.nii.gz")] {
        std::fs::write(out.join(n), b"stale").unwrap();
    }
    std::fs::write(out.join(".keep-me"), b"not ours").unwrap();
    let (code, _, err) = run(&["synth", "--out", s(&out), "--dims", "8,8,4", "--force"], &[]);
    assert_eq!(code, 0, "{err}");
    let hidden: Vec<String> = entries(&out).into_iter().filter(|e| e.starts_with('.')).collect();
    assert_eq!(hidden, vec![".keep-me".to_string()]);
}

/// The folders a command creates for its outputs go too when it fails or is interrupted: a
/// failed run leaves nothing new behind, not even an empty `--out` folder chain.
#[test]
fn a_failed_run_removes_the_folders_it_made() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("d");
    small_dataset(&d, [16, 16, 8], 30.0, 3);
    let j = |n: &str| d.join(n).to_str().unwrap().to_string();
    // The path goes to a new folder chain; the cost maps to a folder where one of them cannot
    // be written (a folder stands at its name), so the commit fails and rolls back.
    let o = tmp.path().join("o");
    std::fs::create_dir_all(o.join("c_total.nii.gz").join("inside")).unwrap();
    let tck = tmp.path().join("new").join("deep").join("p.tck");
    let (code, _, err) = run(
        &["fim", "--backend", "cpu", "--tensor", &j("truth_tensor.nii.gz"), "--mask", &j("wm.nii.gz"), "--source", &j("roi1.nii.gz"), "--target", &j("roi2.nii.gz"), "--out-tck", s(&tck), "--out", s(&o.join("c")), "--force"],
        &[("RUST_BACKTRACE", "1")],
    );
    assert_ne!(code, 0, "{err}");
    assert!(err.contains("a folder stands there"), "{err}");
    assert!(!tmp.path().join("new").exists(), "left behind: {:?}", entries(&tmp.path().join("new")));
    assert_eq!(entries(&o), vec!["c_total.nii.gz".to_string()]);
}

#[cfg(unix)]
#[test]
fn an_interrupted_run_removes_the_folders_it_made() {
    // Unnamed temporaries (the default on Linux) and hidden names, SIGINT and SIGTERM.
    for (env, sig) in [(&[][..], libc::SIGINT), (&[("NEUROPORT_NO_TMPFILE", "1")][..], libc::SIGTERM)] {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("a").join("b").join("s");
        let mut child = slow_synth(&out, env);
        let seen = wait_for(|| out.is_dir(), 60);
        std::thread::sleep(Duration::from_millis(50));
        unsafe { libc::kill(child.id() as i32, sig) };
        let status = child.wait().unwrap();
        assert!(seen && !status.success(), "the run ended before the signal");
        assert_eq!(entries(tmp.path()), Vec::<String>::new(), "left behind after signal {sig} ({env:?})");
    }
}

/// An output under a path that is a file, not a folder: one plain line naming that file, for a
/// command taking a prefix (dti) and one taking a folder (synth), with --force too. Each said
/// "File exists" (the OS's word for mkdir over a file) without saying which file.
#[test]
fn an_output_under_a_file_names_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let [dwi, bvals, bvecs, _] = data(&d.join("in"));
    let file = d.join("notes.txt");
    std::fs::write(&file, b"mine").unwrap();
    let under = |p: &str| file.join(p).to_string_lossy().into_owned();
    // The output's own folder is the file (named once), or a folder to make lies under it.
    let into = format!("error: cannot write into {}: it is a file, not a folder", file.display());
    let making = |sub: &str| format!("error: cannot create the folder {}: {} is a file, not a folder", file.join(sub).display(), file.display());
    let cases: Vec<(Vec<String>, String)> = vec![
        (vec!["dti".into(), "--dwi".into(), dwi.clone(), "--bvals".into(), bvals.clone(), "--bvecs".into(), bvecs.clone(), "--out".into(), under("dti")], into.clone()),
        (vec!["dti".into(), "--dwi".into(), dwi, "--bvals".into(), bvals, "--bvecs".into(), bvecs, "--out".into(), under("sub/dti"), "--force".into()], making("sub")),
        (vec!["synth".into(), "--dims".into(), "8,8,4".into(), "--out".into(), file.to_string_lossy().into_owned()], into),
        (vec!["synth".into(), "--dims".into(), "8,8,4".into(), "--out".into(), under("x")], making("x")),
    ];
    for (a, want) in cases {
        let args: Vec<&str> = a.iter().map(String::as_str).chain(["--backend", "cpu"].into_iter().filter(|_| a[0] == "dti")).collect();
        let (code, _, err) = run(&args, &[("RUST_BACKTRACE", "1")]);
        assert_eq!(code, 1, "{args:?}: {err}");
        assert_eq!(err.trim_end(), want, "{args:?}");
        assert_eq!(std::fs::read(&file).unwrap(), b"mine");
        assert_eq!(entries(d), vec!["in".to_string(), "notes.txt".to_string()]);
    }
}

/// X.nii and X.nii.gz are one output: a second run under the other FSLOUTPUTTYPE used to add
/// .nii files beside the .nii.gz ones without --force (bedpost, dti, ...). Now it is refused,
/// and --force replaces the other type's files, leaving one of each output.
#[test]
fn the_other_output_type_is_the_same_output() {
    let tmp = tempfile::tempdir().unwrap();
    let d = data(&tmp.path().join("d"));
    let out = tmp.path().join("bp");
    let bedpost = |env: &[(&str, &str)], force: bool| {
        let mut a = vec!["bedpost", "--backend", "cpu", "--dwi", &d[0], "--bvals", &d[1], "--bvecs", &d[2], "--mask", &d[3], "--out", s(&out), "--burnin", "2", "--samples", "2", "--thin", "1"];
        if force {
            a.push("--force");
        }
        run(&a, env)
    };
    let nifti = [("FSLOUTPUTTYPE", "NIFTI")];
    assert_eq!(bedpost(&[], false).0, 0);
    let before = entries(&out);
    let (code, _, err) = bedpost(&nifti, false);
    assert_eq!(code, 1, "{err}");
    assert!(err.starts_with("error: ") && err.contains(".nii.gz already exists: the same output as") && err.contains("--force"), "{err}");
    assert_eq!(entries(&out), before, "the refused run changed the folder");
    let (code, _, err) = bedpost(&nifti, true);
    assert_eq!(code, 0, "{err}");
    let after = entries(&out);
    assert!(after.iter().all(|f| f.ends_with(".nii")) && after.len() == before.len(), "{after:?}");
    // dti goes through the same output code.
    let prefix = tmp.path().join("dti");
    assert_eq!(dti(&d, &prefix, &[]).0, 0);
    let (code, _, err) = run(&["dti", "--backend", "cpu", "--dwi", &d[0], "--bvals", &d[1], "--bvecs", &d[2], "--mask", &d[3], "--out", s(&prefix)], &nifti);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("_FA.nii.gz already exists: the same output as") || err.contains(".nii.gz already exists: the same output as"), "{err}");
}

/// Runs `neuroport args...` allowed files of at most `bytes` (RLIMIT_FSIZE, SIGXFSZ ignored): a
/// write past it fails with EFBIG ("File too large"), as a full disk fails one with ENOSPC, with
/// no mount and no root. Returns (exit code, stderr, with the stages line that says what ran).
#[cfg(target_os = "linux")]
fn run_with_file_limit(args: &[&str], bytes: u64) -> (i32, String) {
    use std::os::unix::process::CommandExt;
    let mut c = bin();
    c.args(args).env("RUST_BACKTRACE", "1").env("NEUROPORT_STAGES", "1");
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        c.pre_exec(move || {
            let lim = libc::rlimit { rlim_cur: bytes as libc::rlim_t, rlim_max: bytes as libc::rlim_t };
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            match libc::setrlimit(libc::RLIMIT_FSIZE, &lim) {
                0 => Ok(()),
                _ => Err(std::io::Error::last_os_error()),
            }
        });
    }
    let o = c.output().expect("the neuroport binary runs");
    (o.status.code().unwrap_or(-1), String::from_utf8_lossy(&o.stderr).into_owned())
}

/// An output folder that takes no byte (here a file size limit of 0; a read-only or full disk
/// alike) is refused before the sampling, naming an output: bedpost ran its whole MCMC and only
/// then failed to write (its stages line: "fit and sample"). The same for a folder still to be
/// made, and nothing is left.
#[cfg(target_os = "linux")]
#[test]
fn a_folder_that_takes_no_byte_is_refused_before_the_work() {
    let tmp = tempfile::tempdir().unwrap();
    let d = data(&tmp.path().join("in"));
    let made = tmp.path().join("made");
    std::fs::create_dir(&made).unwrap();
    for out in [made.clone(), tmp.path().join("new").join("bp")] {
        let a = ["bedpost", "--backend", "cpu", "--dwi", &d[0], "--bvals", &d[1], "--bvecs", &d[2], "--mask", &d[3], "--out", s(&out), "--burnin", "20", "--samples", "4", "--thin", "1"];
        let (code, err) = run_with_file_limit(&a, 0);
        assert_eq!(code, 1, "{err}");
        let prefix = format!("error: cannot write {}/", out.display());
        assert!(err.starts_with(&prefix) && err.lines().next().unwrap_or("").ends_with(".nii.gz: File too large"), "{err}");
        let stages = err.lines().find(|l| l.starts_with("stages:")).unwrap_or("");
        assert!(!stages.is_empty() && !stages.contains("read") && !stages.contains("sample"), "refused before reading and sampling: {err}");
    }
    assert_eq!(entries(tmp.path()), vec!["in".to_string(), "made".to_string()]);
    assert_eq!(entries(&made), Vec::<String>::new());
}

/// An output name that is a folder is refused before the fit, with or without --force, in words
/// that do not send the user to --force: dti said "already exists (use --force to overwrite)",
/// and with --force fitted everything, then failed at the commit.
#[test]
fn an_output_that_is_a_folder_is_refused_up_front() {
    let tmp = tempfile::tempdir().unwrap();
    let d = data(&tmp.path().join("in"));
    let out = tmp.path().join("o");
    let fa = out.join("x_FA.nii.gz");
    std::fs::create_dir_all(&fa).unwrap();
    for extra in [&[][..], &["--force"][..]] {
        let (code, _, err) = dti(&d, &out.join("x"), extra);
        assert_eq!(code, 1, "{err}");
        assert_eq!(err.trim_end(), format!("error: cannot write {}: a folder stands there", fa.display()), "{extra:?}");
        assert_eq!(entries(&out), vec!["x_FA.nii.gz".to_string()]);
    }
}

/// A tractogram write failing part-way (the file size limit; a full disk alike) says the OS's
/// words as every other output does: the streamed .tck said "File too large (os error 27)".
#[cfg(target_os = "linux")]
#[test]
fn a_failing_tck_write_reads_as_the_other_outputs() {
    let tmp = tempfile::tempdir().unwrap();
    let d = data(&tmp.path().join("in"));
    let out = tmp.path().join("t.tck");
    let a = ["--backend", "cpu", "track", "geodesic", "--dwi", &d[0], "--bvals", &d[1], "--bvecs", &d[2], "--seeds", &d[3], "--dirs", "4", "--out", s(&out)];
    let (code, err) = run_with_file_limit(&a, 8192);
    assert_eq!(code, 1, "{err}");
    assert_eq!(err.lines().find(|l| l.starts_with("error:")).unwrap_or(""), format!("error: cannot write {}: File too large", out.display()), "{err}");
    assert_eq!(entries(tmp.path()), vec!["in".to_string()]);
}

/// `bench nifti` whose write fails part-way (the file size limit; a full disk alike) removes its
/// scratch folder: it returned at the error and left the folder with a partial copy.
#[cfg(target_os = "linux")]
#[test]
fn bench_nifti_failing_to_write_leaves_no_scratch() {
    let tmp = tempfile::tempdir().unwrap();
    let d = data(&tmp.path().join("in"));
    let scratch = tmp.path().join("scratch");
    std::fs::create_dir(&scratch).unwrap();
    let (code, err) = run_with_file_limit(&["bench", "nifti", "--input", &d[0], "--scratch", s(&scratch), "--repeats", "1"], 4096);
    assert_eq!(code, 1, "{err}");
    assert!(err.lines().any(|l| l.starts_with("error: cannot write ") && l.ends_with("copy.nii.gz: File too large")), "{err}");
    assert_eq!(entries(&scratch), Vec::<String>::new());
}
