//! Bayesian ball-and-sticks MCMC (paper 003 Sec. III-A and IV-A; the model of FSL bedpostx):
//! per-voxel Metropolis-Hastings over S0, d, f1, f2, th1, ph1, th2, ph2 with the noise
//! marginalised, ARD on f2, adaptive proposal widths, burn-in and thinning, and random numbers
//! made on the device by the combined Tausworthe generator. The model, priors and sampler are
//! documented once, in `cl/common/bedpost.h`; this file holds the host logic (initialisation,
//! chunks sized to the device, launches in segments, progress) that talks only to
//! [`BedpostKernels`]; `cpu.rs`, `opencl.rs` and `cuda.rs` implement it.

pub mod bench;
pub mod chains;
pub mod check;
pub mod cpu;
pub mod gpu;
pub mod init;
pub mod masked;
pub mod merged;
pub mod post;
pub mod repro;
pub mod rng;
pub mod sim;
mod trig;

pub use chains::{ChainPart, ChainPartMut, ChainState};
pub use masked::MaskedDwi;
use crate::dti::DtiKernels;
use crate::runtime::columns::{Columns, ColumnsMut};
use crate::runtime::gpu::pipeline::{self, Step};
use crate::runtime::split::{Shares, Split};
use crate::runtime::{timing::wall_ms, Device, DeviceInfo, Timings};
use crate::volume::{GradientTable, Volume};
use anyhow::{bail, Context, Result};
use crate::io::progress::Progress;

/// Parameters per chain, in proposal order (bedpostx's: d, S0, then th, ph, f of each stick).
pub const NPARAM: usize = 8;
pub const D: usize = 0;
pub const S0: usize = 1;
pub const TH1: usize = 2;
pub const PH1: usize = 3;
pub const F1: usize = 4;
pub const TH2: usize = 5;
pub const PH2: usize = 6;
pub const F2: usize = 7;
/// Upper bound on d (mm^2/s), bedpostx's UPPERDIFF.
pub const DMAX: f32 = 0.005;
/// Work-items per voxel in the warp layout, and the most directions it holds (NP_BP_PER each).
pub const LANES: usize = 32;
pub const WARP_MAX_DIRS: usize = LANES * 8;
/// Loops per kernel launch: keeps launches short (display watchdogs) and drives the progress
/// bar. Each launch starts with one fresh pass over the directions, on every backend alike.
pub const SEGMENT: usize = 50;

/// How the device kernel lays a chain out (see `cl/common/bedpost.h`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// One work-item per voxel; every proposal recomputes all terms (24 n exponentials a loop).
    Naive,
    /// One work-item per voxel; per-direction terms cached in device memory (bedpostx; 7 n).
    Cached,
    /// One work-item per voxel; no term cache, S0/f proposals in O(1) from running sums (15 n).
    Moments,
    /// Both of the above (7 n exponentials, five passes a loop).
    CachedMoments,
    /// bedpostx_gpu's layout: a warp / work-group of 32 per voxel, terms in registers (7 n).
    Warp,
}

impl Variant {
    pub const ALL: [Variant; 5] = [Variant::Naive, Variant::Cached, Variant::Moments, Variant::CachedMoments, Variant::Warp];
    pub fn name(self) -> &'static str {
        match self {
            Variant::Naive => "naive",
            Variant::Cached => "cached",
            Variant::Moments => "moments",
            Variant::CachedMoments => "cached_moments",
            Variant::Warp => "warp",
        }
    }
    pub fn kernel(self) -> &'static str {
        match self {
            Variant::Naive => "bedpost_naive",
            Variant::Cached => "bedpost_cached",
            Variant::Moments => "bedpost_moments",
            Variant::CachedMoments => "bedpost_cached_moments",
            Variant::Warp => "bedpost_warp",
        }
    }
    pub fn caches_terms(self) -> bool {
        matches!(self, Variant::Cached | Variant::CachedMoments)
    }
    /// Refuses a table this layout cannot hold (the warp layout keeps a voxel's measurements
    /// in its lanes' registers).
    pub fn check_table(self, ndir: usize) -> Result<()> {
        if self == Variant::Warp && ndir > WARP_MAX_DIRS {
            bail!("the warp layout holds at most {WARP_MAX_DIRS} measurements per voxel, this table has {ndir}");
        }
        Ok(())
    }
    /// Floats of the per-direction term cache of `nvox` voxels (1 when the layout keeps none).
    pub fn term_cache_len(self, ndir: usize, nvox: usize) -> usize {
        if self.caches_terms() { 6 * ndir * nvox } else { 1 }
    }
    /// The layout a device runs when none is asked for: the thread layout with running sums,
    /// the fastest of the five on the H100 through both CUDA and OpenCL (docs/performance.md),
    /// and the one whose arithmetic the CPU reference follows.
    pub fn default_for(_info: &DeviceInfo) -> Variant {
        Variant::Moments
    }
}

