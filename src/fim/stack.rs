//! Several source regions over one field in one block-FIM run (connectivity's u1 and u2).

use super::blocked::{block_grid, indexable, B};
use super::{Problem, Solution};

/// Several source regions over one field solved in one run: copies of the grid stacked along z,
/// each starting on a block boundary after a layer of blocks outside the mask, so no front
/// crosses from one copy to the next and every block sees the neighbours, the schedule and so
/// the bits of its own region's solve alone; the copies' blocks share the field's S. Each launch
/// then carries every region's active blocks (an update launch lasts about as long as its
/// slowest block, so two regions cost less than twice one), and the run ends when the last
/// region's list empties.
pub struct Stack {
    dims: [usize; 3],
    copies: usize,
    /// Slices from one copy's start to the next's.
    off: usize,
}

impl Stack {
    pub fn new(dims: [usize; 3], copies: usize) -> Stack {
        Stack { dims, copies, off: B * (dims[2].div_ceil(B) + 1) }
    }

    pub fn dims(&self) -> [usize; 3] {
        [self.dims[0], self.dims[1], self.off * (self.copies - 1) + self.dims[2]]
    }

    /// Whether the stacked grid stays within the kernels' 32-bit indexing.
    pub fn fits(&self) -> bool {
        indexable(self.dims())
    }

    /// The stacked problem: `p`'s mask in every copy, copy c's source `sources[c]`; S is the
    /// field's (not copied).
    pub fn problem(&self, p: &Problem, sources: &[Vec<u8>]) -> Problem {
        let (n, slab) = (p.nvox(), self.off * self.dims[0] * self.dims[1]);
        let total = self.dims().iter().product::<usize>();
        let (mut mask, mut source) = (vec![0u8; total], vec![0u8; total]);
        for (c, s) in sources.iter().enumerate() {
            mask[c * slab..c * slab + n].copy_from_slice(&p.mask);
            source[c * slab..c * slab + n].copy_from_slice(s);
        }
        Problem { dims: self.dims(), voxel: p.voxel, speed: Vec::new(), mask, source }
    }

    /// The stacked grid's S numbering: each copy's blocks numbered as the field's, the gap
    /// layers without S.
    pub fn sblock(&self, base: &[i32]) -> Vec<i32> {
        let bd = block_grid(self.dims);
        let (plane, layer) = (bd[0] * bd[1], self.off / B);
        let nb2 = block_grid(self.dims()).iter().product::<usize>();
        (0..nb2)
            .map(|b| {
                let bz = (b / plane) % layer;
                if bz < bd[2] { base[bz * plane + b % plane] } else { -1 }
            })
            .collect()
    }

    /// Copy c's u out of the stacked run's; each region's solution carries the run's figures.
    pub fn split(&self, mut run: Solution) -> Vec<Solution> {
        let (n, slab) = (self.dims.iter().product::<usize>(), self.off * self.dims[0] * self.dims[1]);
        let u = std::mem::take(&mut run.u);
        (0..self.copies).map(|c| Solution { u: u[c * slab..c * slab + n].to_vec(), together: self.copies, ..run.clone() }).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each copy starts on a block boundary, the slices between copies hold no mask voxel (so
    /// no 6-neighbour pair joins two copies, also where nz is a multiple of the block edge),
    /// every copy's blocks take the field's S numbering and the gap layers none, and `split`
    /// hands back each copy's voxels.
    #[test]
    fn copies_are_aligned_apart_and_split_back() {
        for (dims, copies) in [([5, 3, 8], 2), ([6, 7, 11], 3), ([4, 4, 1], 2)] {
            let n: usize = dims.iter().product();
            let p = Problem { dims, voxel: [1.0; 3], speed: Vec::new(), mask: vec![1; n], source: vec![0; n] };
            let sources: Vec<Vec<u8>> = (0..copies).map(|c| (0..n).map(|v| (v == c) as u8).collect()).collect();
            let st = Stack::new(dims, copies);
            assert_eq!(st.off % B, 0);
            let q = st.problem(&p, &sources);
            let plane = dims[0] * dims[1];
            for z in 0..q.dims[2] {
                let (c, lz) = (z / st.off, z % st.off);
                let inside = lz < dims[2];
                for i in 0..plane {
                    assert_eq!(q.mask[z * plane + i], inside as u8, "{dims:?} slice {z}");
                    assert_eq!(q.source[z * plane + i], (inside && lz * plane + i == c) as u8);
                }
            }
            assert!(st.off > dims[2], "at least one slice of gap");
            let bd = block_grid(dims);
            let base: Vec<i32> = (0..bd.iter().product::<usize>() as i32).map(|b| 100 + b).collect();
            let sb = st.sblock(&base);
            let layer = st.off / B;
            for (b, &s) in sb.iter().enumerate() {
                let (bz, r) = (b / (bd[0] * bd[1]), b % (bd[0] * bd[1]));
                let want = if bz % layer < bd[2] { base[(bz % layer) * bd[0] * bd[1] + r] } else { -1 };
                assert_eq!(s, want);
            }
            let run = Solution { u: (0..q.nvox()).map(|v| v as f32).collect(), iterations: 7, ..Solution::default() };
            let parts = st.split(run);
            for (c, part) in parts.iter().enumerate() {
                assert_eq!(part.u.len(), n);
                assert_eq!(part.u[0], (c * st.off * plane) as f32);
                assert_eq!((part.iterations, part.together), (7, copies));
            }
        }
    }
}
