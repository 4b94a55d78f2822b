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
}
