//! `neuroport probtrack` end to end on a bedpost-like folder made from the crossing phantom:
//! probtrackx2's files, identical bytes for the same --seed whatever the schedule and
//! compaction path, and clean one-line errors (nothing written) for bad inputs.

mod common;
use common::{entries, run, s};
use neuroport::probtrack::phantom;
use neuroport::volume::{read_nifti, write_nifti};
use std::path::Path;

fn folder(dir: &Path) -> std::path::PathBuf {
    let t = phantom::crossing();
    let a = t.angles(8, 8.0, 11);
    let bp = dir.join("bp");
    t.write_bedpost(&a, &bp).unwrap();
    let g = &t.geom;
    let mask = |pick: &dyn Fn(usize, usize, usize) -> bool| -> Vec<f32> {
        let [nx, ny, nz] = g.dims;
        let mut m = vec![0.0f32; nx * ny * nz];
        for z in 0..nz {
            for y in 0..ny {
                for x in 0..nx {
                    m[g.index(x, y, z)] = (pick(x, y, z) && (7..13).contains(&y) && (1..7).contains(&z)) as u8 as f32;
                }
            }
        }
        m
    };
    write_nifti(&dir.join("seeds.nii.gz"), g, 1, &mask(&|x, y, z| x == 3 && (9..11).contains(&y) && (3..5).contains(&z))).unwrap();
    write_nifti(&dir.join("far.nii.gz"), g, 1, &mask(&|x, _, _| x >= 21)).unwrap();
    write_nifti(&dir.join("mid.nii.gz"), g, 1, &mask(&|x, _, _| x == 12)).unwrap();
    write_nifti(&dir.join("wrong.nii.gz"), &neuroport::volume::Geometry::synthetic([5, 5, 5], [2.0; 3]), 1, &[1.0; 125]).unwrap();
    bp
}

fn probtrack(dir: &Path, out: &Path, extra: &[&str]) -> (i32, String, String) {
    let (bp, seeds) = (dir.join("bp"), dir.join("seeds.nii.gz"));
    let mut args = vec!["probtrack", "--nsamples", "16", "--max-steps", "300", "--seed", "3", "--backend", "cpu", "--out", s(out)];
    // Defaults for what `extra` does not give.
    for (flag, v) in [("--bedpost", s(&bp)), ("--seeds", s(&seeds)), ("--step", "0.5")] {
        if !extra.contains(&flag) {
            args.extend([flag, v]);
        }
    }
    args.extend_from_slice(extra);
    run(&args, &[])
}

