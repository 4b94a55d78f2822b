//! Probabilistic streamlining (paper 003 Sec. III-B and IV-B; FSL probtrackx2's outputs): for
//! every seed voxel and every streamline index k, a streamline through bedpost sample volume
//! k mod nsamp, traced both ways from the seed centre in segmented launches (`NumIteration[]`,
//! [`schedule`]) with the unfinished paths compacted between launches. The step rules live in
//! `step.rs` and `cl/common/probtrack.h` (docs/probtrack.md says why each is so); this file
//! holds the host logic, once for every device: batches, segments, compaction, aggregation. It
//! talks only to [`ProbtrackKernels`]; `cpu.rs` and `gpu.rs` implement it.

pub mod check;
pub mod cpu;
pub mod field;
pub mod gpu;
pub mod output;
pub mod phantom;
pub mod repro;
pub mod schedule;
pub mod step;

use crate::runtime::split::{Shares, Split};
use crate::runtime::{timing::wall_ms, Device, Timings};
use anyhow::{bail, Result};
pub use field::Field;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
pub use schedule::Schedule;
pub use step::{Params, Path};

/// Where the unfinished paths are compacted between segments.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Compaction {
    /// 003's: end points read back, reduced and compacted on the host, sent again.
    Host,
    /// Prefix sum over the live flags and a scatter on the device; only the count comes back.
    Device,
}

impl Compaction {
    pub fn name(self) -> &'static str {
        match self {
            Compaction::Host => "host",
            Compaction::Device => "device",
        }
    }
}

/// What `neuroport probtrack` asks of the tracker (defaults: probtrackx2's).
#[derive(Clone, Debug)]
pub struct Config {
    /// Streamlines per seed voxel (probtrackx's --nsamples), cycling through the sample volumes.
    pub nsamples: usize,
    pub step_mm: f32,
    /// Smallest cosine between successive steps (probtrackx's -c).
    pub min_cos: f32,
    pub fibthresh: f32,
    pub max_steps: usize,
    pub schedule: Schedule,
    /// probtrackx's random sub-voxel choice of the voxel whose sample a step reads.
    pub jitter: bool,
    pub seed: u64,
    pub compaction: Compaction,
    /// Most streamlines per batch (default: what fits the device).
    pub max_batch: Option<usize>,
    pub progress: bool,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            nsamples: 5000,
            step_mm: 0.5,
            min_cos: 0.2,
            fibthresh: 0.01,
            max_steps: 2000,
            schedule: Schedule::default(),
            jitter: true,
            seed: 0,
            compaction: Compaction::Device,
            max_batch: None,
            progress: false,
        }
    }
}

impl Config {
    pub fn validate(&self, nseeds: usize) -> Result<()> {
        if self.nsamples == 0 {
            bail!("--nsamples must be positive");
        }
        if !(self.step_mm > 0.0 && self.step_mm.is_finite()) {
            bail!("--step must be a positive length in mm");
        }
        if !(-1.0..=1.0).contains(&self.min_cos) {
            bail!("--curvature is a cosine: between -1 and 1");
        }
        if self.max_steps == 0 || self.max_steps > i32::MAX as usize / 2 {
            bail!("--max-steps must be between 1 and {}", i32::MAX / 2);
        }
        if (nseeds as u64) * (self.nsamples as u64) > u32::MAX as u64 {
            bail!("{nseeds} seeds x {} samples: more than 2^32 streamlines", self.nsamples);
        }
        Ok(())
    }

    pub fn params(&self, field: &Field, nseeds: usize, count: bool) -> Params {
        let [nx, ny, nz] = field.geom.dims;
        let vs = field.geom.voxel_size;
        Params {
            nx: nx as i32,
            ny: ny as i32,
            nz: nz as i32,
            nsamp: field.nsamp as i32,
            hx: self.step_mm / vs[0],
            hy: self.step_mm / vs[1],
            hz: self.step_mm / vs[2],
            min_cos: self.min_cos,
            fibthresh: self.fibthresh,
            max_steps: self.max_steps as i32,
            jitter: self.jitter as i32,
            key: step::hash((self.seed as u32) ^ step::hash((self.seed >> 32) as u32)),
            count: count as i32,
            nseeds: nseeds as i32,
            pad: [0; 2],
        }
    }
}

