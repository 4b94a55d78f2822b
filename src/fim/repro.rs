//! `fim-t1`: paper 004 Table 1, the time to solve H(grad u) = 1 from a seed on three tensor
//! volumes: block FIM on every GPU / OpenCL device, node FIM on the CPU (all cores and one
//! thread), and 004's CPU baselines, fast sweeping with the Godunov and (examples 1-2, as the
//! paper) the Lax-Friedrichs Hamiltonian. Published: GeForce 8800 GTX (GPU FIM) and Core 2 Duo
//! 2.4 GHz (fast sweeping).
//!
//! Examples 1 and 2 are built as the paper describes them. The paper's brain cannot be had;
//! example 3 is the brain-like phantom (`synth::phantom::brain_like_with`) on the paper's grid
//! with its white-matter bundles as the mask (thinned to hold about 004's 196 K voxels), sharpened metric alpha = 3, seed at the white-matter
//! voxel nearest the centre. Every solver's u is compared with node FIM's (notes).

use super::{kernels, metric, Params, Problem, Solution, Solver};
use crate::dti::sym3;
use crate::repro::published::{lookup, shown};
use crate::repro::{add_speedups, timed_median, PlotSpec, Report, Row, RunCtx, Scale, Target, ALL_CORES, ONE_THREAD};
use crate::runtime::timing::wall_ms;
use crate::runtime::Device;
use crate::synth::phantom::{brain_like_with, voxel_axes_to_fsl, Bundles};
use crate::volume::xyz_of;
use anyhow::Result;

pub struct FimT1;

const GPU_PUBLISHED: &str = "GeForce 8800 GTX, CUDA (004)";
const CPU_PUBLISHED: &str = "Core 2 Duo 2.4 GHz, 1 thread (004)";
const TABLE: &str = "fim_table1_runtime";

pub struct Example {
    pub id: u32,
    pub config: String,
    pub problem: Problem,
    /// Lax-Friedrichs is run (004: not on example 3, "due to its complex boundary").
    pub lf: bool,
    /// The one-thread node FIM and the sweeping baselines are run on this grid.
    pub baselines: bool,
    /// Node FIM on all cores runs on this grid (not on the 64^3 helix: ~350 updates per voxel,
    /// half of them through the exact root of H_G, minutes on 16 cores).
    pub cpu_fim: bool,
    /// The one-thread node FIM runs (not on example 3 at paper scale: minutes on one core).
    pub one_thread: bool,
    /// Sweeps after which the sweeping baselines stop unconverged (0: none); such a row's time
    /// is a lower bound and says so.
    pub sweep_cap: usize,
    /// The grid is the paper's: published figures go beside the rows, not in the notes.
    pub paper_size: bool,
    pub substituted: String,
}

/// 004's example `id` as `bench fim` builds it: 1 (constant) and 2 (helix) on an `n`^3 grid, 3
/// (brain-like) on `dims` (x, y, z). An error naming the option for a grid the example cannot be
/// built on (an axis of 0 voxels, or more voxels than fit in memory or in the devices' 32-bit
/// indices), instead of an index panic or an allocation abort.
pub fn example(id: u32, n: usize, dims: &[usize], seed: u64) -> Result<Example> {
    let (grid, what) = match (id, dims) {
        (1 | 2, _) => ([n; 3], format!("--n {n}")),
        (3, &[x, y, z]) => ([x, y, z], format!("--dims {x},{y},{z}")),
        (3, d) => anyhow::bail!("--dims takes three sizes x,y,z, not {d:?}"),
        (e, _) => anyhow::bail!("--example is 1, 2 or 3, not {e}"),
    };
    if grid.contains(&0) {
        anyhow::bail!("{what}: every axis needs at least 1 voxel");
    }
    // Example 3's phantom holds ~80 bytes a voxel while it is built (tensor, speed, masks).
    let nv = grid.iter().try_fold(1usize, |a, &d| a.checked_mul(d)).filter(|&nv| nv <= i32::MAX as usize);
    let fits = nv.is_some_and(|nv| crate::runtime::memory::room_for(&what, nv, 80).is_ok());
    if !fits {
        anyhow::bail!("{what}: too large a grid ({} voxels): more than fit in memory or in 32-bit voxel indices", grid.iter().map(|&d| d as f64).product::<f64>());
    }
    Ok(match id {
        1 => constant(n),
        2 => helix(n),
        _ => brain(grid, seed),
    })
}

