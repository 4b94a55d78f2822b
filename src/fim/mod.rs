//! The Fast Iterative Method for the anisotropic Hamilton-Jacobi equation (paper 004, Jeong et
//! al. 2007): minimal path cost u from a source region through a tensor field,
//! H(grad u) = sqrt(grad u^T S grad u) = 1, and region-to-region connectivity (Sec. 3).
//!
//! Which way the matrix enters (docs/fim.md): the path cost of 004 eq. 2 uses the cost metric
//! M (eq. 3, or D^-1), so the Hamiltonian carries the speed matrix S = M^-1 and a constant field
//! has u(x) = sqrt(dx^T M dx). [`Problem::speed`] holds S.
//!
//! Solvers: node FIM (Algorithm 4.1, CPU), block FIM (Algorithm 5.1, GPUs), and 004's CPU
//! baselines, fast sweeping with the Godunov and the Lax-Friedrichs Hamiltonian. The driver
//! here talks only to [`FimKernels`].

pub mod blocked;
pub mod check;
pub mod connectivity;
pub mod cpu;
pub mod godunov;
pub mod gpu;
pub mod hg;
pub mod lf;
pub mod metric;
pub mod regions;
pub mod repro;
pub mod stack;
pub mod voxels;

use crate::runtime::{Device, Timings};
use anyhow::{bail, Result};
use std::io::IsTerminal;
pub use godunov::{Local, Validity};

/// Which solver computes u.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, clap::ValueEnum, serde::Serialize)]
pub enum Solver {
    /// Fast Iterative Method: node-based on the CPU, block-based on GPUs.
    #[default]
    Fim,
    /// Fast sweeping (Gauss-Seidel, 8 orderings) with the Godunov Hamiltonian; CPU.
    Sweep,
    /// Fast sweeping with the Lax-Friedrichs Hamiltonian (Kao et al.); CPU.
    SweepLf,
}

/// One solve: the grid, the speed matrix per voxel and the regions.
#[derive(Clone, Debug)]
pub struct Problem {
    pub dims: [usize; 3],
    /// Voxel size (mm) per axis; the differences of eq. 6 divide by it.
    pub voxel: [f64; 3],
    /// S = M^-1 per voxel in image voxel axes, component-major (`speed[c * nvox + v]`, FSL order
    /// xx xy xz yy yz zz), mm^2 per unit cost^2.
    pub speed: Vec<f32>,
    /// Voxels the front may enter (non-zero).
    pub mask: Vec<u8>,
    /// Voxels where u = 0 (only those inside the mask count).
    pub source: Vec<u8>,
}

impl Problem {
    pub fn nvox(&self) -> usize {
        self.dims.iter().product()
    }

    /// Checks sizes and that the source meets the mask.
    pub fn validate(&self) -> Result<()> {
        let n = self.nvox();
        if n == 0 || self.speed.len() != 6 * n || self.mask.len() != n || self.source.len() != n {
            bail!("inconsistent FIM problem: {n} voxels, {} speed values, {} mask, {} source", self.speed.len(), self.mask.len(), self.source.len());
        }
        if !self.voxel.iter().all(|&h| h > 0.0 && h.is_finite()) {
            bail!("voxel sizes must be positive, not {:?}", self.voxel);
        }
        if !(0..n).any(|v| self.source[v] != 0 && self.mask[v] != 0) {
            bail!("the source region has no voxel inside the mask");
        }
        Ok(())
    }

    /// The speed matrix of voxel v.
    #[inline]
    pub fn s<R: godunov::Real>(&self, v: usize) -> [R; 6] {
        let n = self.nvox();
        std::array::from_fn(|c| R::of(self.speed[c * n + v] as f64))
    }
}

