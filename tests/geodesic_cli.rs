//! `neuroport track geodesic` end to end on a small brain-like phantom: it writes the tractogram
//! and its CSV, the same --seed gives the same bytes, a target keeps and ranks fibres, the DWI
//! route fits first, and bad input fails with one `error:` line, non-zero status and no output.

use neuroport::geodesic::phantoms::{callosal_region, voxel_axes_to_fsl};
use neuroport::io::{tck, trk};
use neuroport::synth::phantom::brain_like;
use neuroport::volume::write_nifti;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn neuroport(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_neuroport")).args(args).output().unwrap()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// tensor, mask-free ROI and target files of a 40 x 40 x 10 phantom.
fn phantom(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let mut ph = brain_like([40, 40, 10], [2.0, 2.0, 3.0], 5);
    voxel_axes_to_fsl(&mut ph.tensor, &ph.geom);
    let t = dir.join("p_tensor.nii.gz");
    write_nifti(&t, &ph.geom, 6, &ph.tensor).unwrap();
    let roi: Vec<f32> = callosal_region(&ph).iter().map(|&v| v as f32).collect();
    assert!(roi.iter().any(|&v| v > 0.0));
    let r = dir.join("roi.nii.gz");
    write_nifti(&r, &ph.geom, 1, &roi).unwrap();
    // target: the left half of the head
    let g = &ph.geom;
    let target: Vec<f32> = (0..g.nvox()).map(|v| ((v % 40) < 14) as u8 as f32).collect();
    let tg = dir.join("target.nii.gz");
    write_nifti(&tg, g, 1, &target).unwrap();
    (t, r, tg)
}

fn csv_rows(p: &Path) -> Vec<Vec<String>> {
    let mut r = csv::Reader::from_path(p).unwrap();
    r.records().map(|x| x.unwrap().iter().map(String::from).collect()).collect()
}

#[test]
fn tracks_writes_and_repeats() {
    let d = tempfile::tempdir().unwrap();
    let (t, roi, target) = phantom(d.path());
    let out1 = d.path().join("a.tck");
    let out2 = d.path().join("b.tck");
    let base = ["--backend", "cpu", "track", "geodesic", "--tensor", s(&t), "--seeds", s(&roi), "--dirs", "4", "--step", "0.2", "--max-steps", "400"];
    for (o, seed) in [(&out1, "9"), (&out2, "9")] {
        let r = neuroport(&[&base[..], &["--seed", seed, "--out", s(o)]].concat());
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    }
    assert_eq!(std::fs::read(&out1).unwrap(), std::fs::read(&out2).unwrap(), "same --seed, same fibres");
    let fibres = tck::read_tck(&out1).unwrap();
    let rows = csv_rows(&d.path().join("a.csv"));
    assert_eq!(fibres.len(), rows.len());
    let nroi = 4 * fibres.len() / 4;
    assert!(nroi >= 8, "{} fibres", fibres.len());
    let long = rows.iter().filter(|r| r[8].parse::<f64>().unwrap() > 10.0).count();
    assert!(long * 2 > rows.len(), "most fibres from the bundle should run > 10 mm: {long} of {}", rows.len());
    // a different seed draws other directions
    let out3 = d.path().join("c.tck");
    let r = neuroport(&[&base[..], &["--seed", "10", "--out", s(&out3)]].concat());
    assert!(r.status.success());
    assert_ne!(std::fs::read(&out1).unwrap(), std::fs::read(&out3).unwrap());

    // a target keeps fewer fibres, ranked by connectivity
    let out4 = d.path().join("t.trk");
    let r = neuroport(&[&base[..], &["--seed", "9", "--target", s(&target), "--out", s(&out4)]].concat());
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let (_, kept) = trk::read_trk(&out4).unwrap();
    let rows = csv_rows(&d.path().join("t.csv"));
    assert_eq!(kept.len(), rows.len());
    assert!(!kept.is_empty() && kept.len() < fibres.len(), "{} of {}", kept.len(), fibres.len());
    assert!(rows.iter().all(|r| r[12] == "1"));
    let cm: Vec<f64> = rows.iter().map(|r| r[11].parse().unwrap()).collect();
    assert!(cm.windows(2).all(|w| w[0] >= w[1]), "ranked by connectivity: {cm:?}");
    // As a .tck: count the fibres kept, total_count every fibre traced (tckgen's meaning).
    let out5 = d.path().join("t2.tck");
    let r = neuroport(&[&base[..], &["--seed", "9", "--target", s(&target), "--out", s(&out5)]].concat());
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let b = std::fs::read(&out5).unwrap();
    let head = String::from_utf8_lossy(&b[..b.len().min(200)]).to_string();
    assert!(head.contains(&format!("\ncount: {}\ntotal_count: {}\n", kept.len(), fibres.len())), "{head}");
}

#[test]
fn seed_file_and_opencl_agree_with_cpu() {
    let d = tempfile::tempdir().unwrap();
    let (t, _, _) = phantom(d.path());
    let sf = d.path().join("seeds.csv");
    // world mm: voxel (20, 26, 5) of 2 x 2 x 3 mm voxels, heading +x and +y
    std::fs::write(&sf, "x,y,z,dx,dy,dz\n40,52,15,1,0,0\n40,52,15,0,1,0\n38,50,15,-1,0.2,0\n").unwrap();
    let mut outs = Vec::new();
    for backend in ["cpu", "opencl"] {
        let o = d.path().join(format!("{backend}.tck"));
        let r = neuroport(&["--backend", backend, "track", "geodesic", "--tensor", s(&t), "--seed-file", s(&sf), "--step", "0.1", "--max-steps", "300", "--interp", "kernel", "--out", s(&o)]);
        if backend == "opencl" && !r.status.success() && String::from_utf8_lossy(&r.stderr).contains("no OpenCL device") {
            assert!(std::env::var("NEUROPORT_REQUIRE_OPENCL").map(|v| v != "1").unwrap_or(true));
            continue;
        }
        assert!(r.status.success(), "{backend}: {}", String::from_utf8_lossy(&r.stderr));
        outs.push(tck::read_tck(&o).unwrap());
    }
    assert_eq!(outs[0].len(), 3);
    assert_eq!(outs[0][0][0], [40.0, 52.0, 15.0], "the first point is the seed, in world mm");
    if outs.len() == 2 {
        for (a, b) in outs[0].iter().zip(&outs[1]) {
            assert!((a.len() as i64 - b.len() as i64).abs() <= 1);
            for (p, q) in a.iter().zip(b) {
                assert!((0..3).all(|c| (p[c] - q[c]).abs() < 0.01), "{p:?} vs {q:?}");
            }
        }
    }
}

#[test]
fn optional_stops_beyond_the_paper() {
    let d = tempfile::tempdir().unwrap();
    let (t, roi, _) = phantom(d.path());
    let run = |extra: &[&str], name: &str| {
        let o = d.path().join(name);
        let r = neuroport(&[&["--backend", "cpu", "track", "geodesic", "--tensor", s(&t), "--seeds", s(&roi), "--dirs", "4", "--step", "0.2"][..], extra, &["--out", s(&o)]].concat());
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
        csv_rows(&d.path().join(name).with_extension("csv"))
    };
    let free = run(&[], "free.tck");
    assert!(free.iter().all(|r| r[10] != "curvature"), "off by default");
    // no voxel reaches FA 0.99: every fibre ends at its seed
    let fa = run(&["--min-fa", "0.99"], "fa.tck");
    assert!(fa.iter().all(|r| r[9] == "0" && r[10] == "left-mask"), "{fa:?}");
    // a tiny turn limit stops every curving fibre early
    let bent = run(&["--max-angle", "0.01"], "bent.tck");
    assert!(bent.iter().filter(|r| r[10] == "curvature").count() * 2 > bent.len(), "{bent:?}");
    let steps = |rows: &[Vec<String>]| rows.iter().map(|r| r[9].parse::<u64>().unwrap()).sum::<u64>();
    assert!(steps(&bent) < steps(&free));
}

#[test]
fn dwi_route_fits_first() {
    let d = tempfile::tempdir().unwrap();
    let mut ph = brain_like([24, 24, 6], [2.0, 2.0, 2.0], 2);
    voxel_axes_to_fsl(&mut ph.tensor, &ph.geom);
    let g = neuroport::synth::gradient_table(2, 20, 1000.0);
    let dwi = neuroport::synth::simulate_dwi(&ph.tensor, 1000.0, &g, f64::INFINITY, 1);
    let (dp, bv, bc) = (d.path().join("dwi.nii.gz"), d.path().join("bvals"), d.path().join("bvecs"));
    write_nifti(&dp, &ph.geom, g.len(), &dwi).unwrap();
    g.write_fsl(&bv, &bc).unwrap();
    let sf = d.path().join("s.csv");
    std::fs::write(&sf, "24,24,6,1,0,0\n").unwrap();
    let o = d.path().join("f.tck");
    let r = neuroport(&["--backend", "cpu", "track", "geodesic", "--dwi", s(&dp), "--bvals", s(&bv), "--bvecs", s(&bc), "--seed-file", s(&sf), "--out", s(&o)]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let f = tck::read_tck(&o).unwrap();
    assert_eq!(f.len(), 1);
    // The noise-free DWI fits back to the phantom's tensors (float32 signal: relative error
    // ~1e-6), so the fibre traced from the fit follows the one traced from the true tensors: same
    // number of points within one (a stop test may flip at the last step), every point within
    // 0.01 mm (300 steps of 0.1 voxel; a 1e-6 metric error moves a 2 mm-voxel geodesic by far
    // less).
    let t = d.path().join("true_tensor.nii.gz");
    write_nifti(&t, &ph.geom, 6, &ph.tensor).unwrap();
    let o2 = d.path().join("t.tck");
    let r = neuroport(&["--backend", "cpu", "track", "geodesic", "--tensor", s(&t), "--seed-file", s(&sf), "--out", s(&o2)]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let g = tck::read_tck(&o2).unwrap();
    assert!(g[0].len() > 10 && (f[0].len() as i64 - g[0].len() as i64).abs() <= 1, "{} vs {} points", f[0].len(), g[0].len());
    for (p, q) in f[0].iter().zip(&g[0]) {
        assert!((0..3).all(|c| (p[c] - q[c]).abs() < 0.01), "{p:?} vs {q:?}");
    }
}

#[test]
fn tensor_input_not_positive_definite_is_repaired_and_counted() {
    let d = tempfile::tempdir().unwrap();
    let (t, roi, _) = phantom(d.path());
    let v = neuroport::volume::read_nifti(&t).unwrap();
    let r = neuroport::volume::read_nifti(&roi).unwrap();
    let n = v.nvox();
    let seeds: Vec<usize> = (0..n).filter(|&i| r.as_flat()[i] > 0.0).collect();
    // the seed voxels' zz component made negative: smallest eigenvalue < 0
    let mut data = v.as_flat().to_vec();
    for &i in &seeds {
        data[5 * n + i] = -2e-3;
    }
    let bad = d.path().join("bad_tensor.nii.gz");
    write_nifti(&bad, &v.geom, 6, &data).unwrap();
    let mut fixed = data.clone();
    assert_eq!(neuroport::dti::repair_tensors(&mut fixed), seeds.len());
    let good = d.path().join("fixed_tensor.nii.gz");
    write_nifti(&good, &v.geom, 6, &fixed).unwrap();
    let run = |t: &Path, name: &str| {
        let o = d.path().join(name);
        let r = neuroport(&["--backend", "cpu", "track", "geodesic", "--tensor", s(t), "--seeds", s(&roi), "--dirs", "2", "--step", "0.2", "--max-steps", "200", "--out", s(&o)]);
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
        (std::fs::read(&o).unwrap(), String::from_utf8_lossy(&r.stderr).to_string())
    };
    let (a, err) = run(&bad, "bad.tck");
    assert!(err.contains(&format!("{} tensors not positive definite were repaired", seeds.len())), "{err}");
    let (b, err2) = run(&good, "good.tck");
    assert!(!err2.contains("repaired"), "{err2}");
    assert_eq!(a, b, "a read tensor is traced as its repaired form");
}

#[test]
fn bad_input_fails_cleanly() {
    let d = tempfile::tempdir().unwrap();
    let (t, roi, _) = phantom(d.path());
    let small = d.path().join("small.nii.gz");
    write_nifti(&small, &neuroport::volume::Geometry::synthetic([4, 4, 4], [1.0; 3]), 1, &[1.0; 64]).unwrap();
    let bad_csv = d.path().join("bad.csv");
    std::fs::write(&bad_csv, "1,2,3,0,0,0\n").unwrap();
    let out = d.path().join("x.tck");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--tensor", "/nonexistent/t.nii.gz", "--seeds", s(&roi)], "no such file"),
        (vec!["--tensor", s(&roi), "--seeds", s(&roi)], "6 volumes"),
        (vec!["--tensor", s(&t), "--seeds", s(&small)], "does not match"),
        (vec!["--tensor", s(&t), "--seed-file", s(&bad_csv)], "zero direction"),
        (vec!["--tensor", s(&t), "--seeds", s(&roi), "--step", "0"], "--step"),
    ];
    for (args, want) in cases {
        let r = neuroport(&[&["--backend", "cpu", "track", "geodesic"][..], &args, &["--out", s(&out)]].concat());
        let err = String::from_utf8_lossy(&r.stderr);
        assert_eq!(r.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.starts_with("error: ") && err.trim_end().lines().count() == 1 && err.contains(want), "{args:?}: {err}");
        assert!(!out.exists());
    }
    let r = neuroport(&["--backend", "cpu", "track", "geodesic", "--tensor", s(&t), "--seeds", s(&roi), "--out", s(&d.path().join("x.vtk"))]);
    assert_eq!(r.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&r.stderr).contains(".tck"));
    let leftovers: Vec<_> = std::fs::read_dir(d.path()).unwrap().filter_map(|e| e.ok()).filter(|e| e.file_name().to_string_lossy().contains(".part-")).collect();
    assert!(leftovers.is_empty());
}

/// More fibres than memory holds (`--dirs` or `--seed-count` far too large) is an error line,
/// not an allocation failure that aborts with a backtrace (or, past usize, a capacity panic).
#[test]
fn too_many_fibres_is_an_error_not_an_abort() {
    let d = tempfile::tempdir().unwrap();
    let (t, roi, _) = phantom(d.path());
    let out = d.path().join("x.tck");
    for extra in [&["--dirs", "99999999999"][..], &["--seed-count", "99999999999"], &["--seed-count", "1000000000000000000"], &["--dirs", "18446744073709551615"]] {
        let r = Command::new(env!("CARGO_BIN_EXE_neuroport"))
            .args([&["--backend", "cpu", "track", "geodesic", "--tensor", s(&t), "--seeds", s(&roi)][..], extra, &["--out", s(&out)]].concat())
            .env("RUST_BACKTRACE", "1")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&r.stderr);
        assert_eq!(r.status.code(), Some(1), "{extra:?}: {err}");
        assert!(err.starts_with("error: ") && err.trim_end().lines().count() == 1 && err.contains("fibres"), "{extra:?}: {err}");
        assert!(!out.exists());
    }
}

