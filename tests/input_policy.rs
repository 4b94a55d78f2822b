//! Issue 11, "Inputs the ecosystem writes": every accepted layout reads, every suspicious one is
//! warned about by name, and every unusable one is refused with one line naming the file(s).

mod common;
use common::*;
use neuroport::volume::{read_bvals_bvecs, read_mask_like, read_mrtrix_grad, read_nifti, write_nifti, Geometry, GradFiles};
use std::path::{Path, PathBuf};

fn dataset(dir: &Path) -> (PathBuf, PathBuf, PathBuf, PathBuf) {
    small_dataset(dir, [8, 8, 5], 30.0, 3);
    (dir.join("dwi.nii.gz"), dir.join("bvals"), dir.join("bvecs"), dir.join("mask.nii.gz"))
}

fn dti(dwi: &Path, bvals: &Path, bvecs: &Path, mask: Option<&Path>, out: &Path) -> (i32, String, String) {
    let mut a = vec!["dti", "--backend", "cpu", "--dwi", s(dwi), "--bvals", s(bvals), "--bvecs", s(bvecs), "--out", s(out)];
    if let Some(m) = mask {
        a.extend(["--mask", s(m)]);
    }
    run(&a, &[("RUST_BACKTRACE", "1")])
}

fn rows(p: &Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(p).unwrap().lines().map(|l| l.split_whitespace().map(String::from).collect()).collect()
}

fn write_rows(p: &Path, r: &[Vec<String>]) {
    std::fs::write(p, r.iter().map(|x| x.join(" ")).collect::<Vec<_>>().join("\n") + "\n").unwrap();
}

#[test]
fn bvecs_in_either_layout_and_nan_on_b0_volumes_read_alike() {
    let tmp = tempfile::tempdir().unwrap();
    let (dwi, bvals, bvecs, _) = dataset(tmp.path());
    let nvol = read_nifti(&dwi).unwrap().nvol();
    let fsl = read_bvals_bvecs(&bvals, &bvecs, nvol).unwrap();
    let r = rows(&bvecs);
    // N x 3, one row per volume, as DIPY writes
    let t: Vec<Vec<String>> = (0..nvol).map(|i| (0..3).map(|c| r[c][i].clone()).collect()).collect();
    let nx3 = tmp.path().join("bvecs_nx3");
    write_rows(&nx3, &t);
    assert_eq!(read_bvals_bvecs(&bvals, &nx3, nvol).unwrap(), fsl);
    // nan directions on the b = 0 volumes, as DIPY's sample data hold
    let b: Vec<f64> = rows(&bvals)[0].iter().map(|x| x.parse().unwrap()).collect();
    assert!(b[0] == 0.0);
    let mut n = r.clone();
    for c in 0..3 {
        for i in (0..nvol).filter(|&i| b[i] == 0.0) {
            n[c][i] = "nan".into();
        }
    }
    let nan = tmp.path().join("bvecs_nan_b0");
    write_rows(&nan, &n);
    assert_eq!(read_bvals_bvecs(&bvals, &nan, nvol).unwrap(), fsl);
    let (code, _, err) = dti(&dwi, &bvals, &nan, None, &tmp.path().join("o").join("dti"));
    assert_eq!(code, 0, "{err}");
}

#[test]
fn mrtrix_grad_table_in_scanner_axes_gives_the_fsl_table() {
    // An x-flipped, rotated geometry (det < 0 and det > 0 both exercised).
    for flip in [1.0f64, -1.0] {
        let mut g = Geometry::synthetic([4, 4, 4], [2.0, 2.0, 2.0]);
        let (c, s_) = (0.8f64, 0.6f64);
        g.affine = [[2.0 * c * flip, -2.0 * s_, 0.0, 10.0], [2.0 * s_ * flip, 2.0 * c, 0.0, -5.0], [0.0, 0.0, 2.0, 3.0], [0.0, 0.0, 0.0, 1.0]];
        let bvals = vec![0.0, 1000.0, 1000.0, 2000.0];
        let dirs = [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.6, 0.8], [0.48, 0.6, 0.64]];
        let tmp = tempfile::tempdir().unwrap();
        let b = tmp.path().join("grad.b");
        let text: String = dirs
            .iter()
            .zip(&bvals)
            .map(|(d, b)| {
                let w = if *b > 0.0 { g.bvecs_to_world(*d) } else { *d };
                format!("{} {} {} {}\n", w[0], w[1], w[2], b)
            })
            .collect();
        std::fs::write(&b, text).unwrap();
        let t = read_mrtrix_grad(&b, 4, &g).unwrap();
        assert_eq!(t.bvals, bvals);
        for (got, want) in t.bvecs.iter().zip(dirs) {
            for k in 0..3 {
                assert!((got[k] - want[k]).abs() < 1e-12, "flip {flip}: {got:?} vs {want:?}");
            }
        }
        assert!(GradFiles::Mrtrix(&b).read(5, &g).unwrap_err().to_string().contains("expected 5 rows of 4"));
    }
}

