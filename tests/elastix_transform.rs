//! elastix's TransformParameters.N.txt, read by `resample --affine` and `register --init`
//! (through `affine::read`): they were refused as "'(Transform' is not a number".
//! Each expected world matrix is worked by hand from ITK's x -> M (x - c) + c + t in LPS,
//! entries (r, c) with exactly one of r, c in {x, y} negated, and the offset's x and y.

mod common;
use common::{run, s};
use neuroport::register::affine::{self, Mat4};
use std::path::{Path, PathBuf};

fn write(dir: &Path, name: &str, body: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, body).unwrap();
    p
}

/// A parameter file as elastix writes it (keys in its order, a comment, a tab).
fn params(kind: &str, p: &str, extra: &str, initial: &str) -> String {
    let n = p.split_whitespace().count();
    format!("(Transform \"{kind}\")\n(NumberOfParameters {n})\n(TransformParameters {p})\n(InitialTransformParameterFileName \"{initial}\")\n(HowToCombineTransforms \"Compose\")\n\n// Image specific\n(FixedImageDimension 3)\n(MovingImageDimension 3)\n{extra}\t(Size 10 10 10)\n")
}

fn close(a: Mat4, b: Mat4) -> bool {
    (0..4).all(|r| (0..4).all(|c| (a[r][c] - b[r][c]).abs() < 1e-12))
}

const HALF_PI: f64 = std::f64::consts::FRAC_PI_2;

/// The quarter turn about z, x -> (-y, x, z), the same in LPS and RAS, then `t` (RAS).
fn quarter_then(t: [f64; 3]) -> Mat4 {
    [[0.0, -1.0, 0.0, t[0]], [1.0, 0.0, 0.0, t[1]], [0.0, 0.0, 1.0, t[2]], [0.0, 0.0, 0.0, 1.0]]
}

/// Each linear kind gives the matrix worked by hand.
#[test]
fn elastix_kinds_give_their_world_matrix() {
    let d = tempfile::tempdir().unwrap();
    let none = "NoInitialTransform";
    // Affine, every number a short binary fraction: M C = (-19.375, -9.375, 35.9375), so
    // o = T + C - M C = (10.875, 22.875, -25.1875) (LPS), exactly.
    let aff = write(d.path(), "a.txt", &params("AffineTransform", "0.5 -0.75 0.25 1.25 0.5 -0.5 0.125 1.5 1 4 -6.5 3.25", "(CenterOfRotationPoint -12.5 20 7.5)\n", none));
    let want: Mat4 = [[0.5, -0.75, -0.25, -10.875], [1.25, 0.5, 0.5, -22.875], [-0.125, -1.5, 1.0, -25.1875], [0.0, 0.0, 0.0, 1.0]];
    assert_eq!(affine::read(&aff).unwrap(), want);
    // Euler (0, 0, 90 deg), t = (1, 2, 3), c = (10, 0, 0): o = t + c - R c = (11, -8, 3) LPS.
    let e = write(d.path(), "e.txt", &params("EulerTransform", &format!("0 0 {HALF_PI} 1 2 3"), "(CenterOfRotationPoint 10 0 0)\n(ComputeZYX \"false\")\n", none));
    let got = affine::read(&e).unwrap();
    assert!(close(got, quarter_then([-11.0, 8.0, 3.0])), "{got:?}");
    // Similarity: versor (0, 0, sin 45 deg) is the same quarter turn, scale 2, c = 0.
    let h = std::f64::consts::FRAC_PI_4.sin();
    let sim = write(d.path(), "s.txt", &params("SimilarityTransform", &format!("0 0 {h} 1 2 3 2"), "(CenterOfRotationPoint 0 0 0)\n", none));
    let mut want = quarter_then([-1.0, -2.0, 3.0]);
    for row in want.iter_mut().take(3) {
        row.iter_mut().take(3).for_each(|v| *v *= 2.0);
    }
    let got = affine::read(&sim).unwrap();
    assert!(close(got, want), "{got:?}");
    let t = write(d.path(), "t.txt", &params("TranslationTransform", "1 2 3", "", none));
    assert_eq!(affine::read(&t).unwrap(), affine::translation([-1.0, -2.0, 3.0]));
    // ComputeZYX: angles (a, b, 0) give Rz Rx Ry, whose (0, 1) is 0, or Rz Ry Rx, sin b sin a
    // (x and y both negated: the same in RAS).
    let (a, b): (f64, f64) = (0.3, -0.4);
    for (zyx, want) in [("false", 0.0), ("true", b.sin() * a.sin())] {
        let f = write(d.path(), "zyx.txt", &params("EulerTransform", &format!("{a} {b} 0 0 0 0"), &format!("(CenterOfRotationPoint 0 0 0)\n(ComputeZYX \"{zyx}\")\n"), none));
        assert!((affine::read(&f).unwrap()[0][1] - want).abs() < 1e-15, "ComputeZYX {zyx}");
    }
}

