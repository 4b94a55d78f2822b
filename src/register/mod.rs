//! Affine registration (paper 002, AIRWC): a cost kernel over every fixed voxel with the moving
//! image sampled trilinearly through the current transform, minimised by the Nelder-Mead
//! simplex over 6, 9 or 12 parameters, coarse to fine over a pyramid, from the centres of mass.
//!
//! This driver talks only to [`CostKernels`]; `cpu.rs` and `gpu.rs` implement it. Geometry is
//! in world millimetres through both images' NIfTI affines (sform, else qform), so images on
//! different grids, voxel sizes and orientations register. The result `T` maps a fixed world
//! point to the moving world point that corresponds (NiftyReg/ITK direction); see `affine.rs`
//! for FLIRT's convention.

pub mod affine;
pub mod check;
pub mod cost;
pub mod cpu;
pub mod elastix;
pub mod gpu;
pub mod itk;
pub mod lockstep;
pub mod matlab4;
pub mod params;
pub mod pyramid;
pub mod repro;
pub mod resample;
pub mod sampling;
pub mod simplex;
pub mod size;

use crate::io::figure::figure;
use crate::runtime::{Device, Timings};
use crate::volume::{Geometry, Volume};
use affine::Mat4;
use anyhow::{bail, Result};
pub use cost::{CostKind, CostSpec, Stats};
pub use params::Dof;
use rayon::prelude::*;
use std::time::Instant;

/// What one device must do: hold a pyramid level's two images and evaluate the cost for a
/// fixed-voxel -> moving-voxel map, reducing on the device.
pub trait CostKernels: Send {
    /// Replaces the images held with one level's pair.
    fn load(&mut self, fixed: &Volume, moving: &Volume, spec: &CostSpec) -> Result<()>;
    /// One evaluation; `m` is the voxel map's top 3 rows, row-major.
    fn evaluate(&mut self, m: &[f32; 12]) -> Result<Stats>;
    /// Several independent evaluations (a GPU does them in one launch); each map's result is
    /// what [`evaluate`](Self::evaluate) gives it alone.
    fn evaluate_many(&mut self, maps: &[[f32; 12]]) -> Result<Vec<Stats>> {
        maps.iter().map(|m| self.evaluate(m)).collect()
    }
    /// Time since the last call, split into kernel, transfer and host.
    fn take_timings(&mut self) -> Timings;
    /// How the moving image is sampled ("native", "texture", "in-kernel").
    fn variant(&self) -> &'static str;
    /// The thread pool the evaluations run on, for kernels that run on the CPU.
    fn pool(&self) -> Option<std::sync::Arc<crate::runtime::cpu::Cpu>> {
        None
    }
}

/// The cost kernels on `device`.
/// In-kernel trilinear sampling on GPUs: exact (bit-identical to the CPU); the texture path is
/// [`kernels_with`]`(.., Sampling::Texture)`.
pub fn kernels(device: &Device) -> Result<Box<dyn CostKernels>> {
    kernels_with(device, gpu::Sampling::InKernel)
}

pub fn kernels_with(device: &Device, sampling: gpu::Sampling) -> Result<Box<dyn CostKernels>> {
    Ok(match device {
        Device::Cpu(c) => Box::new(cpu::CpuCost::new(c.clone())),
        _ => Box::new(gpu::GpuCost::new(crate::runtime::gpu::Gpu::require(device)?, sampling)?),
    })
}

#[derive(Clone, Debug)]
pub struct Options {
    pub dof: Dof,
    pub cost: CostKind,
    /// Pyramid levels (1 = full resolution only).
    pub levels: usize,
    /// Start transform (fixed world -> moving world); None starts from the centres of mass
    /// when `centre_of_mass`, else from the identity.
    pub init: Option<Mat4>,
    pub centre_of_mass: bool,
    /// Evaluation budget per simplex run, as a multiple of the parameter count.
    pub evals_per_dof: usize,
    /// Search at the coarsest level from rotated starts as well, and let the next level choose
    /// among the best minima found (see [`COARSE_TURN_DEG`]); only with two or more levels.
    pub coarse_search: bool,
    /// At least this many fixed samples per level on a regular sub-grid (sampling.rs); 0 =
    /// every fixed voxel, 002's cost.
    pub samples: usize,
    /// A level still searching after this long is reported (`LevelReport::partial`) again
    /// every this long: the 1 mm level of a 256^3 head ran 42 s on two CPU cores without a word.
    pub heartbeat: std::time::Duration,
}

