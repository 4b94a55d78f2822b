//! What a small fixed image allows. The search runs on the fixed grid, so its voxels are the
//! cost's samples: a 4x4x4 fixed image under 12 dof ended 128 mm from the truth, 6x6x6 33 mm,
//! with nothing said.

use super::{cost, sampling, Options};
use crate::volume::Volume;
use anyhow::{bail, Result};

/// Refuses a fixed image (`what`, the file) too small for `o.dof`, and returns the lines to
/// tell the user about one that is small.
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
    Ok(lines)
}

/// The fewest overlapping voxels the cost accepts (cost.rs `Stats::cost`) of `total`.
fn overlap_floor(total: usize) -> usize {
    (1..=total).find(|&k| k as f64 >= cost::MIN_OVERLAP * total as f64).unwrap_or(total)
}
