//! A region (`--source`, `--target`) against the mask the front moves in: the file given less the
//! voxels taken out of it for their data ([`TakenOut`]). A region on those is told so, not that it
//! lies outside a mask the user sees it inside (the error path used to re-read the mask to say it).

use crate::volume::TakenOut;
use anyhow::{bail, Result};
use std::path::Path;

/// Checks that `region` (read from `path`) has a voxel in `mask` (the file `mask_path` less the
/// voxels `taken` out): an error otherwise, naming why when its voxels were taken out. Some of
/// them taken out, the rest kept, is a warning that counts them (the front starts from the rest).
pub fn check_region(region: &[u8], path: &Path, mask: &[u8], mask_path: &Path, taken: &TakenOut) -> Result<()> {
    let voxels = || (0..region.len()).filter(|&v| region[v] != 0);
    let kept = voxels().filter(|&v| mask[v] != 0).count();
    let bad = taken.hits(voxels().filter(|&v| mask[v] == 0));
    let (p, m) = (path.display(), mask_path.display());
    if kept == 0 && bad.total() > 0 {
        bail!("{p}: every voxel of the region inside the mask {m} was taken out of it for {}", taken.data(bad));
    }
    if kept == 0 {
        bail!("{p}: the region has no voxel inside the mask {m}");
    }
    if bad.total() > 0 {
        eprintln!("warning: {p}: {} of {} voxels of the region hold {} (taken out of the mask {m}); the front starts from the {kept} left in it", bad.total(), voxels().count(), taken.data(bad));
    }
    Ok(())
}

/// Refuses a target the front from the source cannot reach: every solver moves between
/// face-neighbours of the mask, so regions in parts of it that share no face (or touch only
/// along an edge or at a corner) have no path between them. Said before the solves, which take
/// minutes on a large mask, naming the three files: after them the run said only "no path
/// joins the source and the target inside the mask".
pub fn check_joined(source: &[u8], source_path: &Path, target: &[u8], target_path: &Path, mask: &[u8], mask_path: &Path, dims: [usize; 3]) -> Result<()> {
    let inside = |v: usize, r: &[u8]| r[v] != 0 && mask[v] != 0;
    let mut seen: Vec<bool> = (0..mask.len()).map(|v| inside(v, source)).collect();
    let mut stack: Vec<usize> = (0..mask.len()).filter(|&v| seen[v]).collect();
    while let Some(v) = stack.pop() {
        if target[v] != 0 {
            return Ok(());
        }
        for w in super::cpu::neighbour_indices(dims, v).into_iter().flatten().flatten() {
            if mask[w] != 0 && !seen[w] {
                seen[w] = true;
                stack.push(w);
            }
        }
    }
    bail!(
        "{} and {}: no path joins them inside the mask {}: they lie in parts of it that share no face (voxels touching only at an edge or a corner are not joined)",
        source_path.display(),
        target_path.display(),
        mask_path.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::volume::{skip_nonfinite_values, Nonfinite};

    /// A region whose every mask voxel was taken out for NaN was refused as lying outside the
    /// mask; one genuinely off it still is.
    #[test]
    fn a_region_on_taken_out_voxels_is_told_why_not_that_it_lies_outside() {
        let names = Nonfinite { path: Path::new("t.nii"), mask: "mask", values: "values" };
        let mut tensor = [1.0, f32::NAN, 1.0, 1.0];
        let mut mask = [1u8, 1, 1, 0];
        let taken = skip_nonfinite_values(&mut tensor, [4, 1, 1], |i| i, |_| String::new(), &mut mask, &names).unwrap();
        let err = |region: [u8; 4]| check_region(&region, Path::new("r.nii"), &mask, Path::new("wm.nii"), &taken).unwrap_err().to_string();
        assert_eq!(err([0, 1, 0, 1]), "r.nii: every voxel of the region inside the mask wm.nii was taken out of it for NaN/Inf data in t.nii");
        assert_eq!(err([0, 0, 0, 1]), "r.nii: the region has no voxel inside the mask wm.nii");
        assert!(check_region(&[1, 1, 0, 0], Path::new("r.nii"), &mask, Path::new("wm.nii"), &taken).is_ok());
    }

    /// Two 2x2x2 blocks of a 4x4x2 mask: joined through a shared face, the regions at their far
    /// corners are; touching along an edge only, they are refused before any solve, naming the
    /// source, the target and the mask.
    #[test]
    fn regions_in_parts_of_the_mask_that_share_no_face_are_refused() {
        let dims = [4, 4, 2];
        let at = |x: usize, y: usize, z: usize| x + 4 * (y + 4 * z);
        let blocks = |second: [usize; 2]| {
            let mut m = vec![0u8; 32];
            for z in 0..2 {
                for (x0, y0) in [(0, 0), (second[0], second[1])] {
                    for (x, y) in [(x0, y0), (x0 + 1, y0), (x0, y0 + 1), (x0 + 1, y0 + 1)] {
                        m[at(x, y, z)] = 1;
                    }
                }
            }
            m
        };
        let (mut source, mut target) = (vec![0u8; 32], vec![0u8; 32]);
        source[at(0, 0, 0)] = 1;
        target[at(3, 3, 1)] = 1;
        let (sp, tp, mp) = (Path::new("s.nii"), Path::new("t.nii"), Path::new("wm.nii"));
        let edge = blocks([2, 2]);
        let e = check_joined(&source, sp, &target, tp, &edge, mp, dims).unwrap_err().to_string();
        assert!(e.starts_with("s.nii and t.nii: no path joins them inside the mask wm.nii"), "{e}");
        let mut face = edge.clone();
        face[at(2, 1, 0)] = 1;
        assert!(check_joined(&source, sp, &target, tp, &face, mp, dims).is_ok());
        // A target voxel outside the mask does not count as reached.
        let mut off = target.clone();
        off[at(3, 0, 0)] = 1;
        assert!(check_joined(&source, sp, &off, tp, &edge, mp, dims).is_err());
    }
}
