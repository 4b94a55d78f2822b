//! Block FIM on a GPU (004 Algorithm 5.1) through `runtime::gpu`: entry points in `cl/fim.cl`,
//! the Godunov update in `cl/common/fim.h`, the deferred roots' search in `cl/common/fim_roots.h`. The mask's voxels go into the blocked layout (Fig. 3)
//! on the device and come out of it there (`fim_block_*`, `fim_unblock`).
//!
//! Two ways to keep the active list: on the device (default: the update kernels append the
//! blocks that have not converged to the next list and the neighbour kernel the candidates, each
//! kernel zeroing a counter the next one appends to - four launches an iteration, no fills, no
//! host write; the count read back only every [`CHECK_EVERY`] iterations to see whether the
//! list emptied) or on
//! the host as 004 Sec. 5.2 does (C_b read back and the list rebuilt and uploaded each
//! iteration), kept measurable with `Params::host_list`. Updates are Jacobi across blocks too
//! (read u, write a second buffer, committed by the next launch), so the result is the same
//! bits whichever groups run first, whatever the lane or group count and list path.

use super::blocked::{block_grid, block_of, indexable, B, BV};
use super::stack::Stack;
use super::voxels::{mask_voxels, scatter};
use super::{FimKernels, Local, Params, Probe, Problem, Solution, Validity};
use crate::runtime::gpu::{args, Arg, Buf, Gpu, Kernel, Shape};
use anyhow::{bail, Result};
use crate::runtime::stages::{record, stage, Aside};
use rayon::prelude::*;
use std::time::Instant;

fn ms_since(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

pub const SOURCE: &str = include_str!("../../cl/fim.cl");
/// Device-side list: iterations between reads of the active count (at most 8, a divisor of
/// [`TIME_EVERY`] and [`PROBE_ITERATIONS`]).
pub const CHECK_EVERY: usize = 8;

/// [`CHECK_EVERY`], or `NEUROPORT_FIM_CHECK` (1, 2, 4 or 8), and whether each read is waited for
/// a check later instead of at once (`NEUROPORT_FIM_ASYNC=1`), for measuring. The host then
/// never drains the queue, but the loop runs a check or two of empty iterations past the last;
/// on the H100 (round 24, parts f, g) NVIDIA OpenCL's exact solve gained 4-5 ms of wall and
/// CUDA's 004's solve lost 1-2 ms, so the read waits at once by default.
fn count_reads() -> (usize, bool) {
    let every = std::env::var("NEUROPORT_FIM_CHECK").ok().and_then(|v| v.parse::<usize>().ok()).filter(|v| [1, 2, 4, 8].contains(v)).unwrap_or(CHECK_EVERY);
    (every, std::env::var("NEUROPORT_FIM_ASYNC").is_ok_and(|v| v == "1"))
}
/// One iteration in this many is timed with device events, and the iterations' device time
/// scaled from them (`NEUROPORT_FIM_TIME_ALL=1`: every one): an event per launch cost NVIDIA's
/// OpenCL ~35 ms of example 3's ~3,500 launches (round 9). A multiple of CHECK_EVERY, so the
/// timed iterations hold their share of the count reads.
pub const TIME_EVERY: usize = 8;
/// Iterations whose list lengths are recorded on the device.
const HIST: usize = 1 << 16;
/// fim_update's list modes (cl/fim.cl NP_FIM_ACTIVE, NP_FIM_CANDIDATES, NP_FIM_FOLDED).
const ACTIVE: i32 = 0;
const CANDIDATES: i32 = 1;
const FOLDED: i32 = 2;

#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct FimParams {
    nx: i32,
    ny: i32,
    nz: i32,
    bx: i32,
    by: i32,
    bz: i32,
    ihx: f32,
    ihy: f32,
    ihz: f32,
    tol: f32,
    tsai: i32,
    groups: i32,
    paper: i32,
    nspeed: i32,
    short_len: i32,
    short_inner: i32,
}

pub struct GpuFim {
    gpu: Gpu,
    built: Built,
    /// The active count's read (device list): page-locked, made once per kernel set (a
    /// page-locked allocation took ~1-2 ms of each example-3 solve on the H100, round 25).
    count_host: crate::runtime::gpu::Pinned<i32>,
    /// The last solve's device buffers being freed (each free waits for the device), joined
    /// before the next solve allocates, or when the kernel set drops.
    freeing: Option<Aside>,
}

/// fim.cl's kernels, built with `lanes` work-items per voxel and, with `defer`, H_G's roots
/// left to fim_settle.
struct Built {
    lanes: usize,
    defer: bool,
    update: Kernel,
    settle: Kernel,
    neighbours: Kernel,
    commit: Kernel,
    init: Kernel,
    unblock: Kernel,
    block_mask: Kernel,
    block_speed: Kernel,
}

