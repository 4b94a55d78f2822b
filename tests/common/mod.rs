//! Helpers shared by the integration tests: running the binary, small synthetic datasets, and
//! hand-made NIfTI files for the bad-input cases.
#![allow(dead_code)]

use neuroport::synth::dataset::{self, Model, Spec};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_neuroport"))
}

/// Runs `neuroport args...` with extra environment variables; returns (exit code, stdout, stderr).
pub fn run(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut c = bin();
    c.args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    let o: Output = c.output().expect("the neuroport binary runs");
    (o.status.code().unwrap_or(-1), String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

pub fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 temp path")
}

/// A small noisy tensor phantom written into `dir` (dwi.nii.gz, bvals, bvecs, mask.nii.gz...).
pub fn small_dataset(dir: &Path, dims: [usize; 3], snr: f64, seed: u64) -> Vec<PathBuf> {
    let mut spec = Spec::new(dims, Model::Tensor);
    spec.snr = snr;
    spec.seed = seed;
    spec.ndirs = 20;
    let ds = dataset::build(&spec).expect("phantom");
    dataset::write(&ds, dir).expect("phantom written")
}

/// Every entry of a folder (files and subfolders), sorted.
pub fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = match std::fs::read_dir(dir) {
        Ok(r) => r.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect(),
        Err(_) => Vec::new(),
    };
    v.sort();
    v
}

/// A NIfTI-1 single file (.nii) written by hand: `dims` (1-7 of them), the raw `datatype` and
/// `bitpix` codes, sform = diag(2, 2, 2), and `data` as the voxel bytes after the 352-byte offset.
pub fn raw_nifti(dims: &[u16], datatype: i16, bitpix: i16, data: &[u8]) -> Vec<u8> {
    let mut h = vec![0u8; 352];
    let put_i16 = |h: &mut Vec<u8>, off: usize, v: i16| h[off..off + 2].copy_from_slice(&v.to_le_bytes());
    let put_f32 = |h: &mut Vec<u8>, off: usize, v: f32| h[off..off + 4].copy_from_slice(&v.to_le_bytes());
    h[0..4].copy_from_slice(&348i32.to_le_bytes());
    put_i16(&mut h, 40, dims.len() as i16);
    for (i, &d) in dims.iter().enumerate() {
        put_i16(&mut h, 42 + 2 * i, d as i16);
    }
    for i in dims.len()..7 {
        put_i16(&mut h, 42 + 2 * i, 1);
    }
    put_i16(&mut h, 70, datatype);
    put_i16(&mut h, 72, bitpix);
    for (i, v) in [1.0f32, 2.0, 2.0, 2.0, 1.0, 1.0, 1.0, 1.0].iter().enumerate() {
        put_f32(&mut h, 76 + 4 * i, *v);
    }
    put_f32(&mut h, 108, 352.0); // vox_offset
    put_f32(&mut h, 112, 1.0); // scl_slope
    h[123] = 2 | 8; // mm, s
    put_i16(&mut h, 254, 1); // sform_code
    for (r, row) in [[2.0f32, 0.0, 0.0, 0.0], [0.0, 2.0, 0.0, 0.0], [0.0, 0.0, 2.0, 0.0]].iter().enumerate() {
        for (c, v) in row.iter().enumerate() {
            put_f32(&mut h, 280 + 16 * r + 4 * c, *v);
        }
    }
    h[344..348].copy_from_slice(b"n+1\0");
    h.extend_from_slice(data);
    h
}

/// A hand-made NIfTI of `datatype` with scaling, optionally big-endian.
pub fn typed_dims(dir: &Path, name: &str, dims: &[u16], datatype: i16, bitpix: i16, bytes: &[u8], slope: f32, inter: f32, big: bool) -> std::path::PathBuf {
    let mut h = raw_nifti(dims, datatype, bitpix, bytes);
    h[112..116].copy_from_slice(&slope.to_le_bytes());
    h[116..120].copy_from_slice(&inter.to_le_bytes());
    if big {
        // swap every header field to big-endian: the 2- and 4-byte fields we set
        let mut b = h.clone();
        b[0..4].copy_from_slice(&348i32.to_be_bytes());
        for off in (40..56).step_by(2).chain([70, 72, 254]) {
            let v = i16::from_le_bytes([h[off], h[off + 1]]);
            b[off..off + 2].copy_from_slice(&v.to_be_bytes());
        }
        for off in (76..120).step_by(4).chain((280..328).step_by(4)) {
            let v = f32::from_le_bytes(h[off..off + 4].try_into().unwrap());
            b[off..off + 4].copy_from_slice(&v.to_be_bytes());
        }
        h = b;
    }
    let p = dir.join(name);
    std::fs::write(&p, h).unwrap();
    p
}

/// gzip of `bytes`.
pub fn gz(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// The first OpenCL device (PoCL in CI), or None (a failure where CI requires OpenCL).
pub fn opencl() -> Option<neuroport::Device> {
    use neuroport::{BackendSpec, Inventory};
    match Inventory::discover(None).select_one(&BackendSpec::OpenCl(None)) {
        Ok(d) => Some(d),
        Err(e) => {
            let required = std::env::var("NEUROPORT_REQUIRE_OPENCL").map(|v| v == "1").unwrap_or(false);
            assert!(!required, "no OpenCL device but NEUROPORT_REQUIRE_OPENCL=1: {e:#}");
            eprintln!("skipped: {e:#}");
            None
        }
    }
}
