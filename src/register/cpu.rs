//! The CPU cost kernel: the reference every device is checked against and the CPU backend.
//!
//! Positions and samples are computed in float32 with the very operations, in the very order,
//! of cl/common/register.h (no fused multiply-add: Rust never contracts, the device header
//! forbids it), so a device's in-kernel trilinear samples, and hence MI/NMI histogram bins,
//! are bit-identical to these. Sums are accumulated in float64 per z slice (x fastest, then y)
//! and the slices' sums added in z order, so the result does not depend on the thread count.
//!
//! Speed (the CPU backend's registrations run this thousands of times): the products
//! m[4r] x of a row are tabled once per evaluation and m[4r+1] y, m[4r+2] z once per row, so
//! a voxel's position costs the three additions of [`map_point`]'s order per coordinate (the
//! same float32 results, bit for bit); the images' slices and strides are taken once, not per
//! voxel; every cost kind has its own monomorphised loop with its sums in registers; and a
//! level too small to pay for waking the pool's threads runs on the calling thread.

use super::cost::{bin, CostKind, CostSpec, Stats};
use super::CostKernels;
use crate::runtime::cpu::{avx2_twin, Cpu};
use crate::runtime::{timing::wall_ms, Timings};
use crate::volume::Volume;
use anyhow::{bail, Result};
use rayon::prelude::*;
use std::sync::Arc;

/// Below this many fixed voxels an evaluation runs on the calling thread: a parallel pass
/// costs more than the work (a few nanoseconds a voxel). Was 16,384 while a registration
/// handed each pass to the pool from outside (a wake-up of a pool thread and then of the
/// caller, 60-90 us on a 2-core VM); since `register` runs on a pool thread (round 38), the
/// 5 mm airwc pair's 24x26x18 level (11 K voxels) took 80-85 ms in parallel against 100 ms on
/// one thread (1,024 gave the same as 4,096).
pub const PARALLEL_MIN_VOXELS: usize = 4_096;

/// Position of fixed voxel (x, y, z) in moving voxel coordinates: row r of `m` applied as
/// ((m0 x + m1 y) + m2 z) + m3, each operation rounded to float32.
#[inline(always)]
pub fn map_point(m: &[f32; 12], x: f32, y: f32, z: f32) -> [f32; 3] {
    std::array::from_fn(|r| m[4 * r] * x + m[4 * r + 1] * y + m[4 * r + 2] * z + m[4 * r + 3])
}

/// Trilinear sample at continuous voxel coordinates (centres at integers), or None when the
/// point is outside the box of voxel centres [0, n - 1]^3 (or not finite).
#[inline(always)]
pub fn sample(data: &[f32], dims: [usize; 3], p: [f32; 3]) -> Option<f32> {
    Sampler::new(data, dims).at(p)
}

/// An image ready for trilinear sampling: its data, sizes and strides taken once.
#[derive(Clone, Copy)]
pub struct Sampler<'a> {
    data: &'a [f32],
    n: [usize; 3],
    /// n - 1 per axis as float32: the last voxel centre.
    hi: [f32; 3],
    /// Strides of y and z, in u32 so that a row's index arithmetic vectorises 8 lanes wide
    /// (usize took two 4-lane halves); `new` checks that every index fits.
    stride: [u32; 2],
}

