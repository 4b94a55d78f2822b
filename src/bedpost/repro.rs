//! `bedpost-t3`: paper 003 Table III, the time to draw 50 samples (burn-in 500, thin 2, so 600
//! loops of 8 proposals) for every white-matter voxel of two datasets, on one CPU thread, all
//! CPU cores and every GPU device, beside the published C/C++ (Phenom X4 965) and OpenCL
//! (Radeon HD 5870) times.
//!
//! The datasets cannot be had: volumes of the same grids and mask counts are simulated from
//! known fibres (see `sim::white_matter`). At paper scale the CPU-like devices (native CPU and
//! OpenCL CPU devices) run a subset of the voxels and report the per-voxel time x the voxel
//! count, labelled as such; GPUs run every voxel. At quick scale every device runs every
//! voxel of a small volume and nothing is extrapolated; the published figures, which are for
//! the full datasets, are then listed in the notes rather than beside the rows.

use super::{init, kernels, post, sample, sim, Config, Table, SEGMENT};
use crate::dti;
use crate::repro::published::{lookup, shown};
use crate::repro::{add_speedups, PlotSpec, Report, Row, RunCtx, Scale, Target, ALL_CORES, ONE_THREAD};
use crate::runtime::{timing::median, timing::wall_ms, Device, Timings};
use crate::synth;
use crate::synth::sticks::{angle_deg, SticksVoxel};
use anyhow::Result;

pub struct BedpostT3;

/// A stand-in dataset of 003 (also the data of `probtrack-t2`/`-t4`).
pub struct Dataset {
    pub id: u32,
    pub dims: [usize; 3],
    pub voxel_mm: f32,
    pub nmask: usize,
}

pub const PAPER: [Dataset; 2] = [
    Dataset { id: 1, dims: [48, 96, 96], voxel_mm: 2.5, nmask: 205_082 },
    Dataset { id: 2, dims: [60, 102, 102], voxel_mm: 2.0, nmask: 402_194 },
];
/// Quick scale (CI, 2 cores + PoCL): the same schedule on 500 and 1,000 voxels, a few seconds
/// per device.
pub const QUICK: [Dataset; 2] = [
    Dataset { id: 1, dims: [10, 20, 20], voxel_mm: 2.5, nmask: 500 },
    Dataset { id: 2, dims: [12, 22, 22], voxel_mm: 2.0, nmask: 1_000 },
];
/// Voxels per CPU thread run at paper scale (about 2-3 s per run on a 2 GHz core).
const CPU_VOXELS_PER_THREAD: usize = 800;
const SNR: f64 = 30.0;

const CPU_PUBLISHED: &str = "Phenom X4 965, C/C++ -O2 (003)";
const GPU_PUBLISHED: &str = "Radeon HD 5870, OpenCL (003)";

/// Median angular error (degrees) of dyads1 against the first fibre of the single-fibre voxels.
fn single_fibre_error(samples: &[f32], nsamp: usize, truths: &[SticksVoxel]) -> f64 {
    let n = truths.len();
    let s = post::summarise(samples, nsamp, n);
    let mut e: Vec<f64> = (0..n).filter(|&j| truths[j].f[1] == 0.0).map(|j| angle_deg(truths[j].v[0], s[j].dyads[0].map(|x| x as f64))).collect();
    median(&mut e)
}

