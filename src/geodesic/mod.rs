//! Geodesic ray-tracing tractography (paper 001): fibres as geodesics of the metric G = D^-1,
//! integrated with RK2 (Strang-split midpoint rule, one field sample per step, default) or Euler
//! (eq. 4) on the Christoffel-symbol ODE
//! (eq. 2-3), one thread per fibre (Sec. 4.3), the fields interpolated in-kernel or by texture
//! hardware (Sec. 4.4). The host logic (batches, region-to-region selection, output) lives here
//! once; `cpu.rs`, `opencl.rs` and `cuda.rs` implement [`GeodesicKernels`], with the device math in
//! `cl/common/geodesic.h`.
//!
//! Conventions (shared with the kernels):
//! - Points are continuous voxel coordinates, voxel centres at integer indices; the volume is the
//!   union of voxel boxes, [-0.5, n - 0.5) per axis.
//! - `step` is in voxels. The direction is rescaled to unit Euclidean length (voxel units) after
//!   every step; a geodesic's path does not depend on its parametrisation, so this only fixes the
//!   step length (to first order h voxels per step).
//! - A step whose new point leaves the volume or the mask, turns more than the curvature limit or
//!   is not finite is not taken: the fibre ends at its last accepted point.
//! - Connectivity measure (after Astola et al., 001 ref. [24]): Euclidean length (mm) over
//!   Riemannian length sqrt(dx^T G dx) summed per step, in mm / s^(1/2). It is frame-independent,
//!   and for a straight fibre along the principal direction of a uniform tensor it equals
//!   sqrt(lambda1): higher means the path runs where diffusion is fast. With a target region it is
//!   measured from the seed to the fibre's first point inside the target.

pub mod bench;
pub mod check;
pub mod cpu;
pub mod gpu;
pub mod order;
pub mod output;
pub mod phantoms;
pub mod repro;
pub mod seeding;
pub mod summary;

use crate::runtime::split::{Shares, Split};
use crate::runtime::{Device, Timings};
use anyhow::{bail, Result};
use crate::io::progress::Progress;
use rayon::prelude::*;
use std::sync::Arc;

/// Field components per voxel: D (6), dG/dx, dG/dy, dG/dz (6 each).
pub const NCOMP: usize = crate::dti::NFIELDS;
/// float4 groups per voxel on the devices (component k of a voxel lives in group k / 4).
pub const GROUPS: usize = 6;
/// Bytes one field sample reads from the 8 surrounding voxels (001 Sec. 5.2: 768).
pub const BYTES_PER_SAMPLE: usize = 8 * NCOMP * 4;
/// Label bits per voxel.
pub const IN_MASK: u8 = 1;
pub const IN_TARGET: u8 = 2;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
pub enum Method {
    /// Second order (Strang-split midpoint rule: drift h/2, kick h, drift h/2): one field sample
    /// per step, at the half-step point
    Rk2,
    /// Euler (001 eq. 4): one field sample per step
    Euler,
}

impl Method {
    pub fn samples_per_step(self) -> usize {
        match self {
            Method::Rk2 | Method::Euler => 1,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Method::Rk2 => "rk2",
            Method::Euler => "euler",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
pub enum Interp {
    /// Hardware trilinear filtering (CUDA 3-D textures, OpenCL images); NVIDIA hardware weights
    /// are 8-bit fixed point (1/256)
    Texture,
    /// In-kernel trilinear interpolation from global memory, float32 weights
    Kernel,
}

impl Interp {
    /// As the command line spells it.
    pub fn name(self) -> &'static str {
        match self {
            Interp::Texture => "texture",
            Interp::Kernel => "kernel",
        }
    }
    /// What a device runs when none is asked for: texture on GPUs with image support; in-kernel
    /// elsewhere (OpenCL CPU devices such as PoCL emulate image sampling in software).
    pub fn default_for(info: &crate::runtime::DeviceInfo) -> Interp {
        if info.is_gpu && info.image_support { Interp::Texture } else { Interp::Kernel }
    }
    /// As reports print it.
    pub fn label(self) -> &'static str {
        match self {
            Interp::Texture => "texture",
            Interp::Kernel => "in-kernel",
        }
    }
}

/// An `--interp` that no device of the split runs is said, not dropped without a word (as
/// bedpost's `--variant`): the cpu backend interpolates in float64, whichever is asked for. A
/// warning, not an error: the run is the one asked for, and a split with a GPU does use it.
pub fn unused_interp_warning(split: &Split, interp: Option<Interp>) -> Option<String> {
    let i = interp?;
    split.devices().iter().all(|d| d.is_cpu()).then(|| format!("warning: --interp {} applies to OpenCL/CUDA only; the cpu backend interpolates in float64 (its reference)", i.name()))
}

/// Why a fibre ended (codes as in `cl/common/geodesic.h`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Stop {
    Running,
    LeftVolume,
    LeftMask,
    MaxSteps,
    Curvature,
    Numeric,
}

