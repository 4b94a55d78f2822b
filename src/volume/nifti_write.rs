//! NIfTI-1 writing: the 348-byte header (little-endian), no extensions, float32 voxels. A
//! `.nii.gz` is compressed as independent gzip members of [`BLOCK`] bytes on every core and
//! concatenated: multi-member gzip is valid (RFC 1952 §2.2) and nibabel, FSL (zlib's gzread),
//! MRtrix, ITK and `gzip -d` all read it as one stream.

use super::Geometry;
use anyhow::{anyhow, bail, Result};
use rayon::prelude::*;
use std::io::Write;
use std::path::Path;

/// Most bytes of raw stream per gzip member (smaller for small files, see [`write_gz`]). 4 MiB keeps 16 cores busy on a 30 MB map and costs
/// ~30 bytes of member header and trailer per 4 MiB (and a dictionary reset, < 0.1 % size).
pub const BLOCK: usize = 4 << 20;

/// Which NIfTI files the commands write, as FSL's `FSLOUTPUTTYPE` chooses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputType {
    /// `.nii.gz` (the default)
    NiftiGz,
    /// `.nii`: no compression, for speed over space
    Nifti,
}

impl OutputType {
    /// `NEUROPORT_OUTPUT_TYPE`, else `FSLOUTPUTTYPE`, else NIFTI_GZ. FSL's pair and ANALYZE
    /// types are not written by neuroport: they fall back to NIFTI_GZ with a warning.
    pub fn from_env() -> OutputType {
        for var in ["NEUROPORT_OUTPUT_TYPE", "FSLOUTPUTTYPE"] {
            if let Ok(v) = std::env::var(var) {
                match v.trim() {
                    "" => continue,
                    "NIFTI_GZ" => return OutputType::NiftiGz,
                    "NIFTI" => return OutputType::Nifti,
                    other => {
                        warn_once(&format!("warning: {var}={other} is not written by neuroport (NIFTI_GZ or NIFTI); writing NIFTI_GZ"));
                        return OutputType::NiftiGz;
                    }
                }
            }
        }
        OutputType::NiftiGz
    }
    pub fn extension(self) -> &'static str {
        match self {
            OutputType::NiftiGz => ".nii.gz",
            OutputType::Nifti => ".nii",
        }
    }
    /// `path` with its `.nii.gz` (or `.nii`) ending replaced by this type's.
    pub fn apply(self, path: &Path) -> std::path::PathBuf {
        let s = path.to_string_lossy();
        let stem = s.strip_suffix(".nii.gz").or_else(|| s.strip_suffix(".nii"));
        match stem {
            Some(stem) => std::path::PathBuf::from(format!("{stem}{}", self.extension())),
            None => path.to_path_buf(),
        }
    }
}

fn warn_once(msg: &str) {
    static DONE: std::sync::Once = std::sync::Once::new();
    DONE.call_once(|| eprintln!("{msg}"));
}

/// Writes `nvol` volumes of flat x-fastest data with `geom`'s header (sform/qform, units) as
/// float32, compressed when `path` ends in .gz. Callers wanting all-or-nothing output go
/// through [`super::Outputs`].
pub fn write_nifti(path: &Path, geom: &Geometry, nvol: usize, data: &[f32]) -> Result<()> {
    let gz = path.to_string_lossy().ends_with(".gz");
    let f = super::create_file(path).map_err(|e| anyhow!("cannot write {}: {}", path.display(), super::plain_io(&e)))?;
    write_nifti_to(f, gz, geom, nvol, data).map_err(|e| anyhow!("cannot write {}: {}", path.display(), super::plain_io(&e)))
}

/// The same into an open file (a temporary of [`super::Outputs`]).
pub fn write_nifti_to(f: std::fs::File, gz: bool, geom: &Geometry, nvol: usize, data: &[f32]) -> std::io::Result<()> {
    write_voxels_to(f, gz, geom, nvol, Voxels::Held(data))
}

