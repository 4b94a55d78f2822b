//! The CPU solvers: node FIM (004 Algorithm 4.1, Jacobi updates of the active list on all
//! cores) and the fast sweeping baselines (Godunov; Lax-Friedrichs in `lf.rs`). Generic over the
//! float type so tests can run them in f64.

use super::godunov::{self, Neighbours, Real};
use super::{FimKernels, Params, Problem, Solution, Solver};
use crate::runtime::cpu::Cpu;
use crate::runtime::timing::wall_ms;
use crate::volume::xyz_of;
use anyhow::Result;
use rayon::prelude::*;
use std::sync::Arc;

use super::lf::sweep_lf;

pub struct CpuFim {
    cpu: Arc<Cpu>,
}

impl CpuFim {
    pub fn new(cpu: Arc<Cpu>) -> CpuFim {
        CpuFim { cpu }
    }
}

impl FimKernels for CpuFim {
    fn solve(&mut self, p: &Problem, params: &Params) -> Result<Solution> {
        let (mut sol, ms) = wall_ms(|| match params.solver {
            Solver::Fim => self.cpu.install(|| node_fim::<f32>(p, params)),
            Solver::Sweep => sweep::<f32>(p, params),
            Solver::SweepLf => sweep_lf(p, params),
        });
        sol.timings.kernel_ms = ms;
        Ok(sol)
    }
}

/// Cost u with INF (not reached / outside) turned into NaN.
pub fn to_output<R: Real>(u: &[R]) -> Vec<f32> {
    u.iter().map(|&x| if x.is_finite() { x.f64() as f32 } else { f32::NAN }).collect()
}

/// Initial u: 0 on the sources inside the mask, INF elsewhere.
pub fn initial<R: Real>(p: &Problem) -> Vec<R> {
    (0..p.nvox()).map(|v| if p.mask[v] != 0 && p.source[v] != 0 { R::ZERO } else { R::INF }).collect()
}

/// The 6-neighbourhood of `v` as flat indices (None off the grid).
#[inline]
pub fn neighbour_indices(dims: [usize; 3], v: usize) -> [[Option<usize>; 2]; 3] {
    let pos = xyz_of(v, dims);
    let stride = [1, dims[0], dims[0] * dims[1]];
    std::array::from_fn(|k| [(pos[k] > 0).then(|| v - stride[k]), (pos[k] + 1 < dims[k]).then(|| v + stride[k])])
}

/// Neighbour values for g: off the grid is INF; outside the mask u is INF already.
#[inline]
pub fn neighbours<R: Real>(u: &[R], dims: [usize; 3], v: usize) -> Neighbours<R> {
    neighbour_indices(dims, v).map(|ax| ax.map(|i| i.map_or(R::INF, |i| u[i])))
}

/// g(U_v) from the current u.
#[inline]
pub fn local<R: Real>(p: &Problem, inv_h: &[R; 3], u: &[R], v: usize, params: &Params) -> R {
    godunov::solve(&p.s::<R>(v), inv_h, &neighbours(u, p.dims, v), params.validity, params.local)
}

pub fn inv_h<R: Real>(p: &Problem) -> [R; 3] {
    p.voxel.map(|h| R::of(1.0 / h))
}

fn free(p: &Problem, v: usize) -> bool {
    p.mask[v] != 0 && p.source[v] == 0
}

/// Has an update from `old` to `new` (new <= old) converged?
#[inline]
fn settled<R: Real>(old: R, new: R, tol: R) -> bool {
    !(new < old) || old - new <= tol * new
}