impl<'a> Sampler<'a> {
    #[inline(always)]
    pub fn new(data: &'a [f32], n: [usize; 3]) -> Sampler<'a> {
        // Axes below 2^24 voxels: hi = n - 1 is exact in float32, so a point inside truncates
        // to at most n - 1 (NIfTI-1's axes stop at 32,767).
        assert!(n.iter().all(|&d| (1..=1 << 24).contains(&d)) && n[0] * n[1] * n[2] <= u32::MAX as usize && data.len() >= n[0] * n[1] * n[2], "sampler: {n:?} voxels, {} values", data.len());
        Sampler { data, n, hi: n.map(|d| (d - 1) as f32), stride: [n[0] as u32, (n[0] * n[1]) as u32] }
    }

    /// See [`sample`].
    #[inline(always)]
    pub fn at(&self, p: [f32; 3]) -> Option<f32> {
        let inside = |a: usize| p[a] >= 0.0 && p[a] <= self.hi[a];
        if !(inside(0) && inside(1) && inside(2)) {
            return None;
        }
        Some(self.at_inside(p))
    }

}

/// The trilinear blend of the corners `v(offset)` of a sample, the offsets made of the steps
/// along x, y and z, in the order of cl/common/register.h: along x, then y, then z.
#[inline(always)]
fn blend(v: impl Fn(u32) -> f32, [sx, sy, sz]: [u32; 3], f: [f32; 3]) -> f32 {
    let lerp = |a: f32, b: f32, t: f32| a + t * (b - a);
    let c00 = lerp(v(0), v(sx), f[0]);
    let c10 = lerp(v(sy), v(sy + sx), f[0]);
    let c01 = lerp(v(sz), v(sz + sx), f[0]);
    let c11 = lerp(v(sz + sy), v(sz + sy + sx), f[0]);
    lerp(lerp(c00, c10, f[1]), lerp(c01, c11, f[1]), f[2])
}

/// The voxel whose cell holds `p` and the fractions of the way past it per axis.
///
/// # Safety
/// Every coordinate of `p` lies in [0, 2^24] (not NaN), so the truncations are in range.
#[inline(always)]
unsafe fn cell(p: [f32; 3]) -> ([u32; 3], [f32; 3]) {
    let k: [u32; 3] = unsafe { [p[0].to_int_unchecked(), p[1].to_int_unchecked(), p[2].to_int_unchecked()] };
    (k, [p[0] - k[0] as f32, p[1] - k[1] as f32, p[2] - k[2] as f32])
}

/// A trilinear sampler of a box of voxel centres [0, hi]^3, for the row sampler.
trait Trilinear {
    fn hi(&self) -> [f32; 3];
    /// The trilinear sample at `p`, which must lie in [0, hi]^3 (not NaN).
    fn at_inside(&self, p: [f32; 3]) -> f32;
}

impl Trilinear for Sampler<'_> {
    #[inline(always)]
    fn hi(&self) -> [f32; 3] {
        self.hi
    }
    #[inline(always)]
    fn at_inside(&self, p: [f32; 3]) -> f32 {
        // SAFETY: 0 <= p <= n - 1 < 2^24 per axis (new() checks the sizes), so the
        // truncations are in range, and base + every offset <= (n0 - 1) + s0 (n1 - 1) +
        // s1 (n2 - 1) = nvox - 1 < min(data.len(), 2^32) (checked in new()): no u32 wraps.
        let (k, f) = unsafe { cell(p) };
        let step = [(k[0] + 1 < self.n[0] as u32) as u32, ((k[1] + 1 < self.n[1] as u32) as u32) * self.stride[0], ((k[2] + 1 < self.n[2] as u32) as u32) * self.stride[1]];
        let base = k[0] + self.stride[0] * k[1] + self.stride[1] * k[2];
        blend(|o: u32| unsafe { *self.data.get_unchecked((base + o) as usize) }, step, f)
    }
}

/// The moving image with one plane more on the high side of each axis, a copy of the last, for
/// the cost's passes: a sample's eight corners then lie at the same offsets from its base voxel
/// wherever it falls, where [`Sampler`] must test each axis for its last voxel (its neighbour
/// there is the voxel itself, which is what the copy holds, so the values, and the samples, are
/// the same bit for bit). Fixed offsets let a row's loads share one address per voxel instead
/// of computing eight.
pub struct Padded {
    data: Vec<f32>,
    hi: [f32; 3],
    /// Strides of y and z in the padded grid (u32, as [`Sampler`]'s).
    stride: [u32; 2],
}