impl std::str::FromStr for Variant {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> Result<Variant> {
        Variant::ALL
            .into_iter()
            .find(|v| v.name() == s)
            .ok_or_else(|| anyhow::anyhow!("unknown bedpost variant '{s}': use naive, cached, moments, cached_moments or warp"))
    }
}

/// What `neuroport bedpost` asks of the sampler.
#[derive(Clone, Debug)]
pub struct Config {
    pub samples: usize,
    pub burnin: usize,
    pub thin: usize,
    /// Loops between proposal-width adaptations (bedpostx's --updateproposalevery).
    pub every: usize,
    /// ARD weight on f2 (0 switches ARD off).
    pub ard: f32,
    pub seed: u64,
    /// Largest chunk of voxels per device round trip (default: what fits the device).
    pub max_chunk: Option<usize>,
    pub progress: bool,
}

impl Default for Config {
    fn default() -> Config {
        Config { samples: 50, burnin: 500, thin: 2, every: 40, ard: 1.0, seed: 0, max_chunk: None, progress: false }
    }
}

impl Config {
    /// NumLoops = NumBurnin + NumSamples x L (003 Sec. IV-A). Saturating: wrapped, a
    /// --burnin near 2^64 ran one loop or none and wrote its maps as if sampled.
    pub fn loops(&self) -> usize {
        self.burnin.saturating_add(self.samples.saturating_mul(self.thin))
    }
    pub fn schedule(&self) -> Schedule {
        Schedule { burnin: self.burnin, thin: self.thin, nsamp: self.samples, every: self.every, ard: self.ard }
    }
    pub fn validate(&self) -> Result<()> {
        if self.samples == 0 || self.thin == 0 || self.every == 0 {
            bail!("--samples, --thin and the adaptation interval must be positive");
        }
        if self.loops() > i32::MAX as usize / 2 {
            bail!("too many loops: --burnin + --samples x --thin must be at most {}, got {} + {} x {}", i32::MAX / 2, self.burnin, self.samples, self.thin);
        }
        Ok(())
    }
}

/// What the kernels need of the sampling schedule.
#[derive(Clone, Copy, Debug)]
pub struct Schedule {
    pub burnin: usize,
    pub thin: usize,
    pub nsamp: usize,
    pub every: usize,
    pub ard: f32,
}

/// The gradient table: b (s/mm^2), then gx, gy, gz, each `ndir` long, as the CPU reads it (the
/// GPU kernels read it [`Table::interleaved`]).
#[derive(Clone, Debug)]
pub struct Table {
    pub ndir: usize,
    pub gtab: Vec<f32>,
}

impl Table {
    pub fn new(g: &GradientTable) -> Result<Table> {
        let n = g.len();
        if n < 9 {
            bail!("{n} volumes: the ball-and-two-sticks model has 8 parameters and needs at least 9 measurements");
        }
        let mut gtab = vec![0.0f32; 4 * n];
        for i in 0..n {
            gtab[i] = g.bvals[i] as f32;
            for c in 0..3 {
                gtab[(1 + c) * n + i] = if g.bvals[i] > 0.0 { g.bvecs[i][c] as f32 } else { 0.0 };
            }
        }
        Ok(Table { ndir: n, gtab })
    }