impl Stop {
    pub fn from_code(c: i32) -> Stop {
        match c {
            0 => Stop::Running,
            1 => Stop::LeftVolume,
            2 => Stop::LeftMask,
            3 => Stop::MaxSteps,
            4 => Stop::Curvature,
            _ => Stop::Numeric,
        }
    }
    pub fn code(self) -> i32 {
        self as i32
    }
    pub fn name(self) -> &'static str {
        match self {
            Stop::Running => "running",
            Stop::LeftVolume => "left-volume",
            Stop::LeftMask => "left-mask",
            Stop::MaxSteps => "max-steps",
            Stop::Curvature => "curvature",
            Stop::Numeric => "numeric",
        }
    }
}

/// A fibre's start: point and direction in voxel coordinates (the direction need not be unit).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Seed {
    pub pos: [f32; 3],
    pub dir: [f32; 3],
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TraceParams {
    /// Step h in voxels.
    pub step: f32,
    pub max_steps: u32,
    pub method: Method,
    /// Ignored by the CPU reference.
    pub interp: Interp,
    /// Keep every point (false: only the summaries, for benchmarks).
    pub record: bool,
    /// Curvature stop: cosine of the largest turn allowed per step; -2 (the default) is off.
    pub min_cos: f32,
    /// float4 groups read per sample (6). Fewer only for the read-volume experiment (001 Table 1)
    /// on a volume whose skipped groups are zero.
    pub groups: u32,
    /// Points kept when recording: every `every`-th step of each fibre and its last (tckgen's
    /// `-downsample`; 1 keeps every step). Thinned where the points are packed (on the device
    /// for GPUs), so the steps left out are never copied to the host. The summaries (steps,
    /// lengths, the target's step) still count every step.
    pub every: u32,
}

impl Default for TraceParams {
    fn default() -> Self {
        TraceParams { step: 0.1, max_steps: 1000, method: Method::Rk2, interp: Interp::Texture, record: true, min_cos: -2.0, groups: GROUPS as u32, every: 1 }
    }
}

/// The kernels' by-value parameter block; mirrors `np_geo_params` field for field.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct GeoParams {
    pub nx: i32,
    pub ny: i32,
    pub nz: i32,
    pub n: i32,
    pub max_steps: i32,
    pub method: i32,
    pub record: i32,
    pub ngroups: i32,
    pub h: f32,
    pub min_cos: f32,
    pub vsx: f32,
    pub vsy: f32,
    pub vsz: f32,
}


/// What the tracker integrates through: the metric fields of the DTI preparation ([`NCOMP`]
/// values per voxel, in voxel axes and units) and a label per voxel ([`IN_MASK`], [`IN_TARGET`]).
#[derive(Clone, Debug)]
pub struct Fields {
    pub dims: [usize; 3],
    pub voxel_size: [f32; 3],
    /// Voxel-major (a voxel's values together, so the CPU's trilinear gather touches 8 short
    /// runs), shared with the CPU tracers: each had copied component-major fields into this
    /// layout, holding them twice (2 x 352 MB at HCP size, and 0.72 s of `track geodesic`'s 8.5).
    pub metric: Arc<Vec<[f32; NCOMP]>>,
    pub labels: Vec<u8>,
    /// [`Fields::packed4`] (the fields are not changed once made), made once for every device of
    /// a split (4 devices packing 400 MB each at once took 60-75 ms of each one's start, against
    /// 36 ms for one, round 27).
    packed: std::sync::OnceLock<Vec<f32>>,
}

