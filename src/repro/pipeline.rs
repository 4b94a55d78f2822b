//! `pipeline`: the whole user pipeline, because its wall time is what a user waits for — read
//! the DWI, fit tensors, sample ball-and-sticks (the paper schedule), trace geodesics from the
//! white matter (8 directions per voxel), write every output — on one volume, per device, with
//! each stage's wall time split into device kernels, transfers and the rest (host work and I/O).
//!
//! The volume is the issue's: a sticks phantom of 96x112x72 voxels at 1.8 mm (358,600 mask
//! voxels), 6 b=0 + 2 shells of 64 directions (134 volumes), written as .nii.gz; quick scale
//! (CI) uses a 14x16x10 grid, a 50-loop bedpost schedule and no warm-up run.

use crate::repro::{PlotSpec, Report, Row, RunCtx, Scale, Target};
use crate::runtime::{timing::wall_ms, Device, Timings};
use crate::synth::dataset::{self, Model, Spec};
use crate::volume::{read_dwi, read_mask, OutputType, Outputs};
use crate::{bedpost, dti, geodesic};
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

pub struct Pipeline;

/// Stages in order (their rows' configurations: the plot's categories, named on its axis).
const STAGES: [&str; 7] = ["read", "dti fit", "dti write", "bedpost", "bedpost write", "track", "track write"];

pub(crate) fn spec(scale: Scale) -> Spec {
    let dims = match scale {
        Scale::Paper => [96, 112, 72],
        Scale::Quick => [14, 16, 10],
    };
    let mut s = Spec::new(dims, Model::Sticks);
    s.voxel_size = [1.8; 3];
    s.nb0 = 6;
    s.ndirs = 64;
    s.shells = vec![1000.0, 2000.0];
    s
}

/// A scratch folder removed on drop, so a failed run leaves nothing behind, and on
/// SIGINT/SIGTERM/SIGHUP too (a signal never reaches the drop).
struct Scratch(PathBuf);
impl Scratch {
    fn new(tag: &str) -> Result<Scratch> {
        let p = std::env::temp_dir().join(format!("neuroport-pipeline-{}-{tag}", std::process::id()));
        // Registered before it exists, so no moment has it on disk and unwatched.
        crate::volume::register_scratch(&p);
        if let Err(e) = std::fs::create_dir_all(&p) {
            crate::volume::forget_scratch(&p);
            return Err(e).with_context(|| format!("cannot create {}", p.display()));
        }
        Ok(Scratch(p))
    }
}
impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
        crate::volume::forget_scratch(&self.0);
    }
}

/// The input image `name` as `dataset::write` named it: .nii.gz, or .nii where FSLOUTPUTTYPE (or
/// NEUROPORT_OUTPUT_TYPE) says NIFTI.
fn image(input: &Path, name: &str) -> PathBuf {
    OutputType::from_env().apply(&input.join(format!("{name}.nii.gz")))
}

/// One stage's wall time and, where a device worked, its device-event split.
struct Stage {
    wall_ms: f64,
    dev: Timings,
}

fn stage<R>(stages: &mut Vec<Stage>, f: impl FnOnce() -> Result<(R, Timings)>) -> Result<R> {
    let (r, ms) = wall_ms(f);
    let (r, dev) = r?;
    stages.push(Stage { wall_ms: ms, dev });
    Ok(r)
}

