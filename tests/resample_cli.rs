//! `neuroport resample`: a registration's matrix applied to other images (as flirt -applyxfm,
//! reg_resample): register's warped image again bit for bit, a label image keeping its labels,
//! a 4-D series volume by volume, and its bad inputs (one `error:` line naming the file, exit 1,
//! nothing left behind).

mod common;
use common::{run, s};
use neuroport::register::{affine, params};
use neuroport::synth::t1::{centred_geometry, same_subject_pair, Head};
use neuroport::volume::{read_nifti, write_nifti, Geometry};
use std::path::Path;

/// A fixed and a moving head on different grids (the moving one rotated and shifted), and the
/// fixed head's brain mask.
fn write_pair(dir: &Path) -> (Geometry, Geometry) {
    let gf = centred_geometry([48, 56, 48], [4.0; 3]);
    let gm = centred_geometry([44, 50, 46], [4.4, 4.4, 4.2]);
    // Chosen so that both registrations below end on a matrix whose 10-decimal form gives
    // another float32 voxel map (see the_written_matrix_gives_the_warped_image_again).
    let truth = params::matrix(&[1.93, -3.39, 1.47, 0.49, -0.81, 2.37], [0.0; 3]);
    let (f, m) = same_subject_pair(&Head::subject(0), &gf, &gm, &truth, 0.02, 2);
    write_nifti(&dir.join("fixed.nii.gz"), &gf, 1, f.volume.as_flat()).unwrap();
    write_nifti(&dir.join("moving.nii.gz"), &gm, 1, m.volume.as_flat()).unwrap();
    (gf, gm)
}

/// The voxel bytes of a NIfTI file (its data after the 352-byte header), and its datatype.
fn voxels(p: &Path) -> (Vec<u8>, i16) {
    let raw = std::fs::read(p).unwrap();
    let mut d = flate2::read::MultiGzDecoder::new(&raw[..]);
    let mut b = Vec::new();
    std::io::Read::read_to_end(&mut d, &mut b).unwrap();
    (b[352..].to_vec(), i16::from_le_bytes([b[70], b[71]]))
}

