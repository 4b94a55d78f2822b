//! DTI on a GPU (OpenCL or CUDA, through `runtime::gpu`): entry points in `cl/dti.cl`, math in
//! `cl/common/dti.h`. The fit runs in voxel chunks whose volume-major DWI slice stays within the
//! kernels' 32-bit indexing and the device's memory, so a 0.8 mm scan with 110 volumes
//! (2.3e9 values) fits in pieces instead of overflowing.

use super::{Design, DtiKernels, FitShare, Frame, D_ISO, LAMBDA_FLOOR, NFIELDS, NSCALARS};
use crate::io::progress::Progress;
use crate::runtime::gpu::{args, Gpu, Kernel, Shape};
use crate::runtime::columns::Columns;
use crate::runtime::Timings;
use anyhow::{bail, Result};

pub const SOURCE: &str = include_str!("../../cl/dti.cl");

pub struct GpuDti {
    gpu: Gpu,
    fit: Kernel,
    scalars: Kernel,
    inverse: Kernel,
    derivs: Kernel,
    sharpen: Kernel,
}

impl GpuDti {
    pub fn new(gpu: Gpu) -> Result<GpuDti> {
        let k = |name| gpu.kernel("dti", SOURCE, name);
        Ok(GpuDti { fit: k("dti_fit")?, scalars: k("dti_scalars")?, inverse: k("metric_inverse")?, derivs: k("metric_derivs")?, sharpen: k("metric_sharpen")?, gpu })
    }

    /// Voxels per fit chunk: the DWI slice below 2^31 values and a quarter of free memory.
    fn fit_chunk(&self, ngrad: usize) -> usize {
        let per_voxel = 4 * (ngrad + 8 + NSCALARS) + 1;
        let by_mem = (self.gpu.mem_free() / 4).min(self.gpu.max_alloc()) as usize / per_voxel;
        chunk_voxels(ngrad, by_mem)
    }

    /// Voxels [v0, v1) of the share: fitted, and their scalar maps made from the tensors still
    /// on the device where `out` wants them; each result read where it lies in `out`.
    fn fit_chunk_range(&self, dwi: &Columns<f32>, mask: &[u8], d: &Design, v0: usize, v1: usize, out: &mut FitShare) -> Result<()> {
        let g = &self.gpu;
        let n = v1 - v0;
        // Every volume's run of voxels [v0, v1), gathered on the way into the staging slots.
        let (b_dwi, b_mask) = (g.upload_columns(&dwi.part(v0..v1))?, g.upload(&mask[v0..v1])?);
        let (b_design, b_pinv) = (g.upload(&d.b)?, g.upload(&d.pinv)?);
        let (b_t, b_s0, b_f) = (g.alloc::<f32>(6 * n)?, g.alloc::<f32>(n)?, g.alloc::<i32>(n)?);
        g.launch(&self.fit, Shape::items(n), args![&b_dwi, &b_mask, &b_design, &b_pinv, n as i32, d.ngrad as i32, LAMBDA_FLOOR, &b_t, &b_s0, &b_f])?;
        let mut out = out.part(v0..v1);
        if let Some(maps) = &mut out.scalars {
            let b_o = g.alloc::<f32>(NSCALARS * n)?;
            g.launch(&self.scalars, Shape::items(n), args![&b_t, n as i32, &b_o])?;
            g.read_columns(&b_o, maps)?;
        }
        g.read_columns(&b_t, &mut out.tensor)?;
        g.read_columns(&b_s0, &mut out.s0)?;
        g.read_columns(&b_f, &mut out.flags)
    }
}

impl GpuDti {
    /// z-planes of the metric per slab: the tensor, fields and inverse (144 B a voxel) within
    /// free memory and the fields within the largest allocation, less a halo plane each side.
    fn metric_planes(&self, dims: [usize; 3]) -> usize {
        let nxy = (dims[0] * dims[1]).max(1) as u64;
        let by_mem = self.gpu.mem_free() / (4 * (12 + NFIELDS) as u64 * nxy);
        let by_alloc = self.gpu.max_alloc() / (4 * NFIELDS as u64 * nxy);
        let fit = by_mem.min(by_alloc) as usize;
        if fit >= dims[2] { dims[2] } else { fit.saturating_sub(2).max(1) }
    }