/// A volume's voxels (flat, volumes last): held, or made by `fill(first, out)` (voxels [first,
/// first + out.len())) a member at a time as the writer compresses them, on every core, so a
/// volume that is a rearrangement of other data (bedpost's merged samples) is never held whole.
#[derive(Clone, Copy)]
pub enum Voxels<'a> {
    Held(&'a [f32]),
    Made(usize, &'a (dyn Fn(usize, &mut [f32]) + Sync)),
}

impl Voxels<'_> {
    pub fn len(&self) -> usize {
        match self {
            Voxels::Held(d) => d.len(),
            Voxels::Made(n, _) => *n,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Data bytes [s, e) (little-endian float32) of voxels `fill` makes, into `out`.
fn made_bytes(fill: &(dyn Fn(usize, &mut [f32]) + Sync), s: usize, e: usize, out: &mut Vec<u8>) {
    let (a, b) = (s / 4, e.div_ceil(4));
    let mut v = vec![0.0f32; b - a];
    fill(a, &mut v);
    out.clear();
    out.extend_from_slice(&le_bytes(&v)[s - 4 * a..e - 4 * a]);
}

/// [`write_nifti_to`] of [`Voxels`]: the same bytes whether they are held or made.
pub fn write_voxels_to(mut f: std::fs::File, gz: bool, geom: &Geometry, nvol: usize, data: Voxels<'_>) -> std::io::Result<()> {
    let head = header_bytes(geom, nvol, data.len()).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string()))?;
    match data {
        Voxels::Held(d) if gz => write_gz(&mut f, &[&head, &le_bytes(d)])?,
        Voxels::Held(d) => {
            let mut w = std::io::BufWriter::with_capacity(BLOCK, &mut f);
            w.write_all(&head)?;
            w.write_all(&le_bytes(d))?;
            w.flush()?;
        }
        Voxels::Made(n, fill) if gz => {
            // As `write_gz` cuts [head, body]: the header a member of its own, then the body in
            // members of `block` bytes from its start.
            let body = 4 * n;
            let block = member_size(head.len() + body).max(1);
            write_members(&mut f, 1 + body.div_ceil(block), &|i, buf| {
                if i == 0 {
                    Some(&head)
                } else {
                    made_bytes(fill, (i - 1) * block, (i * block).min(body), buf);
                    None
                }
            })?;
        }
        Voxels::Made(n, fill) => {
            let mut w = std::io::BufWriter::with_capacity(BLOCK, &mut f);
            w.write_all(&head)?;
            let (mut buf, body) = (Vec::new(), 4 * n);
            for s in (0..body).step_by(BLOCK) {
                made_bytes(fill, s, (s + BLOCK).min(body), &mut buf);
                w.write_all(&buf)?;
            }
            w.flush()?;
        }
    }
    Ok(())
}

/// The voxels as little-endian bytes: borrowed on little-endian hosts.
fn le_bytes(data: &[f32]) -> std::borrow::Cow<'_, [u8]> {
    if cfg!(target_endian = "little") {
        std::borrow::Cow::Borrowed(bytemuck::cast_slice(data))
    } else {
        std::borrow::Cow::Owned(data.iter().flat_map(|v| v.to_le_bytes()).collect())
    }
}

/// Compresses the concatenation of `parts` as gzip members of at most [`BLOCK`] bytes (a member
/// never spans two parts, so the header is a member of its own), a wave of members per core
/// count at a time, writing one wave while the next compresses.
pub fn write_gz(w: &mut (dyn Write + Send), parts: &[&[u8]]) -> std::io::Result<()> {
    let total: usize = parts.iter().map(|p| p.len()).sum();
    write_gz_blocks(w, parts, member_size(total))
}

/// Raw bytes per member for `total` bytes of stream: 32 even members, or a multiple of 32 where
/// they would exceed [`BLOCK`], none under 256 KiB (a 3 MB FA map in 4 MiB members would be one
/// member on one core). A reader takes members one per core as cores free up, so 32 (64, ...)
/// even members keep 2, 4, 8, 16 or 32 cores busy to the end, where a 157 MB tensor's 38 members
/// of 4 MiB left 10 of 16 cores idle in the last round (round 25). The size depends on the data
/// alone, never on the thread count: same input, same file.
pub fn member_size(total: usize) -> usize {
    let n = 32 * total.div_ceil(32 * BLOCK).max(1);
    total.div_ceil(n).clamp(256 << 10, BLOCK)
}

/// [`write_gz`] with members of at most `block` raw bytes.
pub fn write_gz_blocks(w: &mut (dyn Write + Send), parts: &[&[u8]], block: usize) -> std::io::Result<()> {
    let blocks: Vec<&[u8]> = parts.iter().flat_map(|p| p.chunks(block.max(1))).collect();
    write_members(w, blocks.len(), &|i, _| Some(blocks[i]))
}