/// register, then resample with its PREFIX_affine.txt: the same file as PREFIX_warped, byte
/// for byte. register warps through the matrix as written (10 decimals): through the
/// unrounded one, the float32 voxel map differed in a last bit for about one transform in
/// five, and with it some samples: 11 of 48 registrations of this pair with other truths, and
/// with this one both of the two below.
#[test]
fn the_written_matrix_gives_the_warped_image_again() {
    let d = tempfile::tempdir().unwrap();
    write_pair(d.path());
    let (fx, mv) = (d.path().join("fixed.nii.gz"), d.path().join("moving.nii.gz"));
    for dof in ["6", "12"] {
        let out = d.path().join(format!("r{dof}"));
        let (code, _, err) = run(&["register", "--backend", "cpu", "--fixed", s(&fx), "--moving", s(&mv), "--dof", dof, "--levels", "2", "--out", s(&out)], &[]);
        assert_eq!(code, 0, "{err}");
        let warped = d.path().join(format!("r{dof}_warped.nii.gz"));
        let again = d.path().join(format!("again{dof}.nii.gz"));
        let (code, stdout, err) = run(&["resample", "--ref", s(&fx), "--moving", s(&mv), "--affine", s(&d.path().join(format!("r{dof}_affine.txt"))), "--out", s(&again)], &[]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(stdout.trim(), s(&again), "{stdout}");
        assert!(std::fs::read(&again).unwrap() == std::fs::read(&warped).unwrap(), "dof {dof}: resample's output differs from register's warped image");
        // Through the FLIRT .mat: the same transform by another route (its float64 products
        // differ in the last places), so the same image up to float32 rounding of positions.
        let via_mat = d.path().join(format!("mat{dof}.nii.gz"));
        let (code, _, err) = run(&["resample", "--fixed", s(&fx), "--in", s(&mv), "--fsl-mat", s(&d.path().join(format!("r{dof}.mat"))), "--out", s(&via_mat)], &[]);
        assert_eq!(code, 0, "{err}");
        let (a, b) = (read_nifti(&warped).unwrap(), read_nifti(&via_mat).unwrap());
        let off = a.as_flat().iter().zip(b.as_flat()).filter(|(x, y)| (*x - *y).abs() > 1e-4).count();
        assert!(off * 10_000 < a.nvox(), "dof {dof}: {off} of {} voxels differ through the .mat", a.nvox());
    }
}

/// An atlas of labels with nearest neighbour: every output value is one of the input's labels
/// (all of them appear), written as float32 on the reference grid; linear would blend them.
#[test]
fn nearest_keeps_the_label_set() {
    let d = tempfile::tempdir().unwrap();
    let (gf, gm) = write_pair(d.path());
    let labels = [0.0f32, 3.0, 17.0, 250.0, 1000.0, 65535.0];
    let atlas: Vec<f32> = (0..gm.nvox())
        .map(|i| {
            let [x, y, z] = neuroport::volume::xyz_of(i, gm.dims);
            labels[(x / 7 + 2 * (y / 9) + 3 * (z / 8)) % labels.len()]
        })
        .collect();
    let lab = d.path().join("atlas.nii.gz");
    write_nifti(&lab, &gm, 1, &atlas).unwrap();
    let t = d.path().join("t.txt");
    affine::write(&t, &params::matrix(&[3.0, -2.0, 5.0, 8.0, -6.0, 4.0], [0.0; 3])).unwrap();
    let (fx, out) = (d.path().join("fixed.nii.gz"), d.path().join("lab.nii.gz"));
    let (code, _, err) = run(&["resample", "--ref", s(&fx), "--moving", s(&lab), "--affine", s(&t), "--interp", "nearest", "--out", s(&out)], &[]);
    assert_eq!(code, 0, "{err}");
    let v = read_nifti(&out).unwrap();
    assert_eq!(v.geom.dims, gf.dims);
    assert_eq!(voxels(&out).1, 16, "float32");
    let mut seen: Vec<u32> = v.as_flat().iter().map(|x| x.to_bits()).collect();
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen, labels.map(f32::to_bits).to_vec(), "{:?}", seen.iter().map(|&b| f32::from_bits(b)).collect::<Vec<_>>());
    // The same with linear: values between the labels.
    let lin = d.path().join("lin.nii.gz");
    let (code, _, err) = run(&["resample", "--ref", s(&fx), "--moving", s(&lab), "--affine", s(&t), "--out", s(&lin)], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(read_nifti(&lin).unwrap().as_flat().iter().any(|x| !labels.contains(x)), "linear blends labels: the case tells the two apart");
}

/// A 4-D series: each output volume is that volume resampled alone; the output is 4-D.
#[test]
fn a_series_is_resampled_volume_by_volume() {
    let d = tempfile::tempdir().unwrap();
    let (gf, gm) = write_pair(d.path());
    let m = read_nifti(&d.path().join("moving.nii.gz")).unwrap();
    let series: Vec<f32> = (0..3).flat_map(|k| m.as_flat().iter().map(move |v| v * (1.0 + k as f32) + k as f32)).collect();
    let four = d.path().join("four.nii.gz");
    write_nifti(&four, &gm, 3, &series).unwrap();
    let t = d.path().join("t.txt");
    affine::write(&t, &params::matrix(&[3.0, -2.0, 5.0, 8.0, -6.0, 4.0], [0.0; 3])).unwrap();
    let fx = d.path().join("fixed.nii.gz");
    let out = d.path().join("four_r.nii.gz");
    let (code, _, err) = run(&["resample", "--ref", s(&fx), "--moving", s(&four), "--affine", s(&t), "--out", s(&out)], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("3 volumes resampled"), "{err}");
    let all = read_nifti(&out).unwrap();
    assert_eq!((all.geom.dims, all.nvol()), (gf.dims, 3));
    for k in 0..3 {
        let one = d.path().join(format!("v{k}.nii.gz"));
        write_nifti(&one, &gm, 1, &series[k * gm.nvox()..(k + 1) * gm.nvox()]).unwrap();
        let r = d.path().join(format!("v{k}_r.nii.gz"));
        let (code, _, err) = run(&["resample", "--ref", s(&fx), "--moving", s(&one), "--affine", s(&t), "--out", s(&r)], &[]);
        assert_eq!(code, 0, "{err}");
        let want = read_nifti(&r).unwrap();
        assert!(all.frame(k).iter().zip(want.as_flat()).all(|(a, b)| a.to_bits() == b.to_bits()), "volume {k}");
    }
}

#[test]
fn bad_inputs_fail_with_one_line_naming_the_file() {
    let d = tempfile::tempdir().unwrap();
    write_pair(d.path());
    let (fx, mv) = (d.path().join("fixed.nii.gz"), d.path().join("moving.nii.gz"));
    let g = centred_geometry([8, 8, 8], [2.0; 3]);
    let four = d.path().join("four.nii.gz");
    write_nifti(&four, &g, 2, &(0..1024).map(|i| i as f32).collect::<Vec<_>>()).unwrap();
    let good = d.path().join("good.txt");
    affine::write(&good, &affine::translation([1.0, 2.0, 3.0])).unwrap();
    let write = |name: &str, text: &str| {
        let p = d.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let short = write("short.txt", "1 0 0\n0 1 0\n0 0 1\n");
    let nan = write("nan.txt", "1 0 0 nan\n0 1 0 0\n0 0 1 0\n0 0 0 1\n");
    let singular = write("singular.txt", "1 0 0 0\n0 0 0 0\n0 0 1 0\n0 0 0 1\n");
    let flirt = write("reg.mat", "1 0 0 0\n0 1 0 0\n0 0 1 0\n0 0 0 1\n");
    let (missing, gone, nomat) = (d.path().join("nope.nii.gz"), d.path().join("gone.nii.gz"), d.path().join("nomat.txt"));
    let cases: Vec<(Vec<&str>, &str, &str)> = vec![
        (vec!["--ref", s(&missing), "--moving", s(&mv), "--affine", s(&good)], "nope.nii.gz", "no such file"),
        (vec!["--ref", s(&fx), "--moving", s(&gone), "--affine", s(&good)], "gone.nii.gz", "no such file"),
        (vec!["--ref", s(&fx), "--moving", s(&mv), "--affine", s(&nomat)], "nomat.txt", "no such file"),
        (vec!["--ref", s(&fx), "--moving", s(&mv), "--affine", s(&short)], "short.txt", "4x4"),
        (vec!["--ref", s(&fx), "--moving", s(&mv), "--affine", s(&nan)], "nan.txt", "non-finite"),
        (vec!["--ref", s(&fx), "--moving", s(&mv), "--fsl-mat", s(&singular)], "singular.txt", "singular"),
        (vec!["--ref", s(&four), "--moving", s(&mv), "--affine", s(&good)], "four.nii.gz", "3-D"),
        // The reference gives only a grid: its header is checked before the moving image is
        // read (a 4-D one was read whole, beside the moving series, and only then refused).
        (vec!["--ref", s(&four), "--moving", s(&gone), "--affine", s(&good)], "four.nii.gz", "3-D"),
        (vec!["--ref", s(&fx), "--moving", s(&mv), "--affine", s(&flirt)], "reg.mat", "--fsl-mat"),
    ];
    let out = d.path().join("o.nii.gz");
    for (args, named, why) in cases {
        let mut a = vec!["resample"];
        a.extend(args);
        a.extend(["--out", s(&out)]);
        let (code, stdout, stderr) = run(&a, &[("RUST_BACKTRACE", "1")]);
        assert_eq!(code, 1, "{a:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{a:?}: {stderr}");
        assert!(stderr.starts_with("error:") && stderr.contains(named) && stderr.contains(why), "{a:?}: {stderr}");
        assert!(stdout.is_empty(), "{stdout}");
    }
    assert!(!common::entries(d.path()).iter().any(|n| n.starts_with('o') || n.starts_with('.')), "left behind: {:?}", common::entries(d.path()));
    // An existing output is refused without --force, replaced with it.
    std::fs::write(&out, "keep").unwrap();
    let a = ["resample", "--ref", s(&fx), "--moving", s(&mv), "--affine", s(&good), "--out", s(&out)];
    let (code, _, stderr) = run(&a, &[]);
    assert!(code == 1 && stderr.contains("o.nii.gz") && stderr.contains("--force"), "{stderr}");
    assert_eq!(std::fs::read(&out).unwrap(), b"keep");
    let (code, _, stderr) = run(&[&a[..], &["--force"]].concat(), &[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(read_nifti(&out).unwrap().geom.dims, [48, 56, 48]);
}

/// It runs on the CPU: a --backend naming another device is said, cpu and auto are not.
#[test]
fn a_device_backend_is_said_to_be_unused() {
    let d = tempfile::tempdir().unwrap();
    write_pair(d.path());
    let (fx, mv) = (d.path().join("fixed.nii.gz"), d.path().join("moving.nii.gz"));
    let t = d.path().join("t.txt");
    affine::write(&t, &affine::IDENTITY).unwrap();
    for (k, (backend, warned)) in [("cpu", false), ("auto", false), ("opencl", true), ("cuda:1", true)].into_iter().enumerate() {
        let out = d.path().join(format!("o{k}.nii.gz"));
        let (code, _, err) = run(&["resample", "--backend", backend, "--ref", s(&fx), "--moving", s(&mv), "--affine", s(&t), "--out", s(&out)], &[]);
        assert_eq!(code, 0, "{backend}: {err}");
        assert_eq!(err.contains(&format!("warning: --backend {backend} does not apply to resample, which runs on the CPU")), warned, "{backend}: {err}");
    }
}

/// A matrix that takes the whole reference grid off the moving image (here 5 m along x) writes
/// an all-0 image with a warning saying so; a matrix with overlap has none.
#[test]
fn an_all_zero_output_is_said() {
    let d = tempfile::tempdir().unwrap();
    write_pair(d.path());
    let (fx, mv) = (d.path().join("fixed.nii.gz"), d.path().join("moving.nii.gz"));
    for (shift, warned) in [(5000.0, true), (3.0, false)] {
        let t = d.path().join("t.txt");
        affine::write(&t, &affine::translation([shift, 0.0, 0.0])).unwrap();
        let out = d.path().join(format!("o{shift}.nii.gz"));
        let (code, _, err) = run(&["resample", "--ref", s(&fx), "--moving", s(&mv), "--affine", s(&t), "--out", s(&out)], &[]);
        assert_eq!(code, 0, "{err}");
        let zero = read_nifti(&out).unwrap().as_flat().iter().all(|v| *v == 0.0);
        assert_eq!(zero, warned, "shift {shift}");
        assert_eq!(err.contains(&format!("warning: {}: every voxel is 0, though {} is not", s(&out), s(&mv))), warned, "shift {shift}: {err}");
    }
}

/// The output's ending follows FSLOUTPUTTYPE, not the name given (as FSL's tools): --out
/// lab.nii writes lab.nii.gz, and the help says so (it promised .nii only "under
/// FSLOUTPUTTYPE=NIFTI", leaving a user to expect lab.nii).
#[test]
fn the_output_ending_follows_fsloutputtype_as_the_help_says() {
    let d = tempfile::tempdir().unwrap();
    write_pair(d.path());
    let (fx, mv) = (d.path().join("fixed.nii.gz"), d.path().join("moving.nii.gz"));
    let t = d.path().join("t.txt");
    affine::write(&t, &affine::IDENTITY).unwrap();
    for (given, env, written) in [("lab.nii", "NIFTI_GZ", "lab.nii.gz"), ("lab2.nii.gz", "NIFTI", "lab2.nii")] {
        let (code, stdout, err) = run(&["resample", "--ref", s(&fx), "--moving", s(&mv), "--affine", s(&t), "--out", s(&d.path().join(given))], &[("FSLOUTPUTTYPE", env)]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(stdout.trim(), s(&d.path().join(written)));
        assert!(d.path().join(written).is_file() && !d.path().join(given).exists(), "{given}");
    }
    let (_, help, _) = run(&["resample", "--help"], &[]);
    assert!(help.contains("whatever ending is given") && help.contains("--out lab.nii writes lab.nii.gz"), "{help}");
}
