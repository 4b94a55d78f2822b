//! What a small fixed image allows. The search runs on the fixed grid, so its voxels are the
//! cost's samples and its size bounds the pyramid: a 4x4x4 fixed image under 12 dof ended
//! 128 mm from the truth, 6x6x6 33 mm, with nothing said, and `--levels 3` on an 8x8x8 image
//! searched the same grid three times over.

use super::{cost, pyramid, sampling, Options};
use crate::volume::Volume;
use anyhow::{bail, Result};

/// How many of `levels` differ from the one below: past that, [`pyramid::halve`] leaves every
/// axis as it is (all shorter than [`pyramid::MIN_HALVED`]) and a level would repeat the grid.
/// Capped with a note, not refused: FLIRT, whose scales are fixed (8, 4, 2, 1 mm), works at the
/// image's own resolution where a scale is finer, and a script's --levels that suits whole heads
/// should not fail on a crop.
pub fn levels_allowed(dims: [usize; 3], levels: usize) -> usize {
    let (mut d, mut n) = (dims, 1);
    while n < levels && d.iter().any(|&a| a >= pyramid::MIN_HALVED) {
        d = d.map(|a| if a >= pyramid::MIN_HALVED { a / 2 } else { a });
        n += 1;
    }
    n.min(levels)
}

/// Refuses a fixed image (`what`, the file) too small for `o.dof`, and returns the lines to
/// tell the user about one that is small: the cost over few voxels, and `o.levels` capped.
///
/// The search accepts a transform whose overlap holds [`cost::MIN_OVERLAP`] of the fixed
/// voxels; when that is no more voxels than there are parameters, a transform can fit those
/// few exactly, and the minimum is anywhere: an error. Below [`sampling::MIN_SAMPLES`] voxels
/// (the floor `--samples` holds a sub-grid to, as a cost on fewer points is mostly noise) it
/// runs, with a warning.
pub fn check(fixed: &Volume, what: &str, o: &Options) -> Result<Vec<String>> {
    let [x, y, z] = fixed.geom.dims;
    let n = fixed.as_flat().iter().filter(|v| v.is_finite()).count();
    let dof = o.dof.count();
    let floor = overlap_floor(n);
    let pct = cost::MIN_OVERLAP * 100.0;
    let fewer = if dof > 6 { "--dof 6, or " } else { "" };
    if floor <= dof {
        let need = (n..).find(|&m| overlap_floor(m) > dof).unwrap_or(n);
        bail!("{what}: {n} voxels ({x}x{y}x{z}) are too few to register with {dof} dof: the cost may be taken over as few as {floor} of them (the {pct} % overlap the search accepts), no more than the {dof} parameters, so the transform is under-determined. Use {fewer}a fixed image of at least {need} voxels (the larger image as --fixed)");
    }
    let mut lines = Vec::new();
    if n < sampling::MIN_SAMPLES {
        lines.push(format!("warning: {what}: the cost is taken over only {n} voxels ({x}x{y}x{z}), fewer than the {} a cost needs to be more than noise (the floor of --samples); check the result, and prefer {fewer}a larger fixed image", sampling::MIN_SAMPLES));
    }
    let used = levels_allowed(fixed.geom.dims, o.levels);
    if (1..=super::MAX_LEVELS).contains(&o.levels) && used < o.levels {
        let s = if used == 1 { "" } else { "s" };
        lines.push(format!("note: {what} ({x}x{y}x{z}): --levels {} would search the same grid again (axes under {} voxels are not halved); {used} level{s} used", o.levels, pyramid::MIN_HALVED));
    }
    Ok(lines)
}

/// The fewest overlapping voxels the cost accepts (cost.rs `Stats::cost`) of `total`.
fn overlap_floor(total: usize) -> usize {
    (1..=total).find(|&k| k as f64 >= cost::MIN_OVERLAP * total as f64).unwrap_or(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_stop_where_no_axis_halves() {
        assert_eq!(levels_allowed([8, 8, 8], 3), 1);
        assert_eq!(levels_allowed([20, 8, 8], 3), 2);
        assert_eq!(levels_allowed([64, 64, 64], 3), 3);
        assert_eq!(levels_allowed([64, 64, 64], 6), 4);
        assert_eq!(levels_allowed([33, 20, 8], 6), 3);
        assert_eq!(levels_allowed([64, 64, 64], 0), 0);
        // The levels pyramid::coarser makes, and where they begin to repeat.
        for dims in [[8, 8, 8], [20, 8, 8], [33, 20, 8], [64, 40, 17]] {
            let v = Volume::from_flat(crate::volume::Geometry::synthetic(dims, [1.0; 3]), 1, vec![0.0; dims.iter().product()]);
            let mut grids: Vec<[usize; 3]> = pyramid::coarser(&v, 6).iter().map(|l| l.geom.dims).chain([dims]).collect();
            grids.dedup();
            assert_eq!(levels_allowed(dims, 6), grids.len(), "{dims:?}");
        }
    }
}
