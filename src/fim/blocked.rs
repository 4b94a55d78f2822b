//! The blocked layout of 004 Fig. 3 that block FIM runs on: the grid cut into 4^3 blocks, each
//! stored contiguously (block w / 64, local slot w % 64, x fastest), padding past the grid's
//! edge outside the mask.

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

/// `f(l, v)` for every slot `l` of block `b` that holds a grid voxel `v` (the slots past the
/// grid's edge are skipped): the block's position divided out once, not once per slot (the
/// reordering of example 3 did two divisions for each of its 6.5 M slots).
#[inline]
pub fn for_block(dims: [usize; 3], bd: [usize; 3], b: usize, mut f: impl FnMut(usize, usize)) {
    let (x0, y0, z0) = ((b % bd[0]) * B, ((b / bd[0]) % bd[1]) * B, (b / (bd[0] * bd[1])) * B);
    for lz in 0..B.min(dims[2].saturating_sub(z0)) {
        for ly in 0..B.min(dims[1].saturating_sub(y0)) {
            let row = dims[0] * (y0 + ly + dims[1] * (z0 + lz)) + x0;
            for lx in 0..B.min(dims[0].saturating_sub(x0)) {
                f(lx + B * (ly + B * lz), row + lx);
            }
        }
    }
}

/// Slot of voxel `v`: the inverse of [`voxel_of`], as cl/fim.cl's fim_unblock computes it.
#[cfg(test)]
pub fn slot_of(dims: [usize; 3], bd: [usize; 3], v: usize) -> usize {
    let (x, y, z) = (v % dims[0], (v / dims[0]) % dims[1], v / (dims[0] * dims[1]));
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
        // for_block visits exactly the slots voxel_of maps to the grid, with the same voxels.
        let mut visited = 0;
        for b in 0..bd.iter().product::<usize>() {
            for_block(dims, bd, b, |l, v| {
                assert_eq!(voxel_of(dims, bd, b * BV + l), Some(v));
                visited += 1;
            });
        }
        assert_eq!(visited, n);
        assert!((0..seen.len()).filter(|&w| !seen[w]).all(|w| voxel_of(dims, bd, w).is_none()));
    }
}
