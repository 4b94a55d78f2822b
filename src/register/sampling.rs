//! Cost on a sub-grid of the fixed image (`--samples N`), an option beside 002's cost over every
//! fixed voxel (the default).
//!
//! elastix, FLIRT and ANTs do not visit every voxel at full resolution: elastix draws 2,048
//! random points per iteration whatever the image size, so its affine registration costs about
//! the same at 1 mm as at 5 mm, where 002's cost grows with the voxel count. A Nelder-Mead
//! simplex compares costs across evaluations, so its samples must stay fixed (fresh random
//! points per evaluation would make the cost noisy and the comparisons meaningless); here they
//! are a regular lattice: every s-th voxel of the level along each axis, centred in the grid,
//! with s the largest stride that keeps at least N samples. The fixed values are the level's own
//! voxels (point samples, no averaging); the moving image is still sampled at the level's full
//! resolution at each mapped point. The lattice is a smaller fixed image with its own affine, so
//! every device's cost kernel runs it unchanged and results agree across devices as before.

use crate::volume::{Geometry, Volume};

/// The fewest points `--samples` may ask for (elastix's default is 2,048 per iteration, but fresh
/// ones each time; a fixed lattice this small would leave the optimiser a noisy cost).
pub const MIN_SAMPLES: usize = 1000;

/// The stride for a level of `dims` voxels: the largest s >= 1 with at least `samples` points on
/// the lattice; 1 (every voxel) when `samples` is 0 or the level has fewer voxels than that.
pub fn stride(dims: [usize; 3], samples: usize) -> usize {
    let count = |s: usize| dims.iter().map(|&n| (n / s).max(1)).product::<usize>();
    if samples == 0 {
        return 1;
    }
    let mut s = 1;
    while s < dims.iter().copied().max().unwrap_or(1) && count(s + 1) >= samples {
        s += 1;
    }
    s
}

/// The lattice's first index and length on an axis of `n` voxels at stride `s`: k = n / s points
/// (at least one) starting where they sit centred in [0, n - 1].
fn axis(n: usize, s: usize) -> (usize, usize) {
    let k = (n / s).max(1);
    ((n - 1 - s * (k - 1)) / 2, k)
}

/// The voxels of `v` on its lattice of stride `s`, as an image with the affine that places them
/// where they are (world positions unchanged). `s` = 1 gives a copy.
pub fn lattice(v: &Volume, s: usize) -> Volume {
    let d = v.geom.dims;
    let ax: [(usize, usize); 3] = std::array::from_fn(|a| axis(d[a], s));
    let nd = ax.map(|(_, k)| k);
    let src = v.as_flat();
    let mut data = Vec::with_capacity(nd[0] * nd[1] * nd[2]);
    for z in 0..nd[2] {
        for y in 0..nd[1] {
            let row = v.geom.index(ax[0].0, ax[1].0 + s * y, ax[2].0 + s * z);
            data.extend((0..nd[0]).map(|x| src[row + s * x]));
        }
    }
    let mut affine = v.geom.affine;
    for r in 0..3 {
        affine[r][3] += (0..3).map(|a| v.geom.affine[r][a] * ax[a].0 as f64).sum::<f64>();
        for a in 0..3 {
            affine[r][a] = v.geom.affine[r][a] * s as f64;
        }
    }
    let voxel_size = std::array::from_fn(|a| v.geom.voxel_size[a] * s as f32);
    Volume::from_flat(Geometry { dims: nd, voxel_size, affine, header: v.geom.header.clone() }, 1, data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stride_keeps_at_least_the_samples_asked_for() {
        assert_eq!(stride([120, 128, 88], 0), 1);
        assert_eq!(stride([120, 128, 88], 2_000_000), 1);
        // 60 x 64 x 44 = 168,960 >= 100,000; 40 x 42 x 29 = 48,720 < 100,000.
        assert_eq!(stride([120, 128, 88], 100_000), 2);
        assert_eq!(stride([240, 256, 176], 100_000), 4);
        assert_eq!(stride([4, 4, 4], 1), 4);
    }

    #[test]
    fn lattice_points_keep_their_world_positions_and_values() {
        let g = Geometry::synthetic([9, 8, 5], [1.0, 2.0, 3.0]);
        let data: Vec<f32> = (0..g.nvox()).map(|i| i as f32).collect();
        let v = Volume::from_flat(g.clone(), 1, data);
        let l = lattice(&v, 2);
        // x: 1, 3, 5, 7 (centred in 0..8); y: 0, 2, 4, 6 (in 0..7); z: 1, 3 (in 0..4).
        assert_eq!(l.geom.dims, [4, 4, 2]);
        for (j, o) in [([0usize, 0, 0], [1usize, 0, 1]), ([3, 3, 1], [7, 6, 3]), ([2, 1, 0], [5, 2, 1])] {
            let w = l.geom.voxel_to_world(j.map(|c| c as f64));
            assert_eq!(w, g.voxel_to_world(o.map(|c| c as f64)));
            assert_eq!(l.as_flat()[l.geom.index(j[0], j[1], j[2])], g.index(o[0], o[1], o[2]) as f32);
        }
        assert_eq!(lattice(&v, 1).as_flat(), v.as_flat());
    }
}
