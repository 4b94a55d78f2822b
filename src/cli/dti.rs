use super::Ctx;
use anyhow::{Context, Result};
use neuroport::dti;
use neuroport::runtime::stages::stage;
use neuroport::volume::{check_free, mask_for, prefixed, Outputs};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    input: super::dwi_args::DwiArgs,
    /// Brain mask (default: every voxel); must be on the DWI's grid (same size and affine)
    #[arg(long)]
    mask: Option<PathBuf>,
    /// Output prefix, as dtifit's -o: writes PREFIX_tensor, _FA, _MD, _MO, _V1.._V3, _L1.._L3,
    /// _RGB and _S0 (.nii.gz, or .nii with FSLOUTPUTTYPE=NIFTI). A prefix ending in / is a
    /// folder: --out results/ writes results/dti_FA.nii.gz; a .nii.gz or .nii ending is
    /// dropped, as FSL's tools do (--out results/dti.nii.gz writes results/dti_FA.nii.gz)
    #[arg(long)]
    out: PathBuf,
}

const MAPS: [&str; 12] = ["tensor", "FA", "MD", "MO", "V1", "V2", "V3", "L1", "L2", "L3", "RGB", "S0"];

pub fn run(ctx: &Ctx, a: Args) -> Result<i32> {
    let mut out = Outputs::new();
    let p = |s: &str| out.nifti_name(&prefixed(&a.out, "dti", &format!("{s}.nii.gz")));
    check_free(MAPS.iter().map(|s| p(s)))?;
    // Devices are discovered on their own thread meanwhile; a misused --backend is said first.
    neuroport::runtime::check_split_spec(&ctx.backend)?;
    let (mut dwi, grads) = stage("read", || a.input.load(true))?;
    let split = ctx.split()?;
    let mask = stage("mask", || mask_for(&mut dwi, &a.input.dwi, a.mask.as_deref()))?;
    let (r, shares) = stage("fit", || dti::run_split(&split, &dwi, &grads, &mask, true)).with_context(|| format!("tensor fit of {}", a.input.dwi.display()))?;
    let done = super::Released::new(split);
    let nvox = dwi.nvox();
    // The DWI goes before the maps are made and written: it had stayed beside them (1.4 GB at
    // HCP size), the run's peak.
    let c = dti::fit_counts(&r, &dwi, &mask, a.mask.is_some());
    let geom = dwi.geom.clone();
    drop(dwi);
    let g = &geom;
    let (x, rgb) = stage("host maps", || (dti::fsl_maps::extra_maps(&r.fit.tensor, nvox), dti::rgb(&r.scalars, nvox)));
    let p = |s: &str| prefixed(&a.out, "dti", &format!("{s}.nii.gz"));
    let sc = |i: usize, n: usize| &r.scalars[i * nvox..(i + n) * nvox];
    let maps: [(&str, usize, &[f32]); 12] = [
        ("tensor", 6, &r.fit.tensor),
        ("FA", 1, sc(0, 1)),
        ("MD", 1, sc(1, 1)),
        ("MO", 1, x.mo()),
        ("V1", 3, sc(2, 3)),
        ("V2", 3, x.v2()),
        ("V3", 3, x.v3()),
        ("L1", 1, sc(5, 1)),
        ("L2", 1, x.l2()),
        ("L3", 1, x.l3()),
        ("RGB", 3, &rgb),
        ("S0", 1, &r.fit.s0),
    ];
    debug_assert!(maps.iter().map(|m| m.0).eq(MAPS));
    let maps: Vec<(PathBuf, usize, &[f32])> = maps.iter().map(|&(n, nvol, d)| (p(n), nvol, d)).collect();
    stage("write", || out.niftis(g, &maps))?;
    let written = stage("commit", || out.commit())?;
    let background = if c.background > 0 { format!(", {} background voxels (all zero) skipped", c.background) } else { String::new() };
    let region = if a.mask.is_some() { "in the mask" } else { "(no mask: the whole grid)" };
    eprintln!(
        "{}: {} voxels {region}{background}, {} fitted, {} repaired (eigenvalues raised to {:.0e} mm^2/s), {} unfittable; kernel {:.1} ms, transfer {:.1} ms",
        done.label,
        c.inside,
        c.fitted,
        c.repaired,
        dti::LAMBDA_FLOOR,
        c.unfittable,
        r.timings.kernel_ms,
        r.timings.transfer_ms
    );
    done.print_shares(&shares);
    for w in written {
        println!("{}", w.display());
    }
    Ok(0)
}
