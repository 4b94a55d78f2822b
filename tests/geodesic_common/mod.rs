//! Helpers shared by the geodesic tests: the devices present (CPU always, OpenCL when PoCL or
//! another runtime is installed; CI requires it through NEUROPORT_REQUIRE_OPENCL=1).

#![allow(dead_code)]

use neuroport::{BackendSpec, Device, Inventory};

pub fn cpu() -> Device {
    Inventory::discover(Some(2)).open_cpu().unwrap()
}

pub fn opencl() -> Option<Device> {
    let inv = Inventory::discover(Some(2));
    match inv.select(&BackendSpec::OpenCl(None), false) {
        Ok(mut v) => Some(v.remove(0)),
        Err(e) => {
            assert!(std::env::var("NEUROPORT_REQUIRE_OPENCL").map(|v| v != "1").unwrap_or(true), "no OpenCL device: {e:#}");
            eprintln!("skipped OpenCL: {e:#}");
            None
        }
    }
}

/// Every device to test: the CPU reference and the OpenCL device if present.
pub fn devices() -> Vec<Device> {
    let mut v = vec![cpu()];
    v.extend(opencl());
    v
}
