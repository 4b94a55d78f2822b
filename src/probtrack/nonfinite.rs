//! bedpost samples holding NaN/Inf (a damaged file, another writer's folder) follow the DWI's
//! rule ([`crate::volume::skip_nonfinite`]): ignored outside the tracking mask, taken out of it
//! inside with a warning that counts them. A NaN direction used to end only the streamlines that
//! drew that sample (the others crossed the voxel), a NaN fraction was read as 0 without a word,
//! and samples NaN everywhere gave exit 0 with empty outputs.

use super::field::RECORD;
use anyhow::{bail, Result};
use rayon::prelude::*;
use std::path::Path;

/// Clears the voxels of `inside` where any record of `samples` (nsamp x nvox x RECORD) is not
/// finite, and zeroes every non-finite value so no kernel sees one; `dir` names the folder.
pub fn skip_nonfinite(samples: &mut [f32], dims: [usize; 3], inside: &mut [u8], dir: &Path) -> Result<()> {
    if samples.par_chunks(1 << 16).all(|c| c.iter().all(|x| x.is_finite())) {
        return Ok(());
    }
    let nvox = dims[0] * dims[1] * dims[2];
    let mut bad = vec![false; nvox];
    for (i, r) in samples.chunks_mut(RECORD).enumerate() {
        for x in r.iter_mut().filter(|x| !x.is_finite()) {
            *x = 0.0;
            bad[i % nvox] = true;
        }
    }
    let mut skipped = 0usize;
    let mut first = None;
    for v in 0..nvox {
        if bad[v] && inside[v] != 0 {
            inside[v] = 0;
            skipped += 1;
            first.get_or_insert(v);
        }
    }
    let Some(v) = first else { return Ok(()) };
    let (x, y, z) = (v % dims[0], (v / dims[0]) % dims[1], v / (dims[0] * dims[1]));
    if !inside.contains(&1) {
        bail!("{}: every voxel of the tracking mask holds NaN or infinite samples (first at x={x} y={y} z={z})", dir.display());
    }
    let (s, verb) = if skipped == 1 { ("", "holds") } else { ("s", "hold") };
    eprintln!("warning: {}: {skipped} voxel{s} in the tracking mask {verb} NaN or infinite samples (first at x={x} y={y} z={z}); skipped", dir.display());
    Ok(())
}