/// Work-items per voxel in fim_update (NP_FIM_LANES in fim.h). Lane j solves combinations j,
/// j + 4, ... of eq. 6 and takes candidates j, j + 4, ... of each of H_G's evaluations where the
/// root is needed. On the H100 (example 3, kernels) 4 lanes took 004's solver from 276 to 140 ms
/// and the exact one from 634 to 360 ms (CUDA; NVIDIA OpenCL 183 -> 104, 344 -> 220); 8 were no
/// better (docs/performance.md, round 7). On a CPU OpenCL device one: PoCL runs a group's
/// items in loops between barriers, and the lanes' barriers cost more than they share (12^3
/// helix, 2 cores: 5.2 s at 4 lanes, 3.9 s at 1). Since eager activation (round 13) an
/// update launch holds ~900 blocks, several waves, and the exact solver is faster with 2 lanes:
/// 67.8 against 80.4 ms on CUDA, 68.7 against 70.2 on NVIDIA OpenCL; 004's solver stays at 4
/// (25.7 against 26.2 ms at 3), and so do 004's schedules (one wave a launch: the exact solver
/// at 2 lanes 102 against 94 ms). `NEUROPORT_FIM_LANES` (1 to 26) overrides.
pub fn lanes(gpu_device: bool, par: &Params) -> usize {
    let default = match (gpu_device, par.local) {
        (false, _) => 1,
        (true, Local::Exact) if eager(par) => 2,
        (true, _) => 4,
    };
    std::env::var("NEUROPORT_FIM_LANES").ok().and_then(|v| v.parse::<usize>().ok()).filter(|v| (1..=26).contains(v)).unwrap_or(default)
}

/// The program built with `lanes` work-items per voxel (and with roots deferred), under its own
/// name (kernels are cached by program name): cl/fim.cl with NP_FIM_LANES (and NP_FIM_DEFER)
/// defined in front.
fn program(lanes: usize, defer: bool) -> (&'static str, &'static str) {
    use std::sync::Mutex;
    static BUILT: Mutex<Vec<((usize, bool), &'static str, &'static str)>> = Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(&(_, n, s)) = built.iter().find(|b| b.0 == (lanes, defer)) {
        return (n, s);
    }
    let name: &'static str = Box::leak(format!("fim-l{lanes}{}", if defer { "-defer" } else { "" }).into_boxed_str());
    let diag = if std::env::var("NEUROPORT_FIM_DIAG_NOROOT").is_ok() { "#define NP_FIM_NOROOT 1\n" } else { "" };
    // fim_update is capped at 80 registers (fim.cl NP_FIM_MAXREG: __maxnreg__ on CUDA); NVIDIA's
    // OpenCL takes the cap for the whole program (its other kernels use fewer). On the H100 its
    // update took 92 uncapped with roots deferred (example 3's kernels 17.15-17.16 ms against
    // 15.23-15.31 capped, round23.sh PART=b) and 90 with them in place (55.1 against 51.8, PART=m).
    let def = if defer { format!("#define NP_FIM_DEFER 1\n#define NP_FIM_SLOTS {}\n", root_slots()) } else { String::new() };
    let def = format!("/* NP_OPENCL_NV_OPTIONS: -cl-nv-maxrregcount=80 */\n{def}");
    let source: &'static str = Box::leak(format!("{diag}{def}#define NP_FIM_LANES {lanes}\n{SOURCE}").into_boxed_str());
    built.push(((lanes, defer), name, source));
    (name, source)
}

/// Slots of a root's work-group in fim_settle (fim_roots before round 22; NP_FIM_SLOTS): 32. On the H100 (004's solver,
/// example 3, kernels) 64 / 32 / 16 / 8 slots took 27.0-27.3 / 24.9-25.0 / 25.3-25.4 /
/// 27.7-28.1 ms on CUDA and 30.6-30.7 / 26.2-26.8 / 26.0-26.1 / 28.8-29.3 ms on NVIDIA OpenCL
/// (round16.sh PART=j), and 32 again in round 18 against 64 slots with 2 to 16 lanes each
/// (24.9-25.0 against 25.4-33.7 ms on CUDA: round18.sh PART=c, e). Round 16 kept 64 after
/// `check` failed 004's fixed-point row at seed 205 with 32; that was the row's reference, the
/// CPU's f32 g, not the search (fim/check.rs: fixed_point_residual). `NEUROPORT_FIM_ROOT_SLOTS`
/// (1 to 64) sets it, for measuring.
fn root_slots() -> usize {
    std::env::var("NEUROPORT_FIM_ROOT_SLOTS").ok().and_then(|v| v.parse::<usize>().ok()).filter(|v| (1..=64).contains(v)).unwrap_or(32)
}

/// Iterations a solve with its roots deferred by the device's own choice runs before the probe
/// (`Probe`) decides whether to go on: a multiple of [`CHECK_EVERY`], read with that count.
pub const PROBE_ITERATIONS: usize = 16;