/// Solver settings.
#[derive(Clone, Copy, Debug)]
pub struct Params {
    pub solver: Solver,
    pub validity: Validity,
    /// The local solver: exact (monotone) or 004's valid-minimum candidate.
    pub local: Local,
    /// A node (block) has converged when an update lowers it by at most `tol * u`.
    pub tol: f64,
    /// Block edge of the GPU block FIM (004: 4).
    pub block: usize,
    /// Jacobi updates per active block per iteration (004 Algorithm 5.1: n); 0 (the default)
    /// lets the device choose: 2 with 004's local solver on GPUs (roots deferred), else 1
    /// (`gpu::inner`; docs/performance.md, FIM rounds 4 and 21). After the first update of a
    /// launch only voxels an in-block neighbour of which moved are evaluated (`skip`).
    pub inner: usize,
    /// GPU: keep the active list on the host (004 Sec. 5.2) instead of on the device.
    pub host_list: bool,
    /// GPU: work-items per voxel in the update (1 to 26; 0: [`gpu::lanes`]).
    pub lanes: usize,
    /// GPU: leave H_G's roots to the launch after the update (cl/fim.cl fim_settle; only with
    /// the folded device list); None: [`gpu::defer`]'s choice.
    pub defer: Option<bool>,
    /// GPU, roots deferred: count the voxels that want one over the first
    /// [`gpu::PROBE_ITERATIONS`] iterations and, where they are frequent ([`Probe::frequent`]),
    /// solve again with the roots in place; None: [`gpu::probe`]'s choice (where the deferral is
    /// the device's own). docs/fim.md, "Deferred roots, where they are rare".
    pub probe: Option<bool>,
    /// GPU, roots deferred: find them in the neighbours' launch (cl/fim.cl fim_settle, one launch
    /// an iteration fewer) rather than in a launch of their own before it (fim_settle's two
    /// parts one after the other); the same bits either way. Default on; `NEUROPORT_FIM_SETTLE=0` turns it off for every solve (measuring).
    pub settle: bool,
    /// GPU, device list: the candidates found after an iteration's update are updated with the
    /// next iteration's active blocks (two launches an iteration) instead of in a launch of their
    /// own (004 Algorithm 5.1, four launches). Default on; `NEUROPORT_FIM_FOLD=0` in the
    /// environment turns it off for every solve (measuring). The host list always runs 004's
    /// schedule.
    pub folded: bool,
    /// GPU, folded device list: a block whose update lowered a voxel on one of its faces (by any
    /// amount) also activates the neighbour block across that face for the next iteration, not
    /// only all six neighbours once the block has converged (004 Algorithm 5.1 step 2), so a
    /// front crosses a block per iteration and no change stops short of the next block. Default
    /// on; `NEUROPORT_FIM_EAGER=0` turns it off for every solve (measuring). docs/fim.md, "Eager
    /// activation".
    pub eager: bool,
    /// GPU, one Jacobi update a launch: a voxel none of whose six neighbours has moved since its
    /// last evaluation is not evaluated again (it would get the same g and keep its value; the
    /// same bits either way). Default on; `NEUROPORT_FIM_SKIP=0` turns it off for every solve
    /// (measuring). docs/fim.md, "Skipping unmoved voxels".
    pub skip: bool,
    /// Fast sweeping: stop after this many sweeps even if not converged (0: no limit); the
    /// solution then says `capped`.
    pub max_sweeps: usize,
    /// Progress on stderr while solving: a spinner on a terminal; elsewhere (a batch job's log)
    /// plain lines of the mask voxels reached, from the CPU's node FIM (the CLI sets it).
    pub progress: bool,
    /// The regions' names in the progress, in [`solve_regions`]' order ("u1 (from --source)"):
    /// with `--target` two solves' lines looked alike. Empty: a plain "fim".
    pub regions: &'static [&'static str],
}

impl Params {
    /// The settings for region `i` of [`solve_regions`] alone (its name only).
    pub(crate) fn region(&self, i: usize) -> Params {
        Params { regions: self.regions.get(i..i + 1).unwrap_or(&[]), ..*self }
    }

