//! Files of neighbouring formats that users hand over as images (nibabel's test data holds
//! both): an Analyze 7.5 header and a CIFTI-2 matrix are named as what they are, in one line
//! naming the file, with a non-zero exit and nothing written.

mod common;
use common::{entries, raw_nifti, run, s};

/// `neuroport register` with `file` as the fixed image: (exit code, stderr), and the folder
/// left with nothing but the inputs.
fn refused(dir: &std::path::Path, file: &std::path::Path) -> (i32, String) {
    let moving = dir.join("moving.nii");
    std::fs::write(&moving, raw_nifti(&[4, 4, 4], 16, 32, &vec![1u8; 256])).unwrap();
    let before = entries(dir);
    let (code, _, err) = run(&["--backend", "cpu", "register", "--fixed", s(file), "--moving", s(&moving), "--out", s(&dir.join("r"))], &[]);
    assert_eq!(entries(dir), before, "{err}");
    assert!(!err.contains("panicked") && err.trim().lines().count() == 1, "{err}");
    (code, err)
}

#[test]
fn an_analyze_header_is_named_with_how_to_convert() {
    let tmp = tempfile::tempdir().unwrap();
    // nibabel's analyze.hdr: NIfTI-1's 348 bytes, big-endian, no magic; an .img beside it.
    let mut h = raw_nifti(&[4, 4, 4], 2, 8, &[]);
    h.truncate(348);
    h[344..348].fill(0);
    let be: Vec<u8> = h.iter().enumerate().map(|(i, &b)| if i < 4 { h[3 - i] } else { b }).collect();
    for (name, head) in [("le.hdr", &h), ("be.hdr", &be)] {
        let p = tmp.path().join(name);
        std::fs::write(&p, head).unwrap();
        std::fs::write(p.with_extension("img"), [7u8; 64]).unwrap();
        let (code, err) = refused(tmp.path(), &p);
        assert_ne!(code, 0);
        assert!(err.contains(name) && err.contains("Analyze 7.5") && err.contains("fslchfiletype"), "{err}");
    }
}

#[test]
fn a_cifti_file_is_named_as_one() {
    let tmp = tempfile::tempdir().unwrap();
    // nibabel's row_major.dconn.nii: NIfTI-2, dims 1x1x1x1x3x3, intent 3001 (ConnDense).
    let mut h = vec![0u8; 544];
    h[0..4].copy_from_slice(&540i32.to_le_bytes());
    h[4..12].copy_from_slice(b"n+2\0\r\n\x1a\n");
    h[12..14].copy_from_slice(&16i16.to_le_bytes());
    h[14..16].copy_from_slice(&32i16.to_le_bytes());
    for (i, d) in [6i64, 1, 1, 1, 1, 3, 3, 1].iter().enumerate() {
        h[16 + 8 * i..24 + 8 * i].copy_from_slice(&d.to_le_bytes());
    }
    for i in 0..8 {
        h[104 + 8 * i..112 + 8 * i].copy_from_slice(&1.0f64.to_le_bytes());
    }
    h[168..176].copy_from_slice(&544i64.to_le_bytes());
    h[504..508].copy_from_slice(&3001i32.to_le_bytes());
    h.extend_from_slice(&[0u8; 36]);
    let p = tmp.path().join("m.dconn.nii");
    std::fs::write(&p, &h).unwrap();
    let (code, err) = refused(tmp.path(), &p);
    assert_ne!(code, 0);
    assert!(err.contains("m.dconn.nii") && err.contains("CIFTI") && err.contains("3001"), "{err}");
}
