//! bedpost samples a tracker cannot use, given to `neuroport probtrack` (another writer's
//! folder, a damaged file). NaN/Inf: as for a DWI, voxels of the tracking mask with such a sample
//! are taken out of it with a warning that counts them, and a mask left empty is an error.
//! Fractions outside [0, 1]: bedpost samples f1 and f2 only inside (0, 1) (a proposal outside is
//! rejected; `bedpost::cpu::inside`, the kernels' np_bp_inside) and writes them as float32
//! unchanged, so such a value is an error naming the file, the first voxel, its sample and the
//! value.

mod common;
use common::{run, s};
use neuroport::probtrack::phantom;
use neuroport::volume::{read_nifti, write_nifti};
use std::path::Path;

/// The crossing phantom's bedpost folder and a seed mask at x = 3; then, for each (file, value
/// of), the file's value at (voxel index, sample) replaced where `value of` gives one.
fn folder(dir: &Path, edits: &[(&str, &dyn Fn(usize, usize) -> Option<f32>)]) {
    let t = phantom::crossing();
    let a = t.angles(8, 8.0, 11);
    let bp = dir.join("bp");
    t.write_bedpost(&a, &bp).unwrap();
    let g = &t.geom;
    let [nx, ny, nz] = g.dims;
    let n = nx * ny * nz;
    let seeds: Vec<f32> = (0..n).map(|v| (v % nx == 3 && (9..11).contains(&((v / nx) % ny)) && (3..5).contains(&(v / (nx * ny)))) as u8 as f32).collect();
    write_nifti(&dir.join("seeds.nii.gz"), g, 1, &seeds).unwrap();
    for (name, value_of) in edits {
        let p = bp.join(format!("{name}.nii.gz"));
        let v = read_nifti(&p).unwrap();
        let mut d = v.as_flat().to_vec();
        for (i, x) in d.iter_mut().enumerate() {
            if let Some(value) = value_of(i % n, i / n) {
                *x = value;
            }
        }
        write_nifti(&p, &v.geom, v.nvol(), &d).unwrap();
    }
}

/// `folder` with merged_th1samples NaN and merged_f2samples +Inf where `bad(x, sample)`.
fn nonfinite_folder(dir: &Path, bad: &dyn Fn(usize, usize) -> bool) {
    let nx = phantom::crossing().geom.dims[0];
    let at = |value: f32| move |v: usize, sample: usize| bad(v % nx, sample).then_some(value);
    folder(dir, &[("merged_th1samples", &at(f32::NAN)), ("merged_f2samples", &at(f32::INFINITY))]);
}

/// `folder` with `file`'s values set at `bad`: (x, y, z, sample, value).
fn fraction_folder(dir: &Path, file: &str, bad: &[(usize, usize, usize, usize, f32)]) {
    let g = phantom::crossing().geom;
    let value_of = |v: usize, sample: usize| bad.iter().find(|&&(x, y, z, s, _)| s == sample && g.index(x, y, z) == v).map(|b| b.4);
    folder(dir, &[(file, &value_of)]);
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
    nonfinite_folder(d, &|x, sample| x == 12 && sample == 0);
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

/// Seeds whose samples hold NaN were said to "lie outside the tracking mask", a mask they were
/// inside; they are counted apart, in the words `track geodesic` and `fim` use.
#[test]
fn seeds_taken_out_for_nonfinite_samples_are_not_said_to_lie_outside_the_mask_given() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // the seeds' own column (x = 3): all 4 seed voxels lose their samples
    nonfinite_folder(d, &|x, sample| x == 3 && sample == 1);
    let (code, _, err) = probtrack(d, &d.join("ptx"));
    assert_eq!(code, 0, "{err}");
    let want = format!("warning: {}: 4 of 4 seeds lie on voxels with NaN/Inf data in {} (taken out of the tracking mask); their streamlines stop at once", d.join("seeds.nii.gz").display(), d.join("bp").display());
    assert!(err.lines().any(|l| l == want) && !err.contains("outside the tracking mask"), "{err}");
}

#[test]
fn samples_nonfinite_everywhere_are_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    nonfinite_folder(d, &|_, _| true);
    let out = d.join("ptx");
    let (code, _, err) = probtrack(d, &out);
    assert_eq!(code, 1, "{err}");
    assert!(err.starts_with("error: ") && err.contains("every voxel of the tracking mask holds NaN or infinite samples") && err.lines().count() == 1, "{err}");
    assert!(!out.exists() || common::entries(&out).is_empty());
}

#[test]
fn a_fraction_above_one_is_an_error_naming_its_file_voxel_and_sample() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Both voxels lie in a bundle (inside the tracking mask); (10, 2, 3) comes first on the grid
    // though its bad sample is the later one.
    fraction_folder(d, "merged_f1samples", &[(4, 9, 5, 1, 2.0), (10, 2, 3, 5, 1.7)]);
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
    fraction_folder(d, "merged_f2samples", &[(4, 8, 2, 0, -0.25)]);
    let out = d.join("ptx");
    let (code, _, err) = probtrack(d, &out);
    assert_eq!(code, 1, "{err}");
    let file = d.join("bp").join("merged_f2samples.nii.gz");
    assert_eq!(err.trim_end(), format!("error: {}: fraction -0.25 at x=4 y=8 z=2 sample 0 is outside [0, 1]", file.display()));
    assert!(!out.exists(), "{:?}", common::entries(&out));
}
