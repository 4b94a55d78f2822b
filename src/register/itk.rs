//! ITK's transform files, read into neuroport's world transform: the "#Insight Transform File"
//! text that ITK, SimpleITK and ANTs write, and ANTs' binary 0GenericAffine.mat (MATLAB v4,
//! [`super::matlab4`]); elastix's parameter files are told apart here and read by
//! [`super::elastix`].
//!
//! An ITK transform maps a point of the fixed (output) image to the moving image, as
//! neuroport's does (a resampler's direction), but in LPS physical coordinates, whose x and y
//! are NIfTI's negated: `T = F [M | o] F`, F = diag(-1, -1, 1, 1). The linear kinds hold a 3x3
//! matrix M, a translation t and a centre c (FixedParameters); the offset is `o = t + c - M c`
//! (MatrixOffsetTransformBase::ComputeOffset).

use super::affine::{det3, mul, Mat4, IDENTITY};
use super::matlab4;
use anyhow::{anyhow, bail, Result};
use std::path::Path;

/// How an ITK transform file is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Matlab,
    Hdf5,
    /// elastix's TransformParameters.N.txt ([`super::elastix`]).
    Elastix,
}

/// The ITK format of the file at `path`, by its first bytes; None for anything else (a 4x4
/// text matrix, a file that cannot be opened: left to the matrix reader's errors).
pub fn detect(path: &Path) -> Option<Format> {
    use std::io::Read;
    let mut head = Vec::new();
    let _ = std::fs::File::open(path).ok()?.take(4096).read_to_end(&mut head);
    let text = String::from_utf8_lossy(&head);
    if text.trim_start_matches('\u{feff}').trim_start().starts_with("#Insight Transform File") {
        Some(Format::Text)
    } else if head.starts_with(b"\x89HDF\r\n\x1a\n") {
        Some(Format::Hdf5)
    } else if matlab4::first_name(&head).is_some_and(|n| n.contains("Transform_")) {
        Some(Format::Matlab)
    } else if super::elastix::is_parameter_file(&text) {
        Some(Format::Elastix)
    } else {
        None
    }
}

/// One transform as the file holds it (an elastix parameter file's, named as ITK's class).
pub(super) struct Raw {
    pub class: String,
    pub params: Vec<f64>,
    pub fixed: Vec<f64>,
}

/// The world transform (fixed RAS mm -> moving RAS mm) of the ITK transform file at `path`
/// (or elastix parameter file), checked (finite, invertible), each error one line naming the
/// file.
pub fn read(path: &Path) -> Result<Mat4> {
    let m = match detect(path) {
        Some(Format::Elastix) => super::elastix::read_lps(path)?,
        _ => read_lps(path)?,
    };
    ras(path, &m)
}

/// The transform of the ITK file at `path` in ITK's LPS frame, unchecked.
pub(super) fn read_lps(path: &Path) -> Result<Mat4> {
    let shown = path.display();
    let raws = match detect(path) {
        Some(Format::Text) => text(&crate::volume::read_text(path)?),
        Some(Format::Matlab) => matlab(&std::fs::read(path).map_err(|e| anyhow!("{shown}: cannot read ({})", crate::volume::plain_io(&e)))?),
        Some(Format::Hdf5) => Err(anyhow!("an HDF5 transform file (ITK .h5), which this does not read: convert it with ConvertTransformFile 3 {shown} OUT.txt (or OUT.mat) and give that")),
        Some(Format::Elastix) | None => Err(anyhow!("not an ITK transform file")),
    }
    .map_err(|e| anyhow!("{shown}: {e}"))?;
    composed(raws).map_err(|e| anyhow!("{shown}: {e}"))
}

/// An LPS transform `m` read from `path` as neuroport's RAS world matrix, refused (naming the
/// file) when not finite or singular.
pub(super) fn ras(path: &Path, m: &Mat4) -> Result<Mat4> {
    let shown = path.display();
    if m.iter().flatten().any(|v| !v.is_finite()) {
        bail!("{shown}: the transform holds non-finite values");
    }
    if det3(m).abs() < 1e-9 {
        bail!("{shown}: the transform's matrix is singular");
    }
    // LPS -> RAS on both sides: entry (r, c) changes sign when one of r, c is x or y.
    let f = [-1.0, -1.0, 1.0, 1.0];
    Ok(std::array::from_fn(|r| std::array::from_fn(|c| f[r] * m[r][c] * f[c])))
}