    /// The solve's name in its progress: "fim", or "fim u1 (from --source)"; a stacked solve of
    /// several regions names them all.
    fn what(&self) -> String {
        match self.regions {
            [] => "fim".into(),
            r => format!("fim {}", r.join(" and ")),
        }
    }
}

impl Default for Params {
    fn default() -> Params {
        // 1e-6 relative is ~8 float ulps: below it an f32 update cannot be told from rounding.
        Params { solver: Solver::Fim, validity: Validity::Index, local: Local::Exact, tol: 1e-6, block: 4, inner: 0, host_list: false, lanes: 0, defer: None, probe: None, settle: true, folded: true, eager: true, skip: true, max_sweeps: 0, progress: false, regions: &[] }
    }
}

/// u and how it was reached.
#[derive(Clone, Debug, Default)]
pub struct Solution {
    /// Cost per voxel; NaN outside the mask and where the front never arrived.
    pub u: Vec<f32>,
    /// Outer iterations (FIM: active-list rounds; sweeping: sweeps).
    pub iterations: usize,
    /// Evaluations of the local solver g, all nodes together.
    pub updates: u64,
    /// Active nodes (CPU FIM) or blocks (GPU FIM) per iteration.
    pub active: Vec<u32>,
    /// Fast sweeping stopped at `Params::max_sweeps` before converging.
    pub capped: bool,
    /// GPU: evaluations of g the updates made: `updates` less the voxels skipped (off the mask,
    /// or no neighbour moved since the last evaluation: `Params::skip`).
    pub evaluations: Option<u64>,
    /// GPU: times the host waited on the queue inside the iteration loop.
    pub host_syncs: usize,
    pub timings: Timings,
    /// GPU, roots deferred by the device's choice: what the probe counted (`Params::probe`).
    pub probe: Option<Probe>,
    /// Regions solved in the same run ([`solve_regions`] on a GPU stacks them): the figures
    /// above (iterations, updates, active blocks, timings) are then the run's, for all of them.
    /// 0 or 1: this region alone.
    pub together: usize,
}

/// How often H_G's roots were wanted in a solve's first iterations (004's solver on GPUs, where
/// they are deferred). 004's examples differ by orders of magnitude: over the first 16
/// iterations, the stand-in brain's roots at 0.0025 % of the listed voxels (H100, 256x256x100;
/// on PoCL 0 to 0.17 % from 192x192x75 down to 48x48x16), the helix's (eigenvalues 1 and 1e-4) at
/// 1.3 % (H100, 64^3; PoCL 1.3-1.4 % at 20^3 to 48^3); docs/fim.md, "Deferred roots, where they
/// are rare".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Probe {
    pub iterations: usize,
    /// Voxels that wanted a root at least once (each counted once: the same on every run).
    pub wanted: u64,
    /// Voxels of the blocks listed, summed over the iterations (a block's 4^3 each listing).
    pub listed: u64,
}

impl Probe {
    /// Wanted roots per listed voxel above which they are kept in place: between the two
    /// examples' figures, a factor ~3 from each (the small brain's and the helix's); on the H100
    /// deferral halves example 3's time and doubles the helix's (docs/fim.md).
    pub const FREQUENT: f64 = 5e-3;

    /// Frequent enough that the deferred search (fim_settle: 32 slots a root, a wide bracket each
    /// round) costs more than the in-place one.
    pub fn frequent(&self) -> bool {
        self.wanted as f64 > Self::FREQUENT * self.listed as f64
    }
}

impl Solution {
    /// Local-solver evaluations per voxel inside the mask.
    pub fn updates_per_voxel(&self, mask: &[u8]) -> f64 {
        self.updates as f64 / mask.iter().filter(|&&m| m != 0).count().max(1) as f64
    }

    /// Evaluations of g per voxel inside the mask (GPU), where they were counted.
    pub fn evaluations_per_voxel(&self, mask: &[u8]) -> Option<f64> {
        self.evaluations.map(|e| e as f64 / mask.iter().filter(|&&m| m != 0).count().max(1) as f64)
    }
}

