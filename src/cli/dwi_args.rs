//! The DWI input shared by the commands that fit or sample: `--dwi` with `--bvals`/`--bvecs`
//! (FSL) or `--grad` (MRtrix).

use anyhow::{bail, Context, Result};
use neuroport::volume::{read_mask_like, read_tensor, skip_nonfinite, Geometry, GradFiles, GradientTable, TakenOut, Volume};
use neuroport::{dti, Device};
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct DwiArgs {
    /// 4-D diffusion-weighted volume (.nii or .nii.gz)
    #[arg(long)]
    pub dwi: PathBuf,
    /// FSL bvals file (s/mm^2; one row)
    #[arg(long, required_unless_present = "grad", requires = "bvecs")]
    pub bvals: Option<PathBuf>,
    /// FSL bvecs file (3 rows of N, or N rows of 3; image axes; NaN allowed on b=0 volumes)
    #[arg(long, required_unless_present = "grad", requires = "bvals")]
    pub bvecs: Option<PathBuf>,
    /// MRtrix gradient table instead of --bvals/--bvecs (.b: one row "x y z b" per volume,
    /// scanner axes)
    #[arg(long, conflicts_with_all = ["bvals", "bvecs"])]
    pub grad: Option<PathBuf>,
}

impl DwiArgs {
    pub fn grad_files(&self) -> GradFiles<'_> {
        grad_files(&self.grad, &self.bvals, &self.bvecs).expect("clap requires --grad or both --bvals and --bvecs")
    }
    /// The DWI and its gradient table, the read's progress shown where it is long (`show`).
    pub fn load(&self, show: bool) -> Result<(Volume, GradientTable)> {
        neuroport::dti::design::read_dwi_showing(&self.dwi, self.grad_files(), show)
    }
}

/// The gradient table's files: `--grad` (MRtrix), else `--bvals` with `--bvecs` (FSL); None
/// when neither is complete.
fn grad_files<'a>(grad: &'a Option<PathBuf>, bvals: &'a Option<PathBuf>, bvecs: &'a Option<PathBuf>) -> Option<GradFiles<'a>> {
    match (grad, bvals, bvecs) {
        (Some(g), _, _) => Some(GradFiles::Mrtrix(g)),
        (None, Some(bvals), Some(bvecs)) => Some(GradFiles::Fsl { bvals, bvecs }),
        _ => None,
    }
}

/// A tensor volume (flat), its grid, the file it came from, the mask it may be used in and the
/// voxels taken out of that mask for their data.
pub type Loaded = (Vec<f32>, Geometry, PathBuf, Vec<u8>, TakenOut);

/// The tensor input of the commands that take `--tensor` or `--dwi/--bvals/--bvecs` (track, fim).
#[derive(clap::Args)]
pub struct TensorInput {
    /// Tensor volume from `neuroport dti` (PREFIX_tensor.nii.gz: 6 volumes, FSL order, mm^2/s)
    #[arg(long, required_unless_present = "dwi", conflicts_with_all = ["dwi", "bvals", "bvecs", "grad"])]
    pub tensor: Option<PathBuf>,
    /// 4-D DWI volume, fitted first (with --bvals and --bvecs, or --grad) instead of --tensor
    #[arg(long)]
    pub dwi: Option<PathBuf>,
    /// FSL bvals file of --dwi (s/mm^2; one row)
    #[arg(long, requires_all = ["dwi", "bvecs"])]
    pub bvals: Option<PathBuf>,
    /// FSL bvecs file of --dwi (3 rows of N, or N rows of 3; image axes; NaN allowed on b=0
    /// volumes)
    #[arg(long, requires_all = ["dwi", "bvals"])]
    pub bvecs: Option<PathBuf>,
    /// MRtrix gradient table of --dwi instead of --bvals/--bvecs (.b: one row "x y z b" per
    /// volume, scanner axes), as dti and bedpost take
    #[arg(long, requires = "dwi", conflicts_with_all = ["bvals", "bvecs"])]
    pub grad: Option<PathBuf>,
}

impl TensorInput {
    /// With `--tensor`, the volume read as [`TensorInput::load`] does (no device needed, so a
    /// command can read it while the devices are found); None for a DWI to fit.
    pub fn read_tensor(&self, mask: Option<(&Path, &str)>) -> Option<Result<Loaded>> {
        let t = self.tensor.as_ref()?;
        Some(read_tensor(t, mask).map(|(v, m, taken)| {
            let g = v.geom.clone();
            (v.into_flat(), g, t.clone(), m, taken)
        }))
    }

    /// The tensor volume (6 volumes, FSL order, mm^2/s), read or fitted on `device` inside `mask`
    /// (its file and what to call it; every voxel without one), the file it came from, and the
    /// mask less the voxels whose tensor or DWI holds NaN/Inf (zeroed, with a warning), and those
    /// voxels.
    pub fn load(&self, device: &Device, mask: Option<(&Path, &str)>) -> Result<Loaded> {
        if let Some(r) = self.read_tensor(mask) {
            return r;
        }
        let (Some(dwi), Some(files)) = (&self.dwi, grad_files(&self.grad, &self.bvals, &self.bvecs)) else { bail!("give --tensor, or --dwi with --bvals and --bvecs (or --grad)") };
        let (mut v, grads) = neuroport::dti::design::read_dwi(dwi, files)?;
        let mut m = match mask {
            Some((p, what)) => read_mask_like(p, &v.geom, dwi, what)?,
            None => vec![1u8; v.nvox()],
        };
        let taken = skip_nonfinite(&mut v, dwi, &mut m)?;
        let mut k = dti::kernels(device)?;
        let r = dti::run(k.as_mut(), &v, &grads, &m).with_context(|| format!("tensor fit of {}", dwi.display()))?;
        Ok((r.fit.tensor, v.geom, dwi.clone(), m, taken))
    }
}
