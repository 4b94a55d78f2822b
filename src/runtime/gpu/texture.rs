//! 3-D textures of float or half texels, 1-4 channels (CUDA texture objects, OpenCL image3d_t), with
//! hardware linear filtering.

/// A texture of either API; destroyed on drop.
pub enum RawTexture {
    Cl(opencl3::memory::Image),
    Cu(super::cu::CuTexture),
}

/// How a texture's texels are stored: `channels` floats (1, 2 or 4), or halves with `half`
/// (read back as floats).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TexelFormat {
    pub channels: usize,
    pub half: bool,
}

impl TexelFormat {
    /// Bytes of one texel.
    pub fn bytes(&self) -> usize {
        self.channels * if self.half { 2 } else { 4 }
    }
}

/// A 3-D texture read by `np_tex3d_f4` (float4 texels) or `np_tex3d_f1` (float, or half
/// texels read as floats) in kernels.
pub struct Texture3d {
    pub(crate) raw: RawTexture,
    pub dims: [usize; 3],
}

/// `x` as an IEEE half (binary16), rounded to nearest, ties to even; overflow gives infinity,
/// as the device's own conversion does. For texels stored as halves (`TexelFormat::half`).
pub fn half_bits(x: f32) -> u16 {
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let exp = ((b >> 23) & 0xff) as i32;
    let man = b & 0x7f_ffff;
    if exp == 0xff {
        return sign | 0x7c00 | if man != 0 { 0x200 } else { 0 };
    }
    let e = exp - 112; // the half's biased exponent
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    // Normal halves keep 10 of the 23 mantissa bits; subnormal ones fewer, the implicit bit
    // made explicit. The carry out of a rounded-up mantissa lands in the exponent, which is
    // the right result (up to infinity).
    let (kept, shift) = if e > 0 { (((e as u32) << 10) | (man >> 13), 13) } else if e >= -10 { ((man | 0x80_0000) >> (14 - e), (14 - e) as u32) } else { return sign };
    let rem = if e > 0 { man & 0x1fff } else { (man | 0x80_0000) & ((1 << shift) - 1) };
    let half = 1u32 << (shift - 1);
    let up = rem > half || (rem == half && kept & 1 == 1);
    sign | (kept + up as u32) as u16
}

/// The value of half `h`.
pub fn half_value(h: u16) -> f32 {
    let sign = if h & 0x8000 != 0 { -1.0f32 } else { 1.0 };
    let exp = ((h >> 10) & 0x1f) as i32;
    let man = (h & 0x3ff) as f32;
    match exp {
        0 => sign * man * 2f32.powi(-24),
        0x1f if man == 0.0 => sign * f32::INFINITY,
        0x1f => f32::NAN,
        _ => sign * (1.0 + man / 1024.0) * 2f32.powi(exp - 15),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every half survives the round trip, and every midpoint between neighbouring halves
    /// rounds to the even one.
    #[test]
    fn half_rounding() {
        for h in 0u16..0x7c00 {
            let v = half_value(h);
            assert_eq!(half_bits(v), h, "half {h:#x} = {v}");
            assert_eq!(half_bits(-v), h | 0x8000);
            if h == 0x7bff {
                break; // the largest finite half: its midpoint rounds to infinity (below)
            }
            let next = half_value(h + 1);
            let mid = ((v as f64 + next as f64) / 2.0) as f32;
            assert_eq!(mid as f64, (v as f64 + next as f64) / 2.0, "midpoint exact in f32");
            let even = if h & 1 == 0 { h } else { h + 1 };
            assert_eq!(half_bits(mid), even, "midpoint of {h:#x}");
            let above = f32::from_bits(mid.to_bits() + 1);
            assert_eq!(half_bits(above), h + 1);
        }
        assert_eq!(half_bits(65520.0), 0x7c00);
        assert_eq!(half_bits(65519.0), 0x7bff);
        assert_eq!(half_bits(2f32.powi(-26)), 0);
        assert!(half_value(half_bits(f32::NAN)).is_nan());
    }
}
