use super::Ctx;
use anyhow::{bail, Result};
use neuroport::synth::dataset::{self, Model, Spec};
use std::path::PathBuf;

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    #[command(subcommand)]
    kind: Option<Kind>,
    #[command(flatten)]
    dwi: Option<DwiArgs>,
}

#[derive(clap::Subcommand)]
enum Kind {
    /// A T1-weighted head (scalp, skull, CSF, folded grey matter over white matter, ventricles,
    /// deep grey, bias field, Rician noise) to try `register` on: the phantom `reproduce airwc`
    /// uses. Writes t1.nii.gz, brain.nii.gz (the brain mask) and truth_affine.txt (the transform
    /// that registers subject 0's unmoved image, as fixed, to this one, as moving: what
    /// `register` should write to PREFIX_affine.txt)
    T1(super::synth_t1::Args),
}

#[derive(clap::Args)]
pub struct DwiArgs {
    /// Folder to write dwi.nii.gz, bvals, bvecs, mask.nii.gz, wm.nii.gz, roi1/roi2.nii.gz (two
    /// small white-matter regions at its ends, for --target) and the truth_* volumes
    #[arg(long)]
    out: PathBuf,
    /// Grid size x,y,z
    #[arg(long, default_value = "48,48,24", value_parser = parse_dims)]
    dims: [usize; 3],
    /// Voxel size in mm: one size (isotropic) or x,y,z (each 0.001 to 1000)
    #[arg(long, default_value = "2,2,2", value_parser = dataset::parse_voxel)]
    voxel: [f32; 3],
    /// Signal-to-noise ratio of the b=0 signal (S0 / sigma of the Rician noise); inf for none
    #[arg(long, default_value_t = 30.0)]
    snr: f64,
    /// Seed of the phantom's jitter and of the noise
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Signal model: tensor (DTI truth) or sticks (ball and two sticks, bedpostx-style truth)
    #[arg(long, default_value = "tensor")]
    model: Model,
    /// b=0 volumes
    #[arg(long, default_value_t = 3)]
    b0: usize,
    /// Gradient directions per shell
    #[arg(long, default_value_t = 32)]
    dirs: usize,
    /// Shell b-values in s/mm^2, comma-separated, each once, above 10 and at most 1e6 (default:
    /// 1000 for tensor, 1000,2000 for sticks)
    #[arg(long, value_delimiter = ',')]
    shells: Option<Vec<f64>>,
}

fn parse_list<T: std::str::FromStr>(s: &str, what: &str) -> Result<[T; 3]> {
    let v: Vec<T> = s.split(',').map(|p| p.trim().parse::<T>()).collect::<Result<_, _>>().map_err(|_| anyhow::anyhow!("{what} must be three numbers x,y,z, got '{s}'"))?;
    match <[T; 3]>::try_from(v) {
        Ok(a) => Ok(a),
        Err(_) => bail!("{what} must be three numbers x,y,z, got '{s}'"),
    }
}
pub(super) fn parse_dims(s: &str) -> Result<[usize; 3]> {
    parse_list(s, "--dims")
}

pub fn run(ctx: &Ctx, a: Args) -> Result<i32> {
    ctx.warn_unused_device_options("synth", "builds its phantoms on the host, on every core");
    match (a.kind, a.dwi) {
        (Some(Kind::T1(t)), _) => super::synth_t1::run(ctx, t),
        (None, Some(d)) => run_dwi(d),
        (None, None) => bail!("synth needs --out FOLDER (a diffusion phantom) or a kind of phantom (synth t1 --out FOLDER)"),
    }
}

fn run_dwi(a: DwiArgs) -> Result<i32> {
    let mut spec = Spec::new(a.dims, a.model);
    spec.voxel_size = a.voxel;
    spec.snr = a.snr;
    spec.seed = a.seed;
    spec.nb0 = a.b0;
    spec.ndirs = a.dirs;
    if let Some(s) = a.shells {
        spec.shells = s;
    }
    // Existing outputs are refused now, before the phantom is built (seconds on large grids).
    neuroport::volume::check_free(dataset::file_names(spec.model, &a.out))?;
    let ds = dataset::build(&spec)?;
    let written = dataset::write(&ds, &a.out)?;
    let inside = ds.mask.iter().filter(|&&m| m != 0).count();
    let wm = ds.wm.iter().filter(|&&m| m != 0).count();
    eprintln!(
        "{:?} phantom {:?} at {:?} mm: {} volumes, {inside} voxels in the mask, {wm} in white matter, SNR {}, seed {}",
        spec.model,
        spec.dims,
        spec.voxel_size,
        ds.table.len(),
        spec.snr,
        spec.seed
    );
    for w in written {
        println!("{}", w.display());
    }
    Ok(0)
}
