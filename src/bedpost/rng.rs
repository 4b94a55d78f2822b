//! The combined Tausworthe generator of `cl/common/rng.h`, bit for bit, and the seeding of its
//! streams from a xoshiro stream on the host (paper 003 makes its numbers on the device; only
//! the 16-byte seeds travel).

use super::NPARAM;
use rand::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// Words of one stream: three Tausworthe components and an LCG.
pub const WORDS: usize = 4;
/// Words of one voxel's state: one stream per parameter.
pub const VOXEL_WORDS: usize = WORDS * NPARAM;

fn taus_step(z: u32, s1: u32, s2: u32, s3: u32, m: u32) -> u32 {
    let b = ((z << s1) ^ z) >> s2;
    ((z & m) << s3) ^ b
}

/// The next 32 random bits of stream `s`.
pub fn next(s: &mut [u32]) -> u32 {
    s[0] = taus_step(s[0], 13, 19, 12, 4294967294);
    s[1] = taus_step(s[1], 2, 25, 4, 4294967288);
    s[2] = taus_step(s[2], 3, 11, 17, 4294967280);
    s[3] = 1664525u32.wrapping_mul(s[3]).wrapping_add(1013904223);
    s[0] ^ s[1] ^ s[2] ^ s[3]
}

/// Uniform in (0, 1), exact in f32 (see rng.h).
pub fn uniform(s: &mut [u32]) -> f32 {
    ((next(s) >> 8) as f32 + 0.5) * (1.0 / 16_777_216.0)
}

/// A standard normal by Box-Muller, two uniforms per draw.
pub fn gauss(s: &mut [u32]) -> f32 {
    let u1 = uniform(s);
    let u2 = uniform(s);
    (-2.0 * u1.ln()).sqrt() * (2.0 * PI_F * u2).cos()
}

/// `NP_PI_F` of portable.h (3.14159265358979f rounds to this float).
pub const PI_F: f32 = std::f32::consts::PI;

/// The streams of the voxel with flat index `voxel`: a xoshiro256++ stream seeded from
/// (`seed`, `voxel`), so a voxel's chain depends on neither the mask nor the chunking.
/// Tausworthe words below 128 are drawn again.
pub fn voxel_streams(seed: u64, voxel: usize) -> [u32; VOXEL_WORDS] {
    let mut r = Xoshiro256PlusPlus::seed_from_u64(seed ^ (voxel as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut out = [0u32; VOXEL_WORDS];
    for (j, w) in out.iter_mut().enumerate() {
        *w = r.next_u32();
        while j % WORDS != 3 && *w < 128 {
            *w = r.next_u32();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniforms_are_in_the_open_interval_and_look_uniform() {
        let mut s = [12345u32, 67890, 13579, 24680];
        let n = 100_000;
        let mut sum = 0.0f64;
        let mut bins = [0usize; 10];
        for _ in 0..n {
            let u = uniform(&mut s);
            assert!(u > 0.0 && u < 1.0);
            sum += u as f64;
            bins[(u * 10.0) as usize] += 1;
        }
        assert!((sum / n as f64 - 0.5).abs() < 0.005);
        for b in bins {
            assert!((b as f64 - 10_000.0).abs() < 500.0, "{bins:?}");
        }
    }

    #[test]
    fn normals_have_unit_variance() {
        let mut s = voxel_streams(7, 3);
        let n = 100_000;
        let (mut m, mut v) = (0.0f64, 0.0f64);
        for _ in 0..n {
            let z = gauss(&mut s[..4]) as f64;
            m += z;
            v += z * z;
        }
        m /= n as f64;
        v = v / n as f64 - m * m;
        assert!(m.abs() < 0.02 && (v - 1.0).abs() < 0.02, "mean {m} var {v}");
    }

    #[test]
    fn pi_is_the_device_literal() {
        assert_eq!(PI_F, "3.14159265358979".parse::<f32>().unwrap());
    }

    #[test]
    fn seeds_respect_the_tausworthe_floor_and_depend_on_voxel() {
        let a = voxel_streams(1, 0);
        let b = voxel_streams(1, 1);
        assert_ne!(a, b);
        assert_eq!(a, voxel_streams(1, 0));
        for s in [a, b] {
            for (j, w) in s.iter().enumerate() {
                if j % WORDS != 3 {
                    assert!(*w >= 128);
                }
            }
        }
    }
}
