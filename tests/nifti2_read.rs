//! NIfTI-2 inputs (nibabel's example_nifti2.nii.gz, dcm2niix and Workbench output) read as
//! NIfTI-1 ones are: headers built here byte by byte from the NIfTI-2 standard's layout.

mod common;
use common::{gz, run, s};
use neuroport::volume::read_nifti;

/// A 540-byte NIfTI-2 header: `dims`, int16 voxels scaled by 0.5 and +3, sform `srow` (code 2)
/// and a qform (code 1, a 90-degree turn about z), in either byte order; `pair` writes ni2 and
/// vox_offset 0, else n+2 and 544.
fn header(dims: &[i64], srow: [[f64; 4]; 3], big: bool, pair: bool) -> Vec<u8> {
    let mut h = vec![0u8; 540];
    let put = |h: &mut Vec<u8>, at: usize, le: &[u8]| {
        let mut b = le.to_vec();
        if big {
            b.reverse();
        }
        h[at..at + b.len()].copy_from_slice(&b);
    };
    put(&mut h, 0, &540i32.to_le_bytes());
    h[4..12].copy_from_slice(if pair { b"ni2\0\r\n\x1a\n" } else { b"n+2\0\r\n\x1a\n" });
    put(&mut h, 12, &4i16.to_le_bytes()); // int16
    put(&mut h, 14, &16i16.to_le_bytes());
    put(&mut h, 16, &(dims.len() as i64).to_le_bytes());
    for i in 0..7 {
        put(&mut h, 24 + 8 * i, &dims.get(i).copied().unwrap_or(1).to_le_bytes());
    }
    for (i, v) in [-1.0f64, 2.0, 3.0, 4.0, 2.5, 1.0, 1.0, 1.0].iter().enumerate() {
        put(&mut h, 104 + 8 * i, &v.to_le_bytes());
    }
    put(&mut h, 168, &(if pair { 0i64 } else { 544 }).to_le_bytes());
    put(&mut h, 176, &0.5f64.to_le_bytes()); // scl_slope
    put(&mut h, 184, &3.0f64.to_le_bytes()); // scl_inter
    put(&mut h, 344, &1i32.to_le_bytes()); // qform_code
    put(&mut h, 348, &2i32.to_le_bytes()); // sform_code
    put(&mut h, 368, &std::f64::consts::FRAC_1_SQRT_2.to_le_bytes()); // quatern_d
    for (r, row) in srow.iter().enumerate() {
        for (c, v) in row.iter().enumerate() {
            put(&mut h, 400 + 32 * r + 8 * c, &v.to_le_bytes());
        }
    }
    put(&mut h, 500, &10i32.to_le_bytes()); // mm, s
    h
}

const SROW: [[f64; 4]; 3] = [[0.0, -3.0, 0.0, 40.25], [2.0, 0.0, 0.0, -17.5], [0.0, 0.0, 4.0, 9.0]];

/// int16 voxels 0, -1, 2, -3, ... as bytes in the given order, and their scaled values.
fn voxels(n: usize, big: bool) -> (Vec<u8>, Vec<f32>) {
    let raw: Vec<i16> = (0..n as i16).map(|i| if i % 2 == 0 { i } else { -i }).collect();
    let bytes = raw.iter().flat_map(|v| if big { v.to_be_bytes() } else { v.to_le_bytes() }).collect();
    (bytes, raw.iter().map(|&v| v as f32 * 0.5 + 3.0).collect())
}

#[test]
fn nifti2_single_files_and_pairs_read_with_their_geometry_and_scaling() {
    let tmp = tempfile::tempdir().unwrap();
    let dims = [4i64, 3, 2, 2];
    for big in [false, true] {
        let (bytes, want) = voxels(48, big);
        let single = [header(&dims, SROW, big, false), vec![0; 4], bytes.clone()].concat();
        let p = tmp.path().join(format!("single{big}.nii"));
        let z = tmp.path().join(format!("single{big}.nii.gz"));
        std::fs::write(&p, &single).unwrap();
        std::fs::write(&z, gz(&single)).unwrap();
        let (hp, ip) = (tmp.path().join(format!("pair{big}.hdr")), tmp.path().join(format!("pair{big}.img")));
        std::fs::write(&hp, header(&dims, SROW, big, true)).unwrap();
        std::fs::write(&ip, &bytes).unwrap();
        for f in [&p, &z, &hp, &ip] {
            let v = read_nifti(f).unwrap_or_else(|e| panic!("{}: {e:#}", f.display()));
            assert_eq!((v.geom.dims, v.nvol()), ([4, 3, 2], 2), "{}", f.display());
            assert_eq!(v.as_flat(), &want[..], "{}", f.display());
            // The sform (code 2) wins over the qform; every coefficient is exact in float32.
            for r in 0..3 {
                assert_eq!(v.geom.affine[r], SROW[r], "{} row {r}", f.display());
            }
            assert_eq!(v.geom.voxel_size, [2.0, 3.0, 4.0], "{}", f.display());
            assert_eq!((v.geom.header.qform_code, v.geom.header.sform_code, v.geom.header.xyzt_units), (1, 2, 10));
            assert_eq!(v.geom.header.pixdim[0], -1.0, "qfac");
        }
    }
}

#[test]
fn nifti2_past_nifti1_sizes_is_one_line_naming_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("wide.nii");
    std::fs::write(&p, [header(&[40000, 1, 1], SROW, false, false), vec![0; 4 + 80000]].concat()).unwrap();
    let e = format!("{:#}", read_nifti(&p).unwrap_err());
    assert!(e.contains("wide.nii") && e.contains("dimension 1 has size 40000"), "{e}");
    let bad = tmp.path().join("nomagic.nii");
    let mut h = header(&[2, 2, 2], SROW, false, false);
    h[4..8].copy_from_slice(b"xyz\0");
    std::fs::write(&bad, [h, vec![0; 4 + 16]].concat()).unwrap();
    let e = format!("{:#}", read_nifti(&bad).unwrap_err());
    assert!(e.contains("nomagic.nii") && e.contains("no NIfTI-2 magic"), "{e}");
}

/// What a user runs: a NIfTI-2 pair registered to itself writes a NIfTI-1 warped image on its
/// grid.
#[test]
fn register_takes_a_nifti2_image() {
    let tmp = tempfile::tempdir().unwrap();
    let dims = [12i64, 10, 8];
    let n = 12 * 10 * 8;
    let bytes: Vec<u8> = (0..n).flat_map(|i| {
        let (x, y, z) = ((i % 12) as f64 - 5.5, ((i / 12) % 10) as f64 - 4.5, (i / 120) as f64 - 3.5);
        ((1000.0 * (-(x * x + y * y * 1.5 + z * z * 2.0) / 8.0).exp()) as i16).to_le_bytes()
    }).collect();
    let img = tmp.path().join("t1.nii");
    std::fs::write(&img, [header(&dims, SROW, false, false), vec![0; 4], bytes].concat()).unwrap();
    let out = tmp.path().join("r");
    let (code, _, err) = run(&["--backend", "cpu", "register", "--fixed", s(&img), "--moving", s(&img), "--dof", "6", "--out", s(&out)], &[]);
    assert_eq!(code, 0, "{err}");
    let w = read_nifti(&tmp.path().join("r_warped.nii.gz")).unwrap();
    assert_eq!(w.geom.dims, [12, 10, 8]);
    assert_eq!(w.geom.affine[0], SROW[0]);
    assert_eq!(w.geom.header.sizeof_hdr, 348);
}