impl Padded {
    pub fn new(v: &Volume) -> Padded {
        let n = v.geom.dims;
        let s = Sampler::new(v.as_flat(), n); // the same size checks
        let (px, py, pz) = (n[0] + 1, n[1] + 1, n[2] + 1);
        assert!(px * py * pz <= u32::MAX as usize, "sampler: {n:?} voxels padded pass 2^32");
        let src = v.as_flat();
        let mut data = vec![0.0f32; px * py * pz];
        data.par_chunks_mut(px * py).enumerate().for_each(|(z, plane)| {
            let zs = z.min(n[2] - 1);
            for (y, row) in plane.chunks_mut(px).enumerate() {
                let from = &src[n[0] * (y.min(n[1] - 1) + n[1] * zs)..][..n[0]];
                row[..n[0]].copy_from_slice(from);
                row[n[0]] = from[n[0] - 1];
            }
        });
        Padded { data, hi: s.hi, stride: [px as u32, (px * py) as u32] }
    }
}

impl Trilinear for Padded {
    #[inline(always)]
    fn hi(&self) -> [f32; 3] {
        self.hi
    }
    #[inline(always)]
    fn at_inside(&self, p: [f32; 3]) -> f32 {
        // SAFETY: 0 <= p <= n - 1 per axis, so k <= n - 1 and base + stride_z + stride_y + 1
        // <= (n0 - 1 + 1) + px (n1 - 1 + 1) + px py (n2 - 1 + 1) = len - 1 < 2^32 (new()).
        let (k, f) = unsafe { cell(p) };
        let [sy, sz] = self.stride;
        let base = k[0] + sy * k[1] + sz * k[2];
        blend(|o: u32| unsafe { *self.data.get_unchecked((base + o) as usize) }, [1, sy, sz], f)
    }
}

/// Samples of one row of fixed voxels: `vals[x]` and `ok[x]` (inside) for the position
/// ((mx[r][x] + c[3r]) + c[3r+1]) + c[3r+2] per coordinate r. Outside points are clamped to
/// voxel 0 and sampled anyway, so the loop has no branch; inside points get exactly
/// [`Sampler::at`]'s arithmetic.
#[inline(always)]
fn sample_row_body<S: Trilinear>(s: &S, mx: &[Vec<f32>; 3], c: [f32; 9], vals: &mut [f32], ok: &mut [bool]) {
    let n = vals.len();
    let hi = s.hi();
    let (mx0, mx1, mx2) = (&mx[0][..n], &mx[1][..n], &mx[2][..n]);
    let ok = &mut ok[..n];
    for x in 0..n {
        let p = row_point([mx0[x], mx1[x], mx2[x]], &c);
        let inside = within(p, hi);
        let q = if inside { p } else { [0.0; 3] };
        ok[x] = inside;
        vals[x] = s.at_inside(q);
    }
}

/// [`sample_row_body`] compiled for AVX2 where the processor has it: the position, test and
/// lerp arithmetic vectorises (1.5-1.7x here on a Zen 3 EPYC; its gathers are no faster than
/// scalar loads, so explicit AVX2 gathers were tried and dropped). No FMA is enabled and Rust
/// never contracts, so every operation still rounds once, as in the scalar code.
fn sample_row(s: &Sampler, mx: &[Vec<f32>; 3], c: [f32; 9], vals: &mut [f32], ok: &mut [bool]) {
    avx2_twin!(sample_row_body, (s: &Sampler, mx: &[Vec<f32>; 3], c: [f32; 9], vals: &mut [f32], ok: &mut [bool]))
}

/// [`sample_row`] through a [`Padded`] image: the same samples.
fn sample_row_padded(s: &Padded, mx: &[Vec<f32>; 3], c: [f32; 9], vals: &mut [f32], ok: &mut [bool]) {
    avx2_twin!(sample_row_body, (s: &Padded, mx: &[Vec<f32>; 3], c: [f32; 9], vals: &mut [f32], ok: &mut [bool]))
}