impl Fields {
    /// From component-major fields (`metric[c * nvox + v]`).
    pub fn new(dims: [usize; 3], voxel_size: [f32; 3], metric: Vec<f32>, mask: &[u8], target: Option<&[u8]>) -> Result<Fields> {
        let nvox: usize = dims.iter().product();
        if metric.len() != NCOMP * nvox {
            bail!("metric fields, mask and target do not share one {dims:?} grid");
        }
        let vox = crate::dti::voxel_major(&metric);
        drop(metric);
        Fields::of_voxels(dims, voxel_size, vox, mask, target)
    }

    /// From voxel-major fields, as the CPU's preparation makes them.
    pub fn of_voxels(dims: [usize; 3], voxel_size: [f32; 3], metric: Vec<[f32; NCOMP]>, mask: &[u8], target: Option<&[u8]>) -> Result<Fields> {
        let nvox: usize = dims.iter().product();
        if metric.len() != nvox || mask.len() != nvox || target.is_some_and(|t| t.len() != nvox) {
            bail!("metric fields, mask and target do not share one {dims:?} grid");
        }
        if 6 * nvox > i32::MAX as usize || dims.contains(&0) {
            bail!("grid {dims:?} is empty or too large for 32-bit voxel indices on the devices");
        }
        let labels = (0..nvox).map(|v| ((mask[v] != 0) as u8 * IN_MASK) | target.map_or(0, |t| (t[v] != 0) as u8 * IN_TARGET)).collect();
        Ok(Fields { dims, voxel_size, metric: Arc::new(metric), labels, packed: Default::default() })
    }
    pub fn nvox(&self) -> usize {
        self.dims.iter().product()
    }
    /// The six float4 groups (`[k][voxel][4]` flattened) that the device kernels and images read,
    /// a run of voxels per task: one core took 0.22-0.30 s for 1024x64x64 voxels, once per
    /// device of a split (round 27, 4-GPU host).
    pub fn packed4(&self) -> &[f32] {
        self.packed.get_or_init(|| self.pack4())
    }

    fn pack4(&self) -> Vec<f32> {
        const RUN: usize = 1 << 14;
        let n = self.nvox();
        let mut out = vec![0.0f32; NCOMP * n];
        out.par_chunks_mut(4 * RUN).enumerate().for_each(|(t, o)| {
            let (mut k, mut v) = ((t * RUN) / n, (t * RUN) % n);
            for px in o.chunks_exact_mut(4) {
                px.copy_from_slice(&self.metric[v][4 * k..4 * k + 4]);
                v += 1;
                if v == n {
                    (k, v) = (k + 1, 0);
                }
            }
        });
        out
    }
    pub fn params(&self, p: &TraceParams, n: usize) -> GeoParams {
        geo_params(self.dims, self.voxel_size, p, n)
    }
}

/// The kernels' parameter block for `n` fibres on a `dims` grid.
pub fn geo_params(dims: [usize; 3], voxel_size: [f32; 3], p: &TraceParams, n: usize) -> GeoParams {
    let [nx, ny, nz] = dims.map(|d| d as i32);
    GeoParams {
        nx,
        ny,
        nz,
        n: n as i32,
        max_steps: p.max_steps.min(i32::MAX as u32) as i32,
        method: match p.method {
            Method::Rk2 => 0,
            Method::Euler => 1,
        },
        record: p.record as i32,
        ngroups: p.groups.min(GROUPS as u32) as i32,
        h: p.step,
        min_cos: p.min_cos,
        vsx: voxel_size[0],
        vsy: voxel_size[1],
        vsz: voxel_size[2],
    }
}

/// How a fibre ended and what it measured.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FibreEnd {
    pub steps: u32,
    pub stop: Stop,
    /// Euclidean length, mm.
    pub length_mm: f32,
    /// Riemannian length, s^(1/2).
    pub riemann: f32,
    /// First point (step index) inside the target, if any.
    pub target_step: Option<u32>,
    pub target_length_mm: f32,
    pub target_riemann: f32,
}