/// The streamlines of one batch: `t0..t0 + n`, or the listed ones. Path i of the batch is
/// half i / n of streamline number i % n; streamline t starts at seed t % nseeds and reads
/// sample volume (t / nseeds) mod nsamp, so a batch walks the seeds of one sample volume.
#[derive(Clone, Copy, Debug)]
pub enum Batch<'a> {
    Range(u32, usize),
    List(&'a [u32]),
}

impl Batch<'_> {
    pub fn len(&self) -> usize {
        match self {
            Batch::Range(_, n) => *n,
            Batch::List(l) => l.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub fn streamline(&self, j: usize) -> u32 {
        match self {
            Batch::Range(t0, _) => t0 + j as u32,
            Batch::List(l) => l[j],
        }
    }
}

/// The device operations of the tracker. The samples, ROI words and seeds live on the device
/// from `upload` on; a batch of paths from `start` to `results`.
pub trait ProbtrackKernels {
    fn name(&self) -> String;
    fn upload(&mut self, field: &Field, seeds: &[u32]) -> Result<()>;
    /// Most streamlines one batch may hold on this device.
    fn max_batch(&self) -> usize;
    /// Zeroes the visitation map.
    fn reset_visits(&mut self) -> Result<()>;
    /// Starts the 2 x len paths of `batch`; returns how many are live.
    fn start(&mut self, p: &Params, batch: Batch) -> Result<usize>;
    /// Runs every live path up to `iters` steps.
    fn segment(&mut self, p: &Params, iters: usize) -> Result<()>;
    /// Keeps only the unfinished paths; returns how many.
    fn compact(&mut self, how: Compaction) -> Result<usize>;
    /// Steps and ROI flags of every path of the batch.
    fn results(&mut self) -> Result<(Vec<i32>, Vec<u32>)>;
    /// Voxel entries counted so far (one per voxel).
    fn visits(&mut self) -> Result<Vec<u32>>;
    fn take_timings(&mut self) -> Timings;
}

/// The tracker on `device`.
pub fn kernels(device: &Device) -> Result<Box<dyn ProbtrackKernels>> {
    Ok(match device {
        Device::Cpu(c) => Box::new(cpu::CpuProbtrack::new(c.clone())),
        _ => Box::new(gpu::GpuProbtrack::new(crate::runtime::gpu::Gpu::require(device)?)?),
    })
}

/// Everything one run produces.
#[derive(Clone, Debug, Default)]
pub struct Tracks {
    pub nseeds: usize,
    pub nsamples: usize,
    /// Streamlines kept (through every waypoint, never into the exclusion mask): waytotal.
    pub waytotal: u64,
    /// The kept streamlines' numbers, ascending.
    pub kept: Vec<u32>,
    /// Per seed (in seed order) x target: kept streamlines reaching the target.
    pub seed_targets: Vec<u32>,
    /// Per voxel: kept streamlines through it (voxel entries; the seed voxel once).
    pub visits: Vec<u32>,
    /// Kept streamlines by length in steps (both halves).
    pub lengths: Vec<u64>,
    /// Steps taken by every path (the workload, 003's "total fibre length").
    pub total_steps: u64,
    /// Longest half-streamline in steps (003's "longest fibre length").
    pub longest: u32,
    /// Paths that came back finished (must equal `stats.paths`).
    pub finished: u64,
    pub stats: Stats,
}

/// What the launches cost.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    /// Paths started.
    pub paths: u64,
    pub launches: usize,
    /// Tracing launches, start-up and results; compaction (003's "reduction") apart.
    pub trace: Timings,
    pub compact: Timings,
}