#[test]
fn probtrack_writes_probtrackx_outputs_identically_for_any_schedule() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    folder(d);
    let targets = format!("{},{}", s(&d.join("far.nii.gz")), s(&d.join("mid.nii.gz")));
    let tck = d.join("o1/lines.tck");
    let (code, stdout, err) = probtrack(d, &d.join("o1"), &["--targets", &targets, "--out-tck", s(&tck)]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("lambda"), "{err}");
    assert_eq!(
        entries(&d.join("o1")),
        ["fdt_paths.nii.gz", "lengths.csv", "lines.tck", "matrix_seeds_to_all_targets.csv", "seeds_to_far.nii.gz", "seeds_to_mid.nii.gz", "waytotal"]
    );
    assert_eq!(stdout.lines().count(), 7);
    let nseeds = 2 * 2;
    assert_eq!(std::fs::read_to_string(d.join("o1/waytotal")).unwrap().trim(), (nseeds * 16).to_string());
    let far = read_nifti(&d.join("o1/seeds_to_far.nii.gz")).unwrap();
    let reached: f32 = far.as_flat().iter().sum();
    assert!(reached >= 0.9 * (nseeds * 16) as f32, "{reached}");
    let lines = neuroport::io::tck::read_tck(&tck).unwrap();
    assert_eq!(lines.len(), nseeds * 16);
    let fdt = read_nifti(&d.join("o1/fdt_paths.nii.gz")).unwrap();
    assert!(fdt.as_flat().iter().all(|&c| c <= (nseeds * 16) as f32), "a voxel counted twice per streamline at most once per entry");
    let matrix = std::fs::read_to_string(d.join("o1/matrix_seeds_to_all_targets.csv")).unwrap();
    assert_eq!(matrix.lines().next(), Some("x,y,z,far,mid"));
    assert_eq!(matrix.lines().count(), 1 + nseeds);
    for (i, (sched, how)) in [("A1", "host"), ("A_MaxStep", "device"), ("C", "device")].iter().enumerate() {
        let o = d.join(format!("r{i}"));
        let (code, _, err) = probtrack(d, &o, &["--targets", &targets, "--schedule", sched, "--compaction", how]);
        assert_eq!(code, 0, "{err}");
        for f in ["fdt_paths.nii.gz", "lengths.csv", "matrix_seeds_to_all_targets.csv", "seeds_to_far.nii.gz", "waytotal"] {
            assert_eq!(std::fs::read(o.join(f)).unwrap(), std::fs::read(d.join("o1").join(f)).unwrap(), "{sched}: {f}");
        }
    }
    // A waypoint keeps only the streamlines through it; an exclusion mask discards those entering.
    let (code, _, err) = probtrack(d, &d.join("w"), &["--waypoints", s(&d.join("mid.nii.gz"))]);
    assert_eq!(code, 0, "{err}");
    let kept: usize = std::fs::read_to_string(d.join("w/waytotal")).unwrap().trim().parse().unwrap();
    assert!(kept > 0 && kept <= nseeds * 16);
    let xtck = d.join("x.tck");
    let (code, _, err) = probtrack(d, &d.join("x"), &["--exclusion", s(&d.join("mid.nii.gz")), "--out-tck", s(&xtck)]);
    assert_eq!(code, 0, "{err}");
    let left: usize = std::fs::read_to_string(d.join("x/waytotal")).unwrap().trim().parse().unwrap();
    assert_eq!(left + kept, nseeds * 16, "every streamline either passes the mid plane or not");
    // As tckgen: count is what the file holds, total_count every streamline started (tckinfo
    // shows both; count / total_count is the fraction kept).
    let b = std::fs::read(&xtck).unwrap();
    let head = String::from_utf8_lossy(&b[..b.len().min(200)]).to_string();
    assert!(head.contains(&format!("\ncount: {left}\ntotal_count: {}\n", nseeds * 16)), "{head}");
}

#[test]
fn bad_inputs_give_one_clean_error_and_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let bp = folder(d);
    let out = d.join("o");
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec!["--seeds".into(), s(&d.join("wrong.nii.gz")).into()], "wrong.nii.gz"),
        (vec!["--targets".into(), s(&d.join("wrong.nii.gz")).into()], "wrong.nii.gz"),
        (vec!["--schedule".into(), "A0".into()], "schedule"),
        (vec!["--step".into(), "0".into()], "--step"),
        // A step longer than the grid ended every streamline at once: 0 steps, exit 0.
        (vec!["--step".into(), "1e30".into()], "--step 1e30 mm is longer than the image (48 mm along its longest edge)"),
        (vec!["--step".into(), "49".into()], "--step 49 mm is longer than the image"),
        (vec!["--step".into(), "nan".into()], "--step"),
        (vec!["--bedpost".into(), s(&d.join("nothing")).into()], "nothing"),
    ];
    for (extra, needle) in cases {
        let e: Vec<&str> = extra.iter().map(String::as_str).collect();
        let (code, _, err) = probtrack(d, &out, &e);
        assert_ne!(code, 0, "{extra:?}");
        assert!(err.contains(needle) && !err.contains("panicked") && !err.contains("backtrace"), "{extra:?}: {err}");
        assert!(!out.exists(), "{extra:?} left output behind");
    }
    std::fs::remove_file(bp.join("merged_f2samples.nii.gz")).unwrap();
    let (code, _, err) = probtrack(d, &out, &[]);
    assert_ne!(code, 0);
    assert!(err.starts_with("error:") && err.contains("merged_f2samples.nii.gz") && err.lines().count() == 1, "{err}");
    assert!(!out.exists());
}

