//! Probabilistic streamlining (paper 003 Sec. III-B and IV-B; FSL probtrackx2's outputs): for
//! every seed voxel and every streamline index k, a streamline through bedpost sample volume
//! k mod nsamp, traced both ways from the seed centre in segmented launches (`NumIteration[]`,
//! [`schedule`]) with the unfinished paths compacted between launches. The step rules live in
//! `step.rs` and `cl/common/probtrack.h` (docs/probtrack.md says why each is so); this file
//! holds the host logic, once for every device: batches, segments, compaction, aggregation. It
//! talks only to [`ProbtrackKernels`]; `cpu.rs` and `gpu.rs` implement it.

pub mod bench;
pub mod check;
pub mod cpu;
pub mod crop;
pub mod field;
pub mod gpu;
mod nonfinite;
pub mod output;
pub mod phantom;
pub mod repro;
pub mod schedule;
pub mod step;
pub mod tally;

use crate::runtime::split::{Shares, Split};
use crate::runtime::{timing::wall_ms, Device, Timings};
use anyhow::{bail, Result};
pub use field::Field;
use crate::io::progress::Progress;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
pub use tally::{Counts, Kept, Rules};
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

/// GPU-only options given for a run on the CPU alone are said, not dropped without a word (as
/// bedpost's `--variant`): the CPU compacts its paths in memory whichever `--compaction` is asked
/// for, and has no second queue for `--overlap`. A warning, not an error: the result is the same.
/// `compaction` is None when the option was not given.
pub fn unused_option_warning(split: &Split, compaction: Option<Compaction>, overlap: bool) -> Option<String> {
    let given: Vec<String> = compaction.map(|c| format!("--compaction {}", c.name())).into_iter().chain(overlap.then(|| "--overlap".to_string())).collect();
    (!given.is_empty() && split.devices().iter().all(|d| d.is_cpu())).then(|| {
        let verb = if given.len() > 1 { "apply" } else { "applies" };
        format!("warning: {} {verb} to OpenCL/CUDA only; the cpu backend compacts its paths in memory and traces one batch at a time", given.join(" and "))
    })
}

/// How the split's devices compact, for the run summary: `how` on GPUs; the CPU compacts on the
/// host (cpu.rs: a `retain` in memory, whichever is asked for).
pub fn compaction_label(split: &Split, how: Compaction) -> String {
    let (cpu, gpu) = split.devices().iter().fold((false, false), |(c, g), d| (c || d.is_cpu(), g || !d.is_cpu()));
    match (cpu, gpu) {
        (true, true) if how != Compaction::Host => format!("{} compaction on GPUs, host on the CPU", how.name()),
        (true, false) => "host compaction".to_string(),
        _ => format!("{} compaction", how.name()),
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
    /// Two batches in flight on two queues, the host work of one overlapping the kernels of the
    /// other (003 Fig. 8); same result as the serial run. No effect on the CPU backend.
    pub overlap: bool,
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
            overlap: false,
            progress: false,
        }
    }
}

/// The longest half-streamline `--max-steps` allows: the counters' indices, 5 x max_steps + 3
/// (tally.rs), stay well inside the kernels' int (they wrapped past ~4.3e8), and the histograms
/// (~50 bytes a step on the host) within a workstation's memory; probtrackx's default is 2000.
pub const MAX_STEPS: usize = 100_000_000;