impl Options {
    pub fn new(dof: Dof, cost: CostKind, levels: usize) -> Options {
        Options { dof, cost, levels, init: None, centre_of_mass: true, evals_per_dof: 200, coarse_search: true, samples: 0, heartbeat: std::time::Duration::from_secs(30) }
    }
}

pub const MAX_LEVELS: usize = 6;

/// Coarse-level search. At the coarsest level a head is little more than its outline, and once
/// scales are free an outline can be almost round in some plane, so a rotation in that plane
/// costs next to nothing there: a 9-dof run from the identity settled 12 degrees off about x
/// (8.8 mm mean error) with every other parameter right, at a coarse cost *lower* than the
/// truth's, and the finer levels could not climb out. As FLIRT does, the coarsest level is
/// therefore also started from rotations of +-COARSE_TURN_DEG about each axis; the
/// [`COARSE_KEEP`] best distinct minima go on to the next level, whose finer detail chooses
/// (the level before the finest keeps one: three full-resolution runs cost more than all the
/// rest). Every level but the finest searches (at 64^3, 3 mm, the 9-dof case above needs the
/// second level's search too: the 12 mm level alone does not find the basin), but a rotated
/// start is a probe: one simplex of at most [`PROBE_EVALS_PER_DOF`] evaluations per parameter,
/// enough to fall into a basin and be compared, not to converge; the minima kept are refined
/// fully at the next level. The finest level, 8x (3 levels: 64x) dearer per evaluation,
/// never searches.
pub const COARSE_TURN_DEG: f64 = 15.0;
pub const COARSE_KEEP: usize = 3;
pub const PROBE_EVALS_PER_DOF: usize = 25;

/// Parameters free at the coarsest level and in the rotated probes of every searched level: at
/// most rigid + scales (9), as FLIRT frees shears only at its fine levels (the minima carried
/// down are refined at full dof from the second level on). A head's outline at coarse resolution is an ellipsoid, and
/// an ellipsoid goes onto another ellipsoid through a 3-parameter family of 12-dof affines
/// (any rotation of the first, then the map between their axes), so at 12 dof the coarse cost
/// has a valley along which rotation trades against shears, and the coarse minimum lies
/// wherever noise puts it: `reproduce airwc --scale quick` (5 mm voxels, coarsest 20 mm)
/// took rotations 14 and 11 degrees off with 6 % shears, 12.9 mm from the truth, its coarse
/// cost below the truth's; a 12-dof probe at the 10 mm level fell into the same valley. With 9 parameters the ellipsoids fix the axes up to the shears
/// (a few degrees), and the finer levels, where inner structure shows, free the shears.
pub const COARSE_FREE: usize = 9;

/// Stopping rule of the finest level: the simplex has collapsed to within FINE_XTOL_VOXELS of
/// a voxel on every parameter (1 unit = 1 mm, 1 degree or 1 percent, each moving a brain's
/// points by about a millimetre), or the costs agree to `ftol`. The coarser levels stop at
/// [`COARSE_XTOL_VOXELS`]: their voxels are larger, and a minimum passed down a level must
/// be placed well enough for the finer one to start near it.
pub const FINE_XTOL_VOXELS: f64 = 0.05;
pub const COARSE_XTOL_VOXELS: f64 = 0.02;

