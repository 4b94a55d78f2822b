//! An empty image file (a copy that failed, a placeholder) is reported as empty, not as a
//! truncated header.

mod common;
use common::{run, s};

/// `neuroport dti --dwi e.nii.gz ...` on a 0-byte file said 'e.nii.gz: truncated: the file ends
/// inside the header'; a gzip file that inflates to nothing said the same.
#[test]
fn an_empty_image_file_is_called_empty() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("bvals"), "0 1000 1000 1000 1000 1000 1000\n").unwrap();
    std::fs::write(d.join("bvecs"), "0 1 0 0 1 1 0\n0 0 1 0 1 0 1\n0 0 0 1 0 1 1\n").unwrap();
    std::fs::write(d.join("e.nii.gz"), b"").unwrap();
    std::fs::write(d.join("z.nii.gz"), common::gz(b"")).unwrap();
    // 1-3 bytes: too few to see a header's first field; were 'truncated: the file ends inside
    // the header' only.
    std::fs::write(d.join("s.nii"), b"abc").unwrap();
    for (name, want) in [
        ("s.nii", "s.nii: only 3 bytes: not a NIfTI image (truncated, or some other file; a NIfTI-1 header alone is 348 bytes)"),
        ("e.nii.gz", "e.nii.gz: empty file (0 bytes: truncated or never written), not a NIfTI image"),
        ("z.nii.gz", "z.nii.gz: empty: the gzip data inflates to 0 bytes (truncated or never written), not a NIfTI image"),
    ] {
        let (code, _, err) = run(&["dti", "--dwi", s(&d.join(name)), "--bvals", s(&d.join("bvals")), "--bvecs", s(&d.join("bvecs")), "--out", s(&d.join("out"))], &[]);
        assert_eq!(code, 1, "{err}");
        assert!(err.starts_with("error: ") && err.trim_end().ends_with(want) && err.trim_end().lines().count() == 1, "{err}");
    }
    assert_eq!(common::entries(d).len(), 5, "nothing written");
}