/// The progress of a solve, hidden unless [`Params::progress`]. On a terminal a spinner with the
/// iteration and the active list, cleared at the end (the work has no length up front). In a
/// log the spinner hid itself and a long solve said nothing until it ended; there the node FIM
/// writes plain lines of the voxels reached ([`Reach`]), the others of the iteration ([`Beat`]).
pub(crate) struct Progress {
    spinner: indicatif::ProgressBar,
    lines: Option<std::cell::RefCell<Reach>>,
    beat: Option<std::cell::RefCell<Beat>>,
}

impl Progress {
    pub(crate) fn new(params: &Params) -> Progress {
        if !params.progress {
            return Progress { spinner: indicatif::ProgressBar::hidden(), lines: None, beat: None };
        }
        let spinner = indicatif::ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::stderr());
        if let Ok(style) = indicatif::ProgressStyle::with_template(&format!("{} {{spinner}} {{msg}} ({{elapsed}})", params.what())) {
            spinner.set_style(style);
        }
        let beat = (!std::io::stderr().is_terminal()).then(|| std::cell::RefCell::new(Beat::new(&params.what(), std::time::Instant::now())));
        Progress { spinner, lines: None, beat }
    }

    /// [`Progress::new`] with lines in a log of the mask voxels reached: `counts` gives the mask's
    /// voxels and those reached at the start (its sources), as the command's summary counts them.
    pub(crate) fn reaching(params: &Params, counts: impl FnOnce() -> (u64, u64)) -> Progress {
        let mut p = Progress::new(params);
        if params.progress && !std::io::stderr().is_terminal() {
            let (inside, sources) = counts();
            p.lines = Some(std::cell::RefCell::new(Reach::new(&params.what(), inside, sources, std::time::Instant::now())));
            p.beat = None;
        }
        p
    }

    /// After iteration `it`: `n` more voxels reached since the last call, `active` on the list.
    pub(crate) fn reached(&self, n: u64, it: usize, active: usize) {
        if let Some(line) = self.lines.as_ref().and_then(|l| l.borrow_mut().advance(n, it, active, std::time::Instant::now())) {
            eprintln!("{line}");
        }
    }

    /// After iteration `it` with `active` nodes (CPU) or blocks (GPU) on the list.
    pub(crate) fn at(&self, it: usize, active: usize, unit: &str) {
        if !self.spinner.is_hidden() {
            self.spinner.set_message(format!("iteration {it}, {active} active {unit}"));
        }
        if let Some(line) = self.beat.as_ref().and_then(|b| b.borrow_mut().at(it, active, unit, std::time::Instant::now())) {
            eprintln!("{line}");
        }
    }
}

/// The gap between [`Beat`]'s lines.
const BEAT: std::time::Duration = std::time::Duration::from_secs(60);

/// The log lines of a solve that does not count the voxels it reaches (a GPU's, which only the
/// device knows; the sweeps'): the iteration, the active list and the time, in [`Reach`]'s
/// words. Nothing measures how far the work has come, so there are no tenths: the first line at
/// once (the solve has started), later ones a minute apart (at MAX_GAP, 5 minutes, the sweeps'
/// 142 s solve of the 402 K-voxel phantom on 16 cores wrote its first line and nothing more).
pub(crate) struct Beat {
    what: String,
    clock: crate::io::progress::Waiting,
}

impl Beat {
    pub(crate) fn new(what: &str, start: std::time::Instant) -> Beat {
        Beat { what: what.into(), clock: crate::io::progress::Waiting::new(start, std::time::Duration::ZERO, BEAT) }
    }

    pub(crate) fn at(&mut self, it: usize, active: usize, unit: &str, now: std::time::Instant) -> Option<String> {
        let elapsed = self.clock.due(now)?;
        Some(format!("{}: iteration {it}, {active} active {unit}, {elapsed} elapsed", self.what))
    }
}

