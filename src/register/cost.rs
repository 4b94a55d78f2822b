//! The cost functions and what a device returns for one evaluation.
//!
//! For every voxel of the fixed image, its centre is mapped through the current transform into
//! the moving image and the moving image is sampled there by trilinear interpolation. A sample
//! whose position lies outside the box of the moving image's voxel centres (any coordinate
//! below 0 or above n - 1, or not finite) is excluded and counted: the cost is computed over
//! the overlap alone and normalised by its size, so moving the images apart is not rewarded by
//! a smaller sum. When the overlap falls below [`MIN_OVERLAP`] of the fixed voxels the cost is
//! [`NO_OVERLAP_COST`], worse than any real cost, so the simplex walks back.
//!
//! NaN and infinite voxels (a scanner's or a tool's "no data", as FSL and ANTs read them) are
//! left out, not read as 0, which is a real intensity (background) and made a holed brain
//! register worse. A fixed voxel whose value is not finite is not part of the fixed image: it
//! adds nothing and is not counted in `total`. A sample whose trilinear interpolation reads a
//! non-finite moving voxel (any of its 8 corners, even at weight 0: the blend a + t (b - a)
//! is then not finite) is treated as outside: counted in `total`, not in `inside`, nothing
//! added. So the kernels test only the finished values, once the fixed value and once the
//! sample, which every backend does identically. The cost is then normalised by the overlap
//! and [`MIN_OVERLAP`] compares `inside` with that `total`. Whatever else derives from the
//! images' values ignores non-finite voxels too: the shifts and bins of [`CostSpec`], the
//! centres of mass and the pyramid's block means (pyramid.rs). The warped output is not a
//! cost: it holds NaN (or Inf) where its sample reads a non-finite moving voxel.
//!
//! A device returns [`Stats`]: a few sums (reduced on the device) or, for MI/NMI, the joint
//! histogram of integer counts; [`Stats::cost`] turns them into the number minimised.

use anyhow::{bail, Result};

/// Fraction of the fixed voxels that must overlap the moving image.
pub const MIN_OVERLAP: f64 = 0.05;
/// The cost of a transform with too little overlap.
pub const NO_OVERLAP_COST: f64 = 1e30;
/// Joint-histogram bins per image for MI and NMI.
pub const BINS: usize = 32;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum CostKind {
    /// Mean absolute difference over the overlap (002's cost)
    Sad,
    /// Mean squared difference over the overlap
    Ssd,
    /// 1 - Pearson correlation over the overlap (002's second test)
    Ncc,
    /// Minus the mutual information (nats) of the joint histogram
    Mi,
    /// Minus the normalised mutual information (H(F) + H(M)) / H(F, M)
    Nmi,
}

impl CostKind {
    pub const ALL: [CostKind; 5] = [CostKind::Sad, CostKind::Ssd, CostKind::Ncc, CostKind::Mi, CostKind::Nmi];
    pub fn name(self) -> &'static str {
        match self {
            CostKind::Sad => "sad",
            CostKind::Ssd => "ssd",
            CostKind::Ncc => "ncc",
            CostKind::Mi => "mi",
            CostKind::Nmi => "nmi",
        }
    }
    /// Device-side selector (the `cost` argument of the kernels).
    pub fn code(self) -> i32 {
        self as i32
    }
    pub fn uses_histogram(self) -> bool {
        matches!(self, CostKind::Mi | CostKind::Nmi)
    }
}

