//! 001 Table 1 and Fig. 6 on the long synthetic volume (1024 x 64 x 64, fibres parallel to the
//! long edge, none leaving).

use super::{interps, run_on, variant};
use crate::geodesic::bench::{bytes_per_step, long_fields, long_seeds};
use crate::geodesic::{Method, TraceParams, BYTES_PER_SAMPLE, GROUPS};
use crate::repro::published::lookup;
use crate::repro::{add_speedups, PlotSpec, Report, Row, RunCtx, Scale, Target, ALL_CORES, ONE_THREAD};
use crate::runtime::Device;
use anyhow::{bail, Result};

const PUB_DEVICE: &str = "GeForce GTX 260 (001 Table 1)";

fn setup(scale: Scale) -> ([usize; 3], usize, u32) {
    match scale {
        Scale::Quick => ([128, 24, 24], 128, 256),
        Scale::Paper => ([1024, 64, 64], 2048, 4096),
    }
}

pub struct GeodesicT1;

impl Target for GeodesicT1 {
    fn id(&self) -> &'static str {
        "geodesic-t1"
    }
    fn title(&self) -> &'static str {
        "Tracing time against bytes read per field sample (001 Table 1)"
    }
    fn plot(&self) -> PlotSpec {
        PlotSpec { x_label: "bytes read per field sample".into(), y_label: "tracing kernel time (ms)".into(), log_x: false, log_y: true, metric: None }
    }
    fn run(&self, ctx: &RunCtx) -> Result<Report> {
        let (dims, nseeds, steps) = setup(ctx.scale);
        let h = 0.2f32;
        let fields = long_fields(dims)?;
        let seeds = long_seeds(dims, nseeds, h as f64 * steps as f64 * 1.05, ctx.seed)?;
        let substituted = format!(
            "synthetic {}x{}x{} volume (principal direction along x, diffusivities varying along x; its dG/dy and dG/dz are zero, so skipped float4 groups change no fibre); {nseeds} random seeds heading along x, {steps} RK2 steps of h = {h}",
            dims[0], dims[1], dims[2]
        );
        let mut devices = vec![(ctx.one_thread_cpu()?, ONE_THREAD.to_string())];
        devices.extend(ctx.devices.iter().map(|d| (d.clone(), if d.is_cpu() { ALL_CORES.to_string() } else { String::new() })));
        let mut rows = Vec::new();
        let mut notes = vec![
            "Bytes per sample: 8 voxels x 4 B x the float4 groups read (6, 5, 4, 3 of 6: 768, 640, 512, 384 B, as 001 Table 1). RK2 (Strang-split midpoint rule) samples once per step, as the paper's figures (768 B per step, Euler as fast as RK2) say its RK2 did.".to_string(),
            "Effective bandwidth = (samples per step x bytes per sample + 12 B written per point) x steps / kernel time.".to_string(),
        ];
        for (dev, base_variant) in &devices {
            ctx.say(&format!("geodesic-t1 on {}", dev.label()));
            // The read-volume experiment is about GPU memory traffic: CPUs run the full read only
            // (OpenCL CPU devices sweep too at quick scale, so CI checks the fibres stay identical).
            let sweep = dev.info().is_gpu || (!dev.is_cpu() && ctx.scale == Scale::Quick);
            let groups: Vec<u32> = if sweep { (3..=GROUPS as u32).rev().collect() } else { vec![GROUPS as u32] };
            for interp in interps(dev) {
                let mut params: Vec<TraceParams> =
                    groups.iter().map(|&g| TraceParams { step: h, max_steps: steps, method: Method::Rk2, interp, record: true, groups: g, ..Default::default() }).collect();
                params.push(TraceParams { method: Method::Euler, ..params[0] });
                let res = run_on(dev, &fields, &seeds, &params, ctx.repeats)?;
                let full = &res[0].1;
                for (p, (m, b)) in params.iter().zip(&res) {
                    if m.stopped_early > 0 {
                        bail!("{} fibres left the volume on {}: the benchmark volume is wrong", m.stopped_early, dev.label());
                    }
                    let same = b.ends == full.ends && b.points == full.points;
                    if p.method == Method::Rk2 && !same {
                        bail!("skipping {} groups changed the fibres on {}", GROUPS as u32 - p.groups, dev.label());
                    }
                    let bytes = BYTES_PER_SAMPLE * p.groups as usize / GROUPS;
                    let gbs = bytes_per_step(p) as f64 * m.steps as f64 / (m.timings.kernel_ms * 1e-3) / 1e9;
                    let v = if base_variant.is_empty() { variant(dev, interp) } else { base_variant.clone() };
                    // Euler: its own configuration (speed-ups against the CPU's Euler) and, on
                    // GPUs, its own series.
                    let (config, v) = match p.method {
                        Method::Rk2 => (format!("{bytes} B/sample"), v),
                        Method::Euler if base_variant.is_empty() => (format!("{bytes} B/sample, Euler"), format!("{v}, Euler")),
                        Method::Euler => (format!("{bytes} B/sample, Euler"), v),
                    };
                    let published = if p.method == Method::Rk2 && ctx.scale == Scale::Paper { lookup("geodesic_table1_read_volume", "bytes_read_per_step", &bytes.to_string(), "time_ms") } else { None };
                    notes.push(format!("{} [{v}] {config}: {gbs:.1} GB/s effective, {:.3e} steps/s", dev.label(), m.steps_per_s()));
                    rows.push(
                        Row::new(self.id(), config, dev.info(), v, "time", "ms", m.timings.kernel_ms)
                            .x(bytes as f64)
                            .published(published, PUB_DEVICE)
                            .split(&m.timings)
                            .substituted(substituted.clone()),
                    );
                }
            }
        }
        add_speedups(&mut rows);
        notes.push("Published: GTX 260, 2048 fibres x 4096 RK2 steps, 165.1 / 134.1 / 103.1 / 90.6 ms (38.8 / 40.0 / 41.6 / 35.6 GB/s); RK2 165.133 ms vs Euler 165.347 ms. Every run here checked that no fibre left the volume and that skipping reads left every fibre bit-identical.".into());
        Ok(self.report(rows, notes))
    }
}

