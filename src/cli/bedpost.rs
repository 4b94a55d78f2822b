use super::Ctx;
use anyhow::{Context, Result};
use neuroport::bedpost::{self, post, Config, MaskedDwi, Variant};
use neuroport::runtime::stages::stage;
use neuroport::volume::{check_free, Outputs};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    input: super::dwi_args::DwiArgs,
    /// Mask of the voxels to sample (non-zero = inside), on the DWI's grid (same size and affine)
    #[arg(long)]
    mask: PathBuf,
    /// Samples kept per voxel
    #[arg(long, default_value_t = 50)]
    samples: usize,
    /// Loops before the first sample
    #[arg(long, default_value_t = 500)]
    burnin: usize,
    /// Loops between kept samples
    #[arg(long, default_value_t = 2)]
    thin: usize,
    /// Seed of the chains' random streams (same seed, same output)
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Kernel layout on OpenCL/CUDA: naive, cached, moments, cached_moments or warp (default:
    /// moments, `Variant::default_for`, until measurements name a faster one for a device)
    #[arg(long)]
    variant: Option<Variant>,
    /// Output folder (created if missing): FSL bedpostx's merged_*samples, mean_*samples,
    /// dyads*, nodif_brain_mask, plus acceptance (.nii.gz, or .nii with FSLOUTPUTTYPE=NIFTI)
    #[arg(long)]
    out: PathBuf,
}

pub fn run(ctx: &Ctx, a: Args) -> Result<i32> {
    let names = Outputs::new();
    check_free(post::file_names().iter().map(|n| names.nifti_name(&a.out.join(format!("{n}.nii.gz")))))?;
    // Devices are discovered on their own thread meanwhile; a misused --backend is said first.
    neuroport::runtime::check_split_spec(&ctx.backend)?;
    // Only the mask's voxels are kept of the DWI, read in pieces on every core.
    let (dwi, grads) = stage("read", || MaskedDwi::read(&a.input.dwi, a.input.grad_files(), &a.mask, true))?;
    let split = ctx.split()?;
    // The library says what is odd; the command prints it.
    for w in [bedpost::unused_variant_warning(&split, a.variant), dwi.all_zero_warning(&a.input.dwi)].into_iter().flatten() {
        eprintln!("{w}");
    }
    let cfg = Config { samples: a.samples, burnin: a.burnin, thin: a.thin, seed: a.seed, progress: true, ..Config::default() };
    let (r, shares) = stage("fit and sample", || bedpost::run_masked(&split, a.variant, &dwi, &grads, &cfg)).with_context(|| format!("bedpost of {}", a.input.dwi.display()))?;
    let done = super::Released::new(split);
    let written = stage("write", || post::write(&r, &dwi.geom, &a.out))?;
    let mean_acc = r.acceptance.iter().map(|&x| x as f64).sum::<f64>() / r.acceptance.len().max(1) as f64;
    eprintln!(
        "{} [{}]: {} voxels x {} loops ({} samples, thin {}); kernel {:.1} ms, transfer {:.1} ms, host {:.1} ms; mean acceptance {:.2}",
        done.label,
        r.variant,
        r.voxels.len(),
        cfg.loops(),
        cfg.samples,
        cfg.thin,
        r.timings.kernel_ms,
        r.timings.transfer_ms,
        r.timings.host_ms,
        mean_acc
    );
    done.print_shares(&shares);
    for w in written {
        println!("{}", w.display());
    }
    Ok(0)
}
