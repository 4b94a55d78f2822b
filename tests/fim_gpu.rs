//! Block FIM on an OpenCL device (PoCL in CI) against the CPU node FIM.

use neuroport::fim::{self, cpu, Params, Problem};

mod common;
use common::opencl;

/// A smoothly varying anisotropic field on a grid that is not a multiple of 4 (padding), two
/// sources, anisotropic voxels, a mask with a slab cut out (an unreachable pocket).
fn problem(seed: u64) -> Problem {
    problem_with(seed, (0.05, 0.5), 0.1)
}

/// `minor`: range of the second eigenvalue, `third`: the third (the first is 1..2).
fn problem_with(seed: u64, minor: (f64, f64), third: f64) -> Problem {
    use rand::{Rng, SeedableRng};
    let mut r = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
    let d = [19, 14, 11];
    let n: usize = d.iter().product();
    let mut speed = vec![0f32; 6 * n];
    for v in 0..n {
        let (x, y, z) = ((v % d[0]) as f64, ((v / d[0]) % d[1]) as f64, (v / (d[0] * d[1])) as f64);
        let a: [f64; 3] = [(0.3 * x + 0.1 * z).cos(), (0.2 * y + 0.3 * x).sin(), 0.5 + 0.3 * (0.25 * z).cos()];
        let k = (a[0] * a[0] + a[1] * a[1] + a[2] * a[2]).sqrt();
        let e1 = a.map(|c| c / k);
        let mut e2 = [e1[1], -e1[0], 0.0];
        let k2 = (e2[0] * e2[0] + e2[1] * e2[1]).sqrt();
        e2 = if k2 < 1e-3 { [1.0, 0.0, 0.0] } else { e2.map(|c| c / k2) };
        let s = neuroport::dti::sym3::from_eigen([r.random_range(1.0..2.0), r.random_range(minor.0..minor.1), third], e1, e2);
        for c in 0..6 {
            speed[c * n + v] = s[c] as f32;
        }
    }
    let mut source = vec![0u8; n];
    source[3 + d[0] * (4 + d[1] * 2)] = 1;
    source[15 + d[0] * (10 + d[1] * 8)] = 1;
    // x = 9 is outside the mask for y < 12: the front must go round; a closed pocket at the corner.
    let mask = (0..n)
        .map(|v| {
            let (x, y, z) = (v % d[0], (v / d[0]) % d[1], v / (d[0] * d[1]));
            let wall = x == 9 && y < 12;
            let pocket_wall = (x == 2 && y <= 2 && z <= 2) || (y == 2 && x <= 2 && z <= 2) || (z == 2 && x <= 2 && y <= 2);
            !(wall || pocket_wall) as u8
        })
        .collect();
    Problem { dims: d, voxel: [1.0, 1.3, 0.9], speed, mask, source }
}

#[test]
#[ignore = "open: node FIM (CPU) keeps a stale u < g(u) at a node where only the causal fallback applies (non-monotone g, see diag_residual); the block FIM ends at u = g(u) there, 0.34 % apart downstream; block schedules also differ among themselves by up to 7e-4 on this field"]
fn block_fim_matches_node_fim_for_every_schedule() {
    let Some(dev) = opencl() else { return };
  for walls in [false, true] {
    let mut p = problem(3);
    if !walls {
        p.mask.iter_mut().for_each(|m| *m = 1);
    }
    let want = cpu::node_fim::<f64>(&p, &Params { tol: 0.0, ..Params::default() }).u;
    for host_list in [false, true] {
        for inner in [1, 2, 4, 8] {
            let par = Params { inner, host_list, ..Params::default() };
            let got = fim::solve(&dev, &p, &par).unwrap();
            let (mut off, mut worst) = (0, 0.0f32);
            for v in 0..p.nvox() {
                let (x, y) = (got.u[v], want[v]);
                assert_eq!(x.is_nan(), y.is_nan(), "inner {inner} host_list {host_list} voxel {v}: {x} vs {y}");
                // f32 on the device: one rounding per update carried along at most
                // 19 + 14 + 11 = 44 voxels (44 * 2^-24 = 2.6e-6), the stopping tolerance 1e-6
                // relative on top, and contraction under reordered float operations: 4e-6.
                if !y.is_nan() && (x - y).abs() > 4e-6 * y.abs() + 1e-6 {
                    off += 1;
                    worst = worst.max((x - y).abs() / y.abs());
                }
            }
            eprintln!("walls {walls}, inner {inner}, host list {host_list}: {} iterations, {off} voxels off, worst {worst:e}", got.iterations);
            if walls {
                // Beside mask walls the Godunov selection is not monotone (docs/fim.md): Jacobi
                // orders may stop in different states there, as node FIM vs sweeping does.
                assert!(off < p.nvox() / 20 && worst < 0.05, "{off} voxels off, worst {worst}");
            } else {
                assert_eq!(off, 0, "worst {worst}");
            }
        }
    }
  }
}