/// A chain through InitialTransformParameterFileName: the quarter turn R on top of the
/// translation t = (1, 2, 3) (LPS). "Compose" is T(x) = R(x + t), offset R t = (-2, 1, 3) LPS;
/// "Add" is R x + (x + t) - x, offset t. The initial file is found beside the file naming it
/// (relative, in a subfolder, or by the legacy key with an 's'), or by its absolute path.
#[test]
fn chains_compose_or_add_as_elastix_does() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir(d.path().join("first")).unwrap();
    let t0 = write(d.path(), "first/elastix-chain-t0.txt", &params("TranslationTransform", "1 2 3", "", "NoInitialTransform"));
    let top = |initial: &str, how: &str, key: &str| {
        params("EulerTransform", &format!("0 0 {HALF_PI} 0 0 0"), "(CenterOfRotationPoint 0 0 0)\n", initial).replace("\"Compose\"", &format!("\"{how}\"")).replace("InitialTransformParameterFileName", key)
    };
    let key = "InitialTransformParameterFileName";
    for (name, body) in [
        ("rel.txt", top("first/elastix-chain-t0.txt", "Compose", key)),
        ("legacy.txt", top("first/elastix-chain-t0.txt", "Compose", "InitialTransformParametersFileName")),
        ("abs.txt", top(s(&t0), "Compose", key)),
    ] {
        let got = affine::read(&write(d.path(), name, &body)).unwrap();
        assert!(close(got, quarter_then([2.0, -1.0, 3.0])), "{name}: {got:?}");
    }
    let got = affine::read(&write(d.path(), "add.txt", &top("first/elastix-chain-t0.txt", "Add", key))).unwrap();
    assert!(close(got, quarter_then([-1.0, -2.0, 3.0])), "Add: {got:?}");
    // Three deep, each beside the last: R, then R, then t: R R (x + t), the half turn.
    write(d.path(), "first/mid.txt", &top("elastix-chain-t0.txt", "Compose", key));
    let got = affine::read(&write(d.path(), "deep.txt", &top("first/mid.txt", "Compose", key))).unwrap();
    let want: Mat4 = [[-1.0, 0.0, 0.0, 1.0], [0.0, -1.0, 0.0, 2.0], [0.0, 0.0, 1.0, 3.0], [0.0, 0.0, 0.0, 1.0]];
    assert!(close(got, want), "three deep: {got:?}");
    // (Transform "File"): the ITK transform file it names, here the translation t, under R.
    write(d.path(), "first/t.tfm", "#Insight Transform File V1.0\nTransform: TranslationTransform_double_3_3\nParameters: 1 2 3\nFixedParameters:\n");
    let file = write(d.path(), "first/file.txt", "(Transform \"File\")\n(TransformFileName \"t.tfm\")\n(InitialTransformParameterFileName \"NoInitialTransform\")\n");
    assert_eq!(affine::read(&file).unwrap(), affine::translation([-1.0, -2.0, 3.0]));
    let got = affine::read(&write(d.path(), "on-file.txt", &top("first/file.txt", "Compose", key))).unwrap();
    assert!(close(got, quarter_then([2.0, -1.0, 3.0])), "on File: {got:?}");
}

