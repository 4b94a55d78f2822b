//! The harness end to end at quick scale: CSV, Markdown and plot per table, published figures
//! beside ours, speed-ups against both CPU baselines, and `compare` merging result files.

use std::process::Command;

fn neuroport() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_neuroport"));
    c.env("RUST_BACKTRACE", "1");
    c
}

#[test]
fn geodesic_prep_quick_writes_report_and_compare_merges() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    let o = neuroport()
        .args(["reproduce", "geodesic-prep", "--scale", "quick", "--repeats", "1", "--backend", "cpu", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for ext in ["csv", "md", "png"] {
        let p = out.join(format!("geodesic-prep.{ext}"));
        assert!(std::fs::metadata(&p).map(|m| m.len() > 100).unwrap_or(false), "{} missing or empty", p.display());
    }
    let png = std::fs::read(out.join("geodesic-prep.png")).unwrap();
    assert_eq!(&png[..4], b"\x89PNG");
    let rows = neuroport::repro::read_csv(&out.join("geodesic-prep.csv")).unwrap();
    // one-thread and all-core CPU rows for three stages
    assert_eq!(rows.len(), 6, "{rows:?}");
    let prep: Vec<_> = rows.iter().filter(|r| r.config.starts_with("preparation")).collect();
    assert!(prep.iter().all(|r| r.published == Some(50.0) && r.ours.is_finite() && r.ours > 0.0));
    let base = rows.iter().find(|r| r.variant == "1 thread" && r.config.starts_with("tensor fit")).unwrap();
    assert_eq!(base.speedup_vs_1thread, Some(1.0));
    let md = std::fs::read_to_string(out.join("geodesic-prep.md")).unwrap();
    assert!(md.contains("GeForce GTX 260") && md.contains("brain-like phantom"));

    // Rows carry the machine that ran them and the scale.
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap().trim().to_string();
    assert!(rows.iter().all(|r| r.machine == host && r.scale == "quick" && r.seed == Some(2011) && r.repeats == Some(1)), "{rows:?}");

    // compare: two result files of one machine are told apart by file name as well
    let b = dir.path().join("other.csv");
    std::fs::copy(out.join("geodesic-prep.csv"), &b).unwrap();
    let cmp = dir.path().join("cmp");
    let o = neuroport().arg("compare").arg(out.join("geodesic-prep.csv")).arg(&b).arg("--out").arg(&cmp).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!String::from_utf8_lossy(&o.stderr).contains("warning"), "{}", String::from_utf8_lossy(&o.stderr));
    let merged = neuroport::repro::read_csv(&cmp.join("compare.csv")).unwrap();
    assert_eq!(merged.len(), 12);
    assert!(merged.iter().any(|r| r.source == format!("{host} (other)")) && merged.iter().any(|r| r.source == format!("{host} (geodesic-prep)")), "{merged:?}");
    assert!(cmp.join("compare.png").exists());

    // compare writes through the output set: an existing result is not replaced without --force
    let o = neuroport().arg("compare").arg(&b).arg("--out").arg(&cmp).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("compare.csv already exists") && err.contains("--force"), "{err}");
    let o = neuroport().arg("compare").arg(&b).arg("--out").arg(&cmp).arg("--force").output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(neuroport::repro::read_csv(&cmp.join("compare.csv")).unwrap().len(), 6);

    // a paper-scale file merged with a quick one: a warning naming both; an older file without
    // machine, scale, seed and repeats columns is still read, labelled by its name
    let text = std::fs::read_to_string(&b).unwrap();
    let paper = dir.path().join("paper.csv");
    std::fs::write(&paper, text.replace(",quick,", ",paper,")).unwrap();
    let old = dir.path().join("old.csv");
    let old_text: Vec<String> = text
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.rsplitn(6, ',').collect();
            format!("{},{}", f[5], f[0])
        })
        .collect();
    std::fs::write(&old, old_text.join("\n")).unwrap();
    let cmp2 = dir.path().join("cmp2");
    let o = neuroport().arg("compare").arg(&b).arg(&paper).arg(&old).arg("--out").arg(&cmp2).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("warning: merging runs at different problem sizes") && err.contains("quick scale") && err.contains("paper scale") && err.contains("paper.csv"), "{err}");
    let merged = neuroport::repro::read_csv(&cmp2.join("compare.csv")).unwrap();
    assert!(merged.iter().any(|r| r.source == "old" && r.machine.is_empty()), "{merged:?}");
    let md = std::fs::read_to_string(cmp2.join("compare.md")).unwrap();
    assert!(md.contains("different problem sizes"), "{md}");

    // reproduce refuses to replace its earlier results without --force, before any work
    let o = neuroport().args(["reproduce", "geodesic-prep", "--repeats", "1", "--backend", "cpu", "--out"]).arg(&out).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("geodesic-prep.csv already exists"), "{err}");
}

