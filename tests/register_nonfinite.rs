//! Registration's rule for NaN/Inf voxels (src/register/cost.rs): a non-finite fixed voxel is
//! not part of the fixed image (neither summed nor counted in `total`); a sample whose
//! trilinear interpolation reads a non-finite moving voxel is outside (counted, not summed).
//! The CPU cost is checked against the same images with those voxels and samples removed by
//! hand; the OpenCL kernels (PoCL here) against the CPU, with the counts and histograms equal;
//! and what derives from the images' values (the cost's shifts and bins, the pyramid, the
//! centre of mass) ignores them.

mod common;
use neuroport::register::cost::{bin, CostSpec, Stats};
use neuroport::register::gpu::{GpuCost, Sampling};
use neuroport::register::{cpu, pyramid, CostKernels, CostKind};
use neuroport::runtime::gpu::Gpu;
use neuroport::volume::{Geometry, Volume};
use rand::{Rng, SeedableRng};
use std::ops::Range;

/// A box of voxels, [x, y, z] ranges.
type Block = [Range<usize>; 3];

fn in_block(b: &Block, i: [usize; 3]) -> bool {
    (0..3).all(|a| b[a].contains(&i[a]))
}

/// Smooth values in [0, 7] plus noise, with `hole` filled by NaN, +Inf and -Inf in turn.
fn image(dims: [usize; 3], hole: &Block, r: &mut impl Rng) -> Volume {
    let g = Geometry::synthetic(dims, [1.0; 3]);
    let a: [f64; 3] = std::array::from_fn(|_| r.random_range(0.1..0.6));
    let mut k = 0;
    let data = (0..g.nvox())
        .map(|i| {
            let p = [i % dims[0], (i / dims[0]) % dims[1], i / (dims[0] * dims[1])];
            if in_block(hole, p) {
                k += 1;
                return [f32::NAN, f32::INFINITY, f32::NEG_INFINITY][k % 3];
            }
            let (x, y, z) = (p[0] as f64, p[1] as f64, p[2] as f64);
            ((a[0] * x).sin() + (a[1] * y).cos() + (a[2] * z).sin() + 3.0 + r.random_range(-0.3..0.3)) as f32
        })
        .collect();
    Volume::from_flat(g, 1, data)
}

/// The cost's statistics over the pair with the fixed voxels of `fixed_hole` and the samples
/// reading a voxel of `moving_hole` taken out by hand, samples from the CPU's own sampler (at
/// points clear of the holes, where every voxel is finite).
fn by_hand(fixed: &Volume, moving: &Volume, fixed_hole: &Block, moving_hole: &Block, spec: &CostSpec, m: &[f32; 12]) -> Stats {
    let [nx, ny, nz] = fixed.geom.dims;
    let d = moving.geom.dims;
    let b = spec.bins;
    let mut s = Stats { hist: vec![0; (b * b) as usize], ..Default::default() };
    for z in 0..nz {
        for y in 0..ny {
            for x in 0..nx {
                if in_block(fixed_hole, [x, y, z]) {
                    continue;
                }
                s.total += 1;
                let p = cpu::map_point(m, x as f32, y as f32, z as f32);
                if (0..3).any(|a| !(p[a] >= 0.0 && p[a] <= (d[a] - 1) as f32)) {
                    continue;
                }
                // The 8 voxels a trilinear sample reads (the upper ones clamped to the grid),
                // whatever their weights.
                let lo = p.map(|v| v as usize);
                let reads_hole = (0..8).any(|c| in_block(moving_hole, std::array::from_fn(|a| (lo[a] + ((c >> a) & 1)).min(d[a] - 1))));
                if reads_hole {
                    continue;
                }
                let fv = fixed.as_flat()[fixed.geom.index(x, y, z)];
                let mv = cpu::sample(moving.as_flat(), d, p).expect("inside");
                assert!(fv.is_finite() && mv.is_finite());
                s.inside += 1;
                match spec.kind() {
                    CostKind::Sad => s.sums[0] += (fv - mv).abs() as f64,
                    CostKind::Ssd => s.sums[0] += ((fv - mv) as f64).powi(2),
                    CostKind::Ncc => {
                        let (a, c) = ((fv - spec.fixed_shift) as f64, (mv - spec.moving_shift) as f64);
                        for (k, v) in [a, c, a * a, c * c, a * c].into_iter().enumerate() {
                            s.sums[k] += v;
                        }
                    }
                    CostKind::Mi | CostKind::Nmi => {
                        let i = bin(fv, spec.fixed_lo, spec.fixed_inv_width, b);
                        let j = bin(mv, spec.moving_lo, spec.moving_inv_width, b);
                        s.hist[(i * b + j) as usize] += 1;
                    }
                }
            }
        }
    }
    if !spec.kind().uses_histogram() {
        s.hist.clear();
    }
    s
}