    /// The table as the GPU kernels read it: direction i's (b, gx, gy, gz) together, one
    /// 16-byte load a direction (`cl/common/bedpost.h`).
    pub fn interleaved(&self) -> Vec<f32> {
        let n = self.ndir;
        (0..n).flat_map(|i| (0..4).map(move |c| self.gtab[c * n + i])).collect()
    }
}

/// The device operations of the sampler. A chunk of chains lives on the device between
/// `load` and `read`; every call records its time in [`BedpostKernels::take_timings`].
pub trait BedpostKernels: Send {
    /// The layout this instance runs.
    fn variant(&self) -> &'static str;
    /// Uploads a chunk: its measurements `y` (ndir x nvox) and chain state, read where they lie
    /// in the whole arrays; samples are kept on the device.
    fn load(&mut self, table: &Table, y: Columns<f32>, state: ChainPart, sched: &Schedule) -> Result<()>;
    /// Makes ahead what a `load` of up to `nvox` voxels would make (device buffers, staging), so
    /// that the load only copies: a split prepares each device's sampler while the chains'
    /// start runs on the host. None by default.
    fn reserve(&mut self, table: &Table, nvox: usize, sched: &Schedule) -> Result<()> {
        let _ = (table, nvox, sched);
        Ok(())
    }
    /// Runs loops [l0, l1) of every loaded chain.
    fn run(&mut self, l0: usize, l1: usize) -> Result<()>;
    /// The samples (8 x nsamp x nvox) and the chain state of the loaded chunk (the oldest while
    /// overlapping), written into their places in the whole arrays.
    fn read(&mut self, samples: &mut ColumnsMut<f32>, state: &mut ChainPartMut) -> Result<()>;
    /// SS and energy (2 x nvox) at the parameters `par` (8 x nvox): the likelihood evaluation
    /// alone, for `neuroport check`.
    fn energy(&mut self, table: &Table, y: &[f32], par: &[f32], ard: f32) -> Result<Vec<f32>>;
    /// `count` uniforms from stream 0 then `count` normals from stream 1 of each voxel's
    /// state (32 x nvox words), for `neuroport check`.
    fn rng(&mut self, states: &[u32], count: usize) -> Result<Vec<f32>>;
    /// The most voxels one chunk may hold on this device.
    fn max_chunk(&self, ndir: usize, nsamp: usize) -> usize;
    fn take_timings(&mut self) -> Timings;
    /// Whether `load` and `read` overlap the kernels (two chunks alive: `run` runs the chunk
    /// loaded last, `read` returns the oldest), so the driver calls them in
    /// [`pipeline::steps`]' overlapped order.
    fn overlaps(&self) -> bool {
        false
    }
}

/// Smallest half a GPU run is cut into so that copies overlap the sampling when every voxel
/// would fit one chunk (fewer voxels would leave the device's cores idle).
pub const OVERLAP_MIN_VOXELS: usize = 1 << 16;

/// The sampler on `device`, in `variant` (or the device's default layout).
pub fn kernels(device: &Device, variant: Option<Variant>) -> Result<Box<dyn BedpostKernels>> {
    let v = variant.unwrap_or_else(|| Variant::default_for(device.info()));
    Ok(match device {
        Device::Cpu(c) => Box::new(cpu::CpuBedpost::new(c.clone())),
        _ => Box::new(gpu::GpuBedpost::new(crate::runtime::gpu::Gpu::require(device)?, v)?),
    })
}

/// Device bytes per voxel of a chunk; `cache` adds the two-slot term cache.
pub fn bytes_per_voxel(ndir: usize, nsamp: usize, cache: bool) -> usize {
    4 * (ndir + 3 * NPARAM + rng::VOXEL_WORDS + 1 + NPARAM * nsamp + if cache { 6 * ndir } else { 0 })
}

