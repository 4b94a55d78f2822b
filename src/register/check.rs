//! `neuroport check` rows for the registration cost kernel: every cost, in-kernel and texture
//! sampling, against the CPU on random images and random affine maps.
//!
//! Tolerances, derived. In-kernel samples are bit-identical to the CPU's (register.h), so the
//! overlap count and MI/NMI histograms must be equal, and the sums differ only by float32
//! accumulation: each item adds at most `Layout::terms_per_item` terms (its slices over all its
//! tiles), then two tree reductions of depth <= 10 each, so |device - cpu| <= (terms + 20) 2^-24 sum |x_i|, with sum |x_i| bounded
//! by n max |x|. The error reported is |device - cpu| / (n max|x| 2^-24) against that depth.
//! MI/NMI come back as entropies computed on the device in float32: every -p ln p term carries
//! at most ~6 roundings (p = c (1/N), the logarithm, the product; OpenCL's log is within 3 ulp)
//! and each item adds <= 4 terms before a tree of depth 8, so each entropy is within
//! 18 x 2^-24 of the sum of its (positive) terms, i.e. of itself: MI = -(H(F) + H(M) - H(F,M))
//! within 18 x 2^-24 (H(F) + H(M) + H(F,M)), NMI = -(H(F) + H(M)) / H(F,M) within
//! 37 x 2^-24 |NMI| (both relative errors and the division).
//! Texture samples carry the filter's weight rounding: `Gpu::filter_bits()` fractional bits
//! (8 on NVIDIA), so each of the three axes' weights is off by at most 2^-bits (whether the unit
//! rounds or truncates) and a sample by at most 3 x 2^-bits of the spread of its 8 corners
//! (2^-22 where the device filters in float), plus, where texels are halves (GPUs), their
//! rounding (`GpuCost::texel_error`): a sample is a convex mix of its corners, so it moves by
//! no more than they do. Texture rows report the cost's change divided by
//! that bound on the mean sample change, tolerance 1; MI/NMI rows count the joint-histogram
//! entries that moved against twice the number of samples that lie within their bound of a
//! moving-intensity bin edge (only those can change bin), tolerance 1.
//! Batches: several maps in one launch must give each map exactly (bit for bit, histogram
//! count for count) what it gets alone: each map's work-groups, tiles and sums are the same.
//! NaN/Inf voxels (cost.rs's rule): every row is run on finite images (the kernels without
//! finiteness tests) and again, named "(NaN/Inf)", on images that hold some (the kernels built
//! with them, register.h NP_REG_NONFINITE): scattered NaN, +Inf and -Inf and a NaN block the
//! map samples across, so those rows check that the devices leave out the voxels and samples
//! the CPU leaves out. In-kernel rows ask for equal counts. The texture rows cannot: the CPU
//! reads a NaN/Inf corner even at weight 0 (its lerps), while the filter's weights are off by
//! up to 2^-bits and its coordinate may round across an integer before the floor, so a sample
//! whose non-finite corner has a CPU weight within 2^-bits of 0 on some axis (or lies just
//! beyond its 8) may be read at weight 0 or not read, and whether the hardware then gives NaN
//! is undocumented. Those samples (`unsure`, counted on the CPU) may be inside on one side
//! only: the overlaps may differ by that many, and each such sample, its term in [0, 1], widens
//! the cost's bound (texture_row) and the histogram's (up to 2 counts). A non-finite corner
//! with every axis's weight above 2^-bits is read by both, so both leave that sample out.

use super::cost::{CostKind, CostSpec, Stats};
use super::gpu::{GpuCost, Sampling};
use super::{cpu, CostKernels};
use crate::check::CheckRow;
use crate::runtime::gpu::Gpu;
use crate::runtime::Device;
use crate::volume::{xyz_of, Geometry, Volume};
use anyhow::Result;
use rand::Rng;

pub(super) fn random_volume(dims: [usize; 3], r: &mut impl Rng) -> Volume {
    let g = Geometry::synthetic(dims, [1.0; 3]);
    let data = (0..g.nvox()).map(|_| r.random_range(0.0f32..1.0)).collect();
    Volume::from_flat(g, 1, data)
}

/// `v` with about 1 % of its voxels NaN, +Inf or -Inf and a NaN block of a sixth of each axis
/// about its centre (a random map's samples cross it, reading it at every weight).
fn with_holes(mut v: Volume, r: &mut impl Rng) -> Volume {
    let d = v.geom.dims;
    let block: [std::ops::Range<usize>; 3] = std::array::from_fn(|a| d[a] / 2 - d[a] / 12..d[a] / 2 + d[a] / 12);
    for (i, x) in v.as_flat_mut().iter_mut().enumerate() {
        let p = xyz_of(i, d);
        if (0..3).all(|a| block[a].contains(&p[a])) {
            *x = f32::NAN;
        } else if r.random_range(0..100) == 0 {
            *x = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY][r.random_range(0..3)];
        }
    }
    v
}

