//! Seed order for the GPU kernels. One thread traces one fibre, so the fibres of a warp are
//! consecutive seeds; seeds scattered at random over the volume (the steps/s benchmark) make every
//! warp's texel fetches land on unrelated cache lines and the resident fibres' cells outgrow L1 and
//! L2. Tracing in Morton (Z-order) of the seed voxels keeps a warp's fibres in neighbouring cells
//! and the resident fibres in one compact part of the volume. Results come back in the caller's
//! order; a fibre's path does not depend on the order.

use super::{FibreBatch, Seed};
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

/// Traces `seeds` in spatial order with `trace` and returns the fibres in the caller's order.
pub fn traced_in_spatial_order<F>(seeds: &[Seed], t: &mut Timings, trace: F) -> anyhow::Result<FibreBatch>
where
    F: FnOnce(&[Seed]) -> anyhow::Result<FibreBatch>,
{
    let Some(order) = spatial_order(seeds, t) else { return trace(seeds) };
    let sorted: Vec<Seed> = order.iter().map(|&i| seeds[i]).collect();
    let batch = trace(&sorted)?;
    let (out, ms) = wall_ms(|| unpermute(batch, &order));
    t.host_ms += ms;
    Ok(out)
}

/// Puts fibre j of `batch` at position `order[j]`.
fn unpermute(batch: FibreBatch, order: &[usize]) -> FibreBatch {
    let n = order.len();
    let mut inv = vec![0usize; n];
    for (j, &i) in order.iter().enumerate() {
        inv[i] = j;
    }
    let ends = inv.iter().map(|&j| batch.ends[j]).collect();
    if batch.offsets.is_empty() {
        return FibreBatch { ends, ..Default::default() };
    }
    let mut points = Vec::with_capacity(batch.points.len());
    let mut offsets = Vec::with_capacity(n + 1);
    offsets.push(0);
    for &j in &inv {
        points.extend_from_slice(batch.fibre(j));
        offsets.push(points.len());
    }
    FibreBatch { points, offsets, ends }
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

    #[test]
    fn unpermute_restores_the_callers_order() {
        let ends: Vec<_> = (0..3u32).map(|k| crate::geodesic::FibreEnd { steps: k, stop: crate::geodesic::Stop::MaxSteps, length_mm: 0.0, riemann: 0.0, target_step: None, target_length_mm: 0.0, target_riemann: 0.0 }).collect();
        // traced order [2, 0, 1]: fibre j of the batch has j + 1 points
        let pts = |k: usize| vec![[k as f32; 3]; k + 1];
        let mut points = pts(0);
        points.extend(pts(1));
        points.extend(pts(2));
        let batch = FibreBatch { points, offsets: vec![0, 1, 3, 6], ends };
        let out = unpermute(batch, &[2, 0, 1]);
        assert_eq!(out.ends.iter().map(|e| e.steps).collect::<Vec<_>>(), vec![1, 2, 0]);
        assert_eq!(out.fibre(0), &pts(1)[..]);
        assert_eq!(out.fibre(1), &pts(2)[..]);
        assert_eq!(out.fibre(2), &pts(0)[..]);
    }
}
