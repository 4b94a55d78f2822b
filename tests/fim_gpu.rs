//! Block FIM on an OpenCL device (PoCL in CI) against the CPU node FIM.

use neuroport::fim::{self, cpu, Params, Problem, Validity};

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

/// Strong anisotropy (eigenvalue ratios up to 40) with mask walls and an unreachable pocket: the
/// field where, before the monotone local solve (src/fim/hg.rs), no candidate passed the
/// validity test at some nodes and schedules ended up to 0.34 % apart. Now every block schedule,
/// both active-list paths and both validity tests must end at node FIM's (f64, exact) answer.
#[test]
fn block_fim_matches_node_fim_for_every_schedule() {
    let Some(dev) = opencl() else { return };
    for walls in [false, true] {
        let mut p = problem(3);
        if !walls {
            p.mask.iter_mut().for_each(|m| *m = 1);
        }
        let want = cpu::node_fim::<f64>(&p, &Params { tol: 0.0, ..Params::default() }).u;
        for validity in [Validity::Index, Validity::Tsai] {
            // The device list with eager activation (the default) and with 004's, the host list.
            for (host_list, eager) in [(false, true), (false, false), (true, false)] {
                // lanes 3: the root's evaluations shared unevenly (26 combinations, up to 28
                // points of H_G) by the voxel's work-items; 1: one item per voxel. defer: H_G's
                // roots in the launch after the update (fim_settle; the device list only; the exact
                // solver here wants a root in about half its updates, so with several Jacobi
                // updates a launch some are wanted after an in-block neighbour moved).
                for (inner, lanes, defer) in [(1, 1, None), (2, 1, None), (4, 1, None), (8, 1, None), (1, 3, None), (4, 3, None), (1, 3, Some(true)), (2, 1, Some(true)), (4, 3, Some(true))] {
                    let par = Params { inner, host_list, validity, lanes, eager, defer, ..Params::default() };
                    let got = fim::solve(&dev, &p, &par).unwrap();
                    let mut worst = 0.0f32;
                    for v in 0..p.nvox() {
                        let (x, y) = (got.u[v], want[v]);
                        assert_eq!(x.is_nan(), y.is_nan(), "{par:?} voxel {v}: {x} vs {y}");
                        // f32 on the device: one rounding (8 ulps at most for a quadratic root or
                        // a bisection step, 8 * 2^-24 = 4.8e-7) per update, carried along at most
                        // 19 + 14 + 11 = 44 voxels (the local solve is monotone and
                        // non-expansive), and the stopping tolerance 1e-6 u on top:
                        // 44 * 4.8e-7 + 1e-6 = 2.2e-5 relative.
                        if !y.is_nan() {
                            assert!((x - y).abs() <= 2.2e-5 * y.abs(), "{par:?} walls {walls} voxel {v}: {x} vs {y}");
                            worst = worst.max((x - y).abs() / y.abs().max(f32::MIN_POSITIVE));
                        }
                    }
                    eprintln!("walls {walls} {validity:?} inner {inner} lanes {lanes} defer {defer:?} host list {host_list} eager {eager}: {} iterations, worst {worst:e}", got.iterations);
                }
            }
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

/// 004's local solver as published on the device: block FIM against node FIM with the same local
/// solver on a constant field (u convex, where it is exact), within the bound derived in
/// `block_fim_matches_node_fim_for_every_schedule` (2.2e-5 relative).
#[test]
fn paper_local_solver_block_fim_matches_node_fim_where_u_is_convex() {
    let Some(dev) = opencl() else { return };
    let mut p = problem(4);
    let n = p.nvox();
    p.speed = fim::metric::constant([1.0, 0.9, 0.9, 1.0, 0.9, 1.0], n);
    p.mask.iter_mut().for_each(|m| *m = 1);
    p.source.iter_mut().for_each(|s| *s = 0);
    p.source[9 + 19 * (7 + 14 * 5)] = 1;
    let paper = Params { local: fim::Local::Paper, ..Params::default() };
    let want = cpu::node_fim::<f64>(&p, &Params { tol: 0.0, ..paper }).u;
    for inner in [1, 4] {
        let got = fim::solve(&dev, &p, &Params { inner, ..paper }).unwrap();
        for v in 0..n {
            let (x, y) = (got.u[v], want[v]);
            assert!(!x.is_nan() && !y.is_nan(), "voxel {v}: {x} vs {y}");
            assert!((x - y).abs() <= 2.2e-5 * y.abs(), "inner {inner} voxel {v}: {x} vs {y}");
        }
    }
}

/// Same inputs, same bits: block FIM on the device gives one answer however its work-groups are
/// scheduled (run to run), whatever the work-items per voxel and whichever list path, for both
/// local solvers - on 004's helix, where the schedule mattered most (runs differed by up to 1e-4
/// on PoCL while halos were read as other groups of the launch wrote them), and on a random
/// anisotropic field.
#[test]
fn block_fim_gives_the_same_bits_on_every_run_and_schedule() {
    let Some(dev) = opencl() else { return };
    let bits = |u: &[f32]| u.iter().map(|x| x.to_bits()).collect::<Vec<u32>>();
    // Each run's bits against `want`, `what` naming the run and `case` its setting.
    let same_bits = |p: &Problem, want: &[u32], runs: Vec<(&str, Params)>, case: &str| {
        for (what, par) in runs {
            let got = bits(&fim::solve(&dev, p, &par).unwrap().u);
            let differ = got.iter().zip(want).filter(|(a, b)| a != b).count();
            assert_eq!(differ, 0, "{case} {what}: {differ} voxels differ");
        }
    };
    for (name, p) in [("helix", fim::repro::helix(10).problem), ("random", fim::check::random_problem(11 ^ 0xF1))] {
        for local in [fim::Local::Exact, fim::Local::Paper] {
            // The device list's three schedules (candidates folded into the next update with
            // eager or 004's activation, or 004's launch of their own), each against itself and
            // its other paths; 004's schedule also against the host list, which runs it.
            for (folded, eager) in [(true, true), (true, false), (false, false)] {
                let base = Params { local, lanes: 1, folded, eager, ..Params::default() };
                let want = bits(&fim::solve(&dev, &p, &base).unwrap().u);
                assert!(want.iter().any(|&b| f32::from_bits(b).is_finite()));
                let mut runs = vec![("again", base), ("again", base), ("3 lanes", Params { lanes: 3, ..base }), ("4 lanes", Params { lanes: 4, ..base }), ("every voxel evaluated", Params { skip: false, ..base })];
                if !folded {
                    runs.push(("host list", Params { host_list: true, ..base }));
                }
                same_bits(&p, &want, runs, &format!("{name} {local:?} folded {folded} eager {eager}"));
                // Roots deferred to fim_settle (GPUs' choice for 004's solver): one work-group
                // per root whatever the lanes, appended in any order.
                if folded && eager {
                    let deferred = Params { defer: Some(true), ..base };
                    let want = bits(&fim::solve(&dev, &p, &deferred).unwrap().u);
                    // The roots and the neighbours in one launch (fim_settle, the default) or one
                    // after the other in two: the same roots, lists and bits.
                    let runs = vec![
                        ("deferred again", deferred),
                        ("deferred, 3 lanes", Params { lanes: 3, ..deferred }),
                        ("deferred, every voxel evaluated", Params { skip: false, ..deferred }),
                        ("deferred, roots in a launch of their own", Params { settle: false, ..deferred }),
                    ];
                    same_bits(&p, &want, runs, &format!("{name} {local:?} eager {eager}"));
                    // Several Jacobi updates a launch, where the skip also leaves out, after the
                    // first, voxels none of whose in-block neighbours moved: the same bits as
                    // every voxel evaluated, roots in place or deferred.
                    for (inner, defer) in [(3, None), (3, Some(true))] {
                        let several = Params { inner, defer, ..base };
                        let want = bits(&fim::solve(&dev, &p, &several).unwrap().u);
                        let runs = vec![("again", several), ("3 lanes", Params { lanes: 3, ..several }), ("every voxel evaluated", Params { skip: false, ..several }), ("roots in a launch of their own", Params { settle: false, ..several })];
                        same_bits(&p, &want, runs, &format!("{name} {local:?} inner {inner} defer {defer:?}"));
                    }
                }
            }
        }
    }
}

/// The skip of voxels none of whose neighbours moved (fim.cl np_fim_unmoved) runs the same
/// schedule (iterations, listed updates) and evaluates fewer voxels than the same solve without
/// it, which evaluates no more than the listed updates (the same bits:
/// `block_fim_gives_the_same_bits_on_every_run_and_schedule`).
#[test]
fn skip_evaluates_fewer_voxels() {
    let Some(dev) = opencl() else { return };
    let p = fim::repro::brain([32, 32, 12], 1).problem;
    // One Jacobi update a launch, and three (where, after the first, only voxels an in-block
    // neighbour of which moved are evaluated).
    for inner in [1, 3] {
        let on = fim::solve(&dev, &p, &Params { inner, ..Params::default() }).unwrap();
        let off = fim::solve(&dev, &p, &Params { inner, skip: false, ..Params::default() }).unwrap();
        let (e_on, e_off) = (on.evaluations.unwrap(), off.evaluations.unwrap());
        eprintln!("inner {inner}: evaluations: {e_on} with the skip, {e_off} without, {} updates listed", on.updates);
        assert_eq!((on.iterations, on.updates), (off.iterations, off.updates), "inner {inner}");
        assert!(e_off <= off.updates && e_on < e_off, "inner {inner}: {e_on} with the skip, {e_off} without, {} listed", off.updates);
    }
}

/// Eager activation (a voxel lowered on a face activates the block across it at once) reaches
/// node FIM's fixed point in fewer iterations: on example 3's stand-in at 64x64x25, where the front crosses ~16
/// blocks, 004's rule waits for each block to converge before its neighbours start. Both must
/// stay within the bound of `block_fim_matches_node_fim_for_every_schedule` of node FIM (f64).
#[test]
fn eager_activation_reaches_node_fim_in_fewer_iterations() {
    let Some(dev) = opencl() else { return };
    let p = fim::repro::brain([64, 64, 25], 1).problem;
    let want = cpu::node_fim::<f64>(&p, &Params { tol: 0.0, ..Params::default() }).u;
    let mut iterations = Vec::new();
    let mut medians = Vec::new();
    for eager in [true, false] {
        let got = fim::solve(&dev, &p, &Params { eager, ..Params::default() }).unwrap();
        let top = want.iter().filter(|x| !x.is_nan()).fold(0.0f32, |a, &b| a.max(b));
        let mut rel: Vec<f32> = (0..p.nvox()).filter(|&v| want[v] > 0.0).map(|v| (got.u[v] - want[v]).abs() / want[v]).collect();
        rel.sort_by(f32::total_cmp);
        medians.push(rel[rel.len() / 2]);
        for v in 0..p.nvox() {
            let (x, y) = (got.u[v], want[v]);
            assert_eq!(x.is_nan(), y.is_nan(), "eager {eager} voxel {v}: {x} vs {y}");
            // Relative to the largest u: a path of up to 64 + 64 + 25 voxels, each adding one
            // f32 rounding (4.8e-7) and the stopping tolerance 1e-6 on top.
            if !y.is_nan() {
                assert!((x - y).abs() <= (153.0 * 4.8e-7 + 1e-6) * top, "eager {eager} voxel {v}: {x} vs {y}");
            }
        }
        iterations.push(got.iterations);
    }
    eprintln!("iterations: eager {}, 004's activation {}; median relative difference from node FIM {:e}, {:e}", iterations[0], iterations[1], medians[0], medians[1]);
    assert!(2 * iterations[0] < 3 * iterations[1], "eager {} vs 004's {} iterations", iterations[0], iterations[1]);
}

/// Connectivity's solves over one field (`fim::solve_regions`: a GPU uploads S once and runs
/// the regions together, stacked) give each region's u as a solve from that region alone, bit
/// for bit, on the device and on the CPU, for both list paths and both local solvers, and hand
/// the problem back with its own source. Three regions: the problem's own two sources, a whole
/// 4^3 block of sources (nothing in it to update), and one voxel in the closed pocket (its front
/// stays there while the others cross the grid).
#[test]
fn regions_over_one_field_give_each_region_alone() {
    let bits = |u: &[f32]| u.iter().map(|x| x.to_bits()).collect::<Vec<u32>>();
    let devices = [opencl(), neuroport::runtime::Inventory::discover(Some(2)).open_cpu().ok()];
    for dev in devices.into_iter().flatten() {
        for par in [Params::default(), Params { host_list: true, ..Params::default() }, Params { local: fim::Local::Paper, ..Params::default() }] {
            let mut p = problem(5);
            let n = p.nvox();
            let (mut block, mut pocket) = (vec![0u8; n], vec![0u8; n]);
            for v in 0..n {
                let (x, y, z) = (v % 19, (v / 19) % 14, v / (19 * 14));
                block[v] = ((12..16).contains(&x) && (4..8).contains(&y) && (4..8).contains(&z)) as u8;
                pocket[v] = (x == 1 && y == 1 && z == 0) as u8;
            }
            let own = p.source.clone();
            let regions0 = vec![block, own.clone(), pocket];
            let alone: Vec<Vec<u32>> = regions0.iter().map(|s| bits(&fim::solve(&dev, &Problem { source: s.clone(), ..p.clone() }, &par).unwrap().u)).collect();
            let mut regions = regions0.clone();
            let got = fim::solve_regions(&dev, &mut p, &mut regions, &par).unwrap();
            assert_eq!(p.source, own, "the problem's source put back");
            assert_eq!(regions, regions0, "the regions put back");
            for (k, (g, a)) in got.iter().zip(&alone).enumerate() {
                assert_eq!(&bits(&g.u), a, "{} {par:?}: region {k}", dev.label());
            }
            assert!(alone[0] != alone[1] && alone[1] != alone[2]);
            assert_eq!(alone[2].iter().filter(|&&b| f32::from_bits(b).is_finite()).count(), 8, "the pocket's front fills its 2^3 voxels only");
        }
    }
}

/// 004's solver with its roots deferred by the device's own choice probes how often they are
/// wanted over the first iterations (`Params::probe`) and, where they are frequent (the 004 helix:
/// eigenvalues 1 and 1e-4), solves again with them in place: then the answer is the in-place
/// solve's, bit for bit; where they are rare (the stand-in brain) the deferred solve's. The probe
/// counts each voxel once, so it reads the same on every run.
#[test]
fn deferred_roots_probe_keeps_frequent_roots_in_place() {
    let Some(dev) = opencl() else { return };
    let bits = |u: &[f32]| u.iter().map(|x| x.to_bits()).collect::<Vec<u32>>();
    let paper = Params { local: fim::Local::Paper, ..Params::default() };
    for (name, p, frequent) in [("helix", fim::repro::helix(20).problem, true), ("brain", fim::repro::brain([48, 48, 16], 3).problem, false)] {
        let probed = Params { defer: Some(true), probe: Some(true), ..paper };
        let got = fim::solve(&dev, &p, &probed).unwrap();
        let pr = got.probe.unwrap_or_else(|| panic!("{name}: no probe after {} iterations", got.iterations));
        eprintln!("{name}: {pr:?}, {} iterations", got.iterations);
        assert_eq!(pr.iterations, fim::gpu::PROBE_ITERATIONS);
        assert_eq!(pr.frequent(), frequent, "{name}: {pr:?}");
        let want = fim::solve(&dev, &p, &Params { defer: Some(!frequent), probe: Some(false), ..paper }).unwrap();
        assert!(want.u.iter().any(|x| x.is_finite()));
        assert_eq!(bits(&got.u), bits(&want.u), "{name}: the probed solve against roots {}", if frequent { "in place" } else { "deferred" });
        assert_eq!(got.iterations, want.iterations, "{name}");
        let again = fim::solve(&dev, &p, &probed).unwrap();
        assert_eq!(again.probe, Some(pr), "{name}: the probe on a second run");
        assert_eq!(bits(&again.u), bits(&got.u), "{name}: a second run");
    }
}
