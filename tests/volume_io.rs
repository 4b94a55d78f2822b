//! NIfTI round trips keep data, grid, voxel size, sform and qform (.nii and .nii.gz); a qform-only
//! file and a file with det(affine) < 0 keep their geometry; gradient tables round-trip and
//! convert between the FSL bvecs frame and world axes as documented; ITK's x*y*z*1*N vector
//! layout reads as N volumes.

mod common;
use common::*;
use neuroport::volume::{geometry_of, read_bvals_bvecs, read_mask, read_nifti, write_nifti, GradientTable, Geometry, Outputs};

fn header_fields(h: &nifti::NiftiHeader) -> (i16, i16, [f32; 4], [f32; 4], [f32; 4], [f32; 6], f32, u8) {
    (h.sform_code, h.qform_code, h.srow_x, h.srow_y, h.srow_z, [h.quatern_b, h.quatern_c, h.quatern_d, h.quatern_x, h.quatern_y, h.quatern_z], h.pixdim[0], h.xyzt_units)
}

/// Writes `nvol` volumes of a recognisable pattern with `geom`, as .nii and .nii.gz, reads both
/// back and checks everything that must survive.
fn round_trip(geom: &Geometry, nvol: usize) {
    let tmp = tempfile::tempdir().unwrap();
    let n = geom.nvox() * nvol;
    // distinct, non-integer values, negatives and a large one
    let data: Vec<f32> = (0..n).map(|i| (i as f32) * 0.37 - 11.5 + if i == 7 { 1.0e20 } else { 0.0 }).collect();
    for name in ["v.nii", "v.nii.gz"] {
        let p = tmp.path().join(name);
        write_nifti(&p, geom, nvol, &data).unwrap();
        let bytes = std::fs::read(&p).unwrap();
        assert_eq!(name.ends_with(".gz"), bytes[..2] == [0x1f, 0x8b], "{name}: compression follows the extension");
        let v = read_nifti(&p).unwrap();
        assert_eq!(v.geom.dims, geom.dims, "{name}");
        assert_eq!(v.nvol(), nvol, "{name}");
        assert_eq!(v.as_flat(), &data[..], "{name}: data");
        assert_eq!(v.geom.voxel_size, geom.voxel_size, "{name}: voxel size");
        for r in 0..4 {
            for c in 0..4 {
                assert!((v.geom.affine[r][c] - geom.affine[r][c]).abs() < 1e-5, "{name}: affine[{r}][{c}] {} vs {}", v.geom.affine[r][c], geom.affine[r][c]);
            }
        }
        assert_eq!(header_fields(&v.geom.header), header_fields(&geom.header), "{name}: sform/qform fields");
        assert_eq!(v.geom.det().signum(), geom.det().signum());
        // the voxel (x, y, z, t) is where NIfTI's x-fastest order puts it
        let (x, y, z, t) = (1, 2, 1, nvol - 1);
        let i = geom.index(x, y, z) + t * geom.nvox();
        assert_eq!(v.view()[[x, y, z, t]], data[i]);
        // written again from what was read: byte-identical file
        let p2 = tmp.path().join(format!("again_{name}"));
        write_nifti(&p2, &v.geom, nvol, v.as_flat()).unwrap();
        assert_eq!(std::fs::read(&p2).unwrap(), bytes, "{name}: rewrite is byte-identical");
    }
}

#[test]
fn sform_and_qform_survive_nii_and_nii_gz() {
    let mut g = Geometry::synthetic([5, 4, 3], [1.25, 1.5, 2.0]);
    // an oblique sform with a translation, and a different (but valid) qform beside it
    g.header.srow_x = [1.2, 0.1, 0.0, -60.5];
    g.header.srow_y = [-0.1, 1.45, 0.2, -80.25];
    g.header.srow_z = [0.0, -0.15, 1.98, 12.0];
    g.header.sform_code = 4; // MNI
    g.header.qform_code = 1;
    g.header.quatern_b = 0.1;
    g.header.quatern_c = -0.05;
    g.header.quatern_d = 0.02;
    g.header.quatern_x = -60.0;
    g.header.quatern_y = -80.0;
    g.header.quatern_z = 12.0;
    let g = geometry_of(&g.header, g.dims).unwrap();
    assert!((g.affine[1][3] + 80.25).abs() < 1e-6, "the sform wins over the qform");
    round_trip(&g, 1);
    round_trip(&g, 4);
}

