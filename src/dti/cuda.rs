//! DTI on a CUDA device: entry points in `cu/dti.cu`, math in `cl/common/dti.h`.

use super::{Design, DtiKernels, Frame, TensorFit, D_ISO, LAMBDA_FLOOR, NFIELDS, NSCALARS};
use crate::runtime::cuda::{grid, CudaDevice, PushKernelArg};
use crate::runtime::Timings;
use anyhow::{bail, Result};
use cudarc::driver::CudaFunction;
use std::sync::Arc;

pub const SOURCE: &str = include_str!("../../cu/dti.cu");
const BLOCK: u32 = 128;

pub struct CudaDti {
    dev: Arc<CudaDevice>,
    fit: CudaFunction,
    scalars: CudaFunction,
    inverse: CudaFunction,
    derivs: CudaFunction,
    sharpen: CudaFunction,
    t: Timings,
}

impl CudaDti {
    pub fn new(dev: Arc<CudaDevice>) -> Result<CudaDti> {
        let m = dev.module("dti", SOURCE)?;
        Ok(CudaDti {
            fit: dev.function(&m, "dti_fit")?,
            scalars: dev.function(&m, "dti_scalars")?,
            inverse: dev.function(&m, "metric_inverse")?,
            derivs: dev.function(&m, "metric_derivs")?,
            sharpen: dev.function(&m, "metric_sharpen")?,
            dev,
            t: Timings::default(),
        })
    }
}

impl DtiKernels for CudaDti {
    fn fit(&mut self, dwi: &[f32], mask: &[u8], d: &Design) -> Result<TensorFit> {
        let nvox = mask.len();
        if dwi.len() != nvox * d.ngrad {
            bail!("DWI holds {} values, expected {} voxels x {} volumes", dwi.len(), nvox, d.ngrad);
        }
        let (dev, t) = (&self.dev, &mut self.t);
        let b_dwi = dev.upload(dwi, t)?;
        let b_mask = dev.upload(mask, t)?;
        let b_design = dev.upload(&d.b, t)?;
        let b_pinv = dev.upload(&d.pinv, t)?;
        let mut b_t = dev.alloc::<f32>(6 * nvox)?;
        let mut b_s0 = dev.alloc::<f32>(nvox)?;
        let mut b_f = dev.alloc::<i32>(nvox)?;
        let (n, g, floor) = (nvox as i32, d.ngrad as i32, LAMBDA_FLOOR);
        dev.launch(t, || {
            let mut l = dev.stream.launch_builder(&self.fit);
            l.arg(&b_dwi).arg(&b_mask).arg(&b_design).arg(&b_pinv).arg(&n).arg(&g).arg(&floor);
            l.arg(&mut b_t).arg(&mut b_s0).arg(&mut b_f);
            unsafe { l.launch(grid(nvox, BLOCK)) }.map(|_| ())
        })?;
        Ok(TensorFit { tensor: dev.download(&b_t, t)?, s0: dev.download(&b_s0, t)?, flags: dev.download(&b_f, t)? })
    }

    fn scalars(&mut self, tensor: &[f32]) -> Result<Vec<f32>> {
        let nvox = tensor.len() / 6;
        let (dev, t) = (&self.dev, &mut self.t);
        let b_t = dev.upload(tensor, t)?;
        let mut b_o = dev.alloc::<f32>(NSCALARS * nvox)?;
        let n = nvox as i32;
        dev.launch(t, || {
            let mut l = dev.stream.launch_builder(&self.scalars);
            l.arg(&b_t).arg(&n).arg(&mut b_o);
            unsafe { l.launch(grid(nvox, BLOCK)) }.map(|_| ())
        })?;
        dev.download(&b_o, t)
    }

    fn metric(&mut self, tensor: &[f32], dims: [usize; 3], frame: Frame) -> Result<Vec<f32>> {
        let nvox: usize = dims.iter().product();
        if tensor.len() != 6 * nvox {
            bail!("tensor field size does not match the grid");
        }
        let (dev, t) = (&self.dev, &mut self.t);
        let b_t = dev.upload(tensor, t)?;
        let mut b_fields = dev.alloc::<f32>(NFIELDS * nvox)?;
        let mut b_g = dev.alloc::<f32>(6 * nvox)?;
        let (n, flip, diso) = (nvox as i32, frame.flip_x as i32, D_ISO);
        let [ix, iy, iz] = frame.inv_voxel;
        dev.launch(t, || {
            let mut l = dev.stream.launch_builder(&self.inverse);
            l.arg(&b_t).arg(&n).arg(&flip).arg(&ix).arg(&iy).arg(&iz).arg(&diso).arg(&mut b_fields).arg(&mut b_g);
            unsafe { l.launch(grid(nvox, BLOCK)) }.map(|_| ())
        })?;
        let [nx, ny, nz] = dims.map(|d| d as i32);
        dev.launch(t, || {
            let mut l = dev.stream.launch_builder(&self.derivs);
            l.arg(&b_g).arg(&nx).arg(&ny).arg(&nz).arg(&mut b_fields);
            unsafe { l.launch(grid(nvox, BLOCK)) }.map(|_| ())
        })?;
        dev.download(&b_fields, t)
    }

    fn sharpen(&mut self, tensor: &[f32], alpha: f32) -> Result<Vec<f32>> {
        let nvox = tensor.len() / 6;
        let (dev, t) = (&self.dev, &mut self.t);
        let b_t = dev.upload(tensor, t)?;
        let mut b_o = dev.alloc::<f32>(6 * nvox)?;
        let (n, floor) = (nvox as i32, LAMBDA_FLOOR);
        dev.launch(t, || {
            let mut l = dev.stream.launch_builder(&self.sharpen);
            l.arg(&b_t).arg(&n).arg(&alpha).arg(&floor).arg(&mut b_o);
            unsafe { l.launch(grid(nvox, BLOCK)) }.map(|_| ())
        })?;
        dev.download(&b_o, t)
    }

    fn take_timings(&mut self) -> Timings {
        std::mem::take(&mut self.t)
    }
}
