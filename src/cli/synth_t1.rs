//! `neuroport synth t1`: the T1 head phantom of `reproduce airwc` (src/synth/t1.rs), so a user
//! can make a registration pair: one call per image, a second subject by `--subject`, a known
//! placement by `--move`, the right answer in truth_affine.txt.

use super::synth::parse_dims;
use super::Ctx;
use anyhow::{bail, Result};
use neuroport::register::affine;
use neuroport::synth::dataset::parse_voxel;
use neuroport::synth::t1::{centred_geometry, placed_subject, placement, require_brain};
use neuroport::volume::{check_free, Outputs};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// Folder to write t1.nii.gz, brain.nii.gz and truth_affine.txt
    #[arg(long)]
    out: PathBuf,
    /// Grid size x,y,z (world origin at the grid's centre; default: 002's scans)
    #[arg(long, default_value = "240,256,176", value_parser = parse_dims)]
    dims: [usize; 3],
    /// Voxel size in mm: one size (isotropic) or x,y,z (each 0.001 to 1000)
    #[arg(long, default_value = "1,1,1", value_parser = parse_voxel)]
    voxel: [f32; 3],
    /// Whose head: 0 is the reference; any other number is another person (size, proportions,
    /// folding, ventricles and bias field differ)
    #[arg(long, default_value_t = 0)]
    subject: u64,
    /// Move the head before imaging it: tx,ty,tz (mm), rx,ry,rz (degrees), optionally sx,sy,sz
    /// (scale, percent) and kxy,kxz,kyz (shear, percent), about the world origin: the
    /// parameters `register` optimises (6, 9 or 12 numbers)
    #[arg(long = "move", value_delimiter = ',', allow_hyphen_values = true)]
    placement: Option<Vec<f64>>,
    /// Standard deviation of the Rician noise (tissue intensities span 0.08 to 0.85); 0 for none
    #[arg(long, default_value_t = 0.02)]
    noise: f64,
    /// Seed of the noise (give the two images of a pair different seeds)
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

pub fn run(_ctx: &Ctx, a: Args) -> Result<i32> {
    let p = a.placement.unwrap_or_default();
    let placement = placement(&p)?;
    if !(a.noise >= 0.0 && a.noise.is_finite()) {
        bail!("--noise must be a finite number >= 0, got {}", a.noise);
    }
    // The DWI phantom's bounds: a huge grid aborted allocating, a zero one failed at the write.
    neuroport::synth::dataset::check_dims(a.dims)?;
    // Within those bounds the grid can still outgrow a small machine's memory (1.3 GiB at 2^27
    // voxels): refused here rather than aborted allocating, as `synth` refuses a DWI phantom.
    let [x, y, z] = a.dims;
    let memory = neuroport::synth::t1::memory_needed(a.dims);
    neuroport::runtime::memory::check_fits(&format!("a {x}x{y}x{z} T1 phantom"), memory, neuroport::runtime::memory::available())?;
    // Existing outputs are refused now, before the phantom is built (seconds at 002's size).
    let names = Outputs::new();
    check_free([names.nifti_name(&a.out.join("t1.nii.gz")), names.nifti_name(&a.out.join("brain.nii.gz")), a.out.join("truth_affine.txt")])?;
    let g = centred_geometry(a.dims, a.voxel);
    let (img, truth) = placed_subject(a.subject, &g, &placement, a.noise, a.seed);
    require_brain(&img)?;
    let mut out = Outputs::new();
    out.nifti(&a.out.join("t1.nii.gz"), &g, 1, img.volume.as_flat())?;
    let mask: Vec<f32> = img.brain.iter().map(|&b| b as f32).collect();
    out.nifti(&a.out.join("brain.nii.gz"), &g, 1, &mask)?;
    out.file(&a.out.join("truth_affine.txt"), |f| affine::write(f, &truth))?;
    let written = out.commit()?;
    let inside = img.brain.iter().filter(|&&b| b != 0).count();
    eprintln!("T1 head, subject {}, {:?} at {:?} mm: {inside} brain voxels, noise {}, seed {}", a.subject, a.dims, a.voxel, a.noise, a.seed);
    for w in written {
        println!("{}", w.display());
    }
    Ok(0)
}