/// Example 1: a constant speed matrix a = d = f = 1, b = c = e = 0.9 (elongated along the
/// diagonal), seed at the centre (004 does not say where; its Fig. 8a shows a central source).
pub fn constant(n: usize) -> Example {
    let nv = n * n * n;
    let mut source = vec![0u8; nv];
    source[n / 2 + n * (n / 2 + n * (n / 2))] = 1;
    Example {
        id: 1,
        config: format!("example 1: {n}^3 constant"),
        problem: Problem { dims: [n; 3], voxel: [1.0; 3], speed: metric::constant([1.0, 0.9, 0.9, 1.0, 0.9, 1.0], nv), mask: vec![1; nv], source },
        lf: true,
        baselines: true,
        cpu_fim: true,
        one_thread: true,
        sweep_cap: 0,
        paper_size: n == 64,
        substituted: String::new(),
    }
}

/// Example 2: the principal eigenvector along the tangent of helices about the volume's z axis
/// (two turns over the height), eigenvalues 1 and 1e-4 (as S), seed at the centre of the bottom
/// slice (004 Sec. 6).
pub fn helix(n: usize) -> Example {
    let nv = n * n * n;
    let c = (n as f64 - 1.0) / 2.0;
    let pitch = n as f64 / (2.0 * std::f64::consts::TAU); // dz per radian: two turns
    let mut speed = vec![0f32; 6 * nv];
    for v in 0..nv {
        let (x, y) = ((v % n) as f64 - c, ((v / n) % n) as f64 - c);
        let r = (x * x + y * y).sqrt();
        let t = if r < 1e-9 { [0.0, 0.0, 1.0] } else { [-y, x, pitch] };
        let k = (t[0] * t[0] + t[1] * t[1] + t[2] * t[2]).sqrt();
        let e1 = t.map(|q| q / k);
        let e2 = if e1[2].abs() > 0.999 { [1.0, 0.0, 0.0] } else {
            let q = (e1[0] * e1[0] + e1[1] * e1[1]).sqrt();
            [e1[1] / q, -e1[0] / q, 0.0]
        };
        let s = sym3::from_eigen([1.0, 1e-4, 1e-4], e1, e2);
        for (comp, &val) in s.iter().enumerate() {
            speed[comp * nv + v] = val as f32;
        }
    }
    let mut source = vec![0u8; nv];
    source[n / 2 + n * (n / 2)] = 1;
    Example {
        id: 2,
        config: format!("example 2: {n}^3 helix"),
        problem: Problem { dims: [n; 3], voxel: [1.0; 3], speed, mask: vec![1; nv], source },
        lf: true,
        baselines: true,
        cpu_fim: true,
        one_thread: true,
        sweep_cap: 0,
        paper_size: n == 64,
        substituted: String::new(),
    }
}

/// Example 3's bundles: thinner than the phantom's default so that the white-matter mask holds
/// about as many voxels as 004's brain (196 K): 199,012 at 256x256x100 (the default bundles
/// hold 402,464, which rounds 4-9 measured).
pub const BRAIN_BUNDLES: Bundles = Bundles { tube: 0.045, slab: 0.15 };

/// Example 3 stand-in: the brain-like phantom, white-matter bundles as the mask, sharpened
/// metric (alpha 3, as 004's brain data), seed at the white-matter voxel nearest the centre.
pub fn brain(dims: [usize; 3], seed: u64) -> Example {
    let ph = brain_like_with(dims, [1.0; 3], seed, BRAIN_BUNDLES);
    let mut tensor = ph.tensor.clone();
    voxel_axes_to_fsl(&mut tensor, &ph.geom);
    let (speed, _) = metric::speed_from_tensor(&tensor, &ph.geom, &ph.wm, metric::Metric::Sharpened, 3.0).expect("the phantom's tensors allow alpha 3");
    let nv = ph.geom.nvox();
    let c = dims.map(|d| (d as f64 - 1.0) / 2.0);
    let d2 = |v: usize| {
        let p = xyz_of(v, dims);
        (0..3).map(|k| (p[k] as f64 - c[k]).powi(2)).sum::<f64>()
    };
    let centre = (0..nv).filter(|&v| ph.wm[v] != 0).min_by(|&a, &b| d2(a).total_cmp(&d2(b))).unwrap_or(0);
    let mut source = vec![0u8; nv];
    source[centre] = 1;
    let nwm = ph.wm.iter().filter(|&&m| m != 0).count();
    Example {
        id: 3,
        config: format!("example 3: {}x{}x{} brain-like", dims[0], dims[1], dims[2]),
        problem: Problem { dims, voxel: [1.0; 3], speed, mask: ph.wm, source },
        lf: false,
        baselines: true,
        cpu_fim: true,
        one_thread: true,
        sweep_cap: 0,
        paper_size: dims == [256, 256, 100],
        substituted: format!("brain-like phantom (arched commissural + 2 projection bundles), {nwm} white-matter voxels, 1 mm; 004's DT-MRI brain (196K voxels) is not available"),
    }
}

