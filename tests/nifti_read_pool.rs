//! A read on many threads finishes: the pieces of a multi-member .nii.gz are placed on every
//! core, and a worker waiting for its place's tasks may take up another piece's task. Round 45's
//! first masked read held a lock across its place, and one dti in two hung on the H200 host's
//! 16 cores (and here with 16 threads): the second piece's task waited on a lock its own
//! thread held.

use neuroport::volume::{read_nifti, write_nifti, Geometry};
use std::sync::mpsc;
use std::time::Duration;

#[test]
fn reads_on_sixteen_threads_never_hang() {
    let tmp = tempfile::tempdir().unwrap();
    let g = Geometry::synthetic([64, 64, 40], [1.0; 3]);
    let nvol = 10; // 6.5 MB of float32: ~25 members of 256 KiB
    let data: Vec<f32> = (0..g.nvox() * nvol).map(|i| ((i as f32) * 0.618).sin() * 100.0).collect();
    let p = tmp.path().join("v.nii.gz");
    write_nifti(&p, &g, nvol, &data).unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(16).build().unwrap();
        for _ in 0..40 {
            let v = pool.install(|| read_nifti(&p)).unwrap();
            assert!(v.as_flat().iter().zip(&data).all(|(a, b)| a.to_bits() == b.to_bits()), "a read differs from what was written");
        }
        tx.send(()).unwrap();
    });
    // 40 reads of 6.5 MB take a few seconds on 2 cores; a hung one never ends.
    rx.recv_timeout(Duration::from_secs(120)).expect("40 reads on 16 threads did not finish in 120 s: a read hung (or failed)");
}