/// Whether a solve that defers its roots probes how often they are wanted (`Params::probe`;
/// default: where the deferral is the device's own choice, not asked for by `Params::defer` or
/// `NEUROPORT_FIM_DEFER`). `NEUROPORT_FIM_PROBE=0` / `=1` turns it off / on for every solve
/// that defers (measuring).
pub fn probe(par: &Params) -> bool {
    let default = match std::env::var("NEUROPORT_FIM_PROBE").ok().as_deref() {
        Some("0") => false,
        Some("1") => true,
        _ => par.defer.is_none() && std::env::var("NEUROPORT_FIM_DEFER").is_err(),
    };
    par.probe.unwrap_or(default)
}

/// Whether fim_update leaves H_G's roots to fim_settle (cl/fim.cl): with 004's local solver on a
/// GPU and the folded device list (with any number of Jacobi updates a launch since round 21).
/// There a root is wanted in ~1 update of 2,000, and the root's code in the update held it at
/// 92 registers and half the resident warps of a build without it (round 16). The exact solver wants roots in about half
/// of its updates and keeps them in place. `NEUROPORT_FIM_DEFER=0` keeps them in place, `=1` defers
/// them on every device and with either solver (for measuring).
/// `Params::defer` overrides the choice (tests run it on CPU devices).
pub fn defer(gpu_device: bool, par: &Params) -> bool {
    let env = std::env::var("NEUROPORT_FIM_DEFER").ok();
    let default = match env.as_deref() {
        Some("0") => false,
        Some("1") => true,
        _ => gpu_device && par.local == Local::Paper,
    };
    par.defer.unwrap_or(default) && folded(par)
}

impl GpuFim {
    /// Builds the kernels for the default lane count of `par` (a solve with other parameters
    /// or `Params::lanes` set builds its own on first use).
    pub fn new(gpu: Gpu, par: &Params) -> Result<GpuFim> {
        // The first upload (S, ~20 MB on 004's brain) would wait for the staging slots: they are
        // made while the kernels load and the volumes are reordered.
        gpu.stage_ahead();
        let is_gpu = gpu.info().is_gpu;
        let built = Self::build(&gpu, lanes(is_gpu, par), defer(is_gpu, par))?;
        let count_host = gpu.pinned::<i32>(1)?;
        Ok(GpuFim { gpu, built, count_host, freeing: None })
    }

    fn build(gpu: &Gpu, lanes: usize, defer: bool) -> Result<Built> {
        let (program, source) = program(lanes, defer);
        let k = |name| gpu.kernel(program, source, name);
        Ok(Built { lanes, defer, update: k("fim_update")?, settle: k("fim_settle")?, neighbours: k("fim_neighbours")?, commit: k("fim_commit")?, init: k("fim_init")?, unblock: k("fim_unblock")?, block_mask: k("fim_block_mask")?, block_speed: k("fim_block_speed")? })
    }
}

/// S on the device in the blocked layout, for the blocks that hold mask voxels: what the solves
/// from several source regions over one field (connectivity's u1 and u2) share.
struct Field {
    speed: Buf<f32>,
    sblock: Buf<i32>,
    nspeed: usize,
    /// `sblock` on the host, for the stacked grid's own.
    host_sblock: Vec<i32>,
    /// The mask's voxels, ascending, on the host and the device: the solves on the field's own
    /// grid take them from here.
    vox: Vec<i32>,
    b_vox: Buf<i32>,
}

/// S and its block numbering as a solve reads them.
#[derive(Clone, Copy)]
struct FieldRef<'a> {
    speed: &'a Buf<f32>,
    sblock: &'a Buf<i32>,
    nspeed: usize,
    /// The mask's voxels where the solve's grid is the field's (not the stacked grid).
    vox: Option<(&'a [i32], &'a Buf<i32>)>,
}

impl Field {
    fn as_ref(&self) -> FieldRef<'_> {
        FieldRef { speed: &self.speed, sblock: &self.sblock, nspeed: self.nspeed, vox: Some((&self.vox, &self.b_vox)) }
    }
}

