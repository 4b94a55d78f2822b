//! A tensor volume with voxels that carry no usable tensor, given to `fim --tensor` and `track
//! geodesic --tensor`. NaN/Inf voxels: as for a DWI, ignored outside the mask and taken out of it
//! inside with a warning that counts them; a mask left empty is an error. Voxels whose six
//! components are all 0 (dti writes them where it fitted nothing) leave a given mask the same
//! way; they used to be "repaired" to the eigenvalue floor's tiny isotropic tensor and run
//! through as if measured.

mod common;
use common::{entries, run, s};
use neuroport::volume::{read_nifti, write_nifti, Geometry};
use std::path::Path;

const D: [usize; 3] = [12, 6, 6];

/// Voxel x of the line y = z = 3.
fn at(x: usize) -> usize {
    x + D[0] * (3 + D[1] * 3)
}

/// Tensors along x, each voxel's six components then changed by `edit(voxel, components)`; a
/// mask of the box without its x = 11 slab, R1 at x = 1, R2 at x = 9.
fn write_inputs(dir: &Path, edit: &dyn Fn(usize, &mut [f32; 6])) {
    let g = Geometry::synthetic(D, [1.0; 3]);
    let n = g.nvox();
    let mut tensor = vec![0.0f32; 6 * n];
    for v in 0..n {
        let mut t = [1.7e-3f32, 0.0, 0.0, 0.17e-3, 0.0, 0.17e-3];
        edit(v, &mut t);
        for c in 0..6 {
            tensor[c * n + v] = t[c];
        }
    }
    let mask: Vec<f32> = (0..n).map(|v| (v % D[0] != 11) as u8 as f32).collect();
    write_nifti(&dir.join("t.nii.gz"), &g, 6, &tensor).unwrap();
    write_nifti(&dir.join("wm.nii.gz"), &g, 1, &mask).unwrap();
    let region = |x0: usize| -> Vec<f32> { (0..n).map(|v| (v == at(x0)) as u8 as f32).collect() };
    write_nifti(&dir.join("r1.nii.gz"), &g, 1, &region(1)).unwrap();
    write_nifti(&dir.join("r2.nii.gz"), &g, 1, &region(9)).unwrap();
}

/// `write_inputs` with the voxel at x = 5 of the line between R1 and R2 (or the whole x = 5 slab)
/// +Inf in Dxx, every masked voxel NaN in Dxz if asked, and one voxel outside the mask NaN;
/// returns the voxel at x = 5.
fn nonfinite_inputs(dir: &Path, every_masked_voxel_bad: bool, slab: bool) -> usize {
    write_inputs(dir, &|v, t| {
        if every_masked_voxel_bad && v % D[0] != 11 {
            t[2] = f32::NAN;
        }
        if v == at(5) || (slab && v % D[0] == 5) {
            t[0] = f32::INFINITY;
        }
        if v == at(11) {
            t[3] = f32::NAN;
        }
    });
    at(5)
}

/// `write_inputs` with the tensors of the voxels `zero(v)` picks all 0 (and one outside the mask,
/// at x = 11, always).
fn zero_inputs(dir: &Path, zero: &dyn Fn(usize) -> bool) {
    write_inputs(dir, &|v, t| {
        if zero(v) || v == at(11) {
            *t = [0.0; 6];
        }
    });
}

#[test]
fn fim_takes_nonfinite_tensor_voxels_out_of_the_mask() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let bad = nonfinite_inputs(d, false, false);
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
    nonfinite_inputs(d, true, false);
    let j = |f: &str| d.join(f);
    let (code, _, err) = run(&["fim", "--tensor", s(&j("t.nii.gz")), "--mask", s(&j("wm.nii.gz")), "--source", s(&j("r1.nii.gz")), "--out", s(&j("res")), "--backend", "cpu"], &[]);
    assert_eq!(code, 1, "{err}");
    assert!(err.starts_with("error: ") && err.contains(s(&j("t.nii.gz"))) && err.contains("every voxel of the mask holds NaN"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!j("res_cost1.nii.gz").exists());
    let tck = j("f.tck");
    let (code, _, err) = run(&["track", "geodesic", "--tensor", s(&j("t.nii.gz")), "--mask", s(&j("wm.nii.gz")), "--seeds", s(&j("r1.nii.gz")), "--dirs", "4", "--out", s(&tck), "--backend", "cpu"], &[]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("every voxel of the tracking mask holds NaN") && err.lines().count() == 1, "{err}");
    assert!(!tck.exists());
}