/// Runs every batch through the schedule; returns the live path count after each segment via
/// `on_segment` and the per-path results via `on_batch`.
fn pass(k: &mut dyn ProbtrackKernels, p: &Params, cfg: &Config, batches: &[Batch], bar: &ProgressBar, t: &mut Stats, mut on_batch: impl FnMut(&Batch, &[i32], &[u32])) -> Result<()> {
    let segs = cfg.schedule.segments(cfg.max_steps);
    for b in batches {
        let mut live = k.start(p, *b)?;
        t.paths += 2 * b.len() as u64;
        for &n in &segs {
            if live == 0 {
                break;
            }
            k.segment(p, n)?;
            t.trace.add(&k.take_timings());
            live = k.compact(cfg.compaction)?;
            t.compact.add(&k.take_timings());
            t.launches += 1;
        }
        if live != 0 {
            bail!("{live} paths still live after the last segment");
        }
        let (steps, flags) = k.results()?;
        t.trace.add(&k.take_timings());
        let ((), ms) = wall_ms(|| on_batch(b, &steps, &flags));
        t.trace.host_ms += ms;
        bar.inc(b.len() as u64);
    }
    Ok(())
}

fn batches(r: std::ops::Range<usize>, per: usize) -> Vec<Batch<'static>> {
    r.clone().step_by(per.max(1)).map(|t0| Batch::Range(t0 as u32, per.min(r.end - t0))).collect()
}

/// What one range of streamlines adds to a run: every field of [`Tracks`] that sums.
struct Part {
    kept: Vec<u32>,
    seed_targets: Vec<u32>,
    visits: Vec<u32>,
    lengths: Vec<u64>,
    total_steps: u64,
    longest: u32,
    finished: u64,
    stats: Stats,
}

/// Tracks streamlines `range` on `k` (field and seeds uploaded) in batches the device holds. With
/// waypoints or an exclusion mask a streamline is kept only at its end, so the visitation map is
/// counted in a second pass over the range's kept streamlines alone (traced again, identically).
fn track_range(k: &mut dyn ProbtrackKernels, field: &Field, nseeds: usize, cfg: &Config, range: std::ops::Range<usize>, bar: &ProgressBar) -> Result<Part> {
    let filtering = filtering(field);
    let ntarg = field.targets.len();
    let mut t = Part { kept: Vec::new(), seed_targets: vec![0; nseeds * ntarg], visits: Vec::new(), lengths: vec![0; 2 * cfg.max_steps + 1], total_steps: 0, longest: 0, finished: 0, stats: Stats::default() };
    let mut stats = Stats::default();
    k.reset_visits()?;
    stats.trace.add(&k.take_timings());
    let per = k.max_batch().min(cfg.max_batch.unwrap_or(usize::MAX)).max(1);
    let p1 = cfg.params(field, nseeds, !filtering);
    let need = field.waypoint_bits();
    let tbits: Vec<u32> = (0..ntarg).map(|j| field.target_bit(j)).collect();
    pass(k, &p1, cfg, &batches(range, per), bar, &mut stats, |b, steps, flags| {
        let n = b.len();
        for j in 0..n {
            let (s0, s1) = (steps[j], steps[n + j]);
            let f = flags[j] | flags[n + j];
            t.total_steps += (s0 + s1) as u64;
            t.longest = t.longest.max(s0.max(s1) as u32);
            t.finished += 2;
            if f & field::EXCLUDE != 0 || f & need != need {
                continue;
            }
            let st = b.streamline(j);
            t.kept.push(st);
            t.lengths[(s0 + s1) as usize] += 1;
            let seed = st as usize % nseeds;
            for (c, &bit) in tbits.iter().enumerate() {
                if f & bit != 0 {
                    t.seed_targets[seed * ntarg + c] += 1;
                }
            }
        }
    })?;
    if filtering {
        let p2 = cfg.params(field, nseeds, true);
        let lists: Vec<Batch> = t.kept.chunks(per).map(Batch::List).collect();
        pass(k, &p2, cfg, &lists, bar, &mut stats, |_, _, _| {})?;
    }
    t.visits = k.visits()?;
    stats.trace.add(&k.take_timings());
    t.stats = stats;
    Ok(t)
}

