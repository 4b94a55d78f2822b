//! `neuroport track geodesic`: geodesic ray-tracing tractography (paper 001).

use super::Ctx;
use anyhow::{bail, Context, Result};
use neuroport::geodesic::{self, output, seeding, Interp, Method, TraceParams};
use neuroport::runtime::split::Split;
use neuroport::runtime::stages::stage;
use neuroport::volume::{check_free, read_mask_like, Outputs};
use neuroport::{dti, Device};
use std::path::Path;
use std::path::PathBuf;

#[derive(clap::Subcommand)]
pub enum Command {
    /// Fibres as geodesics of G = D^-1 (van Aart et al. 2011), RK2 or Euler on the Christoffel-symbol ODE
    Geodesic(GeodesicArgs),
}

#[derive(clap::Args)]
pub struct GeodesicArgs {
    #[command(flatten)]
    input: super::dwi_args::TensorInput,
    /// Tracking mask: fibres stop where they leave it (default: voxels with a fitted tensor); on
    /// the input's grid (same size and affine), as every ROI below
    #[arg(long)]
    mask: Option<PathBuf>,
    /// Seed ROI: seed points at its voxel centres (or --seed-count random points inside it)
    #[arg(long, required_unless_present = "seed_file", conflicts_with = "seed_file")]
    seeds: Option<PathBuf>,
    /// Explicit fibres, one per row: x,y,z,dx,dy,dz in world millimetres (header row allowed)
    #[arg(long)]
    seed_file: Option<PathBuf>,
    /// Directions per seed point: uniform on the sphere, or in a cone around V1 with --cone
    #[arg(long, default_value_t = 1)]
    dirs: usize,
    /// Half-angle (degrees) of the cone around V1 that directions are drawn from
    #[arg(long, requires = "seeds")]
    cone: Option<f64>,
    /// Draw this many seed points uniformly inside the ROI instead of one per voxel centre
    #[arg(long, requires = "seeds")]
    seed_count: Option<usize>,
    /// Random seed for seed points and directions (same seed, same fibres)
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Step h in voxels (001: 0.1-0.2 typical)
    #[arg(long, default_value_t = 0.1)]
    step: f32,
    /// Largest number of steps per fibre
    #[arg(long, default_value_t = 2000)]
    max_steps: u32,
    /// Write every Nth point of each fibre and its last, as tckgen's -downsample (at the default
    /// step of 0.1 voxel a whole-brain tractogram of every point runs to gigabytes)
    #[arg(long, default_value_t = 1)]
    downsample: u32,
    /// Target ROI: keep only fibres that pass through it, ranked by the connectivity measure
    #[arg(long)]
    target: Option<PathBuf>,
    /// Interpolation on GPU backends (default: texture on GPUs with image support, else in-kernel)
    #[arg(long, value_enum)]
    interp: Option<Interp>,
    /// Integration of the geodesic equation
    #[arg(long, value_enum, default_value_t = Method::Rk2)]
    method: Method,
    /// Optional stop beyond the paper: FA floor (voxels below it leave the mask)
    #[arg(long)]
    min_fa: Option<f32>,
    /// Optional stop beyond the paper: largest turn per step, degrees
    #[arg(long)]
    max_angle: Option<f32>,
    /// Output file: a tractogram, .tck (MRtrix) or .trk (TrackVis); a CSV of the fibres is
    /// written beside it (same name, .csv)
    #[arg(long)]
    out: PathBuf,
}

pub fn run(ctx: &Ctx, cmd: Command) -> Result<i32> {
    match cmd {
        Command::Geodesic(a) => geodesic_run(ctx, a),
    }
}

/// How the devices interpolate: one name, or each device's.
fn interp_label(split: &Split, interp: Option<Interp>) -> String {
    let one = |d: &Device| if d.is_cpu() { "float64 reference" } else { interp.unwrap_or_else(|| Interp::default_for(d.info())).label() };
    let mut names: Vec<&str> = Vec::new();
    for n in split.devices().iter().map(one) {
        if !names.contains(&n) {
            names.push(n);
        }
    }
    names.join(" + ")
}