/// An input's intent (code, parameters, name) does not reach what is written from it: the
/// outputs are float maps of another quantity, and FSL's fslhd and nibabel show a stale
/// intent_name beside intent_code 0.
#[test]
fn intent_of_the_input_is_not_written() {
    let tmp = tempfile::tempdir().unwrap();
    let mut g = Geometry::synthetic([3, 2, 2], [2.0, 2.0, 2.0]);
    g.header.intent_code = 1005; // NIFTI_INTENT_SYMMATRIX
    g.header.intent_p1 = 3.0;
    g.header.intent_name = *b"dwi stats\0\0\0\0\0\0\0";
    let p = tmp.path().join("o.nii");
    write_nifti(&p, &g, 1, &[1.0; 12]).unwrap();
    let b = std::fs::read(&p).unwrap();
    assert_eq!(&b[56..70], &[0u8; 14], "intent_p1..3 and intent_code");
    assert_eq!(&b[328..344], &[0u8; 16], "intent_name");
}

#[test]
fn qform_only_file_keeps_its_geometry() {
    // 90 degrees about z (b = c = 0, d = sin 45deg) with qfac = -1 (pixdim[0]), no sform.
    let h = nifti::NiftiHeader {
        pixdim: [-1.0, 2.0, 3.0, 4.0, 1.0, 1.0, 1.0, 1.0],
        sform_code: 0,
        qform_code: 1,
        quatern_b: 0.0,
        quatern_c: 0.0,
        quatern_d: std::f32::consts::FRAC_1_SQRT_2,
        quatern_x: 10.0,
        quatern_y: -20.0,
        quatern_z: 30.0,
        xyzt_units: 2,
        ..Default::default()
    };
    let g = geometry_of(&h, [4, 3, 2]).unwrap();
    // R = [[0,-1,0],[1,0,0],[0,0,1]], columns scaled by (2, 3, 4 * qfac)
    let want = [[0.0, -3.0, 0.0, 10.0], [2.0, 0.0, 0.0, -20.0], [0.0, 0.0, -4.0, 30.0], [0.0, 0.0, 0.0, 1.0]];
    for r in 0..4 {
        for c in 0..4 {
            assert!((g.affine[r][c] - want[r][c]).abs() < 1e-6, "qform affine[{r}][{c}] = {}", g.affine[r][c]);
        }
    }
    assert!(g.det() < 0.0, "qfac = -1 flips the determinant");
    assert_eq!(g.voxel_size, [2.0, 3.0, 4.0]);
    round_trip(&g, 2);
    // the voxel-to-world map follows the qform
    let w = g.voxel_to_world([1.0, 1.0, 1.0]);
    assert!((w[0] - 7.0).abs() < 1e-6 && (w[1] + 18.0).abs() < 1e-6 && (w[2] - 26.0).abs() < 1e-6, "{w:?}");
    let back = g.world_to_voxel(w);
    assert!(back.iter().all(|c| (c - 1.0).abs() < 1e-9), "{back:?}");
}

#[test]
fn negative_determinant_sform_survives() {
    // radiological storage (x flipped), as many scanners' NIfTI files are
    let mut g = Geometry::synthetic([6, 5, 4], [2.0, 2.0, 2.5]);
    g.header.srow_x = [-2.0, 0.0, 0.0, 90.0];
    g.header.pixdim[0] = -1.0;
    let g = geometry_of(&g.header, g.dims).unwrap();
    assert!(g.det() < 0.0);
    round_trip(&g, 3);
}