impl Config {
    pub fn validate(&self, field: &Field, nseeds: usize) -> Result<()> {
        if self.nsamples == 0 {
            bail!("--nsamples must be positive");
        }
        if !(self.step_mm > 0.0 && self.step_mm.is_finite()) {
            bail!("--step must be a positive length in mm");
        }
        // Longer than the grid, every streamline left it in its first step: 0 steps, exit 0.
        let g = &field.geom;
        let longest = (0..3).map(|i| g.dims[i] as f32 * g.voxel_size[i]).fold(0.0, f32::max);
        if self.step_mm > longest {
            let step = if self.step_mm >= 1e6 { format!("{:e}", self.step_mm) } else { self.step_mm.to_string() };
            bail!("--step {step} mm is longer than the image ({longest} mm along its longest edge): every streamline would end after one step");
        }
        if !(-1.0..=1.0).contains(&self.min_cos) {
            bail!("--curvature is a cosine: between -1 and 1");
        }
        // A stick counts when its fraction is above the threshold: NaN (never above) or 1 and
        // more would end every streamline at its seed.
        if !(0.0..1.0).contains(&self.fibthresh) {
            bail!("--fibthresh is a volume fraction: at least 0 and below 1, not {}", self.fibthresh);
        }
        if self.max_steps == 0 || self.max_steps > MAX_STEPS {
            bail!("--max-steps must be between 1 and {MAX_STEPS} (the length histograms hold ~50 bytes a step)");
        }
        // The histograms' counters (tally.rs), the host's copy of them and the lengths made
        // from them: refused here rather than aborted allocating.
        let rules = Rules::new(field, nseeds, self.max_steps);
        let counters = (3 * 4 * rules.sums_len() + 8 * rules.len_bins()) as f64;
        crate::runtime::memory::check_fits(&format!("--max-steps {}", self.max_steps), counters, crate::runtime::memory::available())?;
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
            origin: field.crop.origin.map(|x| x as i32),
            crop: field.crop.dims.map(|x| x as i32),
            rows: field.crop.nvox() as i32,
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
pub trait ProbtrackKernels: Send {
    fn name(&self) -> String;
    fn upload(&mut self, field: &Field, seeds: &[u32]) -> Result<()>;
    /// [`upload`](Self::upload) with the sample volumes left out but for `volumes`, the others
    /// added by [`add_volumes`](Self::add_volumes) when a range needs them: a split's device
    /// traces only its ranges' streamlines, and a streamline reads one volume. The default, for
    /// a device that shares the host's samples, is the whole upload.
    fn upload_part(&mut self, field: &Field, seeds: &[u32], volumes: &[std::ops::Range<usize>]) -> Result<()> {
        let _ = volumes;
        self.upload(field, seeds)
    }
    /// Makes sample volumes `volumes` present on the device (after `upload_part`).
    fn add_volumes(&mut self, field: &Field, volumes: &[std::ops::Range<usize>]) -> Result<()> {
        let _ = (field, volumes);
        Ok(())
    }
    /// Most streamlines one batch may hold on this device.
    fn max_batch(&self) -> usize;
    /// Zeroes the run's counters (visits, seed-target counts, `tally.rs`'s sums), laid out by `rules`.
    fn reset_counts(&mut self, rules: &Rules) -> Result<()>;
    /// Starts the 2 x len paths of `batch`; returns how many are live.
    fn start(&mut self, p: &Params, batch: Batch) -> Result<usize>;
    /// Runs every live path up to `iters` steps.
    fn segment(&mut self, p: &Params, iters: usize) -> Result<()>;
    /// Keeps only the unfinished paths; returns how many.
    fn compact(&mut self, how: Compaction) -> Result<usize>;
    /// Once every path of the batch (`batch`, as given to `start`) has ended: its keep words
    /// (`Rules::tally`), and with `full` its counts added into the run's counters.
    fn tally(&mut self, p: &Params, batch: Batch, full: bool) -> Result<Vec<u32>>;
    /// The run's counters so far.
    fn counts(&mut self) -> Result<Counts>;
    fn take_timings(&mut self) -> Timings;
    /// A second tracker on the same device and uploaded data with its own queue, for a second
    /// batch in flight; None where that gains nothing (the CPU: the same cores).
    fn twin(&mut self) -> Result<Option<Box<dyn ProbtrackKernels>>>;
    /// Test hook: the ids of the live paths in their array order, and every path's result slot
    /// (steps; negative while the path has none).
    fn progress(&mut self) -> Result<(Vec<u32>, Vec<i32>)>;
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
    pub kept: Kept,
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
    /// Wall time of turning the batches' results into the outputs (the tally launches or the
    /// CPU's tally, the keep words' copy, the counters' download), outside `trace`.
    pub tally_ms: f64,
    /// Device time of the tally (kernel and copies; the CPU: its parallel loops).
    pub tally: Timings,
    /// Wall time of the whole run, upload to visitation map (overlapped work counts once).
    pub wall_ms: f64,
    /// Batches, and how many were traced on the second queue (`Config::overlap`).
    pub batches: usize,
    pub overlapped: usize,
}

impl Stats {
    fn add(&mut self, o: &Stats) {
        self.paths += o.paths;
        self.launches += o.launches;
        self.trace.add(&o.trace);
        self.compact.add(&o.compact);
        self.tally_ms += o.tally_ms;
        self.tally.add(&o.tally);
        self.batches += o.batches;
        self.overlapped += o.overlapped;
    }
}

/// Runs one batch through the schedule on one kernel object: start, then per segment a launch
/// and a compaction of the unfinished paths; then its tally (`full`: counted into the run's
/// counters), whose keep words it returns. `ended` hears how many of the batch's paths have
/// ended so far, after the start and after each compaction (counts the loop has anyway).
pub fn run_batch(k: &mut dyn ProbtrackKernels, p: &Params, segs: &[usize], how: Compaction, b: Batch, full: bool, t: &mut Stats, ended: &mut dyn FnMut(usize)) -> Result<Vec<u32>> {
    let mut live = k.start(p, b)?;
    t.paths += 2 * b.len() as u64;
    t.batches += 1;
    ended(2 * b.len() - live);
    for &n in segs {
        if live == 0 {
            break;
        }
        k.segment(p, n)?;
        t.trace.add(&k.take_timings());
        live = k.compact(how)?;
        t.compact.add(&k.take_timings());
        t.launches += 1;
        ended(2 * b.len() - live);
    }
    if live != 0 {
        bail!("{live} paths still live after the last segment");
    }
    let (words, ms) = wall_ms(|| k.tally(p, b, full));
    t.tally_ms += ms;
    t.tally.add(&k.take_timings());
    words
}

/// One batch traced and tallied on `k`: its kept streamlines. The bar moves as the batch's paths
/// end, two (a streamline's halves) to a streamline, not once at the batch's end: a batch holds
/// up to 2^20 streamlines on the CPU, a whole small run, whose progress went from 0 to 100 %.
fn batch_tally(k: &mut dyn ProbtrackKernels, p: &Params, cfg: &Config, full: bool, b: Batch, t: &mut Stats, bar: &Progress) -> Result<Kept> {
    let mut shown = 0;
    let mut ended = |paths: usize| {
        bar.inc((paths / 2 - shown) as u64);
        shown = paths / 2;
    };
    let words = run_batch(k, p, &cfg.schedule.segments(cfg.max_steps), cfg.compaction, b, full, t, &mut ended)?;
    let mut kept = Kept::default();
    let ((), ms) = wall_ms(|| kept.push_words(&b, &words));
    t.tally_ms += ms;
    Ok(kept)
}

/// Every batch through the schedule, tallied (`full`: into the run's counters); returns the
/// kept streamlines. With a twin (a second kernel object on its own queue), two batches are in
/// flight, one per thread: the host work of one (its compaction round trips on the host path,
/// its tally) overlaps the kernels of the other (003 Fig. 8). Kept lists are joined in batch
/// order and the counters are integer sums, so the result is the serial run's.
fn pass(k: &mut dyn ProbtrackKernels, twin: Option<&mut Box<dyn ProbtrackKernels>>, p: &Params, cfg: &Config, full: bool, batches: &[Batch], bar: &Progress, stats: &mut Stats) -> Result<Kept> {
    let mut out = Kept::default();
    let Some(twin) = twin.filter(|_| batches.len() > 1) else {
        for b in batches {
            let t = batch_tally(k, p, cfg, full, *b, stats, bar)?;
            out.append(&t);
        }
        return Ok(out);
    };
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let slots: Vec<Mutex<Option<Kept>>> = batches.iter().map(|_| Mutex::new(None)).collect();
    let worker = |k: &mut dyn ProbtrackKernels| -> Result<Stats> {
        let mut st = Stats::default();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= batches.len() || failed.load(Ordering::Relaxed) {
                return Ok(st);
            }
            match batch_tally(k, p, cfg, full, batches[i], &mut st, bar) {
                Ok(t) => *slots[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(t),
                Err(e) => {
                    failed.store(true, Ordering::Relaxed);
                    return Err(e);
                }
            }
        }
    };
    let (a, b) = std::thread::scope(|s| {
        let h = s.spawn(|| worker(twin.as_mut()));
        let a = worker(k);
        (a, h.join().unwrap_or_else(|_| Err(anyhow::anyhow!("the second tracking thread panicked"))))
    });
    let (a, mut b) = (a?, b?);
    b.overlapped = b.batches;
    stats.add(&a);
    stats.add(&b);
    for s in slots {
        let t = s.into_inner().unwrap_or_else(|e| e.into_inner()).ok_or_else(|| anyhow::anyhow!("a batch was never traced"))?;
        out.append(&t);
    }
    Ok(out)
}

fn batches(r: std::ops::Range<usize>, per: usize) -> Vec<Batch<'static>> {
    r.clone().step_by(per.max(1)).map(|t0| Batch::Range(t0 as u32, per.min(r.end - t0))).collect()
}

/// Streamlines per batch: what fits the device (and `max_batch`); with overlap at least four
/// batches (two in flight, alternating) of no fewer than 2^16 streamlines each.
fn batch_size(k: &dyn ProbtrackKernels, cfg: &Config, total: usize, overlap: bool) -> usize {
    let mut per = k.max_batch().min(cfg.max_batch.unwrap_or(usize::MAX)).max(1);
    if overlap && cfg.max_batch.is_none() {
        per = per.min(total.div_ceil(4).max(1 << 16));
    }
    per
}

fn filtering(field: &Field) -> bool {
    field.nwaypoints > 0 || field.roi.iter().any(|&w| w & field::EXCLUDE != 0)
}

/// Tracks streamlines `range` on `k` (field and seeds uploaded) in batches the device holds;
/// returns the kept streamlines and the counters. With waypoints or an exclusion mask a
/// streamline is kept only at its end, so the visitation map is counted in a second pass over
/// the range's kept streamlines alone (they are traced again, identically).
fn track_range(k: &mut dyn ProbtrackKernels, field: &Field, nseeds: usize, cfg: &Config, range: std::ops::Range<usize>, bar: &Progress, stats: &mut Stats) -> Result<(Kept, Counts)> {
    let filtering = filtering(field);
    k.reset_counts(&Rules::new(field, nseeds, cfg.max_steps))?;
    stats.trace.add(&k.take_timings());
    let per = batch_size(k, cfg, range.len(), cfg.overlap);
    let mut twin = if cfg.overlap && range.len() > per { k.twin()? } else { None };
    let p1 = cfg.params(field, nseeds, !filtering);
    let kept = pass(k, twin.as_mut(), &p1, cfg, true, &batches(range.clone(), per), bar, stats)?;
    if filtering {
        // The bar holds two passes of the range; the second traces only the kept streamlines.
        bar.inc((range.len() - kept.len()) as u64);
        let p2 = cfg.params(field, nseeds, true);
        let list = kept.to_vec();
        let lists: Vec<Batch> = list.chunks(per).map(Batch::List).collect();
        pass(k, twin.as_mut(), &p2, cfg, false, &lists, bar, stats)?;
    }
    let (counts, ms) = wall_ms(|| k.counts());
    stats.tally_ms += ms;
    stats.tally.add(&k.take_timings());
    Ok((kept, counts?))
}

/// The run's outputs from its kept streamlines and counters.
fn finish(kept: Kept, counts: Counts, rules: &Rules, cfg: &Config, mut stats: Stats, t0: std::time::Instant) -> Result<Tracks> {
    let t = rules.totals(&counts.sums)?;
    if t.kept != kept.len() as u64 {
        bail!("probtrack: {} streamlines kept by their keep bits, {} by the length histogram", kept.len(), t.kept);
    }
    stats.wall_ms = t0.elapsed().as_secs_f64() * 1e3;
    Ok(Tracks {
        nseeds: rules.nseeds,
        nsamples: cfg.nsamples,
        waytotal: kept.len() as u64,
        kept,
        seed_targets: counts.seed_targets,
        visits: counts.visits,
        lengths: t.lengths,
        total_steps: t.total_steps,
        longest: t.longest,
        finished: t.finished,
        stats,
    })
}

/// Tracks `cfg.nsamples` streamlines from every seed voxel (flat indices) on `k`.
pub fn run(k: &mut dyn ProbtrackKernels, field: &Field, seeds: &[u32], cfg: &Config) -> Result<Tracks> {
    cfg.validate(field, seeds.len())?;
    field.check_seeds(seeds)?;
    let t0 = std::time::Instant::now();
    let total = seeds.len() * cfg.nsamples;
    let mut stats = Stats::default();
    k.upload(field, seeds)?;
    let bar = progress_bar((total * if filtering(field) { 2 } else { 1 }) as u64, cfg.progress);
    let r = track_range(k, field, seeds.len(), cfg, 0..total, &bar, &mut stats);
    bar.finish_and_clear();
    let (kept, counts) = r?;
    finish(kept, counts, &Rules::new(field, seeds.len(), cfg.max_steps), cfg, stats, t0)
}

/// The sample volumes that streamlines `r` read: streamline t reads volume (t / nseeds) mod nsamp
/// (cl/probtrack.cl), so a range of streamlines reads a run of volumes, wrapping at most once;
/// every volume once the range holds nsamp x nseeds streamlines or more.
pub fn volumes_of(r: std::ops::Range<usize>, nseeds: usize, nsamp: usize) -> Vec<std::ops::Range<usize>> {
    if r.is_empty() || nseeds == 0 || nsamp == 0 {
        return Vec::new();
    }
    let (first, last) = (r.start / nseeds, (r.end - 1) / nseeds);
    if last - first + 1 >= nsamp {
        return vec![0..nsamp];
    }
    let (a, b) = (first % nsamp, last % nsamp);
    if a <= b {
        vec![a..b + 1]
    } else {
        vec![0..b + 1, a..nsamp]
    }
}

#[cfg(test)]
#[test]
fn volumes_of_a_range_are_those_its_streamlines_read() {
    for (nseeds, nsamp) in [(1, 1), (3, 5), (7, 4), (10, 50)] {
        for a in 0..3 * nseeds * nsamp {
            for b in a..(a + 2 * nseeds * nsamp).min(3 * nseeds * nsamp) {
                let v = volumes_of(a..b, nseeds, nsamp);
                let mut want: Vec<usize> = (a..b).map(|t| (t / nseeds) % nsamp).collect();
                want.sort_unstable();
                want.dedup();
                let mut got: Vec<usize> = v.iter().flat_map(|r| r.clone()).collect();
                got.sort_unstable();
                assert_eq!(got, want, "{a}..{b}, {nseeds} seeds, {nsamp} volumes: {v:?}");
                assert!(v.len() <= 2);
            }
        }
    }
}

#[cfg(test)]
#[test]
fn a_cpu_run_says_its_compaction_and_the_gpu_options_it_ignores() {
    let inv = crate::runtime::Inventory::discover_for(Some(1), Some(&crate::runtime::BackendSpec::Cpu));
    let split = Split::new(vec![inv.open_cpu().unwrap(), inv.open_cpu().unwrap()]);
    // The CPU compacts on the host whichever way is asked for.
    for how in [Compaction::Device, Compaction::Host] {
        assert_eq!(compaction_label(&split, how), "host compaction");
    }
    assert_eq!(unused_option_warning(&split, None, false), None);
    let w = unused_option_warning(&split, Some(Compaction::Host), true).unwrap();
    assert!(w.starts_with("warning: --compaction host and --overlap apply to OpenCL/CUDA only") && !w.contains('\n'), "{w}");
    let w = unused_option_warning(&split, Some(Compaction::Device), false).unwrap();
    assert!(w.starts_with("warning: --compaction device applies to OpenCL/CUDA only"), "{w}");
    assert!(unused_option_warning(&split, None, true).unwrap().starts_with("warning: --overlap applies"));
}

/// Smallest range of streamlines a split hands a device (unlike devices; see `Split::plan`).
pub const SPLIT_MIN_STREAMLINES: usize = 1 << 18;

/// [`run`] split across `split`'s devices in ranges of streamlines (seed batches of one sample
/// volume after another), each device with its own copy of the field. A streamline's random
/// choices are keyed by its number and the ranges' tallies are added in range order, so several
/// devices of one kind give the bytes one gives.
pub fn run_split(split: &Split, field: &Field, seeds: &[u32], cfg: &Config) -> Result<(Tracks, Shares)> {
    cfg.validate(field, seeds.len())?;
    field.check_seeds(seeds)?;
    let t0 = std::time::Instant::now();
    let total = seeds.len() * cfg.nsamples;
    let plan = split.plan(total, SPLIT_MIN_STREAMLINES);
    let bar = progress_bar((total * if filtering(field) { 2 } else { 1 }) as u64, cfg.progress);
    let parts = split.map(
        plan.len(),
        |dev| {
            let mut k = crate::runtime::stages::stage("tracker kernels", || kernels(dev))?;
            crate::runtime::stages::stage("field upload", || k.upload_part(field, seeds, &[]))?;
            Ok(k)
        },
        |k, c| {
            crate::runtime::stages::stage("sample volumes upload", || k.add_volumes(field, &volumes_of(plan[c].clone(), seeds.len(), field.nsamp)))?;
            let mut st = Stats::default();
            let (kept, counts) = track_range(k.as_mut(), field, seeds.len(), cfg, plan[c].clone(), &bar, &mut st)?;
            let mut t = st.trace;
            t.add(&st.compact);
            t.add(&st.tally);
            Ok(((kept, counts, st), t))
        },
    );
    bar.finish_and_clear();
    let (parts, shares) = parts?;
    let rules = Rules::new(field, seeds.len(), cfg.max_steps);
    let (mut kept, mut counts, mut stats) = (Kept::default(), rules.empty(field.nvox()), Stats::default());
    for (k, c, st) in parts {
        kept.append(&k);
        counts.add(&c);
        stats.add(&st);
    }
    Ok((finish(kept, counts, &rules, cfg, stats, t0)?, shares))
}

fn progress_bar(len: u64, show: bool) -> Progress {
    Progress::new(len, show, "probtrack {bar:40} {pos}/{len} streamlines ({eta} left)", "probtrack", "streamlines")
}

#[cfg(test)]
#[test]
fn a_filtered_run_moves_its_bar_exactly_to_the_end() {
    let t = phantom::straight();
    let a = t.angles(4, 10.0, 2);
    let mut f = t.field(&a);
    let [nx, ny, nz] = t.geom.dims;
    let pick = |keep: &dyn Fn(usize, usize) -> bool| -> Vec<u8> {
        let mut m = vec![0u8; nx * ny * nz];
        for z in 2..8 {
            for y in 2..8 {
                for x in 0..nx {
                    m[t.geom.index(x, y, z)] = keep(x, y) as u8;
                }
            }
        }
        m
    };
    // Half the bundle's cross-section at x = 12: some streamlines kept, some not.
    f.add_waypoint_voxels(&pick(&|x, y| x == 12 && y < 5)).unwrap();
    let seeds: Vec<u32> = pick(&|x, _| x == 3).iter().enumerate().filter(|(_, &m)| m != 0).map(|(v, _)| v as u32).collect();
    let cfg = Config { nsamples: 8, max_steps: 300, max_batch: Some(7), ..Config::default() };
    let total = seeds.len() * cfg.nsamples;
    let mut k = kernels(&Device::Cpu(std::sync::Arc::new(crate::runtime::cpu::Cpu::new(Some(1)).unwrap()))).unwrap();
    k.upload(&f, &seeds).unwrap();
    // As run_split: one bar of both passes, ranges tracked one after another.
    let bar = Progress::silent(2 * total as u64);
    let mut kept = 0;
    for r in [0..total / 3, total / 3..total] {
        kept += track_range(k.as_mut(), &f, seeds.len(), &cfg, r, &bar, &mut Stats::default()).unwrap().0.len();
    }
    assert!(kept > 0 && kept < total, "the waypoint must select: {kept} of {total}");
    assert_eq!(bar.position(), bar.length().unwrap(), "{kept} of {total} streamlines kept");
}