/// 004 Algorithm 4.1 with Jacobi updates of the whole active list per iteration. Every phase
/// reads one snapshot of u and writes afterwards, so the result does not depend on the thread
/// count; the active list is kept sorted for locality and determinism.
pub fn node_fim<R: Real>(p: &Problem, params: &Params) -> Solution {
    let dims = p.dims;
    let ih = inv_h::<R>(p);
    let tol = R::of(params.tol);
    let mut u = initial::<R>(p);
    let mut in_list = vec![false; p.nvox()];
    let mut list: Vec<usize> = (0..p.nvox())
        .filter(|&v| free(p, v) && neighbour_indices(dims, v).iter().flatten().flatten().any(|&n| p.mask[n] != 0 && p.source[n] != 0))
        .collect();
    for &v in &list {
        in_list[v] = true;
    }
    let mut sol = Solution::default();
    let progress = super::Progress::reaching(params, || {
        let inside = p.mask.iter().filter(|&&m| m != 0).count();
        (inside as u64, (inside - (0..p.nvox()).filter(|&v| free(p, v)).count()) as u64)
    });
    while !list.is_empty() {
        let mut reached = 0;
        sol.iterations += 1;
        sol.active.push(list.len() as u32);
        progress.at(sol.iterations, list.len(), "nodes");
        // Step 1: update every active node from the same snapshot.
        let new: Vec<R> = list.par_iter().with_min_len(256).map(|&v| local(p, &ih, &u, v, params)).collect();
        let mut converged = Vec::new();
        let mut keep = Vec::with_capacity(list.len());
        for (&v, &q) in list.iter().zip(&new) {
            let old = u[v];
            if q < old {
                reached += !old.is_finite() as u64;
                u[v] = q;
            }
            if settled(old, q, tol) { converged.push(v) } else { keep.push(v) }
        }
        // Step 2: neighbours of converged nodes that are not active are re-evaluated and join
        // the list when they improve.
        let mut cand: Vec<usize> = converged
            .par_iter()
            .flat_map_iter(|&v| neighbour_indices(dims, v).into_iter().flatten().flatten())
            .filter(|&n| free(p, n) && !in_list[n])
            .collect();
        cand.par_sort_unstable();
        cand.dedup();
        let q: Vec<R> = cand.par_iter().with_min_len(256).map(|&v| local(p, &ih, &u, v, params)).collect();
        sol.updates += (list.len() + cand.len()) as u64;
        for &v in &converged {
            in_list[v] = false;
        }
        for (&v, &q) in cand.iter().zip(&q) {
            if q < u[v] {
                reached += !u[v].is_finite() as u64;
                u[v] = q;
                in_list[v] = true;
                keep.push(v);
            }
        }
        progress.reached(reached, sol.iterations, keep.len());
        keep.par_sort_unstable();
        list = keep;
    }
    sol.u = to_output(&u);
    sol
}

/// The eight Gauss-Seidel orderings of fast sweeping: axis k runs backwards when bit k is set.
fn sweep_order(dims: [usize; 3], dir: usize) -> impl Iterator<Item = usize> {
    let ax = move |k: usize, i: usize| if dir >> k & 1 == 1 { dims[k] - 1 - i } else { i };
    (0..dims[2]).flat_map(move |z| (0..dims[1]).flat_map(move |y| (0..dims[0]).map(move |x| ax(0, x) + dims[0] * (ax(1, y) + dims[1] * ax(2, z)))))
}

/// Fast sweeping with the Godunov Hamiltonian (Tsai et al.; 004's baseline), one thread as
/// the paper's.
pub fn sweep<R: Real>(p: &Problem, params: &Params) -> Solution {
    let ih = inv_h::<R>(p);
    let mut u = initial::<R>(p);
    let mut sol = sweep_rounds(p, params, &mut u, |u, v| local(p, &ih, u, v, params));
    sol.u = to_output(&u);
    sol
}

/// Gauss-Seidel sweeps of `update` over the free nodes in the eight orderings, until a round
/// of eight lowers no node by more than tol * u or `max_sweeps` is reached (both fast sweeping
/// baselines).
pub(super) fn sweep_rounds<R: Real>(p: &Problem, params: &Params, u: &mut [R], update: impl Fn(&[R], usize) -> R) -> Solution {
    let free_n = (0..p.nvox()).filter(|&v| free(p, v)).count() as u64;
    let tol = R::of(params.tol);
    let mut sol = Solution::default();
    let progress = super::Progress::new(params);
    loop {
        if params.max_sweeps > 0 && sol.iterations >= params.max_sweeps {
            sol.capped = true;
            return sol;
        }
        let mut changed = false;
        for dir in 0..8 {
            sol.iterations += 1;
            progress.at(sol.iterations, free_n as usize, "nodes (sweep)");
            sol.updates += free_n;
            for v in sweep_order(p.dims, dir) {
                if !free(p, v) {
                    continue;
                }
                let q = update(u, v);
                if q < u[v] {
                    changed |= !settled(u[v], q, tol);
                    u[v] = q;
                }
            }
        }
        if !changed {
            return sol;
        }
    }
}