/// Edge of the helix on which the CPU rows run at paper scale (64^3 on GPUs only).
const HELIX_CPU: usize = 12;
/// Example 3's sweeps at paper scale: a bound, not a schedule. ~0.5 s a sweep on one core of
/// the H100 host since the closed-form H_G (8 sweeps 4.2 s); 12 rounds of 8 converged at
/// 64x64x25. Past the bound the row is a lower bound ('at least' on the node-FIM speed-up).
const BRAIN_SWEEP_CAP: usize = 200;

pub fn examples(scale: Scale, seed: u64) -> Vec<Example> {
    match scale {
        Scale::Quick => vec![constant(16), helix(12), brain([32, 32, 12], seed)],
        // Measured (docs/performance.md, fim3): the 64^3 helix needs ~350 updates per voxel, half
        // of them through the exact root of H_G (~16 evaluations of H_G each): minutes for node
        // FIM on 16 cores, so its CPU rows run at 12^3. The sweeping baselines of examples 1-2 at
        // 32^3 / 12^3 beside node FIM at the same size, converged (12^3 helix: 280 Godunov and
        // 3,704 Lax-Friedrichs sweeps); example 3's sweeping stops after its first round of 8
        // sweeps, reported as a lower bound, and its one-thread node FIM is left out (81 updates
        // per voxel, a third through H_G's root: minutes on one core; all cores are measured).
        Scale::Paper => {
            let gpu_only = |mut e: Example, cpu_fim: bool| {
                e.baselines = false;
                e.lf = false;
                e.cpu_fim = cpu_fim;
                e
            };
            let capped = |mut e: Example, cap: usize, one_thread: bool| {
                e.sweep_cap = cap;
                e.one_thread = one_thread;
                e
            };
            vec![
                gpu_only(constant(64), true),
                constant(32),
                gpu_only(helix(64), false),
                capped(helix(HELIX_CPU), 0, true),
                capped(brain([256, 256, 100], seed), BRAIN_SWEEP_CAP, false),
            ]
        }
    }
}

/// Largest |a - b| / |b| over voxels finite in `b`; infinite if the NaN patterns differ.
pub fn max_rel_diff(a: &[f32], b: &[f32]) -> f64 {
    let mut worst = 0.0f64;
    for (&x, &y) in a.iter().zip(b) {
        match (x.is_finite(), y.is_finite()) {
            (true, true) => worst = worst.max((x as f64 - y as f64).abs() / (y as f64).abs().max(1e-30)),
            (false, false) => {}
            _ => return f64::INFINITY,
        }
    }
    worst
}

/// Largest |a - b| over voxels finite in `b`, relative to the largest finite b; infinite if
/// the NaN patterns differ.
pub fn range_rel_diff(a: &[f32], b: &[f32]) -> f64 {
    let top = b.iter().filter(|x| x.is_finite()).fold(0.0f64, |m, &x| m.max(x as f64));
    let worst = a.iter().zip(b).try_fold(0.0f64, |w, (&x, &y)| match (x.is_finite(), y.is_finite()) {
        (true, true) => Some(w.max((x as f64 - y as f64).abs())),
        (false, false) => Some(w),
        _ => None,
    });
    worst.map_or(f64::INFINITY, |w| w / top.max(1e-30))
}

/// One measured solver: wall time of `solve` (median of the repeats after a warm-up when
/// `repeats` > 0, a single cold run otherwise) and the median run's solution.
fn measure(dev: &Device, p: &Problem, params: &Params, repeats: usize) -> Result<(f64, Solution)> {
    let mut k = kernels(dev, params)?;
    let mut once = || -> Result<(f64, Solution)> {
        let (sol, ms) = wall_ms(|| k.solve(p, params));
        Ok((ms, sol?))
    };
    if repeats == 0 { once() } else { timed_median(repeats, once) }
}

