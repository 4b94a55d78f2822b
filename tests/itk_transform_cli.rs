//! ITK/ANTs transform files on the command line: `resample --affine` and `register --init` read
//! ITK's text transform and ANTs' binary 0GenericAffine.mat (they were refused with a
//! conversion to do by hand) as the world matrix they stand for; `--fsl-mat` refuses them. A
//! composite of several linear transforms is composed (it was refused as "holds 2 transforms").

mod common;
use common::{run, s};
use neuroport::register::{affine, params};
use neuroport::synth::t1::{centred_geometry, same_subject_pair, Head};
use neuroport::volume::{read_nifti, write_nifti};
use std::path::Path;

// An affine in ITK's terms (LPS): matrix, translation, centre. Every number is a short binary
// fraction, so the centre's offset and the LPS -> RAS signs are exact in any order.
const M: [[f64; 3]; 3] = [[0.96875, -0.125, 0.0625], [0.125, 0.96875, -0.09375], [-0.0625, 0.09375, 1.0]];
const T: [f64; 3] = [2.5, -3.25, 1.75];
const C: [f64; 3] = [4.0, -6.0, 8.0];

/// The world matrix (RAS, fixed -> moving) of M, T, C: ITK's x -> M (x - C) + C + T between
/// LPS points, each side's x and y negated.
fn world() -> affine::Mat4 {
    let f = [-1.0, -1.0, 1.0];
    let mut w = affine::IDENTITY;
    for r in 0..3 {
        for c in 0..3 {
            w[r][c] = f[r] * M[r][c] * f[c];
        }
        w[r][3] = f[r] * (T[r] + C[r] - (0..3).map(|j| M[r][j] * C[j]).sum::<f64>());
    }
    w
}

fn params12() -> Vec<f64> {
    M.iter().flatten().chain(&T).copied().collect()
}

/// ITK's text form and ANTs' .mat (MATLAB v4 as vnl_matlab_write writes it) of M, T, C.
fn write_itk(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let txt = dir.join("itk.txt");
    let p: Vec<String> = params12().iter().map(|v| v.to_string()).collect();
    let c: Vec<String> = C.iter().map(|v| v.to_string()).collect();
    std::fs::write(&txt, format!("#Insight Transform File V1.0\n#Transform 0\nTransform: AffineTransform_double_3_3\nParameters: {}\nFixedParameters: {}\n", p.join(" "), c.join(" "))).unwrap();
    let var = |name: &str, v: &[f64]| -> Vec<u8> {
        let mut b: Vec<u8> = [0, v.len() as i32, 1, 0, name.len() as i32 + 1].iter().flat_map(|x: &i32| x.to_le_bytes()).collect();
        b.extend(name.bytes().chain([0]));
        b.extend(v.iter().flat_map(|x| x.to_le_bytes()));
        b
    };
    let mat = dir.join("0GenericAffine.mat");
    std::fs::write(&mat, [var("AffineTransform_double_3_3", &params12()), var("fixed", &C)].concat()).unwrap();
    (txt, mat)
}

fn write_pair(dir: &Path) {
    let gf = centred_geometry([40, 44, 40], [4.0; 3]);
    let gm = centred_geometry([36, 40, 38], [4.4, 4.4, 4.2]);
    let (f, m) = same_subject_pair(&Head::subject(0), &gf, &gm, &params::matrix(&[2.0, -3.0, 1.5, 0.5, -1.0, 2.0], [0.0; 3]), 0.02, 2);
    write_nifti(&dir.join("fixed.nii.gz"), &gf, 1, f.volume.as_flat()).unwrap();
    write_nifti(&dir.join("moving.nii.gz"), &gm, 1, m.volume.as_flat()).unwrap();
}

