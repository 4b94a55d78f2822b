//! Fast sweeping with the Lax-Friedrichs Hamiltonian (Kao, Osher and Qian 2004), 004's second
//! CPU baseline. A different discretisation from Godunov's: more diffusive, so it converges to
//! the same PDE solution (first order) but not to the same discrete values.
//!
//! Update: U = min(U, [1 - H(p_c) + sum_k sigma_k (u_k+ + u_k-) / (2 h_k)] / sum_k sigma_k / h_k)
//! with central differences p_c and sigma_k = sqrt(S_kk) >= |dH/dp_k| (Cauchy-Schwarz in the S
//! inner product), which makes the update monotone. A neighbour off the grid or outside the
//! mask takes the value of the opposite one (a reflecting boundary: that derivative is 0 there).
//! Linear extrapolation through the node (2 U - u_other) would be more accurate but makes U
//! depend on itself with a slope up to 2, and the min() update then runs away to -infinity;
//! Kao et al. extrapolate after each sweep on a box, which a mask does not allow (004 left L-F
//! out of its brain example for this "complex boundary"). An axis with neither neighbour drops
//! out.
//! Runs in f64: unreached nodes hold a large finite value (the averages need finite numbers), and
//! the cancellation against it must stay far below the costs.

use super::cpu::{initial, inv_h, neighbour_indices, sweep_rounds, to_output};
use super::godunov::hamiltonian;
use super::{Params, Problem, Solution};

/// "Not reached yet": error of the cancellation against it is ~BIG * 2^-52 = 2e-6, far below
/// any cost of interest; anything above BIG / 2 at the end is reported unreached.
const BIG: f64 = 1e10;

pub fn sweep_lf(p: &Problem, params: &Params) -> Solution {
    let ih = inv_h::<f64>(p);
    let mut u: Vec<f64> = initial::<f64>(p).into_iter().map(|x| if x.is_finite() { x } else { BIG }).collect();
    for v in 0..p.nvox() {
        if p.mask[v] == 0 {
            u[v] = f64::NAN;
        }
    }
    let mut sol = sweep_rounds(p, params, &mut u, |u, v| lf_update(p, &ih, u, v));
    let u: Vec<f64> = u.into_iter().map(|x| if x.is_finite() && x < BIG / 2.0 { x } else { f64::INFINITY }).collect();
    sol.u = to_output(&u);
    sol
}

fn lf_update(p: &Problem, ih: &[f64; 3], u: &[f64], v: usize) -> f64 {
    let m = p.s::<f64>(v);
    let (mut grad, mut num, mut den) = ([0.0; 3], 1.0, 0.0);
    for (k, ax) in neighbour_indices(p.dims, v).iter().enumerate() {
        let val = ax.map(|i| i.map(|i| u[i]).filter(|x| !x.is_nan()));
        let (lo, hi) = match val {
            [Some(a), Some(b)] => (a, b),
            [Some(a), None] => (a, a),
            [None, Some(b)] => (b, b),
            [None, None] => continue,
        };
        let sigma = m[[0, 3, 5][k]].sqrt();
        grad[k] = (hi - lo) * 0.5 * ih[k];
        num += sigma * (hi + lo) * 0.5 * ih[k];
        den += sigma * ih[k];
    }
    if den == 0.0 {
        return u[v];
    }
    (num - hamiltonian(&m, &grad)) / den
}