/// The terms [`sample_row`] adds to m[4r] x for row y of slice z, in map_point's order:
/// ((m0 x + m1 y) + m2 z) + m3.
#[inline(always)]
fn row_terms(m: &[f32; 12], y: usize, z: usize) -> [f32; 9] {
    let (yf, zf) = (y as f32, z as f32);
    [m[1] * yf, m[2] * zf, m[3], m[5] * yf, m[6] * zf, m[7], m[9] * yf, m[10] * zf, m[11]]
}

/// A row's position: the x table's three values plus [`row_terms`], in map_point's order. The
/// samplers and [`nearest_into`] share it, so both interpolations see the same positions.
#[inline(always)]
fn row_point(mx: [f32; 3], c: &[f32; 9]) -> [f32; 3] {
    [mx[0] + c[0] + c[1] + c[2], mx[1] + c[3] + c[4] + c[5], mx[2] + c[6] + c[7] + c[8]]
}

/// Whether `p` lies in the box of voxel centres 0..=hi (no branch: the row loop vectorises).
#[inline(always)]
fn within(p: [f32; 3], hi: [f32; 3]) -> bool {
    (p[0] >= 0.0) & (p[0] <= hi[0]) & (p[1] >= 0.0) & (p[1] <= hi[1]) & (p[2] >= 0.0) & (p[2] <= hi[2])
}

/// m[4r] x for every x of a row of `nx`, r = 0, 1, 2.
fn x_table(m: &[f32; 12], nx: usize) -> [Vec<f32>; 3] {
    std::array::from_fn(|r| (0..nx).map(|x| m[4 * r] * x as f32).collect())
}

/// The moving image sampled at every voxel of a fixed grid of `dims` through the voxel map
/// `m`, 0 outside (not finite where a sample reads a non-finite voxel): the same values as
/// [`map_point`] and [`sample`] voxel by voxel, row by row
/// through [`sample_row`] (on every core; a 1 mm brain on 2 cores 175 -> 58 ms against voxel
/// by voxel).
pub fn resample(moving: &Volume, dims: [usize; 3], m: &[f32; 12]) -> Vec<f32> {
    let mut out = vec![0.0f32; dims.iter().product()];
    resample_into(moving.as_flat(), moving.geom.dims, m, dims, &mut out);
    out
}

/// [`resample`] of one volume's voxels `data` (a grid of `n`) into `out` (a grid of `dims`).
pub fn resample_into(data: &[f32], n: [usize; 3], m: &[f32; 12], dims: [usize; 3], out: &mut [f32]) {
    let [nx, ny, _] = dims;
    let s = Sampler::new(data, n);
    let mx = x_table(m, nx);
    out.par_chunks_mut((nx * ny).max(1)).enumerate().for_each(|(z, slab)| linear_slab(&s, &mx, m, nx, z, slab));
}

/// Slab `z` (rows of `nx`) of [`resample_into`].
fn linear_slab(s: &Sampler, mx: &[Vec<f32>; 3], m: &[f32; 12], nx: usize, z: usize, slab: &mut [f32]) {
    let mut ok = vec![false; nx];
    for (y, row) in slab.chunks_mut(nx).enumerate() {
        sample_row(s, mx, row_terms(m, y, z), row, &mut ok);
        for (v, &o) in row.iter_mut().zip(&ok) {
            if !o {
                *v = 0.0;
            }
        }
    }
}

/// Slab `z` (a plane of `dims`) of [`resample_into`], or of [`nearest_into`] with `nearest`,
/// alone on the calling thread: the same values as the whole volume's pass.
pub fn slab_into(data: &[f32], n: [usize; 3], m: &[f32; 12], dims: [usize; 3], z: usize, nearest: bool, slab: &mut [f32]) {
    let mx = x_table(m, dims[0]);
    if nearest {
        nearest_slab(data, n, &mx, m, dims[0], z, slab);
    } else {
        linear_slab(&Sampler::new(data, n), &mx, m, dims[0], z, slab);
    }
}