/// The log lines of a node FIM solve: the mask voxels the front has reached (u finite, each
/// counted once as an update makes it finite: monotone, and no pass over the grid), with the
/// iteration and the active list. Reaching every voxel is not the end (values go on lowering
/// until the list empties), so no time left is guessed and that point gets a line too. Lines as
/// `io::progress`'s: at each new tenth (the first at once, later ones MIN_GAP apart), and after
/// MAX_GAP without one.
pub(crate) struct Reach {
    what: String,
    len: u64,
    pos: u64,
    cadence: crate::io::progress::Cadence,
}

impl Reach {
    pub(crate) fn new(what: &str, len: u64, pos: u64, start: std::time::Instant) -> Reach {
        Reach { what: what.into(), len, pos, cadence: crate::io::progress::Cadence::new(start, (pos * 10).checked_div(len).unwrap_or(0)) }
    }

    pub(crate) fn advance(&mut self, n: u64, it: usize, active: usize, now: std::time::Instant) -> Option<String> {
        self.pos = (self.pos + n).min(self.len);
        if !self.cadence.due((self.pos * 10).checked_div(self.len).unwrap_or(10), now) {
            return None;
        }
        let pct = self.pos * 100 / self.len.max(1);
        let elapsed = crate::io::progress::span(now.duration_since(self.cadence.start).as_secs_f64());
        Some(format!("{}: {}/{} mask voxels reached ({pct}%), iteration {it}, {active} active nodes, {elapsed} elapsed", self.what, self.pos, self.len))
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.spinner.finish_and_clear();
    }
}

/// What a device does for the FIM.
pub trait FimKernels {
    fn solve(&mut self, p: &Problem, params: &Params) -> Result<Solution>;

    /// u from each of `sources` in turn over `p`'s field (each swapped into `p.source` for its
    /// solve and put back). A GPU reorders and uploads S once for all of them.
    fn solve_regions(&mut self, p: &mut Problem, sources: &mut [Vec<u8>], params: &Params) -> Result<Vec<Solution>> {
        each_source(p, sources, |p, i| self.solve(p, &params.region(i)))
    }
}

/// `f(p, i)` with each of `sources` in turn as `p.source` (i its index), put back after each:
/// the regions share one field without a copy of it per region.
pub(crate) fn each_source<T>(p: &mut Problem, sources: &mut [Vec<u8>], mut f: impl FnMut(&Problem, usize) -> Result<T>) -> Result<Vec<T>> {
    sources
        .iter_mut()
        .enumerate()
        .map(|(i, s)| {
            std::mem::swap(&mut p.source, s);
            let r = f(p, i);
            std::mem::swap(&mut p.source, s);
            r
        })
        .collect()
}

/// The most Jacobi updates per active block and launch (`Params::inner`), as
/// `NEUROPORT_FIM_SHORT` allows.
pub const MAX_INNER: usize = 64;

impl Solver {
    /// Whether the solver runs on the CPU whatever `--backend` names: the sweeping baselines.
    pub fn cpu_only(self) -> bool {
        self != Solver::Fim
    }
}

/// A value's name as the command line spells it (`sweep-lf`, `sharpened`), for warnings and
/// summaries (Debug prints `SweepLf`, which the options refuse).
pub fn cli_name<T: clap::ValueEnum>(v: T) -> String {
    v.to_possible_value().map_or_else(String::new, |p| p.get_name().to_string())
}

/// The warning for a CPU-only solver run with a `--backend` that names more than the CPU: the
/// sweeps run on the CPU and that backend goes unused, which the summary's `cpu` alone did not
/// say. None for fim, and for `auto` and `cpu`.
pub fn unused_backend_warning(solver: Solver, backend: &crate::runtime::BackendSpec) -> Option<String> {
    (solver.cpu_only() && backend.asks_beyond_cpu())
        .then(|| format!("warning: --solver {} is a CPU baseline: it runs on the CPU, not on --backend {backend}", cli_name(solver)))
}

