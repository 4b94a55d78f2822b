//! The DWI input shared by the commands that fit or sample: `--dwi`, `--bvals`, `--bvecs`.

use anyhow::Result;
use neuroport::volume::{read_dwi, GradientTable, Volume};
use std::path::PathBuf;

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
