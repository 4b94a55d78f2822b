//! bedpost fractions outside [0, 1] given to `neuroport probtrack`: bedpost samples f1 and f2
//! only inside (0, 1) (a proposal outside is rejected; `bedpost::cpu::inside`, the kernels'
//! np_bp_inside), and writes them as float32 unchanged, so such a value is a damaged or foreign
//! file, and an error naming the file, the first voxel, its sample and the value.

mod common;
use common::{run, s};
use neuroport::probtrack::phantom;
use neuroport::volume::{read_nifti, write_nifti};
use std::path::Path;

/// The crossing phantom's bedpost folder, a seed mask at x = 3, and `file`'s values set at
/// `bad`: (x, y, z, sample, value).
fn folder(dir: &Path, file: &str, bad: &[(usize, usize, usize, usize, f32)]) {
    let t = phantom::crossing();
    let a = t.angles(8, 8.0, 11);
    let bp = dir.join("bp");
    t.write_bedpost(&a, &bp).unwrap();
    let g = &t.geom;
    let [nx, ny, nz] = g.dims;
    let n = nx * ny * nz;
    let seeds: Vec<f32> = (0..n).map(|v| (v % nx == 3 && (9..11).contains(&((v / nx) % ny)) && (3..5).contains(&(v / (nx * ny)))) as u8 as f32).collect();
    write_nifti(&dir.join("seeds.nii.gz"), g, 1, &seeds).unwrap();
    let p = bp.join(format!("{file}.nii.gz"));
    let v = read_nifti(&p).unwrap();
    let mut d = v.as_flat().to_vec();
    for &(x, y, z, sample, value) in bad {
        d[sample * n + g.index(x, y, z)] = value;
    }
    write_nifti(&p, &v.geom, v.nvol(), &d).unwrap();
}

fn probtrack(dir: &Path, out: &Path) -> (i32, String, String) {
    let (bp, seeds) = (dir.join("bp"), dir.join("seeds.nii.gz"));
    run(&["probtrack", "--bedpost", s(&bp), "--seeds", s(&seeds), "--nsamples", "16", "--step", "0.5", "--seed", "3", "--backend", "cpu", "--out", s(out)], &[])
}

#[test]
fn a_fraction_above_one_is_an_error_naming_its_file_voxel_and_sample() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Both voxels lie in a bundle (inside the tracking mask); (10, 2, 3) comes first on the grid
    // though its bad sample is the later one.
    folder(d, "merged_f1samples", &[(4, 9, 5, 1, 2.0), (10, 2, 3, 5, 1.7)]);
    let out = d.join("ptx");
    let (code, _, err) = probtrack(d, &out);
    assert_eq!(code, 1, "{err}");
    let file = d.join("bp").join("merged_f1samples.nii.gz");
    assert_eq!(err.trim_end(), format!("error: {}: fraction 1.7 at x=10 y=2 z=3 sample 5 is outside [0, 1]", file.display()));
    assert!(!out.exists(), "{:?}", common::entries(&out));
}

#[test]
fn a_negative_fraction_is_an_error_naming_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    folder(d, "merged_f2samples", &[(4, 8, 2, 0, -0.25)]);
    let out = d.join("ptx");
    let (code, _, err) = probtrack(d, &out);
    assert_eq!(code, 1, "{err}");
    let file = d.join("bp").join("merged_f2samples.nii.gz");
    assert_eq!(err.trim_end(), format!("error: {}: fraction -0.25 at x=4 y=8 z=2 sample 0 is outside [0, 1]", file.display()));
    assert!(!out.exists(), "{:?}", common::entries(&out));
}