impl FibreEnd {
    /// The connectivity measure (module docs): up to the target when reached, else whole fibre.
    pub fn connectivity(&self) -> f32 {
        let (le, lg) = if self.target_step.is_some() { (self.target_length_mm, self.target_riemann) } else { (self.length_mm, self.riemann) };
        if lg > 0.0 { le / lg } else { 0.0 }
    }
    /// From the kernels' component-major summaries (module `np_geo_finish`).
    pub fn from_summaries(sum_i: &[i32], sum_f: &[f32], n: usize, i: usize) -> FibreEnd {
        let t = sum_i[2 * n + i];
        FibreEnd {
            steps: sum_i[i].max(0) as u32,
            stop: Stop::from_code(sum_i[n + i]),
            length_mm: sum_f[i],
            riemann: sum_f[n + i],
            target_step: (t >= 0).then_some(t as u32),
            target_length_mm: sum_f[2 * n + i],
            target_riemann: sum_f[3 * n + i],
        }
    }
}

/// Traced fibres: points (voxel coordinates) packed fibre after fibre, `offsets[i]..offsets[i+1]`
/// holding fibre i's `steps + 1` points (none when the trace did not record points).
#[derive(Clone, Debug, Default)]
pub struct FibreBatch {
    pub points: Vec<[f32; 3]>,
    pub offsets: Vec<usize>,
    pub ends: Vec<FibreEnd>,
}

impl FibreBatch {
    pub fn len(&self) -> usize {
        self.ends.len()
    }
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }
    pub fn fibre(&self, i: usize) -> &[[f32; 3]] {
        if self.offsets.len() <= i + 1 {
            return &[];
        }
        &self.points[self.offsets[i]..self.offsets[i + 1]]
    }
    pub fn total_steps(&self) -> u64 {
        self.ends.iter().map(|e| e.steps as u64).sum()
    }
    /// A batch from the kernels' summaries, without points.
    pub fn from_summaries(sum_i: &[i32], sum_f: &[f32], n: usize) -> FibreBatch {
        FibreBatch { ends: (0..n).map(|i| FibreEnd::from_summaries(sum_i, sum_f, n, i)).collect(), ..Default::default() }
    }
    /// Appends `other`'s fibres. The points are copied on every core: a whole-brain batch holds
    /// gigabytes of them, and one core copies (and faults in) only a few GB/s.
    pub fn append(&mut self, other: FibreBatch) {
        if self.ends.is_empty() && self.offsets.is_empty() {
            *self = other;
            return;
        }
        let FibreBatch {
            points,
            offsets,
            mut ends,
        } = other;
        if !offsets.is_empty() {
            let base = self.points.len();
            if self.offsets.is_empty() {
                self.offsets.push(0);
            }
            self.offsets
                .extend(offsets.iter().skip(1).map(|o| o + base));
            self.points.reserve_exact(points.len());
            let spare = &mut self.points.spare_capacity_mut()[..points.len()];
            use rayon::prelude::*;
            spare
                .par_chunks_mut(1 << 16)
                .zip(points.par_chunks(1 << 16))
                .for_each(|(d, s)| {
                    for (d, s) in d.iter_mut().zip(s) {
                        d.write(*s);
                    }
                });
            // Safety: the `points.len()` elements after the old length were written just above.
            unsafe { self.points.set_len(base + points.len()) };
        }
        self.ends.append(&mut ends);
    }
}

/// Seeds as six component-major arrays (x, y, z, dx, dy, dz), as `np_geo_begin` reads them.
pub fn seeds_component_major(seeds: &[Seed]) -> Vec<f32> {
    let n = seeds.len();
    let mut out = vec![0.0f32; 6 * n];
    for (i, s) in seeds.iter().enumerate() {
        for c in 0..3 {
            out[c * n + i] = s.pos[c];
            out[(3 + c) * n + i] = s.dir[c];
        }
    }
    out
}

/// Points kept of a fibre of `steps` steps (`steps + 1` points) when every `every`-th is kept
/// and the last ([`TraceParams::every`]).
pub fn kept_points(steps: u32, every: u32) -> usize {
    let every = every.max(1);
    (steps / every) as usize + 1 + (!steps.is_multiple_of(every)) as usize
}

/// Whether point `j` of a fibre of `steps` steps is kept ([`TraceParams::every`]).
pub fn is_kept(j: usize, steps: u32, every: u32) -> bool {
    j.is_multiple_of(every.max(1) as usize) || j == steps as usize
}

