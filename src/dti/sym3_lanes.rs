//! [`sym3::eigen`] of many tensors at once, bit for bit the same: the cyclic Jacobi's rotations
//! run side by side on [`LANES`] tensors (one array per matrix entry, so the loops over the lanes
//! vectorise; compiled a second time for AVX2 on x86-64 CPUs, with no FMA, so the same bits).
//!
//! One decomposition's rotations depend on each other (a divide and a square root in turn), so
//! one core runs them at a fraction of its arithmetic; `dti`'s extra maps (3 M decompositions on
//! a 256x256x100 volume) and bedpost's dyads (two a voxel) spent most of their time there.

use super::sym3::{self, SWEEPS};
use crate::runtime::cpu::avx2_twin;

/// Tensors decomposed side by side.
pub const LANES: usize = 4;
type Lanes = [f64; LANES];

/// A rotation of every lane by `rotate`'s arithmetic, in its order; a lane whose (p, q) entry is
/// below 1e-300 keeps its values (where `rotate` returns early), chosen, not computed, so that
/// no sign of a zero changes.
#[inline(always)]
fn rotate(a: &mut [Lanes; 9], v: &mut [Lanes; 9], p: usize, q: usize) {
    let (mut c, mut s, mut keep) = ([0.0; LANES], [0.0; LANES], [false; LANES]);
    for l in 0..LANES {
        let apq = a[3 * p + q][l];
        keep[l] = apq.abs() < 1e-300;
        let (app, aqq) = (a[3 * p + p][l], a[3 * q + q][l]);
        let theta = 0.5 * (aqq - app) / apq;
        let t = 1.0 / (theta.abs() + (theta * theta + 1.0).sqrt());
        let t = if theta < 0.0 { -t } else { t };
        c[l] = 1.0 / (t * t + 1.0).sqrt();
        s[l] = t * c[l];
    }
    let turn = |m: &mut [Lanes; 9], i: usize, j: usize| {
        for l in 0..LANES {
            let (x, y) = (m[i][l], m[j][l]);
            let (nx, ny) = (c[l] * x - s[l] * y, s[l] * x + c[l] * y);
            m[i][l] = if keep[l] { x } else { nx };
            m[j][l] = if keep[l] { y } else { ny };
        }
    };
    for k in 0..3 {
        turn(a, 3 * k + p, 3 * k + q);
    }
    for k in 0..3 {
        turn(a, 3 * p + k, 3 * q + k);
    }
    for k in 0..3 {
        turn(v, 3 * k + p, 3 * k + q);
    }
}

#[inline(always)]
fn eigen_lanes(t: &[[f64; 6]]) -> [([f64; 3], [f64; 9]); LANES] {
    let at = |l: usize, k: usize| t.get(l).map_or(0.0, |t| t[k]);
    let mut a: [Lanes; 9] = std::array::from_fn(|e| std::array::from_fn(|l| at(l, [0, 1, 2, 1, 3, 4, 2, 4, 5][e])));
    let mut v: [Lanes; 9] = std::array::from_fn(|e| [if e % 4 == 0 { 1.0 } else { 0.0 }; LANES]);
    for _ in 0..SWEEPS {
        rotate(&mut a, &mut v, 0, 1);
        rotate(&mut a, &mut v, 0, 2);
        rotate(&mut a, &mut v, 1, 2);
    }
    std::array::from_fn(|l| sym3::sorted([a[0][l], a[4][l], a[8][l]], std::array::from_fn(|e| v[e][l])))
}

#[inline(always)]
fn eigen_many_body(ts: &[[f64; 6]], out: &mut [([f64; 3], [f64; 9])]) {
    for (t, o) in ts.chunks(LANES).zip(out.chunks_mut(LANES)) {
        let r = eigen_lanes(t);
        o.copy_from_slice(&r[..o.len()]);
    }
}

/// `sym3::eigen` of each of `ts`, the same bits.
pub fn eigen_many(ts: &[[f64; 6]]) -> Vec<([f64; 3], [f64; 9])> {
    let mut out = vec![([0.0; 3], [0.0; 9]); ts.len()];
    eigen_into(ts, &mut out);
    out
}

fn eigen_into(ts: &[[f64; 6]], out: &mut [([f64; 3], [f64; 9])]) {
    avx2_twin!(eigen_many_body, (ts: &[[f64; 6]], out: &mut [([f64; 3], [f64; 9])]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    /// Every value's bits equal `sym3::eigen`'s on fresh random tensors, with the cases that take
    /// `rotate`'s early return: zero tensors, diagonal ones, signed zeros and off-diagonal entries
    /// below 1e-300, equal eigenvalues; lengths around the lanes' edge.
    #[test]
    fn the_same_bits_as_one_at_a_time() {
        let (seed, mut rng) = crate::synth::fresh_rng();
        let mut ts: Vec<[f64; 6]> = (0..5000).map(|_| std::array::from_fn(|_| rng.random_range(-2e-3..2e-3))).collect();
        ts.push([0.0; 6]);
        ts.push([-0.0, 0.0, -0.0, 1e-3, -0.0, -2e-3]);
        ts.push([1.0, 1e-310, -1e-305, 1.0, 0.0, 1.0]);
        ts.push([2.0, 0.0, 0.0, 2.0, 0.0, 2.0]);
        ts.push([1.7e-3, 2e-4, 0.0, 3e-4, -0.0, 3e-4]);
        for t in ts.iter_mut().take(500) {
            let k = rng.random_range(0..6);
            t[k] = if rng.random() { 0.0 } else { -0.0 };
        }
        let bits = |r: &([f64; 3], [f64; 9])| r.0.iter().chain(&r.1).map(|x| x.to_bits()).collect::<Vec<_>>();
        for n in [ts.len(), 1, 3, 4, 5] {
            let out = eigen_many(&ts[..n]);
            for (i, (t, o)) in ts.iter().zip(&out).enumerate() {
                assert_eq!(bits(o), bits(&sym3::eigen(t)), "seed {seed}: tensor {i} {t:?}");
            }
        }
    }
}
