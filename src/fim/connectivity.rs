//! Region-to-region connectivity (004 Sec. 3): total cost u = u1 + u2, the optimal path cost
//! E(gamma) = min u, the epsilon volumetric pathway {x : u(x) < (1 + eps) E(gamma)}, and the
//! minimal path traced back from the minimiser of u to both regions.

use super::cpu::neighbour_indices;
use super::Problem;
use crate::volume::xyz_of;
use anyhow::{bail, Result};
use rayon::prelude::*;

pub struct Connectivity {
    /// u1 + u2; NaN where either is NaN.
    pub total: Vec<f32>,
    /// E(gamma) = min total.
    pub e_gamma: f64,
    /// The voxel where the minimum is reached (the lowest index among ties).
    pub argmin: usize,
    /// 1 inside the epsilon pathway, 0 elsewhere.
    pub pathway: Vec<f32>,
    pub pathway_voxels: usize,
}

/// Voxels of `mask` in both regions: there u1 + u2 = 0, so E(gamma) is 0 and the pathway
/// degenerates to one of them (the regions touch; the paths between them say nothing).
pub fn shared_voxels(source: &[u8], target: &[u8], mask: &[u8]) -> usize {
    source.par_iter().zip(target).zip(mask).filter(|((&a, &b), &m)| a != 0 && b != 0 && m != 0).count()
}

/// A warning naming both regions' files when they share voxels of the mask ([`shared_voxels`]).
/// The run goes on: the regions may be meant to touch.
pub fn warn_shared(source: &[u8], source_path: &std::path::Path, target: &[u8], target_path: &std::path::Path, mask: &[u8]) {
    let shared = shared_voxels(source, target, mask);
    if shared > 0 {
        let (s, verb) = if shared == 1 { ("", "is") } else { ("s", "are") };
        eprintln!("warning: {} and {}: {shared} voxel{s} of the mask {verb} in both regions; E(gamma) is 0 there and the pathway only one of them", source_path.display(), target_path.display());
    }
}

pub fn combine(u1: &[f32], u2: &[f32], eps: f64) -> Result<Connectivity> {
    if !(eps >= 0.0 && eps.is_finite()) {
        bail!("--eps must be a non-negative number, not {eps}");
    }
    // On every core (a 256x256x100 grid took 32 ms on one); ties go to the lowest index, as
    // the field's doc says, whatever the split.
    let total: Vec<f32> = u1.par_iter().zip(u2).map(|(a, b)| a + b).collect();
    let Some((argmin, &e)) = total.par_iter().enumerate().filter(|(_, x)| !x.is_nan()).min_by(|a, b| a.1.total_cmp(b.1).then(a.0.cmp(&b.0))) else {
        bail!("no path joins the source and the target inside the mask");
    };
    let thr = (1.0 + eps) * e as f64;
    // The minimiser itself is always in (u < (1 + eps) E fails only at eps = 0 there).
    let pathway: Vec<f32> = total.par_iter().enumerate().map(|(v, &x)| ((x as f64) < thr || v == argmin) as u8 as f32).collect();
    let pathway_voxels = pathway.par_iter().filter(|&&x| x > 0.0).count();
    Ok(Connectivity { total, e_gamma: e as f64, argmin, pathway, pathway_voxels })
}

/// Step of the trace, voxels.
const STEP: f64 = 0.25;

