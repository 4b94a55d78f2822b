//! The DWI of a mask's voxels alone: all that bedpost samples. Read from a file through
//! [`crate::volume::NiftiStream`], a HCP-sized DWI (1.5 GB) no longer peaks at the whole series:
//! held are the mask's voxels of every volume and the pieces being read. The pieces are
//! inflated and gathered on every core, so the read takes the whole read's time whatever the
//! mask (round 45; round 44 read a large mask's DWI whole, the streamed read then one-core).

use super::init::gather;
use crate::volume::masks::{inside, read_mask_like, skip_nonfinite_values, Nonfinite};
use crate::volume::{xyz_of, Geometry, GradFiles, GradientTable, NiftiStream, Volume};
use anyhow::Result;
use std::path::Path;

pub struct MaskedDwi {
    pub geom: Geometry,
    pub nvol: usize,
    /// The mask's voxels (flat indices on the grid, ascending), those holding NaN/Inf taken out.
    pub voxels: Vec<usize>,
    /// Their measurements, component-major (nvol x voxels), as [`gather`] makes them.
    pub y: Vec<f32>,
}

impl MaskedDwi {
    /// The voxels of `mask` in a DWI already read (and through [`crate::volume::mask_for`]).
    pub fn from_volume(dwi: &Volume, mask: &[u8]) -> MaskedDwi {
        let voxels = inside(mask);
        let y = gather(dwi, &voxels);
        MaskedDwi { geom: dwi.geom.clone(), nvol: dwi.nvol(), voxels, y }
    }

    /// Reads `dwi` inside `mask` (on its grid) with its gradient table from `grad`, checked as
    /// `dti::design::read_dwi` and `mask_for` check them, with their messages: the same voxels
    /// and values as those reading the whole DWI give `from_volume`, its read's progress shown
    /// where it is long (`show`). The header, the table and the mask are checked before the
    /// voxels are read.
    pub fn read(dwi: &Path, grad: GradFiles<'_>, mask_path: &Path, show: bool) -> Result<(MaskedDwi, GradientTable)> {
        let stream = NiftiStream::open(dwi)?;
        let (geom, nvol) = (stream.geom().clone(), stream.dims()[3]);
        crate::volume::require_series(dwi, &geom, nvol)?;
        let grads = grad.read(nvol, &geom)?;
        crate::dti::design::require_tensor_table(&grads, grad)?;
        let mut mask = read_mask_like(mask_path, &geom, dwi, "mask")?;
        let mut voxels = inside(&mask);
        let n = voxels.len();
        let mut y = stream.gather(&voxels, show)?;
        let names = Nonfinite { path: dwi, mask: "mask", values: "values" };
        let taken = skip_nonfinite_values(&mut y, geom.dims, |i| voxels[i % n], |i| format!(" volume {}", i / n), &mut mask, &names)?;
        if !taken.is_empty() {
            // The voxels that left the mask leave the measurements too.
            let keep: Vec<bool> = voxels.iter().map(|&v| mask[v] != 0).collect();
            y = y.chunks(n).flat_map(|c| c.iter().zip(&keep).filter(|(_, &k)| k).map(|(&x, _)| x)).collect();
            voxels.retain(|&v| mask[v] != 0);
        }
        Ok((MaskedDwi { geom, nvol, voxels, y }, grads))
    }

    /// [`super::all_zero_warning`] for these voxels (`path`: the DWI's file).
    pub fn all_zero_warning(&self, path: &Path) -> Option<String> {
        let n = self.voxels.len();
        let zero = |j: usize| (0..self.nvol).all(|t| self.y[t * n + j] == 0.0);
        let count = (0..n).filter(|&j| zero(j)).count();
        let first = self.voxels[(0..n).find(|&j| zero(j))?];
        let [x, y, z] = xyz_of(first, self.geom.dims);
        super::zero_warning(path, count, n, [x, y, z])
    }
}
