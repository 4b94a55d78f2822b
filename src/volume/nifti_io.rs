//! NIfTI-1 reading and writing (.nii and .nii.gz) through the nifti crate, with every failure
//! turned into an error that names the file and the problem.

use super::{Geometry, Volume};
use crate::guard::quiet_catch;
use anyhow::{anyhow, bail, Context, Result};
use ndarray::{ArrayView4, ShapeBuilder};
use nifti::{IntoNdArray, NiftiObject, ReaderOptions};
use std::path::Path;

/// Reads a 3-D or 4-D volume as float32 (scaling by scl_slope/scl_inter applied). Rejects files
/// that are missing, truncated, of an unsupported type or dimensionality, or hold NaN/Inf, with
/// an error naming the file and the problem.
pub fn read_nifti(path: &Path) -> Result<Volume> {
    let shown = path.display();
    if !path.exists() {
        bail!("{shown}: no such file");
    }
    if path.is_dir() {
        bail!("{shown}: is a folder, not a NIfTI file");
    }
    let gz = path.to_string_lossy().ends_with(".gz");
    // The header first, on its own: its problems get precise messages before any data is read.
    let header = quiet_catch(|| nifti::NiftiHeader::from_file(path))
        .ok_or_else(|| anyhow!("{shown}: not a readable NIfTI-1 header"))?
        .map_err(|e| anyhow!("{shown}: {}", describe(e, gz, "header")))?;
    let (dims, elem) = check_header(&header).map_err(|e| anyhow!("{shown}: {e}"))?;
    let obj = quiet_catch(|| ReaderOptions::new().read_file(path))
        .ok_or_else(|| anyhow!("{shown}: the data section is inconsistent with the header (truncated?)"))?
        .map_err(|e| anyhow!("{shown}: {}", describe(e, gz, "data")))?;
    // The crate reads the voxels right after the extensions, whatever vox_offset says; a file
    // whose data start elsewhere would be read shifted, so it is refused instead.
    let data_at = 352 + obj.extensions().bytes_on_disk();
    if &header.magic == b"n+1\0" && header.vox_offset as usize != data_at && header.vox_offset as usize > 352 {
        bail!("{shown}: unsupported layout: vox_offset {} but the header and extensions end at byte {data_at}", header.vox_offset);
    }
    let volume = obj.into_volume();
    let arr = quiet_catch(|| volume.into_ndarray::<f32>())
        .ok_or_else(|| anyhow!("{shown}: the data section is inconsistent with the header (truncated?)"))?
        .map_err(|e| anyhow!("{shown}: cannot convert the {elem} voxels to float ({e})"))?;
    let n: usize = dims.iter().product();
    if arr.len() != n {
        bail!("{shown}: holds {} values, the header promises {n}", arr.len());
    }
    // Reversing the axes and walking in logical order yields x fastest, whatever the layout.
    let data: Vec<f32> = arr.t().iter().copied().collect();
    if let Some(i) = data.iter().position(|v| !v.is_finite()) {
        let bad = data.iter().filter(|v| !v.is_finite()).count();
        let (x, y, z, t) = unflat(i, dims);
        let what = if bad == 1 { "1 voxel value is" } else { "voxel values are" };
        let count = if bad == 1 { String::new() } else { format!("{bad} ") };
        bail!("{shown}: {count}{what} NaN or infinite (first at x={x} y={y} z={z} volume {t})");
    }
    let geom = geometry_of(&header, [dims[0], dims[1], dims[2]]).with_context(|| format!("{shown}: bad spatial header"))?;
    Ok(Volume::from_flat(geom, dims[3], data))
}

/// The grid (x, y, z, volumes) and the voxel type's name, or why neuroport cannot read the file.
fn check_header(h: &nifti::NiftiHeader) -> Result<([usize; 4], &'static str)> {
    if h.sizeof_hdr == 540 {
        bail!("NIfTI-2 files are not supported (convert to NIfTI-1, e.g. with fslchfiletype NIFTI_GZ)");
    }
    let ndim = h.dim[0] as usize;
    if !(1..=7).contains(&ndim) {
        bail!("invalid dimension count {} in the header", h.dim[0]);
    }
    let mut dims = [1usize; 4];
    for i in 0..ndim {
        let d = h.dim[i + 1] as usize;
        if d == 0 || d > i16::MAX as usize {
            bail!("dimension {} has invalid size {} in the header", i + 1, h.dim[i + 1] as i16);
        }
        if i < 4 {
            dims[i] = d;
        } else if d != 1 {
            bail!("{ndim}-D volumes are not supported (only 3-D and 4-D)");
        }
    }
    use nifti::NiftiType as T;
    let (name, bits) = match h.data_type() {
        Ok(T::Uint8) => ("uint8", 8),
        Ok(T::Int8) => ("int8", 8),
        Ok(T::Uint16) => ("uint16", 16),
        Ok(T::Int16) => ("int16", 16),
        Ok(T::Uint32) => ("uint32", 32),
        Ok(T::Int32) => ("int32", 32),
        Ok(T::Uint64) => ("uint64", 64),
        Ok(T::Int64) => ("int64", 64),
        Ok(T::Float32) => ("float32", 32),
        Ok(T::Float64) => ("float64", 64),
        Ok(other) => bail!(
            "unsupported data type {other:?} (NIfTI datatype {}): neuroport reads integer and real floating-point voxels",
            h.datatype
        ),
        Err(_) => bail!("unknown data type code {} in the header", h.datatype),
    };
    if h.bitpix != bits {
        bail!("the header is inconsistent: bitpix {} for {name} voxels ({bits} bits)", h.bitpix);
    }
    Ok((dims, name))
}

