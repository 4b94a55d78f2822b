//! The box of the grid whose samples the tracker can read: the field holds the records of these
//! voxels alone. A path stands on a seed voxel's centre or on a point whose nearest voxel is in
//! the tracking mask, and a step reads the voxel floor(p + u), u in [0, 1) (probtrackx's
//! sub-voxel choice; 0.5 without it), clamped to the grid: the nearest voxel or one of its
//! neighbours. So the bounding box of the mask and the seeds, grown by one voxel and clipped to
//! the grid, holds every record a run reads. Positions stay in the grid's voxel coordinates;
//! only the integer index of a record subtracts the box's origin, so no float changes. The
//! 145 x 174 x 145 grid of an HCP folder at 50 samples took 5.9 GB whatever the mask.

/// Voxels a step may read beyond the one nearest its point, per axis.
const MARGIN: usize = 1;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Crop {
    /// First voxel of the box (grid coordinates).
    pub origin: [usize; 3],
    /// Its size, voxels per axis.
    pub dims: [usize; 3],
}

impl Crop {
    /// The whole grid.
    pub fn whole(grid: [usize; 3]) -> Crop {
        Crop { origin: [0; 3], dims: grid }
    }

    /// The box of the flat voxels `voxels`, grown by the step's margin and clipped to the grid;
    /// one voxel (the first) when there is none, so no buffer is empty.
    pub fn around(grid: [usize; 3], voxels: impl IntoIterator<Item = usize>) -> Crop {
        let (mut lo, mut hi) = ([usize::MAX; 3], [0usize; 3]);
        for v in voxels {
            let p = crate::volume::xyz_of(v, grid);
            for c in 0..3 {
                lo[c] = lo[c].min(p[c]);
                hi[c] = hi[c].max(p[c]);
            }
        }
        if lo[0] == usize::MAX {
            return Crop { origin: [0; 3], dims: [1; 3] };
        }
        let origin = lo.map(|l| l.saturating_sub(MARGIN));
        let dims = std::array::from_fn(|c| (hi[c] + MARGIN).min(grid[c] - 1) + 1 - origin[c]);
        Crop { origin, dims }
    }

    pub fn nvox(&self) -> usize {
        self.dims.iter().product()
    }

    /// Whether flat grid voxel `v` lies in the box.
    pub fn holds(&self, grid: [usize; 3], v: usize) -> bool {
        let p = crate::volume::xyz_of(v, grid);
        (0..3).all(|c| p[c] >= self.origin[c] && p[c] < self.origin[c] + self.dims[c])
    }

    /// The flat grid voxel of box voxel `b`.
    pub fn grid_voxel(&self, grid: [usize; 3], b: usize) -> usize {
        let [x, y, z] = crate::volume::xyz_of(b, self.dims);
        let [ox, oy, oz] = self.origin;
        x + ox + grid[0] * (y + oy + grid[1] * (z + oz))
    }

    /// The pieces of elements `e0..e0 + n` (flat over volumes x grid) that lie in the box, as
    /// (offset from e0, first element of the box's volumes x box, length): runs along x, joined
    /// where they follow one another in both (a box as wide as the grid: one piece).
    pub fn pieces(&self, grid: [usize; 3], e0: usize, n: usize) -> Vec<(usize, usize, usize)> {
        let (nvox, bvox) = (grid.iter().product::<usize>(), self.nvox());
        let mut out: Vec<(usize, usize, usize)> = Vec::new();
        let mut e = e0;
        while e < e0 + n {
            let (vol, v) = (e / nvox, e % nvox);
            let [x, y, z] = crate::volume::xyz_of(v, grid);
            // The rest of this grid row within the stretch.
            let row_end = (e + grid[0] - x).min(e0 + n);
            let inside = |c: usize, p: usize| p >= self.origin[c] && p < self.origin[c] + self.dims[c];
            if inside(1, y) && inside(2, z) {
                let (a, b) = (x.max(self.origin[0]), (x + row_end - e).min(self.origin[0] + self.dims[0]));
                if a < b {
                    let at = vol * bvox + (a - self.origin[0]) + self.dims[0] * (y - self.origin[1] + self.dims[1] * (z - self.origin[2]));
                    let off = e + (a - x) - e0;
                    match out.last_mut() {
                        Some(l) if l.0 + l.2 == off && l.1 + l.2 == at => l.2 += b - a,
                        _ => out.push((off, at, b - a)),
                    }
                }
            }
            e = row_end;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every element of the box, and no other, is in exactly one piece at its own box index,
    /// over stretches that cut rows, slices and volumes anywhere.
    #[test]
    fn pieces_map_each_box_element_once() {
        let grid = [7usize, 5, 4];
        let nvox = 140;
        for crop in [Crop::around(grid, [8, 30]), Crop::whole(grid), Crop::around(grid, [0, 139]), Crop::around(grid, [3 + 7 * 2 + 35 * 3])] {
            let ns = 3;
            let mut seen = vec![usize::MAX; ns * crop.nvox()];
            for n in [1usize, 4, 13, 140, 1000] {
                seen.fill(usize::MAX);
                for e0 in (0..ns * nvox).step_by(n) {
                    let len = n.min(ns * nvox - e0);
                    for (off, at, l) in crop.pieces(grid, e0, len) {
                        assert!(off + l <= len);
                        for k in 0..l {
                            assert_eq!(seen[at + k], usize::MAX, "{crop:?} {n}");
                            seen[at + k] = e0 + off + k;
                        }
                    }
                }
                for (b, &e) in seen.iter().enumerate() {
                    assert_eq!(e, (b / crop.nvox()) * nvox + crop.grid_voxel(grid, b % crop.nvox()), "{crop:?} {n}");
                }
            }
            assert!((0..nvox).filter(|&v| crop.holds(grid, v)).count() == crop.nvox());
        }
        assert_eq!(Crop::around(grid, [8, 30]), Crop { origin: [0, 0, 0], dims: [4, 5, 2] });
        assert_eq!(Crop::around(grid, Vec::new()).nvox(), 1);
    }
}