#[test]
fn the_cli_takes_an_mrtrix_grad_table() {
    let tmp = tempfile::tempdir().unwrap();
    let (dwi, bvals, bvecs, mask) = dataset(tmp.path());
    let v = read_nifti(&dwi).unwrap();
    let t = read_bvals_bvecs(&bvals, &bvecs, v.nvol()).unwrap();
    let b = tmp.path().join("grad.b");
    let text: String = t.bvecs.iter().zip(&t.bvals).map(|(d, b)| {
        let w = v.geom.bvecs_to_world(*d);
        format!("{} {} {} {}\n", w[0], w[1], w[2], b)
    }).collect();
    std::fs::write(&b, text).unwrap();
    let fsl = tmp.path().join("fsl");
    let mrt = tmp.path().join("mrt");
    assert_eq!(dti(&dwi, &bvals, &bvecs, Some(&mask), &fsl).0, 0);
    let (code, _, err) = run(&["dti", "--backend", "cpu", "--dwi", s(&dwi), "--grad", s(&b), "--mask", s(&mask), "--out", s(&mrt)], &[]);
    assert_eq!(code, 0, "{err}");
    let a = read_nifti(&PathBuf::from(format!("{}_FA.nii.gz", fsl.display()))).unwrap();
    let c = read_nifti(&PathBuf::from(format!("{}_FA.nii.gz", mrt.display()))).unwrap();
    // same table up to the float text round trip: FA equal to float32 rounding of the fit
    let worst = a.as_flat().iter().zip(c.as_flat()).map(|(x, y)| (x - y).abs()).fold(0.0f32, f32::max);
    assert!(worst < 1e-4, "FA differs by {worst}");
}

/// `fim --dwi` and `track geodesic --dwi` took only --bvals/--bvecs, where dti and bedpost take
/// an MRtrix table too: `--grad` was refused as an unknown option. The same table either way
/// gives the same path costs (up to the table's text round trip) and the same fibre count.
#[test]
fn fim_and_track_take_an_mrtrix_grad_table_with_dwi() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let (dwi, bvals, bvecs, mask) = dataset(d);
    let v = read_nifti(&dwi).unwrap();
    let t = read_bvals_bvecs(&bvals, &bvecs, v.nvol()).unwrap();
    let b = d.join("grad.b");
    let text: String = t.bvecs.iter().zip(&t.bvals).map(|(g, b)| {
        let w = v.geom.bvecs_to_world(*g);
        format!("{} {} {} {}\n", w[0], w[1], w[2], b)
    }).collect();
    std::fs::write(&b, text).unwrap();
    let m = read_nifti(&mask).unwrap();
    let first = m.as_flat().iter().position(|&x| x != 0.0).unwrap();
    let src: Vec<f32> = (0..m.nvox()).map(|i| (i == first) as u8 as f32).collect();
    let r1 = d.join("r1.nii.gz");
    write_nifti(&r1, &m.geom, 1, &src).unwrap();
    let fim = |grads: &[&str], out: &Path| {
        let mut a = vec!["fim", "--backend", "cpu", "--dwi", s(&dwi), "--mask", s(&mask), "--source", s(&r1), "--out", s(out)];
        a.extend_from_slice(grads);
        run(&a, &[])
    };
    let (fsl, mrt) = (d.join("fsl"), d.join("mrt"));
    let (code, _, err) = fim(&["--bvals", s(&bvals), "--bvecs", s(&bvecs)], &fsl);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = fim(&["--grad", s(&b)], &mrt);
    assert_eq!(code, 0, "{err}");
    let a = read_nifti(&PathBuf::from(format!("{}_cost1.nii.gz", fsl.display()))).unwrap();
    let c = read_nifti(&PathBuf::from(format!("{}_cost1.nii.gz", mrt.display()))).unwrap();
    let reached = a.as_flat().iter().filter(|x| x.is_finite()).count();
    assert!(reached > 10, "{reached} voxels reached");
    for (x, y) in a.as_flat().iter().zip(c.as_flat()) {
        assert_eq!(x.is_finite(), y.is_finite());
        // the table's text round trip moves the fit in its last float32 bits
        assert!(!x.is_finite() || (x - y).abs() <= 1e-3 * x.abs().max(1.0), "{x} vs {y}");
    }
    let tck = d.join("f.tck");
    let (code, _, err) = run(&["track", "geodesic", "--backend", "cpu", "--dwi", s(&dwi), "--grad", s(&b), "--mask", s(&mask), "--seeds", s(&r1), "--dirs", "4", "--out", s(&tck)], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(tck.exists());
    let (code, _, err) = run(&["fim", "--backend", "cpu", "--dwi", s(&dwi), "--mask", s(&mask), "--source", s(&r1), "--out", s(&d.join("none"))], &[]);
    assert_eq!((code, err.lines().count()), (1, 1), "{err}");
    assert!(err.contains("--grad"), "{err}");
}

