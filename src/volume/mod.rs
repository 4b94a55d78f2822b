//! Volumes: ndarray data with voxel size and the NIfTI affine; NIfTI I/O, FSL gradient tables,
//! masks, and all-or-nothing output writing.

mod deflate_floats;
mod gradients;
mod gz_members;
mod gz_split;
mod inflate_marked;
pub mod masks;
mod nifti_decode;
mod nifti2;
mod nifti_io;
mod nifti_stream;
mod read_pieces;
mod read_progress;
mod nifti_write;
mod side_by_side;
pub mod spacing;
mod taken_out;
mod tensor_in;
mod outputs;
pub mod planes;
mod temps;
mod text;

pub use gradients::{b0_threshold, read_bvals_bvecs, read_mrtrix_grad, GradFiles, GradientTable, B0_MAX, B_MAX};
pub use masks::{mask_for, read_keeping_nonfinite, read_mask, read_mask_like, skip_nonfinite, skip_nonfinite_values, Nonfinite};
pub use gz_split::split_reads;
pub use nifti_io::{geometry_of, plain_io, read_header, read_nifti, read_nifti_showing};
pub use nifti_stream::NiftiStream;
pub use nifti_write::{member_size, write_gz, write_gz_blocks, write_nifti, write_nifti_to, write_voxels_to, OutputType, Voxels};
#[cfg(test)]
pub(crate) use nifti_write::write_nifti_members;
pub use outputs::{check_free, prefixed, resolve_prefix, set_overwrite, Outputs};
pub(crate) use outputs::cause as write_cause;
pub use side_by_side::SideBySide;
pub(crate) use nifti_decode::Whole;
pub use taken_out::{Hits, TakenOut};
pub use tensor_in::read_tensor;
pub use temps::{create_file, forget_scratch, register_scratch, remove_temporaries_now};
pub use text::read_text;

/// A 4-D DWI series and its FSL gradient table, checked against each other.
pub fn read_dwi(dwi: &std::path::Path, bvals: &std::path::Path, bvecs: &std::path::Path) -> anyhow::Result<(Volume, GradientTable)> {
    read_dwi_with(dwi, GradFiles::Fsl { bvals, bvecs })
}

/// A 4-D DWI series and its gradient table from FSL or MRtrix files.
pub fn read_dwi_with(dwi: &std::path::Path, grad: GradFiles<'_>) -> anyhow::Result<(Volume, GradientTable)> {
    read_dwi_showing(dwi, grad, false)
}

/// [`read_dwi_with`], the read's progress shown where it is long (`show`).
pub fn read_dwi_showing(dwi: &std::path::Path, grad: GradFiles<'_>, show: bool) -> anyhow::Result<(Volume, GradientTable)> {
    let v = read_nifti_showing(dwi, show)?;
    require_series(dwi, &v.geom, v.nvol())?;
    let g = grad.read(v.nvol(), &v.geom)?;
    Ok((v, g))
}

/// A DWI read from `dwi` must be a series: `nvol` volumes, 2 or more.
pub fn require_series(dwi: &std::path::Path, geom: &Geometry, nvol: usize) -> anyhow::Result<()> {
    if nvol < 2 {
        // A 4-D header of one volume (DIPY's S0_10slices.nii.gz, a b=0 extracted by fslroi)
        // is not "3-D" to the user who reads its header.
        let what = if geom.header.dim[0] >= 4 { "this has 1 volume" } else { "this is 3-D" };
        anyhow::bail!("{}: a 4-D DWI series is needed, {what}", dwi.display());
    }
    Ok(())
}

use ndarray::{Array4, ArrayView4, ShapeBuilder};

/// Where a volume sits in the world: grid size, voxel size (mm), voxel-to-world affine, and the
/// header it came with (kept so outputs carry the input's sform/qform and units).
#[derive(Clone, Debug)]
pub struct Geometry {
    pub dims: [usize; 3],
    pub voxel_size: [f32; 3],
    pub affine: [[f64; 4]; 4],
    pub header: nifti::NiftiHeader,
}