#[derive(Clone, Debug)]
pub struct LevelReport {
    pub level: usize,
    pub levels: usize,
    pub dims: [usize; 3],
    pub voxel_mm: [f32; 3],
    /// The fixed image's sampling stride (1: every voxel) and the number of samples.
    pub stride: usize,
    pub samples: usize,
    pub cost: f64,
    pub evals: usize,
    /// Calls to the device (batches of evaluations).
    pub rounds: usize,
    /// Wall time of the level, of its image upload, and of its evaluations; device time of
    /// its kernels (ms).
    pub wall_ms: f64,
    pub load_ms: f64,
    pub eval_ms: f64,
    pub kernel_ms: f64,
    /// A level still searching (Options::heartbeat): `cost` is the best so far, `evals`,
    /// `rounds` and `wall_ms` count so far, the rest is 0.
    pub partial: bool,
}

impl LevelReport {
    /// The progress line of `register` and `reproduce airwc`.
    pub fn line(&self) -> String {
        if self.partial {
            let [x, y, z] = self.dims;
            return format!("level {}/{}: {x}x{y}x{z} at {} mm, still searching: best cost {:.6} after {} evaluations, {:.0} s", self.level, self.levels, figure(self.voxel_mm[0] as f64, 2), self.cost, self.evals, self.wall_ms / 1e3);
        }
        format!(
            "level {}/{}: {}x{}x{} at {} mm{}, cost {:.6} after {} evaluations in {} device calls; {:.1} ms ({:.3} ms per evaluation, kernels {:.1} ms, upload {:.1} ms)",
            self.level,
            self.levels,
            self.dims[0],
            self.dims[1],
            self.dims[2],
            figure(self.voxel_mm[0] as f64, 2),
            if self.stride > 1 { format!(", cost sampled every {} voxels per axis ({} points)", self.stride, self.samples) } else { String::new() },
            self.cost,
            self.evals,
            self.rounds,
            self.wall_ms,
            self.eval_ms / self.evals.max(1) as f64,
            self.kernel_ms,
            self.load_ms
        )
    }
}

#[derive(Clone, Debug)]
pub struct Registration {
    /// Fixed world mm -> moving world mm.
    pub transform: Mat4,
    /// The start transform T0 and the parameters found: transform = T0 P(params).
    pub start: Mat4,
    pub params: Vec<f64>,
    pub cost: f64,
    pub evals: usize,
    /// Wall time spent in cost evaluations (upload, kernels, read-back), ms.
    pub eval_ms: f64,
    /// Wall time before the first level: intensity ranges, centres of mass, pyramid (ms).
    pub prep_ms: f64,
    pub levels: Vec<LevelReport>,
    pub timings: Timings,
}

impl Registration {
    pub fn ms_per_eval(&self) -> f64 {
        self.eval_ms / self.evals.max(1) as f64
    }
}

/// Refuses images registration cannot use, naming `what` (the file): its finite voxels (the
/// only ones registered: cost.rs) must not all be equal, nor be none.
pub fn check_image(v: &Volume, what: &str) -> Result<()> {
    if v.nvol() != 1 {
        bail!("{what}: a 3-D image is needed, this has {} volumes", v.nvol());
    }
    if v.geom.dims.iter().any(|&d| d < 2) {
        bail!("{what}: every axis needs at least 2 voxels, the grid is {:?}", v.geom.dims);
    }
    let (lo, hi) = v.as_flat().iter().filter(|x| x.is_finite()).fold((f32::INFINITY, f32::NEG_INFINITY), |(a, b), &x| (a.min(x), b.max(x)));
    if lo > hi {
        bail!("{what}: every voxel holds NaN or infinite values; there is nothing to register");
    }
    if hi <= lo {
        bail!("{what}: the image is constant ({lo}); there is nothing to register");
    }
    Ok(())
}

/// The 12 float32 numbers the kernels apply: fixed voxel -> moving voxel for world transform t.
pub fn voxel_map_f32(t: &Mat4, fixed: &Geometry, moving: &Geometry) -> [f32; 12] {
    let m = affine::voxel_map(t, fixed, moving);
    std::array::from_fn(|i| m[i / 4][i % 4] as f32)
}