/// Start of each fibre's kept points in a packed list (`n + 1` entries).
pub fn offsets_of(ends: &[FibreEnd], every: u32) -> Vec<usize> {
    let mut o = Vec::with_capacity(ends.len() + 1);
    let mut acc = 0usize;
    o.push(0);
    for e in ends {
        acc += kept_points(e.steps, every);
        o.push(acc);
    }
    o
}

/// The device operations geodesic tracking needs. The fields live on the device between calls;
/// each call records where its time went, returned by [`GeodesicKernels::take_timings`]:
/// `kernel_ms` is the tracing kernel alone, `transfer_ms` the copies plus the on-device packing
/// of points that precedes the download.
pub trait GeodesicKernels {
    fn upload(&mut self, fields: &Fields) -> Result<()>;
    /// The most fibres one `trace` call can take with these parameters (device memory).
    fn max_batch(&self, p: &TraceParams) -> usize;
    fn trace(&mut self, seeds: &[Seed], p: &TraceParams) -> Result<FibreBatch>;
    /// Traces `seeds` in batches of at most `batch`, handing each batch's fibres to `sink` in
    /// seed order. GPUs overlap a batch's copies with the next batch's trace.
    fn trace_batches(&mut self, seeds: &[Seed], p: &TraceParams, batch: usize, sink: &mut dyn FnMut(FibreBatch) -> Result<()>) -> Result<()> {
        for chunk in seeds.chunks(batch.max(1)) {
            sink(self.trace(chunk, p)?)?;
        }
        Ok(())
    }
    fn take_timings(&mut self) -> Timings;
}

/// The geodesic kernels on `device`.
pub fn kernels(device: &Device) -> Result<Box<dyn GeodesicKernels>> {
    Ok(match device {
        Device::Cpu(c) => Box::new(cpu::CpuGeodesic::new(c.clone())),
        _ => Box::new(gpu::GpuGeodesic::new(crate::runtime::gpu::Gpu::require(device)?)?),
    })
}

/// Threads per block (work-group) of the tracing kernels on GPUs. Few fibres (under one full warp
/// per scheduler, 4 per multiprocessor): blocks of n / (4 x multiprocessors) rounded up to a power
/// of two, so every scheduler gets a warp and each warp's texture work is small: the time is one
/// fibre's chain of dependent samples (geodesic-t3 at 4096 seeds on an H100: 1.37 ms with 32-thread
/// blocks, 1.18 ms with 8). Many fibres: the largest of 256..32 that still gives 4 blocks per
/// multiprocessor; large blocks keep more Morton-adjacent fibres on one multiprocessor, sharing
/// its L1 (in-kernel interpolation, 1M fibres: 1.04e10 steps/s with 64, 1.14e10 with 256; texture
/// unchanged). `NEUROPORT_GEODESIC_BLOCK` overrides it (tuning on a device without rebuilding).
pub fn block_size(n: usize, compute_units: u32) -> usize {
    if let Some(b) = std::env::var("NEUROPORT_GEODESIC_BLOCK").ok().and_then(|v| v.parse::<usize>().ok()).filter(|b| (1..=1024).contains(b)) {
        return b;
    }
    let schedulers = 4 * compute_units.max(1) as usize;
    if n < 32 * schedulers {
        return n.div_ceil(schedulers).next_power_of_two().clamp(1, 32);
    }
    [256, 128, 64].into_iter().find(|&b| n / b >= schedulers).unwrap_or(32)
}

/// Bytes of device memory one fibre needs in a trace: seeds, summaries and, when recorded, the
/// step-major scratch plus its packed copy.
pub fn bytes_per_fibre(p: &TraceParams) -> usize {
    let pts = if p.record { 2 * (p.max_steps as usize + 1) * 12 + 8 } else { 0 };
    6 * 4 + 7 * 4 + pts
}

/// Fibres per batch within `budget` bytes (at least one), and within the kernels' 32-bit
/// indexing of the seeds (six component-major arrays: `seeds[(3 + c) * n + i]`).
pub fn batch_within(budget: u64, p: &TraceParams) -> usize {
    ((budget / bytes_per_fibre(p) as u64) as usize).clamp(1, i32::MAX as usize / 6)
}

fn fibres_bar(seeds: usize, show: bool) -> Progress {
    Progress::new(seeds as u64, show, "{bar:40} {pos}/{len} fibres {eta}", "track", "fibres")
}