#[test]
fn bare_pixdim_file_and_hand_written_header_read() {
    // No sform, no qform: the affine is the voxel size alone (NIfTI method 1).
    let tmp = tempfile::tempdir().unwrap();
    let vals: Vec<i16> = (0..4 * 3 * 2).map(|i| i as i16 - 5).collect();
    let bytes: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
    let mut raw = raw_nifti(&[4, 3, 2], 4, 16, &bytes); // int16
    raw[254] = 0; // sform_code = 0
    let p = tmp.path().join("int16.nii");
    std::fs::write(&p, &raw).unwrap();
    let v = read_nifti(&p).unwrap();
    assert_eq!(v.as_flat(), vals.iter().map(|&x| x as f32).collect::<Vec<_>>().as_slice());
    assert_eq!(v.geom.affine[0], [2.0, 0.0, 0.0, 0.0]);
    assert_eq!(v.nvol(), 1);
    // scl_slope / scl_inter are applied
    raw[112..116].copy_from_slice(&0.5f32.to_le_bytes());
    raw[116..120].copy_from_slice(&10.0f32.to_le_bytes());
    std::fs::write(&p, &raw).unwrap();
    let v = read_nifti(&p).unwrap();
    assert_eq!(v.as_flat()[0], -5.0 * 0.5 + 10.0);
    // a mask of it: non-zero is inside
    let mask = read_mask(&p, Some([4, 3, 2])).unwrap();
    assert_eq!(mask.iter().filter(|&&m| m == 1).count(), 24);
    assert!(read_mask(&p, Some([4, 3, 3])).is_err());
}

/// ITK (SimpleITK, Slicer) writes a vector image, a DWI read from NRRD among them, as
/// x*y*z*1*N: read as N volumes in order; volumes along two axes past z stay refused.
#[test]
fn a_vector_image_of_itk_reads_as_its_volumes() {
    let tmp = tempfile::tempdir().unwrap();
    let vals: Vec<f32> = (0..4 * 3 * 2 * 5).map(|i| i as f32 * 0.5 - 3.0).collect();
    let bytes: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
    for dims in [[4u16, 3, 2, 1, 5].as_slice(), &[4, 3, 2, 1, 1, 5], &[4, 3, 2, 5, 1, 1]] {
        let p = tmp.path().join("vector.nii");
        std::fs::write(&p, raw_nifti(dims, 16, 32, &bytes)).unwrap();
        let v = read_nifti(&p).unwrap_or_else(|e| panic!("{dims:?}: {e:#}"));
        assert_eq!((v.geom.dims, v.nvol()), ([4, 3, 2], 5), "{dims:?}");
        assert_eq!(v.as_flat(), vals.as_slice(), "{dims:?}");
    }
    let p = tmp.path().join("two_axes.nii");
    std::fs::write(&p, raw_nifti(&[4, 3, 2, 5, 2], 16, 32, &[bytes.clone(), bytes].concat())).unwrap();
    let e = format!("{:#}", read_nifti(&p).unwrap_err());
    assert!(e.contains("5-D volumes are not supported"), "{e}");
}

#[test]
fn gradient_tables_round_trip_and_transpose() {
    let tmp = tempfile::tempdir().unwrap();
    let g = neuroport::synth::gradient_table(2, 9, 1500.0);
    let (bv, bc) = (tmp.path().join("bvals"), tmp.path().join("bvecs"));
    g.write_fsl(&bv, &bc).unwrap();
    let r = read_bvals_bvecs(&bv, &bc, 11).unwrap();
    assert_eq!(r.bvals, g.bvals);
    for (a, b) in r.bvecs.iter().zip(&g.bvecs) {
        for c in 0..3 {
            assert!((a[c] - b[c]).abs() < 1e-12);
        }
    }
    assert!(!std::fs::read_to_string(&bc).unwrap().contains("-0 "), "no negative zeros");
    // N rows of 3 (transposed bvecs) and a column of bvals read the same; directions are normalised
    let col: String = g.bvals.iter().map(|b| format!("{b}\n")).collect();
    let rows: String = g.bvecs.iter().map(|v| format!("{} {} {}\n", 2.0 * v[0], 2.0 * v[1], 2.0 * v[2])).collect();
    std::fs::write(&bv, col).unwrap();
    std::fs::write(&bc, rows).unwrap();
    let t = read_bvals_bvecs(&bv, &bc, 11).unwrap();
    assert_eq!(t.bvals, g.bvals);
    for (a, b) in t.bvecs.iter().zip(&g.bvecs) {
        for c in 0..3 {
            assert!((a[c] - b[c]).abs() < 1e-12);
        }
    }
    assert!(GradientTable::new(vec![0.0, 1000.0], vec![[0.0; 3]]).is_err());
}