pub(super) fn random_map(r: &mut impl Rng) -> [f32; 12] {
    let mut m = [0.0f32; 12];
    for row in 0..3 {
        for c in 0..3 {
            m[4 * row + c] = if row == c { 1.0 } else { 0.0 } + r.random_range(-0.1..0.1);
        }
        m[4 * row + 3] = r.random_range(-3.0..3.0);
    }
    m
}

/// What the texture rows allow a device: over the inside samples (of finite fixed voxels:
/// `fixed_values`) that read only finite corners, `change` sums the bound on each one's change,
/// `unit` x the spread (max - min) of its 8 corners plus `texel` (how far a texel may be from
/// its voxel's value: the halves' rounding), and `near` counts those within that bound of a
/// moving-intensity bin edge; `unsure` counts the samples near a non-finite moving voxel that
/// the filter may read at a weight the CPU does not ([`reads_nonfinite`]), which either side
/// may count inside and the other not.
struct TextureBounds {
    change: f64,
    near: u64,
    unsure: u64,
}

fn texture_bounds(moving: &Volume, fixed: &Geometry, fixed_values: &[f32], m: &[f32; 12], spec: &CostSpec, unit: f64, texel: f64, weight_error: f32) -> TextureBounds {
    let [nx, ny, nz] = fixed.dims;
    let d = moving.geom.dims;
    let mut b = TextureBounds { change: 0.0, near: 0, unsure: 0 };
    for z in 0..nz {
        for y in 0..ny {
            for x in 0..nx {
                if !fixed_values[fixed.index(x, y, z)].is_finite() {
                    continue;
                }
                let q = cpu::map_point(m, x as f32, y as f32, z as f32);
                let Some(v) = cpu::sample(moving.as_flat(), d, q) else { continue };
                match reads_nonfinite(moving, q, weight_error) {
                    Reads::Finite => {}
                    Reads::Nonfinite => continue,
                    Reads::Unsure => {
                        b.unsure += 1;
                        continue;
                    }
                }
                let (mut lo, mut hi) = (f32::INFINITY, f32::NEG_INFINITY);
                for c in 0..8 {
                    let i: [usize; 3] = std::array::from_fn(|a| (q[a] as usize + ((c >> a) & 1)).min(d[a] - 1));
                    let v = moving.as_flat()[moving.geom.index(i[0], i[1], i[2])];
                    lo = lo.min(v);
                    hi = hi.max(v);
                }
                let delta = unit * (hi - lo) as f64 + texel;
                b.change += delta;
                let t = (v - spec.moving_lo) as f64 * spec.moving_inv_width as f64;
                // + 1e-5 bin widths for the float32 rounding of the bin's own arithmetic.
                if (t - t.round()).abs() <= delta * spec.moving_inv_width as f64 + 1e-5 {
                    b.near += 1;
                }
            }
        }
    }
    b
}

enum Reads {
    /// Every corner either side may read is finite: both sample a finite value.
    Finite,
    /// A non-finite corner of the CPU's 8 has weight > the filter's weight error on every axis:
    /// the filter reads it too, so both samples are non-finite (outside the overlap).
    Nonfinite,
    Unsure,
}

/// Whether the filter's sample at `q` (inside the moving grid) reads a non-finite voxel where
/// the CPU's does. The CPU reads its 8 corners (floor, floor + 1 per axis, clamped), a NaN/Inf
/// one even at weight 0 (its lerps). The filter's weights are the CPU's within `weight_error`
/// (2^-8 on NVIDIA), and its coordinate, rounded before the floor, may cross an integer where
/// the weight is within that of 0 or 1, so it may also read the voxel below or beyond; whether
/// it then gives NaN for a corner at weight 0 is the hardware's, undocumented.
fn reads_nonfinite(moving: &Volume, q: [f32; 3], weight_error: f32) -> Reads {
    let d = moving.geom.dims;
    // Per axis: offsets -1..=2 from the floor, each with the CPU's weight (0 off its pair) and
    // whether the filter may read it.
    let axis = |a: usize| {
        let t = q[a] - (q[a] as usize) as f32;
        [(-1i64, 0.0f32, t <= weight_error), (0, 1.0 - t, true), (1, t, true), (2, 0.0, t >= 1.0 - weight_error)]
    };
    let (ax, ay, az) = (axis(0), axis(1), axis(2));
    let mut unsure = false;
    for &(oz, wz, rz) in &az {
        for &(oy, wy, ry) in &ay {
            for &(ox, wx, rx) in &ax {
                if !(rx && ry && rz) {
                    continue;
                }
                let i: [usize; 3] = std::array::from_fn(|a| (q[a] as i64 + [ox, oy, oz][a]).clamp(0, d[a] as i64 - 1) as usize);
                if moving.as_flat()[moving.geom.index(i[0], i[1], i[2])].is_finite() {
                    continue;
                }
                if wx > weight_error && wy > weight_error && wz > weight_error {
                    return Reads::Nonfinite;
                }
                unsure = true;
            }
        }
    }
    if unsure { Reads::Unsure } else { Reads::Finite }
}

