//! bedpost samples holding NaN/Inf (a damaged file, another writer's folder) follow the DWI's
//! rule ([`crate::volume::skip_nonfinite_values`]): ignored outside the tracking mask, taken out
//! of it inside with a warning that counts them. A NaN direction used to end only the streamlines
//! that drew that sample (the others crossed the voxel), a NaN fraction was read as 0 without a
//! word, and samples NaN everywhere gave exit 0 with empty outputs.

use super::crop::Crop;
use super::field::RECORD;
use crate::volume::{skip_nonfinite_values, Nonfinite, TakenOut};
use anyhow::Result;
use std::path::Path;

/// Clears the voxels of `inside` where any record of `samples` (nsamp x voxels of the box `crop`
/// x RECORD) is not finite, and zeroes every non-finite value so no kernel sees one; `dir`
/// names the folder.
/// Returns the voxels it cleared, so a seed among them is not said to lie outside.
pub fn skip_nonfinite(samples: &mut [f32], dims: [usize; 3], crop: &Crop, inside: &mut [u8], dir: &Path) -> Result<TakenOut> {
    let nvox = crop.nvox();
    let names = Nonfinite { path: dir, mask: "tracking mask", values: "samples" };
    skip_nonfinite_values(samples, dims, |i| crop.grid_voxel(dims, (i / RECORD) % nvox), |i| format!(" sample {}", i / (RECORD * nvox)), inside, &names)
}
