//! The DWI input shared by the commands that fit or sample: `--dwi` with `--bvals`/`--bvecs`
//! (FSL) or `--grad` (MRtrix).

use anyhow::Result;
use neuroport::volume::{read_dwi_with, GradFiles, GradientTable, Volume};
use std::path::PathBuf;

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
        match (&self.grad, &self.bvals, &self.bvecs) {
            (Some(g), _, _) => GradFiles::Mrtrix(g),
            (None, Some(bvals), Some(bvecs)) => GradFiles::Fsl { bvals, bvecs },
            _ => unreachable!("clap requires --grad or both --bvals and --bvecs"),
        }
    }
    pub fn load(&self) -> Result<(Volume, GradientTable)> {
        read_dwi_with(&self.dwi, self.grad_files())
    }
}
