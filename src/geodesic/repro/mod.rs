//! The reproduce targets of paper 001: Table 1 (`geodesic-t1`), Table 3 (`geodesic-t3`),
//! Fig. 6 (`geodesic-f6`) and Fig. 7 (`geodesic-f7`). Times are the tracing kernel's (device events;
//! wall clock on the native CPU), median of the repeats after one warm-up on OpenCL/CUDA devices.

mod brain;
mod synthetic;

pub use brain::{GeodesicF7, GeodesicT3};
pub use synthetic::{GeodesicF6, GeodesicT1};

use super::bench::{measure, Measured};
use super::{kernels, FibreBatch, Fields, Interp, Seed, TraceParams};
use crate::runtime::Device;
use anyhow::Result;

/// The interpolations a device runs: the CPU reference has one; GPU backends both where the
/// device has image support.
pub fn interps(dev: &Device) -> Vec<Interp> {
    match dev {
        Device::Cpu(_) => vec![Interp::Kernel],
        _ if dev.info().image_support => vec![Interp::Texture, Interp::Kernel],
        _ => vec![Interp::Kernel],
    }
}

/// Row variant of an interpolation on a device.
pub fn variant(dev: &Device, interp: Interp) -> String {
    if dev.is_cpu() { String::new() } else { interp.label().into() }
}

/// Uploads `fields` to `dev` and measures `seeds` under each parameter set.
pub fn run_on(dev: &Device, fields: &Fields, seeds: &[Seed], params: &[TraceParams], repeats: usize) -> Result<Vec<(Measured, FibreBatch)>> {
    let mut k = kernels(dev)?;
    k.upload(fields)?;
    k.take_timings();
    params.iter().map(|p| measure(k.as_mut(), seeds, p, repeats, !dev.is_cpu())).collect()
}
