//! FIM conformance (`neuroport check`): the GPU block FIM (device-side and host-side active
//! list; Tsai's validity test) against the CPU node FIM on a freshly drawn smooth anisotropic
//! field with anisotropic voxels, a grid that is not a multiple of the block edge, two sources
//! and a closed pocket the front cannot enter (must stay NaN on both). On the CPU itself the
//! node FIM of `dev`'s thread count is compared with the reference's (the same by construction).
//!
//! Error measure: the largest |u_dev - u_ref| / u_ref over voxels the reference reached; a
//! voxel reached on one side and NaN on the other is an infinite error.
//!
//! Tolerance, from the arithmetic: one f32 local solve (a quadratic root: a division and a
//! square root over sums of a few products) is right to within ~8 ulps, eps_f32 = 2^-24 each
//! (with OpenCL 1.2's division and sqrt, 2.5 and 3 ulps, to which CUDA builds cl/fim.cl too),
//! and a node may stop up to `tol` * u above its fixed point (Params::tol, 1e-6). u at a voxel is
//! built by a chain of at most L = nx + ny + nz upwind updates, and the Godunov update passes a
//! neighbour's error on with factor at most 1 (it is monotone and non-expansive), so two
//! correct solvers differ by at most L * (tol + 8 eps_f32) relative.

use super::{solve, Params, Problem};
use crate::check::CheckRow;
use crate::dti::sym3;
use crate::fim::repro::max_rel_diff;
use crate::runtime::Device;
use crate::synth::rng;
use anyhow::Result;
use rand::Rng;

/// A smooth random anisotropic field (eigenvalue ratios up to ~20) on a random grid.
pub fn random_problem(seed: u64) -> Problem {
    let mut r = rng(seed);
    let d = [r.random_range(13..21), r.random_range(11..18), r.random_range(9..14)];
    let n: usize = d.iter().product();
    let ph: [f64; 4] = std::array::from_fn(|_| r.random_range(0.0..std::f64::consts::TAU));
    let k: [f64; 4] = std::array::from_fn(|_| r.random_range(0.1..0.35));
    let lam = [r.random_range(1.0..2.0), r.random_range(0.1..0.5), r.random_range(0.05..0.2)];
    let mut speed = vec![0f32; 6 * n];
    for v in 0..n {
        let (x, y, z) = ((v % d[0]) as f64, ((v / d[0]) % d[1]) as f64, (v / (d[0] * d[1])) as f64);
        let th = (k[0] * x + ph[0]).sin() + (k[1] * y + ph[1]).cos();
        let ps = 0.6 * (k[2] * z + k[3] * x + ph[2]).sin();
        let e1 = [th.cos() * ps.cos(), th.sin() * ps.cos(), ps.sin()];
        let e2 = [-th.sin(), th.cos(), 0.0];
        let s = 1.0 + 0.3 * (k[3] * (y + z) + ph[3]).sin();
        let m = sym3::from_eigen(lam.map(|l| l * s), e1, e2);
        for c in 0..6 {
            speed[c * n + v] = m[c] as f32;
        }
    }
    let mut source = vec![0u8; n];
    for _ in 0..2 {
        let p = [r.random_range(4..d[0]), r.random_range(4..d[1]), r.random_range(4..d[2])];
        source[p[0] + d[0] * (p[1] + d[1] * p[2])] = 1;
    }
    // Walls at x, y or z == 2 close the corner cube [0, 2)^3: unreachable.
    let mask = (0..n)
        .map(|v| {
            let (x, y, z) = (v % d[0], (v / d[0]) % d[1], v / (d[0] * d[1]));
            let wall = (x == 2 && y <= 2 && z <= 2) || (y == 2 && x <= 2 && z <= 2) || (z == 2 && x <= 2 && y <= 2);
            (!wall) as u8
        })
        .collect();
    let voxel = [r.random_range(0.8..1.5), r.random_range(0.8..1.5), r.random_range(0.8..1.5)];
    Problem { dims: d, voxel, speed, mask, source }
}

/// L * (tol + 8 eps_f32), as derived in the module docs.
pub fn tolerance(p: &Problem, params: &Params) -> f64 {
    let l = p.dims.iter().sum::<usize>() as f64;
    l * (params.tol + 8.0 * f32::EPSILON as f64 / 2.0)
}

pub fn run(dev: &Device, reference: &Device, seed: u64) -> Result<Vec<CheckRow>> {
    let p = random_problem(seed ^ 0xF1);
    let base = Params::default();
    let want = solve(reference, &p, &base)?;
    let note = |d: &[usize; 3]| format!("{}x{}x{} random anisotropic field vs CPU node FIM", d[0], d[1], d[2]);
    let mut rows = Vec::new();
    let cases: Vec<(&str, Params)> = if dev.is_cpu() {
        vec![("fim_node", base)]
    } else {
        vec![
            ("fim_block[device list]", base),
            ("fim_block[host list]", Params { host_list: true, ..base }),
            // Tsai's test reaches the same roots (src/fim/godunov.rs: tsai_tol).
            ("fim_block[tsai]", Params { validity: super::Validity::Tsai, ..base }),
            // 004's local solver: fim_update with several work-items per voxel (gpu.rs lanes).
            ("fim_block[004 local]", Params { local: super::Local::Paper, ..base }),
        ]
    };
    let want_paper = if dev.is_cpu() { None } else { Some(solve(reference, &p, &Params { local: super::Local::Paper, ..base })?) };
    for (name, params) in cases {
        let want = match (&want_paper, params.local) {
            (Some(w), super::Local::Paper) => w.u.clone(),
            _ => want.u.clone(),
        };
        let got = solve(dev, &p, &params)?;
        rows.push(CheckRow::new(name, dev, max_rel_diff(&got.u, &want), tolerance(&p, &params), note(&p.dims)));
    }
    Ok(rows)
}