/// [`voxel_map_f32`] for writing a resampled image: an entry within float64 rounding of an
/// integer (1e-9) is that integer. An image resampled onto its own grid (or one sharing its
/// voxel centres) composes A^-1 A, whose rounding (1e-16 off the diagonal, 1e-14 in the
/// translation) put a whole face of centres a hair outside the box, written as 0: DIPY's
/// oblique aniso_vox.nii.gz resampled onto itself through the identity lost its first slice.
/// The search keeps [`voxel_map_f32`] (a cost is not an output, and every backend's
/// evaluations stay what they were).
pub fn output_map(t: &Mat4, fixed: &Geometry, moving: &Geometry) -> [f32; 12] {
    let m = affine::voxel_map(t, fixed, moving);
    std::array::from_fn(|i| {
        let (v, r) = (m[i / 4][i % 4], m[i / 4][i % 4].round());
        (if (v - r).abs() <= 1e-9 { r } else { v }) as f32
    })
}

/// The fixed image's centre in world mm: the pivot of rotations, scales and shears.
pub fn pivot(fixed: &Geometry) -> [f64; 3] {
    fixed.voxel_to_world(pyramid::centre_voxel(fixed))
}

/// Registers `moving` to `fixed`; `progress` is called after each level.
pub fn register(k: &mut dyn CostKernels, fixed: &Volume, moving: &Volume, o: &Options, progress: &mut (dyn FnMut(&LevelReport) + Send)) -> Result<Registration> {
    // On the CPU the whole search runs on a thread of the pool, so an evaluation's parallel
    // pass starts on this thread at once and the pool's other threads, still awake from the
    // last pass, join it. Handed in from outside, each pass waited for a pool thread to wake
    // and then for the caller to wake: 60-90 us each on a 2-core VM, ~2,100 passes for the
    // 5 mm airwc pair (round 38).
    on_pool(k.pool(), || search_levels(k, fixed, moving, o, progress))
}

/// `f` on a thread of `pool` (the CPU kernels' pool, [`CostKernels::pool`]), else here.
pub fn on_pool<R: Send>(pool: Option<std::sync::Arc<crate::runtime::cpu::Cpu>>, f: impl FnOnce() -> R + Send) -> R {
    match pool {
        Some(cpu) => cpu.install(f),
        None => f(),
    }
}