/// The transforms of ITK's text format: "Transform: CLASS", "Parameters: ...",
/// "FixedParameters: ..." per transform, # comments between.
fn text(t: &str) -> Result<Vec<Raw>> {
    let mut raws: Vec<Raw> = Vec::new();
    for (k, line) in t.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((key, rest)) = line.split_once(':') else { bail!("line {}: '{line}' is not 'Key: values'", k + 1) };
        let nums = || -> Result<Vec<f64>> {
            rest.split_whitespace().map(|w| w.parse::<f64>().map_err(|_| anyhow!("line {}: '{w}' is not a number", k + 1))).collect()
        };
        match (key.trim(), raws.last_mut()) {
            ("Transform", _) => raws.push(Raw { class: rest.trim().to_string(), params: vec![], fixed: vec![] }),
            ("Parameters", Some(r)) => r.params = nums()?,
            ("FixedParameters", Some(r)) => r.fixed = nums()?,
            (key, _) => bail!("line {}: '{key}:' where 'Transform:' was expected", k + 1),
        }
    }
    Ok(raws)
}

/// The transforms of a MATLAB v4 file: each a variable named for its class, then "fixed".
fn matlab(b: &[u8]) -> Result<Vec<Raw>> {
    let mut raws: Vec<Raw> = Vec::new();
    for v in matlab4::parse(b)? {
        match raws.last_mut() {
            Some(r) if v.name == "fixed" => r.fixed = v.values,
            _ if v.name.contains("Transform_") => raws.push(Raw { class: v.name, params: v.values, fixed: vec![] }),
            _ => bail!("holds a variable '{}' where a transform was expected", v.name),
        }
    }
    Ok(raws)
}

/// The one transform of the file in LPS. A composite (as ANTs and SimpleITK write) applies the
/// transform added last first, and the file lists them in the order added, so the matrix is
/// the product in file order: T = T1 T2 ... Tn.
fn composed(mut raws: Vec<Raw>) -> Result<Mat4> {
    let composite = raws.first().is_some_and(|r| r.class.starts_with("CompositeTransform_"));
    if composite {
        raws.remove(0);
    }
    match raws.len() {
        0 => bail!("holds no transform"),
        1 => lps(&raws[0]),
        _ if composite => raws.iter().try_fold(IDENTITY, |m, r| Ok(mul(&m, &lps(r)?))),
        n => {
            let names: Vec<_> = raws.iter().map(|r| r.class.as_str()).collect();
            bail!("holds {n} transforms ({}), this reads one: collapse linear ones into one affine with antsApplyTransforms -d 3 -r REF -t FILE -o Linear[OUT.mat]", names.join(", "))
        }
    }
}

/// The transform as a 4x4 in ITK's LPS frame.
pub(super) fn lps(r: &Raw) -> Result<Mat4> {
    let class = r.class.as_str();
    let (kind, dims) = class.split_once("_double_").or(class.split_once("_float_")).unwrap_or((class, ""));
    if dims != "3_3" && !dims.is_empty() {
        bail!("{class} is not a 3-D transform");
    }
    let nonlinear = ["Displacement", "Velocity", "BSpline", "Spline", "Kernel", "Diffeomorphic"];
    if nonlinear.iter().any(|w| kind.contains(w)) {
        bail!("{class} is a nonlinear transform; neuroport applies affine transforms only (antsApplyTransforms applies this one)");
    }
    let (np, nf): (usize, &[usize]) = match kind {
        "AffineTransform" | "MatrixOffsetTransformBase" | "Rigid3DTransform" => (12, &[3]),
        "Euler3DTransform" => (6, &[3, 4]),
        "VersorRigid3DTransform" => (6, &[3]),
        "Similarity3DTransform" => (7, &[3]),
        "TranslationTransform" => (3, &[0, 3]),
        "IdentityTransform" => (0, &[0, 3]),
        _ => bail!("{class} is not read (affine, rigid, Euler, versor, similarity, translation are): convert it with ConvertTransformFile 3 FILE OUT.mat --convertToAffineType"),
    };
    let (p, c) = (&r.params, &r.fixed);
    if p.len() != np {
        bail!("{class} has {} Parameters, {np} expected", p.len());
    }
    if !nf.contains(&c.len()) {
        bail!("{class} has {} FixedParameters, {} expected (its centre)", c.len(), nf[0]);
    }
    let (m, t): ([[f64; 3]; 3], [f64; 3]) = match kind {
        "Euler3DTransform" => (euler(p[0], p[1], p[2], c.get(3).is_some_and(|z| *z != 0.0)), [p[3], p[4], p[5]]),
        "VersorRigid3DTransform" => (versor([p[0], p[1], p[2]], class)?, [p[3], p[4], p[5]]),
        "Similarity3DTransform" => (versor([p[0], p[1], p[2]], class)?.map(|row| row.map(|v| v * p[6])), [p[3], p[4], p[5]]),
        "TranslationTransform" => ([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]], [p[0], p[1], p[2]]),
        "IdentityTransform" => return Ok(IDENTITY),
        _ => (std::array::from_fn(|i| [p[3 * i], p[3 * i + 1], p[3 * i + 2]]), [p[9], p[10], p[11]]),
    };
    let centre = if c.len() >= 3 { [c[0], c[1], c[2]] } else { [0.0; 3] };
    let mut out = IDENTITY;
    for i in 0..3 {
        out[i][..3].copy_from_slice(&m[i]);
        out[i][3] = t[i] + centre[i] - (0..3).map(|j| m[i][j] * centre[j]).sum::<f64>();
    }
    Ok(out)
}