/// Options given that the run does not read, each said in a warning line rather than dropped:
/// `--alpha` sharpens only the sharpened metric, and the Lax-Friedrichs sweeps have no Godunov
/// solver for `--local` and `--validity` to choose. None is an option not given.
pub fn unused_option_warnings(metric: metric::Metric, alpha: Option<f64>, solver: Solver, validity: Option<Validity>, local: Option<Local>) -> Vec<String> {
    let mut w = Vec::new();
    if let (metric::Metric::Inverse, Some(a)) = (metric, alpha) {
        w.push(format!("warning: --alpha {a} applies to --metric sharpened; --metric inverse (D^-1) has no sharpening power"));
    }
    let given: Vec<String> = local.map(|l| format!("--local {}", cli_name(l))).into_iter().chain(validity.map(|v| format!("--validity {}", cli_name(v)))).collect();
    if solver == Solver::SweepLf && !given.is_empty() {
        let verb = if given.len() > 1 { "apply" } else { "applies" };
        w.push(format!("warning: {} {verb} to the Godunov solvers (fim, sweep); --solver sweep-lf (Lax-Friedrichs) has none", given.join(" and ")));
    }
    w
}

/// The solver for `params` on `device`: the sweeping baselines always run on the CPU.
pub fn kernels(device: &Device, params: &Params) -> Result<Box<dyn FimKernels>> {
    check_params(params)?;
    Ok(match (device, params.solver) {
        (Device::Cpu(c), _) => Box::new(cpu::CpuFim::new(c.clone())),
        (_, Solver::Fim) => Box::new(gpu::GpuFim::new(crate::runtime::gpu::Gpu::require(device)?, params)?),
        (_, _) => bail!("--solver {:?} is a CPU baseline; run it with --backend cpu", params.solver),
    })
}

/// Refuses settings no solver can run with (also checked by [`kernels`]; callers that print
/// progress first call it before).
pub fn check_params(params: &Params) -> Result<()> {
    if params.block == 0 || !(params.tol >= 0.0) {
        bail!("block size must be at least 1, tol non-negative");
    }
    // The kernels take it as an int and loop that many times per block and launch: 10^8 hung a
    // 8^3 solve on PoCL for minutes, and past 2^31 it wrapped.
    if params.inner > MAX_INNER {
        bail!("--inner must be 0 (the device's choice) to {MAX_INNER} Jacobi updates per block, not {}", params.inner);
    }
    Ok(())
}

/// u from the source region of `p`.
pub fn solve(device: &Device, p: &Problem, params: &Params) -> Result<Solution> {
    p.validate()?;
    let mut k = crate::runtime::stages::stage("fim kernels", || kernels(device, params))?;
    k.solve(p, params)
}

/// u from each region of `sources` over the field of `p` (connectivity's u1 and u2), in order;
/// `p.source` is not read. The same u as [`solve`] for each region alone, without a copy of the
/// field per region, and a GPU uploads S once.
pub fn solve_regions(device: &Device, p: &mut Problem, sources: &mut [Vec<u8>], params: &Params) -> Result<Vec<Solution>> {
    each_source(p, sources, |p, _| p.validate())?;
    let mut k = crate::runtime::stages::stage("fim kernels", || kernels(device, params))?;
    let r = k.solve_regions(p, sources, params);
    crate::runtime::stages::stage("fim release", || drop(k));
    r
}

#[cfg(test)]
mod tests {
    use super::{unused_backend_warning, Solver};
    use crate::runtime::BackendSpec;

    #[test]
    fn sweeps_warn_that_a_gpu_backend_goes_unused() {
        let spec = |s: &str| s.parse::<BackendSpec>().unwrap();
        for (solver, name) in [(Solver::Sweep, "sweep"), (Solver::SweepLf, "sweep-lf")] {
            for b in ["opencl", "cuda:1", "opencl:0:1", "gpus", "all", "cpu,cuda"] {
                let w = unused_backend_warning(solver, &spec(b)).unwrap_or_else(|| panic!("--solver {name} --backend {b}: no warning"));
                assert!(w.starts_with("warning: ") && !w.contains('\n'), "{w}");
                assert!(w.contains(&format!("--solver {name} ")) && w.contains(&format!("--backend {b}")), "{w}");
            }
            for b in ["auto", "cpu", "cpu,cpu"] {
                assert_eq!(unused_backend_warning(solver, &spec(b)), None, "--backend {b}");
            }
        }
        assert_eq!(unused_backend_warning(Solver::Fim, &spec("opencl")), None);
    }

