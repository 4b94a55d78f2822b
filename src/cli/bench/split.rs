//! `neuroport bench split`: how bedpost, geodesic tracing and probtrack scale over the devices of
//! a list (`--backend gpus`, `cuda:0,cuda:1,...`): wall time of the split phase on the first 1, 2,
//! 4 ... devices, speed-up and efficiency against one (neuroport::repro::scaling).

use crate::cli::Ctx;
use anyhow::{bail, Result};
use neuroport::io::table::aligned;
use neuroport::repro::{scaling, Scale};

#[derive(clap::Args)]
pub struct Args {
    /// Workloads: bedpost-pipeline, bedpost-t3, geodesic, probtrack (default: all)
    #[arg(long, value_delimiter = ',')]
    workloads: Vec<String>,
    /// paper: the papers' sizes; quick: small inputs (CI)
    #[arg(long, value_enum, default_value = "paper")]
    scale: Scale,
    #[command(flatten)]
    runs: super::Runs,
}

pub fn run(ctx: &Ctx, a: Args) -> Result<i32> {
    neuroport::repro::check_distinct("--workloads", &a.workloads, |w| w.clone())?;
    if a.runs.repeats == 0 {
        bail!("--repeats must be positive");
    }
    let devices = ctx.inventory().select_split(&ctx.backend)?;
    let workloads = if a.workloads.is_empty() { scaling::WORKLOADS.map(String::from).to_vec() } else { a.workloads.clone() };
    let points = scaling::run(&devices, &workloads, a.scale, a.runs.repeats, a.runs.seed, &|m| eprintln!("  {m}"))?;
    if a.runs.json {
        println!("{}", serde_json::to_string_pretty(&points)?);
        return Ok(0);
    }
    // The whole run's efficiency beside the split phase's: what the devices do not share (bedpost's
    // tensor fit and chains' start) shows there.
    let run_eff = |p: &scaling::Point| {
        let one = points.iter().find(|q| q.workload == p.workload && q.devices == 1);
        one.map_or("-".to_string(), |q| format!("{:.0} %", 100.0 * q.run_s / (p.devices as f64 * p.run_s)))
    };
    let rows: Vec<Vec<String>> = points
        .iter()
        .map(|p| vec![p.workload.clone(), p.devices.to_string(), format!("{:.3}", p.run_s), format!("{:.3}", p.split_s), format!("{:.2}x", p.speedup), format!("{:.0} %", 100.0 * p.efficiency), run_eff(p)])
        .collect();
    print!("{}", aligned(&["workload", "devices", "run s", "split s", "speed-up", "efficiency", "run efficiency"], &rows));
    println!("devices: {}", devices.iter().map(|d| d.label()).collect::<Vec<_>>().join("; "));
    Ok(0)
}