#[test]
fn non_unit_gradients_and_small_b_values_are_warned_about_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    let (dwi, bvals, bvecs, mask) = dataset(tmp.path());
    let mut r = rows(&bvecs);
    for c in 0..3 {
        for v in r[c].iter_mut() {
            *v = format!("{}", v.parse::<f64>().unwrap() * 0.7);
        }
    }
    let short = tmp.path().join("bvecs_short");
    write_rows(&short, &r);
    let (code, _, err) = dti(&dwi, &bvals, &short, Some(&mask), &tmp.path().join("a").join("dti"));
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("warning:") && err.contains(s(&short)) && err.contains("0.70") && err.contains("normalises"), "{err}");
    let ms: Vec<String> = rows(&bvals)[0].iter().map(|x| format!("{}", x.parse::<f64>().unwrap() / 1000.0)).collect();
    let bms = tmp.path().join("bvals_ms");
    write_rows(&bms, &[ms]);
    let (code, _, err) = dti(&dwi, &bms, &bvecs, Some(&mask), &tmp.path().join("b").join("dti"));
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("warning:") && err.contains(s(&bms)) && err.contains("ms/um^2"), "{err}");
    // unit vectors and s/mm^2: no warning
    let (_, _, err) = dti(&dwi, &bvals, &bvecs, Some(&mask), &tmp.path().join("c").join("dti"));
    assert!(!err.contains("warning"), "{err}");
}

#[test]
fn b_values_in_s_per_m2_or_typed_far_too_large_are_refused_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    let (dwi, bvals, bvecs, mask) = dataset(tmp.path());
    let b: Vec<f64> = rows(&bvals)[0].iter().map(|x| x.parse().unwrap()).collect();
    let w = b.iter().position(|&x| x > 0.0).unwrap();
    // s/m^2 (Camino's unit): every weighted b a million times too large
    let si = tmp.path().join("bvals_si");
    write_rows(&si, &[b.iter().map(|x| format!("{}", x * 1e6)).collect()]);
    // one weighted b typed as 1e9 among values in s/mm^2
    let mut t: Vec<String> = b.iter().map(|x| format!("{x}")).collect();
    t[w] = "1e9".into();
    let typo = tmp.path().join("bvals_typo");
    write_rows(&typo, &[t]);
    for (f, what) in [(&si, "looks like s/m^2".to_string()), (&typo, format!("volume {w} has b = 1000000000 s/mm^2"))] {
        let out = tmp.path().join("o");
        let (code, _, err) = dti(&dwi, f, &bvecs, Some(&mask), &out.join("dti"));
        assert_ne!(code, 0);
        assert!(err.starts_with(&format!("error: {}: ", s(f))) && err.contains(&what) && err.lines().count() == 1, "{err}");
        assert!(!out.exists());
    }
}

