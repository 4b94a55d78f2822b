//! 4x4 world-space affines: products, inverses, the text files users exchange, and FSL FLIRT's
//! matrix convention.
//!
//! neuroport's transform `T` maps a point of the fixed image (world mm, the NIfTI sform/qform
//! frame) to the corresponding point of the moving image: the NiftyReg/ITK direction, the one a
//! resampler needs (for each output voxel, where to read). FLIRT's `.mat` maps the other way
//! and in other coordinates; see [`to_flirt`] and docs/register.md.

use crate::volume::{invert3, Geometry};
use anyhow::{anyhow, bail, Context, Result};
use std::path::Path;

pub type Mat4 = [[f64; 4]; 4];

pub const IDENTITY: Mat4 = [[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]];

pub fn mul(a: &Mat4, b: &Mat4) -> Mat4 {
    std::array::from_fn(|r| std::array::from_fn(|c| (0..4).map(|k| a[r][k] * b[k][c]).sum()))
}

/// Inverse of an affine (last row 0 0 0 1).
pub fn inverse(a: &Mat4) -> Mat4 {
    let m = [[a[0][0], a[0][1], a[0][2]], [a[1][0], a[1][1], a[1][2]], [a[2][0], a[2][1], a[2][2]]];
    let inv = invert3(&m);
    let mut out = IDENTITY;
    for r in 0..3 {
        for c in 0..3 {
            out[r][c] = inv[r][c];
        }
        out[r][3] = -(0..3).map(|k| inv[r][k] * a[k][3]).sum::<f64>();
    }
    out
}

pub fn apply(a: &Mat4, p: [f64; 3]) -> [f64; 3] {
    std::array::from_fn(|r| a[r][0] * p[0] + a[r][1] * p[1] + a[r][2] * p[2] + a[r][3])
}

pub fn det3(a: &Mat4) -> f64 {
    a[0][0] * (a[1][1] * a[2][2] - a[1][2] * a[2][1]) - a[0][1] * (a[1][0] * a[2][2] - a[1][2] * a[2][0])
        + a[0][2] * (a[1][0] * a[2][1] - a[1][1] * a[2][0])
}

pub fn translation(t: [f64; 3]) -> Mat4 {
    let mut m = IDENTITY;
    for r in 0..3 {
        m[r][3] = t[r];
    }
    m
}

/// The map from fixed voxel indices to moving voxel indices for the world transform `t`
/// (fixed world -> moving world): what the cost kernel applies, as 12 row-major numbers.
pub fn voxel_map(t: &Mat4, fixed: &Geometry, moving: &Geometry) -> Mat4 {
    mul(&inverse(&moving.affine), &mul(t, &fixed.affine))
}

/// FSL's "scaled voxel" frame of an image: voxel indices times pixdim, with x reversed
/// ((nx - 1 - i) * dx) when the voxel-to-world determinant is positive (FSL's radiological
/// internal convention). An image with neither sform nor qform code is radiological to FSL
/// (fslio's FslGetLeftRightOrder starts from det = -1), so never reversed, though the
/// pixdim diagonal standing in for its affine has a positive determinant.
pub fn fsl_frame(g: &Geometry) -> Mat4 {
    let mut s = IDENTITY;
    for i in 0..3 {
        s[i][i] = g.voxel_size[i] as f64;
    }
    let oriented = g.header.sform_code > 0 || g.header.qform_code > 0;
    if oriented && g.det() > 0.0 {
        s[0][0] = -(g.voxel_size[0] as f64);
        s[0][3] = (g.dims[0] as f64 - 1.0) * g.voxel_size[0] as f64;
    }
    s
}

/// FLIRT's `.mat` for world transform `t`: it maps the moving (FLIRT's "input") image's FSL
/// scaled-voxel coordinates to the fixed ("reference") image's, i.e.
/// `fsl_fixed * A_fixed^-1 * T^-1 * A_moving * fsl_moving^-1`, so that
/// `flirt -in moving -ref fixed -applyxfm -init PREFIX.mat` reproduces PREFIX_warped.
pub fn to_flirt(t: &Mat4, fixed: &Geometry, moving: &Geometry) -> Mat4 {
    let moving_fsl_to_world = mul(&moving.affine, &inverse(&fsl_frame(moving)));
    let world_to_fixed_fsl = mul(&fsl_frame(fixed), &inverse(&fixed.affine));
    mul(&world_to_fixed_fsl, &mul(&inverse(t), &moving_fsl_to_world))
}