/// The optional stops take numbers that mean something: NaN (or a negative turn) was taken
/// silently, --min-fa NaN ending every fibre at its seed, --max-angle NaN stopping nothing.
#[test]
fn optional_stops_refuse_meaningless_values() {
    let d = tempfile::tempdir().unwrap();
    let (t, roi, _) = phantom(d.path());
    let out = d.path().join("x.tck");
    for extra in [&["--min-fa", "nan"][..], &["--min-fa", "-0.5"], &["--min-fa", "1.5"], &["--max-angle", "nan"], &["--max-angle", "-10"], &["--max-angle", "0"]] {
        let r = neuroport(&[&["--backend", "cpu", "track", "geodesic", "--tensor", s(&t), "--seeds", s(&roi)][..], extra, &["--out", s(&out)]].concat());
        let err = String::from_utf8_lossy(&r.stderr);
        assert_eq!(r.status.code(), Some(1), "{extra:?}: {err}");
        assert!(err.starts_with("error: ") && err.trim_end().lines().count() == 1 && err.contains(extra[0]), "{extra:?}: {err}");
        assert!(!out.exists());
    }
}

/// A target with no voxel in the tracking mask cannot be reached: the run wrote an empty
/// tractogram with exit 0 and "0 written ..., mean length -0.0 mm", without a word on why (fim
/// refuses such a region). Now a warning names the target file, and the mean of no fibres is 0.0.
#[test]
fn a_target_outside_the_tracking_mask_is_warned_about() {
    let d = tempfile::tempdir().unwrap();
    let (t, roi, target) = phantom(d.path());
    let ph = brain_like([40, 40, 10], [2.0, 2.0, 3.0], 5);
    // The tracking mask: the right part of the head, where the target (x < 14) is not.
    let right: Vec<f32> = (0..ph.geom.nvox()).map(|v| ((v % 40) >= 14) as u8 as f32).collect();
    let m = d.path().join("right.nii.gz");
    write_nifti(&m, &ph.geom, 1, &right).unwrap();
    let o = d.path().join("f.tck");
    let r = neuroport(&["--backend", "cpu", "track", "geodesic", "--tensor", s(&t), "--seeds", s(&roi), "--mask", s(&m), "--target", s(&target), "--dirs", "4", "--max-steps", "200", "--out", s(&o)]);
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(r.status.success(), "{err}");
    // (the mask's background, where the tensor is zero, has its own warning)
    let warn: Vec<&str> = err.lines().filter(|l| l.starts_with("warning:") && l.contains("target")).collect();
    assert_eq!(warn, [format!("warning: {}: the target ROI has no voxel inside the tracking mask; no fibre can reach it", target.display()).as_str()], "{err}");
    assert!(err.contains("0 written") && err.contains("mean length 0.0 mm"), "{err}");
}