impl Tracks {
    fn new(field: &Field, nseeds: usize, cfg: &Config) -> Tracks {
        let lengths = vec![0; 2 * cfg.max_steps + 1];
        Tracks { nseeds, nsamples: cfg.nsamples, seed_targets: vec![0; nseeds * field.targets.len()], visits: vec![0; field.nvox()], lengths, ..Tracks::default() }
    }

    /// Adds a range's counts (integer sums: the same totals in any order).
    fn add(&mut self, p: Part) {
        self.kept.extend(p.kept);
        add_all(&mut self.seed_targets, &p.seed_targets);
        add_all(&mut self.visits, &p.visits);
        for (a, b) in self.lengths.iter_mut().zip(&p.lengths) {
            *a += b;
        }
        self.total_steps += p.total_steps;
        self.longest = self.longest.max(p.longest);
        self.finished += p.finished;
        self.stats.paths += p.stats.paths;
        self.stats.launches += p.stats.launches;
        self.stats.trace.add(&p.stats.trace);
        self.stats.compact.add(&p.stats.compact);
    }

    /// Kept streamlines in ascending order, the waytotal, and the seed voxels in the map.
    fn finish(&mut self, seeds: &[u32]) {
        self.kept.sort_unstable();
        self.waytotal = self.kept.len() as u64;
        // The seed voxel is where every half starts; the kernels count entries only.
        for &st in &self.kept {
            self.visits[seeds[st as usize % seeds.len()] as usize] += 1;
        }
    }
}

fn add_all(a: &mut [u32], b: &[u32]) {
    for (x, y) in a.iter_mut().zip(b) {
        *x += y;
    }
}

/// Tracks `cfg.nsamples` streamlines from every seed voxel (flat indices) on `k`.
pub fn run(k: &mut dyn ProbtrackKernels, field: &Field, seeds: &[u32], cfg: &Config) -> Result<Tracks> {
    cfg.validate(seeds.len())?;
    let total = seeds.len() * cfg.nsamples;
    let mut t = Tracks::new(field, seeds.len(), cfg);
    k.upload(field, seeds)?;
    t.stats.trace.add(&k.take_timings());
    let bar = progress_bar((total * if filtering(field) { 2 } else { 1 }) as u64, cfg.progress);
    let part = track_range(k, field, seeds.len(), cfg, 0..total, &bar);
    bar.finish_and_clear();
    t.add(part?);
    t.finish(seeds);
    Ok(t)
}

/// Smallest range of streamlines a split hands a device.
pub const SPLIT_MIN_STREAMLINES: usize = 1 << 18;

/// [`run`] split across `split`'s devices in ranges of streamlines (seed batches of one sample
/// volume after another). A streamline's random choices are keyed by its number, so several
/// devices of one kind give the bytes one gives.
pub fn run_split(split: &Split, field: &Field, seeds: &[u32], cfg: &Config) -> Result<(Tracks, Shares)> {
    cfg.validate(seeds.len())?;
    let total = seeds.len() * cfg.nsamples;
    let plan = split.plan(total, SPLIT_MIN_STREAMLINES);
    let mut t = Tracks::new(field, seeds.len(), cfg);
    let bar = progress_bar((total * if filtering(field) { 2 } else { 1 }) as u64, cfg.progress);
    let shares = split.run(
        plan.len(),
        |dev| {
            let mut k = kernels(dev)?;
            k.upload(field, seeds)?;
            Ok(k)
        },
        |k, c| {
            let p = track_range(k.as_mut(), field, seeds.len(), cfg, plan[c].clone(), &bar)?;
            let mut tm = p.stats.trace;
            tm.add(&p.stats.compact);
            Ok((p, tm))
        },
        |_, p| t.add(p),
    );
    bar.finish_and_clear();
    let shares = shares?;
    t.finish(seeds);
    Ok((t, shares))
}

fn filtering(field: &Field) -> bool {
    field.nwaypoints > 0 || field.roi.iter().any(|&w| w & field::EXCLUDE != 0)
}

fn progress_bar(len: u64, show: bool) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template("probtrack {bar:40} {pos}/{len} streamlines ({eta} left)") {
        bar.set_style(style);
    }
    bar
}