/// The moving voxel nearest each fixed voxel's position through `m`, its value as it is (a
/// label stays that label), into `out`. The positions and the inside test are
/// [`resample_into`]'s, so both interpolations fill the same voxels (0 outside the box of
/// voxel centres); a position halfway between two centres takes the higher index.
pub fn nearest_into(data: &[f32], n: [usize; 3], m: &[f32; 12], dims: [usize; 3], out: &mut [f32]) {
    let [nx, ny, _] = dims;
    let mx = x_table(m, nx);
    out.par_chunks_mut((nx * ny).max(1)).enumerate().for_each(|(z, slab)| nearest_slab(data, n, &mx, m, nx, z, slab));
}

/// Slab `z` (rows of `nx`) of [`nearest_into`].
fn nearest_slab(data: &[f32], n: [usize; 3], mx: &[Vec<f32>; 3], m: &[f32; 12], nx: usize, z: usize, slab: &mut [f32]) {
    assert!(data.len() >= n.iter().product::<usize>(), "nearest: {n:?} voxels, {} values", data.len());
    let hi = n.map(|d| d.saturating_sub(1) as f32);
    for (y, row) in slab.chunks_mut(nx).enumerate() {
        let c = row_terms(m, y, z);
        for (x, v) in row.iter_mut().enumerate() {
            let p = row_point([mx[0][x], mx[1][x], mx[2][x]], &c);
            *v = if within(p, hi) {
                // 0 <= p <= n - 1, an integer: the rounded index is a voxel (round is exact,
                // where q + 0.5 could round up to the next integer from just below a half).
                let k = p.map(|q| q.round() as usize);
                data[k[0] + n[0] * (k[1] + n[1] * k[2])]
            } else {
                0.0
            };
        }
    }
}

/// One evaluation's invariants: the fixed image, the moving sampler, the map and its x table.
struct Pass<'a> {
    fixed: &'a [f32],
    dims: [usize; 3],
    moving: &'a Padded,
    m: &'a [f32; 12],
    /// m[4r] x for every x of a row, r = 0, 1, 2.
    mx: [Vec<f32>; 3],
}

impl Pass<'_> {
    /// Calls `f(fixed value, sample)` for every voxel of slice z whose value is finite and
    /// whose sample is inside and finite, in x then y order; returns how many were and how many
    /// voxels had a finite value (the slice's `total`: cost.rs's rule for NaN/Inf). A row is
    /// sampled first, branch-free (see [`sample_row`]), then reduced.
    #[inline(always)]
    fn scan(&self, z: usize, mut f: impl FnMut(f32, f32)) -> (u64, u64) {
        let [nx, ny, _] = self.dims;
        let (mut inside, mut total) = (0, 0);
        let mut vals = vec![0.0f32; nx];
        let mut ok = vec![false; nx];
        for y in 0..ny {
            sample_row_padded(self.moving, &self.mx, row_terms(self.m, y, z), &mut vals, &mut ok);
            let row = &self.fixed[nx * (y + ny * z)..][..nx];
            // The finiteness tests in passes of their own, which vectorise: folded into the
            // reduction below they made it twice as slow (bench register, 2-core EPYC).
            total += row.iter().map(|v| v.is_finite() as u64).sum::<u64>();
            for ((o, &fv), &v) in ok.iter_mut().zip(row).zip(&vals) {
                *o &= fv.is_finite() & v.is_finite();
            }
            for ((&fv, &v), &o) in row.iter().zip(&vals).zip(&ok) {
                if o {
                    inside += 1;
                    f(fv, v);
                }
            }
        }
        (inside, total)
    }

    fn slice(&self, spec: &CostSpec, z: usize) -> Stats {
        let mut s = Stats::default();
        match spec.kind() {
            CostKind::Sad => {
                let mut a = 0.0f64;
                (s.inside, s.total) = self.scan(z, |fv, mv| a += (fv - mv).abs() as f64);
                s.sums[0] = a;
            }
            CostKind::Ssd => {
                let mut a = 0.0f64;
                (s.inside, s.total) = self.scan(z, |fv, mv| a += ((fv - mv) as f64).powi(2));
                s.sums[0] = a;
            }
            CostKind::Ncc => {
                let mut t = [0.0f64; 5];
                (s.inside, s.total) = self.scan(z, |fv, mv| {
                    let (a, b) = ((fv - spec.fixed_shift) as f64, (mv - spec.moving_shift) as f64);
                    t[0] += a;
                    t[1] += b;
                    t[2] += a * a;
                    t[3] += b * b;
                    t[4] += a * b;
                });
                s.sums = t;
            }
            CostKind::Mi | CostKind::Nmi => {
                let b = spec.bins;
                let mut h = vec![0u32; (b * b) as usize];
                (s.inside, s.total) = self.scan(z, |fv, mv| {
                    let i = bin(fv, spec.fixed_lo, spec.fixed_inv_width, b);
                    let j = bin(mv, spec.moving_lo, spec.moving_inv_width, b);
                    h[(i * b + j) as usize] += 1;
                });
                s.hist = h;
            }
        }
        s
    }
}

