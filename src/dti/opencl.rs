//! DTI on an OpenCL device: entry points in `cl/dti.cl`, math in `cl/common/dti.h`.

use super::{Design, DtiKernels, Frame, TensorFit, D_ISO, LAMBDA_FLOOR, NFIELDS, NSCALARS};
use crate::runtime::opencl::ClDevice;
use crate::runtime::Timings;
use anyhow::{bail, Result};
use opencl3::kernel::{ExecuteKernel, Kernel};
use std::sync::Arc;

pub const SOURCE: &str = include_str!("../../cl/dti.cl");
const LOCAL: Option<usize> = None;

pub struct ClDti {
    dev: Arc<ClDevice>,
    fit: Kernel,
    scalars: Kernel,
    inverse: Kernel,
    derivs: Kernel,
    sharpen: Kernel,
    t: Timings,
}

impl ClDti {
    pub fn new(dev: Arc<ClDevice>) -> Result<ClDti> {
        let p = dev.program("dti", SOURCE)?;
        Ok(ClDti {
            fit: dev.kernel(&p, "dti_fit")?,
            scalars: dev.kernel(&p, "dti_scalars")?,
            inverse: dev.kernel(&p, "metric_inverse")?,
            derivs: dev.kernel(&p, "metric_derivs")?,
            sharpen: dev.kernel(&p, "metric_sharpen")?,
            dev,
            t: Timings::default(),
        })
    }
}

impl DtiKernels for ClDti {
    fn fit(&mut self, dwi: &[f32], mask: &[u8], d: &Design) -> Result<TensorFit> {
        let nvox = mask.len();
        if dwi.len() != nvox * d.ngrad {
            bail!("DWI holds {} values, expected {} voxels x {} volumes", dwi.len(), nvox, d.ngrad);
        }
        let dev = &self.dev;
        let t = &mut self.t;
        let b_dwi = dev.upload(dwi, t)?;
        let b_mask = dev.upload(mask, t)?;
        let b_design = dev.upload(&d.b, t)?;
        let b_pinv = dev.upload(&d.pinv, t)?;
        let b_t = dev.alloc::<f32>(6 * nvox)?;
        let b_s0 = dev.alloc::<f32>(nvox)?;
        let b_f = dev.alloc::<i32>(nvox)?;
        let (n, g, floor) = (nvox as i32, d.ngrad as i32, LAMBDA_FLOOR);
        let mut e = ExecuteKernel::new(&self.fit);
        unsafe {
            e.set_arg(&b_dwi).set_arg(&b_mask).set_arg(&b_design).set_arg(&b_pinv).set_arg(&n).set_arg(&g).set_arg(&floor);
            e.set_arg(&b_t).set_arg(&b_s0).set_arg(&b_f);
        }
        dev.run(&mut e, nvox, LOCAL, t)?;
        Ok(TensorFit { tensor: dev.download(&b_t, 6 * nvox, t)?, s0: dev.download(&b_s0, nvox, t)?, flags: dev.download(&b_f, nvox, t)? })
    }

    fn scalars(&mut self, tensor: &[f32]) -> Result<Vec<f32>> {
        let nvox = tensor.len() / 6;
        let (dev, t) = (&self.dev, &mut self.t);
        let b_t = dev.upload(tensor, t)?;
        let b_o = dev.alloc::<f32>(NSCALARS * nvox)?;
        let n = nvox as i32;
        let mut e = ExecuteKernel::new(&self.scalars);
        unsafe {
            e.set_arg(&b_t).set_arg(&n).set_arg(&b_o);
        }
        dev.run(&mut e, nvox, LOCAL, t)?;
        dev.download(&b_o, NSCALARS * nvox, t)
    }

    fn metric(&mut self, tensor: &[f32], dims: [usize; 3], frame: Frame) -> Result<Vec<f32>> {
        let nvox: usize = dims.iter().product();
        if tensor.len() != 6 * nvox {
            bail!("tensor field size does not match the grid");
        }
        let (dev, t) = (&self.dev, &mut self.t);
        let b_t = dev.upload(tensor, t)?;
        let b_fields = dev.alloc::<f32>(NFIELDS * nvox)?;
        let b_g = dev.alloc::<f32>(6 * nvox)?;
        let (n, flip, diso) = (nvox as i32, frame.flip_x as i32, D_ISO);
        let [ix, iy, iz] = frame.inv_voxel;
        let mut e = ExecuteKernel::new(&self.inverse);
        unsafe {
            e.set_arg(&b_t).set_arg(&n).set_arg(&flip).set_arg(&ix).set_arg(&iy).set_arg(&iz).set_arg(&diso);
            e.set_arg(&b_fields).set_arg(&b_g);
        }
        dev.run(&mut e, nvox, LOCAL, t)?;
        let [nx, ny, nz] = dims.map(|d| d as i32);
        let mut e = ExecuteKernel::new(&self.derivs);
        unsafe {
            e.set_arg(&b_g).set_arg(&nx).set_arg(&ny).set_arg(&nz).set_arg(&b_fields);
        }
        dev.run(&mut e, nvox, LOCAL, t)?;
        dev.download(&b_fields, NFIELDS * nvox, t)
    }

    fn sharpen(&mut self, tensor: &[f32], alpha: f32) -> Result<Vec<f32>> {
        let nvox = tensor.len() / 6;
        let (dev, t) = (&self.dev, &mut self.t);
        let b_t = dev.upload(tensor, t)?;
        let b_o = dev.alloc::<f32>(6 * nvox)?;
        let (n, floor) = (nvox as i32, LAMBDA_FLOOR);
        let mut e = ExecuteKernel::new(&self.sharpen);
        unsafe {
            e.set_arg(&b_t).set_arg(&n).set_arg(&alpha).set_arg(&floor).set_arg(&b_o);
        }
        dev.run(&mut e, nvox, LOCAL, t)?;
        dev.download(&b_o, 6 * nvox, t)
    }

    fn take_timings(&mut self) -> Timings {
        std::mem::take(&mut self.t)
    }
}