#[test]
fn every_command_that_fits_names_the_gradient_files_of_a_table_that_cannot_determine_a_tensor() {
    let tmp = tempfile::tempdir().unwrap();
    let (dwi, bvals, bvecs, mask) = dataset(tmp.path());
    let n = rows(&bvecs)[0].len();
    let collinear = tmp.path().join("bvecs_collinear");
    write_rows(&collinear, &[vec!["1".to_string(); n], vec!["0".to_string(); n], vec!["0".to_string(); n]]);
    let roi = tmp.path().join("roi1.nii.gz");
    let (out, tck) = (tmp.path().join("o"), tmp.path().join("o.tck"));
    let dwi_args = ["--dwi", s(&dwi), "--bvals", s(&bvals), "--bvecs", s(&collinear), "--mask", s(&mask)];
    for (cmd, rest) in [
        (vec!["bedpost"], vec!["--out", s(&out)]),
        (vec!["fim"], vec!["--source", s(&roi), "--out", s(&out)]),
        (vec!["track", "geodesic"], vec!["--seeds", s(&roi), "--out", "o.tck"]),
    ] {
        let a: Vec<&str> = ["--backend", "cpu"].into_iter().chain(cmd.iter().copied()).chain(dwi_args).chain(rest).collect();
        let (code, _, err) = run(&a, &[("RUST_BACKTRACE", "1")]);
        assert_ne!(code, 0);
        assert!(err.starts_with(&format!("error: {} + {}: ", s(&bvals), s(&collinear))) && err.contains("non-collinear") && err.lines().count() == 1, "{cmd:?}: {err}");
        assert!(!out.exists() && !tck.exists());
    }
}

#[test]
fn nan_voxels_outside_the_mask_are_ignored_inside_skipped_with_a_count() {
    let tmp = tempfile::tempdir().unwrap();
    let (dwi, bvals, bvecs, mask) = dataset(tmp.path());
    let v = read_nifti(&dwi).unwrap();
    let m = read_nifti(&mask).unwrap();
    let outside = (0..v.nvox()).find(|&i| m.as_flat()[i] == 0.0).expect("a voxel outside the mask");
    let inside: Vec<usize> = (0..v.nvox()).filter(|&i| m.as_flat()[i] != 0.0).take(2).collect();
    let mut d = v.as_flat().to_vec();
    d[outside] = f32::NAN;
    let only_out = tmp.path().join("nan_out.nii.gz");
    write_nifti(&only_out, &v.geom, v.nvol(), &d).unwrap();
    let (code, _, err) = dti(&only_out, &bvals, &bvecs, Some(&mask), &tmp.path().join("a").join("dti"));
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("warning"), "{err}");
    d[2 * v.nvox() + inside[0]] = f32::INFINITY;
    d[4 * v.nvox() + inside[1]] = f32::NAN;
    let with_in = tmp.path().join("nan_in.nii.gz");
    write_nifti(&with_in, &v.geom, v.nvol(), &d).unwrap();
    let out = tmp.path().join("b").join("dti");
    let (code, _, err) = dti(&with_in, &bvals, &bvecs, Some(&mask), &out);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("warning:") && err.contains(s(&with_in)) && err.contains("2 voxels in the mask") && err.contains("skipped"), "{err}");
    let fa = read_nifti(&PathBuf::from(format!("{}_FA.nii.gz", out.display()))).unwrap();
    assert!(fa.as_flat().iter().all(|x| x.is_finite()));
    assert_eq!(fa.as_flat()[inside[0]], 0.0);
    assert_eq!(fa.as_flat()[inside[1]], 0.0);
    assert!(fa.as_flat()[inside[2.min(inside.len() - 1)]] >= 0.0);
}