    /// [`metric`](DtiKernels::metric) in slabs of `planes` z-planes, each computed with a halo
    /// plane each side (the derivatives' neighbours) and only its own planes kept: a volume whose
    /// fields do not fit the device at once, with the bytes of one pass.
    pub fn metric_in_slabs(&mut self, tensor: &[f32], dims: [usize; 3], frame: Frame, planes: usize) -> Result<Vec<f32>> {
        let (nxy, nz) = (dims[0] * dims[1], dims[2]);
        let nvox = nxy * nz;
        if tensor.len() != 6 * nvox {
            bail!("tensor field size does not match the grid");
        }
        let g = &self.gpu;
        let whole = Columns::whole(tensor, 6);
        let mut out = vec![0f32; NFIELDS * nvox];
        let [ix, iy, iz] = frame.inv_voxel;
        for z0 in (0..nz).step_by(planes.max(1)) {
            let z1 = (z0 + planes.max(1)).min(nz);
            let (h0, h1) = (z0.saturating_sub(1), (z1 + 1).min(nz));
            let ns = (h1 - h0) * nxy;
            let (b_t, b_fields, b_g) = (g.upload_columns(&whole.part(h0 * nxy..h1 * nxy))?, g.alloc::<f32>(NFIELDS * ns)?, g.alloc::<f32>(6 * ns)?);
            g.launch(&self.inverse, Shape::items(ns), args![&b_t, ns as i32, frame.flip_x as i32, ix, iy, iz, D_ISO, &b_fields, &b_g])?;
            g.launch(&self.derivs, Shape::items(ns), args![&b_g, dims[0] as i32, dims[1] as i32, (h1 - h0) as i32, &b_fields])?;
            let slab = g.download(&b_fields)?;
            let keep = (z0 - h0) * nxy..(z1 - h0) * nxy;
            for c in 0..NFIELDS {
                out[c * nvox + z0 * nxy..c * nvox + z1 * nxy].copy_from_slice(&slab[c * ns + keep.start..c * ns + keep.end]);
            }
        }
        Ok(out)
    }
}

/// Voxels per chunk so that `ngrad` volumes of them stay within 32-bit indexing and `by_mem`.
pub fn chunk_voxels(ngrad: usize, by_mem: usize) -> usize {
    (i32::MAX as usize / ngrad.max(1)).min(by_mem).max(1)
}

impl DtiKernels for GpuDti {
    fn fit_into(&mut self, dwi: Columns<f32>, mask: &[u8], d: &Design, out: &mut FitShare, bar: &Progress) -> Result<()> {
        let nvox = mask.len();
        if dwi.len() != nvox || dwi.ncomp() != d.ngrad || out.len() != nvox {
            bail!("DWI holds {} x {} values and the outputs {} voxels, expected {} voxels x {} volumes", dwi.ncomp(), dwi.len(), out.len(), nvox, d.ngrad);
        }
        let step = self.fit_chunk(d.ngrad);
        let mut v0 = 0;
        while v0 < nvox {
            let v1 = (v0 + step).min(nvox);
            // The chunk is done when its results have been read back, with no wait added; one
            // chunk of the whole run (one GPU) is the bar's only step, shown as such.
            bar.piece(mask[v0..v1].iter().filter(|&&m| m != 0).count() as u64, || self.fit_chunk_range(&dwi, mask, d, v0, v1, out))?;
            v0 = v1;
        }
        Ok(())
    }

    fn scalars(&mut self, tensor: &[f32]) -> Result<Vec<f32>> {
        let nvox = tensor.len() / 6;
        let g = &self.gpu;
        let (b_t, b_o) = (g.upload(tensor)?, g.alloc::<f32>(NSCALARS * nvox)?);
        g.launch(&self.scalars, Shape::items(nvox), args![&b_t, nvox as i32, &b_o])?;
        g.download(&b_o)
    }

    fn metric(&mut self, tensor: &[f32], dims: [usize; 3], frame: Frame) -> Result<Vec<f32>> {
        let nvox: usize = dims.iter().product();
        if tensor.len() != 6 * nvox {
            bail!("tensor field size does not match the grid");
        }
        let planes = self.metric_planes(dims);
        if planes < dims[2] {
            return self.metric_in_slabs(tensor, dims, frame, planes);
        }
        let g = &self.gpu;
        let (b_t, b_fields, b_g) = (g.upload(tensor)?, g.alloc::<f32>(NFIELDS * nvox)?, g.alloc::<f32>(6 * nvox)?);
        let [ix, iy, iz] = frame.inv_voxel;
        g.launch(&self.inverse, Shape::items(nvox), args![&b_t, nvox as i32, frame.flip_x as i32, ix, iy, iz, D_ISO, &b_fields, &b_g])?;
        let [nx, ny, nz] = dims.map(|d| d as i32);
        g.launch(&self.derivs, Shape::items(nvox), args![&b_g, nx, ny, nz, &b_fields])?;
        g.download(&b_fields)
    }

    fn sharpen(&mut self, tensor: &[f32], alpha: f32) -> Result<Vec<f32>> {
        let nvox = tensor.len() / 6;
        let g = &self.gpu;
        let (b_t, b_o) = (g.upload(tensor)?, g.alloc::<f32>(6 * nvox)?);
        g.launch(&self.sharpen, Shape::items(nvox), args![&b_t, nvox as i32, alpha, LAMBDA_FLOOR, &b_o])?;
        g.download(&b_o)
    }

    fn take_timings(&mut self) -> Timings {
        self.gpu.take_timings().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn fit_chunks_stay_within_32_bit_indexing() {
        // 0.8 mm 260x311x260 with 110 volumes: 2.3e9 values would overflow an int index.
        let (nvox, ngrad) = (260 * 311 * 260usize, 110usize);
        let step = super::chunk_voxels(ngrad, usize::MAX);
        assert!(step * ngrad <= i32::MAX as usize && step < nvox);
        assert!(nvox.div_ceil(step) >= 2);
    }
}
