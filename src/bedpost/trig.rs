//! sin and cos together in f64 for the angles of sticks: bedpost's summaries and probtrack's
//! records turn every sample's (theta, phi) into a direction, 72 M sincos calls on the issue-7
//! volume, where glibc's `sincos` took 55 % of the summaries' time (~25 ns a call here).
//!
//! Cody-Waite reduction by pi/2 in three parts (the first two exact products for |k| < 2^20),
//! then Taylor polynomials on [-pi/4, pi/4] (to x^17 and x^18: the first term left out is below
//! 1e-19). The error is about one ulp of 1: the last add's rounding (half an ulp of a result
//! below 1), the tail's (|r^3/6| < 0.09, a few roundings of its own) and the reduction's (half
//! an ulp of r); the directions' sums feed f32 outputs, whose ulp is 2^29 times larger.

use std::f64::consts::{FRAC_2_PI, FRAC_PI_2};

/// pi/2 to 33 bits, so k * PIO2_HI is exact for |k| < 2^20.
const PIO2_HI: f64 = f64::from_bits(FRAC_PI_2.to_bits() & !((1 << 20) - 1));
/// The rest of f64's pi/2 (20 bits: exact products too).
const PIO2_MID: f64 = FRAC_PI_2 - PIO2_HI;
/// pi/2 beyond f64's FRAC_PI_2 (f64's cos(FRAC_PI_2)).
const PIO2_LO: f64 = 6.123233995736766e-17;
/// Where the reduction's exact products end; past it (and for non-finite values) glibc's.
const LIMIT: f64 = 5.0e5;

/// sin(r) and cos(r) for |r| <= pi/4 (a little more after rounding). Estrin's scheme in z = r^2:
/// the terms' products side by side, not one long chain of dependent multiply-adds.
#[inline(always)]
fn kernel(r: f64) -> (f64, f64) {
    let z = r * r;
    let (z2, z4) = (z * z, (z * z) * (z * z));
    // sin r = r + r z (s0 + s1 z + ... + s7 z^7), s_i = (-1)^(i+1) / (2i + 3)!
    let p0 = (-1.0 / 6.0 + z * (1.0 / 120.0)) + z2 * (-1.0 / 5040.0 + z * (1.0 / 362_880.0));
    let p1 = (-1.0 / 39_916_800.0 + z * (1.0 / 6_227_020_800.0)) + z2 * (-1.0 / 1_307_674_368_000.0 + z * (1.0 / 355_687_428_096_000.0));
    let s = r + (r * z) * (p0 + z4 * p1);
    // cos r = 1 - z/2 + z^2 (c0 + c1 z + ... + c7 z^7), c_i = (-1)^i / (2i + 4)!
    let q0 = (1.0 / 24.0 + z * (-1.0 / 720.0)) + z2 * (1.0 / 40_320.0 + z * (-1.0 / 3_628_800.0));
    let q1 = (1.0 / 479_001_600.0 + z * (-1.0 / 87_178_291_200.0)) + z2 * (1.0 / 20_922_789_888_000.0 + z * (-1.0 / 6_402_373_705_728_000.0));
    let c = (1.0 - 0.5 * z) + z2 * (q0 + z4 * q1);
    (s, c)
}

/// True where [`sincos_reduced`] holds: finite and below the reduction's limit.
#[inline(always)]
pub fn in_range(x: f64) -> bool {
    x.abs() < LIMIT
}

/// (sin x, cos x) for `in_range(x)`, without branches (so that loops over many angles vectorise).
#[inline(always)]
pub fn sincos_reduced(x: f64) -> (f64, f64) {
    // Rounded to the nearest integer by adding and taking away 1.5 * 2^52 (exact below 2^51).
    const ROUND: f64 = 6_755_399_441_055_744.0;
    let k = (x * FRAC_2_PI + ROUND) - ROUND;
    let r = ((x - k * PIO2_HI) - k * PIO2_MID) - k * PIO2_LO;
    let (s, c) = kernel(r);
    // x = r + k pi/2: quadrant q = k mod 4 swaps sin and cos where odd, and sets the signs.
    let q = k as i32;
    let (a, b) = if q & 1 != 0 { (c, s) } else { (s, c) };
    (if q & 2 != 0 { -a } else { a }, if (q + 1) & 2 != 0 { -b } else { b })
}

/// (sin x, cos x).
#[inline]
pub fn sincos(x: f64) -> (f64, f64) {
    if in_range(x) {
        sincos_reduced(x)
    } else {
        (x.sin(), x.cos())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    /// Against glibc's sin and cos (within half an ulp of the exact value): within 2 ulp of 1
    /// (ours about one, above, and glibc's half) on fresh random angles from f32 (as the samples
    /// are), near multiples of pi/2 (where the reduction cancels most), and past the limit.
    #[test]
    fn agrees_with_libm() {
        let (seed, mut rng) = crate::synth::fresh_rng();
        let tol = 2.0 * f64::EPSILON;
        let mut xs: Vec<f64> = (0..200_000).map(|_| rng.random_range(-60.0f32..60.0) as f64).collect();
        xs.extend((0..2000).map(|_| (rng.random_range(-200i32..200) as f64 * FRAC_PI_2) as f32 as f64));
        xs.extend((0..2000).map(|_| rng.random_range(-1e-6f32..1e-6) as f64));
        xs.extend([0.0, -0.0, 1e6, -3e7, std::f64::consts::FRAC_PI_4, 4.0e5]);
        for x in xs {
            let (s, c) = sincos(x);
            assert!((s - x.sin()).abs() <= tol && (c - x.cos()).abs() <= tol, "seed {seed}: x = {x:e}: ({s:e}, {c:e}) against ({:e}, {:e})", x.sin(), x.cos());
        }
        let (s, c) = sincos(f64::NAN);
        assert!(s.is_nan() && c.is_nan());
    }

    /// Small angles keep their relative accuracy (sin x ~ x): the absolute bound above says
    /// nothing there.
    #[test]
    fn small_angles_relative() {
        for x in [1e-3, 1e-8, 1e-20, 3e-300] {
            let (s, c) = sincos(x);
            assert!(((s - x.sin()) / x.sin()).abs() <= 2.0 * f64::EPSILON, "{x:e}: sin {s:e}");
            assert!((c - x.cos()).abs() <= f64::EPSILON, "{x:e}: cos {c}");
        }
    }
}
