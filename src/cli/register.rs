use super::Ctx;
use anyhow::Result;
use neuroport::register::{self, affine, CostKind, Dof, Options};
use neuroport::runtime::stages::stage;
use neuroport::volume::{check_free, read_keeping_nonfinite, resolve_prefix, Outputs};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// Fixed (reference, target) image
    #[arg(long)]
    fixed: PathBuf,
    /// Moving (input, source) image, resampled onto the fixed grid
    #[arg(long)]
    moving: PathBuf,
    /// Degrees of freedom: 6 (rigid), 9 (+ scales), 12 (full affine)
    #[arg(long, default_value = "12")]
    dof: Dof,
    /// Cost function
    #[arg(long, value_enum, default_value = "ncc")]
    cost: CostKind,
    /// Pyramid levels, coarsest at 2^(N-1) times the voxel size
    #[arg(long, default_value_t = 3)]
    levels: usize,
    /// Start from this 4x4 world matrix (fixed point -> moving point, as PREFIX_affine.txt)
    /// instead of aligning the centres of mass; an ITK/ANTs transform file (0GenericAffine.mat,
    /// "#Insight Transform File" .txt) or elastix's TransformParameters.N.txt is read too, as
    /// resample's --affine reads it
    #[arg(long)]
    init: Option<PathBuf>,
    /// Evaluate the cost on a regular sub-grid of the fixed image with at least N points per
    /// level (every s-th voxel per axis, s as large as keeps N), as elastix and FLIRT sample
    /// instead of visiting every voxel; 0 = every voxel (002's cost), else at least 1000
    #[arg(long, default_value_t = 0)]
    samples: usize,
    /// Output prefix: writes PREFIX_warped.nii.gz, PREFIX_affine.txt and PREFIX.mat; a prefix
    /// ending in / is a folder (--out reg/ writes reg/register_warped.nii.gz ...)
    #[arg(long)]
    out: PathBuf,
}

pub fn run(ctx: &Ctx, a: Args) -> Result<i32> {
    let prefix = resolve_prefix(&a.out, "register").to_string_lossy().to_string();
    let names = Outputs::new();
    check_free([names.nifti_name(&PathBuf::from(format!("{prefix}_warped.nii.gz"))), PathBuf::from(format!("{prefix}_affine.txt")), PathBuf::from(format!("{prefix}.mat"))])?;
    // The two images read side by side (a .nii.gz written by another tool is one gzip stream,
    // inflated on one core); the fixed image's error first when both fail.
    // NaN/Inf voxels stay: the cost leaves them out (register/cost.rs).
    let read = |p: &PathBuf| read_keeping_nonfinite(p, "excluded from the cost");
    let (fixed, moving) = rayon::join(|| stage("read fixed", || read(&a.fixed)), || stage("read moving", || read(&a.moving)));
    let (fixed, moving) = (fixed?, moving?);
    register::check_image(&fixed, &a.fixed.display().to_string())?;
    register::check_image(&moving, &a.moving.display().to_string())?;
    let mut o = Options::new(a.dof, a.cost, a.levels);
    o.samples = a.samples;
    if let Some(p) = &a.init {
        o.init = Some(affine::read(p)?);
    }
    // After the device list's own errors (a usage error comes first), before the kernels' build.
    let device = stage("open device", || ctx.inventory().select_one(&ctx.backend))?;
    for line in register::size::check(&fixed, &a.fixed.display().to_string(), &o)? {
        eprintln!("{line}");
    }
    ctx.warn_unused_threads(std::slice::from_ref(&device));
    let mut k = stage("kernels", || register::kernels(&device))?;
    let t0 = std::time::Instant::now();
    let r = stage("register", || register::register(k.as_mut(), &fixed, &moving, &o, &mut |l| {
        eprintln!("{}", l.line())
    }))?;
    let wall = t0.elapsed().as_secs_f64();
    let label = device.label();
    // The device is done with: released while the warped image is made and written.
    let _release = super::release((k, device));
    let mut out = Outputs::new();
    // Through the matrix as PREFIX_affine.txt holds it, so that `resample` with that file
    // makes this image again bit for bit.
    let warped = stage("warp", || register::warp(&moving, &fixed.geom, &affine::as_written(&r.transform)));
    stage("write", || out.nifti(&PathBuf::from(format!("{prefix}_warped.nii.gz")), &fixed.geom, 1, &warped))?;
    out.file(&PathBuf::from(format!("{prefix}_affine.txt")), |p| affine::write(p, &r.transform))?;
    let flirt = affine::to_flirt(&r.transform, &fixed.geom, &moving.geom);
    out.file(&PathBuf::from(format!("{prefix}.mat")), |p| affine::write(p, &flirt))?;
    let written = stage("commit", || out.commit())?;
    eprintln!("{}: {} dof {}, {} evaluations, {:.3} ms per evaluation, final cost {:.6}; registration {:.2} s ({:.0} ms before the first level: intensity ranges, centres of mass, pyramid)", label, a.dof.count(), a.cost.name(), r.evals, r.ms_per_eval(), r.cost, wall, r.prep_ms);
    for w in written {
        println!("{}", w.display());
    }
    Ok(0)
}
