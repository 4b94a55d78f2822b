//! The multi-resolution pyramid (002 Sec. 4 names "initial downsizing" as its missing
//! optimisation) and the centre-of-mass start.
//!
//! A coarser level averages 2x2x2 blocks of the finer one; an axis already shorter than
//! [`MIN_HALVED`] voxels is left as it is. Dropping an odd last slice keeps every coarse voxel
//! the average of exactly 2 fine ones per halved axis, whose centre is at fine coordinate
//! 2i + 1/2, and the level's affine says so: world positions are unchanged. A block mean is
//! taken over the block's finite voxels (NaN/Inf are not part of the image: cost.rs); a block
//! with none is NaN, so the coarser level leaves it out too.

use crate::volume::{xyz_of, Geometry, Volume};
use rayon::prelude::*;

/// Axes shorter than this are not halved further.
pub const MIN_HALVED: usize = 16;

/// One level down.
pub fn halve(v: &Volume) -> Volume {
    let d = v.geom.dims;
    let f: [usize; 3] = std::array::from_fn(|a| if d[a] >= MIN_HALVED { 2 } else { 1 });
    let nd: [usize; 3] = std::array::from_fn(|a| d[a] / f[a]);
    let src = v.as_flat();
    let data: Vec<f32> = (0..nd[0] * nd[1] * nd[2])
        .into_par_iter()
        .map(|i| {
            let [x, y, z] = xyz_of(i, nd);
            let (mut s, mut n) = (0.0f32, 0u32);
            for dz in 0..f[2] {
                for dy in 0..f[1] {
                    for dx in 0..f[0] {
                        let c = src[v.geom.index(f[0] * x + dx, f[1] * y + dy, f[2] * z + dz)];
                        if c.is_finite() {
                            s += c;
                            n += 1;
                        }
                    }
                }
            }
            // n a power of two (every child finite) divides exactly as the multiplication by
            // 1/n did before non-finite children were left out.
            if n > 0 { s / n as f32 } else { f32::NAN }
        })
        .collect();
    let mut affine = v.geom.affine;
    for r in 0..3 {
        // new voxel i sits at old (f i + (f - 1) / 2)
        affine[r][3] += (0..3).map(|a| v.geom.affine[r][a] * (f[a] as f64 - 1.0) / 2.0).sum::<f64>();
        for a in 0..3 {
            affine[r][a] = v.geom.affine[r][a] * f[a] as f64;
        }
    }
    let voxel_size = std::array::from_fn(|a| v.geom.voxel_size[a] * f[a] as f32);
    Volume::from_flat(Geometry { dims: nd, voxel_size, affine, header: v.geom.header.clone() }, 1, data)
}

/// The `levels - 1` levels above `v`, coarsest first (`v` itself, the finest, is not copied).
pub fn coarser(v: &Volume, levels: usize) -> Vec<Volume> {
    let mut out: Vec<Volume> = Vec::new();
    while out.len() + 1 < levels {
        let next = halve(out.last().unwrap_or(v));
        out.push(next);
    }
    out.reverse();
    out
}

/// Intensity-weighted centre of mass in world mm (negative and non-finite values count as
/// zero); the grid's centre when the image has no positive voxel.
pub fn centre_of_mass(v: &Volume) -> [f64; 3] {
    let [nx, ny, nz] = v.geom.dims;
    let d = v.as_flat();
    let (w, s) = (0..nz)
        .into_par_iter()
        .map(|z| {
            let mut w = 0.0f64;
            let mut s = [0.0f64; 3];
            for y in 0..ny {
                for x in 0..nx {
                    let c = d[v.geom.index(x, y, z)];
                    let c = if c.is_finite() { c.max(0.0) as f64 } else { 0.0 };
                    w += c;
                    s[0] += c * x as f64;
                    s[1] += c * y as f64;
                    s[2] += c * z as f64;
                }
            }
            (w, s)
        })
        .reduce(|| (0.0, [0.0; 3]), |a, b| (a.0 + b.0, [a.1[0] + b.1[0], a.1[1] + b.1[1], a.1[2] + b.1[2]]));
    let vox = if w > 0.0 { s.map(|c| c / w) } else { centre_voxel(&v.geom) };
    v.geom.voxel_to_world(vox)
}

/// The grid's centre in voxel coordinates.
pub fn centre_voxel(g: &Geometry) -> [f64; 3] {
    std::array::from_fn(|a| (g.dims[a] as f64 - 1.0) / 2.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halving_keeps_world_positions_and_the_mean() {
        let g = Geometry::synthetic([33, 20, 8], [1.0, 2.0, 3.0]);
        let data: Vec<f32> = (0..g.nvox()).map(|i| (i % 7) as f32).collect();
        let v = Volume::from_flat(g, 1, data);
        let h = halve(&v);
        assert_eq!(h.geom.dims, [16, 10, 8]);
        // Coarse voxel 0 along x is the mean of fine 0 and 1: centre at fine x = 0.5.
        let w = h.geom.voxel_to_world([0.0, 0.0, 0.0]);
        assert_eq!(w, v.geom.voxel_to_world([0.5, 0.5, 0.0]));
        let c = centre_of_mass(&Volume::from_flat(Geometry::synthetic([4, 4, 4], [2.0; 3]), 1, vec![1.0; 64]));
        assert_eq!(c, [3.0, 3.0, 3.0]);
    }
}