impl Target for BedpostT3 {
    fn id(&self) -> &'static str {
        "bedpost-t3"
    }
    fn title(&self) -> &'static str {
        "Ball-and-sticks MCMC sampling time, 50 samples per voxel (003 Table III)"
    }
    fn plot(&self) -> PlotSpec {
        PlotSpec { x_label: "voxels".into(), y_label: "sampling time (s)".into(), log_x: false, log_y: true, metric: None }
    }
    fn run(&self, ctx: &RunCtx) -> Result<Report> {
        let g = synth::gradient_table(4, 64, 1000.0);
        let table = Table::new(&g)?;
        let cfg = Config { seed: ctx.seed, ..Config::default() };
        let sched = cfg.schedule();
        let loops = cfg.loops();
        let sets = match ctx.scale {
            Scale::Quick => QUICK,
            Scale::Paper => PAPER,
        };
        let mut devices = vec![(ctx.one_thread_cpu()?, ONE_THREAD.to_string())];
        for d in ctx.devices {
            devices.push((d.clone(), if d.is_cpu() { ALL_CORES.to_string() } else { String::new() }));
        }
        let host_cpu = ctx.inventory.open_cpu()?;
        let mut rows = Vec::new();
        let mut notes = vec![
            format!("Data: per dataset, a volume of the paper's grid whose mask holds exactly the paper's voxel count, simulated from known fibres (60 % single fibres f 0.3-0.7, 40 % crossings at 45-90 degrees, f 0.2-0.45 each; S0 1000, d 1.0-1.7e-3 mm^2/s), 4 b=0 + 64 directions at b = 1000 s/mm^2, Rician noise at SNR {SNR}. The paper's datasets (CABI) are not available."),
            format!("Sampling as the paper: {} samples, burn-in {}, thin {} ({loops} loops x 8 proposals per voxel), proposal widths adapted every {} loops; chains start from the tensor fit.", cfg.samples, cfg.burnin, cfg.thin, cfg.every),
            "Ours = the sampling alone (kernels + transfers), median of the repeats after a warm-up launch; the tensor fit and chain initialisation are listed below and NIfTI I/O is excluded. The published CPU time is one thread of C/C++.".into(),
        ];
        for ds in &sets {
            let cfg_name = format!("dataset {}: {}x{}x{}, {} voxels", ds.id, ds.dims[0], ds.dims[1], ds.dims[2], ds.nmask);
            ctx.say(&format!("bedpost-t3 {cfg_name}: simulating"));
            let (vol, mask, truths) = sim::phantom(ds.dims, [ds.voxel_mm; 3], ds.nmask, &g, SNR, ctx.seed ^ ds.id as u64);
            let voxels = crate::volume::masks::inside(&mask);
            let (prepared, init_ms) = wall_ms(|| -> Result<_> {
                let y = init::gather(&vol, &voxels);
                let design = dti::Design::new(&g)?;
                let fit = dti::kernels(&host_cpu)?.fit(crate::runtime::columns::Columns::whole(&y, design.ngrad), &vec![1u8; voxels.len()], &design)?;
                let init = init::from_tensors(&fit, &y, &table, &voxels, ctx.seed);
                Ok((y, init))
            });
            let (y, init) = prepared?;
            notes.push(format!("{cfg_name}: tensor fit + chain initialisation on {} took {:.2} s.", host_cpu.label(), init_ms * 1e-3));
            let published_cpu = lookup("mcmc_table3_speedup", "dataset", &ds.id.to_string(), "cpu_s");
            let published_gpu = lookup("mcmc_table3_speedup", "dataset", &ds.id.to_string(), "gpu_s");
            if ctx.scale == Scale::Quick {
                let p = PAPER.iter().find(|d| d.id == ds.id).map(|d| d.nmask).unwrap_or(0);
                notes.push(format!(
                    "Published for dataset {} ({p} voxels, not comparable with this quick run): {} s on the {CPU_PUBLISHED}, {} s on the {GPU_PUBLISHED}.",
                    ds.id,
                    shown(published_cpu),
                    shown(published_gpu)
                ));
            }
            for (dev, variant) in &devices {
                let cpu_like = !dev.info().is_gpu;
                let n = match ctx.scale {
                    Scale::Paper if cpu_like => (CPU_VOXELS_PER_THREAD * dev.info().compute_units.max(1) as usize).min(ds.nmask),
                    _ => ds.nmask,
                };
                let repeats = if cpu_like && ctx.scale == Scale::Paper { 1 } else { ctx.repeats.max(1) };
                ctx.say(&format!("bedpost-t3 {cfg_name} on {} ({n} voxels)", dev.label()));
                let (t, samples, layout) = time_sampling(dev, &table, &y, &init, n, &sched, loops, repeats)?;
                let scale = ds.nmask as f64 / n as f64;
                let mut split = t;
                split.kernel_ms *= scale;
                split.transfer_ms *= scale;
                split.host_ms *= scale;
                let v = if dev.is_cpu() { variant.clone() } else { layout };
                let what = if n < ds.nmask { format!("; extrapolated: {n} voxels run, time x {:.1}", scale) } else { String::new() };
                let published = if ctx.scale == Scale::Quick {
                    (None, "")
                } else if dev.is_cpu() && variant == ONE_THREAD {
                    (published_cpu, CPU_PUBLISHED)
                } else if !dev.is_cpu() {
                    (published_gpu, GPU_PUBLISHED)
                } else {
                    (None, "")
                };
                rows.push(
                    Row::new(self.id(), cfg_name.clone(), dev.info(), v, "sampling time", "s", split.total_ms() * 1e-3)
                        .x(ds.nmask as f64)
                        .published(published.0, published.1)
                        .split(&split)
                        .substituted(format!("simulated {}x{}x{} volume, {} mask voxels{what}", ds.dims[0], ds.dims[1], ds.dims[2], ds.nmask)),
                );
                let err = single_fibre_error(&samples, cfg.samples, &truths[..n]);
                notes.push(format!("{cfg_name} on {}: median angular error of dyads1 on the single-fibre voxels {err:.2} deg (of {n} voxels run).", dev.label()));
            }
        }
        add_speedups(&mut rows);
        Ok(self.report(rows, notes))
    }
}

/// Samples the first `n` chains `repeats` times after a one-launch warm-up on a few voxels;
/// returns the median run's timings, its samples and the kernel layout.
fn time_sampling(dev: &Device, table: &Table, y: &[f32], init: &super::ChainState, n: usize, sched: &super::Schedule, loops: usize, repeats: usize) -> Result<(Timings, Vec<f32>, String)> {
    let ys = super::Columns::whole(y, table.ndir).part(0..n).to_vec();
    let st = init.cut(0..n);
    let mut k = kernels(dev, None)?;
    let few = n.min(256);
    sample(k.as_mut(), table, &super::Columns::whole(&ys, table.ndir).part(0..few).to_vec(), &st.cut(0..few), sched, SEGMENT.min(loops), None, &crate::io::progress::Progress::hidden())?;
    k.take_timings();
    let mut runs = Vec::new();
    for _ in 0..repeats.max(1) {
        let (s, _) = sample(k.as_mut(), table, &ys, &st, sched, loops, None, &crate::io::progress::Progress::hidden())?;
        runs.push((k.take_timings(), s));
    }
    runs.sort_by(|a, b| a.0.total_ms().total_cmp(&b.0.total_ms()));
    let mid = (runs.len() - 1) / 2;
    let (t, s) = runs.swap_remove(mid);
    Ok((t, s, k.variant().to_string()))
}