/// The inverse of [`to_flirt`]: a FLIRT `.mat` back to neuroport's world transform.
pub fn from_flirt(m: &Mat4, fixed: &Geometry, moving: &Geometry) -> Mat4 {
    let fixed_fsl_to_world = mul(&fixed.affine, &inverse(&fsl_frame(fixed)));
    let world_to_moving_fsl = mul(&fsl_frame(moving), &inverse(&moving.affine));
    // m maps moving fsl -> fixed fsl, so T^-1 = fixed_fsl_to_world * m * world_to_moving_fsl.
    inverse(&mul(&fixed_fsl_to_world, &mul(m, &world_to_moving_fsl)))
}

/// Four lines of four numbers, as reg_aladin writes its affine and FLIRT its .mat.
pub fn format(m: &Mat4) -> String {
    m.iter().map(|r| r.iter().map(|v| format!("{v:.10}")).collect::<Vec<_>>().join(" ") + "\n").collect()
}

/// `m` as [`read`] gets it back from [`write`]'s file (10 decimals): a transform once written.
/// register warps through this, so that the matrix file gives its warped image again bit for
/// bit (`resample`): the float32 voxel map of the unrounded matrix can differ in a last bit.
pub fn as_written(m: &Mat4) -> Mat4 {
    let nums: Vec<f64> = format(m).split_whitespace().map(|w| w.parse().unwrap_or(f64::NAN)).collect();
    std::array::from_fn(|r| std::array::from_fn(|c| nums[4 * r + c]))
}

pub fn write(path: &Path, m: &Mat4) -> Result<()> {
    std::fs::write(path, format(m)).with_context(|| format!("cannot write {}", path.display()))
}

