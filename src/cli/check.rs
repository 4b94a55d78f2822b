use super::Ctx;
use anyhow::Result;
use neuroport::check::run_all;

#[derive(clap::Args)]
pub struct Args {
    /// Seed of the random inputs (default: drawn from the clock, printed)
    #[arg(long)]
    seed: Option<u64>,
    /// Print JSON instead of a table
    #[arg(long)]
    json: bool,
}

pub fn run(ctx: &Ctx, a: Args) -> Result<i32> {
    let spec = ctx.backend_or_all();
    let devices = ctx.inventory().select(&spec, true)?;
    // "all" that silently checked the CPU alone would read as a pass for devices never tried.
    let unavailable: Vec<&String> = if spec == neuroport::BackendSpec::All { ctx.inventory().notes.iter().collect() } else { Vec::new() };
    let reference = ctx.inventory().open_cpu()?;
    let seed = a.seed.unwrap_or_else(|| std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(1));
    let rows = run_all(&devices, &reference, seed);
    let failed = rows.iter().filter(|r| !r.pass).count();
    if a.json {
        super::print_out(&format!("{}\n", serde_json::to_string_pretty(&serde_json::json!({ "seed": seed, "unavailable": unavailable, "rows": rows }))?))?;
    } else {
        let names: Vec<String> = devices.iter().map(|d| d.label()).collect();
        let unavailable: Vec<String> = unavailable.into_iter().cloned().collect();
        super::print_out(&neuroport::check::text(&rows, seed, &names, &unavailable))?;
    }
    Ok(if failed == 0 { 0 } else { 1 })
}