impl GpuFim {
    /// S in the blocked layout (Fig. 3) on the device, for the blocks that hold mask voxels,
    /// numbered in `sblock` (most blocks of a brain lie outside the white matter): the host gathers
    /// the mask's voxels' S, `fim_block_speed` puts each in its slot. The kernel reads S only where
    /// it updates (mask 1), so sources do not matter here.
    fn field(&self, p: &Problem) -> Result<Field> {
        let g = &self.gpu;
        // Timed in full from here, whatever an earlier solve that failed mid-loop left.
        g.set_timing(true);
        let (n, bd) = (p.nvox(), block_grid(p.dims));
        let nb = bd.iter().product::<usize>();
        let t_reorder = Instant::now();
        let vox = mask_voxels(&p.mask);
        let m = vox.len();
        let blocks: Vec<u32> = vox.par_iter().map(|&v| block_of(p.dims, bd, v as usize) as u32).collect();
        let mut sblock = vec![-1i32; nb];
        for &b in &blocks {
            sblock[b as usize] = 0;
        }
        let mut live = 0;
        for s in sblock.iter_mut().filter(|s| **s == 0) {
            *s = live;
            live += 1;
        }
        let nspeed = (live as usize).max(1) * BV;
        // S of the mask's voxels, component-major in vox's order: what goes up (example 3: 4.8 MB
        // for its 199,012 voxels; before, S of every slot of the blocks that hold them).
        let mut s = vec![0f32; 6 * m];
        if m > 0 {
            s.par_chunks_mut(m).enumerate().for_each(|(c, plane)| {
                plane.par_chunks_mut(1 << 14).enumerate().for_each(|(k, ch)| {
                    let at = &vox[k << 14..];
                    for (x, &v) in ch.iter_mut().zip(at) {
                        *x = p.speed[c * n + v as usize];
                    }
                });
            });
        }
        record("fim reorder", ms_since(t_reorder));
        let host_sblock = sblock;
        let (speed, sblock, b_vox) = stage("fim upload", || -> Result<_> {
            let (speed, sblock, b_vox) = (g.zeros::<f32>(6 * nspeed)?, g.upload(&host_sblock)?, upload_voxels(g, &vox)?);
            if m > 0 {
                g.launch(&self.built.block_speed, Shape::items(m), args![&b_vox, &g.upload(&s)?, m as i32, Arg::structure(&grid_params(p.dims, bd)), &sblock, &speed, nspeed as i32])?;
            }
            Ok((speed, sblock, b_vox))
        })?;
        Ok(Field { speed, sblock, nspeed, host_sblock, vox, b_vox })
    }

    fn check(p: &Problem, par: &Params) -> Result<()> {
        if par.block != B {
            bail!("the GPU block FIM runs 4^3 blocks (004); block size {} is CPU-only", par.block);
        }
        if !indexable(p.dims) {
            bail!("{:?} voxels exceed the kernels' 32-bit indexing", p.dims);
        }
        Ok(())
    }
}

impl FimKernels for GpuFim {
    fn solve(&mut self, p: &Problem, par: &Params) -> Result<Solution> {
        Self::check(p, par)?;
        let f = self.field(p)?;
        self.run(f.as_ref(), p, par)
    }

    fn solve_regions(&mut self, p: &mut Problem, sources: &mut [Vec<u8>], par: &Params) -> Result<Vec<Solution>> {
        Self::check(p, par)?;
        let f = self.field(p)?;
        let stack = Stack::new(p.dims, sources.len());
        // Stacked by default; NEUROPORT_FIM_STACK=0 solves the regions one after the other.
        if sources.len() > 1 && stack.fits() && !std::env::var("NEUROPORT_FIM_STACK").is_ok_and(|v| v == "0") {
            let q = stage("fim stack", || stack.problem(p, sources));
            let sb = self.gpu.upload(&stack.sblock(&f.host_sblock))?;
            let run = self.run(FieldRef { sblock: &sb, vox: None, ..f.as_ref() }, &q, par)?;
            return Ok(stack.split(run));
        }
        super::each_source(p, sources, |p, i| self.run(f.as_ref(), p, &par.region(i)))
    }
}