/// What the kernels need besides the images: the cost, the shifts subtracted before the NCC
/// sums (the images' means, so the single-precision sums on a device do not cancel), and the
/// histogram's intensity bins. Bin of a value v: `(int)((v - lo) * inv_width)` computed in
/// float32, clamped to [0, BINS - 1]; one subtraction and one multiplication, both correctly
/// rounded, so the CPU and every device give the same bin for the same float.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CostSpec {
    pub cost: i32,
    pub bins: i32,
    pub fixed_shift: f32,
    pub moving_shift: f32,
    pub fixed_lo: f32,
    pub fixed_inv_width: f32,
    pub moving_lo: f32,
    pub moving_inv_width: f32,
    /// Whether either image holds a NaN/Inf voxel: a device then runs the kernels that test
    /// for them (register.h NP_REG_NONFINITE), which finite images need not pay for (2-8 % of
    /// a lone evaluation on the H200: docs/performance.md, registration round 36). Images
    /// derived from these (pyramid levels, lattices) hold non-finite voxels only where these
    /// do, so the flag holds for them too. Not passed to the kernels (gpu.rs KernelSpec): the
    /// program chosen is the test.
    pub nonfinite: bool,
}

impl CostSpec {
    /// The spec for a pair of images (their full-resolution finite values, so every pyramid
    /// level shares the same bins).
    pub fn new(kind: CostKind, fixed: &[f32], moving: &[f32]) -> Result<CostSpec> {
        if fixed.is_empty() || moving.is_empty() {
            bail!("an image is empty");
        }
        let (Some((flo, fhi, fmean, fn_)), Some((mlo, mhi, mmean, mn))) = rayon::join(|| summary(fixed), || summary(moving)) else {
            bail!("an image holds no finite value");
        };
        let inv = |lo: f32, hi: f32| if hi > lo { BINS as f32 / (hi - lo) } else { 0.0 };
        Ok(CostSpec {
            cost: kind.code(),
            bins: BINS as i32,
            fixed_shift: fmean,
            moving_shift: mmean,
            fixed_lo: flo,
            fixed_inv_width: inv(flo, fhi),
            moving_lo: mlo,
            moving_inv_width: inv(mlo, mhi),
            nonfinite: fn_ < fixed.len() || mn < moving.len(),
        })
    }
    pub fn kind(&self) -> CostKind {
        CostKind::ALL[self.cost as usize]
    }
}

/// Minimum, maximum and mean of the finite values of `v` (NaN/Inf voxels are not part of the
/// image: module notes), on every core: fixed pieces summed in order, so the mean's bits do not
/// depend on the thread count; and how many values are finite. None when none is.
fn summary(v: &[f32]) -> Option<(f32, f32, f32, usize)> {
    use rayon::prelude::*;
    const PIECE: usize = 1 << 16;
    type Part = (f32, f32, f64, u64);
    let none: Part = (f32::INFINITY, f32::NEG_INFINITY, 0.0, 0);
    let parts: Vec<Part> = v
        .par_chunks(PIECE)
        .map(|c| c.iter().filter(|x| x.is_finite()).fold(none, |(lo, hi, s, n), &x| (lo.min(x), hi.max(x), s + x as f64, n + 1)))
        .collect();
    let (lo, hi, sum, n) = parts.iter().fold(none, |(lo, hi, s, n), p| (lo.min(p.0), hi.max(p.1), s + p.2, n + p.3));
    (n > 0).then(|| (lo, hi, (sum / n as f64) as f32, n as usize))
}

/// Histogram bin of `v` (see [`CostSpec`]); the device computes the same in cl/common/register.h.
#[inline(always)]
pub fn bin(v: f32, lo: f32, inv_width: f32, bins: i32) -> i32 {
    let t = (v - lo) * inv_width;
    (t as i32).clamp(0, bins - 1)
}

/// One evaluation's result. `sums` holds, over the overlap, with a = fixed - fixed_shift and
/// b = sample - moving_shift: SAD [sum |a' - b'| on unshifted values], SSD [sum (f - m)^2],
/// NCC [sum a, sum b, sum a^2, sum b^2, sum ab]; `hist[i * bins + j]` counts samples with fixed
/// bin i and moving bin j (MI/NMI on the CPU). A GPU turns its histogram into entropies itself
/// and returns MI/NMI as `hist` empty and sums [H(F), H(M), H(F,M)] (nats).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stats {
    pub inside: u64,
    pub total: u64,
    pub sums: [f64; 5],
    pub hist: Vec<u32>,
}

