//! A device too small for a buffer that cannot be chunked (src/runtime/gpu/room.rs): the user
//! reads one line naming the device, the size asked, the size offered and a way out, before any
//! long work, and nothing is written; in a device list the small device drops out and the others
//! write the bytes they write alone; the DTI metric, prepared on a list's first device, goes in
//! z-slabs with the bytes of one pass. PoCL stands in for a small GPU: POCL_MEMORY_LIMIT=1 (GB)
//! makes it report 1 GiB of memory and a largest allocation of 256 MiB, set for the spawned
//! binary only.

mod common;
use common::{raw_nifti, run, s};
use std::path::Path;

/// 200 x 200 x 100 voxels: the geodesic metric field (24 floats a voxel) is 366.2 MiB.
const DIMS: [u16; 3] = [200, 200, 100];

/// An isotropic tensor volume (FSL order, mm^2/s) and a seed ROI of a few voxels.
fn inputs(dir: &Path) -> (String, String) {
    let n = DIMS.iter().map(|&d| d as usize).product::<usize>();
    let mut t = vec![0f32; 6 * n];
    for c in [0, 3, 5] {
        t[c * n..(c + 1) * n].fill(1e-3);
    }
    let tensor = dir.join("tensor.nii");
    std::fs::write(&tensor, raw_nifti(&[DIMS[0], DIMS[1], DIMS[2], 6], 16, 32, bytemuck::cast_slice(&t))).unwrap();
    let mut roi = vec![0u8; n];
    let mid = (DIMS[2] as usize / 2 * DIMS[1] as usize + DIMS[1] as usize / 2) * DIMS[0] as usize + DIMS[0] as usize / 2;
    roi[mid..mid + 3].fill(1);
    let seeds = dir.join("roi.nii");
    std::fs::write(&seeds, raw_nifti(&DIMS, 2, 8, &roi)).unwrap();
    (s(&tensor).to_string(), s(&seeds).to_string())
}

const SMALL: [(&str, &str); 1] = [("POCL_MEMORY_LIMIT", "1")];

/// `track geodesic` on `backend` with the device made small.
fn track(tensor: &str, seeds: &str, backend: &str, out: &Path) -> (i32, String, String) {
    run(&["--backend", backend, "track", "geodesic", "--tensor", tensor, "--seeds", seeds, "--out", s(out)], &SMALL)
}

#[test]
fn a_field_over_the_largest_allocation_is_one_clear_line_and_leaves_nothing() {
    if common::opencl().is_none() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (tensor, seeds) = inputs(tmp.path());
    let alone = tmp.path().join("alone");
    let (code, _, err) = track(&tensor, &seeds, "opencl", &alone.join("f.tck"));
    assert_eq!(code, 1, "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{err}");
    let l = lines[0];
    assert!(l.starts_with("error: opencl:"), "{err}");
    for part in ["a buffer of 366.2 MiB", "largest single allocation the device allows, 256.0 MiB", "1.0 GiB of memory in all", "--backend cpu"] {
        assert!(l.contains(part), "missing '{part}': {err}");
    }
    assert!(common::entries(&alone).is_empty(), "left behind: {:?}", common::entries(&alone));
}

#[test]
fn a_list_runs_without_the_small_device_and_says_why() {
    if common::opencl().is_none() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (tensor, seeds) = inputs(tmp.path());
    // Beside the CPU, the small device drops out (saying why) and the CPU's fibres are written.
    let (cpu, mixed) = (tmp.path().join("cpu.tck"), tmp.path().join("mixed.tck"));
    let (code, _, err) = track(&tensor, &seeds, "cpu", &cpu);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = track(&tensor, &seeds, "cpu,opencl", &mixed);
    assert_eq!(code, 0, "{err}");
    assert!(std::fs::read(&cpu).unwrap() == std::fs::read(&mixed).unwrap(), "cpu,opencl wrote other fibres than cpu");
    let split = err.lines().find(|l| l.starts_with("split: ")).unwrap_or_else(|| panic!("{err}"));
    assert!(split.contains("re-run on the others: opencl:") && split.contains("256.0 MiB"), "{err}");
    assert!(!err.contains("panicked") && !err.contains("backtrace"), "{err}");
}

#[test]
fn a_list_led_by_the_small_device_prepares_the_metric_in_slabs_and_runs() {
    if common::opencl().is_none() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (tensor, seeds) = inputs(tmp.path());
    // The metric is prepared on the list's first device: whole, its 366.2 MiB failed the run.
    let (code, _, err) = track(&tensor, &seeds, "opencl,cpu", &tmp.path().join("f.tck"));
    assert_eq!(code, 0, "{err}");
    assert!(err.lines().any(|l| l.starts_with("split: ") && l.contains("re-run on the others: opencl:")), "{err}");
}

#[test]
fn the_metric_in_slabs_has_the_bytes_of_one_pass() {
    use neuroport::dti::{gpu::GpuDti, DtiKernels, Frame};
    let Some(dev) = common::opencl() else { return };
    let dims = [9, 7, 10];
    let n: usize = dims.iter().product();
    // A smooth anisotropic field with a zero-trace voxel (replaced by the isotropic default).
    let mut t = vec![0f32; 6 * n];
    for v in 1..n {
        let f = v as f32 / n as f32;
        for (c, val) in [1.7e-3 - 1e-3 * f, 2e-4 * f, -1e-4, 5e-4 + 3e-4 * f * f, 1e-4 * f, 4e-4 + 2e-4 * (1.0 - f)].into_iter().enumerate() {
            t[c * n + v] = val;
        }
    }
    let mut k = GpuDti::new(neuroport::runtime::gpu::Gpu::require(&dev).unwrap()).unwrap();
    let frame = Frame { flip_x: true, inv_voxel: [0.5, 0.5, 0.4] };
    let one = k.metric(&t, dims, frame).unwrap();
    for planes in [1, 2, 3, 4, 9, 10] {
        let slabs = k.metric_in_slabs(&t, dims, frame, planes).unwrap();
        assert!(one.iter().zip(&slabs).all(|(a, b)| a.to_bits() == b.to_bits()), "{planes} planes a slab");
        assert_eq!(one.len(), slabs.len());
    }
}
