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
}