fn search_levels(k: &mut dyn CostKernels, fixed: &Volume, moving: &Volume, o: &Options, progress: &mut (dyn FnMut(&LevelReport) + Send)) -> Result<Registration> {
    if o.levels == 0 || o.levels > MAX_LEVELS {
        bail!("--levels must be 1 to {MAX_LEVELS}, got {}", o.levels);
    }
    if o.samples != 0 && o.samples < sampling::MIN_SAMPLES {
        bail!("--samples must be 0 (every voxel) or at least {}, got {}: a cost on fewer points is mostly noise", sampling::MIN_SAMPLES, o.samples);
    }
    // Device time the kernels hold from calls before this registration (reproduce airwc's
    // timed evaluations) is not its: counted, level 1 read 61.7 ms of kernels in 10.3 ms.
    let _ = k.take_timings();
    let prep_t0 = Instant::now();
    let spec = CostSpec::new(o.cost, fixed.as_flat(), moving.as_flat())?;
    let start = match o.init {
        Some(m) => m,
        None if o.centre_of_mass => {
            let (cf, cm) = (pyramid::centre_of_mass(fixed), pyramid::centre_of_mass(moving));
            affine::translation([cm[0] - cf[0], cm[1] - cf[1], cm[2] - cf[2]])
        }
        None => affine::IDENTITY,
    };
    let centre = pivot(&fixed.geom);
    // Levels past what the fixed grid allows would search the same grid again (size.rs).
    let levels = size::levels_allowed(fixed.geom.dims, o.levels);
    let (fc, mc) = rayon::join(|| pyramid::coarser(fixed, levels), || pyramid::coarser(moving, levels));
    let fp: Vec<&Volume> = fc.iter().chain([fixed]).collect();
    let mp: Vec<&Volume> = mc.iter().chain([moving]).collect();
    let prep_ms = prep_t0.elapsed().as_secs_f64() * 1e3;
    let n = o.dof.count();
    let mut candidates = vec![vec![0.0; n]];
    let mut evals = 0;
    let mut eval_ms = 0.0;
    let mut reports = Vec::new();
    let mut timings = Timings::default();
    for (li, (f, m)) in fp.iter().zip(&mp).enumerate() {
        let level_t0 = Instant::now();
        let stride = sampling::stride(f.geom.dims, o.samples);
        let sparse = (stride > 1).then(|| sampling::lattice(f, stride));
        // The level's own voxel size still sets the steps and the stopping rule below.
        let fs = sparse.as_ref().unwrap_or(f);
        k.load(fs, m, &spec)?;
        let load_ms = level_t0.elapsed().as_secs_f64() * 1e3;
        let (eval_ms0, mut rounds) = (eval_ms, 0);
        let (mut so_far, mut best, mut beat) = (0, f64::INFINITY, Instant::now());
        let vox = f.geom.voxel_size.iter().fold(0.0f32, |a, &b| a.max(b)) as f64;
        let finest = li + 1 == fp.len();
        let search = o.coarse_search && !finest;
        let keep = if search && li + 2 < fp.len() { COARSE_KEEP } else { 1 };
        // Initial steps are 2 voxels, so a fraction of a voxel is half that in step units.
        let xtol = if finest { FINE_XTOL_VOXELS } else { COARSE_XTOL_VOXELS } / 2.0;
        // The cost of a batch of full parameter vectors: one call to the device.
        let mut objective = |qs: &[Vec<f64>]| -> Result<Vec<f64>> {
            let maps: Vec<[f32; 12]> = qs.iter().map(|q| voxel_map_f32(&affine::mul(&start, &params::matrix(q, centre)), &fs.geom, &m.geom)).collect();
            let t0 = Instant::now();
            let s = k.evaluate_many(&maps)?;
            eval_ms += t0.elapsed().as_secs_f64() * 1e3;
            rounds += 1;
            let costs: Vec<f64> = s.iter().map(|s| s.cost(o.cost)).collect();
            so_far += costs.len();
            best = costs.iter().fold(best, |a, &b| a.min(b));
            if beat.elapsed() >= o.heartbeat {
                beat = Instant::now();
                let wall_ms = level_t0.elapsed().as_secs_f64() * 1e3;
                progress(&LevelReport { level: li + 1, levels, dims: f.geom.dims, voxel_mm: f.geom.voxel_size, stride, samples: fs.nvox(), cost: best, evals: so_far, rounds, wall_ms, load_ms: 0.0, eval_ms: 0.0, kernel_ms: 0.0, partial: true });
            }
            Ok(costs)
        };
        let mut found: Vec<simplex::Minimum> = Vec::new();
        let mut level_evals = 0;
        // First the minima carried from the coarser level, then rotations of the best of them;
        // the searches of a phase are independent and run in lockstep (lockstep.rs).
        for phase in 0..if search { 2 } else { 1 } {
            let starts = if phase == 0 {
                std::mem::take(&mut candidates)
            } else {
                let best = found.iter().min_by(|a, b| a.f.total_cmp(&b.f)).expect("phase 0 ran");
                rotated_starts(&best.x)
            };
            // At most 9 parameters free at the coarsest level and in every probe (COARSE_FREE).
            let free = if search && (li == 0 || phase == 1) { n.min(COARSE_FREE) } else { n };
            let steps = &params::steps(o.dof, vox)[..free];
            let stop = simplex::Stop { ftol: 1e-7, xtol, max_evals: o.evals_per_dof * free };
            let probe = simplex::Stop { max_evals: PROBE_EVALS_PER_DOF * free, ..stop };
            // Rotated starts are probes: one simplex, stopped early (PROBE_EVALS_PER_DOF); the
            // minima carried down get the full run with its restart.
            let searches: Vec<Box<dyn simplex::Search<simplex::Minimum>>> = starts
                .iter()
                .map(|s| {
                    let run: Box<dyn simplex::Search<simplex::Minimum>> = if phase == 0 { Box::new(simplex::Minimise::new(&s[..free], steps, stop)) } else { Box::new(simplex::Amoeba::new(&s[..free], steps, probe)) };
                    Box::new(Partial { run, start: s.clone() }) as Box<dyn simplex::Search<simplex::Minimum>>
                })
                .collect();
            for r in lockstep::run(searches, &mut objective)? {
                level_evals += r.evals;
                found.push(r);
            }
        }
        found.sort_by(|a, b| a.f.total_cmp(&b.f));
        // Minima within half a voxel (mm, degrees or percent: params.rs) on every parameter
        // are the same minimum.
        let mut kept: Vec<simplex::Minimum> = Vec::new();
        for r in found {
            let same = kept.iter().any(|q| q.x.iter().zip(&r.x).all(|(a, b)| (a - b).abs() < 0.5 * vox));
            if !same && kept.len() < keep {
                kept.push(r);
            }
        }
        if kept[0].f >= cost::NO_OVERLAP_COST {
            let map = voxel_map_f32(&affine::mul(&start, &params::matrix(&kept[0].x, centre)), &fs.geom, &m.geom);
            let best = k.evaluate_many(&[map])?.swap_remove(0);
            return Err(no_overlap(li + 1, fs.geom.dims, &best, o.init.is_some()));
        }
        evals += level_evals;
        let t = k.take_timings();
        let r = LevelReport {
            level: li + 1,
            levels,
            dims: f.geom.dims,
            voxel_mm: f.geom.voxel_size,
            stride,
            samples: fs.nvox(),
            cost: kept[0].f,
            evals: level_evals,
            rounds,
            wall_ms: level_t0.elapsed().as_secs_f64() * 1e3,
            load_ms,
            eval_ms: eval_ms - eval_ms0,
            kernel_ms: t.kernel_ms,
            partial: false,
        };
        progress(&r);
        reports.push(r);
        timings.add(&t);
        candidates = kept.into_iter().map(|r| r.x).collect();
    }
    let p = candidates.swap_remove(0);
    let cost = reports.last().map_or(f64::NAN, |r| r.cost);
    let transform = affine::mul(&start, &params::matrix(&p, centre));
    Ok(Registration { transform, start, params: p, cost, evals, eval_ms, prep_ms, levels: reports, timings })
}