/// Diagnosis of the open mismatch (prints only). Measured on PoCL: every GPU schedule ends at
/// u <= g(u) within 1e-6 (mostly), and within 2e-6 of the state plain Jacobi u = g(u) reaches
/// from node FIM's result (that iteration then cycles at ~480 nodes in the last ulps); node FIM's
/// own result differs from it by 0.34 % downstream of voxel (10,13,8), where no Godunov
/// combination passes the validity test, the causal fallback gives g = 14.187 but node FIM
/// holds 14.139 from an earlier neighbour state: the fallback makes g non-monotone, so the
/// min-only update keeps an order-dependent value there.
#[test]
#[ignore = "diagnostic printout, not an assertion"]
fn diag_residual() {
    let Some(dev) = opencl() else { return };
    let mut p = problem(3);
    p.mask.iter_mut().for_each(|m| *m = 1);
    let f32ref = cpu::node_fim::<f32>(&p, &Params::default()).u;
    let f64ref = cpu::node_fim::<f64>(&p, &Params { tol: 0.0, ..Params::default() }).u;
    let ih = cpu::inv_h::<f32>(&p);
    let resid = |u: &[f32]| {
        let uu: Vec<f32> = u.iter().map(|&x| if x.is_nan() { f32::INFINITY } else { x }).collect();
        let (mut n, mut w) = (0, 0f32);
        for v in 0..p.nvox() {
            if p.source[v] != 0 || p.mask[v] == 0 { continue; }
            let g = cpu::local(&p, &ih, &uu, v, fim::Validity::Index);
            if g < uu[v] { let r = (uu[v] - g) / uu[v]; if r > 1e-6 { n += 1; } w = w.max(r); }
        }
        (n, w)
    };
    let cmp = |a: &[f32], b: &[f32]| { let mut n = 0; let mut w = 0f32; for v in 0..a.len() { if a[v].is_nan() {continue;} let r = (a[v]-b[v]).abs()/b[v].abs().max(1e-9); if r > 4e-6 { n += 1; } w = w.max(r);} (n, w) };
    eprintln!("f32 node fim resid {:?}, f64 resid {:?}, f32 vs f64 {:?}", resid(&f32ref), resid(&f64ref), cmp(&f32ref, &f64ref));
    {
        let inf = |u: &[f32]| -> Vec<f32> { u.iter().map(|&x| if x.is_nan() { f32::INFINITY } else { x }).collect() };
        let mut u = inf(&f32ref);
        // Plain Jacobi u = g(u) (increases allowed) from the CPU state.
        for it in 0..2000 {
            let new: Vec<f32> = (0..u.len()).map(|v| if p.source[v] != 0 || p.mask[v] == 0 { u[v] } else { cpu::local(&p, &ih, &u, v, fim::Validity::Index) }).collect();
            let ch = (0..u.len()).filter(|&v| new[v] != u[v]).count();
            u = new;
            if ch == 0 || it % 100 == 0 { eprintln!("jacobi it {it}: {ch} changed"); }
            if ch == 0 { break; }
        }
        let mut gpu = None;
        for inner in [1, 4] { let g = fim::solve(&dev, &p, &Params { inner, ..Params::default() }).unwrap(); eprintln!("fixed point vs gpu inner {inner} {:?}", cmp(&g.u, &u)); gpu = Some(g); }
        let _ = gpu;
        eprintln!("fixed point vs cpu {:?}", cmp(&f32ref, &u));
    }
    for host_list in [false, true] {
        for inner in [1, 2, 4, 8] {
            let got = fim::solve(&dev, &p, &Params { inner, host_list, ..Params::default() }).unwrap();
            eprintln!("inner {inner} host {host_list}: it {} resid {:?} vs f32 {:?} vs f64 {:?}", got.iterations, resid(&got.u), cmp(&got.u, &f32ref), cmp(&got.u, &f64ref));
        }
    }
}

/// Milder anisotropy (ratio <= 4), where no node needs the causal fallback and g is
/// monotone and the limit of min-only updates does not depend on the order: the block FIM must
/// then equal node FIM (before the step-2 fix in cl/fim.cl it stopped 1.8e-5 off at inner 2, 4) for every iterations-per-block setting and both active-list paths.
#[test]
fn block_fim_matches_node_fim_with_valid_combinations() {
    let Some(dev) = opencl() else { return };
    let mut p = problem_with(5, (0.5, 1.0), 0.5);
    p.mask.iter_mut().for_each(|m| *m = 1);
    let want = cpu::node_fim::<f32>(&p, &Params::default()).u;
    for host_list in [false, true] {
        for inner in [1, 2, 4, 8] {
            let got = fim::solve(&dev, &p, &Params { inner, host_list, ..Params::default() }).unwrap();
            let mut worst = 0.0f32;
            for v in 0..p.nvox() {
                let (x, y) = (got.u[v], want[v]);
                assert_eq!(x.is_nan(), y.is_nan(), "inner {inner} host_list {host_list} voxel {v}: {x} vs {y}");
                // Both f32, same arithmetic; they differ by the stopping rule (a change of at most
                // tol = 1e-6 u may be dropped per node) and rounding along the update order:
                // 1e-6 + 44 path voxels * 2^-24 (2.6e-6) < 4e-6 relative.
                if !y.is_nan() {
                    let r = (x - y).abs() / y.abs().max(1e-6);
                    assert!(r <= 4e-6, "inner {inner} host_list {host_list} voxel {v}: {x} vs {y}");
                    worst = worst.max(r);
                }
            }
            eprintln!("inner {inner}, host list {host_list}: {} iterations, worst relative difference {worst:e}", got.iterations);
        }
    }
}