fn maps(r: &mut impl Rng) -> Vec<[f32; 12]> {
    let mut out = vec![
        // Integer shifts: every sample sits on a voxel, its upper neighbours read at weight 0.
        [1.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0, -2.0, 0.0, 0.0, 1.0, 1.0],
    ];
    for _ in 0..3 {
        let mut m = [0.0f32; 12];
        for row in 0..3 {
            for c in 0..3 {
                m[4 * row + c] = if row == c { 1.0 } else { 0.0 } + r.random_range(-0.1..0.1);
            }
            m[4 * row + 3] = r.random_range(-2.0..2.0);
        }
        out.push(m);
    }
    out
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * a.abs().max(b.abs()).max(1.0)
}

/// Minimum, maximum and mean of the finite values, as CostSpec takes them.
fn finite_summary(v: &[f32]) -> (f32, f32, f32) {
    let f: Vec<f32> = v.iter().copied().filter(|x| x.is_finite()).collect();
    let mean = f.iter().map(|&x| x as f64).sum::<f64>() / f.len() as f64;
    (f.iter().copied().fold(f32::INFINITY, f32::min), f.iter().copied().fold(f32::NEG_INFINITY, f32::max), mean as f32)
}

#[test]
fn cpu_cost_leaves_out_nonfinite_voxels_and_the_samples_that_read_them() {
    let mut r = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(7);
    let (fh, mh): (Block, Block) = ([3..7, 2..5, 4..6], [5..8, 6..9, 3..6]);
    let fixed = image([14, 12, 10], &fh, &mut r);
    let moving = image([13, 14, 11], &mh, &mut r);
    let spec0 = CostSpec::new(CostKind::Sad, fixed.as_flat(), moving.as_flat()).unwrap();
    // The shifts and bins come from the finite values alone.
    let (flo, fhi, fmean) = finite_summary(fixed.as_flat());
    let (mlo, mhi, mmean) = finite_summary(moving.as_flat());
    assert_eq!((spec0.fixed_lo, spec0.moving_lo), (flo, mlo));
    assert_eq!((spec0.fixed_inv_width, spec0.moving_inv_width), (32.0 / (fhi - flo), 32.0 / (mhi - mlo)));
    assert!((spec0.fixed_shift - fmean).abs() <= 1e-6 * fmean && (spec0.moving_shift - mmean).abs() <= 1e-6 * mmean, "{spec0:?}");
    let mut reads_hole = 0;
    for m in maps(&mut r) {
        for kind in CostKind::ALL {
            let spec = CostSpec { cost: kind.code(), ..spec0 };
            let got = cpu::evaluate(&fixed, &moving, &spec, &m);
            let want = by_hand(&fixed, &moving, &fh, &mh, &spec, &m);
            assert_eq!((got.inside, got.total), (want.inside, want.total), "{kind:?} {m:?}");
            assert_eq!(got.total, (14 * 12 * 10 - 4 * 3 * 2) as u64);
            assert_eq!(got.hist, want.hist, "{kind:?} {m:?}");
            assert!(got.sums.iter().zip(&want.sums).all(|(a, b)| close(*a, *b)), "{kind:?} {m:?}: {:?} vs {:?}", got.sums, want.sums);
            let (c, w) = (got.cost(kind), want.cost(kind));
            assert!(c.is_finite() && close(c, w), "{kind:?}: {c} vs {w}");
        }
        let in_box = (0..fixed.nvox())
            .filter(|&i| fixed.as_flat()[i].is_finite())
            .filter(|&i| {
                let [nx, ny, _] = fixed.geom.dims;
                let p = cpu::map_point(&m, (i % nx) as f32, ((i / nx) % ny) as f32, (i / (nx * ny)) as f32);
                (0..3).all(|a| p[a] >= 0.0 && p[a] <= (moving.geom.dims[a] - 1) as f32)
            })
            .count() as u64;
        reads_hole += in_box - by_hand(&fixed, &moving, &fh, &mh, &spec0, &m).inside;
    }
    assert!(reads_hole > 20, "the maps must put samples on the moving hole: {reads_hole}");
}

