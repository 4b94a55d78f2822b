//! A tensor volume whose six components are all 0 in voxels of the mask, given to `fim --tensor`
//! and `track geodesic --tensor`: a zero tensor carries no data (dti writes it where it fitted
//! nothing), so such voxels leave the mask with a warning that counts them, as NaN ones do, and
//! a mask left empty is an error. They used to be "repaired" to the eigenvalue floor's tiny
//! isotropic tensor and run through as if measured.

mod common;
use common::{entries, run, s};
use neuroport::volume::{read_nifti, write_nifti, Geometry};
use std::path::Path;

const D: [usize; 3] = [12, 6, 6];

/// Tensors along x, a mask of the box without its x = 11 slab, R1 at x = 1; `zero(v)` picks the
/// voxels whose tensor is all 0 (a zero voxel outside the mask, at x = 11, always).
fn inputs(dir: &Path, zero: &dyn Fn(usize) -> bool) {
    let g = Geometry::synthetic(D, [1.0; 3]);
    let n = g.nvox();
    let t = [1.7e-3f32, 0.0, 0.0, 0.17e-3, 0.0, 0.17e-3];
    let mask: Vec<f32> = (0..n).map(|v| (v % D[0] != 11) as u8 as f32).collect();
    let tensor: Vec<f32> = (0..6).flat_map(|c| (0..n).map(move |v| if zero(v) || v == at(11) { 0.0 } else { t[c] })).collect();
    write_nifti(&dir.join("t.nii.gz"), &g, 6, &tensor).unwrap();
    write_nifti(&dir.join("wm.nii.gz"), &g, 1, &mask).unwrap();
    let r1: Vec<f32> = (0..n).map(|v| (v == at(1)) as u8 as f32).collect();
    write_nifti(&dir.join("r1.nii.gz"), &g, 1, &r1).unwrap();
}

/// Voxel x of the line y = z = 3.
fn at(x: usize) -> usize {
    x + D[0] * (3 + D[1] * 3)
}

fn fim(d: &Path) -> (i32, String, String) {
    let j = |f: &str| d.join(f);
    run(&["fim", "--tensor", s(&j("t.nii.gz")), "--mask", s(&j("wm.nii.gz")), "--source", s(&j("r1.nii.gz")), "--out", s(&j("res")), "--backend", "cpu"], &[])
}

fn track(d: &Path, dirs: &str) -> (i32, String, String) {
    let j = |f: &str| d.join(f);
    run(&["track", "geodesic", "--tensor", s(&j("t.nii.gz")), "--mask", s(&j("wm.nii.gz")), "--seeds", s(&j("r1.nii.gz")), "--dirs", dirs, "--max-steps", "400", "--out", s(&j("f.tck")), "--backend", "cpu"], &[])
}

#[test]
fn fim_takes_zero_tensor_voxels_out_of_the_mask() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    inputs(d, &|v| v == at(5));
    let (code, _, err) = fim(d);
    assert_eq!(code, 0, "{err}");
    // one voxel in the mask (the one outside it is not counted), named by its place
    let t = d.join("t.nii.gz");
    assert!(err.contains(&format!("warning: {}: 1 voxel in the mask holds a zero tensor (all six components 0; first at x=5 y=3 z=3); skipped", t.display())), "{err}");
    let u = read_nifti(&d.join("res_cost1.nii.gz")).unwrap();
    // out of the mask: never reached, like every voxel outside it
    assert!(u.as_flat()[at(5)].is_nan(), "{}", u.as_flat()[at(5)]);
    assert!(u.as_flat()[at(6)].is_finite());
}

#[test]
fn track_stops_at_zero_tensor_voxels_in_the_mask() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    inputs(d, &|v| v % D[0] == 5);
    let (code, _, err) = track(d, "64");
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("36 voxels in the tracking mask hold a zero tensor (all six components 0; first at x=5 y=0 z=0); skipped"), "{err}");
    // World mm are voxel indices here; the slab's near face is at x = 4.5 and a fibre stops at
    // its first step (0.1 voxel) beyond its mask. Repaired, the slab was crossed.
    let fibres = neuroport::io::tck::read_tck(&d.join("f.tck")).unwrap();
    let furthest = fibres.iter().flatten().map(|p| p[0]).fold(f32::MIN, f32::max);
    assert!(!fibres.is_empty() && furthest < 4.7, "a fibre reached x = {furthest}");
}

#[test]
fn fim_and_track_refuse_a_tensor_that_is_zero_everywhere_in_the_mask() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    inputs(d, &|_| true);
    let before = entries(d);
    let t = d.join("t.nii.gz");
    let (code, _, err) = fim(d);
    assert_eq!(code, 1, "{err}");
    assert_eq!(err.trim_end(), format!("error: {}: every voxel of the mask holds a zero tensor (all six components 0)", t.display()));
    let (code, _, err) = track(d, "4");
    assert_eq!(code, 1, "{err}");
    assert_eq!(err.trim_end(), format!("error: {}: every voxel of the tracking mask holds a zero tensor (all six components 0)", t.display()));
    assert_eq!(entries(d), before, "outputs left behind");
}
