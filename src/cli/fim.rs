//! `neuroport fim`: minimal path cost from a region through the tensor field and region-to-region
//! connectivity (paper 004).

use super::Ctx;
use anyhow::{bail, Result};
use neuroport::fim::{self, connectivity, metric::Metric, Local, Params, Problem, Solver, Validity};
use neuroport::runtime::stages::stage;
use neuroport::volume::{check_free, prefixed, read_mask_like, Outputs};
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    input: super::dwi_args::TensorInput,
    /// White-matter mask: the front moves only inside it
    #[arg(long)]
    mask: PathBuf,
    /// Source region R1 (u1 = 0 there)
    #[arg(long)]
    source: PathBuf,
    /// Target region R2: adds u2, the total cost u1 + u2 and the epsilon pathway
    #[arg(long)]
    target: Option<PathBuf>,
    /// Path-cost metric M: sharpened (004 eq. 3) or inverse (D^-1)
    #[arg(long, value_enum, default_value_t = Metric::Sharpened)]
    metric: Metric,
    /// Sharpening power of eq. 3 (004 uses 3) [default: 3]
    #[arg(long)]
    alpha: Option<f64>,
    /// With --target: pathway tolerance: voxels with u1 + u2 < (1 + eps) E(gamma)
    #[arg(long, default_value_t = 0.05, requires = "target")]
    eps: f64,
    /// fim (node FIM on the CPU, block FIM on GPUs), or a CPU fast-sweeping baseline
    #[arg(long, value_enum, default_value_t = Solver::Fim)]
    solver: Solver,
    /// Validity test of the Godunov solution: the paper's index test or Tsai et al.'s [default: index]
    #[arg(long, value_enum)]
    validity: Option<Validity>,
    /// Local solver: exact (monotone: every schedule reaches the same u) or 004's valid-minimum
    /// candidate as published (faster; block and node FIM may settle slightly apart) [default: exact]
    #[arg(long = "local", value_enum)]
    local: Option<Local>,
    /// With --target: the minimal path, traced back along the characteristics, as .tck
    #[arg(long, requires = "target")]
    out_tck: Option<PathBuf>,
    /// Output prefix: PREFIX_cost1.nii.gz (and _cost2, _total, _pathway with --target); a prefix
    /// ending in / is a folder (--out res/ writes res/fim_cost1.nii.gz ...)
    #[arg(long)]
    out: PathBuf,
}

/// PREFIX_what.nii.gz; a prefix ending in / is a folder holding fim_what.nii.gz, as for dti.
fn named(prefix: &Path, what: &str) -> PathBuf {
    prefixed(prefix, "fim", &format!("{what}.nii.gz"))
}