/// Seeds outside the tracking mask stop at once at 0 mm; the summary's mean counted them, so it
/// read far below the length of any fibre traced. Now the mean is over the fibres that moved
/// (as the CSV gives them) and the others are counted apart.
#[test]
fn the_mean_length_leaves_out_fibres_that_stopped_at_their_seed() {
    let d = tempfile::tempdir().unwrap();
    let (t, roi, _) = phantom(d.path());
    let ph = brain_like([40, 40, 10], [2.0, 2.0, 3.0], 5);
    let right: Vec<f32> = (0..ph.geom.nvox()).map(|v| ((v % 40) >= 20) as u8 as f32).collect();
    let m = d.path().join("right.nii.gz");
    write_nifti(&m, &ph.geom, 1, &right).unwrap();
    let o = d.path().join("m.tck");
    let r = neuroport(&["--backend", "cpu", "track", "geodesic", "--tensor", s(&t), "--seeds", s(&roi), "--mask", s(&m), "--dirs", "2", "--max-steps", "200", "--out", s(&o)]);
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(r.status.success(), "{err}");
    let rows = csv_rows(&d.path().join("m.csv"));
    let moved: Vec<f64> = rows.iter().filter(|r| r[9] != "0").map(|r| r[8].parse().unwrap()).collect();
    let still = rows.len() - moved.len();
    assert!(!moved.is_empty() && still > 0, "{} moved, {still} did not", moved.len());
    let mean = moved.iter().sum::<f64>() / moved.len() as f64;
    let want = format!("mean length {mean:.1} mm over the {} that moved, {still} stopped at their seed (0 mm)", moved.len());
    assert!(err.contains(&want), "want {want:?} in {err}");
}

/// `--interp` on the cpu backend was accepted and dropped (the CPU interpolates in float64); a
/// warning says so now, and a run on an OpenCL device, which uses it, has none.
#[test]
fn interp_on_the_cpu_alone_is_warned_about() {
    let d = tempfile::tempdir().unwrap();
    let (t, roi, _) = phantom(d.path());
    let mut backends = vec!["cpu"];
    if !neuroport::Inventory::discover(None).opencl.is_empty() {
        backends.push("opencl");
    }
    for b in backends {
        let o = d.path().join(format!("{b}.tck"));
        let r = neuroport(&["--backend", b, "track", "geodesic", "--tensor", s(&t), "--seeds", s(&roi), "--max-steps", "20", "--interp", "kernel", "--out", s(&o)]);
        let err = String::from_utf8_lossy(&r.stderr);
        assert!(r.status.success(), "{err}");
        let warned = err.lines().any(|l| l == "warning: --interp kernel applies to OpenCL/CUDA only; the cpu backend interpolates in float64 (its reference)");
        assert_eq!(warned, b == "cpu", "--backend {b}: {err}");
    }
}
