//! `neuroport bench fim`: one example of `fim-t1` (004 Table 1) with one solver on every selected
//! device, wall time of the solve (median of repeats after a warm-up, or one cold run), with
//! iterations, updates per voxel and the active list per iteration. Measures example 3 alone.

use crate::cli::Ctx;
use anyhow::{bail, Result};
use neuroport::fim::repro::{describe, example};
use neuroport::fim::{kernels, Local, Params, Solver, Validity};
use neuroport::runtime::timing::wall_ms;

#[derive(clap::Args)]
pub struct Args {
    /// 004's example: 1 constant tensor, 2 helix, 3 brain-like 256x256x100
    #[arg(long, default_value_t = 3)]
    example: u32,
    /// Edge of examples 1-2 (004: 64); example 3 takes --dims
    #[arg(long, default_value_t = 64)]
    n: usize,
    /// Grid of example 3, x,y,z
    #[arg(long, default_value = "256,256,100", value_delimiter = ',')]
    dims: Vec<usize>,
    /// fim (node FIM on the CPU, block FIM on GPUs), or a CPU fast-sweeping baseline
    #[arg(long, value_enum, default_value_t = Solver::Fim)]
    solver: Solver,
    /// Validity test of the Godunov solution: the paper's index test or Tsai et al.'s
    #[arg(long, value_enum, default_value_t = Validity::Index)]
    validity: Validity,
    /// Local solver: exact (monotone) or 004's valid-minimum candidate
    #[arg(long = "local", value_enum, default_value_t = Local::Exact)]
    local: Local,
    /// Fast sweeping: stop after this many sweeps (0: until converged)
    #[arg(long, default_value_t = 0)]
    max_sweeps: usize,
    /// GPU block FIM: Jacobi updates per active block per iteration (0: the device's choice, 2
    /// with --local paper on GPUs, else 1; at most 64)
    #[arg(long, default_value_t = Params::default().inner)]
    inner: usize,
    /// GPU block FIM: the active list on the host (004 Sec. 5.2)
    #[arg(long)]
    host_list: bool,
    /// Timed runs after one warm-up (0: one cold run)
    #[arg(long, default_value_t = 3)]
    repeats: usize,
    /// Seed of example 3's brain-like phantom (the jitter of its tensors)
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Write the active list's length at every iteration of the median run (blocks on a GPU,
    /// nodes for CPU node FIM), one a line, to this file (one device only)
    #[arg(long)]
    active_out: Option<std::path::PathBuf>,
}

pub fn run(ctx: &Ctx, a: Args) -> Result<i32> {
    let ex = example(a.example, a.n, &a.dims, a.seed)?;
    let params = Params { solver: a.solver, validity: a.validity, local: a.local, max_sweeps: a.max_sweeps, inner: a.inner, host_list: a.host_list, ..Params::default() };
    neuroport::fim::check_params(&params)?;
    let devices = ctx.inventory().select(&ctx.backend_or_all(), true)?;
    if a.active_out.is_some() && devices.len() != 1 {
        bail!("--active-out takes one device's lists: name one with --backend");
    }
    // Claimed before the solves, so an existing file is refused before any work.
    let mut out = neuroport::volume::Outputs::new();
    let active_tmp = a.active_out.as_deref().map(|p| out.temp_for(p)).transpose()?;
    // The names the options take (Debug printed "solver Fim", which --solver refuses).
    use neuroport::fim::cli_name as name;
    println!("{}, solver {}, validity {}, local solver {}", ex.config, name(a.solver), name(a.validity), name(a.local));
    for dev in &devices {
        if a.solver != Solver::Fim && !dev.is_cpu() {
            continue; // the sweeping baselines are CPU-only
        }
        eprintln!("  bench fim: example {} on {}", ex.id, dev.label());
        // One kernel set per device, as fim-t1 measures: the repeats time the solve, not a new
        // queue and its page-locked staging each (~10 ms on the H100 that one command hides
        // behind loading its kernels).
        ex.problem.validate()?;
        let mut k = kernels(dev, &params)?;
        let mut runs = Vec::new();
        for _ in 0..a.repeats + 1 {
            let (sol, ms) = wall_ms(|| k.solve(&ex.problem, &params));
            runs.push((ms, sol?));
            if a.repeats == 0 {
                break;
            }
        }
        if a.repeats > 0 {
            runs.remove(0); // warm-up
        }
        runs.sort_by(|x, y| x.0.total_cmp(&y.0));
        let (ms, sol) = &runs[(runs.len() - 1) / 2];
        let capped = if sol.capped { " (capped: not converged)" } else { "" };
        println!("{:<40} {:>10.2} ms wall, {:>10.2} ms kernels: {}{capped}", dev.label(), ms, sol.timings.kernel_ms, describe(sol, &ex.problem.mask, !dev.is_cpu()));
        if let (Some(tmp), Some(path)) = (&active_tmp, &a.active_out) {
            let text: String = sol.active.iter().map(|n| format!("{n}\n")).collect();
            std::fs::write(tmp, text).map_err(|e| anyhow::anyhow!("cannot write {}: {}", path.display(), neuroport::volume::plain_io(&e)))?;
        }
    }
    out.commit()?;
    Ok(0)
}