struct Run<'a> {
    dev: &'a Device,
    variant: String,
    params: Params,
    published: (Option<f64>, &'static str),
    /// Cold single run (one-thread and sweeping baselines at paper scale).
    single: bool,
}

/// Iterations, updates per voxel and the active list of a solve, for notes and `bench fim`.
pub fn describe(sol: &Solution, mask: &[u8], gpu: bool) -> String {
    let mut s = format!("{} iterations, {:.2} updates per voxel", sol.iterations, sol.updates_per_voxel(mask));
    if let Some(e) = sol.evaluations_per_voxel(mask) {
        s += &format!(" ({e:.2} evaluated)");
    }
    if !sol.active.is_empty() {
        let max = sol.active.iter().max().copied().unwrap_or(0);
        let mean = sol.active.iter().map(|&a| a as f64).sum::<f64>() / sol.active.len() as f64;
        s += &format!(", active {} per iteration mean {mean:.0}, max {max}", if gpu { "blocks" } else { "nodes" });
    }
    if gpu {
        s += &format!(", {:.3} host syncs per iteration", sol.host_syncs as f64 / sol.iterations.max(1) as f64);
    }
    if let Some(pr) = sol.probe {
        s += &format!(
            "; H_G's roots wanted at {} of {} listed voxels in the first {} iterations{}",
            pr.wanted,
            pr.listed,
            pr.iterations,
            if pr.frequent() { ", so solved again with them in place (these figures)" } else { "" }
        );
    }
    s
}