pub fn run(dev: &Device, reference: &Device, seed: u64) -> Result<Vec<CheckRow>> {
    let Some(gpu) = Gpu::new(dev)? else { return Ok(Vec::new()) };
    let _ = reference;
    let mut r = crate::synth::rng(seed ^ 0x5e61);
    let finite_fixed = random_volume([48, 40, 36], &mut r);
    let holed_fixed = with_holes(finite_fixed.clone(), &mut r);
    let finite_moving = random_volume([44, 46, 38], &mut r);
    let holed_moving = with_holes(finite_moving.clone(), &mut r);
    let m = random_map(&mut r);
    let mut rows = Vec::new();
    for sampling in [Sampling::InKernel, Sampling::Texture] {
        let mut k = match GpuCost::new(gpu.clone(), sampling) {
            Ok(k) => k,
            Err(e) => {
                rows.push(CheckRow::new(&format!("register {sampling:?}"), dev, f64::INFINITY, 0.0, format!("error: {e:#}")));
                continue;
            }
        };
        // Finite images (the kernels users mostly run), then images with NaN/Inf (the kernels
        // built with their tests, CostSpec::nonfinite).
        for holes in [false, true] {
            let (fixed, moving) = if holes { (&holed_fixed, &holed_moving) } else { (&finite_fixed, &finite_moving) };
            for kind in CostKind::ALL {
                let spec = CostSpec::new(kind, fixed.as_flat(), moving.as_flat())?;
                let name = format!("register {} {}{}", kind.name(), k.variant(), if holes { " (NaN/Inf)" } else { "" });
                if let Err(e) = k.load(fixed, moving, &spec) {
                    rows.push(CheckRow::new(&name, dev, f64::INFINITY, 0.0, format!("error: {e:#}")));
                    continue;
                }
                let got = k.evaluate(&m)?;
                let hist = if kind.uses_histogram() { k.last_histogram(0)? } else { Vec::new() };
                let want = cpu::evaluate(fixed, moving, &spec, &m);
                rows.push(match sampling {
                    Sampling::InKernel => in_kernel_row(&name, dev, kind, &got, &hist, &want, k.layout(fixed.geom.dims).terms_per_item()),
                    Sampling::Texture => {
                        let weight_error = 2f64.powi(-(gpu.filter_bits().unwrap_or(22) as i32));
                        let b = texture_bounds(moving, &fixed.geom, fixed.as_flat(), &m, &spec, 3.0 * weight_error, k.texel_error(), weight_error as f32);
                        texture_row(&name, dev, kind, &got, &hist, &want, &b)
                    }
                });
                if sampling == Sampling::InKernel && !holes && matches!(kind, CostKind::Ncc | CostKind::Mi) {
                    rows.push(batch_row(&mut k, dev, kind, &mut r)?);
                }
            }
        }
    }
    Ok(rows)
}

/// Three maps in one launch against each alone: differing sums, counts or histogram entries.
fn batch_row(k: &mut GpuCost, dev: &Device, kind: CostKind, r: &mut impl Rng) -> Result<CheckRow> {
    let maps: Vec<[f32; 12]> = (0..3).map(|_| random_map(r)).collect();
    let together = k.evaluate_many(&maps)?;
    let mut hists = Vec::new();
    for i in 0..maps.len() {
        hists.push(if kind.uses_histogram() { k.last_histogram(i)? } else { Vec::new() });
    }
    let mut differ = 0.0;
    for (i, m) in maps.iter().enumerate() {
        let alone = k.evaluate(m)?;
        let hist = if kind.uses_histogram() { k.last_histogram(0)? } else { Vec::new() };
        let (a, b) = (&together[i], &alone);
        let same = a.inside == b.inside && a.total == b.total && a.sums.iter().zip(&b.sums).all(|(x, y)| x.to_bits() == y.to_bits() && x.is_finite()) && hists[i] == hist;
        differ += if same { 0.0 } else { 1.0 };
    }
    Ok(CheckRow::new(&format!("register {} batch of 3", kind.name()), dev, differ, 0.0, "maps of one launch differing from the same map alone (must be 0)"))
}

