//! The blocked layout of 004 Fig. 3 that block FIM runs on: the grid cut into 4^3 blocks, each
//! stored contiguously (block w / 64, local slot w % 64, x fastest), padding past the grid's
//! edge outside the mask.

use crate::volume::xyz_of;

/// Block edge (004: 4) and voxels per block.
pub const B: usize = 4;
pub const BV: usize = 64;

/// The blocked layout (004 Fig. 3): the block grid, and for slot `w` (block w / 64, local
/// w % 64) the flat voxel it holds, None for padding past the grid's edge.
pub fn block_grid(dims: [usize; 3]) -> [usize; 3] {
    dims.map(|d| d.div_ceil(B))
}

#[cfg(test)]
pub fn voxel_of(dims: [usize; 3], bd: [usize; 3], w: usize) -> Option<usize> {
    let (b, l) = (w / BV, w % BV);
    let x = (b % bd[0]) * B + l % B;
    let y = ((b / bd[0]) % bd[1]) * B + (l / B) % B;
    let z = (b / (bd[0] * bd[1])) * B + l / (B * B);
    (x < dims[0] && y < dims[1] && z < dims[2]).then(|| x + dims[0] * (y + dims[1] * z))
}

/// Whether the kernels' 32-bit indexing reaches every component of S over the blocked grid of
/// `dims` (6 x 64 values per block).
pub fn indexable(dims: [usize; 3]) -> bool {
    6 * block_grid(dims).iter().product::<usize>() * BV <= i32::MAX as usize
}

/// The block holding grid voxel `v`.
pub fn block_of(dims: [usize; 3], bd: [usize; 3], v: usize) -> usize {
    let [x, y, z] = xyz_of(v, dims);
    x / B + bd[0] * (y / B + bd[1] * (z / B))
}

/// Slot of voxel `v`: the inverse of [`voxel_of`], as cl/fim.cl's np_fim_slot computes it.
#[cfg(test)]
pub fn slot_of(dims: [usize; 3], bd: [usize; 3], v: usize) -> usize {
    let [x, y, z] = xyz_of(v, dims);
    (x / B + bd[0] * (y / B + bd[1] * (z / B))) * BV + x % B + B * (y % B + B * (z % B))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every voxel has one slot and the slot leads back to it; the other slots are padding.
    #[test]
    fn blocked_layout_round_trips() {
        let dims = [7, 5, 9];
        let bd = block_grid(dims);
        let n: usize = dims.iter().product();
        let mut seen = vec![false; bd.iter().product::<usize>() * BV];
        for v in 0..n {
            let w = slot_of(dims, bd, v);
            assert!(!seen[w]);
            seen[w] = true;
            assert_eq!(voxel_of(dims, bd, w), Some(v));
        }
        assert_eq!(seen.iter().filter(|&&s| !s).count(), seen.len() - n);
        // block_of names the block of each voxel's slot.
        assert!((0..n).all(|v| block_of(dims, bd, v) == slot_of(dims, bd, v) / BV));
        assert!((0..seen.len()).filter(|&w| !seen[w]).all(|w| voxel_of(dims, bd, w).is_none()));
    }
}