impl Target for FimT1 {
    fn id(&self) -> &'static str {
        "fim-t1"
    }
    fn title(&self) -> &'static str {
        "Anisotropic Hamilton-Jacobi solvers: running time on 3D tensor volumes (004 Table 1)"
    }
    fn plot(&self) -> PlotSpec {
        PlotSpec { x_label: "example and grid".into(), y_label: "run time (s)".into(), log_x: false, log_y: true, metric: None }
    }
    fn run(&self, ctx: &RunCtx) -> Result<Report> {
        let quick = ctx.scale == Scale::Quick;
        let one = ctx.one_thread_cpu()?;
        let fim = Params::default();
        let paper = Params { local: super::Local::Paper, ..fim };
        let sweep = Params { solver: Solver::Sweep, ..fim };
        let with_cpu = ctx.devices.iter().any(|d| d.is_cpu());
        let lf = Params { solver: Solver::SweepLf, ..fim };
        let mut rows = Vec::new();
        let mut notes = vec![
            "Ours = wall time of one solve (host reordering, transfers and kernels; kernel/transfer/host split in the columns), median of the repeats after a warm-up; at paper scale the CPU rows run once, cold. Problem set-up (tensors to S) is excluded.".to_string(),
            "Node FIM and block FIM stop a node (block) when an update lowers it by at most 1e-6 u; fast sweeping stops after 8 sweeps with no such change. Each solver's u is compared with node FIM (all cores) below.".into(),
            "Block FIM on GPUs: the device list folds each iteration's candidates into the next iteration's update (two launches an iteration; 'active blocks' counts both) and activates a block's neighbour as soon as a voxel on their common face changes, besides 004's six neighbours of a converged block (docs/fim.md, eager activation: about half the iterations); the host list runs 004's Algorithm 5.1 as published (the candidates updated in a launch of their own, the list rebuilt on the host). With 004's local solver the device list leaves H_G's roots (a node without a valid candidate) to a launch of their own, which finds each to the same 4 eps as the CPU's search (docs/fim.md, deferred roots).".into(),
            "Example 1's seed is the centre voxel (004 gives none); example 2's helices turn twice about the z axis, seed at the centre of the bottom slice. Examples 1-2 give S directly (004 eq. 5).".into(),
        ];
        if !quick {
            notes.push(format!("Paper scale: the 64^3 helix runs on GPUs only (~350 updates per voxel, half through the exact root of H_G: minutes for node FIM on 16 cores); its CPU rows run at {HELIX_CPU}^3, converged. Example 3's Godunov sweeping runs to convergence or at most {BRAIN_SWEEP_CAP} sweeps (then a lower bound on its time, so the node-FIM speed-up is 'at least'); its one-thread node FIM is not run (minutes on one core)."));
        }
        for ex in examples(ctx.scale, ctx.seed) {
            let p = &ex.problem;
            p.validate()?;
            let pubd = |col: &str| lookup(TABLE, "example", &ex.id.to_string(), col);
            let (pg, ps, pl) = (pubd("gpu_fim_s"), pubd("cpu_fast_sweeping_godunov_s"), pubd("cpu_fast_sweeping_lax_friedrichs_s"));
            if !ex.paper_size {
                notes.push(format!("Published for example {} (64^3 / 256x256x100, not comparable with {}): GPU FIM {} s on the {GPU_PUBLISHED}; fast sweeping Godunov {} s, Lax-Friedrichs {} s on the {CPU_PUBLISHED}.", ex.id, ex.config, shown(pg), shown(ps), shown(pl)));
            }
            let pb = |v: Option<f64>, d: &'static str| if ex.paper_size { (v, d) } else { (None, "") };
            let mut runs = Vec::new();
            for d in ctx.devices.iter().filter(|d| !d.is_cpu()) {
                runs.push(Run { dev: d, variant: "block FIM, device list".into(), params: fim, published: pb(pg, GPU_PUBLISHED), single: false });
                runs.push(Run { dev: d, variant: "block FIM, host list".into(), params: Params { host_list: true, ..fim }, published: (None, ""), single: false });
                // 004 Sec. 4.2: its integer-index test against Tsai's three evaluations of H.
                runs.push(Run { dev: d, variant: "block FIM, device list, Tsai test".into(), params: Params { validity: super::Validity::Tsai, ..fim }, published: (None, ""), single: false });
                // 004's local solver as published (the valid minimum candidate, not monotone).
                runs.push(Run { dev: d, variant: "block FIM, device list, 004 local solver".into(), params: paper, published: pb(pg, GPU_PUBLISHED), single: false });
            }
            for d in ctx.devices.iter().filter(|d| d.is_cpu() && ex.cpu_fim) {
                runs.push(Run { dev: d, variant: ALL_CORES.into(), params: fim, published: (None, ""), single: !quick });
                runs.push(Run { dev: d, variant: "node FIM, 004 local solver, all cores".into(), params: paper, published: (None, ""), single: !quick });
            }
            // The CPU baselines run when the CPU is among the devices (a GPU-only run skips them).
            let sp = Params { max_sweeps: ex.sweep_cap, ..sweep };
            if ex.baselines && with_cpu {
                if ex.one_thread {
                    runs.push(Run { dev: &one, variant: ONE_THREAD.into(), params: fim, published: (None, ""), single: !quick });
                }
                runs.push(Run { dev: &one, variant: "fast sweeping Godunov, 1 thread".into(), params: sp, published: pb(ps, CPU_PUBLISHED), single: !quick });
            }
            if ex.lf && with_cpu {
                runs.push(Run { dev: &one, variant: "fast sweeping Lax-Friedrichs, 1 thread".into(), params: Params { max_sweeps: ex.sweep_cap, ..lf }, published: pb(pl, CPU_PUBLISHED), single: !quick });
            }
            let mut reference: Option<Vec<f32>> = None;
            let mut results = Vec::new();
            for r in &runs {
                ctx.say(&format!("fim-t1 {} on {} [{}]", ex.config, r.dev.label(), r.variant));
                let reps = if r.single { 0 } else { ctx.repeats.max(1) };
                match measure(r.dev, p, &r.params, reps) {
                    Ok((ms, sol)) => {
                        ctx.say(&format!("  {:.3} s: {}", ms * 1e-3, describe(&sol, &p.mask, !r.dev.is_cpu())));
                        if r.dev.is_cpu() && r.variant == ALL_CORES && reference.is_none() {
                            reference = Some(sol.u.clone());
                        }
                        // No numeric x: each grid is a category (at paper scale examples 1-2 run
                        // at two sizes, which a line over the example number joined).
                        let row = Row::new(self.id(), ex.config.clone(), r.dev.info(), r.variant.clone(), "run time", "s", ms * 1e-3)
                            .published(r.published.0, r.published.1)
                            .split(&sol.timings)
                            .substituted(ex.substituted.clone());
                        rows.push(row);
                        results.push((r, sol));
                    }
                    Err(e) => notes.push(format!("{} on {} [{}]: error: {e:#}", ex.config, r.dev.label(), r.variant)),
                }
            }
            // Compared with node FIM only where the CPU ran it in this run: a GPU-only run solving
            // the reference as well took most of its time on it (the helix, example 3); GPU = CPU
            // is `neuroport check`'s and the test suite's.
            let reference = match reference {
                Some(r) => r,
                None => {
                    for (r, sol) in &results {
                        notes.push(format!("{} on {} [{}]: {}; not compared (no CPU node FIM in this run).", ex.config, r.dev.label(), r.variant, describe(sol, &p.mask, !r.dev.is_cpu())));
                    }
                    continue;
                }
            };
            let mut sweep_ms = None;
            let mut fim_ms = None;
            for (r, sol) in &results {
                let diff = range_rel_diff(&sol.u, &reference);
                let capped = if sol.capped { format!(" (stopped after its first {} sweeps, not converged: its time is a lower bound)", sol.iterations) } else { String::new() };
                notes.push(format!("{} on {} [{}]{capped}: {}; max difference from node FIM, relative to its largest u, {diff:.2e}.", ex.config, r.dev.label(), r.variant, describe(sol, &p.mask, !r.dev.is_cpu())));
            }
            for row in rows.iter().filter(|row| row.config == ex.config && row.device == "cpu") {
                if row.variant == ALL_CORES {
                    fim_ms = Some(row.ours);
                } else if row.variant.starts_with("fast sweeping Godunov") {
                    sweep_ms = Some(row.ours);
                }
            }
            for row in rows.iter().filter(|row| row.config == ex.config && row.variant.ends_with("Tsai test")) {
                if let Some(idx) = rows.iter().find(|o| o.config == ex.config && o.device == row.device && o.variant == "block FIM, device list") {
                    notes.push(format!("{} on {}: Tsai's test takes {:.2}x the time of the index test (004: ~1.5x).", ex.config, row.device, row.ours / idx.ours));
                }
            }
            if let (Some(f), Some(s)) = (fim_ms, sweep_ms) {
                // A lower bound only where the sweeping stopped at its bound unconverged.
                let capped = results.iter().any(|(r, sol)| r.variant.starts_with("fast sweeping Godunov") && sol.capped);
                let at_least = if capped { "at least " } else { "" };
                notes.push(format!("{}: CPU node FIM (all cores) is {at_least}{:.1}x faster than fast sweeping Godunov (1 thread) (issue target >= 10x).", ex.config, s / f));
            }
        }
        add_speedups(&mut rows);
        Ok(self.report(rows, notes))
    }
}

