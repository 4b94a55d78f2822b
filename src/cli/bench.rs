//! `neuroport bench <method>`: a method's kernel speed on every selected device (device-event
//! times, median of repeats after a warm-up). Each method adds its variant to `Command`.

use super::Ctx;
use anyhow::{bail, Result};
use neuroport::dti::bench;

#[derive(clap::Subcommand)]
pub enum Command {
    /// DTI: tensor fit, scalar maps, metric preparation and sharpened metric (voxels/s, ms per
    /// million voxels, and voxels/s per core on the cpu backend)
    Dti(DtiArgs),
    /// Ball-and-sticks MCMC: voxel-loops per second of every kernel layout (and the time of
    /// 003's Table III dataset 1 at that rate)
    Bedpost(super::bench_bedpost::Args),
}

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

pub fn run(ctx: &Ctx, cmd: Command) -> Result<i32> {
    match cmd {
        Command::Dti(a) => dti(ctx, a),
        Command::Bedpost(a) => super::bench_bedpost::run(ctx, a),
    }
}

fn dti(ctx: &Ctx, a: DtiArgs) -> Result<i32> {
    if a.voxels == 0 || a.repeats == 0 {
        bail!("--voxels and --repeats must be positive");
    }
    let devices = ctx.inventory.select(&ctx.backend_or_all(), true)?;
    let mut rows = Vec::new();
    for d in &devices {
        rows.extend(bench::measure(d, a.voxels, a.repeats, a.seed)?);
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
    } else {
        print!("{}", bench::table(&rows));
        println!("device-event times (wall clock on the cpu backend), median of {} runs after a warm-up", a.repeats);
    }
    Ok(0)
}