/// The pipeline once on `device`, reading from `input` and writing under `out`.
fn run_once(device: &Device, input: &Path, out: &Path, cfg: &bedpost::Config) -> Result<Vec<Stage>> {
    let none = Timings::default();
    let mut st = Vec::new();
    let (dwi, grads, mask, wm) = stage(&mut st, || {
        let (dwi, grads) = read_dwi(&image(input, "dwi"), &input.join("bvals"), &input.join("bvecs"))?;
        let mask = read_mask(&image(input, "mask"), Some(dwi.geom.dims))?;
        let wm = read_mask(&image(input, "wm"), Some(dwi.geom.dims))?;
        Ok(((dwi, grads, mask, wm), none))
    })?;
    let g = dwi.geom.clone();
    let nvox = g.nvox();
    let mut dk = dti::kernels(device)?;
    let fit = stage(&mut st, || {
        let r = dti::run(dk.as_mut(), &dwi, &grads, &mask)?;
        let t = r.timings;
        Ok((r, t))
    })?;
    stage(&mut st, || {
        let mut o = Outputs::new();
        let p = |s: &str| out.join(format!("dti_{s}.nii.gz"));
        o.nifti(&p("tensor"), &g, 6, &fit.fit.tensor)?;
        o.nifti(&p("FA"), &g, 1, &fit.scalars[..nvox])?;
        o.nifti(&p("MD"), &g, 1, &fit.scalars[nvox..2 * nvox])?;
        o.nifti(&p("V1"), &g, 3, &fit.scalars[2 * nvox..5 * nvox])?;
        o.nifti(&p("S0"), &g, 1, &fit.fit.s0)?;
        o.commit()?;
        Ok(((), none))
    })?;
    let mut bk = bedpost::kernels(device, None)?;
    let bp = stage(&mut st, || {
        let r = bedpost::run(dk.as_mut(), bk.as_mut(), &dwi, &grads, &mask, cfg)?;
        let mut t = r.timings;
        t.add(&r.init_timings);
        Ok((r, t))
    })?;
    stage(&mut st, || bedpost::post::write(&bp, &g, &out.join("bedpost")).map(|_| ((), none)))?;
    let (batch, seeds, geom) = stage(&mut st, || {
        let (fields, mut t) = geodesic::prepare(device, &fit.fit.tensor, &g, &mask, None)?;
        let mut r = crate::synth::rng(cfg.seed);
        let pts = geodesic::seeding::roi_points(&wm, g.dims, None, &mut r)?;
        let seeds = geodesic::seeding::seeds_at(&pts, 8, geodesic::seeding::Directions::Sphere, &g, &fit.fit.tensor, &mut r)?;
        let i = device.info();
        let interp = if i.is_gpu && i.image_support { geodesic::Interp::Texture } else { geodesic::Interp::Kernel };
        let p = geodesic::TraceParams { step: 0.1, max_steps: 2000, interp, ..Default::default() };
        let mut k = geodesic::kernels(device)?;
        k.upload(&fields)?;
        let batch = geodesic::trace_all(k.as_mut(), &seeds, &p, false)?;
        t.add(&k.take_timings());
        Ok(((batch, seeds, g.clone()), t))
    })?;
    stage(&mut st, || {
        let mut o = Outputs::new();
        let order = geodesic::select(&batch, false);
        geodesic::output::write(&mut o, &out.join("fibres.tck"), &geom, &batch, &seeds, &order)?;
        o.commit()?;
        Ok(((), none))
    })?;
    Ok(st)
}