/// Traces every seed in batches the device can hold, with a progress bar on stderr when
/// `progress` (plain lines now and then where stderr is not a terminal, `io::progress`).
pub fn trace_all(k: &mut dyn GeodesicKernels, seeds: &[Seed], p: &TraceParams, progress: bool) -> Result<FibreBatch> {
    let batch = batch_len(k, seeds.len(), p);
    trace_batched(k, seeds, p, batch, progress)
}

/// Fibres per batch of a whole run: what the device holds, and, where points are recorded,
/// several batches per run even when memory allows one, so the bar moves on long runs and a
/// batch's copies (and writing) overlap the next one's trace. Without points nothing overlaps:
/// one launch as large as the device holds (a launch lasts as long as its longest fibre, and
/// 2^16 fibres fill a fraction of an H100: 1 M fibres x 1000 steps took 0.48-0.52 s in 16
/// launches, against 0.12-0.13 s for half of them in one, round 27).
pub fn batch_len(k: &dyn GeodesicKernels, seeds: usize, p: &TraceParams) -> usize {
    let most = k.max_batch(p).max(1);
    if !p.record {
        return most;
    }
    most.min((seeds.div_ceil(20)).max(1 << 16))
}

/// [`trace_batched`] handing each batch to `sink` as it comes back (seed order) instead of keeping
/// them: a whole-brain run's points are written while the next batch traces.
pub fn trace_streamed(k: &mut dyn GeodesicKernels, seeds: &[Seed], p: &TraceParams, batch: usize, progress: bool, sink: &mut dyn FnMut(FibreBatch) -> Result<()>) -> Result<()> {
    let bar = fibres_bar(seeds.len(), progress && seeds.len() > batch);
    k.trace_batches(seeds, p, batch, &mut |b| {
        bar.inc(b.len() as u64);
        sink(b)
    })?;
    bar.finish_and_clear();
    Ok(())
}

/// Traces `seeds` in batches of at most `batch` fibres, appending the results in seed order.
pub fn trace_batched(k: &mut dyn GeodesicKernels, seeds: &[Seed], p: &TraceParams, batch: usize, progress: bool) -> Result<FibreBatch> {
    let batch = batch.max(1);
    let bar = fibres_bar(seeds.len(), progress && seeds.len() > batch);
    let mut all = FibreBatch::default();
    k.trace_batches(seeds, p, batch, &mut |b| {
        bar.inc(b.len() as u64);
        all.append(b);
        Ok(())
    })?;
    bar.finish_and_clear();
    Ok(all)
}

/// Smallest batch of seeds a split hands a device.
pub const SPLIT_MIN_SEEDS: usize = 16384;

/// [`trace_all`] split across `split`'s devices in batches of seeds, each device tracing with
/// `interp` (or its own default, [`Interp::default_for`]); the fibres come back in seed order. A
/// fibre depends only on its seed, so several devices of one kind give the fibres one gives.
pub fn trace_split(split: &Split, fields: &Fields, seeds: &[Seed], p: &TraceParams, interp: Option<Interp>, progress: bool) -> Result<(FibreBatch, Shares)> {
    let plan = split.plan(seeds.len(), SPLIT_MIN_SEEDS);
    let mut parts: Vec<FibreBatch> = vec![FibreBatch::default(); plan.len()];
    let shares = trace_chunks(split, fields, seeds, p, interp, &plan, progress, |c, b| parts[c] = b)?;
    let mut parts = parts.into_iter();
    let mut all = parts.next().unwrap_or_default();
    for b in parts {
        all.append(b);
    }
    Ok((all, shares))
}

/// [`trace_split`] handing the fibres to `sink` in seed order as they are traced, in runs of
/// about an eighth of a device's share (a run that ends before an earlier one waits for it), so
/// a tractogram is written while the devices trace: collecting every fibre first had made two
/// GPUs slower than one for a user's `track geodesic` (round 27: 4.5-5.1 s against 3.4-4.1 s).
pub fn trace_split_streamed(split: &Split, fields: &Fields, seeds: &[Seed], p: &TraceParams, interp: Option<Interp>, progress: bool, sink: &mut dyn FnMut(FibreBatch) -> Result<()>) -> Result<Shares> {
    let plan = split.plan_runs(seeds.len(), seeds.len().div_ceil(8 * split.len().max(1)).max(SPLIT_MIN_SEEDS));
    let mut waiting = std::collections::BTreeMap::new();
    let (mut next, mut failed) = (0, None);
    let shares = trace_chunks(split, fields, seeds, p, interp, &plan, progress, |c, b| {
        waiting.insert(c, b);
        while let Some(b) = waiting.remove(&next) {
            // After a sink error the rest is traced but dropped; the error is the run's.
            if failed.is_none() {
                failed = sink(b).err();
            }
            next += 1;
        }
    })?;
    failed.map_or(Ok(shares), Err)
}

