//! `neuroport bench layer`: what the GPU host layer itself costs on each GPU device.

use crate::cli::Ctx;
use anyhow::{bail, Result};
use neuroport::runtime::gpu::{bench, Gpu};
use neuroport::runtime::Device;

#[derive(clap::Args)]
pub struct Args {
    /// Empty-kernel launches per measurement
    #[arg(long, default_value_t = 20_000)]
    launches: usize,
    /// Bytes per copy measurement
    #[arg(long, default_value_t = 1 << 30)]
    bytes: usize,
}

pub fn run(ctx: &Ctx, a: Args) -> Result<i32> {
    if a.launches < 10 || a.bytes < 4 {
        bail!("--launches must be at least 10 and --bytes at least 4");
    }
    // Before the table's header: a size beyond memory is the whole output, one error line.
    neuroport::runtime::memory::room_for(&format!("--bytes {}", a.bytes), a.bytes, 3)?;
    // The CPU backend has no GPU layer: with only it selected the table would be a bare header.
    let devs: Vec<Device> = ctx.inventory().select(&ctx.backend_or_all(), true)?.into_iter().filter(|d| !d.is_cpu()).collect();
    if devs.is_empty() {
        let what = if ctx.backend == neuroport::BackendSpec::Cpu { "which --backend cpu does not have: give opencl, cuda or all" } else { "and this machine has no OpenCL or CUDA device (neuroport devices says why)" };
        bail!("bench layer times the GPU host layer, {what}");
    }
    println!("{:<44} {:>14} {:>14} {:>10} {:>10} {:>14} {:>14}", "device", "launches/s", "launch+wait/s", "up GB/s", "down GB/s", "pin up GB/s", "pin down GB/s");
    for dev in devs {
        let gpu = Gpu::require(&dev)?;
        let r = bench::measure(&gpu, a.launches, a.bytes)?;
        println!(
            "{:<44} {:>14.3e} {:>14.3e} {:>10.1} {:>10.1} {:>14.1} {:>14.1}",
            dev.label(),
            r.launches_async_per_s,
            r.launches_sync_per_s,
            r.upload_gb_s,
            r.download_gb_s,
            r.pinned_up_gb_s,
            r.pinned_down_gb_s
        );
    }
    println!("best of 3 after a warm-up; up/down: ordinary host memory through the layer's pinned staging; pin: a pinned buffer copied directly");
    Ok(0)
}