/// Member i's raw bytes: borrowed (Some), or made into the buffer it is given (None).
type Raw<'a> = dyn Fn(usize, &mut Vec<u8>) -> Option<&'a [u8]> + Sync + 'a;

/// `count` members, member i of the raw bytes `raw(i, buf)` gives, compressed a wave per core
/// count at a time, one wave written while the next compresses.
fn write_members(w: &mut (dyn Write + Send), count: usize, raw: &Raw<'_>) -> std::io::Result<()> {
    let wave = 2 * rayon::current_num_threads().max(1);
    let compress = |r: std::ops::Range<usize>| -> std::io::Result<Vec<Vec<u8>>> {
        r.into_par_iter()
            .map_init(Vec::new, |buf, i| match raw(i, buf) {
                Some(b) => member(b),
                None => member(buf),
            })
            .collect()
    };
    let mut ready = compress(0..wave.min(count))?;
    for s in (wave..count).step_by(wave) {
        let (written, compressed) = rayon::join(|| ready.iter().try_for_each(|m| w.write_all(m)), || compress(s..(s + wave).min(count)));
        written?;
        ready = compressed?;
    }
    ready.iter().try_for_each(|m| w.write_all(m))?;
    w.flush()
}

/// One complete gzip member (RFC 1952): header with the member's lengths (see
/// [`super::gz_members`]), raw deflate (neuroport's own encoder for float volumes, at about
/// miniz's level-1 size and 2.5-3x its rate: [`super::deflate_floats`]), CRC-32, length mod 2^32.
fn member(b: &[u8]) -> std::io::Result<Vec<u8>> {
    let deflated = super::deflate_floats::deflate(b);
    let mut crc = flate2::Crc::new();
    crc.update(b);
    let mut m = Vec::with_capacity(deflated.len() + super::gz_members::HEADER + 8);
    m.extend_from_slice(&super::gz_members::header(deflated.len(), b.len()));
    m.extend_from_slice(&deflated);
    m.extend_from_slice(&crc.sum().to_le_bytes());
    m.extend_from_slice(&(b.len() as u32).to_le_bytes());
    Ok(m)
}

/// [`write_nifti`] as .nii.gz with members of `block` raw bytes (tests of readers that meet
/// members cutting voxels).
#[cfg(test)]
pub(crate) fn write_nifti_members(path: &Path, geom: &Geometry, nvol: usize, data: &[f32], block: usize) -> Result<()> {
    let head = header_bytes(geom, nvol, data.len())?;
    let mut f = std::fs::File::create(path)?;
    write_gz_blocks(&mut f, &[&head, &le_bytes(data)], block)?;
    Ok(())
}