impl Target for Pipeline {
    fn id(&self) -> &'static str {
        "pipeline"
    }
    fn title(&self) -> &'static str {
        "The whole user pipeline: read, tensor fit, bedpost, geodesic tracking, write (wall time per stage)"
    }
    fn plot(&self) -> PlotSpec {
        PlotSpec { x_label: "stage".into(), y_label: "wall time (s)".into(), log_x: false, log_y: true, metric: None }
    }

    fn run(&self, ctx: &RunCtx) -> Result<Report> {
        // --seed drives the phantom's noise, bedpost's chains and the seeding (all were fixed).
        let s = Spec { seed: ctx.seed, ..spec(ctx.scale) };
        let paper = ctx.scale == Scale::Paper;
        // The paper schedule (600 loops); quick scale 50 loops so CI's CPU devices finish.
        let cfg = bedpost::Config { seed: ctx.seed, ..if paper { bedpost::Config::default() } else { bedpost::Config { burnin: 40, samples: 5, thin: 2, ..bedpost::Config::default() } } };
        let data = Scratch::new("input")?;
        ctx.say(&format!("pipeline: simulating a {:?} sticks phantom", s.dims));
        let ds = dataset::build(&s)?;
        let nmask = ds.mask.iter().filter(|&&m| m != 0).count();
        let nwm = ds.wm.iter().filter(|&&m| m != 0).count();
        dataset::write(&ds, &data.0)?;
        let dwi_bytes = std::fs::metadata(image(&data.0, "dwi")).map(|m| m.len()).unwrap_or(0);
        drop(ds);
        let mut rows = Vec::new();
        let mut notes = vec![
            format!(
                "volume: sticks phantom {:?} at 1.8 mm, seed {}, {} volumes (6 b=0, 64 directions at b = 1000 and 2000), {nmask} mask voxels, {nwm} white-matter seed voxels x 8 directions; dwi.nii.gz {:.0} MB",
                s.dims,
                s.seed,
                s.nb0 + 2 * s.ndirs,
                dwi_bytes as f64 / 1e6
            ),
            format!("stages: read = dwi.nii.gz + bvals/bvecs + mask + wm; dti fit = WLS fit + scalar maps; dti write = tensor, FA, MD, V1, S0; bedpost = tensor fit for initialisation + {} loops (burn-in {}, {} samples, thin {}) of every mask voxel + summaries; bedpost write = bedpostx's files; track = metric preparation + seeding + RK2 (h = 0.1 voxel, <= 2000 steps); track write = .tck + per-fibre CSV", cfg.loops(), cfg.burnin, cfg.samples, cfg.thin),
            "kernel/transfer are device events; host = wall - kernel - transfer (host work, file I/O, waiting). Outputs .nii.gz per FSLOUTPUTTYPE (default NIFTI_GZ).".into(),
            if paper {
                format!("one warm-up run per device (kernel builds, disk cache), then the median total of {} runs; its stages are listed", ctx.repeats.max(1))
            } else {
                format!("quick scale: no warm-up (kernel builds included), median total of {} runs", ctx.repeats.max(1))
            },
        ];
        for dev in ctx.devices {
            ctx.say(&format!("pipeline on {}", dev.label()));
            let out = Scratch::new("out")?;
            if paper {
                run_once(dev, &data.0, &out.0, &cfg)?;
            }
            let mut runs = Vec::new();
            for _ in 0..ctx.repeats.max(1) {
                let _ = std::fs::remove_dir_all(&out.0);
                std::fs::create_dir_all(&out.0)?;
                let (r, total) = wall_ms(|| run_once(dev, &data.0, &out.0, &cfg));
                runs.push((total, r?));
            }
            runs.sort_by(|a, b| a.0.total_cmp(&b.0));
            let (total, stages) = runs.swap_remove((runs.len() - 1) / 2);
            let info = dev.info();
            for (name, s) in STAGES.iter().zip(&stages) {
                let mut t = s.dev;
                t.host_ms = (s.wall_ms - t.kernel_ms - t.transfer_ms).max(0.0);
                rows.push(Row::new("pipeline", *name, info, "", "wall time", "s", s.wall_ms / 1e3).split(&t));
            }
            let mut all = Timings::default();
            stages.iter().for_each(|s| all.add(&s.dev));
            all.host_ms = (total - all.kernel_ms - all.transfer_ms).max(0.0);
            rows.push(Row::new("pipeline", "total", info, "", "wall time", "s", total / 1e3).split(&all));
            notes.push(format!(
                "{}: total {:.2} s = kernels {:.2} s + transfers {:.2} s + host {:.2} s",
                dev.label(),
                total / 1e3,
                all.kernel_ms / 1e3,
                all.transfer_ms / 1e3,
                all.host_ms / 1e3
            ));
        }
        Ok(self.report(rows, notes))
    }
}
