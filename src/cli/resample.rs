use super::Ctx;
use anyhow::Result;
use neuroport::register::resample::{self, Interp, MatrixFile};
use neuroport::runtime::stages::stage;
use neuroport::volume::{check_free, read_header, read_keeping_nonfinite, resolve_prefix, Outputs, Voxels};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("matrix").required(true).args(["affine", "fsl_mat"])))]
pub struct Args {
    /// Reference image: the output's grid and affine (register's --fixed, flirt -ref)
    #[arg(long = "ref", value_name = "REF", visible_alias = "fixed")]
    reference: PathBuf,
    /// Image to resample, 3-D or 4-D (each volume in turn) (register's --moving, flirt -in)
    #[arg(long, visible_alias = "in")]
    moving: PathBuf,
    /// 4x4 world matrix, reference point -> moving point in mm: register's PREFIX_affine.txt
    /// (reg_aladin -aff); or an ITK/ANTs transform file, told by its content: ANTs'
    /// 0GenericAffine.mat, an "#Insight Transform File" .txt (affine, rigid, Euler, versor,
    /// similarity, composites of these; ITK's LPS turned into NIfTI's RAS), or elastix's
    /// TransformParameters.N.txt (Euler, similarity, affine, translation, with its chain)
    #[arg(long)]
    affine: Option<PathBuf>,
    /// An FSL FLIRT matrix instead (register's PREFIX.mat, flirt -omat), read through both
    /// images' grids
    #[arg(long)]
    fsl_mat: Option<PathBuf>,
    /// linear (trilinear: register's PREFIX_warped) or nearest (labels, masks, atlases: the
    /// moving image's values kept exactly)
    #[arg(long, value_enum, default_value = "linear")]
    interp: Interp,
    /// Output image, float32 on the reference grid: .nii.gz, or .nii under FSLOUTPUTTYPE=NIFTI,
    /// whatever ending is given, as FSL's tools do (--out lab.nii writes lab.nii.gz); a name
    /// ending in / is a folder: writes FOLDER/resampled.nii.gz
    #[arg(long)]
    out: PathBuf,
}

pub fn run(ctx: &Ctx, a: Args) -> Result<i32> {
    if let Some(w) = resample::unused_options_warning(&ctx.backend, ctx.threads) {
        eprintln!("{w}");
    }
    let mut out = Outputs::new();
    let name = PathBuf::from(format!("{}.nii.gz", resolve_prefix(&a.out, "resampled").display()));
    check_free([out.nifti_name(&name)])?;
    let Some((path, kind)) = a.affine.as_ref().map(|p| (p, MatrixFile::World)).or(a.fsl_mat.as_ref().map(|p| (p, MatrixFile::Flirt))) else {
        anyhow::bail!("resample needs --affine A.txt or --fsl-mat A.mat");
    };
    let m = resample::read_matrix(path, kind)?;
    let fate = match a.interp {
        Interp::Linear => "kept: a linear sample that reads one is NaN or infinite, as in register's warped image",
        Interp::Nearest => "kept: copied where they are the nearest voxel",
    };
    // The reference gives only the grid: its header, checked before the moving image is read.
    let (reference, ref_dims) = stage("read ref", || read_header(&a.reference))?;
    resample::check_reference(ref_dims[3], &a.reference.display().to_string())?;
    let moving = stage("read moving", || read_keeping_nonfinite(&a.moving, fate))?;
    if a.interp == Interp::Nearest {
        if let Some(w) = resample::large_label_warning(&moving, &a.moving.display().to_string()) {
            eprintln!("{w}");
        }
    }
    let t = resample::world(&m, kind, &reference, &moving.geom);
    let moving = resample::single_voxel_axes_as_slabs(moving);
    let g = resample::output_geometry(&reference, &moving);
    // The output is made as the writer compresses it, a member at a time: never held whole.
    let nonzero = AtomicBool::new(false);
    let fill = |first: usize, part: &mut [f32]| {
        resample::resample_part(&moving, &reference, &t, a.interp, first, part);
        if part.iter().any(|v| *v != 0.0) {
            nonzero.store(true, Ordering::Relaxed);
        }
    };
    let t0 = std::time::Instant::now();
    let made = Voxels::Made(reference.nvox() * moving.nvol(), &fill);
    stage("resample and write", || out.niftis_of(&g, &[(name.clone(), moving.nvol(), made)]))?;
    let wall = t0.elapsed().as_secs_f64();
    if let Some(w) = resample::empty_output_warning(!nonzero.load(Ordering::Relaxed), &moving, &out.nifti_name(&name).display().to_string(), &a.moving.display().to_string()) {
        eprintln!("{w}");
    }
    let written = stage("commit", || out.commit())?;
    let [x, y, z] = g.dims;
    let vols = if moving.nvol() > 1 { format!("{} volumes", moving.nvol()) } else { "1 volume".to_string() };
    let how = if a.interp == Interp::Nearest { "nearest neighbour" } else { "linear" };
    eprintln!("cpu: {vols} resampled onto {x}x{y}x{z} ({how}) and written in {wall:.2} s");
    for w in written {
        println!("{}", w.display());
    }
    Ok(0)
}