/// Seed, tracking, exclusion, waypoint and target masks of the samples' size but another
/// voxel-to-world affine (shifted 10 mm) are refused naming the mask and the samples, as every
/// other command refuses a mask off its data's grid (README, "Masks and ROIs"): probtrack used
/// to compare only the grid size and tracked from the wrong voxels without a word.
#[test]
fn masks_of_the_right_size_on_another_affine_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    folder(d);
    let seeds = read_nifti(&d.join("seeds.nii.gz")).unwrap();
    let mut g = seeds.geom.clone();
    g.header.srow_x[3] += 10.0;
    g.header.quatern_x += 10.0;
    let shifted = d.join("shifted.nii.gz");
    write_nifti(&shifted, &g, 1, seeds.as_flat()).unwrap();
    let out = d.join("o");
    for flag in ["--seeds", "--mask", "--exclusion", "--waypoints", "--targets"] {
        let (code, _, err) = probtrack(d, &out, &[flag, s(&shifted)]);
        assert_ne!(code, 0, "{flag}: {err}");
        assert!(err.starts_with("error:") && err.lines().count() == 1 && err.contains("shifted.nii.gz") && err.contains("merged_th1samples") && err.contains("affine"), "{flag}: {err}");
        assert!(!out.exists(), "{flag} left output behind");
    }
    // The same mask written again on the samples' own grid is taken.
    let same = d.join("same.nii.gz");
    write_nifti(&same, &seeds.geom, 1, seeds.as_flat()).unwrap();
    let (code, _, err) = probtrack(d, &out, &["--seeds", s(&same), "--mask", s(&same)]);
    assert_eq!(code, 0, "{err}");
}

/// bedpost's folder written uncompressed (FSLOUTPUTTYPE=NIFTI: merged_*samples.nii) is read as
/// the .nii.gz one, with the same outputs byte for byte; a folder holding neither names the
/// file it looked for.
#[test]
fn a_bedpost_folder_of_nii_files_tracks_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let bp = folder(d);
    let nii = d.join("bp-nii");
    std::fs::create_dir_all(&nii).unwrap();
    for e in std::fs::read_dir(&bp).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().replace(".nii.gz", ".nii");
        let v = read_nifti(&p).unwrap();
        write_nifti(&nii.join(name), &v.geom, v.nvol(), v.as_flat()).unwrap();
    }
    let (a, b) = (d.join("a"), d.join("b"));
    let (code, _, err) = probtrack(d, &a, &[]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = probtrack(d, &b, &["--bedpost", s(&nii)]);
    assert_eq!(code, 0, "{err}");
    let names = entries(&a);
    assert!(names.iter().any(|n| n.starts_with("fdt_paths")), "{names:?}");
    assert_eq!(names, entries(&b));
    for n in names {
        assert!(std::fs::read(a.join(&n)).unwrap() == std::fs::read(b.join(&n)).unwrap(), "{n} differs");
    }
    std::fs::remove_file(nii.join("merged_ph2samples.nii")).unwrap();
    let (code, _, err) = probtrack(d, &d.join("c"), &["--bedpost", s(&nii)]);
    assert_ne!(code, 0);
    assert!(err.starts_with("error:") && err.contains("merged_ph2samples.nii") && err.lines().count() == 1, "{err}");
}

/// Every existing output is refused before any work, as the other commands do: probtrack read
/// the samples and traced every streamline (26 s on a 200-voxel seed mask at --nsamples 20000)
/// and only then refused its first file. Shown here by a missing --bedpost folder, which would
/// otherwise be the error.
#[test]
fn existing_outputs_are_refused_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    folder(d);
    let targets = format!("{},{}", s(&d.join("far.nii.gz")), s(&d.join("mid.nii.gz")));
    let out = d.join("o");
    let tck = d.join("t").join("lines.tck");
    for name in ["fdt_paths.nii.gz", "waytotal", "lengths.csv", "seeds_to_mid.nii.gz", "matrix_seeds_to_all_targets.csv", "lines.tck"] {
        let _ = std::fs::remove_dir_all(&out);
        let _ = std::fs::remove_dir_all(tck.parent().unwrap());
        let p = if name == "lines.tck" { tck.clone() } else { out.join(name) };
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, b"mine").unwrap();
        let (code, _, err) = probtrack(d, &out, &["--bedpost", s(&d.join("missing")), "--targets", &targets, "--out-tck", s(&tck)]);
        assert_eq!(code, 1, "{name}: {err}");
        assert_eq!(err.trim(), format!("error: {} already exists (use --force to overwrite)", p.display()), "{name}");
        assert_eq!(std::fs::read(&p).unwrap(), b"mine");
    }
}