/// Euler3DTransform's rotation: Rz Rx Ry, or Rz Ry Rx when ComputeZYX (its 4th fixed
/// parameter) is set.
fn euler(ax: f64, ay: f64, az: f64, zyx: bool) -> [[f64; 3]; 3] {
    let (sx, cx) = ax.sin_cos();
    let (sy, cy) = ay.sin_cos();
    let (sz, cz) = az.sin_cos();
    let rx = [[1.0, 0.0, 0.0], [0.0, cx, -sx], [0.0, sx, cx]];
    let ry = [[cy, 0.0, sy], [0.0, 1.0, 0.0], [-sy, 0.0, cy]];
    let rz = [[cz, -sz, 0.0], [sz, cz, 0.0], [0.0, 0.0, 1.0]];
    let mul = |a: [[f64; 3]; 3], b: [[f64; 3]; 3]| -> [[f64; 3]; 3] { std::array::from_fn(|i| std::array::from_fn(|j| (0..3).map(|k| a[i][k] * b[k][j]).sum())) };
    if zyx {
        mul(rz, mul(ry, rx))
    } else {
        mul(rz, mul(rx, ry))
    }
}

/// The rotation of a versor (a unit quaternion's vector part; w = sqrt(1 - |v|^2) >= 0).
fn versor(v: [f64; 3], class: &str) -> Result<[[f64; 3]; 3]> {
    let n2 = v.iter().map(|x| x * x).sum::<f64>();
    if n2 > 1.0 + 1e-9 {
        bail!("{class}: its versor ({}, {}, {}) is longer than 1", v[0], v[1], v[2]);
    }
    let [x, y, z] = v;
    let w = (1.0 - n2).max(0.0).sqrt();
    Ok([
        [1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y - z * w), 2.0 * (x * z + y * w)],
        [2.0 * (x * y + z * w), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z - x * w)],
        [2.0 * (x * z - y * w), 2.0 * (y * z + x * w), 1.0 - 2.0 * (x * x + y * y)],
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::register::affine::apply;

    /// ITK's definition (itk::MatrixOffsetTransformBase::TransformPoint, LPS): M (x - c) + c + t.
    fn itk_point(m: [[f64; 3]; 3], t: [f64; 3], c: [f64; 3], x: [f64; 3]) -> [f64; 3] {
        std::array::from_fn(|i| (0..3).map(|j| m[i][j] * (x[j] - c[j])).sum::<f64>() + c[i] + t[i])
    }
    fn lps(p: [f64; 3]) -> [f64; 3] {
        [-p[0], -p[1], p[2]]
    }
    fn text_file(d: &Path, name: &str, body: &str) -> std::path::PathBuf {
        let p = d.join(name);
        std::fs::write(&p, format!("#Insight Transform File V1.0\n#Transform 0\n{body}")).unwrap();
        p
    }
    /// A MATLAB v4 variable as vnl_matlab_write writes it: little endian, n x 1.
    fn mat_var(name: &str, values: &[f64], single: bool) -> Vec<u8> {
        let mut b: Vec<u8> = [if single { 10 } else { 0 }, values.len() as i32, 1, 0, name.len() as i32 + 1].iter().flat_map(|v| v.to_le_bytes()).collect();
        b.extend_from_slice(name.as_bytes());
        b.push(0);
        for v in values {
            b.extend_from_slice(&if single { (*v as f32).to_le_bytes().to_vec() } else { v.to_le_bytes().to_vec() });
        }
        b
    }

    const M: [[f64; 3]; 3] = [[0.5, -0.75, 0.25], [1.25, 0.5, -0.5], [0.125, 1.5, 1.0]];
    const T: [f64; 3] = [4.0, -6.5, 3.25];
    const C: [f64; 3] = [-12.5, 20.0, 7.5];
    /// M, T, C as neuroport's RAS matrix, worked by hand: M C = (-19.375, -9.375, 35.9375), so
    /// o = T + C - M C = (10.875, 22.875, -25.1875); entries (r, c) with exactly one of r, c
    /// in {x, y} change sign, and so do o's x and y.
    const WANT: Mat4 = [[0.5, -0.75, -0.25, -10.875], [1.25, 0.5, 0.5, -22.875], [-0.125, -1.5, 1.0, -25.1875], [0.0, 0.0, 0.0, 1.0]];
    fn params() -> Vec<f64> {
        M.iter().flatten().chain(T.iter()).copied().collect()
    }

    /// The text form, double or float, and a composite holding it alone, give the matrix worked
    /// by hand, which sends each RAS point where ITK sends it in LPS.
    #[test]
    fn text_affine_with_centre() {
        let d = tempfile::tempdir().unwrap();
        let p: Vec<String> = params().iter().map(|v| v.to_string()).collect();
        let body = |class: &str| format!("Transform: {class}\nParameters: {}\nFixedParameters: {} {} {}\n", p.join(" "), C[0], C[1], C[2]);
        let a = text_file(d.path(), "a.txt", &body("AffineTransform_double_3_3"));
        assert_eq!(read(&a).unwrap(), WANT);
        for x in [[0.0, 0.0, 0.0], [10.0, -20.0, 30.0], [-7.5, 3.0, -1.0]] {
            let (got, want) = (apply(&WANT, x), lps(itk_point(M, T, C, lps(x))));
            assert!((0..3).all(|k| (got[k] - want[k]).abs() < 1e-12), "{got:?} {want:?}");
        }
        for (name, b) in [
            ("f.txt", body("AffineTransform_float_3_3")),
            ("b.txt", body("MatrixOffsetTransformBase_double_3_3")),
            ("c.txt", format!("Transform: CompositeTransform_double_3_3\n#Transform 1\n{}", body("AffineTransform_double_3_3"))),
        ] {
            assert_eq!(read(&text_file(d.path(), name, &b)).unwrap(), WANT, "{name}");
        }
    }

    /// ANTs' 0GenericAffine.mat, doubles or singles (every number here is a float32 exactly),
    /// gives the same matrix as the text form.
    #[test]
    fn ants_mat() {
        let d = tempfile::tempdir().unwrap();
        for (class, single) in [("AffineTransform_double_3_3", false), ("AffineTransform_float_3_3", true)] {
            let p = d.path().join(format!("{class}.mat"));
            std::fs::write(&p, [mat_var(class, &params(), single), mat_var("fixed", &C, false)].concat()).unwrap();
            assert_eq!(detect(&p), Some(Format::Matlab));
            assert_eq!(read(&p).unwrap(), WANT, "{class}");
        }
    }

    /// Euler angles (0, 0, 90 deg), the versor (0, 0, sin 45 deg) and the similarity with
    /// that versor and scale 2 are all the quarter turn about z (scaled by 2 for the
    /// similarity), a kind of rotation that LPS and RAS share; the Euler orders differ on
    /// angles about two axes, in the order ITK composes them.
    #[test]
    fn rigid_kinds() {
        let d = tempfile::tempdir().unwrap();
        let h = std::f64::consts::FRAC_PI_4.sin();
        let quarter: Mat4 = [[0.0, -1.0, 0.0, -1.0], [1.0, 0.0, 0.0, -2.0], [0.0, 0.0, 1.0, 3.0], [0.0, 0.0, 0.0, 1.0]];
        let close = |a: Mat4, b: Mat4| (0..4).all(|r| (0..4).all(|c| (a[r][c] - b[r][c]).abs() < 1e-12));
        for (class, p, scale) in [
            ("Euler3DTransform", format!("0 0 {} 1 2 3", std::f64::consts::FRAC_PI_2), 1.0),
            ("VersorRigid3DTransform", format!("0 0 {h} 1 2 3"), 1.0),
            ("Similarity3DTransform", format!("0 0 {h} 1 2 3 2"), 2.0),
        ] {
            let f = text_file(d.path(), "r.txt", &format!("Transform: {class}_double_3_3\nParameters: {p}\nFixedParameters: 0 0 0\n"));
            let mut want = quarter;
            for r in 0..3 {
                for c in 0..3 {
                    want[r][c] *= scale;
                }
            }
            let got = read(&f).unwrap();
            assert!(close(got, want), "{class}: {got:?}");
        }
        let (a, b) = (0.3, -0.4);
        let zxy = euler(a, b, 0.0, false);
        let zyx = euler(a, b, 0.0, true);
        // Rz Rx Ry and Rz Ry Rx with z = 0: Rx Ry's (0, 1) is 0, Ry Rx's is sin b sin a.
        assert_eq!(zxy[0][1], 0.0);
        assert!((zyx[0][1] - b.sin() * a.sin()).abs() < 1e-15);
        let f = text_file(d.path(), "zyx.txt", &format!("Transform: Euler3DTransform_double_3_3\nParameters: {a} {b} 0 0 0 0\nFixedParameters: 0 0 0 1\n"));
        assert!((read(&f).unwrap()[0][1] - b.sin() * a.sin()).abs() < 1e-15, "the 4th fixed parameter selects ZYX");
    }

    /// Each refusal is one line starting with the file's name and saying what is wrong.
    #[test]
    fn unreadable_transforms_are_refused_by_name() {
        let d = tempfile::tempdir().unwrap();
        let aff = |p: &str, f: &str| format!("Transform: AffineTransform_double_3_3\nParameters: {p}\nFixedParameters: {f}\n");
        let twelve = "1 0 0 0 1 0 0 0 1 0 0 0";
        let cases = [
            (aff("1 0 0 0 1 0 0 0 1 0 0", "0 0 0"), "has 11 Parameters, 12 expected"),
            (aff(twelve, "0 0"), "has 2 FixedParameters, 3 expected"),
            (aff("1 0 0 0 1 0 0 0 1 0 0 x", "0 0 0"), "'x' is not a number"),
            (aff("1 0 0 0 1 0 0 0 0 0 0 0", "0 0 0"), "singular"),
            (aff("1 0 0 0 1 0 0 0 1 0 0 nan", "0 0 0"), "non-finite"),
            ("Transform: AffineTransform_double_2_2\nParameters: 1 0 0 1 0 0\nFixedParameters: 0 0\n".into(), "not a 3-D transform"),
            ("Transform: DisplacementFieldTransform_double_3_3\nParameters: \nFixedParameters: 1 2 3\n".into(), "nonlinear"),
            ("Transform: ScaleSkewVersor3DTransform_double_3_3\nParameters: 0 0 0 0 0 0 1 1 1 0 0 0 0 0 0\nFixedParameters: 0 0 0\n".into(), "--convertToAffineType"),
            (format!("{}{}", aff(twelve, "0 0 0"), aff(twelve, "0 0 0")), "holds 2 transforms"),
            ("Transform: VersorRigid3DTransform_double_3_3\nParameters: 1 1 0 0 0 0\nFixedParameters: 0 0 0\n".into(), "longer than 1"),
            ("Parameters: 1 2 3\n".into(), "'Parameters:' where 'Transform:' was expected"),
        ];
        for (k, (body, says)) in cases.iter().enumerate() {
            let p = text_file(d.path(), &format!("t{k}.txt"), body);
            let e = read(&p).unwrap_err().to_string();
            assert!(e.starts_with(&format!("{}: ", p.display())) && e.contains(says) && !e.contains('\n'), "case {k}: {e}");
        }
        let mat = d.path().join("0GenericAffine.mat");
        let whole = [mat_var("AffineTransform_double_3_3", &params(), false), mat_var("fixed", &C, false)].concat();
        let h5 = d.path().join("t.h5");
        std::fs::write(&h5, b"\x89HDF\r\n\x1a\n\0\0\0\0").unwrap();
        for (bytes, path, says) in [
            (whole[..whole.len() - 3].to_vec(), &mat, "ends inside variable 'fixed'"),
            ([whole.clone(), mat_var("extra", &[1.0], false)].concat(), &mat, "variable 'extra' where a transform was expected"),
            (b"\x89HDF\r\n\x1a\n\0\0\0\0".to_vec(), &h5, "ConvertTransformFile"),
        ] {
            std::fs::write(path, bytes).unwrap();
            let e = read(path).unwrap_err().to_string();
            assert!(e.starts_with(&format!("{}: ", path.display())) && e.contains(says) && !e.contains('\n'), "{e}");
        }
    }
}