#[test]
fn unknown_table_and_bad_compare_input_are_clean_errors() {
    let o = neuroport().args(["reproduce", "nope", "--backend", "cpu"]).output().unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.starts_with("error: unknown table 'nope'") && err.contains("geodesic-prep"), "{err}");
    assert!(!err.contains("panicked") && !err.contains("stack backtrace"), "{err}");

    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.csv");
    std::fs::write(&bad, "a,b\n1,2\n").unwrap();
    let o = neuroport().arg("compare").arg(&bad).arg("--out").arg(dir.path().join("c")).output().unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.lines().count() == 1 && err.contains("bad.csv"), "{err}");
}

/// Run as an FSL user whose FSLOUTPUTTYPE is NIFTI (the README's job runs it with .nii.gz): the
/// harness reads back the uncompressed input it made (it looked for dwi.nii.gz and failed).
#[test]
fn pipeline_quick_times_every_stage_and_leaves_no_scratch() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("p");
    let o = neuroport()
        .args(["reproduce", "pipeline", "--scale", "quick", "--repeats", "1", "--seed", "7", "--backend", "cpu", "--out"])
        .arg(&out)
        .env("TMPDIR", dir.path())
        .env("FSLOUTPUTTYPE", "NIFTI")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = neuroport::repro::read_csv(&out.join("pipeline.csv")).unwrap();
    let stages = ["read", "dti fit", "dti write", "bedpost", "bedpost write", "track", "track write", "total"];
    assert_eq!(rows.len(), stages.len(), "{rows:?}");
    for (r, s) in rows.iter().zip(stages) {
        assert_eq!(r.config, s);
        assert!(r.ours.is_finite() && r.ours > 0.0, "{r:?}");
        let split = r.kernel_ms.unwrap() + r.transfer_ms.unwrap() + r.host_ms.unwrap();
        // the split adds up to the stage's wall time (host is wall - device, floored at 0)
        assert!(split >= r.ours * 1e3 * 0.999 - 1e-6, "{r:?}");
    }
    // --seed drives the phantom (it was fixed at 1 whatever was asked)
    let md = std::fs::read_to_string(out.join("pipeline.md")).unwrap();
    assert!(md.contains("sticks phantom [14, 16, 10] at 1.8 mm, seed 7,"), "{md}");
    let total = rows.last().unwrap().ours;
    let sum: f64 = rows[..7].iter().map(|r| r.ours).sum();
    assert!(sum <= total * 1.0001 && sum > 0.8 * total, "stages {sum} s vs total {total} s");
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().filter_map(|e| e.ok()).filter(|e| e.file_name().to_string_lossy().starts_with("neuroport-pipeline")).collect();
    assert!(left.is_empty(), "scratch folders left behind");
}

/// Ctrl-C or SIGTERM during `reproduce pipeline` removes its scratch folders (a simulated
/// dataset and every stage's outputs: gigabytes at paper scale) from TMPDIR, as a failure does;
/// they used to be removed only by a destructor, which a signal never reaches.
#[cfg(unix)]
#[test]
fn an_interrupted_pipeline_leaves_no_scratch() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        let dir = tempfile::tempdir().unwrap();
        let scratch = || std::fs::read_dir(dir.path()).unwrap().filter_map(|e| e.ok()).any(|e| e.file_name().to_string_lossy().starts_with("neuroport-pipeline"));
        let mut child = neuroport()
            .args(["reproduce", "pipeline", "--scale", "quick", "--repeats", "3", "--backend", "cpu", "--out"])
            .arg(dir.path().join("p"))
            .env("TMPDIR", dir.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let t = std::time::Instant::now();
        while !scratch() && t.elapsed() < std::time::Duration::from_secs(60) {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        // well inside the run: the dataset is written and a stage is running
        std::thread::sleep(std::time::Duration::from_millis(100));
        unsafe { libc::kill(child.id() as i32, sig) };
        let status = child.wait().unwrap();
        assert!(!status.success(), "the run ended before the signal: lengthen it");
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().filter_map(|e| e.ok()).map(|e| e.file_name()).collect();
        assert!(left.is_empty(), "signal {sig}: left behind {left:?}");
    }
}

