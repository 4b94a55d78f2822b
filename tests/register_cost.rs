//! Every cost of the CPU kernel (float32 positions and samples, float64 sums) against a plain
//! float64 reference written here from the definitions in src/register/cost.rs, on random
//! images and random transforms.
//!
//! Tolerance, derived: the kernel's position differs from the float64 one by the rounding of
//! three products and three sums of magnitude below 4 n (n = 40 voxels here), under
//! 6 * 4n * 2^-24 < 6e-5 voxel, and its trilinear blend by 7 roundings of values below the
//! image's range R, under 7 * 2^-24 R. A sample therefore moves by at most
//! d_i = 6e-5 * (spread of its 8 corners) + 5e-7 R. SAD may change by d_i per sample, SSD by
//! 2 |f - m| d_i + d_i^2; the bound is summed over the samples the reference computes. A sample
//! can change side of the inside/outside test only within 6e-5 voxel of the box's faces.

use neuroport::register::cost::{bin, entropies, CostSpec, Stats, BINS};
use neuroport::register::{cpu, CostKind};
use neuroport::volume::{Geometry, Volume};
use rand::{Rng, SeedableRng};

fn random_volume(dims: [usize; 3], r: &mut impl Rng) -> Volume {
    let g = Geometry::synthetic(dims, [1.0; 3]);
    // Smooth-ish: a few sinusoids plus noise, so interpolation matters.
    let a: [f64; 3] = std::array::from_fn(|_| r.random_range(0.1..0.6));
    let data = (0..g.nvox())
        .map(|i| {
            let (x, y, z) = ((i % dims[0]) as f64, ((i / dims[0]) % dims[1]) as f64, (i / (dims[0] * dims[1])) as f64);
            ((a[0] * x).sin() + (a[1] * y).cos() + (a[2] * z).sin() + 3.0 + r.random_range(-0.3..0.3)) as f32
        })
        .collect();
    Volume::from_flat(g, 1, data)
}

/// Float64 trilinear sample and the spread of its 8 corners.
fn sample64(v: &Volume, p: [f64; 3]) -> Option<(f64, f64)> {
    let d = v.geom.dims;
    if (0..3).any(|a| !(p[a] >= 0.0 && p[a] <= (d[a] - 1) as f64)) {
        return None;
    }
    let i0: [usize; 3] = std::array::from_fn(|a| p[a].floor() as usize);
    let f: [f64; 3] = std::array::from_fn(|a| p[a] - i0[a] as f64);
    let mut val = 0.0;
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for c in 0..8 {
        let o: [usize; 3] = std::array::from_fn(|a| (c >> a) & 1);
        let idx: [usize; 3] = std::array::from_fn(|a| (i0[a] + o[a]).min(d[a] - 1));
        let w: f64 = (0..3).map(|a| if o[a] == 1 { f[a] } else { 1.0 - f[a] }).product();
        let x = v.as_flat()[v.geom.index(idx[0], idx[1], idx[2])] as f64;
        val += w * x;
        lo = lo.min(x);
        hi = hi.max(x);
    }
    Some((val, hi - lo))
}

struct Reference {
    stats: Stats,
    slack: [f64; 2],
    /// NCC sums (a, b, aa, bb, ab) and, for its bound, sum |a| d_i and sum d_i^2.
    ncc: [f64; 5],
    ncc_slack: [f64; 2],
    near_edge: u64,
}

fn reference(fixed: &Volume, moving: &Volume, spec: &CostSpec, m: &[f32; 12]) -> Reference {
    let m64: Vec<f64> = m.iter().map(|&x| x as f64).collect();
    let [nx, ny, nz] = fixed.geom.dims;
    let range = 8.0; // values lie in [0, 7]
    let mut s = Stats { hist: vec![0; BINS * BINS], ..Default::default() };
    let mut slack = [0.0f64; 2];
    let mut near_edge = 0;
    let mut ncc = [0.0f64; 5];
    let mut ncc_slack = [0.0f64; 2];
    for z in 0..nz {
        for y in 0..ny {
            for x in 0..nx {
                s.total += 1;
                let p: [f64; 3] = std::array::from_fn(|r| m64[4 * r] * x as f64 + m64[4 * r + 1] * y as f64 + m64[4 * r + 2] * z as f64 + m64[4 * r + 3]);
                let Some((mv, spread)) = sample64(moving, p) else { continue };
                let fv = fixed.as_flat()[fixed.geom.index(x, y, z)] as f64;
                s.inside += 1;
                let d = 6e-5 * spread + 5e-7 * range;
                s.sums[0] += (fv - mv).abs();
                s.sums[1] += (fv - mv).powi(2);
                slack[0] += d;
                slack[1] += 2.0 * (fv - mv).abs() * d + d * d;
                let (a, b) = (fv - spec.fixed_shift as f64, mv - spec.moving_shift as f64);
                for (k, v) in [a, b, a * a, b * b, a * b].into_iter().enumerate() {
                    ncc[k] += v;
                }
                ncc_slack[0] += a.abs() * d;
                ncc_slack[1] += d * d;
                let t = (mv - spec.moving_lo as f64) * spec.moving_inv_width as f64;
                if (t - t.round()).abs() <= d * spec.moving_inv_width as f64 + 1e-6 {
                    near_edge += 1;
                }
                let i = bin(fv as f32, spec.fixed_lo, spec.fixed_inv_width, spec.bins);
                let j = (t.floor() as i32).clamp(0, spec.bins - 1);
                s.hist[(i * spec.bins + j) as usize] += 1;
            }
        }
    }
    Reference { stats: s, slack, ncc, ncc_slack, near_edge }
}