/// Voxels per chunk from a memory budget, the largest single allocation, and 32-bit indexing.
pub fn chunk_from_memory(budget: u64, max_alloc: u64, ndir: usize, nsamp: usize, cache: bool) -> usize {
    let per = bytes_per_voxel(ndir, nsamp, cache) as u64;
    let biggest = 4 * (NPARAM * nsamp).max(if cache { 6 * ndir } else { 0 }).max(rng::VOXEL_WORDS).max(ndir) as u64;
    let by_index = (i32::MAX as u64) / (biggest / 4);
    (budget / per).min(max_alloc / biggest).min(by_index).max(1) as usize
}

/// Runs every chain from `init` through `loops` loops, in chunks that fit the device and
/// launches of [`SEGMENT`] loops, advancing `bar` (shared with other chunks and devices). `y` is
/// ndir x nvox. Returns the samples (8 x nsamp x nvox) and the final state.
pub fn sample(
    k: &mut dyn BedpostKernels,
    table: &Table,
    y: &[f32],
    init: &ChainState,
    sched: &Schedule,
    loops: usize,
    max_chunk: Option<usize>,
    bar: &Progress,
) -> Result<(Vec<f32>, ChainState)> {
    let nvox = init.nvox();
    if y.len() != table.ndir * nvox {
        bail!("{} measurements for {} voxels x {} directions", y.len(), nvox, table.ndir);
    }
    // Every element is read into; zeroed allocations cost no pass over the memory.
    let mut samples = zeroed_samples(sched.nsamp, nvox)?;
    let mut state = ChainState::zeroed(nvox);
    let mut out = ColumnsMut::whole(&mut samples, NPARAM * sched.nsamp);
    sample_into(k, table, Columns::whole(y, table.ndir), init.whole(), sched, loops, max_chunk, bar, &mut out, &mut state.whole_mut())?;
    Ok((samples, state))
}

/// [`sample`] for a share of the voxels, read from and written into the whole arrays where the
/// share lies: `samples` (8 x nsamp components) and `state` receive the share's results.
/// Chunks are loaded, run and read in [`pipeline::steps`]' order, overlapped where the kernels
/// allow.
pub fn sample_into(
    k: &mut dyn BedpostKernels,
    table: &Table,
    y: Columns<f32>,
    init: ChainPart,
    sched: &Schedule,
    loops: usize,
    max_chunk: Option<usize>,
    bar: &Progress,
    samples: &mut ColumnsMut<f32>,
    state: &mut ChainPartMut,
) -> Result<()> {
    use crate::runtime::stages::stage;
    let nvox = init.nvox();
    if y.ncomp() != table.ndir || y.len() != nvox || samples.len() != nvox || state.nvox() != nvox {
        bail!("{} x {} measurements, {} voxels' samples and {} voxels' state for {} chains", y.ncomp(), y.len(), samples.len(), state.nvox(), nvox);
    }
    let fits = k.max_chunk(table.ndir, sched.nsamp).min(max_chunk.unwrap_or(usize::MAX)).max(1);
    let overlap = k.overlaps();
    let chunk = pipeline::chunk_len(nvox, fits, OVERLAP_MIN_VOXELS, overlap);
    let range = |c: usize| c * chunk..((c + 1) * chunk).min(nvox);
    for step in pipeline::steps(nvox.div_ceil(chunk), overlap) {
        match step {
            Step::Load(c) => stage("chains load", || k.load(table, y.part(range(c)), init.part(range(c)), sched))?,
            Step::Compute(c) => {
                let len = range(c).len();
                let mut l0 = 0;
                while l0 < loops {
                    let l1 = (l0 + SEGMENT).min(loops);
                    k.run(l0, l1)?;
                    bar.inc((len * l1 / loops.max(1) - len * l0 / loops.max(1)) as u64);
                    l0 = l1;
                }
            }
            Step::Unload(c) => stage("samples read", || k.read(&mut samples.part(range(c)), &mut state.part(range(c))))?,
        }
    }
    Ok(())
}

