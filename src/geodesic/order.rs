//! Seed order for the GPU kernels. One thread traces one fibre, so the fibres of a warp are
//! consecutive seeds; seeds scattered at random over the volume (the steps/s benchmark) make every
//! warp's texel fetches land on unrelated cache lines and the resident fibres' cells outgrow L1 and
//! L2. Tracing in Morton (Z-order) of the seed voxels keeps a warp's fibres in neighbouring cells
//! and the resident fibres in one compact part of the volume. Results come back in the caller's
//! order (the packing kernel writes each fibre's points to its caller-order place); a fibre's
//! path does not depend on the order.

use super::Seed;
use crate::runtime::{timing::wall_ms, Timings};

/// Spreads the low 21 bits of `v` to every third bit.
fn spread(v: u64) -> u64 {
    let mut x = v & 0x1f_ffff;
    x = (x | x << 32) & 0x001f_0000_0000_ffff;
    x = (x | x << 16) & 0x001f_0000_ff00_00ff;
    x = (x | x << 8) & 0x100f_00f0_0f00_f00f;
    x = (x | x << 4) & 0x10c3_0c30_c30c_30c3;
    x = (x | x << 2) & 0x1249_2492_4924_9249;
    x
}

fn morton(s: &Seed) -> u64 {
    let c = s.pos.map(|x| if x.is_finite() { (x + 0.5).floor().clamp(0.0, 2_097_151.0) as u64 } else { 0 });
    spread(c[0]) | spread(c[1]) << 1 | spread(c[2]) << 2
}

/// The order to trace `seeds` in (`order[j]` = the caller's index of the j-th traced seed), or
/// None when it would change nothing or `NEUROPORT_GEODESIC_SORT=0` asks for the caller's order.
/// The host time goes to `t.host_ms`.
pub fn spatial_order(seeds: &[Seed], t: &mut Timings) -> Option<Vec<usize>> {
    if seeds.len() < 64 || std::env::var("NEUROPORT_GEODESIC_SORT").is_ok_and(|v| v == "0") {
        return None;
    }
    let (order, ms) = wall_ms(|| {
        let mut keyed: Vec<(u64, usize)> = seeds.iter().enumerate().map(|(i, s)| (morton(s), i)).collect();
        keyed.sort_unstable();
        keyed.into_iter().map(|(_, i)| i).collect::<Vec<usize>>()
    });
    t.host_ms += ms;
    Some(order)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn morton_interleaves_axes() {
        let s = |x: f32, y: f32, z: f32| Seed { pos: [x, y, z], dir: [1.0, 0.0, 0.0] };
        assert_eq!(morton(&s(1.0, 0.0, 0.0)), 1);
        assert_eq!(morton(&s(0.0, 1.0, 0.0)), 2);
        assert_eq!(morton(&s(0.0, 0.0, 1.0)), 4);
        assert_eq!(morton(&s(3.0, 3.0, 3.0)), 63);
        assert_eq!(morton(&s(1023.0, 0.0, 0.0)), spread(1023));
    }

    #[test]
    fn blocks_spread_few_fibres_and_grow_with_many() {
        // H100: 132 multiprocessors, 528 schedulers
        assert_eq!(crate::geodesic::block_size(4096, 132), 8);
        assert_eq!(crate::geodesic::block_size(100, 132), 1);
        assert_eq!(crate::geodesic::block_size(16896, 132), 32);
        assert_eq!(crate::geodesic::block_size(65536, 132), 64);
        assert_eq!(crate::geodesic::block_size(1_000_000, 132), 256);
    }
}
