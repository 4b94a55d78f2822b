//! A 3-D or 4-D NIfTI read for a reader that keeps only some voxels of each volume (bedpost keeps
//! its mask's): held are those voxels of every volume and the pieces being read, where
//! [`super::read_nifti`] holds the whole series (1.5 GB for a HCP-sized DWI). The pieces are
//! inflated (or read at their offsets), converted and gathered on every core, as the whole read
//! inflates and converts them; each value is decoded as the whole read decodes it, and every
//! failure is the whole read's message.

use super::nifti_decode::{Decode, Whole};
use super::nifti_io::{data_error, open_data, split_allowed, Data, Input, OneCore};
use super::read_pieces::Plain;
use super::read_progress::ReadProgress;
use super::Geometry;
use anyhow::Result;
use std::io::Seek;
use std::path::{Path, PathBuf};

/// A file opened, its header read and checked and its voxels about to be read.
pub struct NiftiStream {
    path: PathBuf,
    data: Data,
}

impl NiftiStream {
    /// Opens `path` and reads its header: every error of the header, the extensions and the
    /// file's size against the header comes here, as [`super::read_nifti`] gives it. A one-member
    /// .nii.gz (other tools') is inflated in pieces where the whole read would be: its compressed
    /// bytes are held, as they are there.
    pub fn open(path: &Path) -> Result<NiftiStream> {
        Ok(NiftiStream { path: path.to_path_buf(), data: open_data(path, split_allowed())? })
    }

    pub fn geom(&self) -> &Geometry {
        &self.data.geom
    }

    /// The grid: x, y, z and volumes.
    pub fn dims(&self) -> [usize; 4] {
        self.data.dims
    }

    /// The values of `voxels` (flat indices on the grid, ascending) in every volume, volume by
    /// volume (volumes x voxels), float32 with scl_slope/scl_inter applied; the read's progress
    /// shown where it is long (`show`).
    pub fn gather(self, voxels: &[usize], show: bool) -> Result<Vec<f32>> {
        assert!(voxels.windows(2).all(|w| w[0] < w[1]), "voxels not ascending");
        match gather_from(self.data, voxels, show) {
            // The pieces of a one-member gzip did not hold: read again on one core, as the
            // whole read does.
            Err(e) if e.is::<OneCore>() => gather_from(open_data(&self.path, false)?, voxels, show),
            r => r,
        }
    }
}

fn gather_from(data: Data, voxels: &[usize], show: bool) -> Result<Vec<f32>> {
    let Data { dims, input: (mut input, gz), decode, shown, .. } = data;
    let per = dims[0] * dims[1] * dims[2];
    let (n, want) = (voxels.len(), per * dims[3] * decode.bytes);
    assert!(voxels.last().is_none_or(|&v| v < per), "a voxel off the grid");
    let mut y = vec![0.0f32; dims[3] * n];
    let runs = runs(voxels);
    let out = Whole(y.as_mut_ptr(), y.len());
    let place = |g: usize, x: &[u8]| place_masked(&decode, &runs, per, n, &out, g, x);
    let read = ReadProgress::new(dims, want, show);
    let done = |b: usize| read.advance(b);
    let result = match &mut input {
        Input::Members(m) => decode.read_members_to(m, per * dims[3], &place, &done),
        Input::Plain(f) => f.stream_position().and_then(|base| decode.read_pieces(Plain { file: f.get_ref(), base }, 0, want, Vec::new(), &place, &done)),
        // One-stream gzip is read to its end, where its CRC-32 is checked, as the whole read
        // does; our members were each checked as they were inflated.
        other => {
            let r = other.stream();
            decode.read_in_order(r, want, &place, &done).and_then(|()| if gz { std::io::copy(r, &mut std::io::sink()).map(|_| ()) } else { Ok(()) })
        }
    };
    read.finish();
    result.map_err(|e| data_error(e, &shown, gz, want))?;
    Ok(y)
}

/// Ascending voxels as runs of neighbours on the grid: (first voxel, length, its index among
/// the voxels). A brain mask's row is a run or two, so a piece is gathered run by run.
fn runs(voxels: &[usize]) -> Vec<(usize, usize, usize)> {
    let mut runs: Vec<(usize, usize, usize)> = Vec::new();
    for (j, &v) in voxels.iter().enumerate() {
        match runs.last_mut() {
            Some(r) if r.0 + r.1 == v => r.1 += 1,
            _ => runs.push((v, 1, j)),
        }
    }
    runs
}

/// Voxels `g..` of the series (their bytes `x`), those in `runs` converted into their places of
/// `out` (volume t's voxel j at t x `n` + j; `per` voxels a volume).
fn place_masked(decode: &Decode, runs: &[(usize, usize, usize)], per: usize, n: usize, out: &Whole<f32>, g: usize, x: &[u8]) {
    let b = decode.bytes;
    let end = g + x.len() / b;
    let mut at = g;
    while at < end {
        let t = at / per;
        let stop = end.min((t + 1) * per);
        let (a, c) = (at - t * per, stop - t * per);
        let first = runs.partition_point(|r| r.0 + r.1 <= a);
        for &(v0, len, j0) in runs[first..].iter().take_while(|r| r.0 < c) {
            let (lo, hi) = (v0.max(a), (v0 + len).min(c));
            // SAFETY: each voxel of the series has one place, and pieces hand out disjoint
            // voxels, each once.
            let o = unsafe { out.range(t * n + j0 + lo - v0, t * n + j0 + hi - v0) };
            decode.convert(&x[(t * per + lo - g) * b..(t * per + hi - g) * b], o, &|v| v as f32);
        }
        at = stop;
    }
}