/// The zeroed sample array (8 x nsamp x nvox floats), as `vec![0.0; n]` allocates it (zeroed
/// pages, no pass over the memory), but an error where it does not fit: `--samples` far too
/// large for the mask aborted the process with an allocation failure and a backtrace.
fn zeroed_samples(nsamp: usize, nvox: usize) -> Result<Vec<f32>> {
    let too_big = || anyhow::anyhow!("{nsamp} samples x {nvox} voxels ({} parameters each) do not fit in memory", NPARAM);
    let n = NPARAM.checked_mul(nsamp).and_then(|m| m.checked_mul(nvox)).ok_or_else(too_big)?;
    if n == 0 {
        return Ok(Vec::new());
    }
    let layout = std::alloc::Layout::array::<f32>(n).map_err(|_| too_big())?;
    // SAFETY: the layout is non-zero in size; a non-null block from the global allocator with
    // this layout holds n zeroed f32s (0x00000000 is 0.0), which Vec then owns and frees with it.
    unsafe {
        let p = std::alloc::alloc_zeroed(layout) as *mut f32;
        if p.is_null() {
            return Err(too_big());
        }
        Ok(Vec::from_raw_parts(p, n, n))
    }
}

fn progress_bar(len: u64, show: bool) -> Progress {
    Progress::new(len, show, "bedpost {bar:40} {pos}/{len} voxels ({eta} left)", "bedpost", "voxels")
}

/// Everything one run produces, for the mask voxels in `voxels` (flat indices, ascending).
pub struct BedpostResult {
    pub voxels: Vec<usize>,
    pub nsamp: usize,
    /// 8 x nsamp x nvox, parameters in [`NPARAM`] order.
    pub samples: Vec<f32>,
    pub state: ChainState,
    /// Accepted share of the proposals after burn-in, per voxel.
    pub acceptance: Vec<f32>,
    pub variant: &'static str,
    /// Sampling (kernels, transfers, chunk packing) and, in host_ms, initialisation as well.
    pub timings: Timings,
    /// The tensor fit used for initialisation.
    pub init_timings: Timings,
}

/// Checks the inputs agree; the kernels' gradient table. One place for every entry: `grid` is
/// the mask's length and the DWI grid's voxels where a whole DWI is given (a [`MaskedDwi`] was
/// gathered on its grid).
fn inputs(nvol: usize, grads: &GradientTable, grid: Option<(usize, usize)>, cfg: &Config) -> Result<Table> {
    cfg.validate()?;
    if nvol != grads.len() {
        bail!("{nvol} volumes but {} gradient entries", grads.len());
    }
    if let Some((mask, nvox)) = grid.filter(|g| g.0 != g.1) {
        bail!("mask holds {mask} voxels, the DWI grid {nvox}");
    }
    Table::new(grads)
}

/// Refuses a mask without a voxel (nothing to fit or sample).
fn require_voxels(voxels: &[usize]) -> Result<()> {
    if voxels.is_empty() {
        bail!("the mask holds no voxel");
    }
    Ok(())
}

/// The measurements of the mask's `voxels` (ndir x nvox): the tensor fit and the chains read
/// these alone (the fit had read the whole grid's DWI, outside the mask too); host milliseconds.
fn measurements(dwi: &Volume, voxels: &[usize]) -> Result<(Vec<f32>, f64)> {
    require_voxels(voxels)?;
    Ok(wall_ms(|| init::gather(dwi, voxels)))
}

/// A mask of `n` voxels, every one fitted (the fit of `y`, the mask's voxels in order).
fn ones(n: usize) -> Vec<u8> {
    vec![1u8; n]
}

fn result(voxels: Vec<usize>, samples: Vec<f32>, state: ChainState, cfg: &Config, variant: &'static str, timings: Timings, init_timings: Timings) -> BedpostResult {
    let after = (cfg.loops() - cfg.burnin.min(cfg.loops())) * NPARAM;
    let acceptance = state.nacc.iter().map(|&a| a as f32 / after.max(1) as f32).collect();
    BedpostResult { voxels, nsamp: cfg.samples, samples, state, acceptance, variant, timings, init_timings }
}

