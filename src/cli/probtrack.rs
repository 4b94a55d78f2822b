use super::Ctx;
use neuroport::runtime::stages::stage;
use anyhow::{bail, Context, Result};
use neuroport::probtrack::{self, output, Compaction, Config, Field, Schedule};
use neuroport::volume::check_free;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// bedpost output folder (merged_{th,ph,f}{1,2}samples.nii.gz, or .nii)
    #[arg(long)]
    bedpost: PathBuf,
    /// Seed mask: every non-zero voxel is seeded
    #[arg(long)]
    seeds: PathBuf,
    /// Tracking mask (default: the folder's nodif_brain_mask, else mean_f1samples > 0)
    #[arg(long)]
    mask: Option<PathBuf>,
    /// Target masks: seeds_to_<stem>.nii.gz each and matrix_seeds_to_all_targets.csv
    #[arg(long, value_delimiter = ',')]
    targets: Vec<PathBuf>,
    /// Waypoint masks: keep only streamlines through every one
    #[arg(long, value_delimiter = ',')]
    waypoints: Vec<PathBuf>,
    /// Exclusion mask: discard streamlines that enter it
    #[arg(long)]
    exclusion: Option<PathBuf>,
    /// Streamlines per seed voxel, cycling through the sample volumes
    #[arg(long, default_value_t = 5000)]
    nsamples: usize,
    /// Step length in mm
    #[arg(long, default_value_t = 0.5)]
    step: f32,
    /// Curvature threshold: smallest cosine between successive steps
    #[arg(long, default_value_t = 0.2)]
    curvature: f32,
    /// Steps per half-streamline at most (1 to 10^8: the length histograms hold ~50 bytes a step)
    #[arg(long, default_value_t = 2000)]
    max_steps: usize,
    /// Segments per launch: a list (1,2,5,...), A<k>, A_MaxStep, B or C (paper 003); the result never depends on it
    #[arg(long, default_value = "1,2,5,10,20,50,100,200,500,1000")]
    schedule: Schedule,
    /// Volume fraction below which a stick is ignored
    #[arg(long, default_value_t = 0.01)]
    fibthresh: f32,
    /// Read each step's sample at the nearest voxel instead of probtrackx's random sub-voxel choice
    #[arg(long)]
    no_jitter: bool,
    /// Where unfinished paths are compacted between segments on OpenCL/CUDA: device (default) or
    /// host (003's); the cpu backend compacts in memory whichever is given (and warns)
    #[arg(long, value_enum)]
    compaction: Option<Compaction>,
    /// Two batches in flight on two GPU queues, the host work of one overlapping the kernels of
    /// the other (003 Fig. 8); same output as without. OpenCL/CUDA only (the cpu backend warns)
    #[arg(long)]
    overlap: bool,
    /// Seed of the random sub-voxel choice (same seed, same output)
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Also write the kept streamlines (world mm) as MRtrix .tck
    #[arg(long)]
    out_tck: Option<PathBuf>,
    /// Output folder: fdt_paths, waytotal, seeds_to_*, matrix_seeds_to_all_targets.csv, lengths.csv
    #[arg(long)]
    out: PathBuf,
}

pub fn run(ctx: &Ctx, a: Args) -> Result<i32> {
    // Devices are discovered on their own thread meanwhile; a misused --backend is said first.
    neuroport::runtime::check_split_spec(&ctx.backend)?;
    if let Some(t) = &a.out_tck {
        neuroport::io::tck::require_tck_name(t)?;
    }
    // Existing outputs are refused before the samples are read and the streamlines traced.
    let stems: Vec<String> = a.targets.iter().map(|t| output::stem(t)).collect();
    check_free(output::file_names(&a.out, &stems, a.out_tck.as_deref()))?;
    // Its reading and the records are staged inside (read samples, records).
    let mut field = Field::from_bedpost(&a.bedpost, a.mask.as_deref(), Some(&a.seeds))?;
    let split = ctx.split()?;
    let seeds = stage("seeds", || field.seeds(&a.seeds))?;
    if let Some(x) = &a.exclusion {
        field.set_exclusion(x)?;
        field.warn_excluded_seeds(&seeds, &a.seeds, x);
    }
    for w in &a.waypoints {
        field.add_waypoint(w)?;
    }
    let mut names: Vec<String> = Vec::new();
    for t in &a.targets {
        let name = output::stem(t);
        if names.contains(&name) {
            bail!("{}: two targets named '{name}'", t.display());
        }
        field.add_target(t, &name)?;
        names.push(name);
    }
    // The library says what is odd; the command prints it.
    if let Some(w) = probtrack::unused_option_warning(&split, a.compaction, a.overlap) {
        eprintln!("{w}");
    }
    let cfg = Config {
        nsamples: a.nsamples,
        step_mm: a.step,
        min_cos: a.curvature,
        fibthresh: a.fibthresh,
        max_steps: a.max_steps,
        schedule: a.schedule,
        jitter: !a.no_jitter,
        seed: a.seed,
        compaction: a.compaction.unwrap_or(Compaction::Device),
        max_batch: None,
        overlap: a.overlap,
        progress: true,
    };
    let (t, shares) = stage("track", || probtrack::run_split(&split, &field, &seeds, &cfg)).with_context(|| format!("probtrack from {}", a.seeds.display()))?;
    let compaction = probtrack::compaction_label(&split, cfg.compaction);
    let done = super::Released::new(split);
    let p = cfg.params(&field, seeds.len(), true);
    let written = stage("write", || output::write(&t, &field, &seeds, &p, &a.out, a.out_tck.as_deref()))?;
    let steps_per_s = t.total_steps as f64 / t.stats.wall_ms.max(1e-9) * 1e3;
    let lengths = output::lengths_summary(&t.lengths);
    eprintln!(
        "{}: {} seeds x {} streamlines, waytotal {}; {} steps (longest half {}), {} launches ({}, {}); kernel {:.1} ms, compaction {:.1} ms, transfer {:.1} ms, tally {:.1} ms, wall {:.1} ms ({:.3e} steps/s of wall); {}",
        done.label,
        t.nseeds,
        t.nsamples,
        t.waytotal,
        t.total_steps,
        t.longest,
        t.stats.launches,
        cfg.schedule.name(),
        compaction,
        t.stats.trace.kernel_ms,
        t.stats.compact.total_ms(),
        t.stats.trace.transfer_ms + t.stats.compact.transfer_ms,
        t.stats.tally_ms,
        t.stats.wall_ms,
        steps_per_s,
        lengths
    );
    done.print_shares(&shares);
    for w in written {
        println!("{}", w.display());
    }
    Ok(0)
}
