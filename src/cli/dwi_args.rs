//! The DWI input shared by the commands that fit or sample: `--dwi`, `--bvals`, `--bvecs`.

use anyhow::{bail, Context, Result};
use neuroport::volume::{read_dwi, read_mask, read_nifti, Geometry, GradientTable, Volume};
use neuroport::{dti, Device};
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct DwiArgs {
    /// 4-D diffusion-weighted volume (.nii or .nii.gz)
    #[arg(long)]
    pub dwi: PathBuf,
    /// FSL bvals file
    #[arg(long)]
    pub bvals: PathBuf,
    /// FSL bvecs file
    #[arg(long)]
    pub bvecs: PathBuf,
}

impl DwiArgs {
    pub fn load(&self) -> Result<(Volume, GradientTable)> {
        read_dwi(&self.dwi, &self.bvals, &self.bvecs)
    }
}

/// A tensor volume (6 volumes, FSL order, mm^2/s) read from `tensor`, or fitted on `device` from
/// `dwi` with its `bvals`/`bvecs` inside `mask` (every voxel without one): the input of the
/// commands that take `--tensor` or `--dwi/--bvals/--bvecs`.
pub fn tensor_or_fit(device: &Device, tensor: Option<&Path>, dwi: Option<&Path>, bvals: Option<&Path>, bvecs: Option<&Path>, mask: Option<&Path>) -> Result<(Vec<f32>, Geometry)> {
    if let Some(t) = tensor {
        let v = read_nifti(t)?;
        if v.nvol() != 6 {
            bail!("{}: a tensor volume has 6 volumes (FSL order xx,xy,xz,yy,yz,zz), this has {}", t.display(), v.nvol());
        }
        let g = v.geom.clone();
        return Ok((v.into_flat(), g));
    }
    let (Some(dwi), Some(bvals), Some(bvecs)) = (dwi, bvals, bvecs) else { bail!("give --tensor, or --dwi with --bvals and --bvecs") };
    let (v, grads) = read_dwi(dwi, bvals, bvecs)?;
    let mask = match mask {
        Some(m) => read_mask(m, Some(v.geom.dims))?,
        None => vec![1u8; v.nvox()],
    };
    let mut k = dti::kernels(device)?;
    let r = dti::run(k.as_mut(), &v, &grads, &mask).with_context(|| format!("tensor fit of {}", dwi.display()))?;
    Ok((r.fit.tensor, v.geom))
}