#[test]
fn masks_on_another_grid_are_refused_naming_both_files() {
    let tmp = tempfile::tempdir().unwrap();
    let (dwi, bvals, bvecs, mask) = dataset(tmp.path());
    let v = read_nifti(&dwi).unwrap();
    let m = read_nifti(&mask).unwrap();
    let variants: [(&str, fn(&mut Geometry)); 3] = [
        ("shifted", |g| g.header.srow_x[3] += 30.0),
        ("scaled", |g| g.header.srow_y[1] *= 1.5),
        ("flipped", |g| {
            g.header.srow_x[0] = -g.header.srow_x[0];
            g.header.srow_x[3] += 14.0;
        }),
    ];
    for (name, change) in variants {
        let mut g = m.geom.clone();
        change(&mut g);
        let p = tmp.path().join(format!("mask_{name}.nii.gz"));
        write_nifti(&p, &g, 1, m.as_flat()).unwrap();
        let e = read_mask_like(&p, &v.geom, &dwi, "mask").unwrap_err().to_string();
        assert!(e.contains(s(&p)) && e.contains(s(&dwi)) && e.contains("affine"), "{name}: {e}");
        let out = tmp.path().join(name);
        let (code, _, err) = dti(&dwi, &bvals, &bvecs, Some(&p), &out.join("dti"));
        assert_ne!(code, 0, "{name}");
        // The scaled sform also disagrees with pixdim: one warning names the file (spacing.rs).
        assert_eq!(err.lines().count(), if name == "scaled" { 2 } else { 1 }, "{err}");
        assert!(name != "scaled" || err.starts_with(&format!("warning: {}: pixdim", s(&p))), "{err}");
        assert!(err.contains(s(&p)) && err.contains(s(&dwi)), "{err}");
        assert!(!out.exists());
    }
    // a float32 round trip of the same affine is the same grid
    let same = tmp.path().join("mask_same.nii.gz");
    write_nifti(&same, &m.geom, 1, m.as_flat()).unwrap();
    assert!(read_mask_like(&same, &v.geom, &dwi, "mask").is_ok());
}

#[test]
fn all_zero_masks_and_rois_are_errors_in_every_command() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("d");
    std::fs::create_dir_all(&d).unwrap();
    let (dwi, bvals, bvecs, mask) = dataset(&d);
    let m = read_nifti(&mask).unwrap();
    let zero = d.join("zero.nii.gz");
    write_nifti(&zero, &m.geom, 1, &vec![0.0; m.nvox()]).unwrap();
    let o = |n: &str| tmp.path().join(n);
    let (code, _, err) = dti(&dwi, &bvals, &bvecs, Some(&zero), &o("dti").join("x"));
    assert!(code != 0 && err.contains("empty") && err.contains(s(&zero)), "dti: {err}");
    let (code, _, err) = run(&["bedpost", "--backend", "cpu", "--dwi", s(&dwi), "--bvals", s(&bvals), "--bvecs", s(&bvecs), "--mask", s(&zero), "--out", s(&o("bp"))], &[]);
    assert!(code != 0 && err.contains("empty") && err.contains(s(&zero)), "bedpost: {err}");
    assert_eq!(dti(&dwi, &bvals, &bvecs, Some(&mask), &d.join("dti")).0, 0);
    let tensor = d.join("dti_tensor.nii.gz");
    let track = |extra: &[&str]| {
        let mut a = vec!["track", "geodesic", "--backend", "cpu", "--tensor", s(&tensor), "--out"];
        let out = o("t.tck");
        let out = out.to_str().unwrap().to_string();
        let mut args: Vec<String> = a.drain(..).map(String::from).collect();
        args.push(out);
        args.extend(extra.iter().map(|x| x.to_string()));
        let refs: Vec<&str> = args.iter().map(|x| x.as_str()).collect();
        run(&refs, &[])
    };
    for (what, args) in [("seed ROI", vec!["--seeds", s(&zero)]), ("target ROI", vec!["--seeds", s(&mask), "--target", s(&zero)]), ("tracking mask", vec!["--seeds", s(&mask), "--mask", s(&zero)])] {
        let (code, _, err) = track(&args);
        assert!(code != 0 && err.contains("empty") && err.contains(what) && err.contains(s(&zero)), "{what}: {err}");
        assert!(!o("t.tck").exists());
    }
}