/// Each refusal is one line naming the file at fault and the problem.
#[test]
fn unreadable_parameter_files_are_refused_by_name() {
    let d = tempfile::tempdir().unwrap();
    let none = "NoInitialTransform";
    let c = "(CenterOfRotationPoint 0 0 0)\n";
    let euler = |initial: &str| params("EulerTransform", "0 0 0 0 0 0", c, initial);
    write(d.path(), "bspline.txt", &params("BSplineTransform", "0 0 0", "", none));
    write(d.path(), "loop-a.txt", &euler("loop-b.txt"));
    write(d.path(), "loop-b.txt", &euler("loop-a.txt"));
    write(d.path(), "plain.txt", &euler(none));
    write(d.path(), "matrix.txt", "1 0 0 0\n0 1 0 0\n0 0 1 0\n0 0 0 1\n");
    let cases: Vec<(String, &str, &str)> = vec![
        (params("BSplineTransform", "0 0 0", "", none), "", "BSplineTransform is a nonlinear transform; neuroport applies affine transforms only (transformix applies this one)"),
        (params("RecursiveBSplineTransform", "0 0 0", "", none), "", "RecursiveBSplineTransform is a nonlinear transform"),
        (params("AffineDTITransform", "0 0 0 0 0 0 1 1 1 0 0 0", c, none), "", "elastix's AffineDTITransform is not read"),
        (params("EulerTransform", "0 0 0 0 0", c, none), "", "EulerTransform has 5 TransformParameters, 6 expected"),
        (params("EulerTransform", "0 0 0 0 0 0", "", none), "", "EulerTransform has no CenterOfRotationPoint"),
        (params("EulerTransform", "0 0 0 0 0 0", c, none).replace("(NumberOfParameters 6)", "(NumberOfParameters 7)"), "", "6 TransformParameters where NumberOfParameters says 7"),
        (params("EulerTransform", "0 0 x 0 0 0", c, none), "", "TransformParameters: 'x' is not a number"),
        (params("EulerTransform", "0 0 0 0 0", c, none).replace("(FixedImageDimension 3)", "(FixedImageDimension 2)"), "", "a 2-D transform"),
        (params("AffineTransform", "1 0 0 0 1 0 0 0 0 0 0 0", c, none), "", "singular"),
        (euler(none) + "Spacing 1 1 1\n", "", "'Spacing 1 1 1' is not '(Key value ...)'"),
        (euler(none) + "(Transform \"AffineTransform\")\n", "", "Transform is given twice"),
        (euler("missing.txt"), "", "its initial transform \"missing.txt\" (InitialTransformParameterFileName) is not found"),
        (euler("self.txt"), "", "leads back to a file of the chain (a loop)"),
        (euler("loop-a.txt"), "loop-b.txt", "leads back to a file of the chain (a loop)"),
        (euler("bspline.txt"), "bspline.txt", "BSplineTransform is a nonlinear transform"),
        (euler("matrix.txt"), "matrix.txt", "not an elastix transform parameter file (it is the initial transform of"),
        (euler("plain.txt").replace("\"Compose\"", "\"Multiply\""), "", "HowToCombineTransforms \"Multiply\" is neither"),
    ];
    for (k, (body, at_fault, says)) in cases.iter().enumerate() {
        let name = if says.contains("a loop") && at_fault.is_empty() { "self.txt".to_string() } else { format!("p{k}.txt") };
        let p = write(d.path(), &name, body);
        let blamed = if at_fault.is_empty() { p.clone() } else { d.path().join(at_fault) };
        let Err(e) = affine::read(&p) else { panic!("case {k}: read") };
        let e = e.to_string();
        assert!(e.starts_with(&format!("{}: ", blamed.display())) && e.contains(says) && !e.contains('\n'), "case {k}: {e}");
    }
}

/// resample through a parameter file writes the same bytes as through the world matrix it
/// stands for (exact fractions: the 10 decimals hold them); --fsl-mat refuses it in one line.
#[test]
fn resample_reads_parameter_files() {
    let d = tempfile::tempdir().unwrap();
    let g = |n: usize, v: f32| neuroport::synth::t1::centred_geometry([n, n + 2, n - 2], [v; 3]);
    let (gf, gm) = (g(24, 4.0), g(22, 4.5));
    let vals: Vec<f32> = (0..gm.nvox()).map(|i| ((i * 7919) % 1000) as f32).collect();
    let (fx, mv) = (d.path().join("fixed.nii.gz"), d.path().join("moving.nii.gz"));
    neuroport::volume::write_nifti(&fx, &gf, 1, &vec![0.0; gf.nvox()]).unwrap();
    neuroport::volume::write_nifti(&mv, &gm, 1, &vals).unwrap();
    let tp = write(d.path(), "TransformParameters.0.txt", &params("AffineTransform", "0.96875 -0.125 0.0625 0.125 0.96875 -0.09375 -0.0625 0.09375 1 2.5 -3.25 1.75", "(CenterOfRotationPoint 4 -6 8)\n", "NoInitialTransform"));
    let world = d.path().join("world.txt");
    affine::write(&world, &affine::read(&tp).unwrap()).unwrap();
    assert_eq!(affine::read(&world).unwrap(), affine::read(&tp).unwrap(), "the 10 decimals hold these fractions exactly");
    let mut outs = Vec::new();
    for (k, t) in [&world, &tp].into_iter().enumerate() {
        let out = d.path().join(format!("o{k}.nii.gz"));
        let (code, _, err) = run(&["resample", "--ref", s(&fx), "--moving", s(&mv), "--affine", s(t), "--out", s(&out)], &[]);
        assert_eq!(code, 0, "{}: {err}", t.display());
        outs.push(std::fs::read(&out).unwrap());
    }
    assert!(outs[0] == outs[1], "the parameter file resamples otherwise than its world matrix");
    let v = neuroport::volume::read_nifti(&d.path().join("o0.nii.gz")).unwrap();
    assert!(v.as_flat().iter().filter(|x| **x != 0.0).count() > v.nvox() / 2, "the transform keeps the image in view");
    let out = d.path().join("x.nii.gz");
    let (code, _, err) = run(&["resample", "--ref", s(&fx), "--moving", s(&mv), "--fsl-mat", s(&tp), "--out", s(&out)], &[("RUST_BACKTRACE", "1")]);
    assert_eq!((code, err.lines().count()), (1, 1), "{err}");
    assert!(err.starts_with(&format!("error: {}: an elastix transform parameter file", s(&tp))) && err.contains("--affine"), "{err}");
    assert!(!out.exists());
}
