//! `neuroport bench nifti`: NIfTI read and write throughput (MB/s of raw voxel data) on this
//! machine's disk and cores: read, .nii.gz write on 1 core and on N cores, and .nii write.

use super::super::Ctx;
use anyhow::{anyhow, Result};
use neuroport::volume::{read_nifti, write_nifti};
use std::path::PathBuf;
use std::time::Instant;

#[derive(clap::Args)]
pub struct NiftiArgs {
    /// Volume to read (and write back to a scratch folder)
    #[arg(long)]
    input: PathBuf,
    /// Scratch folder for the written copies (default: the system temp folder)
    #[arg(long)]
    scratch: Option<PathBuf>,
    /// Core counts to compress with, comma-separated (default: 1 and all cores)
    #[arg(long, value_delimiter = ',')]
    cores: Option<Vec<usize>>,
    /// Only read (for peak-memory measurements with /usr/bin/time -v)
    #[arg(long)]
    read_only: bool,
    /// Repeats of each measurement (the best is reported)
    #[arg(long, default_value_t = 3)]
    repeats: usize,
}

fn best<T>(repeats: usize, mut f: impl FnMut() -> Result<T>) -> Result<f64> {
    let mut b = f64::INFINITY;
    for _ in 0..repeats.max(1) {
        let t = Instant::now();
        f()?;
        b = b.min(t.elapsed().as_secs_f64());
    }
    Ok(b)
}

/// The read's note when a one-member gzip file was inflated in pieces since `before`.
fn pieces(before: usize) -> &'static str {
    if neuroport::volume::split_reads() > before { "  [one gzip member, inflated in pieces on every core]" } else { "" }
}

pub fn run(ctx: &Ctx, a: NiftiArgs) -> Result<i32> {
    ctx.warn_unused_device_options("bench nifti", "times the disk and the host's cores (--cores)");
    neuroport::repro::check_repeats(a.repeats)?;
    // A pool of 0 threads is rayon's default (every core), printed as "0 cores".
    if let Some(c) = a.cores.as_ref().and_then(|c| c.iter().find(|&&c| c == 0 || c > 1024)) {
        anyhow::bail!("--cores takes core counts from 1 to 1024, not {c}");
    }
    neuroport::repro::check_distinct("--cores", a.cores.as_deref().unwrap_or_default(), |c| c.to_string())?;
    // Before any output: tempfile_dir's create_dir_all would make a mistyped --scratch and its
    // parents, and leave them.
    if let Some(b) = a.scratch.as_ref().filter(|b| !b.is_dir()) {
        anyhow::bail!("--scratch {}: no such folder", b.display());
    }
    if a.read_only {
        // One read and nothing else held: the process's peak memory is the read's.
        let (t, before) = (Instant::now(), neuroport::volume::split_reads());
        let v = read_nifti(&a.input)?;
        let s = t.elapsed().as_secs_f64();
        let mb = (v.as_flat().len() * 4) as f64 / 1e6;
        println!("read                 {s:7.3} s  {:7.0} MB/s  ({mb:.0} MB float32){}", mb / s, pieces(before));
        return Ok(0);
    }
    let v = read_nifti(&a.input)?;
    let mb = (v.as_flat().len() * 4) as f64 / 1e6;
    let on_disk = std::fs::metadata(&a.input).map(|m| m.len() as f64 / 1e6).unwrap_or(0.0);
    println!("{}: {:?} x {} volumes, {mb:.0} MB float32 ({on_disk:.0} MB on disk)", a.input.display(), v.geom.dims, v.nvol());
    let before = neuroport::volume::split_reads();
    let s = best(a.repeats, || read_nifti(&a.input))?;
    println!("read                 {s:7.3} s  {:7.0} MB/s{}", mb / s, pieces(before));
    let dir = tempfile_dir(a.scratch.as_deref())?;
    let all = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let cores = a.cores.clone().unwrap_or(if all > 1 { vec![1, all] } else { vec![1] });
    let gz = dir.join("copy.nii.gz");
    let mut one = None;
    for &c in &cores {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(c.max(1)).build().map_err(|e| anyhow!("thread pool: {e}"))?;
        let s = pool.install(|| best(a.repeats, || write_nifti(&gz, &v.geom, v.nvol(), v.as_flat())))?;
        let size = std::fs::metadata(&gz).map(|m| m.len() as f64 / 1e6).unwrap_or(0.0);
        // Against the first count of --cores, which is 1 only by default.
        let speedup = one.map(|(o, n): (f64, usize)| format!("  {:.2}x {}", o / s, if n == 1 { "one core".into() } else { format!("{n} cores") })).unwrap_or_default();
        one.get_or_insert((s, c));
        println!("write .nii.gz {c:>3} cores {s:7.3} s  {:7.0} MB/s  ({size:.0} MB){speedup}", mb / s);
    }
    let nii = dir.join("copy.nii");
    let s = best(a.repeats, || write_nifti(&nii, &v.geom, v.nvol(), v.as_flat()))?;
    println!("write .nii           {s:7.3} s  {:7.0} MB/s", mb / s);
    let s = best(a.repeats, || read_nifti(&gz))?;
    println!("read our .nii.gz     {s:7.3} s  {:7.0} MB/s", mb / s);
    Ok(0)
}

/// The scratch folder, removed with its copies however the benchmark ends: a write failing on a
/// full disk returned early and left it holding a partial copy. Watched for signals too.
struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
        neuroport::volume::forget_scratch(&self.0);
    }
}

fn tempfile_dir(base: Option<&std::path::Path>) -> Result<Scratch> {
    let base = base.map(|b| b.to_path_buf()).unwrap_or_else(std::env::temp_dir);
    let d = base.join(format!("neuroport-bench-nifti-{}", std::process::id()));
    // Watched before it exists, so no moment has it on disk and unwatched.
    neuroport::volume::register_scratch(&d);
    let d = Scratch(d);
    std::fs::create_dir_all(&d.0).map_err(|e| anyhow!("cannot create {}: {}", d.display(), neuroport::volume::plain_io(&e)))?;
    Ok(d)
}