/// Samples the posterior of every voxel in `mask`: tensor fit (on `dti`'s device), chains
/// initialised from it, MCMC on `k`.
pub fn run(dti: &mut dyn DtiKernels, k: &mut dyn BedpostKernels, dwi: &Volume, grads: &GradientTable, mask: &[u8], cfg: &Config) -> Result<BedpostResult> {
    let table = inputs(dwi.nvol(), grads, Some((mask.len(), dwi.nvox())), cfg)?;
    let (voxels, scan_ms) = wall_ms(|| crate::volume::masks::inside(mask));
    let (y, gather_ms) = measurements(dwi, &voxels)?;
    let design = crate::dti::Design::new(grads)?;
    let fit = dti.fit(Columns::whole(&y, table.ndir), &ones(voxels.len()), &design).context("tensor fit for the chains' starting points")?;
    let fit_timings = dti.take_timings();
    let (init, init_ms) = wall_ms(|| init::from_tensors(&fit, &y, &table, &voxels, cfg.seed));
    let bar = progress_bar(voxels.len() as u64, cfg.progress);
    let sampled = sample(k, &table, &y, &init, &cfg.schedule(), cfg.loops(), cfg.max_chunk, &bar);
    bar.finish_and_clear();
    let (samples, state) = sampled?;
    let mut timings = k.take_timings();
    timings.host_ms += scan_ms + gather_ms + init_ms;
    Ok(result(voxels, samples, state, cfg, k.variant(), timings, fit_timings))
}

/// Smallest chunk of voxels a split hands a device (enough work-items to fill a GPU's launch).
pub const SPLIT_MIN_VOXELS: usize = 8192;

/// [`run`] with the tensor fit and the chains split across `split`'s devices, each running
/// `variant` (or its default layout). A chain is keyed by its voxel, so the samples do not
/// depend on which device ran it; several devices of one kind give the bytes one gives. The
/// shares returned are the sampling's (the fit before it is a small part of the time).
pub fn run_split(split: &Split, variant: Option<Variant>, dwi: &Volume, grads: &GradientTable, mask: &[u8], cfg: &Config) -> Result<(BedpostResult, Shares)> {
    let table = inputs(dwi.nvol(), grads, Some((mask.len(), dwi.nvox())), cfg)?;
    let (voxels, scan_ms) = wall_ms(|| crate::volume::masks::inside(mask));
    let (y, gather_ms) = crate::runtime::stages::stage("measurements", || measurements(dwi, &voxels))?;
    sample_split(split, variant, &table, voxels, &y, grads, cfg, scan_ms + gather_ms)
}

/// [`run_split`] on the mask's voxels alone, as [`MaskedDwi::read`] gathers them from a file.
pub fn run_masked(split: &Split, variant: Option<Variant>, dwi: &MaskedDwi, grads: &GradientTable, cfg: &Config) -> Result<(BedpostResult, Shares)> {
    let table = inputs(dwi.nvol, grads, None, cfg)?;
    require_voxels(&dwi.voxels)?;
    sample_split(split, variant, &table, dwi.voxels.clone(), &dwi.y, grads, cfg, 0.0)
}