pub struct GeodesicF6;

impl Target for GeodesicF6 {
    fn id(&self) -> &'static str {
        "geodesic-f6"
    }
    fn title(&self) -> &'static str {
        "Texture against in-kernel interpolation over the step size (001 Fig. 6)"
    }
    fn plot(&self) -> PlotSpec {
        PlotSpec { x_label: "step h (voxels)".into(), y_label: "tracing kernel time (ms)".into(), log_x: false, log_y: false, metric: None }
    }
    fn run(&self, ctx: &RunCtx) -> Result<Report> {
        let (dims, nseeds, steps) = match ctx.scale {
            Scale::Quick => ([128, 24, 24], 128, 100),
            Scale::Paper => ([1024, 64, 64], 2048, 1024),
        };
        let hs: Vec<f32> = (1..=10).map(|i| 0.05 * i as f32).collect();
        let fields = long_fields(dims)?;
        // One seed set for every step size, placed for the longest reach.
        let seeds = long_seeds(dims, nseeds, 0.5 * steps as f64 * 1.05, ctx.seed)?;
        // GPUs only, as the figure; OpenCL CPU devices stand in where there is no GPU (CI).
        let gpus: Vec<&Device> = ctx.devices.iter().filter(|d| d.info().is_gpu).collect();
        let devs: Vec<&Device> = if gpus.is_empty() { ctx.devices.iter().filter(|d| !d.is_cpu()).collect() } else { gpus };
        let substituted = format!("synthetic {}x{}x{} volume of geodesic-t1, {nseeds} fibres x {steps} RK2 steps (fixed count: smaller steps stay longer in each cell)", dims[0], dims[1], dims[2]);
        let mut rows = Vec::new();
        for dev in devs {
            ctx.say(&format!("geodesic-f6 on {}", dev.label()));
            for interp in interps(dev) {
                let params: Vec<TraceParams> = hs.iter().map(|&h| TraceParams { step: h, max_steps: steps, method: Method::Rk2, interp, record: true, ..Default::default() }).collect();
                for (p, (m, _)) in params.iter().zip(run_on(dev, &fields, &seeds, &params, ctx.repeats)?) {
                    rows.push(
                        Row::new(self.id(), format!("h = {:.2}", p.step), dev.info(), variant(dev, interp), "time", "ms", m.timings.kernel_ms)
                            .x(crate::repro::decimal(p.step))
                            .split(&m.timings)
                            .substituted(substituted.clone()),
                    );
                }
            }
        }
        if rows.is_empty() {
            bail!("geodesic-f6 needs an OpenCL or CUDA device");
        }
        Ok(self.report(
            rows,
            vec![
                "001 Fig. 6 gives no table: in-kernel interpolation gets faster at small steps (the paper attributes it to reuse of the cell's voxels), yet texture filtering stays faster for the typical steps 0.1-0.2 (GTX 260).".into(),
                "Our in-kernel variant keeps no voxels between samples; any reuse at small steps comes from the caches.".into(),
            ],
        ))
    }
}
