//! `neuroport bench probtrack`: steps/s of probabilistic streamlining on every selected device
//! for a fixed workload (a Table II row of 003 on the `probtrack-t2` stand-in), device time and
//! wall time apart, with the memory floor of the workload (src/probtrack/bench.rs).

use crate::cli::Ctx;
use anyhow::{bail, Result};
use neuroport::bedpost::repro::{PAPER, QUICK};
use neuroport::io::table::aligned;
use neuroport::probtrack::bench::{measure, BYTES_PER_STEP};
use neuroport::probtrack::repro::{data, MAX_STEPS, NSAMP};
use neuroport::probtrack::{Compaction, Config, Schedule};

#[derive(clap::Args)]
pub struct Args {
    /// Stand-in dataset of 003 Table II (1 or 2)
    #[arg(long, default_value_t = 2)]
    dataset: u32,
    /// The small grids of `--scale quick` instead of the paper's
    #[arg(long)]
    quick: bool,
    /// Step in voxels (003's unit)
    #[arg(long, default_value_t = 0.1)]
    step: f32,
    /// Angular threshold (smallest cosine between steps)
    #[arg(long, default_value_t = 0.9)]
    threshold: f32,
    /// Segments per launch, as probtrack's --schedule: a list (1,2,5,...), A<k>, A_MaxStep, B or C
    #[arg(long, default_value = "1,2,5,10,20,50,100,200,500,1000")]
    schedule: Schedule,
    /// Compaction paths to measure (default: device on GPUs; the CPU has one)
    #[arg(long, value_enum, value_delimiter = ',', default_value = "device")]
    compaction: Vec<Compaction>,
    /// Also measure with two batches in flight (--overlap)
    #[arg(long)]
    overlap: bool,
    /// On CPU-like devices (native CPU, OpenCL CPUs) seed 1 voxel in this many; steps/s is a rate
    #[arg(long, default_value_t = 16)]
    cpu_every: usize,
    /// Memory bandwidth for the floor, GB/s (H100 SXM HBM3: 3350)
    #[arg(long, default_value_t = 3350.0)]
    bandwidth: f64,
    /// No warm-up run (so a profiler's first launches are the measured run's)
    #[arg(long)]
    no_warmup: bool,
    #[command(flatten)]
    runs: super::Runs,
}

pub fn run(ctx: &Ctx, a: Args) -> Result<i32> {
    neuroport::repro::check_repeats(a.runs.repeats)?;
    neuroport::repro::check_distinct("--compaction", &a.compaction, |c| c.name().into())?;
    let sets = if a.quick { QUICK } else { PAPER };
    let Some(ds) = sets.iter().find(|d| d.id == a.dataset) else { bail!("--dataset is 1 or 2, not {}", a.dataset) };
    if a.cpu_every == 0 || !a.bandwidth.is_finite() || a.bandwidth <= 0.0 {
        bail!("--cpu-every and --bandwidth must be positive");
    }
    neuroport::probtrack::bench::check_options(a.step, a.threshold, ds.dims)?;
    let devices = ctx.inventory().select(&ctx.backend_or_all(), true)?;
    let (field, seeds) = data(ds, a.runs.seed);
    let mut rows = Vec::new();
    let mut json = Vec::new();
    for dev in &devices {
        let gpu = dev.info().is_gpu;
        let sub: Vec<u32> = seeds.iter().step_by(if gpu { 1 } else { a.cpu_every }).copied().collect();
        let hows: Vec<Compaction> = if dev.is_cpu() { vec![Compaction::Host] } else { a.compaction.clone() };
        for how in hows {
            for overlap in if a.overlap && !dev.is_cpu() { vec![false, true] } else { vec![false] } {
                let cfg = Config {
                    nsamples: NSAMP,
                    step_mm: a.step * ds.voxel_mm,
                    min_cos: a.threshold,
                    max_steps: MAX_STEPS,
                    schedule: a.schedule.clone(),
                    jitter: false,
                    compaction: how,
                    overlap,
                    ..Config::default()
                };
                let m = measure(dev, &field, &sub, &cfg, a.runs.repeats, !a.no_warmup)?;
                let floor = m.floor_ms(a.bandwidth);
                let variant = format!("{}{}", if dev.is_cpu() { "cpu".to_string() } else { how.name().to_string() }, if overlap { "+overlap" } else { "" });
                rows.push(vec![
                    dev.label(),
                    variant.clone(),
                    m.seeds.to_string(),
                    format!("{:.3e}", m.steps as f64),
                    format!("{}/{}", m.launches, m.batches),
                    format!("{:.2}", m.trace_kernel_ms),
                    format!("{:.2}", m.compact_kernel_ms + m.compact_host_ms),
                    format!("{:.2}", m.transfer_ms),
                    format!("{:.2}", m.tally_kernel_ms),
                    format!("{:.2}", m.tally_ms),
                    format!("{:.2}", m.wall_ms),
                    format!("{:.3e}", m.steps_per_s_kernel()),
                    format!("{:.3e}", m.steps_per_s_wall()),
                    format!("{floor:.2}"),
                ]);
                json.push(serde_json::json!({ "device": dev.info(), "variant": variant, "measured": m, "steps_per_s_kernel": m.steps_per_s_kernel(), "steps_per_s_wall": m.steps_per_s_wall(), "floor_ms": floor }));
            }
        }
    }
    if a.runs.json {
        println!("{}", serde_json::to_string_pretty(&json)?);
        return Ok(0);
    }
    println!(
        "probtrack steps/s: dataset {} stand-in ({}x{}x{}, {} seeds x {NSAMP} streamlines x 2 halves; 1 seed in {} on CPU-like devices), step {} voxel, threshold {}, schedule {}, max {MAX_STEPS} steps; wall, {} after a warm-up",
        ds.id, ds.dims[0], ds.dims[1], ds.dims[2], seeds.len(), a.cpu_every, a.step, a.threshold, a.schedule.name(), neuroport::repro::median_of(a.runs.repeats)
    );
    print!(
        "{}",
        aligned(
            &[
                "device",
                "compaction",
                "seeds",
                "steps",
                "launches/batches",
                "trace kernel ms",
                "compaction ms",
                "transfer ms",
                "tally kernel ms",
                "tally ms",
                "wall ms",
                "steps/s (kernels)",
                "steps/s (wall)",
                "floor ms"
            ],
            &rows
        )
    );
    println!(
        "trace kernel: start + segment launches (device events; CPU: wall of the parallel loops); compaction: device scan or host reduction; transfer includes the one-off upload of every sample volume; tally: the results turned into counts on the device (kernel) and its wall with the keep bits' copy and the counters' download; floor: {BYTES_PER_STEP} B/step + 104 B/path at {} GB/s (the workload's least memory traffic; see src/probtrack/bench.rs)",
        a.bandwidth
    );
    Ok(0)
}
