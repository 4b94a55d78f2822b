//! `neuroport bench <method>`: a method's kernel speed on every selected device (device-event
//! times, median of repeats after a warm-up). Each method adds its variant to `Command`.

mod bedpost;
mod dti;
mod fim;
mod geodesic;
mod layer;
mod nifti;
mod probtrack;
mod register;
mod split;

use super::Ctx;
use anyhow::Result;

/// The options every timed bench shares (flattened into its arguments).
#[derive(clap::Args)]
pub struct Runs {
    /// Timed runs after a warm-up; the median is reported
    #[arg(long, default_value_t = 3)]
    pub repeats: usize,
    /// Seed of the synthetic input
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Print JSON instead of a table
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Subcommand)]
pub enum Command {
    /// DTI: tensor fit, scalar maps, metric preparation and sharpened metric (voxels/s, ms per
    /// million voxels, and voxels/s per core on the cpu backend)
    Dti(dti::DtiArgs),
    /// Fast Iterative Method: one fim-t1 example (default 3, the 256x256x100 brain-like volume)
    /// with one solver: wall time, iterations, updates per voxel, active list
    Fim(fim::Args),
    /// Geodesic tracing throughput (RK2 or Euler steps/s) on the long synthetic volume
    Geodesic(geodesic::GeodesicArgs),
    /// Ball-and-sticks MCMC: voxel-loops per second of every kernel layout (and the time of
    /// 003's Table III dataset 1 at that rate)
    Bedpost(bedpost::Args),
    /// The GPU host layer itself: empty-kernel launches/s (queued, and each waited for) and
    /// copy rates through pinned staging
    Layer(layer::Args),
    /// NIfTI I/O: read, and .nii.gz write on 1 core and on all cores (MB/s of voxel data)
    Nifti(nifti::NiftiArgs),
    /// Probabilistic streamlining: steps/s of a 003 Table II workload, kernels vs wall, with
    /// the memory floor
    Probtrack(probtrack::Args),
    /// Affine registration cost kernel (002): evaluations/s, one map per call and eight, wall
    /// and device time per evaluation, image GB/s, every cost and sampling
    Register(register::Args),
    /// Multi-device scaling: bedpost, geodesic and probtrack split over the first 1, 2, 4 ...
    /// devices of --backend (a list or gpus): wall time, speed-up, efficiency
    Split(split::Args),
}

pub fn run(ctx: &Ctx, cmd: Command) -> Result<i32> {
    match cmd {
        Command::Dti(a) => dti::dti(ctx, a),
        Command::Fim(a) => fim::run(ctx, a),
        Command::Geodesic(a) => geodesic::geodesic(ctx, a),
        Command::Bedpost(a) => bedpost::run(ctx, a),
        Command::Layer(a) => layer::run(ctx, a),
        Command::Nifti(a) => nifti::run(ctx, a),
        Command::Probtrack(a) => probtrack::run(ctx, a),
        Command::Register(a) => register::run(ctx, a),
        Command::Split(a) => split::run(ctx, a),
    }
}