#[cfg(test)]
mod tests {
    /// 004's example 3 is a brain whose white matter holds ~196 K voxels; the stand-in must hold
    /// about as many on the paper's grid (within 5 %), and stay one connected piece reachable
    /// from its seed (6-neighbours), or the solvers' work would not be the paper's.
    #[test]
    fn example_3_holds_about_004s_white_matter_voxels_in_one_piece() {
        let e = super::brain([256, 256, 100], 1);
        let p = &e.problem;
        let n = p.mask.iter().filter(|&&m| m != 0).count();
        assert!((n as f64 / 196_000.0 - 1.0).abs() < 0.05, "{n} white-matter voxels");
        let [nx, ny, nz] = p.dims;
        let mut seen = vec![false; p.mask.len()];
        let start = p.source.iter().position(|&s| s != 0).expect("a seed");
        assert!(p.mask[start] != 0);
        let (mut stack, mut reached) = (vec![start], 0usize);
        seen[start] = true;
        while let Some(v) = stack.pop() {
            reached += 1;
            let [x, y, z] = crate::volume::xyz_of(v, p.dims);
            let mut go = |w: usize| {
                if p.mask[w] != 0 && !seen[w] {
                    seen[w] = true;
                    stack.push(w);
                }
            };
            if x > 0 { go(v - 1) }
            if x + 1 < nx { go(v + 1) }
            if y > 0 { go(v - nx) }
            if y + 1 < ny { go(v + nx) }
            if z > 0 { go(v - nx * ny) }
            if z + 1 < nz { go(v + nx * ny) }
        }
        assert_eq!(reached, n, "white matter not in one piece from the seed");
    }
}