/// The path from voxel `start` down to u = 0 along the characteristics of eq. 4,
/// dx/dt = -S grad u (for S proportional to I this is -grad u), in continuous voxel coordinates.
/// grad u is taken upwind at the nearest voxel; where a step would leave the reached region the
/// path moves to its lowest 26-neighbour instead, so it always descends to the source.
pub fn trace(p: &Problem, u: &[f32], start: usize) -> Vec<[f64; 3]> {
    let d = p.dims;
    let pos_of = |v: usize| xyz_of(v, d).map(|c| c as f64);
    let voxel_of = |x: &[f64; 3]| -> Option<usize> {
        let i: [i64; 3] = std::array::from_fn(|k| x[k].round() as i64);
        (0..3).all(|k| i[k] >= 0 && (i[k] as usize) < d[k]).then(|| i[0] as usize + d[0] * (i[1] as usize + d[1] * i[2] as usize))
    };
    let mut x = pos_of(start);
    let mut path = vec![x];
    let max_steps = 64 * (d[0] + d[1] + d[2]) * 4;
    let mut v = start;
    for _ in 0..max_steps {
        if !(u[v] > 0.0) {
            break;
        }
        let g = upwind_gradient(p, u, v);
        let s = p.s::<f64>(v);
        let dir: [f64; 3] = std::array::from_fn(|k| -(s[[0, 1, 2][k]] * g[0] + s[[1, 3, 4][k]] * g[1] + s[[2, 4, 5][k]] * g[2]) / p.voxel[k]);
        let n = (dir[0] * dir[0] + dir[1] * dir[1] + dir[2] * dir[2]).sqrt();
        let next: [f64; 3] = std::array::from_fn(|k| x[k] + STEP * dir[k] / n);
        match voxel_of(&next).filter(|&w| n > 0.0 && u[w].is_finite() && u[w] <= u[v]) {
            Some(w) => {
                x = next;
                v = w;
            }
            None => {
                let Some(w) = lowest_neighbour(p, u, v) else { break };
                v = w;
                x = pos_of(w);
            }
        }
        path.push(x);
    }
    path
}

/// grad u at v (per mm) from the lower neighbour on each axis; 0 where neither is lower.
fn upwind_gradient(p: &Problem, u: &[f32], v: usize) -> [f64; 3] {
    let nb = neighbour_indices(p.dims, v);
    std::array::from_fn(|k| {
        let val = |i: Option<usize>| i.map(|i| u[i] as f64).filter(|x| x.is_finite()).unwrap_or(f64::INFINITY);
        let (lo, hi) = (val(nb[k][0]), val(nb[k][1]));
        let here = u[v] as f64;
        if lo < here && lo <= hi {
            (here - lo) / p.voxel[k]
        } else if hi < here {
            (hi - here) / p.voxel[k]
        } else {
            0.0
        }
    })
}

/// The 26-neighbour with the smallest u below u[v], if any.
fn lowest_neighbour(p: &Problem, u: &[f32], v: usize) -> Option<usize> {
    let d = p.dims;
    let [x, y, z] = xyz_of(v, d).map(|c| c as i64);
    let mut best: Option<usize> = None;
    for dz in -1..=1i64 {
        for dy in -1..=1i64 {
            for dx in -1..=1i64 {
                let (a, b, c) = (x + dx, y + dy, z + dz);
                if a < 0 || b < 0 || c < 0 || a >= d[0] as i64 || b >= d[1] as i64 || c >= d[2] as i64 {
                    continue;
                }
                let w = a as usize + d[0] * (b as usize + d[1] * c as usize);
                if u[w].is_finite() && u[w] < best.map_or(u[v], |b| u[b]) {
                    best = Some(w);
                }
            }
        }
    }
    best
}

/// The minimal path between the two regions: from R1 through the minimiser of u1 + u2 to R2
/// (`p` gives the field; its source is not read).
pub fn minimal_path(p: &Problem, u1: &[f32], u2: &[f32], argmin: usize) -> Vec<[f64; 3]> {
    let mut path = trace(p, u1, argmin);
    path.reverse();
    path.extend(trace(p, u2, argmin).into_iter().skip(1));
    path
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The minimum's lowest index among ties, NaN skipped, on a grid long enough to be split
    /// across threads (ties placed far apart so they land in different pieces).
    #[test]
    fn combine_takes_the_lowest_index_among_ties() {
        let n = 1 << 20;
        let mut u1 = vec![5.0f32; n];
        let u2 = vec![1.0f32; n];
        u1[0] = f32::NAN;
        for &v in &[n - 3, 700_001, 300_000, n / 2] {
            u1[v] = 2.0;
        }
        let c = combine(&u1, &u2, 0.0).unwrap();
        assert_eq!((c.argmin, c.e_gamma), (300_000, 3.0));
        assert!(c.total[0].is_nan());
        assert_eq!(c.pathway_voxels, 1, "eps = 0: the minimiser alone");
        let c = combine(&u1, &u2, 0.5).unwrap();
        assert_eq!(c.pathway_voxels, 4);
        assert!(combine(&[f32::NAN; 4], &[1.0; 4], 0.1).is_err());
    }
}