#[test]
fn track_refuses_useless_seeds_and_steps_and_takes_negative_numbers_to_its_own_check() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let (dwi, bvals, bvecs, mask) = dataset(d);
    assert_eq!(dti(&dwi, &bvals, &bvecs, Some(&mask), &d.join("dti")).0, 0);
    let tensor = d.join("dti_tensor.nii.gz");
    let out = d.join("t.tck");
    let go = |extra: &[&str]| {
        let mut a = vec!["track", "geodesic", "--backend", "cpu", "--tensor", s(&tensor), "--out", s(&out), "--force"];
        a.extend_from_slice(extra);
        run(&a, &[])
    };
    let far = d.join("far.csv");
    std::fs::write(&far, "-500,-500,-500,1,0,0\n-500,-500,-500,0,1,0\n").unwrap();
    let (code, _, err) = go(&["--seed-file", s(&far)]);
    assert!(code != 0 && err.contains("none of the 2 seeds") && err.contains("outside the 8x8x5 volume"), "{err}");
    // one of three inside: a warning with the count, and the run goes on
    let g = read_nifti(&mask).unwrap().geom;
    let m = read_nifti(&mask).unwrap();
    let v = (0..m.nvox()).find(|&i| m.as_flat()[i] != 0.0).unwrap();
    let w = g.voxel_to_world([(v % 8) as f64, ((v / 8) % 8) as f64, (v / 64) as f64]);
    let some = d.join("some.csv");
    std::fs::write(&some, format!("{},{},{},1,0,0\n-500,-500,-500,1,0,0\n900,0,0,1,0,0\n", w[0], w[1], w[2])).unwrap();
    let (code, _, err) = go(&["--seed-file", s(&some)]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("warning:") && err.contains("2 of 3 seeds lie outside the volume"), "{err}");
    // The warning said "they give no fibre" while the outputs held a single-point fibre for
    // each: it says what is written.
    assert!(err.contains("their fibres are single points (0 steps, stop left-volume)"), "{err}");
    let rows = std::fs::read_to_string(d.join("t.csv")).unwrap();
    let stays = rows.lines().skip(1).filter(|r| r.split(',').nth(9) == Some("0") && r.split(',').nth(10) == Some("left-volume")).count();
    assert_eq!((rows.lines().count(), stays), (4, 2), "{rows}");
    let (code, _, err) = go(&["--seeds", s(&mask), "--step", "-0.1"]);
    assert!(code != 0 && err.contains("--step must be a positive number"), "{err}");
    let (code, _, err) = go(&["--seeds", s(&mask), "--step", "50"]);
    assert!(code != 0 && err.contains("longer than the volume"), "{err}");
}

#[test]
fn images_without_a_mask_keep_their_nan_voxels_for_the_method() {
    // register's inputs: its cost leaves NaN/Inf voxels out, so they are read as they are (a
    // warning counts them); an image with nothing else is refused.
    let tmp = tempfile::tempdir().unwrap();
    let g = Geometry::synthetic([4, 4, 4], [1.0; 3]);
    let mut d = vec![1.0f32; 64];
    d[5] = f32::NAN;
    d[9] = f32::NEG_INFINITY;
    let p = tmp.path().join("img.nii.gz");
    write_nifti(&p, &g, 1, &d).unwrap();
    let v = neuroport::volume::read_keeping_nonfinite(&p, "excluded from the cost").unwrap();
    assert!(v.as_flat()[5].is_nan() && v.as_flat()[9] == f32::NEG_INFINITY && v.as_flat()[0] == 1.0);
    write_nifti(&p, &g, 1, &[f32::NAN; 64]).unwrap();
    let e = format!("{:#}", neuroport::volume::read_keeping_nonfinite(&p, "excluded from the cost").unwrap_err());
    assert!(e.contains("img.nii.gz") && e.contains("every voxel holds NaN or infinite values"), "{e}");
}

