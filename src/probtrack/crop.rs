//! The voxels of the grid whose samples the tracker can read: the field holds the records of
//! these alone. A path stands on a seed voxel's centre or on a point whose nearest voxel is in
//! the tracking mask, and a step reads the voxel floor(p + u), u in [0, 1) (probtrackx's
//! sub-voxel choice; 0.5 without it), clamped to the grid: the nearest voxel or one of its 26
//! neighbours. So the mask and the seeds, grown by one voxel (a 3 x 3 x 3 cube) and clipped to
//! the grid, hold every record a run reads: voxels beside the mask are read too (with jitter a
//! step near the mask's edge reads one outside it), so the mask alone would not do. Their
//! records are kept compacted, in the grid's order, with an index over the bounding box (one i32
//! per box voxel: its row among the held voxels, -1 for none) that a step reads before the
//! record (`np_pt_record`). Positions stay in the grid's voxel coordinates; only integer indices
//! change, so no float does. The 145 x 174 x 145 grid of an HCP folder at 50 samples took 5.9 GB
//! whatever the mask; its bounding box alone (round 44) saved little for a whole-brain mask.

use std::sync::Arc;

/// Voxels a step may read beyond the one nearest its point, per axis.
const MARGIN: usize = 1;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Crop {
    /// First voxel of the bounding box (grid coordinates).
    pub origin: [usize; 3],
    /// Its size, voxels per axis.
    pub dims: [usize; 3],
    /// Per box voxel: its row among the held voxels, or -1 where none is held.
    pub index: Arc<Vec<i32>>,
    /// Per row: its flat grid voxel.
    rows: Arc<Vec<u32>>,
}

impl Crop {
    /// The whole grid.
    pub fn whole(grid: [usize; 3]) -> Crop {
        Crop::with(grid, [0; 3], grid, vec![true; grid.iter().product()])
    }

    /// The flat voxels `voxels` grown by the step's margin (every neighbour, clipped to the
    /// grid); one voxel (the first) when there is none, so no buffer is empty.
    pub fn around(grid: [usize; 3], voxels: impl IntoIterator<Item = usize> + Clone) -> Crop {
        let (mut lo, mut hi) = ([usize::MAX; 3], [0usize; 3]);
        for v in voxels.clone() {
            let p = crate::volume::xyz_of(v, grid);
            for c in 0..3 {
                lo[c] = lo[c].min(p[c]);
                hi[c] = hi[c].max(p[c]);
            }
        }
        if lo[0] == usize::MAX {
            return Crop::with(grid, [0; 3], [1; 3], vec![true]);
        }
        let origin = lo.map(|l| l.saturating_sub(MARGIN));
        let dims: [usize; 3] = std::array::from_fn(|c| (hi[c] + MARGIN).min(grid[c] - 1) + 1 - origin[c]);
        let mut held = vec![false; dims.iter().product()];
        for v in voxels {
            let p = crate::volume::xyz_of(v, grid);
            held[(p[0] - origin[0]) + dims[0] * (p[1] - origin[1] + dims[1] * (p[2] - origin[2]))] = true;
        }
        // The cube's dilation is the three axes' in turn; the box already holds the margin.
        for (c, stride) in [(0, 1), (1, dims[0]), (2, dims[0] * dims[1])] {
            let was = held.clone();
            for (b, h) in held.iter_mut().enumerate() {
                let p = (b / stride) % dims[c];
                *h = was[b] || (p > 0 && was[b - stride]) || (p + 1 < dims[c] && was[b + stride]);
            }
        }
        Crop::with(grid, origin, dims, held)
    }

    /// The box at `origin` of size `dims` holding the voxels `held` (box order).
    fn with(grid: [usize; 3], origin: [usize; 3], dims: [usize; 3], held: Vec<bool>) -> Crop {
        let mut rows = Vec::new();
        let index = held
            .iter()
            .enumerate()
            .map(|(b, &h)| {
                if !h {
                    return -1;
                }
                let [x, y, z] = crate::volume::xyz_of(b, dims);
                rows.push((x + origin[0] + grid[0] * (y + origin[1] + grid[1] * (z + origin[2]))) as u32);
                rows.len() as i32 - 1
            })
            .collect();
        Crop { origin, dims, index: Arc::new(index), rows: Arc::new(rows) }
    }

    /// Voxels held: the records per sample volume.
    pub fn nvox(&self) -> usize {
        self.rows.len()
    }

    /// Voxels of the bounding box: the index's length.
    pub fn box_nvox(&self) -> usize {
        self.index.len()
    }

    /// The row of flat grid voxel `v`, None where it is not held.
    pub fn row(&self, grid: [usize; 3], v: usize) -> Option<usize> {
        let p = crate::volume::xyz_of(v, grid);
        if !(0..3).all(|c| p[c] >= self.origin[c] && p[c] < self.origin[c] + self.dims[c]) {
            return None;
        }
        let [ox, oy, oz] = self.origin;
        let r = self.index[p[0] - ox + self.dims[0] * (p[1] - oy + self.dims[1] * (p[2] - oz))];
        (r >= 0).then_some(r as usize)
    }