#[test]
fn track_stops_at_a_nonfinite_tensor_voxel_in_the_mask() {
    // Fibres along x from R1 used to cross the bad slab, zeroed and then repaired to tiny
    // isotropic tensors, as if it were white matter; now the slab is outside the tracking mask.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    nonfinite_inputs(d, false, true);
    let j = |f: &str| d.join(f);
    let tck = j("f.tck");
    let (code, _, err) = run(
        &["track", "geodesic", "--tensor", s(&j("t.nii.gz")), "--mask", s(&j("wm.nii.gz")), "--seeds", s(&j("r1.nii.gz")), "--dirs", "64", "--max-steps", "400", "--out", s(&tck), "--backend", "cpu"],
        &[],
    );
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("36 voxels in the tracking mask hold NaN or infinite values (first at x=5 y=0 z=0 volume 0); skipped"), "{err}");
    // World mm are voxel indices here; the slab's near face is at x = 4.5 and a fibre stops at
    // its first step (0.1 voxel) beyond its mask.
    let fibres = neuroport::io::tck::read_tck(&tck).unwrap();
    let furthest = fibres.iter().flatten().map(|p| p[0]).fold(f32::MIN, f32::max);
    assert!(!fibres.is_empty() && furthest < 4.7, "a fibre reached x = {furthest}");
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
    zero_inputs(d, &|v| v == at(5));
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
    zero_inputs(d, &|v| v % D[0] == 5);
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
    zero_inputs(d, &|_| true);
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

/// A seed ROI at x = 1, 2 and 11 of the line: x = 11 is off the mask file, x = 1 (NaN, or a zero
/// tensor) inside it. Seeds on voxels taken out of the mask for their tensor were said to "lie
/// outside the tracking mask", the mask the user sees them inside; they are counted apart, in the
/// words probtrack and fim use, and only the x = 11 ones are said to lie outside.
#[test]
fn track_says_seeds_on_taken_out_voxels_are_there_for_their_tensor_not_outside_the_mask() {
    for (zero, data) in [(false, "NaN/Inf data"), (true, "all-zero tensors")] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        write_inputs(d, &|v, t| {
            if v == at(1) && zero {
                *t = [0.0; 6];
            } else if v == at(1) {
                t[4] = f32::NAN;
            }
        });
        let g = read_nifti(&d.join("wm.nii.gz")).unwrap().geom;
        let seeds: Vec<f32> = (0..g.nvox()).map(|v| [at(1), at(2), at(11)].contains(&v) as u8 as f32).collect();
        let (j, sp) = (|f: &str| d.join(f), d.join("seeds.nii.gz"));
        write_nifti(&sp, &g, 1, &seeds).unwrap();
        let (code, _, err) = run(&["track", "geodesic", "--tensor", s(&j("t.nii.gz")), "--mask", s(&j("wm.nii.gz")), "--seeds", s(&sp), "--dirs", "4", "--out", s(&j("f.tck")), "--backend", "cpu"], &[]);
        assert_eq!(code, 0, "{err}");
        let (seeds, t) = (sp.display(), s(&j("t.nii.gz")).to_string());
        let taken = format!("warning: {seeds}: 4 of 12 seeds lie on voxels with {data} in {t} (taken out of the tracking mask); they stop at once");
        let outside = format!("warning: {seeds}: 4 of 12 seeds lie outside the tracking mask; they stop at once");
        assert!(err.lines().any(|l| l == taken) && err.lines().any(|l| l == outside), "{err}");
    }
}

/// A region partly on NaN tensors: the front starts from the rest, and the user is told how many
/// of its voxels were taken out of the mask and why (they were dropped without a word).
#[test]
fn fim_counts_region_voxels_taken_out_for_their_tensor() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_inputs(d, &|v, t| {
        if v == at(1) {
            t[0] = f32::NAN;
        }
    });
    let g = read_nifti(&d.join("wm.nii.gz")).unwrap().geom;
    let r: Vec<f32> = (0..g.nvox()).map(|v| [at(1), at(2), at(11)].contains(&v) as u8 as f32).collect();
    write_nifti(&d.join("r1.nii.gz"), &g, 1, &r).unwrap();
    let (code, _, err) = fim(d);
    assert_eq!(code, 0, "{err}");
    let (r1, t, wm) = (d.join("r1.nii.gz"), d.join("t.nii.gz"), d.join("wm.nii.gz"));
    let want = format!("warning: {}: 1 of 3 voxels of the region hold NaN/Inf data in {} (taken out of the mask {}); the front starts from the 1 left in it", r1.display(), t.display(), wm.display());
    assert!(err.lines().any(|l| l == want), "{err}");
    let u = read_nifti(&d.join("res_cost1.nii.gz")).unwrap();
    assert_eq!(u.as_flat()[at(2)], 0.0);
}

/// A voxel with a NaN in Dxx kept the rest of its tensor (0 on the diagonal), which the read
/// tensor's repair then raised to the eigenvalue floor and counted: the summary said "1 tensors
/// not positive definite were repaired" of a voxel taken out of the mask. Its whole tensor now
/// goes, as a voxel without one.
#[test]
fn a_taken_out_voxel_is_not_counted_as_repaired() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write_inputs(d, &|v, t| {
        if v == at(5) {
            t[0] = f32::NAN;
        }
    });
    let (code, _, err) = track(d, "4");
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("1 voxel in the tracking mask holds NaN"), "{err}");
    assert!(!err.contains("repaired"), "{err}");
}
