use super::Ctx;
use anyhow::{Context, Result};
use neuroport::repro::{self, RunCtx, Scale};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// Tables to rerun (e.g. geodesic-prep geodesic-t3), or `all`
    #[arg(required = true)]
    tables: Vec<String>,
    /// Problem sizes: the paper's, or quick ones for a smoke run
    #[arg(long, value_enum, default_value = "quick")]
    scale: Scale,
    /// Output folder: TABLE.csv, TABLE.md and TABLE.png of each table are written inside it
    /// (each table's three files together, as soon as it finishes)
    #[arg(long, default_value = "repro-out")]
    out: PathBuf,
    /// Timed repeats after one warm-up (the median is reported)
    #[arg(long, default_value_t = 3)]
    repeats: usize,
    /// Seed of the synthetic data
    #[arg(long, default_value_t = 2011)]
    seed: u64,
}

pub fn run(ctx: &Ctx, a: Args) -> Result<i32> {
    repro::check_repeats(a.repeats)?;
    let targets = repro::select(&a.tables)?;
    neuroport::volume::check_free(targets.iter().flat_map(|t| repro::report_paths(t.id(), &a.out)))?;
    let devices = ctx.inventory().select(&ctx.backend_or_all(), true)?;
    eprintln!("devices: {}", devices.iter().map(|d| d.label()).collect::<Vec<_>>().join(", "));
    for n in &ctx.inventory().notes {
        eprintln!("{n}");
    }
    let rc = RunCtx { devices: &devices, inventory: ctx.inventory(), scale: a.scale, repeats: a.repeats, seed: a.seed };
    let mut failed = Vec::new();
    for t in targets {
        eprintln!("{}: {}", t.id(), t.title());
        match t.run(&rc).with_context(|| format!("table {}", t.id())) {
            Ok(mut report) => {
                repro::stamp(&mut report, &rc);
                let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
                report.notes.extend(repro::threads_note(&report, &devices, cores));
                super::print_out(&format!("{}\n", repro::write::to_markdown(&report)))?;
                for p in repro::write(&report, &a.out)? {
                    eprintln!("wrote {}", p.display());
                }
            }
            Err(e) => {
                eprintln!("error: {e:#}");
                failed.push(t.id());
            }
        }
    }
    if !failed.is_empty() {
        anyhow::bail!("{} table(s) failed: {}", failed.len(), failed.join(", "));
    }
    Ok(0)
}