    /// Whether flat grid voxel `v` is held.
    pub fn holds(&self, grid: [usize; 3], v: usize) -> bool {
        self.row(grid, v).is_some()
    }

    /// Whether every voxel a step from flat grid voxel `v` may read (`v` and its neighbours in
    /// the grid) is held.
    pub fn holds_around(&self, grid: [usize; 3], v: usize) -> bool {
        let p = crate::volume::xyz_of(v, grid);
        let near = |c: usize| p[c].saturating_sub(MARGIN)..=(p[c] + MARGIN).min(grid[c] - 1);
        near(2).all(|z| near(1).all(|y| near(0).all(|x| self.holds(grid, x + grid[0] * (y + grid[1] * z)))))
    }

    /// The flat grid voxel of row `b`.
    pub fn grid_voxel(&self, _grid: [usize; 3], b: usize) -> usize {
        self.rows[b] as usize
    }

    /// The pieces of elements `e0..e0 + n` (flat over volumes x grid) that are held, as (offset
    /// from e0, first element of the records' volumes x rows, length): runs of held voxels along
    /// x, joined where they follow one another in both (every voxel held: one piece).
    pub fn pieces(&self, grid: [usize; 3], e0: usize, n: usize) -> Vec<(usize, usize, usize)> {
        let (nvox, rows) = (grid.iter().product::<usize>(), self.nvox());
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
                let line = self.dims[0] * (y - self.origin[1] + self.dims[1] * (z - self.origin[2]));
                for xx in a..b {
                    let r = self.index[line + xx - self.origin[0]];
                    if r < 0 {
                        continue;
                    }
                    let (off, at) = (e + (xx - x) - e0, vol * rows + r as usize);
                    match out.last_mut() {
                        Some(l) if l.0 + l.2 == off && l.1 + l.2 == at => l.2 += 1,
                        _ => out.push((off, at, 1)),
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

    /// Every held element, and no other, is in exactly one piece at its own row, over stretches
    /// that cut rows, slices and volumes anywhere; the held voxels are the given ones and their
    /// neighbours, found one by one.
    #[test]
    fn pieces_map_each_held_element_once() {
        let grid = [7usize, 5, 4];
        let nvox = 140;
        // A hollow shape: the voxels of a ring on two slices, the middle left out.
        let ring: Vec<usize> = (0..nvox).filter(|&v| {
            let [x, y, z] = crate::volume::xyz_of(v, grid);
            (z == 0 || z == 3) && (x == 0 || x == 6 || y == 0 || y == 4)
        }).collect();
        let sets: Vec<Vec<usize>> = vec![vec![8, 30], (0..nvox).collect(), vec![0, 139], vec![3 + 7 * 2 + 35 * 3], ring];
        for given in &sets {
            let crop = Crop::around(grid, given.iter().copied());
            let near = |v: usize, w: usize| {
                let (p, q) = (crate::volume::xyz_of(v, grid), crate::volume::xyz_of(w, grid));
                (0..3).all(|c| p[c].abs_diff(q[c]) <= 1)
            };
            for v in 0..nvox {
                assert_eq!(crop.holds(grid, v), given.iter().any(|&w| near(v, w)), "{given:?} voxel {v}");
            }
            for &v in given {
                assert!(crop.holds_around(grid, v));
            }
            let ns = 3;
            let mut seen = vec![usize::MAX; ns * crop.nvox()];
            for n in [1usize, 4, 13, 140, 1000] {
                seen.fill(usize::MAX);
                for e0 in (0..ns * nvox).step_by(n) {
                    let len = n.min(ns * nvox - e0);
                    for (off, at, l) in crop.pieces(grid, e0, len) {
                        assert!(off + l <= len);
                        for k in 0..l {
                            assert_eq!(seen[at + k], usize::MAX, "{given:?} {n}");
                            seen[at + k] = e0 + off + k;
                        }
                    }
                }
                for (b, &e) in seen.iter().enumerate() {
                    assert_eq!(e, (b / crop.nvox()) * nvox + crop.grid_voxel(grid, b % crop.nvox()), "{given:?} {n}");
                }
            }
            assert!((0..nvox).filter(|&v| crop.holds(grid, v)).count() == crop.nvox());
            assert!((0..crop.nvox()).all(|b| crop.row(grid, crop.grid_voxel(grid, b)) == Some(b)));
        }
        let c = Crop::around(grid, [8, 30]);
        assert_eq!((c.origin, c.dims, c.nvox()), ([0, 0, 0], [4, 5, 2], 3 * 3 * 2 + 3 * 2 * 2));
        let hollow = Crop::around(grid, sets[4].iter().copied());
        // Its middle, x 2..5 at y = 2 on every slice, is in the box but not held.
        assert_eq!((hollow.box_nvox(), hollow.nvox()), (nvox, nvox - 3 * 4));
        assert_eq!(Crop::around(grid, Vec::new()).nvox(), 1);
        assert!(!Crop::around(grid, [8]).holds_around(grid, 10));
    }
}