/// A result row as `reproduce` writes it (one CPU row of geodesic-prep).
const GOOD_CSV: &str = "table,config,x,device,device_name,vendor,compute_units,clock_mhz,memory_gib,variant,metric,unit,published,published_device,ours,ratio,kernel_ms,transfer_ms,host_ms,speedup_vs_1thread,speedup_vs_all_cores,substituted,machine,scale,source
geodesic-prep,tensor fit (WLS),,cpu,AMD EPYC,AuthenticAMD,1,2596,23.5,1 thread,time per million voxels,ms,,,911.4,,50.4,0.0,0.0,1.0,0.51,phantom,vm,quick,
";

/// `compare` given a file that holds no result rows (empty, a header only, not text, a folder)
/// names it and stops, rather than merging the other files as if it had been a result file.
#[test]
fn compare_names_a_file_without_result_rows() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.csv");
    std::fs::write(&good, GOOD_CSV).unwrap();
    let header = GOOD_CSV.lines().next().unwrap().to_string() + "\n";
    let folder = dir.path().join("folder.csv");
    std::fs::create_dir(&folder).unwrap();
    for (name, bytes) in [("empty.csv", Some(&b""[..])), ("header.csv", Some(header.as_bytes())), ("binary.csv", Some(&b"\xff\xfe\x00\x01bin"[..])), ("folder.csv", None)] {
        let bad = dir.path().join(name);
        if let Some(b) = bytes {
            std::fs::write(&bad, b).unwrap();
        }
        for files in [vec![&good, &bad], vec![&bad]] {
            let out = dir.path().join("c");
            let o = neuroport().arg("compare").args(&files).arg("--out").arg(&out).output().unwrap();
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(!o.status.success(), "{name} {files:?}: accepted");
            assert!(err.lines().count() == 1 && err.starts_with("error: ") && err.contains(name), "{name}: {err}");
            assert!(!out.exists(), "{name}: output written");
        }
    }
    assert!(neuroport().arg("compare").arg(&good).arg("--out").arg(dir.path().join("ok")).output().unwrap().status.success());
}

/// `--name` names the files inside `--out`: a name with a folder in it (`../x`, `/abs`) wrote
/// outside `--out`, and an empty one wrote hidden `.csv`, `.md` and `.png`; both are refused.
#[test]
fn compare_name_is_a_plain_file_name() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.csv");
    std::fs::write(&good, GOOD_CSV).unwrap();
    let out = dir.path().join("sub").join("c");
    for name in ["", "../escape", "a/b", &format!("{}/abs", dir.path().display())] {
        let o = neuroport().arg("compare").arg(&good).args(["--name", name, "--out"]).arg(&out).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "--name {name:?} accepted");
        assert!(err.lines().count() == 1 && err.contains("--name"), "{name:?}: {err}");
        assert_eq!(common_entries(dir.path()), vec!["good.csv".to_string()], "--name {name:?}");
    }
    let o = neuroport().arg("compare").arg(&good).args(["--name", "amd-vs-nvidia", "--out"]).arg(&out).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.join("amd-vs-nvidia.csv").is_file());
}

fn common_entries(d: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(d).unwrap().filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

/// `--repeats 0` ran one timed run as if 1 had been asked (`reproduce`, `bench register`,
/// `bench probtrack`, `bench nifti`); it is refused now, before any work or file.
#[test]
fn zero_repeats_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    let nii = dir.path().join("x.nii");
    for args in [
        vec!["reproduce", "geodesic-prep", "--backend", "cpu", "--repeats", "0", "--out", out.to_str().unwrap()],
        vec!["bench", "register", "--backend", "cpu", "--dims", "4,4,4", "--repeats", "0"],
        vec!["bench", "probtrack", "--backend", "cpu", "--quick", "--repeats", "0"],
        vec!["bench", "nifti", "--input", nii.to_str().unwrap(), "--repeats", "0"],
    ] {
        let o = neuroport().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.starts_with("error: --repeats must be positive") && err.lines().count() == 1, "{args:?}: {err}");
    }
    assert!(!out.exists());
}

/// A hand-edited NaN or negative time was merged and plotted as if measured; `compare` names the
/// file, row and column and stops.
#[test]
fn compare_refuses_a_time_that_is_not_one() {
    let dir = tempfile::tempdir().unwrap();
    for (from, to, column) in [(",911.4,", ",NaN,", "column ours"), (",911.4,", ",-2,", "column ours"), (",50.4,", ",-0.5,", "column kernel_ms"), (",0.0,0.0,", ",0.0,inf,", "column host_ms")] {
        let bad = dir.path().join("edited.csv");
        std::fs::write(&bad, GOOD_CSV.replacen(from, to, 1)).unwrap();
        let out = dir.path().join("c");
        let o = neuroport().arg("compare").arg(&bad).arg("--out").arg(&out).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{to}: {err}");
        assert!(err.starts_with("error: ") && err.contains("edited.csv: row 2, ") && err.contains(column) && err.lines().count() == 1, "{to}: {err}");
        assert!(!out.exists());
    }
}