/// The 348-byte header plus the 4-byte "no extensions" flag, little-endian.
fn header_bytes(geom: &Geometry, nvol: usize, nvals: usize) -> Result<Vec<u8>> {
    let [nx, ny, nz] = geom.dims;
    if nx * ny * nz * nvol != nvals {
        bail!("data do not fit the grid ({nvals} values for {nx}x{ny}x{nz}x{nvol})");
    }
    for d in [nx, ny, nz, nvol] {
        if d == 0 || d > i16::MAX as usize {
            bail!("dimension {d} cannot be stored in a NIfTI-1 header");
        }
    }
    let h = &geom.header;
    let mut b = Vec::with_capacity(352);
    let i16s = |b: &mut Vec<u8>, v: &[i16]| v.iter().for_each(|x| b.extend_from_slice(&x.to_le_bytes()));
    let f32s = |b: &mut Vec<u8>, v: &[f32]| v.iter().for_each(|x| b.extend_from_slice(&x.to_le_bytes()));
    b.extend_from_slice(&348i32.to_le_bytes());
    b.extend_from_slice(&[0u8; 10]); // data_type
    b.extend_from_slice(&[0u8; 18]); // db_name
    b.extend_from_slice(&0i32.to_le_bytes()); // extents
    i16s(&mut b, &[0]); // session_error
    b.push(b'r'); // regular
    b.push(h.dim_info);
    let ndim = if nvol > 1 { 4 } else { 3 };
    i16s(&mut b, &[ndim, nx as i16, ny as i16, nz as i16, nvol as i16, 1, 1, 1]);
    f32s(&mut b, &[0.0, 0.0, 0.0]); // intent_p1..3
    i16s(&mut b, &[0, 16, 32, h.slice_start]); // intent_code, datatype float32, bitpix
    let mut pixdim = h.pixdim;
    pixdim[0] = if pixdim[0] == -1.0 { -1.0 } else { 1.0 };
    pixdim[4] = if nvol > 1 { pixdim[4].max(0.0) } else { 0.0 };
    f32s(&mut b, &pixdim);
    f32s(&mut b, &[352.0, 1.0, 0.0]); // vox_offset, scl_slope, scl_inter
    i16s(&mut b, &[h.slice_end]);
    b.push(h.slice_code);
    b.push(h.xyzt_units);
    f32s(&mut b, &[0.0, 0.0, h.slice_duration, h.toffset]); // cal_max, cal_min
    b.extend_from_slice(&0i32.to_le_bytes()); // glmax
    b.extend_from_slice(&0i32.to_le_bytes()); // glmin
    let mut descrip = [0u8; 80];
    descrip[..9].copy_from_slice(b"neuroport");
    b.extend_from_slice(&descrip);
    b.extend_from_slice(&h.aux_file);
    i16s(&mut b, &[h.qform_code, h.sform_code]);
    f32s(&mut b, &[h.quatern_b, h.quatern_c, h.quatern_d, h.quatern_x, h.quatern_y, h.quatern_z]);
    f32s(&mut b, &h.srow_x);
    f32s(&mut b, &h.srow_y);
    f32s(&mut b, &h.srow_z);
    // The intent is not carried over (its code is 0 above): a name from the input (a DWI's
    // "dwi", a statistic's) would label every map written from it.
    b.extend_from_slice(&[0u8; 16]); // intent_name
    b.extend_from_slice(b"n+1\0");
    debug_assert_eq!(b.len(), 348);
    b.extend_from_slice(&[0u8; 4]);
    Ok(b)
}

#[cfg(test)]
mod tests {
    use super::{member_size, BLOCK};

    /// From 8 MiB of stream on, the data (after the header's own member) falls into a multiple of
    /// 32 members of at most BLOCK bytes; below, into at most 32 of at least 256 KiB.
    #[test]
    fn members_come_in_multiples_of_32() {
        use rand::Rng;
        let (_, mut rng) = crate::synth::fresh_rng();
        let mut totals = vec![352 + 1000, 3 << 20, 8 << 20, 100_000_352, 128 << 20, (128 << 20) + 1, 157_286_752, 415_000_352, 3 << 30];
        totals.extend((0..200).map(|_| rng.random_range(352 + 1..4usize << 30)));
        for total in totals {
            let size = member_size(total);
            let data_members = (total - 352).div_ceil(size);
            assert!(size <= BLOCK, "{total}: {size}");
            if total >= 8 << 20 {
                assert_eq!(data_members % 32, 0, "{total}: {data_members} members of {size}");
            } else {
                assert!(data_members <= 32 && (size == 256 << 10 || data_members == 1), "{total}: {data_members} members of {size}");
            }
        }
    }

    /// Voxels made by a fill function are written as the same bytes as held ones, compressed
    /// (members that cut voxels: 9 MB of stream, so the member size is not a multiple of 4) and
    /// not, on fresh random values.
    #[test]
    fn made_voxels_write_the_bytes_of_held_ones() {
        use rand::Rng;
        let (seed, mut rng) = crate::synth::fresh_rng();
        let geom = crate::volume::Geometry::synthetic([61, 53, 7], [1.0, 1.0, 1.0]);
        let nvol = 102;
        let data: Vec<f32> = (0..geom.nvox() * nvol).map(|k| if k % 7 < 3 { 0.0 } else { rng.random_range(-3.0f32..3.0) }).collect();
        assert_ne!(member_size(352 + 4 * data.len()) % 4, 0, "members cut voxels");
        let fill = |first: usize, out: &mut [f32]| out.copy_from_slice(&data[first..first + out.len()]);
        let dir = tempfile::tempdir().unwrap();
        for gz in [true, false] {
            let write = |name: &str, v: super::Voxels| {
                let p = dir.path().join(name);
                super::write_voxels_to(std::fs::File::create(&p).unwrap(), gz, &geom, nvol, v).unwrap();
                std::fs::read(&p).unwrap()
            };
            let held = write("held", super::Voxels::Held(&data));
            let made = write("made", super::Voxels::Made(data.len(), &fill));
            assert!(held == made, "seed {seed}: gz {gz}: the files differ");
        }
    }
}