    #[test]
    fn options_the_run_does_not_read_are_warned_about() {
        use super::{metric::Metric, unused_option_warnings, Local, Validity};
        assert!(unused_option_warnings(Metric::Sharpened, Some(5.0), Solver::SweepLf, None, None).is_empty());
        assert!(unused_option_warnings(Metric::Inverse, None, Solver::Sweep, Some(Validity::Tsai), Some(Local::Paper)).is_empty());
        assert_eq!(unused_option_warnings(Metric::Inverse, Some(5.0), Solver::Fim, None, None), ["warning: --alpha 5 applies to --metric sharpened; --metric inverse (D^-1) has no sharpening power"]);
        assert_eq!(
            unused_option_warnings(Metric::Sharpened, None, Solver::SweepLf, Some(Validity::Index), Some(Local::Paper)),
            ["warning: --local paper and --validity index apply to the Godunov solvers (fim, sweep); --solver sweep-lf (Lax-Friedrichs) has none"]
        );
    }

    #[test]
    fn a_log_hears_the_voxels_reached_and_that_reaching_all_is_not_the_end() {
        let t0 = std::time::Instant::now();
        let at = |s: u64| t0 + std::time::Duration::from_secs(s);
        let mut r = super::Reach::new("fim", 1000, 0, t0);
        assert_eq!(r.advance(50, 1, 40, at(0)), None);
        assert_eq!(r.advance(60, 2, 80, at(1)).as_deref(), Some("fim: 110/1000 mask voxels reached (11%), iteration 2, 80 active nodes, 1s elapsed"));
        // Every voxel reached within MIN_GAP: said once the gap has passed, while the list still
        // works; later iterations then say nothing until MAX_GAP.
        assert_eq!(r.advance(890, 3, 900, at(2)), None);
        assert_eq!(r.advance(0, 9, 500, at(7)).as_deref(), Some("fim: 1000/1000 mask voxels reached (100%), iteration 9, 500 active nodes, 7s elapsed"));
        assert_eq!(r.advance(0, 10, 400, at(100)), None);
        assert!(r.advance(0, 90, 3, at(400)).unwrap().contains("iteration 90, 3 active nodes, 6m40s elapsed"));
    }

    /// A solve with no count of the voxels reached (GPU blocks, sweeps): a line at once, then
    /// one a minute, never one per iteration.
    #[test]
    fn a_log_hears_the_iterations_of_a_solve_that_counts_no_voxels() {
        let t0 = std::time::Instant::now();
        let at = |s: u64| t0 + std::time::Duration::from_secs(s);
        let mut b = super::Beat::new("fim u2 (from --target)", t0);
        assert_eq!(b.at(8, 120, "blocks", at(0)).as_deref(), Some("fim u2 (from --target): iteration 8, 120 active blocks, 0s elapsed"));
        assert_eq!(b.at(16, 100, "blocks", at(6)), None);
        assert_eq!(b.at(800, 90, "blocks", at(59)), None);
        assert_eq!(b.at(808, 85, "blocks", at(60)).as_deref(), Some("fim u2 (from --target): iteration 808, 85 active blocks, 1m00s elapsed"));
        assert_eq!(b.at(816, 84, "blocks", at(61)), None);
        assert_eq!(b.at(4000, 90, "blocks", at(119)), None);
        assert_eq!(b.at(4008, 80, "blocks", at(300)).as_deref(), Some("fim u2 (from --target): iteration 4008, 80 active blocks, 5m00s elapsed"));
        assert_eq!(b.at(4016, 70, "blocks", at(301)), None);
    }
}