#[test]
fn bvecs_frame_to_world_follows_the_fsl_convention() {
    // det > 0 (neurological storage): FSL's bvecs have x negated relative to the voxel axes.
    let pos = Geometry::synthetic([4, 4, 4], [2.0, 2.0, 2.0]);
    assert!(pos.det() > 0.0);
    assert_eq!(pos.bvecs_to_voxel([0.6, 0.8, 0.0]), [-0.6, 0.8, 0.0]);
    assert_eq!(pos.bvecs_to_world([0.6, 0.8, 0.0]), [-0.6, 0.8, 0.0]);
    // det < 0 (x flipped in the affine): bvecs are the voxel axes, and world x is reversed.
    let mut h = pos.header.clone();
    h.srow_x = [-2.0, 0.0, 0.0, 0.0];
    let neg = geometry_of(&h, [4, 4, 4]).unwrap();
    assert!(neg.det() < 0.0);
    assert_eq!(neg.bvecs_to_voxel([0.6, 0.8, 0.0]), [0.6, 0.8, 0.0]);
    assert_eq!(neg.bvecs_to_world([0.6, 0.8, 0.0]), [-0.6, 0.8, 0.0]);
    // anisotropic voxels: bvecs are physical directions, the voxel size does not bend them
    let an = Geometry::synthetic([4, 4, 4], [1.0, 1.0, 3.0]);
    let w = an.bvecs_to_world([0.0, 0.6, 0.8]);
    assert!((w[1] - 0.6).abs() < 1e-12 && (w[2] - 0.8).abs() < 1e-12, "{w:?}");
}

#[test]
fn outputs_appear_together_on_commit() {
    let tmp = tempfile::tempdir().unwrap();
    let g = Geometry::synthetic([3, 3, 3], [1.0; 3]);
    let mut o = Outputs::new();
    o.nifti(&tmp.path().join("a.nii.gz"), &g, 1, &[0.5; 27]).unwrap();
    o.file(&tmp.path().join("sub/b.txt"), |p| Ok(std::fs::write(p, "x")?)).unwrap();
    let before = entries(tmp.path());
    assert!(before.iter().all(|e| e.starts_with('.') || e == "sub"), "only temporaries before commit: {before:?}");
    let done = o.commit().unwrap();
    assert_eq!(done.len(), 2);
    assert_eq!(entries(tmp.path()), vec!["a.nii.gz".to_string(), "sub".to_string()]);
    assert_eq!(entries(&tmp.path().join("sub")), vec!["b.txt".to_string()]);
    assert_eq!(read_nifti(&tmp.path().join("a.nii.gz")).unwrap().as_flat(), &[0.5; 27]);
}

/// A NIfTI pair (.hdr + .img, magic "ni1", as SPM, FSL's NIFTI_PAIR and nibabel's Nifti1Pair
/// write) reads the same whichever of its two files is named, as FSL and nibabel take either;
/// gzipped pairs (.hdr.gz + .img.gz) too. Naming the .img used to fail with "the header has no
/// NIfTI-1 magic": the voxels were parsed as a header.
#[test]
fn a_nifti_pair_reads_through_either_file() {
    let tmp = tempfile::tempdir().unwrap();
    let vals: Vec<f32> = (0..4 * 3 * 2).map(|i| i as f32 * 1.5 - 7.0).collect();
    let bytes: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
    let mut head = raw_nifti(&[4, 3, 2], 16, 32, &[]);
    head.truncate(348);
    head[108..112].copy_from_slice(&0.0f32.to_le_bytes()); // vox_offset: the .img's start
    head[344..348].copy_from_slice(b"ni1\0");
    for (h, i, zip) in [("p.hdr", "p.img", false), ("q.hdr.gz", "q.img.gz", true)] {
        let (hp, ip) = (tmp.path().join(h), tmp.path().join(i));
        std::fs::write(&hp, if zip { gz(&head) } else { head.clone() }).unwrap();
        std::fs::write(&ip, if zip { gz(&bytes) } else { bytes.clone() }).unwrap();
        for p in [&hp, &ip] {
            let v = read_nifti(p).unwrap_or_else(|e| panic!("{}: {e:#}", p.display()));
            assert_eq!(v.as_flat(), &vals[..], "{}", p.display());
            assert_eq!(v.geom.affine[0], [2.0, 0.0, 0.0, 0.0], "{}", p.display());
        }
    }
    // An .img alone (no header beside it) is still an error naming it.
    let lone = tmp.path().join("lone.img");
    std::fs::write(&lone, &bytes).unwrap();
    let e = format!("{:#}", read_nifti(&lone).unwrap_err());
    assert!(e.contains("lone.img"), "{e}");
}