#[test]
fn pyramid_and_centre_of_mass_ignore_nonfinite_voxels() {
    let g = Geometry::synthetic([16, 16, 16], [1.0; 3]);
    let mut d = vec![1.0f32; g.nvox()];
    // Block (0, 0, 0): one child NaN and one +Inf, the others 1 and 4; block (1, 0, 0) all NaN.
    d[g.index(0, 0, 0)] = f32::NAN;
    d[g.index(1, 0, 0)] = f32::INFINITY;
    d[g.index(0, 1, 1)] = 4.0;
    for i in 0..8 {
        d[g.index(2 + (i & 1), (i >> 1) & 1, i >> 2)] = f32::NAN;
    }
    let h = pyramid::halve(&Volume::from_flat(g.clone(), 1, d.clone()));
    assert_eq!(h.as_flat()[0], 9.0 / 6.0, "the mean of the six finite children");
    assert!(h.as_flat()[1].is_nan(), "no finite child: NaN, left out at the coarser level too");
    assert_eq!(h.as_flat()[2], 1.0);
    // The centre of mass of a uniform image with a few non-finite voxels in one corner: the
    // grid's centre moved only by the corner's missing weight, not to infinity.
    let mut u = vec![1.0f32; g.nvox()];
    u[0] = f32::INFINITY;
    u[1] = f32::NAN;
    let c = pyramid::centre_of_mass(&Volume::from_flat(g.clone(), 1, u));
    assert!(c.iter().all(|v| v.is_finite() && (v - 7.5).abs() < 0.01), "{c:?}");
}

/// OpenCL (PoCL here) against the CPU on images with holes in both: in-kernel sampling gives
/// the same counts and histograms and float32 sums within their accumulation error; the
/// texture path (moving image finite: the filter's weights are not the CPU's, see
/// src/register/check.rs) the same counts.
#[test]
fn opencl_gives_the_cpus_stats_with_nonfinite_voxels() {
    let Some(dev) = common::opencl() else { return };
    let mut r = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(11);
    let (fh, mh): (Block, Block) = ([10..18, 4..30, 6..9], [20..24, 10..14, 0..33]);
    let fixed = image([40, 36, 30], &fh, &mut r);
    let moving = image([38, 40, 33], &mh, &mut r);
    let finite_moving = image([38, 40, 33], &[0..0, 0..0, 0..0], &mut r);
    for (sampling, mv) in [(Sampling::InKernel, &moving), (Sampling::Texture, &finite_moving)] {
        let mut k = GpuCost::new(Gpu::require(&dev).unwrap(), sampling).unwrap();
        for kind in CostKind::ALL {
            let spec = CostSpec::new(kind, fixed.as_flat(), mv.as_flat()).unwrap();
            k.load(&fixed, mv, &spec).unwrap();
            for m in maps(&mut r) {
                let got = k.evaluate(&m).unwrap();
                let want = cpu::evaluate(&fixed, mv, &spec, &m);
                assert_eq!((got.inside, got.total), (want.inside, want.total), "{sampling:?} {kind:?} {m:?}");
                assert!(want.inside > 0 && want.total == (40 * 36 * 30 - 8 * 26 * 3) as u64);
                if sampling == Sampling::Texture {
                    continue;
                }
                if kind.uses_histogram() {
                    assert_eq!(k.last_histogram(0).unwrap(), want.hist, "{kind:?} {m:?}");
                    continue;
                }
                // |terms| below 50 (values in [0, 7], NCC's squares of shifted ones), float32
                // sums of at most 4e4 of them: a generous 2^-12 relative of n x 50.
                let unit = want.inside as f64 * 50.0 * 2f64.powi(-12);
                assert!(got.sums.iter().zip(&want.sums).all(|(a, b)| a.is_finite() && (a - b).abs() <= unit), "{kind:?} {m:?}: {:?} vs {:?}", got.sums, want.sums);
            }
        }
    }
}
