//! A tensor volume with NaN/Inf voxels given to `fim --tensor` and `track geodesic --tensor`: as
//! for a DWI, such voxels outside the mask are ignored and inside it are taken out of the mask
//! with a warning that counts them; a mask left empty is an error.

mod common;
use common::{run, s};
use neuroport::volume::{read_nifti, write_nifti, Geometry};
use std::path::Path;

const D: [usize; 3] = [12, 6, 6];

/// Tensors along x, a mask of the box without its x = 11 slab, R1 at x = 1, R2 at x = 9; the
/// voxel at x = 5 of the line between them (or the whole x = 5 slab) gets +Inf in Dxx, and one
/// outside the mask NaN.
fn inputs(dir: &Path, every_masked_voxel_bad: bool, slab: bool) -> usize {
    let g = Geometry::synthetic(D, [1.0; 3]);
    let n = g.nvox();
    let at = |x: usize| x + D[0] * (3 + D[1] * 3);
    let t = [1.7e-3f32, 0.0, 0.0, 0.17e-3, 0.0, 0.17e-3];
    let mut tensor: Vec<f32> = (0..6).flat_map(|c| std::iter::repeat_n(t[c], n)).collect();
    let mask: Vec<f32> = (0..n).map(|v| (v % D[0] != 11) as u8 as f32).collect();
    if every_masked_voxel_bad {
        for v in (0..n).filter(|&v| mask[v] != 0.0) {
            tensor[2 * n + v] = f32::NAN;
        }
    }
    for v in (0..n).filter(|&v| v == at(5) || (slab && v % D[0] == 5)) {
        tensor[v] = f32::INFINITY;
    }
    tensor[3 * n + at(11)] = f32::NAN;
    write_nifti(&dir.join("t.nii.gz"), &g, 6, &tensor).unwrap();
    write_nifti(&dir.join("wm.nii.gz"), &g, 1, &mask).unwrap();
    let region = |x0: usize| -> Vec<f32> { (0..n).map(|v| (v == at(x0)) as u8 as f32).collect() };
    write_nifti(&dir.join("r1.nii.gz"), &g, 1, &region(1)).unwrap();
    write_nifti(&dir.join("r2.nii.gz"), &g, 1, &region(9)).unwrap();
    at(5)
}

#[test]
fn fim_takes_nonfinite_tensor_voxels_out_of_the_mask() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let bad = inputs(d, false, false);
    let j = |f: &str| d.join(f);
    let out = d.join("res");
    let (code, _, err) = run(&["fim", "--tensor", s(&j("t.nii.gz")), "--mask", s(&j("wm.nii.gz")), "--source", s(&j("r1.nii.gz")), "--out", s(&out), "--backend", "cpu"], &[]);
    assert_eq!(code, 0, "{err}");
    // one voxel in the mask (the one outside it is not counted), named by its place
    assert!(err.contains("warning:") && err.contains(s(&j("t.nii.gz"))) && err.contains("1 voxel in the mask holds") && err.contains("x=5 y=3 z=3"), "{err}");
    let u = read_nifti(&j("res_cost1.nii.gz")).unwrap();
    // out of the mask: never reached, like every voxel outside it
    assert!(u.as_flat()[bad].is_nan(), "{}", u.as_flat()[bad]);
    assert!(u.as_flat()[bad + 1].is_finite());
}

#[test]
fn fim_and_track_refuse_a_tensor_that_is_nonfinite_everywhere_in_the_mask() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    inputs(d, true, false);
    let j = |f: &str| d.join(f);
    let (code, _, err) = run(&["fim", "--tensor", s(&j("t.nii.gz")), "--mask", s(&j("wm.nii.gz")), "--source", s(&j("r1.nii.gz")), "--out", s(&j("res")), "--backend", "cpu"], &[]);
    assert_eq!(code, 1, "{err}");
    assert!(err.starts_with("error: ") && err.contains(s(&j("t.nii.gz"))) && err.contains("every voxel of the mask holds NaN"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!j("res_cost1.nii.gz").exists());
    let tck = j("f.tck");
    let (code, _, err) = run(&["track", "geodesic", "--tensor", s(&j("t.nii.gz")), "--mask", s(&j("wm.nii.gz")), "--seeds", s(&j("r1.nii.gz")), "--dirs", "4", "--out", s(&tck), "--backend", "cpu"], &[]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("every voxel of the mask holds NaN") && err.lines().count() == 1, "{err}");
    assert!(!tck.exists());
}

#[test]
fn track_stops_at_a_nonfinite_tensor_voxel_in_the_mask() {
    // Fibres along x from R1 used to cross the bad slab, zeroed and then repaired to tiny
    // isotropic tensors, as if it were white matter; now the slab is outside the tracking mask.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    inputs(d, false, true);
    let j = |f: &str| d.join(f);
    let tck = j("f.tck");
    let (code, _, err) = run(
        &["track", "geodesic", "--tensor", s(&j("t.nii.gz")), "--mask", s(&j("wm.nii.gz")), "--seeds", s(&j("r1.nii.gz")), "--dirs", "64", "--max-steps", "400", "--out", s(&tck), "--backend", "cpu"],
        &[],
    );
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("36 voxels in the mask hold"), "{err}");
    // World mm are voxel indices here; the slab's near face is at x = 4.5 and a fibre stops at
    // its first step (0.1 voxel) beyond its mask.
    let fibres = neuroport::io::tck::read_tck(&tck).unwrap();
    let furthest = fibres.iter().flatten().map(|p| p[0]).fold(f32::MIN, f32::max);
    assert!(!fibres.is_empty() && furthest < 4.7, "a fibre reached x = {furthest}");
}