fn merge(mut a: Stats, b: Stats) -> Stats {
    a.inside += b.inside;
    a.total += b.total;
    for k in 0..5 {
        a.sums[k] += b.sums[k];
    }
    if a.hist.is_empty() {
        a.hist = b.hist;
    } else {
        for (x, y) in a.hist.iter_mut().zip(&b.hist) {
            *x += y;
        }
    }
    a
}

/// One evaluation on the calling rayon pool (or the calling thread for a small image: same
/// result, see [`PARALLEL_MIN_VOXELS`]).
pub fn evaluate(fixed: &Volume, moving: &Volume, spec: &CostSpec, m: &[f32; 12]) -> Stats {
    evaluate_padded(fixed, &Padded::new(moving), spec, m)
}

/// [`evaluate`] with the moving image already padded (made once per level by [`CpuCost`]).
fn evaluate_padded(fixed: &Volume, moving: &Padded, spec: &CostSpec, m: &[f32; 12]) -> Stats {
    let dims = fixed.geom.dims;
    let pass = Pass { fixed: fixed.as_flat(), dims, moving, m, mx: x_table(m, dims[0]) };
    let slices: Vec<Stats> = if fixed.nvox() < PARALLEL_MIN_VOXELS {
        (0..dims[2]).map(|z| pass.slice(spec, z)).collect()
    } else {
        (0..dims[2]).into_par_iter().map(|z| pass.slice(spec, z)).collect()
    };
    // In z order whatever the threads: the same float64 sums on any pool.
    slices.into_iter().fold(Stats::default(), merge)
}

pub struct CpuCost {
    cpu: Arc<Cpu>,
    images: Option<(Volume, Padded, CostSpec)>,
    timings: Timings,
}

impl CpuCost {
    pub fn new(cpu: Arc<Cpu>) -> CpuCost {
        CpuCost { cpu, images: None, timings: Timings::default() }
    }
}

