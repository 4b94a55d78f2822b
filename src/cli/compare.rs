use super::Ctx;
use anyhow::{bail, Result};
use neuroport::repro;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// Result CSVs written by `reproduce` (on different machines, say)
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Output folder
    #[arg(long, default_value = "compare-out")]
    out: PathBuf,
    /// Name of the merged table
    #[arg(long, default_value = "compare")]
    name: String,
}

pub fn run(_ctx: &Ctx, a: Args) -> Result<i32> {
    let mut rows = Vec::new();
    for f in &a.files {
        rows.extend(repro::read_csv(f)?);
    }
    if rows.is_empty() {
        bail!("the result files hold no rows");
    }
    for p in repro::write_merged(rows, &a.out, &a.name)? {
        println!("{}", p.display());
    }
    Ok(0)
}