impl Stats {
    /// The number minimised.
    pub fn cost(&self, kind: CostKind) -> f64 {
        let n = self.inside as f64;
        if self.inside == 0 || n < MIN_OVERLAP * self.total as f64 {
            return NO_OVERLAP_COST;
        }
        let s = &self.sums;
        match kind {
            CostKind::Sad | CostKind::Ssd => s[0] / n,
            CostKind::Ncc => {
                let (ma, mb) = (s[0] / n, s[1] / n);
                let va = s[2] / n - ma * ma;
                let vb = s[3] / n - mb * mb;
                let cov = s[4] / n - ma * mb;
                if va <= 0.0 || vb <= 0.0 { 1.0 } else { 1.0 - cov / (va * vb).sqrt() }
            }
            CostKind::Mi | CostKind::Nmi => {
                let (hf, hm, hj) = if self.hist.is_empty() { (s[0], s[1], s[2]) } else { entropies(&self.hist) };
                if kind == CostKind::Mi { -(hf + hm - hj) } else if hj > 0.0 { -(hf + hm) / hj } else { -1.0 }
            }
        }
    }
}

/// Marginal and joint entropies (nats) of a square joint histogram.
pub fn entropies(hist: &[u32]) -> (f64, f64, f64) {
    let b = (hist.len() as f64).sqrt().round() as usize;
    let total: f64 = hist.iter().map(|&c| c as f64).sum();
    if total == 0.0 || b * b != hist.len() {
        return (0.0, 0.0, 0.0);
    }
    let h = |c: f64| if c > 0.0 { -(c / total) * (c / total).ln() } else { 0.0 };
    let mut pf = vec![0.0; b];
    let mut pm = vec![0.0; b];
    let mut hj = 0.0;
    for i in 0..b {
        for j in 0..b {
            let c = hist[i * b + j] as f64;
            pf[i] += c;
            pm[j] += c;
            hj += h(c);
        }
    }
    (pf.into_iter().map(h).sum(), pm.into_iter().map(h).sum(), hj)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The spec says when either image holds a NaN or infinite value, so a device runs the
    /// kernels that test for them, and only then.
    #[test]
    fn spec_flags_nonfinite_images() {
        let a: Vec<f32> = (0..100).map(|i| i as f32).collect();
        let flag = |f: &[f32], m: &[f32]| CostSpec::new(CostKind::Ncc, f, m).unwrap().nonfinite;
        assert!(!flag(&a, &a));
        for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            let mut b = a.clone();
            b[37] = bad;
            assert_eq!((flag(&b, &a), flag(&a, &b)), (true, true), "{bad}");
        }
    }

    #[test]
    fn ncc_of_a_linear_map_is_perfect_and_overlap_is_enforced() {
        let mut s = Stats { inside: 0, total: 4, ..Default::default() };
        for (a, b) in [(1.0, 3.0), (2.0, 5.0), (4.0, 9.0)] {
            s.inside += 1;
            s.sums[0] += a;
            s.sums[1] += b;
            s.sums[2] += a * a;
            s.sums[3] += b * b;
            s.sums[4] += a * b;
        }
        assert!(s.cost(CostKind::Ncc).abs() < 1e-12);
        s.total = 100;
        assert_eq!(s.cost(CostKind::Ncc), NO_OVERLAP_COST);
    }

    #[test]
    fn mi_of_identical_images_is_their_entropy() {
        let b = 4;
        let mut hist = vec![0u32; b * b];
        for i in 0..b {
            hist[i * b + i] = 10;
        }
        let s = Stats { inside: 40, total: 40, hist, ..Default::default() };
        let h = (4f64).ln();
        assert!((s.cost(CostKind::Mi) + h).abs() < 1e-12);
        assert!((s.cost(CostKind::Nmi) + 2.0).abs() < 1e-12);
        assert_eq!(bin(1.0, 0.0, 4.0, 4), 3);
        assert_eq!(bin(-0.1, 0.0, 4.0, 4), 0);
    }
}
