//! Helpers shared by the geodesic tests: the devices present (CPU always, OpenCL when PoCL or
//! another runtime is installed; CI requires it through NEUROPORT_REQUIRE_OPENCL=1).

#![allow(dead_code)]

use neuroport::{BackendSpec, Device, Inventory};
use std::sync::Mutex;

/// PoCL's first-time initialisation is not thread-safe (clGetDeviceIDs in one thread while
/// another calls clGetDeviceInfo crashes in libpocl), and tests run in parallel threads: discover
/// devices one thread at a time.
static DISCOVER: Mutex<()> = Mutex::new(());

fn inventory() -> Inventory {
    let _g = DISCOVER.lock().unwrap_or_else(|e| e.into_inner());
    Inventory::discover(Some(2))
}

pub fn cpu() -> Device {
    inventory().open_cpu().unwrap()
}

pub fn opencl() -> Option<Device> {
    let inv = inventory();
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