fn random_map(r: &mut impl Rng, integer_shift: bool) -> [f32; 12] {
    if integer_shift {
        let t: [f32; 3] = std::array::from_fn(|_| r.random_range(-4..=4) as f32);
        return [1.0, 0.0, 0.0, t[0], 0.0, 1.0, 0.0, t[1], 0.0, 0.0, 1.0, t[2]];
    }
    let mut m = [0.0f32; 12];
    for row in 0..3 {
        for c in 0..3 {
            m[4 * row + c] = if row == c { 1.0 } else { 0.0 } + r.random_range(-0.15..0.15);
        }
        m[4 * row + 3] = r.random_range(-5.0..5.0);
    }
    m
}

#[test]
fn every_cost_matches_the_float64_reference() {
    let mut r = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(42);
    for trial in 0..6 {
        let fixed = random_volume([40, 36, 30], &mut r);
        let moving = random_volume([38, 40, 33], &mut r);
        let m = random_map(&mut r, trial % 3 == 2);
        let exact = trial % 3 == 2;
        let spec0 = CostSpec::new(CostKind::Sad, fixed.as_flat(), moving.as_flat()).unwrap();
        let re = reference(&fixed, &moving, &spec0, &m);
        let n = re.stats.inside as f64;
        for kind in CostKind::ALL {
            let spec = CostSpec { cost: kind.code(), ..spec0 };
            let got = cpu::evaluate(&fixed, &moving, &spec, &m);
            assert_eq!(got.total, re.stats.total);
            // Inside/outside can only differ within 6e-5 voxel of a face: none on these grids
            // but allow for it by comparing counts first.
            assert_eq!(got.inside, re.stats.inside, "trial {trial} {kind:?}");
            match kind {
                CostKind::Sad => assert!((got.sums[0] - re.stats.sums[0]).abs() <= re.slack[0], "{trial} SAD {} vs {}", got.sums[0], re.stats.sums[0]),
                CostKind::Ssd => assert!((got.sums[0] - re.stats.sums[1]).abs() <= re.slack[1], "{trial} SSD"),
                CostKind::Ncc => {
                    // r = cov / (sa sb); moving every b_i by at most d_i moves cov by at most
                    // (sum |a_i| d_i + |mean a| sum d_i) / n and sb by at most
                    // sqrt(sum d_i^2 / n), so r by at most cov's change / (sa sb) + sb's / sb.
                    let s = Stats { sums: re.ncc, ..re.stats.clone() };
                    let want = s.cost(kind);
                    let (ma, mb) = (re.ncc[0] / n, re.ncc[1] / n);
                    let (sa, sb) = ((re.ncc[2] / n - ma * ma).sqrt(), (re.ncc[3] / n - mb * mb).sqrt());
                    let tol = (re.ncc_slack[0] + ma.abs() * re.slack[0]) / n / (sa * sb) + (re.ncc_slack[1] / n).sqrt() / sb + 1e-12;
                    let c = got.cost(kind);
                    assert!((c - want).abs() <= tol, "{trial} NCC {c} vs {want} (tolerance {tol:.2e})");
                }
                CostKind::Mi | CostKind::Nmi => {
                    let diff: u64 = got.hist.iter().zip(&re.stats.hist).map(|(a, b)| (*a as i64 - *b as i64).unsigned_abs()).sum();
                    if exact {
                        assert_eq!(got.hist, re.stats.hist, "integer shift: samples are exact, so are the counts");
                    } else {
                        assert!(diff <= 2 * re.near_edge, "{trial} {kind:?}: {diff} counts moved, {} samples near a bin edge", re.near_edge);
                    }
                    let (hf, hm, hj) = entropies(&got.hist);
                    let want = if kind == CostKind::Mi { -(hf + hm - hj) } else { -(hf + hm) / hj };
                    assert!((got.cost(kind) - want).abs() < 1e-12);
                }
            }
            assert!(n > 0.0);
        }
    }
}