impl CostKernels for CpuCost {
    fn load(&mut self, fixed: &Volume, moving: &Volume, spec: &CostSpec) -> Result<()> {
        self.images = Some((fixed.clone(), Padded::new(moving), *spec));
        Ok(())
    }
    fn evaluate(&mut self, m: &[f32; 12]) -> Result<Stats> {
        Ok(self.evaluate_many(std::slice::from_ref(m))?.pop().expect("one map, one result"))
    }
    /// The maps of a lockstep round side by side on the pool, each evaluated as alone (a large
    /// level's slices in parallel within it, rayon nesting the two), so a small level, whose
    /// single evaluation runs on one thread, uses as many threads as the round has maps.
    fn evaluate_many(&mut self, maps: &[[f32; 12]]) -> Result<Vec<Stats>> {
        let Some((f, mv, spec)) = &self.images else { bail!("register: evaluate before load") };
        // A lone map of a small level runs on this thread: handing it to the pool would cost
        // more than it.
        let here = maps.len() == 1 && f.nvox() < PARALLEL_MIN_VOXELS;
        let (s, ms) = wall_ms(|| if here { vec![evaluate_padded(f, mv, spec, &maps[0])] } else { self.cpu.install(|| maps.par_iter().map(|m| evaluate_padded(f, mv, spec, m)).collect()) });
        self.timings.kernel_ms += ms;
        Ok(s)
    }
    fn take_timings(&mut self) -> Timings {
        std::mem::take(&mut self.timings)
    }
    fn variant(&self) -> &'static str {
        "native"
    }
    fn pool(&self) -> Option<Arc<Cpu>> {
        Some(self.cpu.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::register::check::{random_map, random_volume};
    use rand::Rng;

    /// The padded image's samples are [`Sampler::at`]'s bit for bit: at random points, at
    /// whole voxel coordinates up to the last voxel of each axis (where the padding is read),
    /// and beside infinite and NaN voxels (which a copied plane must carry as the last did).
    #[test]
    fn padded_samples_are_the_samplers() {
        let seed = rand::random::<u64>();
        let mut r = crate::synth::rng(seed);
        let n = [9, 7, 5];
        let mut v = random_volume(n, &mut r);
        let last = n[0] * n[1] * n[2] - 1;
        v.as_flat_mut()[last] = f32::INFINITY;
        v.as_flat_mut()[n[0] - 1] = f32::NAN;
        let (s, p) = (Sampler::new(v.as_flat(), n), Padded::new(&v));
        let mut points: Vec<[f32; 3]> = (0..2000).map(|_| std::array::from_fn(|a| r.random_range(0.0..=(n[a] - 1) as f32))).collect();
        for z in 0..n[2] {
            for y in 0..n[1] {
                for x in 0..n[0] {
                    points.push([x as f32, y as f32, z as f32]);
                }
            }
        }
        for q in points {
            let (want, got) = (s.at(q).expect("inside"), p.at_inside(q));
            assert!(want.to_bits() == got.to_bits() || (want.is_nan() && got.is_nan()), "{q:?}: {got} against {want} (seed {seed})");
        }
    }

    /// The row-wise warp gives every voxel the value of the definition, voxel by voxel
    /// (map_point, then sample; 0 outside), bit for bit, with some voxels mapped outside.
    #[test]
    fn resample_is_the_voxel_by_voxel_warp() {
        let seed = rand::random::<u64>();
        let mut r = crate::synth::rng(seed);
        let moving = random_volume([23, 19, 17], &mut r);
        let dims = [21, 18, 15];
        let mut m = random_map(&mut r);
        m[3] = -5.0; // the x = 0 face maps outside (|m1 y + m2 z| < 3.2), x = 10 inside
        let got = resample(&moving, dims, &m);
        let (mut outside, mut differ) = (0, 0);
        for z in 0..dims[2] {
            for y in 0..dims[1] {
                for x in 0..dims[0] {
                    let want = sample(moving.as_flat(), moving.geom.dims, map_point(&m, x as f32, y as f32, z as f32));
                    outside += want.is_none() as usize;
                    differ += (got[x + dims[0] * (y + dims[1] * z)].to_bits() != want.unwrap_or(0.0).to_bits()) as usize;
                }
            }
        }
        assert_eq!(differ, 0, "{differ} voxels differ (seed {seed}, map {m:?})");
        assert!(outside > 0 && outside < got.len(), "{outside} of {} outside: both kinds of voxel must be tested", got.len());
        let nan = resample(&moving, dims, &[f32::NAN; 12]);
        assert!(nan.iter().all(|&v| v == 0.0), "a map that is not finite samples nothing");
    }
}
