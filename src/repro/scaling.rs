//! Multi-device scaling (`neuroport bench split`): the split phases of bedpost, geodesic tracing
//! and probtrack on the first 1, 2, 4, 8 ... devices of a list, in memory (no NIfTI I/O, which
//! does not change with the device count), each timed as the median wall time of its repeats
//! after a warm-up run on every device (kernels compiled, modules loaded).
//!
//! Workloads (paper scale): bedpost on the 358,600-voxel pipeline volume and on 003 Table III
//! dataset 2 (402,194 voxels x 600 loops); geodesic RK2 on 1 M fibres x 1000 steps of the long
//! volume (summaries only, as `bench geodesic`); probtrack on 003 Table II dataset 2 (402,194
//! seeds x 50 samples, step 0.1 voxel, threshold 0.9). Quick scale: the same on small inputs.

use super::Scale;
use crate::bedpost::{self, sim};
use crate::geodesic::{self, bench as gbench, TraceParams};
use crate::probtrack::{self, Compaction};
use crate::runtime::split::{Shares, Split};
use crate::runtime::{timing::median, Device};
use crate::synth::{self, dataset};
use crate::volume::{GradientTable, Volume};
use anyhow::Result;
use std::time::Instant;

pub const WORKLOADS: [&str; 4] = ["bedpost-pipeline", "bedpost-t3", "geodesic", "probtrack"];

/// One workload on one device count.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Point {
    pub workload: String,
    pub devices: usize,
    /// Median wall seconds of the whole library call (split phases plus host work between).
    pub run_s: f64,
    /// Median wall seconds of the split phase alone (bedpost: the sampling).
    pub split_s: f64,
    /// Speed-up and efficiency (speed-up / devices) of the split phase against one device.
    pub speedup: f64,
    pub efficiency: f64,
    /// The last repeat's per-device shares.
    pub shares: String,
}

/// A prepared workload: runs once on a split, returning the split phase's shares.
type Job<'a> = Box<dyn Fn(&Split) -> Result<Shares> + 'a>;

struct Bedpost {
    vol: Volume,
    g: GradientTable,
    mask: Vec<u8>,
}

fn bedpost_job<'a>(b: &'a Bedpost, cfg: &'a bedpost::Config) -> Job<'a> {
    Box::new(move |s| Ok(bedpost::run_split(s, None, &b.vol, &b.g, &b.mask, cfg)?.1))
}

/// Device counts 1, 2, 4, 8 ... up to `n`, and `n` itself.
pub fn counts(n: usize) -> Vec<usize> {
    let mut v: Vec<usize> = std::iter::successors(Some(1usize), |&c| Some(c * 2)).take_while(|&c| c < n).collect();
    v.push(n.max(1));
    v
}

/// Runs `workloads` (names of [`WORKLOADS`]) on the first 1, 2, 4 ... of `devices`; `say`
/// reports progress.
pub fn run(devices: &[Device], workloads: &[String], scale: Scale, repeats: usize, seed: u64, say: &dyn Fn(&str)) -> Result<Vec<Point>> {
    if let Some(bad) = workloads.iter().find(|w| !WORKLOADS.contains(&w.as_str())) {
        anyhow::bail!("unknown workload '{bad}': use {}", WORKLOADS.join(", "));
    }
    let paper = scale == Scale::Paper;
    let mut out = Vec::new();
    for w in workloads {
        say(&format!("{w}: preparing"));
        let bcfg = bedpost::Config { seed, ..bedpost::Config::default() };
        let (bp, field, fields);
        let job: Job = match w.as_str() {
            "bedpost-pipeline" => {
                let ds = dataset::build(&super::pipeline::spec(scale))?;
                let vol = Volume::from_flat(ds.geom.clone(), ds.table.len(), ds.dwi);
                bp = Bedpost { vol, g: ds.table, mask: ds.mask };
                bedpost_job(&bp, &bcfg)
            }
            "bedpost-t3" => {
                let d = &if paper { bedpost::repro::PAPER } else { bedpost::repro::QUICK }[1];
                let g = synth::gradient_table(4, 64, 1000.0);
                let (vol, mask, _) = sim::phantom(d.dims, [d.voxel_mm; 3], d.nmask, &g, 30.0, seed ^ d.id as u64);
                bp = Bedpost { vol, g, mask };
                bedpost_job(&bp, &bcfg)
            }
            "geodesic" => {
                let dims = if paper { [1024, 64, 64] } else { [128, 16, 16] };
                let (n, steps) = if paper { (1_000_000, 1000) } else { (20_000, 200) };
                let p = TraceParams { step: 0.2, max_steps: steps, record: false, ..TraceParams::default() };
                fields = gbench::long_fields(dims)?;
                let seeds = gbench::long_seeds(dims, n, p.step as f64 * steps as f64 * 1.05, seed)?;
                let f = &fields;
                Box::new(move |s| Ok(geodesic::trace_split(s, f, &seeds, &p, None, false)?.1))
            }
            "probtrack" => {
                let d = &if paper { bedpost::repro::PAPER } else { bedpost::repro::QUICK }[1];
                let (f, seeds) = probtrack::repro::data(d, seed);
                let cfg = probtrack::repro::config(d, 0.1, 0.9, probtrack::Schedule::default(), Compaction::Device);
                field = f;
                let f = &field;
                Box::new(move |s| Ok(probtrack::run_split(s, f, &seeds, &cfg)?.1))
            }
            other => unreachable!("workload {other} checked above"),
        };
        say(&format!("{w}: warm-up on all {} devices", devices.len()));
        job(&Split::new(devices.to_vec()))?;
        let mut one = f64::NAN;
        for n in counts(devices.len()) {
            let split = Split::new(devices[..n].to_vec());
            let (mut runs, mut phases, mut last) = (Vec::new(), Vec::new(), Shares::default());
            for _ in 0..repeats.max(1) {
                let t = Instant::now();
                last = job(&split)?;
                runs.push(t.elapsed().as_secs_f64());
                phases.push(last.wall_s);
            }
            let split_s = median(&mut phases);
            if n == 1 {
                one = split_s;
            }
            let p = Point { workload: w.clone(), devices: n, run_s: median(&mut runs), split_s, speedup: one / split_s, efficiency: one / split_s / n as f64, shares: last.to_string() };
            say(&format!("{w} on {n}: split {:.3} s (run {:.3} s), efficiency {:.0} %; {}", p.split_s, p.run_s, 100.0 * p.efficiency, p.shares));
            out.push(p);
        }
    }
    Ok(out)
}