/// The chunks `plan` of `seeds` traced across `split`'s devices, each handed to `take` with its
/// index as it ends.
fn trace_chunks(split: &Split, fields: &Fields, seeds: &[Seed], p: &TraceParams, interp: Option<Interp>, plan: &[std::ops::Range<usize>], progress: bool, take: impl FnMut(usize, FibreBatch)) -> Result<Shares> {
    let several = plan.len() > 1;
    let bar = fibres_bar(seeds.len(), progress && several);
    let shares = split.run(
        plan.len(),
        |dev| {
            let mut k = crate::runtime::stages::stage("tracer kernels", || kernels(dev))?;
            crate::runtime::stages::stage("fields upload", || k.upload(fields))?;
            Ok((k, TraceParams { interp: interp.unwrap_or_else(|| Interp::default_for(dev.info())), ..*p }))
        },
        |(k, p), c| {
            let chunk = &seeds[plan[c].clone()];
            // One chunk (one device): trace_all's own batching and progress bar.
            let b = if several {
                let per = k.max_batch(p);
                trace_batched(k.as_mut(), chunk, p, per, false)?
            } else {
                trace_all(k.as_mut(), chunk, p, progress)?
            };
            bar.inc(chunk.len() as u64);
            Ok((b, k.take_timings()))
        },
        take,
    );
    bar.finish_and_clear();
    shares
}

/// Region-to-region selection (001 Sec. 7 ii): with a target, the fibres that reach it, ranked by
/// the connectivity measure (highest first, ties by index); without, every fibre in seed order.
pub fn select(batch: &FibreBatch, target: bool) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..batch.len()).filter(|&i| !target || batch.ends[i].target_step.is_some()).collect();
    if target {
        idx.sort_by(|&a, &b| batch.ends[b].connectivity().total_cmp(&batch.ends[a].connectivity()).then(a.cmp(&b)));
    }
    idx
}

/// The tracker's fields from a tensor volume (FSL frame, mm^2/s) through the DTI metric
/// preparation on `device`; `mask` and `target` become the voxel labels.
pub fn prepare(device: &Device, tensor: &[f32], geom: &crate::volume::Geometry, mask: &[u8], target: Option<&[u8]>) -> Result<(Fields, Timings)> {
    let mut k = crate::dti::kernels(device)?;
    let metric = k.metric_voxels(tensor, geom.dims, crate::dti::Frame::of(geom))?;
    Ok((Fields::of_voxels(geom.dims, geom.voxel_size, metric, mask, target)?, k.take_timings()))
}

#[cfg(test)]
#[test]
fn packed4_interleaves_each_groups_four_components() {
    use rand::Rng;
    let (seed, mut r) = crate::synth::fresh_rng();
    // Voxel counts below, at and across the tasks' run of 2^14 float4s.
    for dims in [[3, 5, 7], [128, 128, 1], [129, 127, 3]] {
        let n: usize = dims.iter().product();
        let metric: Vec<f32> = (0..NCOMP * n).map(|_| r.random::<f32>()).collect();
        let f = Fields::new(dims, [1.0; 3], metric.clone(), &vec![0; n], None).unwrap();
        let p = f.packed4();
        for k in 0..GROUPS {
            for v in 0..n {
                for j in 0..4 {
                    assert_eq!(f.metric[v][4 * k + j].to_bits(), metric[(4 * k + j) * n + v].to_bits(), "seed {seed}, {dims:?}, group {k} voxel {v}");
                    assert_eq!(p[(k * n + v) * 4 + j].to_bits(), metric[(4 * k + j) * n + v].to_bits(), "seed {seed}, {dims:?}, group {k} voxel {v}");
                }
            }
        }
    }
}
