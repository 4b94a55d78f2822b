//! bedpost samples holding NaN/Inf (another writer's folder, a damaged file) given to
//! `neuroport probtrack`: as for a DWI, voxels of the tracking mask with such a sample are taken
//! out of it with a warning that counts them, and a mask left empty is an error.

mod common;
use common::{run, s};
use neuroport::probtrack::phantom;
use neuroport::volume::{read_nifti, write_nifti};
use std::path::Path;

/// The crossing phantom's bedpost folder and a seed mask at x = 3; `bad(x, sample)` picks the
/// voxels (by x) and samples of merged_th1samples set to NaN, and f2 gets +Inf where th1 does.
fn folder(dir: &Path, bad: &dyn Fn(usize, usize) -> bool) {
    let t = phantom::crossing();
    let a = t.angles(8, 8.0, 11);
    let bp = dir.join("bp");
    t.write_bedpost(&a, &bp).unwrap();
    let g = &t.geom;
    let [nx, ny, nz] = g.dims;
    let n = nx * ny * nz;
    let seeds: Vec<f32> = (0..n).map(|v| (v % nx == 3 && (9..11).contains(&((v / nx) % ny)) && (3..5).contains(&(v / (nx * ny)))) as u8 as f32).collect();
    write_nifti(&dir.join("seeds.nii.gz"), g, 1, &seeds).unwrap();
    for (name, value) in [("merged_th1samples", f32::NAN), ("merged_f2samples", f32::INFINITY)] {
        let p = bp.join(format!("{name}.nii.gz"));
        let v = read_nifti(&p).unwrap();
        let mut d = v.as_flat().to_vec();
        for (i, x) in d.iter_mut().enumerate() {
            if bad(i % nx, i / n) {
                *x = value;
            }
        }
        write_nifti(&p, &v.geom, v.nvol(), &d).unwrap();
    }
}

fn probtrack(dir: &Path, out: &Path) -> (i32, String, String) {
    let (bp, seeds) = (dir.join("bp"), dir.join("seeds.nii.gz"));
    run(&["probtrack", "--bedpost", s(&bp), "--seeds", s(&seeds), "--nsamples", "16", "--step", "0.5", "--seed", "3", "--backend", "cpu", "--out", s(out)], &[])
}

#[test]
fn voxels_with_nonfinite_samples_leave_the_tracking_mask() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // one sample of every voxel at x = 12, across the fibres' way from the seeds
    folder(d, &|x, sample| x == 12 && sample == 0);
    let out = d.join("ptx");
    let (code, _, err) = probtrack(d, &out);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("warning:") && err.contains(s(&d.join("bp"))) && err.contains("voxels in the tracking mask hold NaN or infinite samples") && err.contains("x=12"), "{err}");
    let paths = read_nifti(&out.join("fdt_paths.nii.gz")).unwrap();
    let nx = paths.geom.dims[0];
    let (near, beyond): (Vec<f32>, Vec<f32>) = paths.as_flat().iter().enumerate().map(|(i, &c)| (if i % nx < 12 { c } else { 0.0 }, if i % nx >= 12 { c } else { 0.0 })).unzip();
    assert!(near.iter().sum::<f32>() > 0.0);
    // Streamlines that drew another sample there crossed the slab before.
    assert_eq!(beyond.iter().sum::<f32>(), 0.0, "streamlines went through the slab");
}

#[test]
fn samples_nonfinite_everywhere_are_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    folder(d, &|_, _| true);
    let out = d.join("ptx");
    let (code, _, err) = probtrack(d, &out);
    assert_eq!(code, 1, "{err}");
    assert!(err.starts_with("error: ") && err.contains("every voxel of the tracking mask holds NaN or infinite samples") && err.lines().count() == 1, "{err}");
    assert!(!out.exists() || common::entries(&out).is_empty());
}
