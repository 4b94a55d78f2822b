//! The local solver g(U_x) of paper 004: the Godunov upwind Hamiltonian of eq. 6 for
//! H(p, q, r) = sqrt([p q r] S [p q r]^T) (eq. 5), solved for the node value U.
//!
//! Every combination of p in {p-, p+, p_sigma}, q in {q-, q+, q_sigma}, r in {r-, r+, r_sigma}
//! (26: all three critical gives H = 0) is solved for U; the valid solution with the smallest U
//! is g. The critical components are the minimiser of the quadratic form over them with the
//! others fixed, so each combination is a quadratic in U. Two validity tests (Sec. 4.2): the
//! paper's integer-index test (default) and Tsai et al.'s three evaluations of H.
//! The same arithmetic is `np_fim_solve` in `cl/common/fim.h`.

/// How a candidate solution is checked (004 Sec. 4.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, clap::ValueEnum, serde::Serialize)]
pub enum Validity {
    /// The paper's test: the side each derivative was taken from, encoded -1/0/+1, must equal
    /// the side the Godunov selection picks for the new solution. Integer compares only.
    #[default]
    Index,
    /// Tsai et al.'s test: H at the Godunov-selected derivative must be 1 within a threshold,
    /// for each of the three axes (three more evaluations of H).
    Tsai,
}

/// Which local solver g(U_x) a solve uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, clap::ValueEnum, serde::Serialize)]
pub enum Local {
    /// The valid minimum candidate where every extremum of eq. 6 is a minimum, else the exact
    /// root of H_G: monotone in the neighbours, so every schedule reaches the same fixed point.
    #[default]
    Exact,
    /// 004's procedure as published: the smallest candidate that passes the validity test (the
    /// exact root only where none passes; 004 does not say what it does there). Not monotone
    /// where some axis has p- > p+, so block FIM and node FIM may settle apart (docs/fim.md).
    Paper,
}

/// The float type a CPU solver runs in (f32 as the devices, f64 for tests).
pub trait Real:
    Copy
    + PartialOrd
    + Send
    + Sync
    + std::fmt::Debug
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
    + std::ops::Neg<Output = Self>
    + 'static
{
    const INF: Self;
    const ZERO: Self;
    const ONE: Self;
    /// Machine epsilon: Tsai's threshold is made of it (see `tsai_tol`).
    const EPS: Self;
    /// Golden-section steps of the tests' reference for `hg::hg2`: the bracket shrinks by 0.618
    /// per step and the minimum may sit at a kink (a max of two pieces), where the value error
    /// is linear in the bracket:
    /// 0.618^36 = 3e-8 (below f32's 6e-8 rounding), 0.618^60 = 3e-13 in f64.
    const GOLDEN: usize;
    fn of(x: f64) -> Self;
    fn f64(self) -> f64;
    fn sqrt(self) -> Self;
    fn abs(self) -> Self;
    fn is_finite(self) -> bool;
}

macro_rules! real {
    ($t:ty, $golden:expr) => {
        impl Real for $t {
            const INF: $t = <$t>::INFINITY;
            const ZERO: $t = 0.0;
            const ONE: $t = 1.0;
            const EPS: $t = <$t>::EPSILON;
            const GOLDEN: usize = $golden;
            fn of(x: f64) -> $t {
                x as $t
            }
            fn f64(self) -> f64 {
                self as f64
            }
            fn sqrt(self) -> $t {
                <$t>::sqrt(self)
            }
            fn abs(self) -> $t {
                <$t>::abs(self)
            }
            fn is_finite(self) -> bool {
                <$t>::is_finite(self)
            }
        }
    };
}
real!(f32, 36);
real!(f64, 60);

/// Index of the symmetric matrix element (FSL order a b c d e f = xx xy xz yy yz zz).
const SYM: [[usize; 3]; 3] = [[0, 1, 2], [1, 3, 4], [2, 4, 5]];

#[inline]
pub(super) fn s<R: Real>(m: &[R; 6], i: usize, j: usize) -> R {
    m[SYM[i][j]]
}