/// The nifti crate's errors in words that say what is wrong with the file.
fn describe(e: nifti::NiftiError, gz: bool, part: &str) -> String {
    use std::io::ErrorKind;
    match e {
        nifti::NiftiError::IncompatibleLength(got, want) => {
            format!("truncated: the data section holds {got} of the {want} bytes the header promises")
        }
        nifti::NiftiError::Io(io) if io.kind() == ErrorKind::UnexpectedEof => format!("truncated: the file ends inside the {part}"),
        nifti::NiftiError::Io(io) if gz && matches!(io.kind(), ErrorKind::InvalidInput | ErrorKind::InvalidData) => {
            format!("corrupt or truncated gzip data ({io})")
        }
        nifti::NiftiError::Io(io) => format!("cannot read the {part} ({io})"),
        nifti::NiftiError::InvalidFormat => "not a NIfTI-1 file (the header has no NIfTI-1 magic)".into(),
        other => format!("not a readable NIfTI-1 file ({other})"),
    }
}

fn unflat(i: usize, d: [usize; 4]) -> (usize, usize, usize, usize) {
    (i % d[0], (i / d[0]) % d[1], (i / (d[0] * d[1])) % d[2], i / (d[0] * d[1] * d[2]))
}

/// Reads a mask: any non-zero voxel is inside. Must be 3-D and match `dims` when given.
pub fn read_mask(path: &Path, dims: Option<[usize; 3]>) -> Result<Vec<u8>> {
    let v = read_nifti(path)?;
    if v.nvol() != 1 {
        bail!("{}: a mask must be 3-D, this has {} volumes", path.display(), v.nvol());
    }
    if let Some(d) = dims {
        if v.geom.dims != d {
            bail!("{}: mask grid {:?} does not match the data grid {:?}", path.display(), v.geom.dims, d);
        }
    }
    Ok(v.as_flat().iter().map(|&x| (x != 0.0) as u8).collect())
}

/// Voxel-to-world from sform (preferred), qform, or pixdim alone, as the NIfTI standard orders them.
pub fn geometry_of(h: &nifti::NiftiHeader, dims: [usize; 3]) -> Result<Geometry> {
    let vs = [h.pixdim[1].abs(), h.pixdim[2].abs(), h.pixdim[3].abs()];
    let voxel_size = vs.map(|v| if v > 0.0 && v.is_finite() { v } else { 1.0 });
    let mut affine = [[0.0f64; 4]; 4];
    affine[3][3] = 1.0;
    if h.sform_code > 0 {
        for (r, row) in [h.srow_x, h.srow_y, h.srow_z].iter().enumerate() {
            for c in 0..4 {
                affine[r][c] = row[c] as f64;
            }
        }
    } else if h.qform_code > 0 {
        let (b, c, d) = (h.quatern_b as f64, h.quatern_c as f64, h.quatern_d as f64);
        let a = (1.0 - (b * b + c * c + d * d)).max(0.0).sqrt();
        let r = [
            [a * a + b * b - c * c - d * d, 2.0 * (b * c - a * d), 2.0 * (b * d + a * c)],
            [2.0 * (b * c + a * d), a * a + c * c - b * b - d * d, 2.0 * (c * d - a * b)],
            [2.0 * (b * d - a * c), 2.0 * (c * d + a * b), a * a + d * d - c * c - b * b],
        ];
        let qfac = if h.pixdim[0] < 0.0 { -1.0 } else { 1.0 };
        let s = [voxel_size[0] as f64, voxel_size[1] as f64, voxel_size[2] as f64 * qfac];
        for i in 0..3 {
            for j in 0..3 {
                affine[i][j] = r[i][j] * s[j];
            }
        }
        affine[0][3] = h.quatern_x as f64;
        affine[1][3] = h.quatern_y as f64;
        affine[2][3] = h.quatern_z as f64;
    } else {
        for i in 0..3 {
            affine[i][i] = voxel_size[i] as f64;
        }
    }
    if affine.iter().flatten().any(|v| !v.is_finite()) {
        bail!("the affine holds non-finite values");
    }
    let g = Geometry { dims, voxel_size, affine, header: h.clone() };
    if g.det().abs() < 1e-12 {
        bail!("the affine is singular");
    }
    Ok(g)
}

/// Writes `nvol` volumes of flat x-fastest data with `geom`'s header (sform/qform, units) as
/// float32. Compressed when `path` ends in .gz. Callers wanting all-or-nothing output go
/// through [`super::Outputs`].
pub fn write_nifti(path: &Path, geom: &Geometry, nvol: usize, data: &[f32]) -> Result<()> {
    let [nx, ny, nz] = geom.dims;
    let view = ArrayView4::from_shape((nx, ny, nz, nvol).f(), data)
        .map_err(|e| anyhow!("{}: data do not fit the grid ({e})", path.display()))?;
    let mut header = geom.header.clone();
    header.cal_min = 0.0;
    header.cal_max = 0.0;
    header.intent_code = 0;
    header.pixdim[4] = if nvol > 1 { header.pixdim[4].max(0.0) } else { 0.0 };
    let _ = header.set_description_str("neuroport");
    let write = |h: &nifti::NiftiHeader| -> Result<()> {
        if nvol == 1 {
            let v3 = view.index_axis(ndarray::Axis(3), 0);
            nifti::writer::WriterOptions::new(path).reference_header(h).write_nifti(&v3)?;
        } else {
            nifti::writer::WriterOptions::new(path).reference_header(h).write_nifti(&view)?;
        }
        Ok(())
    };
    write(&header).with_context(|| format!("cannot write {}", path.display()))
}
