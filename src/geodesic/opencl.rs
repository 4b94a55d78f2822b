//! Geodesic tracking on an OpenCL device: entry points in `cl/geodesic.cl`, integrator in
//! `cl/common/geodesic.h`. The texture variant reads six RGBA float image3d_t objects (filled from
//! the fields buffer on the device the first time it is used) through a linear-filtering sampler.

use super::{batch_within, geo_params, seeds_component_major, FibreBatch, Fields, GeodesicKernels, Interp, Seed, TraceParams, GROUPS};
use crate::runtime::opencl::ClDevice;
use crate::runtime::Timings;
use anyhow::{anyhow, bail, Context, Result};
use opencl3::kernel::{ExecuteKernel, Kernel};
use opencl3::memory::{cl_image_desc, cl_image_format, Buffer, Image, CL_FLOAT, CL_MEM_OBJECT_IMAGE3D, CL_MEM_READ_ONLY, CL_RGBA};
use std::ptr;
use std::sync::Arc;

pub const SOURCE: &str = include_str!("../../cl/geodesic.cl");

struct Resident {
    dims: [usize; 3],
    voxel_size: [f32; 3],
    f4: Buffer<f32>,
    labels: Buffer<u8>,
    images: Option<Vec<Image>>,
}

pub struct ClGeodesic {
    dev: Arc<ClDevice>,
    trace_kernel: Kernel,
    trace_texture: Kernel,
    pack: Kernel,
    resident: Option<Resident>,
    t: Timings,
}

impl ClGeodesic {
    pub fn new(dev: Arc<ClDevice>) -> Result<ClGeodesic> {
        let p = dev.program("geodesic", SOURCE)?;
        Ok(ClGeodesic {
            trace_kernel: dev.kernel(&p, "geodesic_trace_kernel")?,
            trace_texture: dev.kernel(&p, "geodesic_trace_texture")?,
            pack: dev.kernel(&p, "geodesic_pack")?,
            dev,
            resident: None,
            t: Timings::default(),
        })
    }

    /// The six images, copied from the fields buffer on the device once.
    fn ensure_images(&mut self) -> Result<()> {
        let dev = &self.dev;
        let r = self.resident.as_mut().ok_or_else(|| anyhow!("geodesic fields not uploaded"))?;
        if r.images.is_some() {
            return Ok(());
        }
        if !dev.info.image_support {
            bail!("{} has no image support: use --interp kernel", dev.info.name);
        }
        let dims = r.dims;
        let max = [dev.device.image3d_max_width()?, dev.device.image3d_max_height()?, dev.device.image3d_max_depth()?];
        if (0..3).any(|a| dims[a] > max[a]) {
            bail!("grid {dims:?} exceeds the 3-D image limits {max:?} of {}: use --interp kernel", dev.info.name);
        }
        let format = cl_image_format { image_channel_order: CL_RGBA, image_channel_data_type: CL_FLOAT };
        // SAFETY: a plain C struct; all-zero is its documented "unused" value for the other fields.
        let mut desc: cl_image_desc = unsafe { std::mem::zeroed() };
        desc.image_type = CL_MEM_OBJECT_IMAGE3D;
        desc.image_width = dims[0];
        desc.image_height = dims[1];
        desc.image_depth = dims[2];
        let nvox = dims.iter().product::<usize>();
        let mut images = Vec::with_capacity(GROUPS);
        for k in 0..GROUPS {
            let mut img = unsafe { Image::create(&dev.context, CL_MEM_READ_ONLY, &format, &desc, ptr::null_mut()) }
                .with_context(|| format!("cannot create a {dims:?} RGBA float image on {}", dev.info.name))?;
            let origin = [0usize; 3];
            let ev = unsafe { dev.queue.enqueue_copy_buffer_to_image(&r.f4, &mut img, k * nvox * 16, origin.as_ptr(), dims.as_ptr(), &[]) }
                .context("cannot fill the field images")?;
            self.t.transfer_ms += crate::runtime::opencl::event_ms(&ev)?;
            images.push(img);
        }
        r.images = Some(images);
        Ok(())
    }