impl GpuFim {
    /// u from `p`'s source over the field `f` made from `p`.
    fn run(&mut self, f: FieldRef, p: &Problem, par: &Params) -> Result<Solution> {
        let g = &self.gpu;
        g.set_timing(true);
        let n = p.nvox();
        let bd = block_grid(p.dims);
        let nb = bd.iter().product::<usize>();
        let nbv = nb * BV;
        // The mask's voxels (what leaves the device at the end, fim_unblock) and their states, 1 or
        // 2 (a source), for the blocked mask (fim_block_mask; padding and the voxels off the mask
        // 0); the first list, the blocks that hold a source.
        let t_reorder = Instant::now();
        // The mask's voxels: the field's, or the stacked grid's own.
        let own;
        let (vox, b_vox) = match f.vox {
            Some(v) => v,
            None => {
                let v = mask_voxels(&p.mask);
                own = (upload_voxels(g, &v)?, v);
                (&own.1[..], &own.0)
            }
        };
        let state: Vec<u8> = vox.par_iter().map(|&v| 1 + (p.source[v as usize] != 0) as u8).collect();
        let mut list0: Vec<i32> = vox.par_iter().filter(|&&v| p.source[v as usize] != 0).map(|&v| block_of(p.dims, bd, v as usize) as i32).collect();
        list0.sort_unstable();
        list0.dedup();
        let (folded, eager) = (folded(par), eager(par));
        let defer = defer(g.info().is_gpu, par);
        let short = short_lists(par, defer);
        let groups = std::env::var("NEUROPORT_FIM_GROUPS").ok().and_then(|v| v.parse::<usize>().ok()).filter(|&v| v > 0).unwrap_or(4096).min(nb).max(1);
        let fp = FimParams {
            nx: p.dims[0] as i32,
            ny: p.dims[1] as i32,
            nz: p.dims[2] as i32,
            bx: bd[0] as i32,
            by: bd[1] as i32,
            bz: bd[2] as i32,
            ihx: (1.0 / p.voxel[0]) as f32,
            ihy: (1.0 / p.voxel[1]) as f32,
            ihz: (1.0 / p.voxel[2]) as f32,
            tol: par.tol as f32,
            tsai: (par.validity == Validity::Tsai) as i32,
            groups: groups as i32,
            paper: (par.local == Local::Paper) as i32,
            nspeed: f.nspeed as i32,
            short_len: short.0 as i32,
            short_inner: short.1 as i32,
        };
        record("fim reorder", ms_since(t_reorder));
        let b_mask = stage("fim upload", || -> Result<_> {
            let b_mask = g.zeros::<u8>(nbv)?;
            if !vox.is_empty() {
                g.launch(&self.built.block_mask, Shape::items(vox.len()), args![b_vox, &g.upload(&state)?, vox.len() as i32, Arg::structure(&fp), &b_mask])?;
            }
            Ok(b_mask)
        })?;
        let (b_speed, b_sblock) = (f.speed, f.sblock);
        drop(self.freeing.take());
        let t_alloc = Instant::now();
        let b_u: Buf<f32> = g.alloc(nbv)?;
        // Updates write here; the next launch copies a listed block's results into b_u (fim.cl).
        let b_unew: Buf<f32> = g.alloc(nbv)?;
        record("fim alloc", ms_since(t_alloc));
        let t_iter = Instant::now();
        // Two lists (this iteration's and the next) and three counts (see the loop).
        let lists: [Buf<i32>; 2] = [g.alloc(nb)?, g.alloc(nb)?];
        let counts: [Buf<i32>; 3] = [g.upload(&[list0.len() as i32])?, g.zeros(1)?, g.zeros(1)?];
        g.write(&lists[0], 0, &list0)?;
        let b_cand_list: Buf<i32> = g.alloc(nb)?;
        let b_cand_count: Buf<i32> = g.zeros(1)?;
        let b_conv: Buf<i32> = g.upload(&vec![1i32; nb])?;
        let b_cand: Buf<i32> = g.zeros(nb)?;
        // List lengths per launch (active, then candidate blocks), read once at the end.
        let b_hist: Buf<i32> = g.zeros(2 * HIST)?;
        let mut sol = Solution::default();
        let mut count = list0.len();
        let lanes = if (1..=26).contains(&par.lanes) { par.lanes } else { lanes(g.info().is_gpu, par) };
        if (self.built.lanes, self.built.defer) != (lanes, defer) {
            self.built = Self::build(g, lanes, defer)?;
        }
        let Built { update: upd, settle: fused, neighbours: nbr, commit, init, .. } = &self.built;
        // Deferred roots: the queue (a voxel at most once a launch: at most the mask's voxels) and two counts, the
        // one an update appends to and the one it zeroes for the next (fim_settle reads the first).
        let b_roots: Buf<i32> = g.alloc(if defer { vox.len().max(1) } else { 1 })?;
        // The skip of voxels none of whose neighbours moved (fim.cl np_fim_unmoved): launches
        // numbered from 1, the launch that last evaluated each voxel and the one that last
        // lowered it (0: never), and each group's count of evaluations.
        let inner = inner(par, defer);
        let skip = skip(par);
        let stamps = if skip { nbv } else { 1 };
        let (b_seen, b_moved): (Buf<i32>, Buf<i32>) = (g.zeros(stamps)?, g.zeros(stamps)?);
        let b_work: Buf<i32> = g.zeros(groups)?;
        let mut seq = 0i32;
        let mut next_seq = || {
            seq += 1;
            if skip { seq } else { 0 }
        };
        let root_counts: [Buf<i32>; 2] = [g.zeros(1)?, g.zeros(1)?];
        let root_items = root_slots() * lanes;
        // The roots' work-groups (fim_settle's first, fim_roots' before round 22), one root each at a time: as many as the update's (4,096). Fewer
        // were slower on the H100 (004's solver, example 3, kernels: 264 groups 30.8 ms, 132
        // groups 37 ms, against 28.2), so the launches hold more roots than the SMs hold groups
        // (round16.sh PART=i). NEUROPORT_FIM_ROOT_GROUPS sets it, for measuring.
        let root_groups = std::env::var("NEUROPORT_FIM_ROOT_GROUPS").ok().and_then(|v| v.parse::<usize>().ok()).filter(|&v| v > 0).unwrap_or(groups);
        // With roots deferred: per block, the roots its update queued (fim_settle finds a block's
        // last); each queued root's six neighbours as the update's launch began (a voxel is
        // queued at most once a launch, so the mask's voxels bound the queue); the roots' results
        // apart from unew, infinite where none.
        let b_rootsin: Buf<i32> = g.zeros(if defer { nb } else { 1 })?;
        let b_rootnb: Buf<f32> = g.alloc(if defer { 6 * vox.len().max(1) } else { 1 })?;
        let b_rnew: Buf<f32> = g.alloc(if defer { nbv } else { 1 })?;
        // The probe's count and one bit per voxel (fim.cl fim_update: wanted), while probing.
        let mut probing = defer && probe(par);
        let b_wanted: Buf<i32> = g.zeros(if probing { 1 + nbv.div_ceil(32) } else { 1 })?;
        let mut again = None;
        let settle = defer && par.settle && !env_off("NEUROPORT_FIM_SETTLE");
        let nbr_groups = (groups * BV).div_ceil(root_items);
        g.launch(init, Shape::items(nbv), args![&b_mask, &b_u, nbv as i32, &b_rnew, if defer { nbv as i32 } else { 0 }])?;
        let append = !par.host_list as i32;
        let mut cur = 0;
        // A bound, not a schedule (CPU node FIM needs ~575 iterations on example 3 and ~730 on
        // the 32^3 helix; a block iteration does `inner` updates): past it the run stops with an
        // error instead of running for minutes (the old bound was ~600 K iterations).
        let max_iter = 64 * (bd[0] + bd[1] + bd[2]) + 20_000;
        // The set-up's device time in full; the iterations' sampled (TIME_EVERY).
        let mut timings = g.take_timings()?;
        let every = if std::env::var("NEUROPORT_FIM_TIME_ALL").is_ok_and(|v| v == "1") { 1 } else { TIME_EVERY };
        let mut timed = 0u64;
        let progress = super::Progress::new(par);
        let count_host = &mut self.count_host;
        let mut pending: Option<crate::runtime::gpu::Event> = None;
        let (check, ahead) = count_reads();
        record("fim buffers", ms_since(t_iter));
        let t_iter = Instant::now();
        while count > 0 && sol.iterations < max_iter {
            let slot = |k: usize| if sol.iterations < HIST { (2 * sol.iterations + k) as i32 } else { -1 };
            let (s0, s1) = (slot(0), slot(1));
            let (rc, rc_next) = (&root_counts[sol.iterations % 2], &root_counts[(sol.iterations + 1) % 2]);
            sol.iterations += 1;
            let time_it = sol.iterations % every == 0 || sol.iterations == 1;
            g.set_timing(time_it);
            timed += time_it as u64;
            // This iteration's list and count, the next one's (appended to), and a spent count
            // zeroed for the iteration after (lists alternate, counts rotate through three: no
            // launch zeroes a count another launch of its iteration reads or appends to).
            let (list, next) = (&lists[cur % 2], &lists[(cur + 1) % 2]);
            let (cnt, next_cnt, spent) = (&counts[cur % 3], &counts[(cur + 1) % 3], &counts[(cur + 2) % 3]);
            if folded {
                // Active blocks and the candidates found after the last update, updated together;
                // then committed, and the neighbours of those that converged (not the candidates
                // that came out unchanged) appended to the next list as candidates.
                let q = next_seq();
                g.launch(upd, Shape::groups(groups, BV * lanes), args![b_speed, b_sblock, &b_mask, &b_u, &b_unew, list, cnt, Arg::structure(&fp), inner as i32, &b_conv, &b_hist, s0, next, next_cnt, append, spent, &b_cand, FOLDED, &b_roots, rc, rc_next, &b_seen, &b_moved, q, &b_work, &b_rootsin, &b_rootnb, probing as i32, &b_wanted])?;
                if defer {
                    // The roots and the neighbours (fim.cl fim_settle): in one launch, or (not
                    // `settle`, for measuring and the tests) the roots' groups and then the
                    // neighbours' in two.
                    let settle_launch = |groups: usize, nroot: usize| g.launch(fused, Shape::groups(groups, root_items), args![b_speed, b_sblock, &b_u, &b_unew, &b_roots, rc, Arg::structure(&fp), &b_conv, next, next_cnt, &b_moved, q, &b_rootsin, &b_rootnb, &b_rnew, list, cnt, &b_cand, eager as i32, nroot as i32]);
                    if settle {
                        settle_launch(root_groups + nbr_groups, root_groups)?;
                    } else {
                        settle_launch(root_groups, root_groups)?;
                        settle_launch(nbr_groups, 0)?;
                    }
                } else {
                    g.launch(nbr, Shape::items(groups * BV), args![list, cnt, &b_conv, b_sblock, Arg::structure(&fp), &b_cand, next, next_cnt, &b_unew, &b_u, eager as i32])?;
                }
            } else {
                // Step 1: n Jacobi updates of every active block; C_b by reduction; the
                // unconverged join the next list; the candidate count starts at 0.
                g.launch(upd, Shape::groups(groups, BV * lanes), args![b_speed, b_sblock, &b_mask, &b_u, &b_unew, list, cnt, Arg::structure(&fp), inner as i32, &b_conv, &b_hist, s0, next, next_cnt, append, &b_cand_count, &b_cand, ACTIVE, &b_roots, rc, rc_next, &b_seen, &b_moved, next_seq(), &b_work, &b_rootsin, &b_rootnb, probing as i32, &b_wanted])?;
                // Step 2: the active blocks' results committed, and neighbour blocks of converged
                // blocks updated once and reduced, then committed.
                g.launch(nbr, Shape::items(groups * BV), args![list, cnt, &b_conv, b_sblock, Arg::structure(&fp), &b_cand, &b_cand_list, &b_cand_count, &b_unew, &b_u, 0i32])?;
                g.launch(upd, Shape::groups(groups, BV * lanes), args![b_speed, b_sblock, &b_mask, &b_u, &b_unew, &b_cand_list, &b_cand_count, Arg::structure(&fp), 1i32, &b_conv, &b_hist, s1, next, next_cnt, append, spent, &b_cand, CANDIDATES, &b_roots, rc, rc_next, &b_seen, &b_moved, next_seq(), &b_work, &b_rootsin, &b_rootnb, probing as i32, &b_wanted])?;
                g.launch(commit, Shape::items(groups * BV), args![&b_cand_list, &b_cand_count, Arg::structure(&fp), &b_unew, &b_u])?;
            }
            // Step 3: the next list, every block whose C_b is false.
            if par.host_list {
                let conv = g.download(&b_conv)?;
                // The state in conv's low two bits (fim.cl NP_FIM_STATE): 0 is still active.
                let hl: Vec<i32> = (0..nb as i32).filter(|&b| conv[b as usize] & 3 == 0).collect();
                count = hl.len();
                progress.at(sol.iterations, count, "blocks");
                if count > 0 {
                    g.write(list, 0, &hl)?;
                }
                g.write(cnt, 0, &[count as i32])?;
                // the count and C_b read back, the list and its count written (each waits).
                sol.host_syncs += 2 + (count > 0) as usize;
            } else {
                cur += 1;
                if sol.iterations % check == 0 {
                    // The count queued for reading a check ago, and this iteration's queued in
                    // turn: the host waits on a point the device passes while it still holds
                    // the iterations queued since, so its queue does not drain here. The loop
                    // may then queue up to 2 x check iterations past the last (empty: every
                    // group finds no block); the iterations are counted from the lists' lengths
                    // at the end.
                    if let Some(e) = pending.take() {
                        e.wait()?;
                        count = count_host[0].max(0) as usize;
                        sol.host_syncs += 1;
                        progress.at(sol.iterations - check, count, "blocks");
                    }
                    if count > 0 {
                        g.download_into(&counts[cur % 3], 0, count_host, 0..1)?;
                        pending = Some(g.record()?);
                        if !ahead {
                            pending.take().expect("just queued").wait()?;
                            count = count_host[0].max(0) as usize;
                            sol.host_syncs += 1;
                            // The count the loop reads anyway: no read of its own for the progress.
                            progress.at(sol.iterations, count, "blocks");
                        }
                    }
                    if probing && sol.iterations == PROBE_ITERATIONS {
                        probing = false;
                        let mut h = vec![0i32; 2 * PROBE_ITERATIONS];
                        g.read(&b_hist, 0, &mut h)?;
                        let listed = h.iter().map(|&c| c.max(0) as u64).sum::<u64>() * BV as u64;
                        let probe = Probe { iterations: PROBE_ITERATIONS, wanted: read1(g, &b_wanted)? as u64, listed };
                        if probe.frequent() && count > 0 {
                            again = Some(probe);
                            break;
                        }
                        sol.probe = Some(probe);
                    }
                }
            }
        }
        g.finish()?;
        g.set_timing(true);
        let mut it = g.take_timings()?;
        it.scale_sampled(sol.iterations as u64, timed);
        timings.add(&it);
        record("fim iterations", ms_since(t_iter));
        if let Some(probe) = again {
            // Solved again with the roots in place; the probe's device time counts.
            drop((b_mask, b_u, b_unew, lists, counts, b_cand_list, b_cand_count, b_conv, b_cand, b_hist, b_roots, root_counts, b_seen, b_moved, b_work, b_rootsin, b_rootnb, b_rnew, b_wanted));
            let mut sol = self.run(f, p, &Params { defer: Some(false), ..*par })?;
            timings.add(&sol.timings);
            sol.timings = timings;
            sol.probe = Some(probe);
            return Ok(sol);
        }
        if count > 0 {
            bail!("the block FIM did not converge in {max_iter} iterations");
        }
        let t_out = Instant::now();
        // Only the iterations' slots (the buffer holds HIST of them, 512 KB).
        let mut hist = vec![0i32; 2 * sol.iterations.min(HIST)];
        g.read(&b_hist, 0, &mut hist)?;
        // The iterations that had blocks listed (the device list's loop queues some past the
        // last; the host list stops at it).
        if let Some(end) = hist.chunks(2).position(|pair| pair[0] == 0) {
            sol.iterations = end;
            hist.truncate(2 * end);
        }
        for pair in hist.chunks(2) {
            sol.active.push(pair[0] as u32);
            let reps = if folded && pair[0] as usize <= short.0 { short.1 } else { inner };
            sol.updates += (pair[0] as usize * BV * reps + pair[1] as usize * BV) as u64;
        }
        // A group's own count (fim.cl: no atomics on one address), summed here.
        let mut work = vec![0i32; groups];
        g.read(&b_work, 0, &mut work)?;
        sol.evaluations = Some(work.iter().map(|&w| w as u32 as u64).sum());
        // The mask's voxels in the grid's order on the device (unew is free now), then down
        // and into a grid of NaN, a slab of it on each core.
        let m = vox.len();
        let mut got = vec![0f32; m];
        if m > 0 {
            g.launch(&self.built.unblock, Shape::items(m), args![&b_u, Arg::structure(&fp), b_vox, &b_unew, m as i32])?;
            g.read(&b_unew, 0, &mut got)?;
        }
        record("fim download", ms_since(t_out));
        timings.add(&g.take_timings()?);
        sol.timings = timings;
        // The device's buffers freed on a thread of their own while the values go into the grid
        // and the caller goes on.
        let bufs = (b_mask, b_u, b_unew, lists, counts, b_cand_list, b_cand_count, b_conv, b_cand, b_hist, b_roots, root_counts, b_seen, b_moved, b_work, b_rootsin, b_rootnb, b_rnew, b_wanted);
        self.freeing = Some(Aside::spawn("fim free", move || drop(bufs)));
        sol.u = stage("fim scatter", || scatter(n, vox, &got));
        Ok(sol)
    }
}