/// The tensor fit and the chains of [`run_split`] on the measurements `y` (ndir x nvox) of
/// `voxels`; `host_ms` spent on them already.
fn sample_split(split: &Split, variant: Option<Variant>, table: &Table, voxels: Vec<usize>, y: &[f32], grads: &GradientTable, cfg: &Config, host_ms: f64) -> Result<(BedpostResult, Shares)> {
    use crate::runtime::stages::stage;
    let sched = cfg.schedule();
    // Each device's sampler, with buffers for its largest chunk and its staging, is made on a
    // thread of its own while the chains' start runs: made inside the split, it had cost each
    // device ~30 ms whatever its share (round 27, 4-GPU host).
    let nvox = voxels.len();
    let plan = split.plan(nvox, SPLIT_MIN_VOXELS);
    let largest = plan.iter().map(|r| r.len()).max().unwrap_or(0);
    let prepare = |dev: &Device| -> Result<Box<dyn BedpostKernels>> {
        stage("sampler init", || {
            let mut k = kernels(dev, variant)?;
            if largest > 0 {
                k.reserve(table, largest.min(k.max_chunk(table.ndir, sched.nsamp)), &sched)?;
            }
            Ok(k)
        })
    };
    let (fit, made) = std::thread::scope(|s| {
        let fitted = crate::dti::Design::new(grads).and_then(|design| {
            // A DWI that no voxel can be fitted in would start every chain from nothing and
            // sample noise into finite-looking maps.
            let fit_all = || crate::dti::fit_split(split, Columns::whole(y, table.ndir), &ones(nvox), &design, false, &Progress::hidden()).and_then(|(f, s)| crate::dti::require_fitted(&f, nvox).map(|()| (f, s)));
            let (fit, _) = stage("tensor fit", fit_all).context("tensor fit for the chains' starting points")?;
            Ok(fit)
        });
        // The samplers are made beside the chains' start (host work), not beside the fit: made
        // beside it, their allocations slowed the fit on two GPUs from ~50 to 82-92 ms (round 28).
        let ahead: Vec<_> = if fitted.is_ok() { split.devices().iter().map(|d| s.spawn(move || prepare(d))).collect() } else { Vec::new() };
        let fit = fitted.map(|fit| {
            let (init, init_ms) = stage("chains init", || wall_ms(|| init::from_tensors(&fit.fit, y, table, &voxels, cfg.seed)));
            ((init, init_ms), fit.timings)
        });
        let made: Vec<std::sync::Mutex<Option<Result<Box<dyn BedpostKernels>>>>> = ahead
            .into_iter()
            .map(|h| std::sync::Mutex::new(Some(h.join().unwrap_or_else(|_| Err(anyhow::anyhow!("preparing a sampler panicked"))))))
            .collect();
        (fit, made)
    });
    let ((init, init_ms), fit_timings) = fit?;
    let host_ms = host_ms + init_ms;
    let bar = progress_bar(nvox as u64, cfg.progress);
    // Each chunk loads from the whole arrays and reads its results into them, where its voxels
    // lie: no share is cut out or pasted back. A chunk's place is locked while a device works on
    // it (one at a time; a failed device's chunk goes to another, which writes it again).
    let mut samples = zeroed_samples(sched.nsamp, nvox)?;
    let mut state = ChainState::zeroed(nvox);
    let places: Vec<std::sync::Mutex<(ColumnsMut<f32>, ChainPartMut)>> = ColumnsMut::split(&mut samples, NPARAM * sched.nsamp, &plan)
        .zip(state.split_mut(&plan))
        .map(|(s, st)| s.into_iter().zip(st).map(std::sync::Mutex::new).collect())
        .ok_or_else(|| anyhow::anyhow!("bedpost: the split's chunks overlap"))?;
    let (y, init) = (Columns::whole(y, table.ndir), init.whole());
    let sampled = split.run_indexed(
        plan.len(),
        |i, _| made[i].lock().unwrap_or_else(|e| e.into_inner()).take().unwrap_or_else(|| Err(anyhow::anyhow!("a device's sampler was taken twice"))),
        |k, c| {
            let r = plan[c].clone();
            let mut place = places[c].lock().unwrap_or_else(|e| e.into_inner());
            let (s, st) = &mut *place;
            sample_into(k.as_mut(), table, y.part(r.clone()), init.part(r), &sched, cfg.loops(), cfg.max_chunk, &bar, s, st)?;
            Ok(((), k.take_timings()))
        },
        |_, ()| {},
    );
    drop(places);
    bar.finish_and_clear();
    let shares = sampled?;
    let mut timings = shares.timings();
    timings.host_ms += host_ms;
    Ok((result(voxels, samples, state, cfg, variant_label(split, variant), timings, fit_timings), shares))
}

/// Mask voxels whose DWI is all zero have no signal: their chains start from a default state
/// (`init::start`) and sample noise. They are still sampled, so the outputs keep their bytes,
/// but counted in a warning naming the first (dti counts them in its summary line); a mask with
/// no other voxel is the fit's error instead.
pub fn all_zero_warning(dwi: &Volume, mask: &[u8], path: &std::path::Path) -> Option<String> {
    let zero = crate::dti::all_zero_voxels(dwi, mask);
    let &first = zero.first()?;
    let inside = mask.iter().filter(|&&m| m != 0).count();
    zero_warning(path, zero.len(), inside, crate::volume::xyz_of(first, dwi.geom.dims))
}

