use super::Ctx;
use anyhow::{bail, Result};
use neuroport::repro;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// Result CSVs written by `reproduce` (on different machines, say)
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Output folder (NAME.csv, NAME.md and NAME.png are written inside it)
    #[arg(long, default_value = "compare-out")]
    out: PathBuf,
    /// Name of the merged table and of its files inside --out (a plain file name)
    #[arg(long, default_value = "compare")]
    name: String,
}

pub fn run(ctx: &Ctx, a: Args) -> Result<i32> {
    ctx.warn_unused_device_options("compare", "merges result files and runs nothing");
    // NAME.csv, .md and .png go inside --out: a name holding a folder would put them elsewhere
    // (`../x` beside --out, `/x` at the root), and an empty one makes hidden `.csv` files.
    if a.name.is_empty() || a.name.contains('/') || a.name.contains(std::path::MAIN_SEPARATOR) {
        bail!("--name must be a plain file name (the files go inside --out), not '{}'", a.name);
    }
    repro::check_outputs_are_not_inputs(&a.files, &a.out, &a.name)?;
    neuroport::volume::check_free(repro::report_paths(&a.name, &a.out))?;
    let (rows, notes) = repro::merge(&a.files)?;
    if rows.is_empty() {
        bail!("the result files hold no rows");
    }
    for n in notes.iter().filter(|n| n.starts_with("warning:")) {
        eprintln!("{n}");
    }
    for p in repro::write_merged(rows, notes, &a.out, &a.name)? {
        super::print_out(&format!("{}\n", p.display()))?;
    }
    Ok(0)
}
