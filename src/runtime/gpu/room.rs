//! A buffer a device cannot hold, as one line for the user. Methods chunk what they can by
//! `mem_free`/`max_alloc`; what they cannot (probtrack's sample field, the geodesic metric field,
//! the FIM's speeds, registration's images) is one buffer, and a small GPU refuses it with an API
//! code (CL_INVALID_BUFFER_SIZE, CUDA_ERROR_OUT_OF_MEMORY) that says neither how much was asked
//! nor what to do. Every allocation goes through [`check`], and the backends' out-of-memory
//! codes through [`out_of_memory`], so the user reads the device, both sizes and a way out.

use crate::runtime::DeviceInfo;
use anyhow::{anyhow, Error, Result};

const WAY_OUT: &str = "use --backend cpu, a device with more memory, or a smaller volume";

/// Bytes in MiB below a GiB, else in GiB: the sizes a GPU's limits come in.
fn size(bytes: u64) -> String {
    let mib = bytes as f64 / (1u64 << 20) as f64;
    if mib < 1024.0 {
        format!("{mib:.1} MiB")
    } else {
        format!("{:.1} GiB", mib / 1024.0)
    }
}

fn device(info: &DeviceInfo) -> String {
    format!("{} ({})", info.spec, info.name)
}

/// Refuses a buffer over the largest single allocation the device allows, before asking it.
pub(super) fn check(info: &DeviceInfo, bytes: usize, max_alloc: u64) -> Result<()> {
    if bytes as u64 <= max_alloc {
        return Ok(());
    }
    Err(anyhow!(
        "{}: a buffer of {} is over the largest single allocation the device allows, {} ({} of memory in all); {WAY_OUT}",
        device(info),
        size(bytes as u64),
        size(max_alloc),
        size(info.global_mem_bytes)
    ))
}

/// The device ran out of memory allocating (or, on OpenCL, first using) `bytes`; `free` where
/// the API says how much is left (CUDA).
pub(crate) fn out_of_memory(info: &DeviceInfo, bytes: Option<usize>, free: Option<u64>) -> Error {
    let buffer = bytes.map_or(String::new(), |b| format!(" for a buffer of {}", size(b as u64)));
    let left = free.map_or(String::new(), |f| format!("{} free of ", size(f)));
    anyhow!("{}: out of device memory{buffer} ({left}{} in all); {WAY_OUT}", device(info), size(info.global_mem_bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info() -> DeviceInfo {
        DeviceInfo {
            backend: "opencl".into(),
            spec: "opencl:0:0".into(),
            name: "Small GPU".into(),
            vendor: String::new(),
            platform: String::new(),
            compute_units: 1,
            clock_mhz: 1,
            global_mem_bytes: 1 << 30,
            image_support: false,
            is_gpu: true,
            id: Default::default(),
        }
    }

    #[test]
    fn names_the_device_both_sizes_and_a_way_out() {
        assert!(check(&info(), 256 << 20, 256 << 20).is_ok());
        let e = check(&info(), 384_000_000, 256 << 20).unwrap_err().to_string();
        assert_eq!(
            e,
            "opencl:0:0 (Small GPU): a buffer of 366.2 MiB is over the largest single allocation the device allows, 256.0 MiB (1.0 GiB of memory in all); use --backend cpu, a device with more memory, or a smaller volume"
        );
        let e = out_of_memory(&info(), Some(3 << 29), Some(1 << 29)).to_string();
        assert_eq!(e, "opencl:0:0 (Small GPU): out of device memory for a buffer of 1.5 GiB (512.0 MiB free of 1.0 GiB in all); use --backend cpu, a device with more memory, or a smaller volume");
    }
}