/// resample through the ITK text and the ANTs .mat writes the same file, byte for byte, as
/// through the world matrix they stand for; --fsl-mat refuses the .mat in one line naming it.
#[test]
fn resample_reads_itk_transforms_as_their_world_matrix() {
    let d = tempfile::tempdir().unwrap();
    write_pair(d.path());
    let (fx, mv) = (d.path().join("fixed.nii.gz"), d.path().join("moving.nii.gz"));
    let (txt, mat) = write_itk(d.path());
    let ras = d.path().join("world.txt");
    affine::write(&ras, &world()).unwrap();
    assert_eq!(affine::read(&ras).unwrap(), world(), "the 10 decimals hold these fractions exactly");
    let mut outs = Vec::new();
    for (k, t) in [&ras, &txt, &mat].into_iter().enumerate() {
        let out = d.path().join(format!("o{k}.nii.gz"));
        let (code, _, err) = run(&["resample", "--ref", s(&fx), "--moving", s(&mv), "--affine", s(t), "--out", s(&out)], &[]);
        assert_eq!(code, 0, "{}: {err}", t.display());
        outs.push(std::fs::read(&out).unwrap());
    }
    assert!(outs[1] == outs[0] && outs[2] == outs[0], "the ITK files resample otherwise than their world matrix");
    let v = read_nifti(&d.path().join("o0.nii.gz")).unwrap();
    assert!(v.as_flat().iter().filter(|x| **x != 0.0).count() > v.nvox() / 4, "the transform keeps the head in view");
    let out = d.path().join("x.nii.gz");
    let (code, stdout, err) = run(&["resample", "--ref", s(&fx), "--moving", s(&mv), "--fsl-mat", s(&mat), "--out", s(&out)], &[("RUST_BACKTRACE", "1")]);
    assert_eq!((code, stdout.as_str(), err.lines().count()), (1, "", 1), "{err}");
    assert!(err.starts_with(&format!("error: {}: an ITK/ANTs transform", s(&mat))) && err.contains("--affine"), "{err}");
    assert!(!out.exists());
}

/// register --init with the ITK text starts where --init with its world matrix starts: the
/// same result, file for file.
#[test]
fn register_init_reads_itk_transforms() {
    let d = tempfile::tempdir().unwrap();
    write_pair(d.path());
    let (fx, mv) = (d.path().join("fixed.nii.gz"), d.path().join("moving.nii.gz"));
    let (txt, _) = write_itk(d.path());
    let ras = d.path().join("world.txt");
    affine::write(&ras, &world()).unwrap();
    for (name, init) in [("a", &ras), ("b", &txt)] {
        let out = d.path().join(name);
        let (code, _, err) = run(&["register", "--backend", "cpu", "--fixed", s(&fx), "--moving", s(&mv), "--dof", "6", "--levels", "1", "--samples", "5000", "--init", s(init), "--out", s(&out)], &[]);
        assert_eq!(code, 0, "{}: {err}", init.display());
    }
    for f in ["_affine.txt", ".mat", "_warped.nii.gz"] {
        let (a, b) = (d.path().join(format!("a{f}")), d.path().join(format!("b{f}")));
        assert!(std::fs::read(&a).unwrap() == std::fs::read(&b).unwrap(), "{f} differs");
    }
}

/// An ITK composite applies the transform listed last first: translation (1, 0, 0) then the
/// quarter turn in the file is T(x) = R x + (1, 0, 0) (LPS), as itk.CompositeTransform gives.
#[test]
fn itk_composites_compose_in_itks_order() {
    let close = |a: affine::Mat4, b: affine::Mat4| (0..4).all(|r| (0..4).all(|c| (a[r][c] - b[r][c]).abs() < 1e-12));
    let half_pi = std::f64::consts::FRAC_PI_2;
    let d = tempfile::tempdir().unwrap();
    let write = |name: &str, body: &str| {
        let p = d.path().join(name);
        std::fs::write(&p, body).unwrap();
        p
    };
    let body = format!("#Insight Transform File V1.0\n#Transform 0\nTransform: CompositeTransform_double_3_3\n#Transform 1\nTransform: TranslationTransform_double_3_3\nParameters: 1 0 0\nFixedParameters: \n#Transform 2\nTransform: Euler3DTransform_double_3_3\nParameters: 0 0 {half_pi} 0 0 0\nFixedParameters: 0 0 0 0\n");
    let got = affine::read(&write("c.txt", &body)).unwrap();
    // R x + (1, 0, 0) in LPS is R x - (1, 0, 0) in RAS (R, about z, is the same in both); the
    // other order, R (x + (1, 0, 0)), would be R x + (0, 1, 0) in LPS.
    let want = [[0.0, -1.0, 0.0, -1.0], [1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]];
    assert!(close(got, want), "{got:?}");
    let bad = body.replace("TranslationTransform_double_3_3\nParameters: 1 0 0\nFixedParameters: ", "BSplineTransform_double_3_3\nParameters: 0\nFixedParameters: 0");
    let p = write("b.txt", &bad);
    let e = affine::read(&p).unwrap_err().to_string();
    assert!(e.starts_with(&format!("{}: BSplineTransform_double_3_3 is a nonlinear transform", p.display())), "{e}");
    // Two transforms without a composite say nothing of their order: still refused.
    let list = body.replace("Transform: CompositeTransform_double_3_3\n", "");
    let p = write("l.txt", &list);
    assert!(affine::read(&p).unwrap_err().to_string().contains("holds 2 transforms"));
}