/// g^T S g by S's symmetry (six products instead of nine; `np_fim_quad`).
#[inline]
pub(super) fn quad<R: Real>(m: &[R; 6], g: &[R; 3]) -> R {
    s(m, 0, 0) * g[0] * g[0] + s(m, 1, 1) * g[1] * g[1] + s(m, 2, 2) * g[2] * g[2] + R::of(2.0) * (s(m, 0, 1) * g[0] * g[1] + s(m, 0, 2) * g[0] * g[2] + s(m, 1, 2) * g[1] * g[2])
}

/// 1 / S's diagonal: the local solve divides by it many times (`np_fim_recip_diag`).
#[inline]
pub(super) fn recip_diag<R: Real>(m: &[R; 6]) -> [R; 3] {
    std::array::from_fn(|k| R::ONE / s(m, k, k))
}

/// H of eq. 5.
#[inline]
pub fn hamiltonian<R: Real>(m: &[R; 6], g: &[R; 3]) -> R {
    quad(m, g).sqrt()
}

/// The critical point of axis k: the p minimising H with the other two components held
/// (`rd`: 1 / S's diagonal).
#[inline]
fn critical<R: Real>(m: &[R; 6], rd: &[R; 3], g: &[R; 3], k: usize) -> R {
    let (i, j) = ((k + 1) % 3, (k + 2) % 3);
    -(s(m, k, i) * g[i] + s(m, k, j) * g[j]) * rd[k]
}

/// S x.
#[inline]
fn times<R: Real>(m: &[R; 6], x: &[R; 3]) -> [R; 3] {
    std::array::from_fn(|i| s(m, i, 0) * x[0] + s(m, i, 1) * x[1] + s(m, i, 2) * x[2])
}