impl Geometry {
    pub fn nvox(&self) -> usize {
        self.dims[0] * self.dims[1] * self.dims[2]
    }
    /// Flat index of voxel (x, y, z): x fastest, as NIfTI stores it.
    pub fn index(&self, x: usize, y: usize, z: usize) -> usize {
        x + self.dims[0] * (y + self.dims[1] * z)
    }
    /// Determinant of the affine's 3x3 part; positive means FSL stores bvecs with x negated.
    pub fn det(&self) -> f64 {
        let a = &self.affine;
        a[0][0] * (a[1][1] * a[2][2] - a[1][2] * a[2][1]) - a[0][1] * (a[1][0] * a[2][2] - a[1][2] * a[2][0])
            + a[0][2] * (a[1][0] * a[2][1] - a[1][1] * a[2][0])
    }
    /// A direction in the FSL bvecs frame (as bvecs, dtifit's V1 and bedpostx's dyads are
    /// stored) in image voxel axes: x negated when the determinant is positive.
    pub fn bvecs_to_voxel(&self, v: [f64; 3]) -> [f64; 3] {
        if self.det() > 0.0 { [0.0 - v[0], v[1], v[2]] } else { v }
    }
    /// A direction in the FSL bvecs frame in world (scanner) axes, unit length. bvecs are
    /// physical directions along the image axes, so the map is the affine's 3x3 part with each
    /// column divided by its length (the voxel size), not the affine itself.
    pub fn bvecs_to_world(&self, v: [f64; 3]) -> [f64; 3] {
        let p = self.bvecs_to_voxel(v);
        let a = &self.affine;
        let len: [f64; 3] = std::array::from_fn(|c| (a[0][c] * a[0][c] + a[1][c] * a[1][c] + a[2][c] * a[2][c]).sqrt());
        let w: [f64; 3] = std::array::from_fn(|r| (0..3).map(|c| a[r][c] / len[c] * p[c]).sum());
        let n = (w[0] * w[0] + w[1] * w[1] + w[2] * w[2]).sqrt();
        if n > 0.0 { w.map(|x| x / n) } else { w }
    }
    /// The inverse of [`Geometry::bvecs_to_world`]: a world (scanner) direction, as MRtrix's
    /// gradient tables hold them, in the FSL bvecs frame, unit length.
    pub fn world_to_bvecs(&self, w: [f64; 3]) -> [f64; 3] {
        let a = &self.affine;
        let len: [f64; 3] = std::array::from_fn(|c| (a[0][c] * a[0][c] + a[1][c] * a[1][c] + a[2][c] * a[2][c]).sqrt());
        let m: [[f64; 3]; 3] = std::array::from_fn(|r| std::array::from_fn(|c| a[r][c] / len[c]));
        let inv = invert3(&m);
        let p: [f64; 3] = std::array::from_fn(|r| (0..3).map(|c| inv[r][c] * w[c]).sum());
        let n = (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]).sqrt();
        let p = if n > 0.0 { p.map(|x| x / n) } else { p };
        // bvecs_to_voxel is its own inverse (it negates x or nothing).
        self.bvecs_to_voxel(p)
    }
    /// Voxel coordinates (continuous, voxel centres at integers) to world millimetres.
    pub fn voxel_to_world(&self, p: [f64; 3]) -> [f64; 3] {
        let a = &self.affine;
        std::array::from_fn(|r| a[r][0] * p[0] + a[r][1] * p[1] + a[r][2] * p[2] + a[r][3])
    }
    /// World millimetres to continuous voxel coordinates.
    pub fn world_to_voxel(&self, w: [f64; 3]) -> [f64; 3] {
        let a = &self.affine;
        let m = [[a[0][0], a[0][1], a[0][2]], [a[1][0], a[1][1], a[1][2]], [a[2][0], a[2][1], a[2][2]]];
        let inv = invert3(&m);
        let d = [w[0] - a[0][3], w[1] - a[1][3], w[2] - a[2][3]];
        std::array::from_fn(|r| inv[r][0] * d[0] + inv[r][1] * d[1] + inv[r][2] * d[2])
    }
    /// A synthetic geometry: axis-aligned, origin at voxel 0, sform and qform both scanner-anat.
    pub fn synthetic(dims: [usize; 3], voxel_size: [f32; 3]) -> Geometry {
        let mut affine = [[0.0; 4]; 4];
        for i in 0..3 {
            affine[i][i] = voxel_size[i] as f64;
        }
        affine[3][3] = 1.0;
        let header = nifti::NiftiHeader {
            pixdim: [1.0, voxel_size[0], voxel_size[1], voxel_size[2], 1.0, 1.0, 1.0, 1.0],
            sform_code: 1,
            qform_code: 1,
            srow_x: [voxel_size[0], 0.0, 0.0, 0.0],
            srow_y: [0.0, voxel_size[1], 0.0, 0.0],
            srow_z: [0.0, 0.0, voxel_size[2], 0.0],
            quatern_b: 0.0,
            quatern_c: 0.0,
            quatern_d: 0.0,
            xyzt_units: 2 | 8, // mm, s
            ..Default::default()
        };
        Geometry { dims, voxel_size, affine, header }
    }
}