/// The tracking mask's file, if given, as the tensor's reading names it.
fn mask_in(a: &GeodesicArgs) -> Option<(&Path, &str)> {
    a.mask.as_deref().map(|m| (m, "tracking mask"))
}

fn geodesic_run(ctx: &Ctx, a: GeodesicArgs) -> Result<i32> {
    output::Format::of(&a.out)?;
    if !(a.step > 0.0 && a.step.is_finite()) {
        bail!("--step must be a positive number of voxels, not {}", a.step);
    }
    if a.max_steps == 0 || a.dirs == 0 || a.seed_count == Some(0) || a.downsample == 0 {
        bail!("--max-steps, --dirs, --seed-count and --downsample must be at least 1");
    }
    if let Some(c) = a.cone.filter(|c| !(*c > 0.0 && *c <= 180.0)) {
        bail!("--cone must be a half-angle in (0, 180] degrees, not {c}");
    }
    // The optional stops: NaN passed every comparison's other side (--min-fa NaN left no voxel
    // in the mask, --max-angle NaN stopped nothing), and a negative turn acted as its opposite.
    if let Some(f) = a.min_fa.filter(|f| !(0.0..=1.0).contains(f)) {
        bail!("--min-fa must be an FA between 0 and 1, not {f}");
    }
    if let Some(d) = a.max_angle.filter(|d| !(*d > 0.0 && *d <= 180.0)) {
        bail!("--max-angle must be a turn in (0, 180] degrees, not {d}");
    }
    check_free([a.out.as_path(), output::csv_path(&a.out).as_path()])?;
    // A tensor file is read while the devices are found (discovery, and the GPU's opening, run
    // on their own thread); a DWI is fitted, and the metric fields are prepared, on the first
    // device.
    let read = if a.input.tensor.is_some() { stage("read tensor", || a.input.read_tensor(mask_in(&a))) } else { None }.transpose()?;
    let split = ctx.split()?;
    if let Some(w) = geodesic::unused_interp_warning(&split, a.interp) {
        eprintln!("{w}");
    }
    let device = split.first().clone();
    let (mut tensor, geom, source, usable, taken) = match read {
        Some(t) => t,
        None => stage("fit tensor", || a.input.load(&device, mask_in(&a)))?,
    };
    // A fitted tensor is already repaired; a read one may not be positive definite.
    let repaired = if a.input.tensor.is_some() { dti::repair_tensors(&mut tensor) } else { 0 };
    let dims = geom.dims;
    let nvox = geom.nvox();
    let longest = dims.iter().map(|&d| d as f32).fold(0.0, f32::max);
    if a.step > longest {
        bail!("--step {} voxels is longer than the volume ({}x{}x{} voxels): every fibre would end after one step", a.step, dims[0], dims[1], dims[2]);
    }
    let like = |p: &Path, what: &str| read_mask_like(p, &geom, &source, what);
    // The voxels whose tensor was NaN/Inf are not in `usable`: taken out of either mask.
    let mut mask = match &a.mask {
        Some(_) => usable,
        None => (0..nvox).map(|v| usable[v] & (tensor[v] + tensor[3 * nvox + v] + tensor[5 * nvox + v] > 0.0) as u8).collect(),
    };
    if !mask.contains(&1) {
        bail!("{}: no voxel has a fitted tensor, so there is nothing to track in", source.display());
    }
    if let Some(fa_min) = a.min_fa {
        let sc = dti::kernels(&device)?.scalars(&tensor)?;
        for v in 0..nvox {
            mask[v] &= (sc[v] >= fa_min) as u8;
        }
    }
    let target = a.target.as_ref().map(|t| like(t, "target ROI")).transpose()?;
    let mut r = neuroport::synth::rng(a.seed);
    let seeds = stage("seeds", || -> Result<_> {
        Ok(match (&a.seeds, &a.seed_file) {
            (Some(roi), _) => {
                let roi_mask = like(roi, "seed ROI")?;
                let pts = seeding::roi_points(&roi_mask, dims, a.seed_count, &mut r).with_context(|| roi.display().to_string())?;
                let dirs = a.cone.map_or(seeding::Directions::Sphere, seeding::Directions::Cone);
                seeding::seeds_at(&pts, a.dirs, dirs, &geom, &tensor, &mut r)?
            }
            (None, Some(f)) => seeding::read_seed_file(f, &geom)?,
            (None, None) => bail!("give --seeds ROI or --seed-file CSV"),
        })
    })?;
    let seed_source = a.seeds.as_ref().or(a.seed_file.as_ref()).expect("one of the two, checked above");
    stage("check seeds", || seeding::check_seeds(&seeds, &geom, &mask, &taken, seed_source))?;
    if let (Some(t), Some(path)) = (&target, &a.target) {
        seeding::check_target(t, &mask, path);
    }
    let (fields, _) = stage("prepare fields", || geodesic::prepare(&device, &tensor, &geom, &mask, target.as_deref()))?;
    let p = TraceParams { step: a.step, max_steps: a.max_steps, method: a.method, record: true, min_cos: a.max_angle.map_or(-2.0, |d| d.to_radians().cos()), every: a.downsample, ..Default::default() };
    let mut out = Outputs::new();
    // Every fibre in seed order to a .tck: each batch (on one device) or run of fibres (split)
    // is written while the next traces. A target ranks the fibres, so all are traced first.
    let streamed = target.is_none() && output::Format::of(&a.out)? == output::Format::Tck;
    let (batch, order, t, shares) = if streamed && split.len() > 1 {
        let mut shares = None;
        let batch = stage("trace and write", || {
            output::stream_to_tck(
                |sink| {
                    shares = Some(geodesic::trace_split_streamed(&split, &fields, &seeds, &p, a.interp, true, sink)?);
                    Ok(())
                },
                &seeds,
                &geom,
                &mut out,
                &a.out,
            )
        })?;
        let shares = shares.expect("a traced split has its shares");
        (batch, (0..seeds.len()).collect::<Vec<_>>(), shares.timings(), Some(shares))
    } else if streamed {
        let mut k = stage("tracker kernels", || geodesic::kernels(&device))?;
        stage("fields upload", || k.upload(&fields))?;
        let p = TraceParams { interp: a.interp.unwrap_or_else(|| geodesic::Interp::default_for(device.info())), ..p };
        let per = geodesic::batch_len(k.as_ref(), seeds.len(), &p);
        let batch = stage("trace and write", || output::trace_to_tck(k.as_mut(), &seeds, &p, per, &geom, &mut out, &a.out, true))?;
        (batch, (0..seeds.len()).collect::<Vec<_>>(), k.take_timings(), None)
    } else {
        let (batch, shares) = stage("trace", || geodesic::trace_split(&split, &fields, &seeds, &p, a.interp, true))?;
        let order = geodesic::select(&batch, target.is_some());
        stage("write", || output::write(&mut out, &a.out, &geom, &batch, &seeds, &order))?;
        let t = shares.timings();
        (batch, order, t, Some(shares))
    };
    let written = stage("commit", || out.commit())?;
    eprintln!(
        "{}, {} interpolation, {}: {} fibres traced, {} steps; {} written{}, {}; kernel {:.1} ms, transfer {:.1} ms{}",
        split.label(),
        interp_label(&split, a.interp),
        a.method.name(),
        batch.len(),
        batch.total_steps(),
        order.len(),
        if target.is_some() { " (reached the target, ranked by connectivity)" } else { "" },
        geodesic::summary::Lengths::of(&batch, &order),
        t.kernel_ms,
        t.transfer_ms,
        dti::repaired_note(repaired)
    );
    if let Some(shares) = &shares {
        super::print_shares(&split, shares);
    }
    for w in written {
        println!("{}", w.display());
    }
    Ok(0)
}