/// A search over the first parameters of `start` only; the others stay as they start (zero at
/// the coarsest level: [`COARSE_FREE`]). Its points and its minimum are full parameter vectors.
struct Partial {
    run: Box<dyn simplex::Search<simplex::Minimum>>,
    start: Vec<f64>,
}

impl Partial {
    fn full(&self, q: &[f64]) -> Vec<f64> {
        let mut v = self.start.clone();
        v[..q.len()].copy_from_slice(q);
        v
    }
}

impl simplex::Search<simplex::Minimum> for Partial {
    fn step(&mut self, costs: Option<Vec<f64>>) -> simplex::Step<simplex::Minimum> {
        match self.run.step(costs) {
            simplex::Step::Ask(qs) => simplex::Step::Ask(qs.iter().map(|q| self.full(q)).collect()),
            simplex::Step::Done(r) => simplex::Step::Done(simplex::Minimum { x: self.full(&r.x), ..r }),
        }
    }
}

/// The error for a level whose best transform still leaves too little of the fixed image over
/// the moving image (`best`: its overlap), where the result would be only the start: the
/// images' placements in the world are far apart, or the moving image's finite voxels cover
/// too little (a thin slab, mostly NaN). With `init` the search began at --init's matrix, which
/// is then the first suspect: suggesting --init to a run that had one sent the user in a circle.
fn no_overlap(level: usize, dims: [usize; 3], best: &Stats, init: bool) -> anyhow::Error {
    let hint = if init {
        "Check the --init matrix (the search starts from it: fixed point -> moving point in world mm, as PREFIX_affine.txt), and that both images' NIfTI affines place them in the same world"
    } else {
        "Check that both images' NIfTI affines place them in the same world (orientation, origin), or start from a known transform with --init"
    };
    anyhow::anyhow!(
        "register: the images hardly overlap: at level {level} ({}x{}x{} voxels) the best transform found puts {} of the fixed image's {} voxels over finite moving voxels ({:.1} %; {} % needed). {hint}",
        dims[0],
        dims[1],
        dims[2],
        best.inside,
        best.total,
        100.0 * best.inside as f64 / best.total.max(1) as f64,
        cost::MIN_OVERLAP * 100.0
    )
}

