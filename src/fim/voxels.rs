//! The mask's voxels on the host: found in the grid (what goes to the device, in this order) and
//! the device's values for them scattered back into a grid of NaN.

use rayon::prelude::*;

/// The mask's voxels, ascending, as the device's list holds them (volume::masks::inside_as).
pub fn mask_voxels(mask: &[u8]) -> Vec<i32> {
    crate::volume::masks::inside_as(mask, |v| v as i32)
}

/// The grid of `n` voxels holding `got[i]` at voxel `vox[i]` (ascending) where it is finite
/// and NaN elsewhere (the front never arrived, off the mask), filled a slab per task: one
/// thread filling example 3's 26 MB took longer than the download. Filled after the download:
/// one thread filling it while the device iterated left a third of example 3's solves 4-17 ms
/// longer on the H100 (round 25, part e; why was not found); every core filling it then did not,
/// and saved ~0.7 ms, not kept for so little beside an interference not understood.
pub fn scatter(n: usize, vox: &[i32], got: &[f32]) -> Vec<f32> {
    const SLAB: usize = 1 << 16;
    let mut u = vec![0f32; n];
    u.par_chunks_mut(SLAB).enumerate().for_each(|(k, slab)| {
        let a = k * SLAB;
        slab.fill(f32::NAN);
        let lo = vox.partition_point(|&v| (v as usize) < a);
        let hi = vox.partition_point(|&v| (v as usize) < a + slab.len());
        for (v, x) in vox[lo..hi].iter().zip(&got[lo..hi]) {
            slab[*v as usize - a] = if *x < f32::INFINITY { *x } else { f32::NAN };
        }
    });
    u
}

#[cfg(test)]
mod tests {
    use super::scatter;

    /// The slabs' scatter equals the plain loop on fresh random masks (slab edges crossed, an
    /// empty mask, a full one): NaN, f32::NAN's bits, off the mask and for INF.
    #[test]
    fn scatter_puts_each_value_at_its_voxel_and_nan_elsewhere() {
        use rand::Rng;
        let (seed, mut rng) = crate::synth::fresh_rng();
        for (n, keep) in [(200_003usize, 3u32), (70_000, 0), (1 << 17, 1), (5, 2)] {
            let vox: Vec<i32> = (0..n as i32).filter(|_| keep == 1 || (keep != 0 && rng.random_range(0..keep) == 0)).collect();
            // Unreached voxels come down as INF.
            let got: Vec<f32> = vox.iter().map(|_| if rng.random_range(0..7) == 0 { f32::INFINITY } else { rng.random_range(0..1000) as f32 * 0.25 }).collect();
            let mut want = vec![f32::NAN; n];
            for (v, x) in vox.iter().zip(&got) {
                want[*v as usize] = if x.is_finite() { *x } else { f32::NAN };
            }
            let u = scatter(n, &vox, &got);
            assert_eq!(u.len(), n);
            assert!(u.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits()), "seed {seed}: n {n}, {} voxels", vox.len());
        }
    }
}