/// `compare a.csv a.csv` merged the one file's rows twice (doubled points, one machine shown
/// as two files) without a word.
#[test]
fn compare_refuses_the_same_file_twice() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.csv");
    std::fs::write(&a, GOOD_CSV).unwrap();
    let out = dir.path().join("c");
    let o = neuroport().arg("compare").arg(&a).arg(dir.path().join(".").join("a.csv")).arg("--out").arg(&out).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.starts_with("error: ") && err.contains("a.csv: given twice") && err.lines().count() == 1, "{err}");
    assert!(!out.exists());
}

/// `compare geodesic-t3.csv fim-t1.csv` merged two tables' rows into one table and plot (no
/// config or metric in common) with exit 0; it names both files and tables now.
#[test]
fn compare_refuses_files_of_different_tables() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.csv");
    std::fs::write(&a, GOOD_CSV).unwrap();
    let b = dir.path().join("b.csv");
    std::fs::write(&b, GOOD_CSV.replace("\ngeodesic-prep,", "\nfim-t1,")).unwrap();
    let out = dir.path().join("c");
    let o = neuroport().arg("compare").arg(&a).arg(&b).arg("--out").arg(&out).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.starts_with("error: ") && err.contains("b.csv") && err.contains("'fim-t1'") && err.contains("a.csv") && err.contains("'geodesic-prep'") && err.lines().count() == 1, "{err}");
    assert!(!out.exists());
}

/// A config holding `|` or a line break (a hand-edited result file) split its Markdown row
/// into extra columns in `compare`'s table.
#[test]
fn compare_markdown_keeps_one_cell_per_column() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.csv");
    std::fs::write(&a, GOOD_CSV.replace("tensor fit (WLS)", "\"fit | WLS\nrun 2\"")).unwrap();
    let out = dir.path().join("c");
    let o = neuroport().arg("compare").arg(&a).arg("--out").arg(&out).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let md = std::fs::read_to_string(out.join("compare.md")).unwrap();
    let rows: Vec<&str> = md.lines().filter(|l| l.starts_with('|')).collect();
    assert_eq!(rows.len(), 3, "{md}");
    for r in rows {
        assert_eq!(r.matches('|').count() - r.matches("\\|").count(), 13, "{r}");
    }
}

/// airwc's "evaluations" rows (a count, no unit) read "evaluations []" in the Markdown table.
#[test]
fn a_metric_without_unit_has_no_empty_brackets() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.csv");
    std::fs::write(&a, GOOD_CSV.replace(",time per million voxels,ms,", ",evaluations,,")).unwrap();
    let out = dir.path().join("c");
    let o = neuroport().arg("compare").arg(&a).arg("--out").arg(&out).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let md = std::fs::read_to_string(out.join("compare.md")).unwrap();
    assert!(md.contains("| evaluations |") && !md.contains("[]"), "{md}");
}

/// A reader that leaves early (`neuroport compare ... | head -1`): println! panicked with a
/// backtrace (exit 101), and reproduce, which prints each table before writing it, lost its
/// files. The commands now finish their work and exit as they would have.
#[cfg(unix)]
#[test]
fn a_closed_stdout_is_not_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.csv");
    std::fs::write(&a, GOOD_CSV).unwrap();
    let out = dir.path().join("c");
    let r = dir.path().join("r");
    let runs: [(Vec<std::ffi::OsString>, Option<std::path::PathBuf>); 3] = [
        (vec!["compare".into(), a.clone().into(), "--out".into(), out.clone().into()], Some(out.join("compare.csv"))),
        (vec!["reproduce".into(), "geodesic-prep".into(), "--repeats".into(), "1".into(), "--backend".into(), "cpu".into(), "--out".into(), r.clone().into()], Some(r.join("geodesic-prep.png"))),
        (vec!["check".into(), "--backend".into(), "cpu".into(), "--seed".into(), "1".into()], None),
    ];
    for (args, file) in runs {
        let mut child = neuroport().args(&args).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
        drop(child.stdout.take());
        let o = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {err}");
        assert!(!err.contains("panicked") && !err.contains("backtrace"), "{args:?}: {err}");
        if let Some(f) = file {
            assert!(f.is_file(), "{args:?}: {} not written", f.display());
        }
    }
}

