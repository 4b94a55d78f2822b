//! A DWI that no voxel of the mask can be fitted in (all zero, as an export that lost its data;
//! negative everywhere) is refused: `dti` used to write twelve maps of zeros with exit 0,
//! `track --dwi` and `fim --dwi` ran on them, and `bedpost` sampled noise into finite-looking
//! maps (random dyads, f1 ~ 0.1) from chains that started from nothing.

mod common;
use common::{entries, run, s, small_dataset};
use neuroport::volume::{read_nifti, write_nifti};

#[test]
fn a_dwi_with_no_fittable_voxel_is_an_error_not_maps_of_zeros() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    small_dataset(d, [8, 8, 5], 30.0, 3);
    let v = read_nifti(&d.join("dwi.nii.gz")).unwrap();
    for (name, value) in [("zero.nii.gz", 0.0f32), ("negative.nii.gz", -5.0)] {
        let p = d.join(name);
        write_nifti(&p, &v.geom, v.nvol(), &vec![value; v.as_flat().len()]).unwrap();
        let out = d.join(format!("out_{name}"));
        let (code, _, err) = run(
            &["dti", "--backend", "cpu", "--dwi", s(&p), "--bvals", s(&d.join("bvals")), "--bvecs", s(&d.join("bvecs")), "--mask", s(&d.join("mask.nii.gz")), "--out", s(&out.join("dti"))],
            &[("RUST_BACKTRACE", "1")],
        );
        assert_eq!(code, 1, "{err}");
        // The fit ran before it was found empty: its progress lines (in a log) come first.
        let err: String = err.lines().filter(|l| !l.starts_with("dti: ")).map(|l| format!("{l}\n")).collect();
        assert!(err.starts_with("error: ") && err.contains(s(&p)) && err.contains("no voxel") && err.lines().count() == 1, "{err}");
        assert!(entries(&out).is_empty(), "{:?}", entries(&out));
        let bp = d.join(format!("bp_{name}"));
        let (code, _, err) = run(
            &["bedpost", "--backend", "cpu", "--dwi", s(&p), "--bvals", s(&d.join("bvals")), "--bvecs", s(&d.join("bvecs")), "--mask", s(&d.join("mask.nii.gz")), "--samples", "4", "--burnin", "20", "--out", s(&bp)],
            &[("RUST_BACKTRACE", "1")],
        );
        assert_eq!(code, 1, "{err}");
        assert!(err.starts_with("error: ") && err.contains(s(&p)) && err.contains("no voxel") && err.lines().count() == 1, "{err}");
        assert!(entries(&bp).is_empty(), "{:?}", entries(&bp));
    }
    // One such voxel among good ones is still a fit, with the voxel counted as unfittable.
    let mut one = v.as_flat().to_vec();
    let m = read_nifti(&d.join("mask.nii.gz")).unwrap();
    let inside = (0..v.nvox()).find(|&i| m.as_flat()[i] != 0.0).unwrap();
    for t in 0..v.nvol() {
        one[t * v.nvox() + inside] = 0.0;
    }
    let p = d.join("one.nii.gz");
    write_nifti(&p, &v.geom, v.nvol(), &one).unwrap();
    let (code, _, err) = run(&["dti", "--backend", "cpu", "--dwi", s(&p), "--bvals", s(&d.join("bvals")), "--bvecs", s(&d.join("bvecs")), "--mask", s(&d.join("mask.nii.gz")), "--out", s(&d.join("ok").join("dti"))], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("1 unfittable"), "{err}");
}

/// Unmasked, dti fits every voxel: the all-zero background around the head was reported as
/// "unfittable" voxels. It is counted apart now; with a mask, an all-zero voxel stays unfittable
/// (above).
#[test]
fn unmasked_dti_counts_all_zero_background_apart() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    small_dataset(d, [8, 8, 5], 30.0, 3);
    let v = read_nifti(&d.join("dwi.nii.gz")).unwrap();
    let m = read_nifti(&d.join("mask.nii.gz")).unwrap();
    let mut flat = v.as_flat().to_vec();
    let outside: Vec<usize> = (0..v.nvox()).filter(|&i| m.as_flat()[i] == 0.0).collect();
    assert!(!outside.is_empty());
    for t in 0..v.nvol() {
        for &i in &outside {
            flat[t * v.nvox() + i] = 0.0;
        }
    }
    let p = d.join("bg.nii.gz");
    write_nifti(&p, &v.geom, v.nvol(), &flat).unwrap();
    let (code, _, err) = run(&["dti", "--backend", "cpu", "--dwi", s(&p), "--bvals", s(&d.join("bvals")), "--bvecs", s(&d.join("bvecs")), "--out", s(&d.join("un").join("dti"))], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains(&format!("{} voxels (no mask: the whole grid), {} background voxels (all zero) skipped, ", v.nvox(), outside.len())) && err.contains(" 0 unfittable"), "{err}");
}

/// bedpost sampled mask voxels whose DWI is all zero (noise from a default start) without a
/// word; they are counted in a warning now, and still sampled.
#[test]
fn bedpost_warns_of_all_zero_voxels_in_the_mask() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    small_dataset(d, [8, 8, 5], 30.0, 3);
    let v = read_nifti(&d.join("dwi.nii.gz")).unwrap();
    let m = read_nifti(&d.join("mask.nii.gz")).unwrap();
    let inside: Vec<usize> = (0..v.nvox()).filter(|&i| m.as_flat()[i] != 0.0).collect();
    let mut flat = v.as_flat().to_vec();
    for t in 0..v.nvol() {
        for &i in &inside[..2] {
            flat[t * v.nvox() + i] = 0.0;
        }
    }
    let p = d.join("two.nii.gz");
    write_nifti(&p, &v.geom, v.nvol(), &flat).unwrap();
    let bp = |dwi: &std::path::Path, out: &str| {
        run(&["bedpost", "--backend", "cpu", "--dwi", s(dwi), "--bvals", s(&d.join("bvals")), "--bvecs", s(&d.join("bvecs")), "--mask", s(&d.join("mask.nii.gz")), "--samples", "2", "--burnin", "2", "--out", s(&d.join(out))], &[])
    };
    let (code, _, err) = bp(&p, "bp");
    assert_eq!(code, 0, "{err}");
    assert!(err.contains(&format!("warning: {}: 2 of the {} voxels in the mask have an all-zero signal (first at ", s(&p), inside.len())), "{err}");
    let (code, _, err) = bp(&d.join("dwi.nii.gz"), "ok");
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("all-zero"), "{err}");
}