/// Voxel (x, y, z) of flat index `index` on a `dims` grid: the inverse of [`Geometry::index`].
/// A free function because most callers hold only the grid's size, not a [`Geometry`].
#[inline]
pub fn xyz_of(index: usize, dims: [usize; 3]) -> [usize; 3] {
    [index % dims[0], (index / dims[0]) % dims[1], index / (dims[0] * dims[1])]
}

pub fn invert3(m: &[[f64; 3]; 3]) -> [[f64; 3]; 3] {
    let det = m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
        + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
    let c = |r0: usize, c0: usize, r1: usize, c1: usize| m[r0][c0] * m[r1][c1] - m[r0][c1] * m[r1][c0];
    let inv = 1.0 / det;
    [
        [c(1, 1, 2, 2) * inv, -c(0, 1, 2, 2) * inv, c(0, 1, 1, 2) * inv],
        [-c(1, 0, 2, 2) * inv, c(0, 0, 2, 2) * inv, -c(0, 0, 1, 2) * inv],
        [c(1, 0, 2, 1) * inv, -c(0, 0, 2, 1) * inv, c(0, 0, 1, 1) * inv],
    ]
}

/// A 3-D or 4-D float volume. Data are held x-fastest, then y, z and volume, which is both the
/// NIfTI order and the component-major layout the device kernels read.
#[derive(Clone, Debug)]
pub struct Volume {
    pub geom: Geometry,
    data: Array4<f32>,
}

impl Volume {
    /// Wraps flat data (x fastest, volume slowest) of `nvol` volumes.
    pub fn from_flat(geom: Geometry, nvol: usize, data: Vec<f32>) -> Volume {
        let [nx, ny, nz] = geom.dims;
        assert_eq!(data.len(), nx * ny * nz * nvol, "volume data size");
        let data = Array4::from_shape_vec((nx, ny, nz, nvol).f(), data).expect("shape checked above");
        Volume { geom, data }
    }
    pub fn nvol(&self) -> usize {
        self.data.shape()[3]
    }
    pub fn nvox(&self) -> usize {
        self.geom.nvox()
    }
    /// The data indexed `[x, y, z, t]`.
    pub fn view(&self) -> ArrayView4<'_, f32> {
        self.data.view()
    }
    pub fn as_flat(&self) -> &[f32] {
        self.data.as_slice_memory_order().expect("volumes are built contiguous")
    }
    /// Volume `t` as a flat x-fastest slice.
    pub fn frame(&self, t: usize) -> &[f32] {
        let n = self.nvox();
        &self.as_flat()[t * n..(t + 1) * n]
    }
    /// The data, flat, for in-place repair (see [`masks::skip_nonfinite`]).
    pub fn as_flat_mut(&mut self) -> &mut [f32] {
        self.data.as_slice_memory_order_mut().expect("volumes are built contiguous")
    }
    pub fn into_flat(self) -> Vec<f32> {
        let (v, _) = self.data.into_raw_vec_and_offset();
        v
    }
}

#[cfg(test)]
mod tests {
    use super::{xyz_of, Geometry};

    /// xyz_of undoes Geometry::index on every voxel of grids with unequal, odd and unit sides.
    #[test]
    fn xyz_of_inverts_index() {
        for dims in [[1, 1, 1], [7, 5, 9], [1, 4, 3], [6, 1, 2], [3, 8, 1]] {
            let g = Geometry::synthetic(dims, [1.0; 3]);
            for v in 0..g.nvox() {
                let [x, y, z] = xyz_of(v, dims);
                assert!(x < dims[0] && y < dims[1] && z < dims[2], "{dims:?}: {v} -> {x} {y} {z}");
                assert_eq!(g.index(x, y, z), v, "{dims:?}");
            }
        }
        assert_eq!(xyz_of(1 + 7 * (2 + 5 * 3), [7, 5, 9]), [1, 2, 3]);
    }
}
