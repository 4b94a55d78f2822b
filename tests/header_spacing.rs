//! A NIfTI whose sform's voxel columns are not pixdim long: positions follow the sform and
//! voxel sizes pixdim, which nothing said. One warning names the file, however often it is read.

mod common;
use common::{run, s};
use neuroport::register::affine;
use neuroport::volume::{write_nifti, Geometry};

#[test]
fn a_sform_that_disagrees_with_pixdim_is_warned_about_once() {
    let d = tempfile::tempdir().unwrap();
    let mut g = Geometry::synthetic([6, 5, 4], [2.0; 3]);
    let vals: Vec<f32> = (0..g.nvox()).map(|i| i as f32).collect();
    let good = d.path().join("good.nii.gz");
    write_nifti(&good, &g, 1, &vals).unwrap();
    // z's column 2.5 mm long against pixdim's 2 mm (a hand-edited sform).
    g.header.srow_z[2] = 2.5;
    g.affine[2][2] = 2.5;
    let bad = d.path().join("bad.nii.gz");
    write_nifti(&bad, &g, 1, &vals).unwrap();
    let id = d.path().join("id.txt");
    affine::write(&id, &affine::IDENTITY).unwrap();
    for (f, warned) in [(&good, false), (&bad, true)] {
        let out = d.path().join("o.nii.gz");
        let (code, _, err) = run(&["resample", "--ref", s(f), "--moving", s(f), "--affine", s(&id), "--out", s(&out), "--force"], &[]);
        assert_eq!(code, 0, "{err}");
        let w: Vec<&str> = err.lines().filter(|l| l.starts_with("warning:")).collect();
        if warned {
            assert_eq!(w.len(), 1, "{err}");
            assert!(w[0].contains("bad.nii.gz") && w[0].contains("pixdim 2 x 2 x 2 mm") && w[0].contains("2 x 2 x 2.5 mm long"), "{err}");
        } else {
            assert!(w.is_empty(), "{err}");
        }
    }
}
