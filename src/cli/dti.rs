use super::Ctx;
use anyhow::{Context, Result};
use neuroport::dti;
use neuroport::volume::{read_mask, Outputs};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    input: super::dwi_args::DwiArgs,
    /// Brain mask (default: every voxel)
    #[arg(long)]
    mask: Option<PathBuf>,
    /// Output prefix: writes PREFIX_tensor, _FA, _MD, _V1, _RGB, _S0 (.nii.gz)
    #[arg(long)]
    out: PathBuf,
}

pub fn run(ctx: &Ctx, a: Args) -> Result<i32> {
    let device = ctx.inventory.select_one(&ctx.backend)?;
    let (dwi, grads) = a.input.load()?;
    // A table that cannot determine a tensor is the gradient files' problem: say so by name.
    dti::Design::new(&grads).with_context(|| format!("{} + {}", a.input.bvals.display(), a.input.bvecs.display()))?;
    let mask = match &a.mask {
        Some(m) => read_mask(m, Some(dwi.geom.dims))?,
        None => vec![1u8; dwi.nvox()],
    };
    let mut k = dti::kernels(&device)?;
    let r = dti::run(k.as_mut(), &dwi, &grads, &mask).with_context(|| format!("tensor fit of {}", a.input.dwi.display()))?;
    let nvox = dwi.nvox();
    let g = &dwi.geom;
    let prefix = a.out.to_string_lossy().to_string();
    let p = |s: &str| PathBuf::from(format!("{prefix}_{s}.nii.gz"));
    let mut out = Outputs::new();
    out.nifti(&p("tensor"), g, 6, &r.fit.tensor)?;
    out.nifti(&p("FA"), g, 1, &r.scalars[..nvox])?;
    out.nifti(&p("MD"), g, 1, &r.scalars[nvox..2 * nvox])?;
    out.nifti(&p("V1"), g, 3, &r.scalars[2 * nvox..5 * nvox])?;
    out.nifti(&p("L1"), g, 1, &r.scalars[5 * nvox..6 * nvox])?;
    out.nifti(&p("RGB"), g, 3, &dti::rgb(&r.scalars, nvox))?;
    out.nifti(&p("S0"), g, 1, &r.fit.s0)?;
    let written = out.commit()?;
    let inside = mask.iter().filter(|&&m| m != 0).count();
    eprintln!(
        "{}: {} voxels in the mask, {} fitted, {} repaired (eigenvalues raised to {:.0e} mm^2/s), {} unfittable; kernel {:.1} ms, transfer {:.1} ms",
        device.label(),
        inside,
        r.fit.count(dti::FITTED) + r.fit.count(dti::REPAIRED),
        r.fit.count(dti::REPAIRED),
        dti::LAMBDA_FLOOR,
        inside - r.fit.count(dti::FITTED) - r.fit.count(dti::REPAIRED),
        r.timings.kernel_ms,
        r.timings.transfer_ms
    );
    for w in written {
        println!("{}", w.display());
    }
    Ok(0)
}