#[inline]
fn dot<R: Real>(a: &[R; 3], b: &[R; 3]) -> R {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

/// The side (-1, 0, +1) the Godunov extremum of eq. 6 selects on one axis: the "left side
/// index" of Sec. 4.2. Infinite one-sided differences (a neighbour never reached or outside the
/// domain) order correctly in IEEE arithmetic; both infinite is caught by the first test.
#[inline]
fn godunov_side<R: Real>(pm: R, pp: R, ps: R) -> i32 {
    if pm < ps && ps < pp {
        0
    } else if (pm + pp) * R::of(0.5) < ps {
        1
    } else {
        -1
    }
}

/// |H - 1| accepted by Tsai's test at U = `u`: H is 1 up to the rounding of the differences
/// (U - n) / h, each off by ~eps |U| / h, which moves H by up to that times sqrt(S_kk) per axis;
/// 4 such roundings. The threshold bounds how far in U a wrong candidate can be let through
/// (1e-3 fixed let one 4e-4 off on the GPU parity field, 64 roundings 3.5e-4); a true root
/// rejected by a tight one goes to the exact root of H_G, so tightness costs time, never accuracy.
#[inline]
fn tsai_tol<R: Real>(m: &[R; 6], inv_h: &[R; 3], u: R) -> R {
    let mut a = R::ZERO;
    for k in 0..3 {
        let x = inv_h[k] * s(m, k, k).sqrt();
        a = if x > a { x } else { a };
    }
    R::of(4.0) * R::EPS * (R::ONE + u.abs() * a)
}

/// Tsai et al.'s selection sgn max{(p- - ps)^+, (p+ - ps)^-} + ps.
#[inline]
fn tsai_select<R: Real>(pm: R, pp: R, ps: R) -> R {
    let a = if pm - ps > R::ZERO { pm - ps } else { R::ZERO };
    let b = if pp - ps < R::ZERO { pp - ps } else { R::ZERO };
    if a >= -b { ps + a } else { ps + b }
}

/// Neighbour values around a node: `nb[k] = [backward, forward]` along axis k, `R::INF` where
/// the neighbour is outside the grid, outside the mask or not reached yet.
pub type Neighbours<R> = [[R; 2]; 3];

/// g(U_x): the root of H_G = 1 at a node with speed matrix `m` (eq. 5, in mm^-2 units against
/// `inv_h` = 1 / voxel size in mm), or `R::INF` when no neighbour is usable.
///
/// The paper's way first: the smallest of the 26 candidate solutions that passes the validity
/// test. It is the root wherever every extremum of eq. 6 is a minimum at it (p- <= p+ on each
/// axis: a box-constrained convex minimum, where coordinate-wise optimality is global). Where
/// some axis has p- > p+ it is checked against the exact H_G (two evaluations: H_G crosses 1
/// within 4 eps |U| below it), and when that fails or no candidate passes, the root of the exact
/// H_G comes by regula falsi (`hg::root`), so that g is monotone in the neighbours and the
/// result independent of the update order (see hg.rs). Accepting such candidates unchecked is
/// ~4x faster on the brain-like example but left the GPU schedules 3.8e-5 from node FIM.
pub fn solve<R: Real>(m: &[R; 6], inv_h: &[R; 3], nb: &Neighbours<R>, validity: Validity, local: Local) -> R {
    let mut best = R::INF;
    // Every combination's solution, valid or not: H_G's root is often one of them, so the root
    // search brackets with them first.
    let mut cands = [R::INF; 26];
    let mut nc = 0;
    // Each combination divides by S's diagonal up to five times: its reciprocals once.
    let rd = recip_diag(m);
    for combo in 0..27 {
        if combo == 13 {
            continue; // all three critical: H = 0
        }
        // side[k]: -1 backward difference (U - left)/h, +1 forward (right - U)/h, 0 critical.
        let side = [combo % 3, (combo / 3) % 3, combo / 9].map(|d| d - 1);
        if let Some((u, valid)) = solve_combo(m, &rd, inv_h, nb, side, validity, best) {
            cands[nc] = u;
            nc += 1;
            if valid && u < best {
                best = u;
            }
        }
    }
    let all_min = local == Local::Paper || (0..3).all(|k| !(best + best > nb[k][0] + nb[k][1]));
    if best.is_finite() && all_min { best } else { super::hg::root(m, inv_h, nb, best, &mut cands[..nc]) }
}

/// The solution of one combination if it has one, and whether it passes the validity test; the
/// test runs only where the solution is below `below` (the smallest valid one so far: validity
/// cannot change the minimum above it).
fn solve_combo<R: Real>(m: &[R; 6], rd: &[R; 3], inv_h: &[R; 3], nb: &Neighbours<R>, side: [i32; 3], validity: Validity, below: R) -> Option<(R, bool)> {
    // U = n0 + t keeps the quadratic's coefficients small (n0: the largest neighbour used).
    let mut n0 = -R::INF;
    for k in 0..3 {
        if side[k] != 0 {
            let n = nb[k][(side[k] > 0) as usize];
            if !n.is_finite() {
                return None;
            }
            if n > n0 {
                n0 = n;
            }
        }
    }
    // The gradient is affine in t: g = t v + w. Used axes: g_k = sign_k (t - (n_k - n0)) / h_k;
    // the critical ones follow from S_CC g_C = -S_CA g_A.
    let (mut v, mut w) = ([R::ZERO; 3], [R::ZERO; 3]);
    let mut crit = [0usize; 2];
    let mut nc = 0;
    for k in 0..3 {
        if side[k] == 0 {
            crit[nc] = k;
            nc += 1;
        } else {
            let sg = if side[k] < 0 { inv_h[k] } else { -inv_h[k] };
            v[k] = sg;
            w[k] = -sg * (nb[k][(side[k] > 0) as usize] - n0);
        }
    }
    match nc {
        1 => {
            let c = crit[0];
            v[c] = critical(m, rd, &v, c);
            w[c] = critical(m, rd, &w, c);
        }
        2 => {
            let (c0, c1) = (crit[0], crit[1]);
            let k = 3 - c0 - c1;
            let (a, b, d) = (s(m, c0, c0), s(m, c0, c1), s(m, c1, c1));
            let rdet = R::ONE / (a * d - b * b);
            let (r0, r1) = (s(m, c0, k), s(m, c1, k));
            // [g_c0, g_c1] = -S_CC^-1 [r0, r1] g_k
            let f0 = -(d * r0 - b * r1) * rdet;
            let f1 = -(a * r1 - b * r0) * rdet;
            v[c0] = f0 * v[k];
            v[c1] = f1 * v[k];
            w[c0] = f0 * w[k];
            w[c1] = f1 * w[k];
        }
        _ => {}
    }
    // S v and S w once: the quadratic's coefficients are v.Sv, 2 v.Sw and w.Sw - 1, and the
    // gradient's S g = t Sv + Sw gives each axis's critical point g_k - (S g)_k / S_kk.
    let (sv, sw) = (times(m, &v), times(m, &w));
    let qa = dot(&v, &sv);
    let qb = R::of(2.0) * dot(&v, &sw);
    let qc = dot(&w, &sw) - R::ONE;
    let disc = qb * qb - R::of(4.0) * qa * qc;
    if !(disc >= R::ZERO) || !(qa > R::ZERO) {
        return None;
    }
    let t = (-qb + disc.sqrt()) / (R::of(2.0) * qa);
    let u = n0 + t;
    if !(u < below) {
        return Some((u, false));
    }
    let g: [R; 3] = std::array::from_fn(|k| t * v[k] + w[k]);
    let ps = |k: usize| g[k] - (t * sv[k] + sw[k]) * rd[k];
    let valid = match validity {
        Validity::Index => (0..3).all(|k| {
            let (pm, pp) = ((u - nb[k][0]) * inv_h[k], (nb[k][1] - u) * inv_h[k]);
            godunov_side(pm, pp, ps(k)) == side[k]
        }),
        Validity::Tsai => (0..3).all(|k| {
            let tol = tsai_tol(m, inv_h, u);
            let (pm, pp) = ((u - nb[k][0]) * inv_h[k], (nb[k][1] - u) * inv_h[k]);
            let mut gk = g;
            gk[k] = tsai_select(pm, pp, ps(k));
            (hamiltonian(m, &gk) - R::ONE).abs() < tol
        }),
    };
    Some((u, valid))
}

#[cfg(test)]
mod tests {
    use super::*;

    const INF: f64 = f64::INFINITY;

    #[test]
    fn one_sided_isotropic_is_h() {
        let m = [1.0, 0.0, 0.0, 1.0, 0.0, 1.0];
        let nb = [[0.0, INF], [INF, INF], [INF, INF]];
        for v in [Validity::Index, Validity::Tsai] {
            assert!((solve(&m, &[1.0; 3], &nb, v, Local::Exact) - 1.0).abs() < 1e-12);
            assert!((solve(&m, &[0.5; 3], &nb, v, Local::Exact) - 2.0).abs() < 1e-12);
        }
    }

    #[test]
    fn two_neighbours_isotropic_matches_eikonal() {
        // (U - a)^2 + (U - b)^2 = 1 with a = 0, b = 0.5: U = (0.5 + sqrt(2 - 0.25)) / 2.
        let m = [1.0, 0.0, 0.0, 1.0, 0.0, 1.0];
        let nb = [[0.0, INF], [INF, 0.5], [INF, INF]];
        let want = (0.5 + (2.0f64 - 0.25).sqrt()) / 2.0;
        for v in [Validity::Index, Validity::Tsai] {
            assert!((solve(&m, &[1.0; 3], &nb, v, Local::Exact) - want).abs() < 1e-12);
        }
        // b far above: only the x neighbour counts.
        let nb = [[0.0, INF], [INF, 5.0], [INF, INF]];
        assert!((solve(&m, &[1.0; 3], &nb, Validity::Index, Local::Exact) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn tests_agree_on_random_anisotropic_nodes() {
        use rand::{Rng, SeedableRng};
        let mut r = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(9);
        for _ in 0..2000 {
            let l = [r.random_range(0.05..2.0), r.random_range(0.05..2.0), r.random_range(0.05..2.0)];
            let e1 = crate::dti::sym3::v1(&crate::dti::sym3::eigen(&[r.random(), r.random(), r.random(), r.random(), r.random(), r.random()]).1);
            let mut e2 = [e1[1], -e1[0], 0.0];
            let n = (e2[0] * e2[0] + e2[1] * e2[1]).sqrt().max(1e-9);
            e2 = e2.map(|x| x / n);
            let m = crate::dti::sym3::from_eigen(l, e1, e2);
            let nb: Neighbours<f64> = std::array::from_fn(|_| std::array::from_fn(|_| if r.random_bool(0.2) { INF } else { r.random_range(0.0..1.0) }));
            let a = solve(&m, &[1.0; 3], &nb, Validity::Index, Local::Exact);
            let b = solve(&m, &[1.0; 3], &nb, Validity::Tsai, Local::Exact);
            assert!(a == b || (a - b).abs() < 1e-9, "{a} vs {b}");
        }
    }

    fn random_node(r: &mut rand_xoshiro::Xoshiro256PlusPlus, ratio: f64) -> ([f64; 6], Neighbours<f64>) {
        use rand::Rng;
        let l = [1.0, r.random_range(1.0 / ratio..1.0), r.random_range(1.0 / ratio..1.0)];
        let e1 = crate::dti::sym3::v1(&crate::dti::sym3::eigen(&[r.random(), r.random(), r.random(), r.random(), r.random(), r.random()]).1);
        let n = (e1[0] * e1[0] + e1[1] * e1[1]).sqrt().max(1e-9);
        let m = crate::dti::sym3::from_eigen(l, e1, [e1[1] / n, -e1[0] / n, 0.0]);
        let nb = std::array::from_fn(|_| std::array::from_fn(|_| if r.random_bool(0.2) { INF } else { r.random_range(0.0..1.0) }));
        (m, nb)
    }

    #[test]
    fn g_is_the_root_of_the_exact_hamiltonian_and_monotone() {
        use rand::{Rng, SeedableRng};
        let mut r = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(3);
        let h = [1.0, 1.3, 0.8];
        let (mut slow, mut n) = (0, 0);
        for _ in 0..3000 {
            let (m, nb) = random_node(&mut r, 100.0);
            let g = solve(&m, &h, &nb, Validity::Index, Local::Exact);
            if !g.is_finite() {
                assert!(nb.iter().flatten().all(|x| !x.is_finite()));
                continue;
            }
            n += 1;
            slow += ((super::super::hg::root(&m, &h, &nb, f64::INFINITY, &mut []) - g).abs() <= 1e-12 * g) as usize;
            // H_G(g) = 1: just below g it is < 1, at g >= 1 (1e-9 relative: f64 quadratic roots).
            let hg = |u: f64| super::super::hg::hg2(&m, &std::array::from_fn(|k| [(u - nb[k][0]) * h[k], (nb[k][1] - u) * h[k]]));
            assert!(hg(g * (1.0 + 1e-9) + 1e-12) >= 1.0 && hg(g * (1.0 - 1e-9) - 1e-12) < 1.0, "H_G around g = {g}: {} {}", hg(g * (1.0 - 1e-9)), hg(g * (1.0 + 1e-9)));
            // Monotone: raising one neighbour never lowers g (beyond the 1e-9 of the roots).
            let (k, side) = (r.random_range(0..3), r.random_range(0..2));
            let mut up = nb;
            if up[k][side].is_finite() {
                up[k][side] += r.random_range(0.0..0.3);
                let g2 = solve(&m, &h, &up, Validity::Index, Local::Exact);
                assert!(g2 >= g * (1.0 - 1e-9), "raising a neighbour lowered g from {g} to {g2}");
            }
            assert!(solve(&m, &h, &nb, Validity::Tsai, Local::Exact).to_bits() == g.to_bits() || (solve(&m, &h, &nb, Validity::Tsai, Local::Exact) - g).abs() < 1e-9 * g);
        }
        eprintln!("root without a guess within 1e-12 of g at {slow} of {n} nodes");
    }
}