pub fn run(ctx: &Ctx, a: Args) -> Result<i32> {
    let alpha = a.alpha.unwrap_or(3.0);
    if !(alpha > 0.0 && alpha.is_finite()) {
        bail!("--alpha must be a positive number, not {alpha}");
    }
    if !(a.eps >= 0.0 && a.eps.is_finite()) {
        bail!("--eps must be a non-negative number, not {}", a.eps);
    }
    if let Some(t) = &a.out_tck {
        neuroport::io::tck::require_tck_name(t)?;
    }
    let mut out = Outputs::new();
    // Every output name refused before any work, as the other commands do.
    let mut names = vec![out.nifti_name(&named(&a.out, "cost1"))];
    if a.target.is_some() {
        names.extend(["cost2", "total", "pathway"].map(|w| out.nifti_name(&named(&a.out, w))));
        names.extend(a.out_tck.clone());
    }
    check_free(&names)?;
    // The sweeping baselines are CPU methods: they ignore a GPU --backend (said once the inputs
    // are read).
    let pick = || stage("open device", || if a.solver.cpu_only() { ctx.inventory().open_cpu() } else { ctx.inventory().select_one(&ctx.backend) });
    // A tensor file, the masks and the metric are made while the devices are found (discovery
    // runs on its own thread: 0.1-0.3 s on the H100 box); a DWI is fitted on the device first.
    let mut fitted_on = None;
    let mask_in = Some((a.mask.as_path(), "mask"));
    let (tensor, geom, from, mask, taken) = match stage("read", || a.input.read_tensor(mask_in)) {
        Some(r) => r?,
        None => {
            let d = pick()?;
            let r = stage("fit", || a.input.load(&d, mask_in))?;
            fitted_on = Some(d);
            r
        }
    };
    let dims = geom.dims;
    let region = |p: &Path| -> Result<Vec<u8>> {
        let r = read_mask_like(p, &geom, &from, "region")?;
        fim::regions::check_region(&r, p, &mask, &a.mask, &taken)?;
        Ok(r)
    };
    let source = stage("read regions", || region(&a.source))?;
    let target = a.target.as_deref().map(region).transpose()?;
    if let (Some(t), Some(tp)) = (&target, &a.target) {
        connectivity::warn_shared(&source, &a.source, t, tp, &mask);
        fim::regions::check_joined(&source, &a.source, t, tp, &mask, &a.mask, dims)?;
    }
    let (speed, repaired) = stage("metric", || fim::metric::speed_from_tensor(&tensor, &geom, &mask, a.metric, alpha))?;
    drop(tensor);
    let device = match fitted_on {
        Some(d) => d,
        None => pick()?,
    };
    ctx.warn_unused_threads(std::slice::from_ref(&device));
    if let Some(w) = fim::unused_backend_warning(a.solver, &ctx.backend) {
        eprintln!("{w}");
    }
    for w in fim::unused_option_warnings(a.metric, a.alpha, a.solver, a.validity, a.local) {
        eprintln!("{w}");
    }
    // Two solves' lines in a log are told apart by their region.
    let regions: &[&str] = if target.is_some() { &["u1 (from --source)", "u2 (from --target)"] } else { &[] };
    let params = Params { solver: a.solver, validity: a.validity.unwrap_or_default(), local: a.local.unwrap_or_default(), progress: true, regions, ..Params::default() };
    let mut p = Problem { dims, voxel: geom.voxel_size.map(|h| h as f64), speed, mask, source: Vec::new() };
    // u1 and u2 over one field: a GPU uploads it once.
    let mut regions: Vec<Vec<u8>> = std::iter::once(source).chain(target).collect();
    let sols = fim::solve_regions(&device, &mut p, &mut regions, &params)?;
    let label = device.label();
    // The device is done with: released while the maps are combined and written.
    let _release = super::release(device);
    let s1 = &sols[0];
    let reached = |s: &fim::Solution| s.u.iter().filter(|x| !x.is_nan()).count();
    // Regions a GPU solved together (stacked) share one run's figures.
    let (what, counts, per) = match &sols[..] {
        [s1, s2] if s1.together > 1 => ("u1 and u2", format!("{} and {}", reached(s1), reached(s2)), " for both"),
        _ => ("u1", reached(s1).to_string(), ""),
    };
    let mut summary = format!(
        "{}, {} solver, {} metric: {what} reached {counts} of {} mask voxels in {} iterations ({:.1} updates/voxel{per}, {:.1} ms)",
        label,
        fim::cli_name(a.solver),
        fim::cli_name(a.metric),
        p.mask.iter().filter(|&&m| m != 0).count(),
        s1.iterations,
        s1.updates_per_voxel(&p.mask),
        s1.timings.total_ms()
    );
    summary += &neuroport::dti::repaired_note(repaired);
    if let Some(pr) = s1.probe.filter(|pr| pr.frequent()) {
        summary += &format!("; H_G's roots wanted at {} of {} voxels listed in the first {} iterations: solved with them in place", pr.wanted, pr.listed, pr.iterations);
    }
    let con = sols.get(1).map(|s2| stage("connectivity", || connectivity::combine(&s1.u, &s2.u, a.eps))).transpose()?;
    let mut maps: Vec<(PathBuf, usize, &[f32])> = vec![(named(&a.out, "cost1"), 1, &s1.u)];
    let mut path = None;
    if let (Some(s2), Some(con)) = (sols.get(1), &con) {
        maps.extend([(named(&a.out, "cost2"), 1, &s2.u[..]), (named(&a.out, "total"), 1, &con.total), (named(&a.out, "pathway"), 1, &con.pathway)]);
        if let Some(tck) = &a.out_tck {
            let xs: Vec<[f32; 3]> = connectivity::minimal_path(&p, &s1.u, &s2.u, con.argmin).iter().map(|&x| geom.voxel_to_world(x).map(|c| c as f32)).collect();
            path = Some((tck, xs));
        }
        summary += &format!("; E(gamma) = {:.6}, pathway (eps = {}) {} voxels", con.e_gamma, a.eps, con.pathway_voxels);
    }
    // The maps written (and compressed) side by side.
    stage("write", || out.niftis(&geom, &maps))?;
    if let Some((tck, xs)) = path {
        out.file(tck, |tmp| neuroport::io::tck::write_tck(tmp, std::iter::once(xs)))?;
    }
    let written = stage("commit", || out.commit())?;
    eprintln!("{summary}");
    for w in written {
        println!("{}", w.display());
    }
    Ok(0)
}