/// The warning of [`all_zero_warning`]: `zero` of the `inside` voxels of the mask silent, the
/// first at `[x, y, z]`.
fn zero_warning(path: &std::path::Path, zero: usize, inside: usize, [x, y, z]: [usize; 3]) -> Option<String> {
    if zero == inside {
        return None; // no voxel to fit: the tensor fit's one-line error says so
    }
    let (s, verb) = if zero == 1 { ("", "has") } else { ("s", "have") };
    Some(format!("warning: {}: {zero} of the {inside} voxel{s} in the mask {verb} an all-zero signal (first at x={x} y={y} z={z}); sampled from a default start, their samples carry no information", path.display()))
}

/// A `--variant` that no device of the split runs is said, not dropped without a word: the cpu
/// backend has one layout. A warning, not an error, as a third stick probtrack cannot follow is:
/// the run is still the one asked for, and a split mixing GPUs and the CPU does run it.
pub fn unused_variant_warning(split: &Split, variant: Option<Variant>) -> Option<String> {
    let v = variant?;
    split.devices().iter().all(|d| d.is_cpu()).then(|| format!("warning: --variant {} applies to OpenCL/CUDA only; the cpu backend runs its one layout, {}", v.name(), cpu::VARIANT))
}

/// The layout the split's devices run: one name, or "mixed" when they differ.
fn variant_label(split: &Split, variant: Option<Variant>) -> &'static str {
    let name = |d: &Device| if d.is_cpu() { cpu::VARIANT } else { variant.unwrap_or_else(|| Variant::default_for(d.info())).name() };
    let first = name(split.first());
    if split.devices().iter().all(|d| name(d) == first) { first } else { "mixed layouts" }
}

#[cfg(test)]
mod tests {
    use super::{inputs, require_voxels, Config};
    use crate::volume::GradientTable;

    /// The checks of every entry (`run`, `run_split`, `run_masked`) give one message each, in one
    /// order: the config first, then the table's length, then the mask's grid.
    #[test]
    fn every_entry_checks_its_inputs_alike() {
        let axes = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];
        let g = GradientTable::new([0.0].into_iter().chain([1000.0; 9]).collect(), [[0.0; 3]].into_iter().chain((0..9).map(|i| axes[i % 3])).collect()).unwrap();
        let err = |r: anyhow::Result<super::Table>| r.map(|_| ()).unwrap_err().to_string();
        assert_eq!(err(inputs(4, &g, None, &Config::default())), "4 volumes but 10 gradient entries");
        assert_eq!(err(inputs(10, &g, Some((5, 6)), &Config::default())), "mask holds 5 voxels, the DWI grid 6");
        let bad = Config { burnin: usize::MAX, samples: 1, thin: 2, ..Config::default() };
        assert!(err(inputs(4, &g, Some((5, 6)), &bad)).contains("--burnin"));
        assert!(inputs(10, &g, Some((6, 6)), &Config::default()).is_ok() && inputs(10, &g, None, &Config::default()).is_ok());
        assert_eq!(require_voxels(&[]).unwrap_err().to_string(), "the mask holds no voxel");
    }

    #[test]
    fn loops_past_the_integer_range_are_refused_not_wrapped() {
        // --burnin 2^64-1 with the default thin wrapped to one loop and wrote maps of one sample.
        for (burnin, samples, thin) in [(usize::MAX, 1, 2), (usize::MAX - 1, 1, 2), (1, usize::MAX / 2 + 1, 2)] {
            let cfg = Config { burnin, samples, thin, ..Config::default() };
            let err = cfg.validate().expect_err("wrapped loop count accepted").to_string();
            assert!(err.contains("--burnin + --samples x --thin"), "{err}");
        }
        assert!(Config::default().validate().is_ok());
    }
}