/// Joint-histogram entries that differ (L1 distance of the counts).
fn moved(a: &[u32], b: &[u32]) -> f64 {
    if a.len() != b.len() {
        return f64::INFINITY;
    }
    a.iter().zip(b).map(|(x, y)| (*x as i64 - *y as i64).unsigned_abs()).sum::<u64>() as f64
}

/// A failing row naming both overlaps where the device counted other samples inside (or in
/// all) than the CPU did: every cost depends on them.
fn overlap_differs(name: &str, dev: &Device, got: &Stats, want: &Stats) -> Option<CheckRow> {
    (got.inside != want.inside || got.total != want.total).then(|| CheckRow::new(name, dev, f64::INFINITY, 0.0, format!("overlap {} of {} vs the CPU's {} of {}", got.inside, got.total, want.inside, want.total)))
}

fn in_kernel_row(name: &str, dev: &Device, kind: CostKind, got: &Stats, hist: &[u32], want: &Stats, terms_per_item: usize) -> CheckRow {
    if let Some(row) = overlap_differs(name, dev, got, want) {
        return row;
    }
    if kind.uses_histogram() {
        let counts = moved(hist, &want.hist);
        if counts != 0.0 {
            return CheckRow::new(name, dev, counts, 0.0, "joint-histogram counts differing from the CPU's (must be 0)");
        }
        let (hf, hm, hj) = super::cost::entropies(&want.hist);
        let (c, w) = (got.cost(kind), want.cost(kind));
        let (unit, tol) = if kind == CostKind::Mi { ((hf + hm + hj) * 2f64.powi(-24), 18.0) } else { (w.abs() * 2f64.powi(-24), 37.0) };
        let err = if c.is_finite() { (c - w).abs() / unit } else { f64::INFINITY };
        return CheckRow::new(name, dev, err, tol, "histogram identical; cost error in units of 2^-24 x the entropies (MI) or |NMI|");
    }
    let terms = terms_per_item as f64 + 20.0;
    let n = want.inside as f64;
    let max_abs = 1.0f64; // values in [0, 1): |f - m|, (f - m)^2, |a|, |b|, |ab| all below 1
    let worst = (0..5).map(|i| (got.sums[i] - want.sums[i]).abs() / (n * max_abs * 2f64.powi(-24))).fold(0.0, f64::max);
    let bad = got.sums.iter().any(|v| !v.is_finite());
    CheckRow::new(name, dev, if bad { f64::INFINITY } else { worst }, terms, "sum error in units of n max|x| 2^-24 vs accumulation depth")
}

/// The texture rows' test (module notes). With `unsure` samples counted inside on one side
/// only, the overlaps N_dev, N_cpu may differ by that many, and a cost S / N, each sample's
/// term in [0, 1], by at most (change + 2 unsure) / N_dev: |S_dev - S_cpu| <= change + unsure,
/// and S_cpu |1/N_dev - 1/N_cpu| <= unsure / N_dev.
fn texture_row(name: &str, dev: &Device, kind: CostKind, got: &Stats, hist: &[u32], want: &Stats, b: &TextureBounds) -> CheckRow {
    if got.total != want.total || got.inside.abs_diff(want.inside) > b.unsure {
        let or = if b.unsure > 0 { format!(" (may differ by {} samples read near NaN/Inf)", b.unsure) } else { String::new() };
        return CheckRow::new(name, dev, f64::INFINITY, 0.0, format!("overlap {} of {} vs the CPU's {} of {}{or}", got.inside, got.total, want.inside, want.total));
    }
    let bound = (b.change + 2.0 * b.unsure as f64) / got.inside.max(1) as f64;
    let (c, w) = (got.cost(kind), want.cost(kind));
    // SAD and SSD move by at most the mean sample change (SSD: x 2 max|f - m| <= 2); NCC by
    // about that over the images' standard deviation (~0.29 for uniform values); MI/NMI through
    // the samples that can cross a bin edge, or be counted on one side only (module notes).
    let (err, tol, note) = match kind {
        CostKind::Sad => ((c - w).abs() / bound, 1.0, "cost change / bound on the mean sample change"),
        CostKind::Ssd => ((c - w).abs() / (2.0 * bound), 1.0, "cost change / (2 x bound on the mean sample change)"),
        CostKind::Ncc => ((c - w).abs() * 0.29 / (2.0 * bound), 1.0, "cost change x sd / (2 x bound on the mean sample change)"),
        _ => (moved(hist, &want.hist) / (2.0 * (b.near + b.unsure) as f64).max(0.5), 1.0, "histogram counts moved / (2 x samples within the filter bound of a bin edge or near NaN/Inf)"),
    };
    let note = if b.unsure > 0 { format!("{note}; {} samples near NaN/Inf", b.unsure) } else { note.to_string() };
    CheckRow::new(name, dev, if c.is_finite() { err } else { f64::INFINITY }, tol, note)
}