/// `vox` on the device (one element where it is empty: neither API allocates nothing).
fn upload_voxels(g: &Gpu, vox: &[i32]) -> Result<Buf<i32>> {
    g.upload(if vox.is_empty() { &[0] } else { vox })
}

/// The grid's sizes alone, for the kernels that move voxels into and out of the blocked layout.
fn grid_params(dims: [usize; 3], bd: [usize; 3]) -> FimParams {
    let [nx, ny, nz] = dims.map(|d| d as i32);
    let [bx, by, bz] = bd.map(|d| d as i32);
    FimParams { nx, ny, nz, bx, by, bz, ..bytemuck::Zeroable::zeroed() }
}

/// A measuring switch set to 0 in the environment.
fn env_off(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| v == "0")
}

/// The device list with the candidates folded into the next update (`Params::folded`).
fn folded(par: &Params) -> bool {
    !par.host_list && par.folded && !env_off("NEUROPORT_FIM_FOLD")
}

/// The skip of voxels none of whose neighbours moved since their last evaluation
/// (`Params::skip`; within a launch of several Jacobi updates, of voxels none of whose in-block
/// neighbours the update before lowered).
fn skip(par: &Params) -> bool {
    par.skip && !env_off("NEUROPORT_FIM_SKIP")
}

/// Jacobi updates per listed block a launch: `Params::inner`, or where that is 0, two where the
/// roots are deferred (004's solver on GPUs) and one otherwise. With 004's solver on the H100
/// (example 3, kernels) 2 / 3 / 4 took 19.1-19.4 / 20.9 / 22.1 ms against 22.6-23.7 at 1; the
/// exact solver, its roots in place, 67.5 / 87.1 ms at 2 / 4 against 62.0 (round21.sh PART=a).
pub fn inner(par: &Params, defer: bool) -> usize {
    match par.inner {
        0 if defer => 2,
        0 => 1,
        n => n,
    }
}

/// Lists of at most `.0` blocks get `.1` Jacobi updates a launch (the folded list, where
/// `Params::inner` is the device's choice): (0, inner) none. `NEUROPORT_FIM_SHORT=LEN,INNER`
/// sets them, for measuring.
pub fn short_lists(par: &Params, defer: bool) -> (usize, usize) {
    let inner = inner(par, defer);
    let env = std::env::var("NEUROPORT_FIM_SHORT").ok().and_then(|v| {
        let (a, b) = v.split_once(',')?;
        Some((a.trim().parse::<usize>().ok()?, b.trim().parse::<usize>().ok().filter(|&n| (1..=64).contains(&n))?))
    });
    match env {
        Some(s) => s,
        None => (0, inner),
    }
}

/// Eager activation (`Params::eager`), which needs the folded list.
fn eager(par: &Params) -> bool {
    folded(par) && par.eager && !env_off("NEUROPORT_FIM_EAGER")
}

fn read1(g: &Gpu, b: &Buf<i32>) -> Result<usize> {
    let mut x = [0i32];
    g.read(b, 0, &mut x)?;
    Ok(x[0].max(0) as usize)
}
