//! A tensor volume read for a method confined to a mask (`fim`, `track geodesic`). Its NaN/Inf
//! voxels follow the DWI's rule ([`super::skip_nonfinite`]): ignored outside the mask, taken out
//! of it inside with a warning. Zeroing them alone, as before, kept them in the mask: a NaN in
//! one component left a wrong tensor there, a NaN on the diagonal a repaired tiny isotropic one,
//! and a mask of nothing but NaN ran to exit 0.
//!
//! A voxel of a given mask whose six components are all exactly 0 leaves it too, counted in a
//! warning: a zero tensor carries no data (dti writes it where it fitted nothing), and was
//! "repaired" to the eigenvalue floor's tiny isotropic tensor and run through as if measured; a
//! file zero everywhere in the mask ran to exit 0. Without a mask file the zeros are the file's
//! background, left to the command (track's default mask is the voxels with a fitted tensor).

use super::masks::{holds, leave_mask, skip_nonfinite_in};
use super::{read_mask_like, read_nifti, xyz_of, TakenOut, Volume};
use anyhow::{bail, Result};
use std::path::Path;

/// The tensor volume at `path` (6 volumes, FSL order) and the mask it may be used in: `mask`'s
/// file (read on the tensor's grid, named as `what` in warnings and errors) or every voxel, less
/// the voxels whose tensor is not finite (or, in a mask file, all 0), which are returned too.
/// Non-finite values are set to 0 so no kernel sees them.
pub fn read_tensor(path: &Path, mask: Option<(&Path, &str)>) -> Result<(Volume, Vec<u8>, TakenOut)> {
    let mut v = read_nifti(path)?;
    if v.nvol() != 6 {
        bail!("{}: a tensor volume has 6 volumes (FSL order xx,xy,xz,yy,yz,zz), this has {}", path.display(), v.nvol());
    }
    let mut m = match mask {
        Some((p, what)) => read_mask_like(p, &v.geom, path, what)?,
        None => vec![1u8; v.nvox()],
    };
    let mut taken = skip_nonfinite_in(&mut v, path, &mut m, mask.map_or("mask", |(_, what)| what))?;
    // The rest of a taken-out voxel's components go too: what is left of a tensor with one NaN
    // is no tensor, and was "repaired" (and counted so) and read by the trackers' interpolation
    // beside the mask, where a voxel without a tensor takes the isotropic background's.
    let n = v.nvox();
    let flat = v.as_flat_mut();
    for &i in taken.nonfinite_voxels() {
        (0..6).for_each(|c| flat[c * n + i] = 0.0);
    }
    if let Some((_, what)) = mask {
        taken.add_zero(skip_zero(&v, path, &mut m, what, taken.len())?);
    }
    Ok((v, m, taken))
}

/// Takes the voxels of `mask` (named `what`) whose tensor is all 0 out of it, with a warning
/// that counts them and names the first, and returns them; an error when none is left
/// (`nonfinite`: how many left it before for NaN/Inf, so the error names both causes).
fn skip_zero(v: &Volume, path: &Path, mask: &mut [u8], what: &str, nonfinite: usize) -> Result<Vec<usize>> {
    let n = v.nvox();
    let flat = v.as_flat();
    let left = leave_mask(mask, |i| (0..6).all(|c| flat[c * n + i] == 0.0));
    let (skipped, Some(&first)) = (left.len(), left.first()) else { return Ok(left) };
    let shown = path.display();
    if mask.iter().all(|&m| m == 0) {
        let or = if nonfinite > 0 { " or NaN or infinite values" } else { "" };
        bail!("{shown}: every voxel of the {what} holds a zero tensor (all six components 0){or}");
    }
    let [x, y, z] = xyz_of(first, v.geom.dims);
    let (s, verb) = holds(skipped);
    eprintln!("warning: {shown}: {skipped} voxel{s} in the {what} {verb} a zero tensor (all six components 0; first at x={x} y={y} z={z}); skipped");
    Ok(left)
}