/// --fibthresh is a volume fraction: NaN (no stick is ever above it) was taken silently and
/// every streamline stopped at its seed, as did any threshold of 1 or more.
#[test]
fn fibthresh_must_be_a_fraction() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    folder(d);
    let out = d.join("o");
    for v in ["nan", "-0.1", "1", "inf"] {
        let (code, _, err) = probtrack(d, &out, &["--fibthresh", v]);
        assert_eq!(code, 1, "--fibthresh {v}: {err}");
        assert!(err.starts_with("error:") && err.trim().lines().count() == 1 && err.contains("--fibthresh"), "--fibthresh {v}: {err}");
        assert!(!out.exists());
    }
    let (code, _, err) = probtrack(d, &out, &["--fibthresh", "0"]);
    assert_eq!(code, 0, "{err}");
}

/// Seed voxels outside the tracking mask give streamlines that stop at once: probtrack said
/// nothing (exit 0, waytotal = the streamlines, every length 0 and "lambda NaN" in the summary)
/// where `track geodesic` warns. Now one warning counts them, naming the seed file; seeds all
/// inside say nothing.
#[test]
fn seeds_outside_the_tracking_mask_are_counted_in_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    folder(d);
    let seeds = read_nifti(&d.join("seeds.nii.gz")).unwrap();
    let n = seeds.as_flat().iter().filter(|&&v| v != 0.0).count();
    assert_eq!(n, 4);
    // A tracking mask holding the far region and the first seed voxel only.
    let far = read_nifti(&d.join("far.nii.gz")).unwrap();
    let first = seeds.as_flat().iter().position(|&v| v != 0.0).unwrap();
    let mut m = far.as_flat().to_vec();
    m[first] = 1.0;
    write_nifti(&d.join("track.nii.gz"), &far.geom, 1, &m).unwrap();
    for (mask, outside) in [("far.nii.gz", 4), ("track.nii.gz", 3)] {
        let out = d.join(format!("o_{mask}"));
        let (code, _, err) = probtrack(d, &out, &["--mask", s(&d.join(mask))]);
        assert_eq!(code, 0, "{err}");
        let warn: Vec<&str> = err.lines().filter(|l| l.starts_with("warning:")).collect();
        let want = format!("warning: {}: {outside} of 4 seed voxels lie outside the tracking mask; their streamlines stop at once", d.join("seeds.nii.gz").display());
        assert_eq!(warn, [want.as_str()], "--mask {mask}: {err}");
        // Every length 0 (far.nii.gz) fits no exp(-lambda x): said, not "lambda NaN/step".
        assert!(!err.contains("NaN"), "--mask {mask}: {err}");
        // Streamlines that took no step are counted apart, not averaged in as "mean 0.0 steps".
        assert!(err.contains(" took no step") && !err.contains("mean 0.0 steps"), "--mask {mask}: {err}");
    }
    let (code, _, err) = probtrack(d, &d.join("o_all"), &[]);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("warning"), "{err}");
}