/// `compare r/x.csv other.csv --out r --name x --force` replaced the input r/x.csv (a machine's
/// only copy of its results) with the merge; it is refused, naming the file, and left as it was.
#[test]
fn compare_does_not_replace_a_file_it_merges() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path().join("r");
    std::fs::create_dir(&r).unwrap();
    let a = r.join("geodesic-prep.csv");
    std::fs::write(&a, GOOD_CSV).unwrap();
    let b = dir.path().join("b.csv");
    std::fs::write(&b, GOOD_CSV.replace(",vm,", ",box,")).unwrap();
    for force in [false, true] {
        let mut c = neuroport();
        c.arg("compare").arg(&a).arg(&b).arg("--out").arg(dir.path().join(".").join("r")).args(["--name", "geodesic-prep"]);
        if force {
            c.arg("--force");
        }
        let o = c.output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "--force {force}: {err}");
        assert!(err.starts_with("error: ") && err.contains("geodesic-prep.csv") && err.lines().count() == 1, "{err}");
        assert_eq!(std::fs::read_to_string(&a).unwrap(), GOOD_CSV);
        assert_eq!(common_entries(&r), vec!["geodesic-prep.csv".to_string()]);
    }
}

/// `reproduce --out /proc/x` ran its table and only then failed to make the folder; a folder
/// that cannot be made is now refused before any work, and no probe is left behind.
#[test]
fn an_out_folder_that_cannot_be_made_is_refused_first() {
    let o = neuroport().args(["reproduce", "geodesic-prep", "--repeats", "1", "--backend", "cpu", "--out", "/proc/neuroport-x"]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_ne!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("cannot create the folder /proc/neuroport-x: /proc takes no new folder"), "{err}");
    assert!(o.stdout.is_empty() && !err.contains("geodesic-prep:"), "the table ran first: {err}");
    // A folder that can be made is made, and the probe is gone.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("a").join("b");
    let o = neuroport().args(["synth", "--out"]).arg(&out).args(["--dims", "6,6,4"]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, vec![std::ffi::OsString::from("a")]);
}

/// GOOD_CSV as `reproduce --seed SEED --repeats N` writes it now.
fn run_with(seed: u64, repeats: usize) -> String {
    GOOD_CSV.replace("scale,source", "scale,seed,repeats,source").replace(",vm,quick,", &format!(",vm,quick,{seed},{repeats},"))
}

/// Runs made with another --seed (other synthetic data) or --repeats (medians of another number
/// of runs) were merged without a word, unlike runs at another --scale; `compare` names the
/// files and values now, on stderr and in the Markdown notes.
#[test]
fn compare_says_when_runs_differ_in_seed_or_repeats() {
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let (a, a2, b, c) = (file("a.csv", &run_with(2011, 3)), file("a2.csv", &run_with(2011, 3)), file("b.csv", &run_with(7, 3)), file("c.csv", &run_with(2011, 1)));
    let old = file("old.csv", GOOD_CSV);
    let seeds = format!("warning: merging runs on different synthetic data: --seed 2011 ({}) and --seed 7 ({})", a.display(), b.display());
    let repeats = format!("warning: merging runs timed over different numbers of runs: --repeats 3 ({}) and --repeats 1 ({}); their medians are not equally steady", a.display(), c.display());
    let unrecorded = format!("--seed and --repeats not recorded in {} (written by an older neuroport)", old.display());
    for (i, (files, want)) in [(vec![&a, &a2], vec![]), (vec![&a, &b], vec![seeds.as_str()]), (vec![&a, &c], vec![repeats.as_str()]), (vec![&a, &old], vec![])].into_iter().enumerate() {
        let out = dir.path().join(format!("c{i}"));
        let o = neuroport().arg("compare").args(&files).arg("--out").arg(&out).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{err}");
        assert_eq!(err.lines().collect::<Vec<_>>(), want, "{files:?}");
        let md = std::fs::read_to_string(out.join("compare.md")).unwrap();
        assert!(want.iter().all(|w| md.contains(w)), "{md}");
        assert_eq!(md.contains(&unrecorded), files.contains(&&old), "{md}");
        // The columns round-trip through the merged CSV.
        let merged = neuroport::repro::read_csv(&out.join("compare.csv")).unwrap();
        assert_eq!(merged[0].seed, Some(2011));
    }
}
