//! `neuroport bench dti`: the DTI kernels' speed per device.

use crate::cli::Ctx;
use anyhow::{bail, Result};
use neuroport::dti::bench;

#[derive(clap::Args)]
pub struct DtiArgs {
    /// Voxels per run (rounded up to whole 64 x 64 slices)
    #[arg(long, default_value_t = 1 << 18)]
    voxels: usize,
    /// Timed runs after one warm-up; the median is reported
    #[arg(long, default_value_t = 5)]
    repeats: usize,
    /// Seed of the synthetic input
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print JSON instead of a table
    #[arg(long)]
    json: bool,
}

pub fn dti(ctx: &Ctx, a: DtiArgs) -> Result<i32> {
    if a.voxels == 0 || a.repeats == 0 {
        bail!("--voxels and --repeats must be positive");
    }
    let devices = ctx.inventory().select(&ctx.backend_or_all(), true)?;
    let mut rows = Vec::new();
    for d in &devices {
        rows.extend(bench::measure(d, a.voxels, a.repeats, a.seed)?);
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
    } else {
        print!("{}", bench::table(&rows));
        println!("device-event times (wall clock on the cpu backend), {} after a warm-up", neuroport::repro::median_of(a.repeats));
    }
    Ok(0)
}