/// Reads a 4x4 affine text file (whitespace-separated, 16 numbers; the last row must be
/// 0 0 0 1 and the 3x3 part invertible), naming the file in every error. An ITK/ANTs transform
/// file, which says what it is in its first bytes, is read as such ([`super::itk`]): those were
/// refused, with a conversion to do by hand.
pub fn read(path: &Path) -> Result<Mat4> {
    if super::itk::detect(path).is_some() {
        return super::itk::read(path);
    }
    let shown = path.display();
    let text = crate::volume::read_text(path)?;
    // From # to the end of a line is a comment (a note of where the matrix came from, as tools
    // write above theirs); it was refused as "'#' is not a number".
    let nums: Vec<f64> = text
        .lines()
        .flat_map(|l| l.split('#').next().unwrap_or("").split_whitespace())
        .map(|w| w.parse::<f64>().map_err(|_| anyhow!("{shown}: '{w}' is not a number (a 4x4 matrix is expected)")))
        .collect::<Result<_>>()?;
    // AFNI writes its affines as 3x4 (.aff12.1D: 12 numbers on a line), base -> source as
    // here but in DICOM (LPS) mm: read as RAS they would move the image wrongly, so only said.
    if nums.len() == 12 {
        bail!("{shown}: holds 12 numbers, a 3x4 affine (as AFNI's .aff12.1D), where a 4x4 matrix is expected; AFNI's are in DICOM (LPS) mm, not NIfTI world (RAS) mm: convert it first (diag(-1,-1,1,1) on both sides) and add the row 0 0 0 1");
    }
    if nums.len() != 16 {
        bail!("{shown}: holds {} numbers, a 4x4 matrix has 16", nums.len());
    }
    let m: Mat4 = std::array::from_fn(|r| std::array::from_fn(|c| nums[4 * r + c]));
    if nums.iter().any(|v| !v.is_finite()) {
        bail!("{shown}: the matrix holds non-finite values");
    }
    if (m[3][0].abs() + m[3][1].abs() + m[3][2].abs() + (m[3][3] - 1.0).abs()) > 1e-6 {
        bail!("{shown}: the last row must be 0 0 0 1 (an affine), got {:?}", m[3]);
    }
    if det3(&m).abs() < 1e-9 {
        bail!("{shown}: the matrix is singular");
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 4x4 matrix with # comments (lines of their own, or after a row) reads as the matrix.
    #[test]
    fn comment_lines_are_skipped() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("m.txt");
        std::fs::write(&p, "# world mm, fixed -> moving\n1 0 0 5\n0 1 0 -2\n  # (rotation-free)\n0 0 1 3\n0 0 0 1\n").unwrap();
        assert_eq!(read(&p).unwrap(), translation([5.0, -2.0, 3.0]));
        std::fs::write(&p, "1 0 0 5 # x shift\n0 1 0 -2\n0 0 1 3\n0 0 0 1 #\n").unwrap();
        assert_eq!(read(&p).unwrap(), translation([5.0, -2.0, 3.0]));
    }

    /// A 3x4 affine (AFNI's .aff12.1D: one line of 12, or three rows of 4) is named as such,
    /// with AFNI's LPS convention, where it was only "holds 12 numbers, a 4x4 matrix has 16".
    #[test]
    fn a_3x4_affine_is_named() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("anat_al_mat.aff12.1D");
        for text in ["# 3dAllineate matrices\n 1 0 0 5 0 1 0 -2 0 0 1 3\n", "1 0 0 5\n0 1 0 -2\n0 0 1 3\n"] {
            std::fs::write(&p, text).unwrap();
            let e = read(&p).unwrap_err().to_string();
            assert!(e.starts_with(&format!("{}: holds 12 numbers, a 3x4 affine (as AFNI's .aff12.1D)", p.display())), "{e}");
            assert!(e.contains("DICOM (LPS)") && e.contains("0 0 0 1") && !e.contains('\n'), "{e}");
        }
        std::fs::write(&p, "1 0 0 5 0 1 0 -2 0 0 1\n").unwrap();
        assert_eq!(read(&p).unwrap_err().to_string(), format!("{}: holds 11 numbers, a 4x4 matrix has 16", p.display()));
    }

    fn flipped(dims: [usize; 3], vs: [f32; 3]) -> Geometry {
        let mut g = Geometry::synthetic(dims, vs);
        g.affine[0][0] = -(vs[0] as f64);
        g.affine[0][3] = 90.0;
        g.affine[1][3] = -30.0;
        g
    }

    #[test]
    fn inverse_and_flirt_round_trip() {
        let t: Mat4 = [[0.98, 0.1, -0.05, 3.0], [-0.09, 1.02, 0.02, -7.0], [0.04, 0.01, 0.95, 11.0], [0.0, 0.0, 0.0, 1.0]];
        let i = mul(&t, &inverse(&t));
        for r in 0..4 {
            for c in 0..4 {
                assert!((i[r][c] - IDENTITY[r][c]).abs() < 1e-12);
            }
        }
        let f = Geometry::synthetic([40, 50, 30], [2.0, 2.0, 3.0]);
        let m = flipped([30, 30, 30], [2.5, 2.5, 2.5]);
        let back = from_flirt(&to_flirt(&t, &f, &m), &f, &m);
        for r in 0..4 {
            for c in 0..4 {
                assert!((back[r][c] - t[r][c]).abs() < 1e-9);
            }
        }
    }

    /// The FLIRT matrix maps a moving point's FSL coordinates to the FSL coordinates of the
    /// fixed point that T sends there, on a positive-determinant (x-reversed in FSL) grid.
    #[test]
    fn flirt_maps_moving_fsl_to_fixed_fsl() {
        let f = Geometry::synthetic([40, 50, 30], [2.0, 2.0, 3.0]);
        let m = flipped([30, 30, 30], [2.5, 2.5, 2.5]);
        let t = translation([5.0, -3.0, 2.0]);
        let fl = to_flirt(&t, &f, &m);
        let fixed_vox = [10.0, 20.0, 5.0];
        let moving_vox = m.world_to_voxel(apply(&t, f.voxel_to_world(fixed_vox)));
        let got = apply(&fl, apply(&fsl_frame(&m), moving_vox));
        let want = apply(&fsl_frame(&f), fixed_vox);
        // f has det > 0: FSL x is (nx-1-i)*dx.
        assert!((want[0] - (39.0 - 10.0) * 2.0).abs() < 1e-12);
        for k in 0..3 {
            assert!((got[k] - want[k]).abs() < 1e-9, "{got:?} vs {want:?}");
        }
    }

    /// An image with neither sform nor qform code is radiological to FSL: its x is not
    /// reversed, so FLIRT's identity .mat between two such images of other widths takes
    /// reference voxel i to moving voxel i (reversed, it took i to i + 10 here). A qform or
    /// sform code alone brings the reversal back, the pixdim diagonal's det being positive.
    #[test]
    fn images_without_orientation_are_radiological_to_fsl() {
        let plain = |dims: [usize; 3], q: i16, s: i16| {
            let mut g = Geometry::synthetic(dims, [2.0; 3]);
            (g.header.qform_code, g.header.sform_code) = (q, s);
            g
        };
        let (f, m) = (plain([30, 20, 10], 0, 0), plain([40, 20, 10], 0, 0));
        assert_eq!(fsl_frame(&f)[0], [2.0, 0.0, 0.0, 0.0]);
        let t = from_flirt(&IDENTITY, &f, &m);
        let got = m.world_to_voxel(apply(&t, f.voxel_to_world([3.0, 4.0, 5.0])));
        assert!((0..3).all(|k| (got[k] - [3.0, 4.0, 5.0][k]).abs() < 1e-9), "{got:?}");
        for (q, s) in [(1, 0), (0, 2)] {
            assert_eq!(fsl_frame(&plain([30, 20, 10], q, s))[0], [-2.0, 0.0, 0.0, 58.0], "qform {q} sform {s}");
        }
    }

    /// `as_written` is what the file gives back, bit for bit, and it is not the matrix itself:
    /// without it, register's warped image came from a matrix its file does not hold.
    #[test]
    fn as_written_is_what_read_gives() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("m.txt");
        let mut r = crate::synth::rng(7);
        let mut changed = 0;
        for _ in 0..50 {
            let q: Vec<f64> = (0..12).map(|_| rand::Rng::random_range(&mut r, -8.0..8.0)).collect();
            let t = crate::register::params::matrix(&q, [1.5, -2.0, 3.0]);
            write(&p, &t).unwrap();
            let w = as_written(&t);
            assert_eq!(read(&p).unwrap().map(|r| r.map(f64::to_bits)), w.map(|r| r.map(f64::to_bits)));
            changed += (w != t) as usize;
        }
        assert!(changed > 40, "{changed} of 50 matrices changed by the 10 decimals");
    }

    #[test]
    fn reads_reject_bad_files() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("m.txt");
        std::fs::write(&p, "1 0 0 0\n0 1 0 0\n0 0 1 0\n").unwrap();
        assert!(read(&p).unwrap_err().to_string().contains("12 numbers"));
        std::fs::write(&p, format(&translation([1.0, 2.0, 3.0]))).unwrap();
        assert_eq!(read(&p).unwrap()[1][3], 2.0);
        std::fs::write(&p, "0 0 0 0 0 1 0 0 0 0 1 0 0 0 0 1").unwrap();
        assert!(read(&p).unwrap_err().to_string().contains("singular"));
    }

    /// ANTs' binary 0GenericAffine.mat and ITK's text transform (an identity shifted by
    /// (2, 3, 4) in LPS) are read as such (they were refused); a 4x4 matrix whose comment
    /// mentions ITK is still a matrix.
    #[test]
    fn itk_transforms_are_read() {
        let d = tempfile::tempdir().unwrap();
        let mut bin: Vec<u8> = [0i32, 12, 1, 0, 27].iter().flat_map(|v| v.to_le_bytes()).collect();
        bin.extend_from_slice(b"AffineTransform_double_3_3\0");
        bin.extend([1.0f64, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 2.0, 3.0, 4.0].iter().flat_map(|v| v.to_le_bytes()));
        bin.extend([0i32, 3, 1, 0, 6].iter().flat_map(|v| v.to_le_bytes()));
        bin.extend_from_slice(b"fixed\0");
        bin.extend([0.0f64; 3].iter().flat_map(|v| v.to_le_bytes()));
        let ants = d.path().join("0GenericAffine.mat");
        std::fs::write(&ants, &bin).unwrap();
        let text = d.path().join("t.txt");
        std::fs::write(&text, "#Insight Transform File V1.0\n#Transform 0\nTransform: AffineTransform_double_3_3\nParameters: 1 0 0 0 1 0 0 0 1 2 3 4\nFixedParameters: 0 0 0\n").unwrap();
        for p in [&ants, &text] {
            assert_eq!(read(p).unwrap(), translation([-2.0, -3.0, 4.0]), "{}", p.display());
        }
        std::fs::write(&text, "# converted from ITK (LPS -> RAS), AffineTransform_double_3_3\n1 0 0 2\n0 1 0 3\n0 0 1 4\n0 0 0 1\n").unwrap();
        assert_eq!(read(&text).unwrap(), translation([2.0, 3.0, 4.0]));
    }
}