/// --out-tck writes MRtrix .tck: a name ending in anything else (paths.trk, paths.txt) got
/// .tck bytes under it, which TrackVis tools reject, with exit 0. Now it is refused before any
/// work, as fim's --out-tck is, and nothing is written; .TCK is taken.
#[test]
fn out_tck_must_name_a_tck_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    folder(d);
    for name in ["paths.trk", "paths.txt", "paths"] {
        let out = d.join("o");
        let tck = d.join(name);
        let (code, _, err) = probtrack(d, &out, &["--out-tck", s(&tck)]);
        assert_ne!(code, 0, "{name}");
        assert_eq!(err.trim(), format!("error: {}: --out-tck must name a .tck file (MRtrix)", tck.display()), "{name}");
        assert!(!out.exists() && !tck.exists(), "{name} left output behind");
    }
    let (code, _, err) = probtrack(d, &d.join("o"), &["--out-tck", s(&d.join("paths.TCK"))]);
    assert_eq!(code, 0, "{err}");
    assert!(neuroport::io::tck::read_tck(&d.join("paths.TCK")).is_ok());
}

/// An exclusion mask over seed voxels discards every streamline from them (they start inside
/// it): the run exited 0 with waytotal 0 and no word of why. Now one warning counts them,
/// naming the exclusion and seed files.
#[test]
fn seeds_inside_the_exclusion_mask_are_counted_in_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    folder(d);
    let seeds = d.join("seeds.nii.gz");
    let (code, _, err) = probtrack(d, &d.join("o"), &["--exclusion", s(&seeds)]);
    assert_eq!(code, 0, "{err}");
    let warn: Vec<&str> = err.lines().filter(|l| l.starts_with("warning:")).collect();
    let want = format!("warning: {}: 4 of 4 seed voxels of {} lie inside the exclusion mask; their streamlines are all discarded", seeds.display(), seeds.display());
    assert_eq!(warn, [want.as_str()], "{err}");
    assert_eq!(std::fs::read_to_string(d.join("o").join("waytotal")).unwrap().trim(), "0");
    let (code, _, err) = probtrack(d, &d.join("o2"), &["--exclusion", s(&d.join("far.nii.gz"))]);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("warning"), "{err}");
}

/// --max-steps sizes the run's length histograms (~20 bytes a step, more on the host): the
/// largest value allowed before, 2^30 - 1, aborted allocating 21 GB ("memory allocation
/// failed" and a backtrace), and past ~4.3e8 steps the kernels' int indices into the counters
/// would have wrapped. Now a one-line error naming the option and its limit.
#[test]
fn max_steps_beyond_the_counters_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let bp = folder(d);
    let out = d.join("o");
    for steps in ["1073741823", "100000001"] {
        let (code, stdout, err) = run(&["probtrack", "--backend", "cpu", "--bedpost", s(&bp), "--seeds", s(&d.join("seeds.nii.gz")), "--nsamples", "4", "--max-steps", steps, "--out", s(&out)], &[]);
        assert_ne!(code, 0, "{steps}: {err}");
        assert!(err.starts_with("error:") && err.lines().count() == 1 && err.contains("--max-steps must be between 1 and 100000000"), "{steps}: {err}");
        assert!(stdout.is_empty() && !err.contains("panicked") && !err.contains("memory allocation"), "{err}");
        assert!(!out.exists(), "{steps} left output behind");
    }
}

