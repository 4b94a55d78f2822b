//! A 3-D or 4-D NIfTI read volume by volume, for a reader that keeps only part of each (bedpost
//! keeps its mask's voxels): held at once are one volume and the read buffers, where
//! [`super::read_nifti`] holds the whole series (1.5 GB for a HCP-sized DWI). Each value is
//! decoded as the whole read decodes it, and every failure is the whole read's message.

use super::nifti_io::{data_error, open_data, Data, Input};
use super::read_progress::ReadProgress;
use super::Geometry;
use anyhow::Result;
use std::path::Path;

/// A file opened, its header read and checked and its voxels about to be read.
pub struct NiftiStream {
    data: Data,
}

impl NiftiStream {
    /// Opens `path` and reads its header: every error of the header, the extensions and the
    /// file's size against the header comes here, as [`super::read_nifti`] gives it. A one-member
    /// .nii.gz (other tools') is inflated on one core: in pieces it would be held whole, while
    /// our own multi-member files are still inflated on every core.
    pub fn open(path: &Path) -> Result<NiftiStream> {
        Ok(NiftiStream { data: open_data(path, false)? })
    }

    pub fn geom(&self) -> &Geometry {
        &self.data.geom
    }

    /// The grid: x, y, z and volumes.
    pub fn dims(&self) -> [usize; 4] {
        self.data.dims
    }

    /// Hands each volume in turn to `each(t, values)` (float32, scl_slope/scl_inter applied),
    /// its progress shown where the read is long (`show`); an error of `each` ends the read.
    pub fn volumes(self, show: bool, mut each: impl FnMut(usize, &[f32]) -> Result<()>) -> Result<()> {
        let Data { dims, input: (mut input, gz), decode, shown, .. } = self.data;
        let per = dims[0] * dims[1] * dims[2];
        let want = per * dims[3] * decode.bytes;
        let read = ReadProgress::new(dims, want, show);
        let done = |b: usize| read.advance(b);
        let conv = |x: f64| x as f32;
        let mut frame = vec![0.0f32; per];
        let members = matches!(input, Input::Members(_));
        let r = input.stream();
        let result = (|| {
            for t in 0..dims[3] {
                decode.read(r, &mut frame, &conv, &done).map_err(|e| data_error(e, &shown, gz, want))?;
                each(t, &frame)?;
            }
            // One-stream gzip is read to its end, where its CRC-32 is checked, as the whole read
            // does; our members were each checked as they were inflated.
            if gz && !members {
                std::io::copy(r, &mut std::io::sink()).map_err(|e| data_error(e, &shown, gz, want))?;
            }
            Ok(())
        })();
        read.finish();
        result
    }
}
