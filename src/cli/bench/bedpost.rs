//! `neuroport bench bedpost`: voxel-loops per second of the MCMC kernels on every selected
//! device and layout.

use crate::cli::Ctx;
use anyhow::{bail, Result};
use neuroport::bedpost::bench::{self, measure, problem};
use neuroport::bedpost::Variant;

#[derive(clap::Args)]
pub struct Args {
    /// Voxels on GPUs
    #[arg(long, default_value_t = 205_082)]
    voxels: usize,
    /// Voxels on CPU devices (native and OpenCL CPUs): a rate needs fewer (at most --voxels)
    #[arg(long, default_value_t = 4_096)]
    cpu_voxels: usize,
    /// Loops per run (003: 500 burn-in + 50 samples x 2)
    #[arg(long, default_value_t = 600)]
    loops: usize,
    /// Kernel layouts to time on OpenCL/CUDA (naive, cached, moments, cached_moments, warp);
    /// default: all on GPUs, the device's default layout on OpenCL CPU devices
    #[arg(long, value_delimiter = ',')]
    variant: Vec<Variant>,
    #[command(flatten)]
    runs: super::Runs,
}

pub fn run(ctx: &Ctx, a: Args) -> Result<i32> {
    neuroport::repro::check_distinct("--variant", &a.variant, |v| v.name().into())?;
    if a.voxels == 0 || a.cpu_voxels == 0 || a.loops == 0 || a.runs.repeats == 0 {
        bail!("--voxels, --cpu-voxels, --loops and --repeats must be positive");
    }
    let devices = ctx.inventory().select(&ctx.backend_or_all(), true)?;
    let variants = if a.variant.is_empty() { Variant::ALL.to_vec() } else { a.variant.clone() };
    let big = devices.iter().any(|d| d.info().is_gpu).then(|| problem(a.voxels, a.runs.seed)).transpose()?;
    let small = problem(a.cpu_voxels.min(a.voxels), a.runs.seed)?;
    let mut rows = Vec::new();
    for d in &devices {
        let p = if d.info().is_gpu { big.as_ref().unwrap_or(&small) } else { &small };
        // the native CPU has one layout; OpenCL CPUs (PoCL) run the default unless asked
        let vs: Vec<Variant> = if d.is_cpu() || (!d.info().is_gpu && a.variant.is_empty()) { vec![Variant::default_for(d.info())] } else { variants.clone() };
        for v in vs {
            eprintln!("  bench bedpost on {} [{}]", d.label(), if d.is_cpu() { "cpu" } else { v.name() });
            match measure(d, v, p, a.loops, a.runs.repeats) {
                Ok(r) => rows.push(r),
                Err(e) => eprintln!("  {} [{}]: error: {e:#}", d.label(), v.name()),
            }
        }
    }
    if a.runs.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
    } else {
        print!("{}", bench::table(&rows));
        println!("kernel times from device events (wall clock on the cpu backend), {} after a warm-up launch; 4 b=0 + 64 directions, {} loops", neuroport::repro::median_of(a.runs.repeats), a.loops);
    }
    Ok(0)
}
