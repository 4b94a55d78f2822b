//! 001 Table 3 and Fig. 7 on the brain-like phantom standing in for the paper's 128 x 128 x 30
//! brain: seeds at random points of a 22 x 4-voxel region of its commissural bundle, random
//! directions, fibres running until they leave the head.

use super::{interps, run_on, variant};
use crate::geodesic::phantoms::callosal_region;
use crate::synth::phantom::voxel_axes_to_fsl;
use crate::geodesic::seeding::{roi_points, seeds_at, Directions};
use crate::geodesic::{prepare, Fields, Method, Seed, TraceParams};
use crate::repro::published::table;
use crate::repro::{add_speedups, PlotSpec, Report, Row, RunCtx, Scale, Target, ALL_CORES, ONE_THREAD};
use crate::runtime::cpu::Cpu;
use crate::runtime::Device;
use crate::synth::{phantom::brain_like, rng};
use crate::volume::xyz_of;
use anyhow::Result;
use std::sync::Arc;

const STEP: f32 = 0.1;
/// 200 voxels (over 360 mm in-plane): longer than any fibre of a real brain. A few geodesics
/// orbit inside the arched bundle; unbounded, they alone would set a GPU kernel's time.
const MAX_STEPS: u32 = 2000;

/// Table 3's published time (s) for `seeds` on the device whose name contains `device`.
fn published(seeds: usize, device: &str) -> Option<(f64, String)> {
    table("geodesic_table3_speedup")
        .into_iter()
        .find(|r| r.get("seeds").map(|s| s == &seeds.to_string()).unwrap_or(false) && r.get("device").map(|d| d.contains(device)).unwrap_or(false))
        .and_then(|r| Some((r.get("time_s")?.parse().ok()?, format!("{} (001 Table 3)", r.get("device")?))))
}

/// The stand-in brain, its fields and the largest seed set (smaller sets are its prefixes).
struct Case {
    fields: Fields,
    seeds: Vec<Seed>,
    counts: Vec<usize>,
    what: String,
}

fn case(ctx: &RunCtx, counts: Vec<usize>) -> Result<Case> {
    let dims = match ctx.scale {
        Scale::Quick => [64, 64, 15],
        Scale::Paper => [128, 128, 30],
    };
    let mut ph = brain_like(dims, [1.8, 1.8, 4.0], ctx.seed);
    voxel_axes_to_fsl(&mut ph.tensor, &ph.geom);
    let roi = callosal_region(&ph);
    let (lo, hi) = bounds(&roi, dims);
    let mut r = rng(ctx.seed);
    let n = *counts.iter().max().unwrap_or(&1);
    let pts = roi_points(&roi, dims, Some(n), &mut r)?;
    let seeds = seeds_at(&pts, 1, Directions::Sphere, &ph.geom, &ph.tensor, &mut r)?;
    let cpu = Device::Cpu(Arc::new(Cpu::new(None)?));
    let (fields, _) = prepare(&cpu, &ph.tensor, &ph.geom, &ph.mask, None)?;
    let what = format!(
        "brain-like phantom {}x{}x{} at 1.8x1.8x4 mm (synth::phantom::brain_like) standing in for the paper's brain; seeds uniform in a {}x{}-voxel region of its arched commissural bundle (voxels x {}-{}, y {}-{}, z {}: the apex of the arch, where the bundle crosses the midline along x, standing in for the corpus callosum), random directions; RK2, h = {STEP} voxel, at most {MAX_STEPS} steps (200 voxels, longer than any real fibre; a few geodesics orbit in the arch), fibres stop on leaving the head",
        dims[0], dims[1], dims[2], hi[0] - lo[0] + 1, hi[1] - lo[1] + 1, lo[0], hi[0], lo[1], hi[1], lo[2]
    );
    Ok(Case { fields, seeds, counts, what })
}

fn bounds(roi: &[u8], dims: [usize; 3]) -> ([usize; 3], [usize; 3]) {
    let mut lo = dims;
    let mut hi = [0; 3];
    for v in (0..roi.len()).filter(|&v| roi[v] != 0) {
        let p = xyz_of(v, dims);
        for a in 0..3 {
            lo[a] = lo[a].min(p[a]);
            hi[a] = hi[a].max(p[a]);
        }
    }
    (lo, hi)
}

fn params(interp: crate::geodesic::Interp) -> TraceParams {
    TraceParams { step: STEP, max_steps: MAX_STEPS, method: Method::Rk2, interp, record: true, ..Default::default() }
}

pub struct GeodesicT3;