/// A folder of one stick per voxel (`bedpostx -n 1`: merged_{th,ph,f}1samples only) is tracked,
/// as probtrackx tracks it: the same bytes as the two-stick folder whose second fractions are
/// all 0 (a stick no --fibthresh lets the step follow). A third stick's files (`-n 3`) are named
/// in a warning and left aside. Before, the single-stick folder was refused for want of
/// merged_th2samples.
#[test]
fn a_single_stick_bedpost_folder_is_tracked() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let bp = folder(d);
    let (one, zero) = (d.join("bp-one"), d.join("bp-zero"));
    for f in [&one, &zero] {
        std::fs::create_dir_all(f).unwrap();
    }
    for e in std::fs::read_dir(&bp).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        if !name.contains("2samples") {
            std::fs::copy(&p, one.join(&name)).unwrap();
        }
        if name.starts_with("merged_f2samples") {
            let v = read_nifti(&p).unwrap();
            write_nifti(&zero.join(&name), &v.geom, v.nvol(), &vec![0.0f32; v.as_flat().len()]).unwrap();
        } else {
            std::fs::copy(&p, zero.join(&name)).unwrap();
        }
    }
    let (a, b) = (d.join("a"), d.join("b"));
    let (code, _, err) = probtrack(d, &a, &["--bedpost", s(&one)]);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("warning"), "{err}");
    let (code, _, err) = probtrack(d, &b, &["--bedpost", s(&zero)]);
    assert_eq!(code, 0, "{err}");
    let names = entries(&a);
    assert!(names.iter().any(|n| n.starts_with("fdt_paths")), "{names:?}");
    assert_eq!(names, entries(&b));
    for n in &names {
        assert!(std::fs::read(a.join(n)).unwrap() == std::fs::read(b.join(n)).unwrap(), "{n} differs");
    }
    let paths = read_nifti(&a.join(names.iter().find(|n| n.starts_with("fdt_paths")).unwrap())).unwrap();
    assert!(paths.as_flat().iter().any(|&x| x > 0.0), "no streamline was traced");

    // A third stick: its files beside the first two, named in a warning, the first two tracked.
    for (from, to) in [("th1", "th3"), ("ph1", "ph3"), ("f1", "f3")] {
        std::fs::copy(bp.join(format!("merged_{from}samples.nii.gz")), zero.join(format!("merged_{to}samples.nii.gz"))).unwrap();
    }
    let c = d.join("c");
    let (code, _, err) = probtrack(d, &c, &["--bedpost", s(&zero)]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("warning:") && err.contains("merged_th3samples") && err.contains("first two sticks"), "{err}");
    for n in &names {
        assert!(std::fs::read(a.join(n)).unwrap() == std::fs::read(c.join(n)).unwrap(), "{n} differs with a third stick beside");
    }
}

/// --compaction and --overlap are GPU options: on --backend cpu they were taken without a word
/// and the summary said "device compaction", though the CPU compacts in memory on the host
/// whichever is asked for. One warning line now, the summary says "host compaction", and the
/// outputs are those of the run without the options.
#[test]
fn gpu_only_options_on_the_cpu_are_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    folder(d);
    let (code, _, plain) = probtrack(d, &d.join("a"), &[]);
    assert_eq!(code, 0, "{plain}");
    assert!(!plain.contains("warning:") && plain.contains("host compaction") && !plain.contains("device compaction"), "{plain}");
    let (code, _, err) = probtrack(d, &d.join("b"), &["--compaction", "host", "--overlap"]);
    assert_eq!(code, 0, "{err}");
    let warnings: Vec<&str> = err.lines().filter(|l| l.starts_with("warning:")).collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(warnings[0].contains("--compaction host and --overlap apply to OpenCL/CUDA only"), "{err}");
    assert!(err.contains("host compaction") && !err.contains("device compaction"), "{err}");
    let (code, _, err) = probtrack(d, &d.join("c"), &["--compaction", "device"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("warning: --compaction device applies to OpenCL/CUDA only") && !err.contains("device compaction"), "{err}");
    for f in ["fdt_paths.nii.gz", "waytotal", "lengths.csv"] {
        assert_eq!(std::fs::read(d.join("b").join(f)).unwrap(), std::fs::read(d.join("a").join(f)).unwrap(), "{f}");
    }
}

/// A run smaller than one batch (2^20 streamlines on the CPU) said nothing in a log until its
/// summary: the bar moved once, at the batch's end, from 0 to 100 %. It now moves as paths end,
/// after each segment's compaction, and the outputs are the same bytes whatever the schedule.
#[test]
fn a_run_of_one_batch_reports_progress_in_a_log() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    folder(d);
    // stderr is a pipe here, as in a batch job: plain lines, no bar.
    let (code, _, err) = probtrack(d, &d.join("o"), &[]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("probtrack: ")).collect();
    assert!(!lines.is_empty(), "{err}");
    for l in &lines {
        let (done, rest) = l["probtrack: ".len()..].split_once('/').unwrap();
        let done: u32 = done.parse().unwrap();
        assert!(rest.starts_with("64 streamlines (") && (7..64).contains(&done), "{l}");
    }
    assert!(!err.contains('\r') && !err.contains('\x1b'), "{err:?}");
}