    /// GPUs: `block_size`; CPU devices choose their own.
    fn local_size(&self, n: usize) -> Option<usize> {
        let i = &self.dev.info;
        i.is_gpu.then(|| super::block_size(n, i.compute_units))
    }
}

impl ClGeodesic {
    /// Traces the seeds in the order given.
    fn trace_as_given(&mut self, seeds: &[Seed], p: &TraceParams) -> Result<FibreBatch> {
        if p.interp == Interp::Texture {
            self.ensure_images()?;
        }
        let n = seeds.len();
        let local = self.local_size(n);
        let dev = self.dev.clone();
        let r = self.resident.as_ref().ok_or_else(|| anyhow!("geodesic fields not uploaded"))?;
        let t = &mut self.t;
        let gp = geo_params(r.dims, r.voxel_size, p, n);
        if n == 0 {
            return Ok(FibreBatch::default());
        }
        let b_seeds = dev.upload(&seeds_component_major(seeds), t)?;
        let npts = if p.record { (p.max_steps as usize + 1) * 3 * n } else { 1 };
        let b_points = dev.alloc::<f32>(npts)?;
        let b_si = dev.alloc::<i32>(3 * n)?;
        let b_sf = dev.alloc::<f32>(4 * n)?;
        let mut e = ExecuteKernel::new(if p.interp == Interp::Texture { &self.trace_texture } else { &self.trace_kernel });
        unsafe {
            match (&r.images, p.interp) {
                (Some(imgs), Interp::Texture) => {
                    for img in imgs {
                        e.set_arg(img);
                    }
                }
                _ => {
                    e.set_arg(&r.f4);
                }
            }
            e.set_arg(&r.labels).set_arg(&b_seeds).set_arg(&gp).set_arg(&b_points).set_arg(&b_si).set_arg(&b_sf);
        }
        dev.run(&mut e, n, local, t)?;
        let sum_i = dev.download(&b_si, 3 * n, t)?;
        let sum_f = dev.download(&b_sf, 4 * n, t)?;
        let mut batch = FibreBatch::from_summaries(&sum_i, &sum_f, n);
        if !p.record {
            return Ok(batch);
        }
        let (offsets, total) = batch.pack_plan();
        let b_off = dev.upload(&offsets, t)?;
        let b_packed = dev.alloc::<f32>(3 * total)?;
        let mut pack_t = Timings::default();
        let nn = n as i32;
        let mut e = ExecuteKernel::new(&self.pack);
        unsafe {
            e.set_arg(&nn).set_arg(&b_points).set_arg(&b_si).set_arg(&b_off).set_arg(&b_packed);
        }
        dev.run(&mut e, n, local, &mut pack_t)?;
        t.transfer_ms += pack_t.kernel_ms;
        batch.set_packed(dev.download(&b_packed, 3 * total, t)?);
        Ok(batch)
    }
}

impl GeodesicKernels for ClGeodesic {
    fn upload(&mut self, fields: &Fields) -> Result<()> {
        self.resident = None;
        let f4 = self.dev.upload(&fields.packed4(), &mut self.t)?;
        let labels = self.dev.upload(&fields.labels, &mut self.t)?;
        self.resident = Some(Resident { dims: fields.dims, voxel_size: fields.voxel_size, f4, labels, images: None });
        Ok(())
    }

    fn max_batch(&self, p: &TraceParams) -> usize {
        let global = self.dev.info.global_mem_bytes.max(1 << 28);
        let alloc = self.dev.device.max_mem_alloc_size().unwrap_or(global / 4);
        // One fibre's points live in two buffers; neither may pass the largest allocation.
        let per_points = if p.record { (p.max_steps as u64 + 1) * 12 } else { 1 };
        let by_alloc = (alloc / per_points).max(1) as usize;
        batch_within(global / 3, p).min(by_alloc)
    }

    fn trace(&mut self, seeds: &[Seed], p: &TraceParams) -> Result<FibreBatch> {
        let mut t = std::mem::take(&mut self.t);
        let r = super::order::traced_in_spatial_order(seeds, &mut t, |s| self.trace_as_given(s, p));
        self.t.add(&t);
        r
    }

    fn take_timings(&mut self) -> Timings {
        std::mem::take(&mut self.t)
    }
}
