//! bedpost reads only its mask's voxels of a DWI (`MaskedDwi::read`): the
//! voxels and measurements it gathers are those gathered from the whole DWI read, masked and
//! cleaned of NaN/Inf as before (`read_dwi`, `mask_for`), with the same warnings and errors.

mod common;
use common::*;
use neuroport::bedpost::{all_zero_warning, MaskedDwi};
use neuroport::volume::{mask_for, read_nifti, write_nifti, GradFiles};
use std::path::Path;

/// Through the whole read, as bedpost read a DWI before.
fn whole(dwi: &Path, grad: GradFiles<'_>, mask: &Path) -> anyhow::Result<(MaskedDwi, Option<String>, Vec<f64>)> {
    let (mut v, g) = neuroport::dti::design::read_dwi(dwi, grad)?;
    let m = mask_for(&mut v, dwi, Some(mask))?;
    Ok((MaskedDwi::from_volume(&v, &m), all_zero_warning(&v, &m, dwi), g.bvals))
}

/// Through `MaskedDwi::read`.
fn masked(dwi: &Path, grad: GradFiles<'_>, mask: &Path) -> anyhow::Result<(MaskedDwi, Option<String>, Vec<f64>)> {
    let (m, g) = MaskedDwi::read(dwi, grad, mask, false)?;
    let w = m.all_zero_warning(dwi);
    Ok((m, w, g.bvals))
}

#[test]
fn gathered_voxels_are_the_whole_reads() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    small_dataset(d, [12, 10, 6], 30.0, 3);
    let (bvals, bvecs, mask) = (d.join("bvals"), d.join("bvecs"), d.join("mask.nii.gz"));
    let grad = GradFiles::Fsl { bvals: &bvals, bvecs: &bvecs };
    let v = read_nifti(&d.join("dwi.nii.gz")).unwrap();
    let m = read_nifti(&mask).unwrap().into_flat();
    let inside: Vec<usize> = (0..m.len()).filter(|&i| m[i] != 0.0).collect();
    assert!(inside.len() > 20, "{} mask voxels", inside.len());
    let (n, nvol) = (v.nvox(), v.nvol());
    let mut flat = v.as_flat().to_vec();
    // Non-finite values in two mask voxels (in different volumes) and one outside; one mask
    // voxel silent in every volume.
    flat[3 * n + inside[5]] = f32::NAN;
    flat[(nvol - 1) * n + inside[9]] = f32::INFINITY;
    if let Some(out) = (0..n).find(|&i| m[i] == 0.0) {
        flat[out] = f32::NAN;
    }
    for t in 0..nvol {
        flat[t * n + inside[2]] = 0.0;
    }
    for name in ["dwi.nii.gz", "dwi.nii"] {
        let p = d.join(format!("bad-{name}"));
        write_nifti(&p, &v.geom, nvol, &flat).unwrap();
        let (a, aw, ab) = whole(&p, grad, &mask).unwrap();
        let (b, bw, bb) = masked(&p, grad, &mask).unwrap();
        assert_eq!(b.voxels, a.voxels, "{name}");
        assert_eq!(b.voxels.len(), inside.len() - 2, "{name}: the non-finite voxels stay in the mask");
        assert_eq!(b.y.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), a.y.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), "{name}");
        assert_eq!((b.nvol, b.geom.dims, b.geom.affine), (a.nvol, a.geom.dims, a.geom.affine), "{name}");
        assert!(aw.as_deref().is_some_and(|w| w.contains("1 of the")), "{name}: {aw:?}");
        assert_eq!((bw, bb), (aw, ab), "{name}");
    }
    // Errors named as before: a mask off the grid, a gradient table of the wrong length, a 3-D
    // image, a mask whose every voxel holds NaN.
    let small = d.join("small.nii");
    write_nifti(&small, &neuroport::volume::Geometry::synthetic([4, 4, 4], [2.0; 3]), 1, &[1.0; 64]).unwrap();
    let short = d.join("short.bval");
    std::fs::write(&short, "0 1000 1000\n").unwrap();
    let nan_everywhere = d.join("nan.nii");
    let mut all_nan = flat.clone();
    inside.iter().for_each(|&i| all_nan[i] = f32::NAN);
    write_nifti(&nan_everywhere, &v.geom, nvol, &all_nan).unwrap();
    let dwi = d.join("dwi.nii.gz");
    for (what, dwi, grad, mask) in [
        ("mask off the grid", &dwi, grad, &small),
        ("short bvals", &dwi, GradFiles::Fsl { bvals: &short, bvecs: &bvecs }, &mask),
        ("3-D image", &small, grad, &mask),
        ("every voxel NaN", &nan_everywhere, grad, &mask),
    ] {
        let a = format!("{:#}", whole(dwi, grad, mask).map(|_| ()).unwrap_err());
        let b = format!("{:#}", masked(dwi, grad, mask).map(|_| ()).unwrap_err());
        assert_eq!(b, a, "{what}");
    }
}
