//! TrackVis `.trk` tractograms (version 2): a 1000-byte little-endian header carrying the grid,
//! voxel size, voxel order and `vox_to_ras` (the NIfTI affine), then per streamline an int32 point
//! count and float32 points in TrackVis "voxmm" space: (voxel index + 0.5) x voxel size, i.e.
//! millimetres from the corner of voxel (0, 0, 0) along the voxel axes. This is how nibabel and
//! DIPY read and write it.

use crate::volume::{invert3, Geometry};
use anyhow::{anyhow, bail, Context, Result};
use std::io::{BufWriter, Write};
use std::path::Path;

pub const HEADER_SIZE: usize = 1000;

/// The space a `.trk` file's points live in.
#[derive(Clone, Debug, PartialEq)]
pub struct TrkSpace {
    pub dims: [usize; 3],
    pub voxel_size: [f32; 3],
    pub vox_to_ras: [[f64; 4]; 4],
}

impl TrkSpace {
    pub fn of(g: &Geometry) -> TrkSpace {
        TrkSpace { dims: g.dims, voxel_size: g.voxel_size, vox_to_ras: g.affine }
    }
    /// Axis codes of the voxel axes in RAS+ world ("RAS", "LAS", ...).
    pub fn voxel_order(&self) -> String {
        (0..3)
            .map(|c| {
                let col = [self.vox_to_ras[0][c], self.vox_to_ras[1][c], self.vox_to_ras[2][c]];
                let r = (0..3).max_by(|&a, &b| col[a].abs().total_cmp(&col[b].abs())).unwrap_or(c);
                let pos = col[r] >= 0.0;
                ["LR", "PA", "IS"][r].chars().nth(pos as usize).unwrap_or('?')
            })
            .collect()
    }
    fn linear(&self) -> [[f64; 3]; 3] {
        std::array::from_fn(|r| std::array::from_fn(|c| self.vox_to_ras[r][c]))
    }
    pub fn world_to_voxmm(&self, w: [f32; 3]) -> [f32; 3] {
        let inv = invert3(&self.linear());
        let a = &self.vox_to_ras;
        let d = [w[0] as f64 - a[0][3], w[1] as f64 - a[1][3], w[2] as f64 - a[2][3]];
        std::array::from_fn(|r| (((inv[r][0] * d[0] + inv[r][1] * d[1] + inv[r][2] * d[2]) + 0.5) * self.voxel_size[r] as f64) as f32)
    }
    pub fn voxmm_to_world(&self, p: [f32; 3]) -> [f32; 3] {
        let v: [f64; 3] = std::array::from_fn(|c| p[c] as f64 / self.voxel_size[c] as f64 - 0.5);
        let a = &self.vox_to_ras;
        std::array::from_fn(|r| (a[r][0] * v[0] + a[r][1] * v[1] + a[r][2] * v[2] + a[r][3]) as f32)
    }
}

fn header(space: &TrkSpace, count: usize) -> Vec<u8> {
    let mut h = vec![0u8; HEADER_SIZE];
    h[..6].copy_from_slice(b"TRACK\0");
    for a in 0..3 {
        h[6 + 2 * a..8 + 2 * a].copy_from_slice(&(space.dims[a].min(i16::MAX as usize) as i16).to_le_bytes());
        h[12 + 4 * a..16 + 4 * a].copy_from_slice(&space.voxel_size[a].to_le_bytes());
    }
    for r in 0..4 {
        for c in 0..4 {
            let o = 440 + 4 * (4 * r + c);
            h[o..o + 4].copy_from_slice(&(space.vox_to_ras[r][c] as f32).to_le_bytes());
        }
    }
    h[948..951].copy_from_slice(space.voxel_order().as_bytes());
    h[988..992].copy_from_slice(&(count.min(i32::MAX as usize) as i32).to_le_bytes());
    h[992..996].copy_from_slice(&2i32.to_le_bytes());
    h[996..1000].copy_from_slice(&(HEADER_SIZE as i32).to_le_bytes());
    h
}

/// Writes streamlines given in world millimetres.
pub fn write_trk<S: AsRef<[[f32; 3]]>>(path: &Path, space: &TrkSpace, streamlines: impl ExactSizeIterator<Item = S>) -> Result<()> {
    let f = crate::volume::create_file(path).with_context(|| format!("cannot create {}", path.display()))?;
    let mut w = BufWriter::with_capacity(super::tck::WRITE_BUFFER, f);
    w.write_all(&header(space, streamlines.len()))?;
    let mut buf: Vec<u8> = Vec::new();
    for s in streamlines {
        let s = s.as_ref();
        buf.clear();
        buf.extend_from_slice(&(s.len() as i32).to_le_bytes());
        for &p in s {
            for c in space.world_to_voxmm(p) {
                buf.extend_from_slice(&c.to_le_bytes());
            }
        }
        w.write_all(&buf)?;
    }
    w.flush()?;
    Ok(())
}

/// Reads a little-endian version-2 `.trk` file: its space and its streamlines in world mm
/// (per-point scalars and per-streamline properties are skipped).
pub fn read_trk(path: &Path) -> Result<(TrkSpace, Vec<Vec<[f32; 3]>>)> {
    let shown = path.display();
    let b = std::fs::read(path).map_err(|e| anyhow!("{shown}: cannot read ({e})"))?;
    if b.len() < HEADER_SIZE || &b[..5] != b"TRACK" {
        bail!("{shown}: not a TrackVis file");
    }
    let i32_at = |o: usize| i32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
    let f32_at = |o: usize| f32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
    let i16_at = |o: usize| i16::from_le_bytes([b[o], b[o + 1]]);
    if i32_at(996) != HEADER_SIZE as i32 {
        bail!("{shown}: header size {} (big-endian files are not supported)", i32_at(996));
    }
    let space = TrkSpace {
        dims: std::array::from_fn(|a| i16_at(6 + 2 * a).max(0) as usize),
        voxel_size: std::array::from_fn(|a| f32_at(12 + 4 * a)),
        vox_to_ras: std::array::from_fn(|r| std::array::from_fn(|c| f32_at(440 + 4 * (4 * r + c)) as f64)),
    };
    let nscal = i16_at(36).max(0) as usize;
    let nprop = i16_at(238).max(0) as usize;
    let mut o = HEADER_SIZE;
    let mut out = Vec::new();
    while o + 4 <= b.len() {
        let n = i32_at(o);
        o += 4;
        if n < 0 || o + n as usize * (3 + nscal) * 4 + nprop * 4 > b.len() {
            bail!("{shown}: streamline {} is truncated", out.len());
        }
        let mut s = Vec::with_capacity(n as usize);
        for _ in 0..n {
            s.push(space.voxmm_to_world([f32_at(o), f32_at(o + 4), f32_at(o + 8)]));
            o += (3 + nscal) * 4;
        }
        o += nprop * 4;
        out.push(s);
    }
    Ok((space, out))
}