impl Target for GeodesicT3 {
    fn id(&self) -> &'static str {
        "geodesic-t3"
    }
    fn title(&self) -> &'static str {
        "Tracing time and speed-up against the seed count (001 Table 3)"
    }
    fn plot(&self) -> PlotSpec {
        PlotSpec { x_label: "seeds".into(), y_label: "tracing time (s)".into(), log_x: false, log_y: true, metric: None }
    }
    fn run(&self, ctx: &RunCtx) -> Result<Report> {
        let counts = match ctx.scale {
            Scale::Quick => vec![64, 128, 192, 256],
            Scale::Paper => vec![1024, 2048, 3072, 4096],
        };
        let c = case(ctx, counts)?;
        let mut devices = vec![(ctx.one_thread_cpu()?, ONE_THREAD.to_string())];
        devices.extend(ctx.devices.iter().map(|d| (d.clone(), if d.is_cpu() { ALL_CORES.to_string() } else { String::new() })));
        let mut rows = Vec::new();
        let mut notes = Vec::new();
        for (dev, base) in &devices {
            ctx.say(&format!("geodesic-t3 on {}", dev.label()));
            for interp in interps(dev) {
                let v = if base.is_empty() { variant(dev, interp) } else { base.clone() };
                for &n in &c.counts {
                    let (m, b) = run_on(dev, &c.fields, &c.seeds[..n], &[params(interp)], ctx.repeats)?.remove(0);
                    let (pubv, pubdev) = published(n, if dev.is_cpu() { "Core i5" } else { "GTX 470" }).unzip();
                    if n == *c.counts.last().unwrap_or(&0) {
                        notes.push(format!(
                            "{} [{v}], {n} seeds: {} steps ({:.0} per fibre, {} reached the step limit), {:.3e} steps/s",
                            dev.label(),
                            m.steps,
                            m.steps as f64 / n as f64,
                            b.ends.iter().filter(|e| e.steps >= MAX_STEPS).count(),
                            m.steps_per_s()
                        ));
                    }
                    rows.push(
                        Row::new(self.id(), format!("{n} seeds"), dev.info(), v.clone(), "time", "s", m.timings.kernel_ms * 1e-3)
                            .x(n as f64)
                            .published(pubv, pubdev.as_deref().unwrap_or(""))
                            .split(&m.timings)
                            .substituted(c.what.clone()),
                    );
                }
            }
        }
        add_speedups(&mut rows);
        notes.push("Published speed-ups (001 Table 3) are against the Core i5 750 at its best thread count (64): up to 40.0 (GTX 470, 4096 seeds). Ours: 'x vs all cores' (the native CPU on every core; geodesic-f7 shows other thread counts) and 'x vs 1 thread'. CPU rows are published beside the i5's times, GPU rows beside the GTX 470's.".into());
        notes.push("Times are the tracing kernel's; transfers (seeds up, fibres down, including the on-device packing of points) are listed apart.".into());
        Ok(self.report(rows, notes))
    }
}

pub struct GeodesicF7;

impl Target for GeodesicF7 {
    fn id(&self) -> &'static str {
        "geodesic-f7"
    }
    fn title(&self) -> &'static str {
        "CPU tracing time against thread count (001 Fig. 7)"
    }
    fn plot(&self) -> PlotSpec {
        PlotSpec { x_label: "threads".into(), y_label: "tracing time (s)".into(), log_x: true, log_y: true, metric: None }
    }
    fn run(&self, ctx: &RunCtx) -> Result<Report> {
        let (n, threads): (usize, Vec<usize>) = match ctx.scale {
            Scale::Quick => (256, vec![1, 2, 4]),
            Scale::Paper => (4096, vec![1, 2, 4, 8, 16, 32, 64]),
        };
        let c = case(ctx, vec![n])?;
        let cores = std::thread::available_parallelism().map(|x| x.get()).unwrap_or(1);
        let mut counts = threads.clone();
        if !counts.contains(&cores) {
            counts.push(cores);
            counts.sort_unstable();
        }
        let mut rows = Vec::new();
        let mut times = Vec::new();
        for &t in &counts {
            ctx.say(&format!("geodesic-f7 with {}", crate::runtime::threads_label(t)));
            let dev = Device::Cpu(Arc::new(Cpu::new(Some(t))?));
            let (m, _) = run_on(&dev, &c.fields, &c.seeds, &[params(crate::geodesic::Interp::Kernel)], ctx.repeats)?.remove(0);
            times.push((t, m.timings.kernel_ms * 1e-3));
            let (pubv, pubdev) = if t == 64 { published(n, "Core i5").unzip() } else { (None, None) };
            rows.push(
                Row::new(self.id(), crate::runtime::threads_label(t), dev.info(), "", "time", "s", m.timings.kernel_ms * 1e-3)
                    .x(t as f64)
                    .published(pubv, pubdev.as_deref().unwrap_or(""))
                    .split(&m.timings)
                    .substituted(c.what.clone()),
            );
        }
        // One series over thread counts: speed-ups are set here rather than by variant.
        let at = |k: usize| times.iter().find(|x| x.0 == k).map(|x| x.1);
        let (one, all) = (at(1), at(cores));
        for r in &mut rows {
            *r = std::mem::take(r).speedups(one, all);
        }
        let best = times.iter().min_by(|a, b| a.1.total_cmp(&b.1)).map(|b| b.0).unwrap_or(1);
        Ok(self.report(
            rows,
            vec![
                format!("{n} seeds on {cores} cores (rayon pools of each size; one task per fibre). Fastest: {}.", crate::runtime::threads_label(best)),
                "001 Fig. 7 (Core i5 750, 4 cores, C++ threads with S/N fibres each): 64 threads best, roughly 4.5x over one thread; only the 64-thread time (5.571 s, Table 3) is printed in the paper, so it is the one published point.".into(),
            ],
        ))
    }
}
