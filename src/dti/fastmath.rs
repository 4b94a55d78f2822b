//! Branch-free exp and ln for the CPU fit's inner loops. libm's f64 exp/ln dominate a voxel's
//! weighted least-squares fit (two per measurement). These reach ~1e-11 relative error, far
//! below the fit's needs, and use only operations that vectorise (no float<->int conversions:
//! the exponent moves through the bits of a shifted float), so loops over measurements become
//! SIMD code.

const LN2: f64 = std::f64::consts::LN_2;
/// 1.5 * 2^52: adding it rounds to an integer held in the low mantissa bits.
const SHIFT: f64 = 6755399441055744.0;

/// e^x for |x| < 700.
#[inline(always)]
pub fn exp(x: f64) -> f64 {
    let x = x.clamp(-700.0, 700.0);
    let t = x * std::f64::consts::LOG2_E + SHIFT;
    let k = t - SHIFT;
    let r = x - k * LN2; // |r| <= ln2/2
    // Taylor series of e^r to r^9: truncation < 1e-11 on |r| <= 0.347
    let mut p = 1.0 / 362880.0;
    p = p * r + 1.0 / 40320.0;
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    // k as a two's-complement integer is t's bits minus SHIFT's bits
    let ki = t.to_bits().wrapping_sub(SHIFT.to_bits());
    p * f64::from_bits(ki.wrapping_add(1023) << 52)
}

/// ln x for positive normal x.
#[inline(always)]
pub fn ln(x: f64) -> f64 {
    let bits = x.to_bits();
    let m0 = f64::from_bits((bits & 0x000f_ffff_ffff_ffff) | 0x3ff0_0000_0000_0000); // [1, 2)
    let big = m0 > std::f64::consts::SQRT_2;
    let m = if big { m0 * 0.5 } else { m0 };
    // biased exponent -> float without an int conversion: 2^52 + e, minus 2^52
    let ebits = (bits >> 52) & 0x7ff;
    let e = f64::from_bits(0x4330_0000_0000_0000 | ebits) - 4503599627370496.0 - 1023.0 + if big { 1.0 } else { 0.0 };
    let s = (m - 1.0) / (m + 1.0); // |s| <= 0.172
    let s2 = s * s;
    // 2 atanh(s) = 2 (s + s^3/3 + s^5/5 + ...), to s^11: truncation < 1e-11
    let mut p = 1.0 / 11.0;
    p = p * s2 + 1.0 / 9.0;
    p = p * s2 + 1.0 / 7.0;
    p = p * s2 + 1.0 / 5.0;
    p = p * s2 + 1.0 / 3.0;
    p = p * s2 + 1.0;
    2.0 * s * p + e * LN2
}

/// e^x in f32, about 2 ulp, for x clamped to [-86, 88]: the same construction as `exp` in
/// single precision (Taylor to r^7, ln 2 split in two), for the bedpost chains' float32
/// arithmetic, where it is 1.4x faster than `exp` through f64 and libm's expf was two thirds
/// of a chain's time.
#[inline(always)]
pub fn exp_f32(x: f32) -> f32 {
    const SHIFT: f32 = 12_582_912.0; // 1.5 * 2^23: adding it rounds to an integer in the low bits
    let x = x.clamp(-86.0, 88.0);
    let t = x * std::f32::consts::LOG2_E + SHIFT;
    let k = t - SHIFT;
    let r = (x - k * 0.693_145_75) - k * 1.428_606_8e-6; // ln 2 split in two, |r| <= ln2 / 2
    // Taylor series of e^r to r^7 (truncation < 6e-9 on |r| <= 0.347), by Horner from the top
    const C: [f32; 8] = [1.0 / 5040.0, 1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0];
    let mut p = C[0];
    for c in &C[1..] {
        p = p * r + c;
    }
    let ki = t.to_bits().wrapping_sub(SHIFT.to_bits()) as i32;
    f32::from_bits((p.to_bits() as i32).wrapping_add(ki << 23) as u32)
}

#[cfg(test)]
mod tests {
    #[test]
    fn matches_libm() {
        for i in 0..20000 {
            let x = -30.0 + i as f64 * 0.003;
            let (a, b) = (super::exp(x), x.exp());
            assert!(((a - b) / b).abs() < 1e-10, "exp({x}) = {a}, libm {b}");
            let y = 1e-6 * (1.0 + i as f64 * 0.37).powf(1.7);
            let (a, b) = (super::ln(y), y.ln());
            assert!((a - b).abs() < 1e-10 * b.abs().max(1.0), "ln({y}) = {a}, libm {b}");
        }
    }

    #[test]
    fn exp_f32_is_within_a_few_ulp() {
        let mut worst = 0.0f64;
        let mut x = -86.0f32;
        while x < 88.0 {
            let want = (x as f64).exp();
            worst = worst.max(((super::exp_f32(x) as f64) - want).abs() / want);
            x += 0.0137;
        }
        assert!(worst < 3e-7, "worst relative error {worst:e}");
        assert_eq!(super::exp_f32(0.0), 1.0);
        assert!(super::exp_f32(-1000.0) > 0.0 && super::exp_f32(-1000.0) < 1e-37);
    }
}