/// `p` rotated by +-COARSE_TURN_DEG about each axis, one axis at a time.
fn rotated_starts(p: &[f64]) -> Vec<Vec<f64>> {
    let mut v = Vec::new();
    for axis in 3..6 {
        for sign in [-1.0, 1.0] {
            let mut q = p.to_vec();
            q[axis] += sign * COARSE_TURN_DEG;
            v.push(q);
        }
    }
    v
}

/// The moving image resampled onto the fixed grid through `t` (trilinear; 0 outside; NaN or
/// infinite where a sample reads a non-finite moving voxel, as the cost leaves those out).
pub fn warp(moving: &Volume, fixed: &Geometry, t: &Mat4) -> Vec<f32> {
    cpu::resample(moving, fixed.dims, &output_map(t, fixed, &moving.geom))
}

/// Mean distance (mm) between where `a` and `b` send the world positions of the fixed voxels
/// selected by `mask` (all when empty): the displacement error of a registration.
pub fn mean_displacement(a: &Mat4, b: &Mat4, fixed: &Geometry, mask: &[u8]) -> f64 {
    let [nx, ny, nz] = fixed.dims;
    let (sum, n) = (0..nz)
        .into_par_iter()
        .map(|z| {
            let (mut s, mut n) = (0.0, 0usize);
            for y in 0..ny {
                for x in 0..nx {
                    if !mask.is_empty() && mask[fixed.index(x, y, z)] == 0 {
                        continue;
                    }
                    let w = fixed.voxel_to_world([x as f64, y as f64, z as f64]);
                    let (p, q) = (affine::apply(a, w), affine::apply(b, w));
                    s += ((p[0] - q[0]).powi(2) + (p[1] - q[1]).powi(2) + (p[2] - q[2]).powi(2)).sqrt();
                    n += 1;
                }
            }
            (s, n)
        })
        .reduce(|| (0.0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
    sum / n.max(1) as f64
}

#[cfg(test)]
mod tests {
    /// A level of 0.01 mm voxels read "at 0.01 mm", 0.004 mm "at 0.00 mm".
    #[test]
    fn a_level_line_shows_small_voxels() {
        let mut r = super::LevelReport { level: 1, levels: 1, dims: [8; 3], voxel_mm: [0.004; 3], stride: 1, samples: 512, cost: 0.5, evals: 1, rounds: 1, wall_ms: 1.0, load_ms: 0.0, eval_ms: 1.0, kernel_ms: 0.0, partial: false };
        assert!(r.line().starts_with("level 1/1: 8x8x8 at 0.0040 mm, cost"), "{}", r.line());
        r.voxel_mm = [2.0; 3];
        assert!(r.line().starts_with("level 1/1: 8x8x8 at 2.00 mm, cost"), "{}", r.line());
        r.partial = true;
        assert!(r.line().starts_with("level 1/1: 8x8x8 at 2.00 mm, still searching"), "{}", r.line());
    }
}
