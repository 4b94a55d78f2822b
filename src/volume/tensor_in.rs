//! A tensor volume read for a method confined to a mask (`fim`, `track geodesic`). Its NaN/Inf
//! voxels follow the DWI's rule ([`super::skip_nonfinite`]): ignored outside the mask, taken out
//! of it inside with a warning. Zeroing them alone, as before, kept them in the mask: a NaN in
//! one component left a wrong tensor there, a NaN on the diagonal a repaired tiny isotropic one,
//! and a mask of nothing but NaN ran to exit 0.

use super::{read_mask_like, read_nifti, skip_nonfinite, Volume};
use anyhow::{bail, Result};
use std::path::Path;

/// The tensor volume at `path` (6 volumes, FSL order) and the mask it may be used in: `mask`'s
/// file (read on the tensor's grid, named as `what` in errors) or every voxel, less the voxels
/// whose tensor is not finite. Non-finite values are set to 0 so no kernel sees them.
pub fn read_tensor(path: &Path, mask: Option<(&Path, &str)>) -> Result<(Volume, Vec<u8>)> {
    let mut v = read_nifti(path)?;
    if v.nvol() != 6 {
        bail!("{}: a tensor volume has 6 volumes (FSL order xx,xy,xz,yy,yz,zz), this has {}", path.display(), v.nvol());
    }
    let mut m = match mask {
        Some((p, what)) => read_mask_like(p, &v.geom, path, what)?,
        None => vec![1u8; v.nvox()],
    };
    skip_nonfinite(&mut v, path, &mut m)?;
    Ok((v, m))
}