/// bvals and bvecs saved by Windows tools (Notepad, Excel's "CSV UTF-8"): a UTF-8 byte-order
/// mark before the first number and CRLF line ends read as the plain files do, and so does an
/// MRtrix table with a BOM. The BOM used to make the first number unreadable, with a message
/// quoting an invisible character ("'0' is not a finite number").
#[test]
fn gradient_files_with_a_utf8_bom_and_crlf_read_alike() {
    let tmp = tempfile::tempdir().unwrap();
    let (dwi, bvals, bvecs, _) = dataset(tmp.path());
    let v = read_nifti(&dwi).unwrap();
    let nvol = v.nvol();
    let fsl = read_bvals_bvecs(&bvals, &bvecs, nvol).unwrap();
    let windows = |p: &Path, name: &str| {
        let text = std::fs::read_to_string(p).unwrap().replace('\n', "\r\n");
        let q = tmp.path().join(name);
        std::fs::write(&q, format!("\u{feff}{text}")).unwrap();
        q
    };
    let (bvals_w, bvecs_w) = (windows(&bvals, "bvals_win"), windows(&bvecs, "bvecs_win"));
    assert_eq!(read_bvals_bvecs(&bvals_w, &bvecs_w, nvol).unwrap(), fsl);
    let grad = tmp.path().join("dwi.b");
    let rows: Vec<String> = (0..nvol).map(|i| {
        let w = v.geom.bvecs_to_world(fsl.bvecs[i]);
        format!("{} {} {} {}", w[0], w[1], w[2], fsl.bvals[i])
    }).collect();
    std::fs::write(&grad, rows.join("\n") + "\n").unwrap();
    let grad_w = windows(&grad, "dwi_win.b");
    assert_eq!(read_mrtrix_grad(&grad_w, nvol, &v.geom).unwrap(), read_mrtrix_grad(&grad, nvol, &v.geom).unwrap());
    let (code, _, err) = dti(&dwi, &bvals_w, &bvecs_w, None, &tmp.path().join("o").join("dti"));
    assert_eq!(code, 0, "{err}");
}

/// A seed file saved by a Windows tool (UTF-8 byte-order mark, CRLF) without a header row gives
/// every seed of the plain file. The BOM made the first row unparsable, and an unparsable first
/// row is taken for a header: the first seed was dropped without a word.
#[test]
fn a_seed_file_with_a_utf8_bom_keeps_its_first_seed() {
    let tmp = tempfile::tempdir().unwrap();
    let geom = Geometry::synthetic([12, 12, 8], [2.0; 3]);
    let rows = "10,10,8,1,0,0\n12,10,8,0,1,0\n";
    let (plain, bom) = (tmp.path().join("seeds.csv"), tmp.path().join("seeds_bom.csv"));
    std::fs::write(&plain, rows).unwrap();
    std::fs::write(&bom, format!("\u{feff}{}", rows.replace('\n', "\r\n"))).unwrap();
    let want = neuroport::geodesic::seeding::read_seed_file(&plain, &geom).unwrap();
    assert_eq!(want.len(), 2);
    let got = neuroport::geodesic::seeding::read_seed_file(&bom, &geom).unwrap();
    assert_eq!(got.len(), want.len(), "the first seed was dropped");
    for (a, b) in got.iter().zip(&want) {
        assert_eq!((a.pos, a.dir), (b.pos, b.dir));
    }
}

/// A first row that holds numbers is a seed, not a header, even when it does not parse: a NaN
/// direction or a space-separated row was taken for a header and dropped without a word (the
/// rest tracked; a one-row file said "holds no seed rows"). Now it is an error naming the line
/// and the value; a real header (no number in it) is still skipped.
#[test]
fn a_first_seed_row_that_does_not_parse_is_an_error_not_a_header() {
    let tmp = tempfile::tempdir().unwrap();
    let geom = Geometry::synthetic([12, 12, 8], [2.0; 3]);
    let f = tmp.path().join("seeds.csv");
    for (text, want) in [
        ("10,10,8,nan,0,0\n12,10,8,0,1,0\n", "line 1 is not six numbers x,y,z,dx,dy,dz ('nan' is not a finite number)"),
        ("10,10,8,inf,0,0\n", "line 1 is not six numbers x,y,z,dx,dy,dz ('inf' is not a finite number)"),
        ("10 10 8 1 0 0\n12 10 8 0 1 0\n", "line 1 is not six numbers x,y,z,dx,dy,dz (separate them with commas: '10 10 8 1 0 0')"),
    ] {
        std::fs::write(&f, text).unwrap();
        let err = neuroport::geodesic::seeding::read_seed_file(&f, &geom).map(|s| s.len()).unwrap_err().to_string();
        assert_eq!(err, format!("{}: {want}", f.display()), "{text:?}");
    }
    for header in ["x,y,z,dx,dy,dz", "x y z dx dy dz", "# seeds\nx,y,z,dx,dy,dz"] {
        std::fs::write(&f, format!("{header}\n10,10,8,1,0,0\n")).unwrap();
        assert_eq!(neuroport::geodesic::seeding::read_seed_file(&f, &geom).unwrap().len(), 1, "{header:?}");
    }
}
