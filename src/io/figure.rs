//! Numbers in summary lines.

/// `x` with `decimals` decimals, or with as many more as give it two significant digits where
/// those would show fewer: fibres of 0.01 mm voxels averaging 0.012 mm were "mean length
/// 0.0 mm". Values of 10^(1 - decimals) and more (1 mm and more at one decimal) print as
/// `{:.decimals$}` always did.
pub fn figure(x: f64, decimals: usize) -> String {
    let a = x.abs();
    if !(a > 0.0 && a < 10f64.powi(1 - decimals as i32)) {
        return format!("{x:.decimals$}");
    }
    // The exponent after rounding to two digits (0.0999 is 1.0e-1), not log10's (-2).
    let e: i32 = format!("{a:.1e}").rsplit('e').next().and_then(|e| e.parse().ok()).unwrap_or(0);
    let places = ((1 - e).max(0) as usize).clamp(decimals, 17);
    format!("{x:.places$}")
}

#[cfg(test)]
mod tests {
    use super::figure;

    #[test]
    fn small_values_keep_two_significant_digits_and_others_their_decimals() {
        assert_eq!(figure(0.0123, 1), "0.012");
        assert_eq!(figure(0.5, 1), "0.50");
        assert_eq!(figure(0.0004, 2), "0.00040");
        assert_eq!(figure(0.5, 2), "0.50");
        // 0.01 mm as a header's float32 holds it (0.00999999978), and a value that rounds up.
        assert_eq!(figure(0.01f32 as f64, 2), "0.010");
        assert_eq!(figure(0.0999, 1), "0.10");
        for (x, d) in [(0.0, 1), (1.0, 1), (9.34, 1), (41.5, 1), (1234.56, 1), (0.1, 2), (4.0, 2), (12.345, 2)] {
            assert_eq!(figure(x, d), format!("{x:.d$}"), "{x} at {d} decimals");
        }
        assert_eq!(figure(f64::NAN, 1), "NaN");
    }
}
