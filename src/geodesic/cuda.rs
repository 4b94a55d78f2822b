//! Geodesic tracking on a CUDA device: entry points in `cu/geodesic.cu`, integrator in
//! `cl/common/geodesic.h`. The texture variant reads six 3-D texture objects (float4 CUDA arrays, or
//! half-float ones with `NEUROPORT_GEODESIC_HALF=1`, an experiment: docs/performance.md;
//! linear filtering, clamped, unnormalised coordinates) filled from the fields buffer on the device
//! the first time it is used and freed with the fields.

use super::{batch_within, geo_params, seeds_component_major, FibreBatch, Fields, GeodesicKernels, Interp, Seed, TraceParams, GROUPS};
use crate::runtime::cuda::{grid, CudaDevice, LaunchConfig, PushKernelArg};
use crate::runtime::Timings;
use anyhow::{anyhow, Result};
use cudarc::driver::sys;
use cudarc::driver::{CudaFunction, CudaSlice, DevicePtr};
use std::sync::Arc;

pub const SOURCE: &str = include_str!("../../cu/geodesic.cu");

/// Six float4 3-D arrays and their texture objects; destroyed on drop.
struct FieldTextures {
    dev: Arc<CudaDevice>,
    arrays: Vec<sys::CUarray>,
    tex: Vec<sys::CUtexObject>,
}

// SAFETY: the handles are plain driver handles, used only with the owning context bound.
unsafe impl Send for FieldTextures {}

impl FieldTextures {
    fn from_device(dev: &Arc<CudaDevice>, f4: &CudaSlice<f32>, dims: [usize; 3], t: &mut Timings) -> Result<FieldTextures> {
        let err = |what: &str, e: cudarc::driver::DriverError| anyhow!("{what} on {}: {e:?}", dev.info.name);
        dev.ctx.bind_to_thread().map_err(|e| err("cannot bind the CUDA context", e))?;
        let mut out = FieldTextures { dev: dev.clone(), arrays: Vec::new(), tex: Vec::new() };
        let nvox: usize = dims.iter().product();
        // Experiment (docs/performance.md): half-float texels, read back as float by the hardware.
        let half = std::env::var("NEUROPORT_GEODESIC_HALF").is_ok_and(|v| v == "1");
        let halves = if half { Some(dev.upload(&dev.download(f4, t)?.iter().map(|&x| f16_bits(x)).collect::<Vec<u16>>(), t)?) } else { None };
        let texel = if half { 8 } else { 16 };
        let (base, _sync) = match &halves {
            Some(h) => h.device_ptr(&dev.stream),
            None => f4.device_ptr(&dev.stream),
        };
        for k in 0..GROUPS {
            let desc = sys::CUDA_ARRAY3D_DESCRIPTOR {
                Width: dims[0],
                Height: dims[1],
                Depth: dims[2],
                Format: if half { sys::CUarray_format::CU_AD_FORMAT_HALF } else { sys::CUarray_format::CU_AD_FORMAT_FLOAT },
                NumChannels: 4,
                Flags: 0,
            };
            let mut arr: sys::CUarray = std::ptr::null_mut();
            unsafe { sys::cuArray3DCreate_v2(&mut arr, &desc) }.result().map_err(|e| err(&format!("cannot create a {dims:?} float4 3-D array"), e))?;
            out.arrays.push(arr);
            // Every field spelled out: CUmemorytype has no zero value, so mem::zeroed() is invalid.
            let cp = sys::CUDA_MEMCPY3D {
                srcXInBytes: 0,
                srcY: 0,
                srcZ: 0,
                srcLOD: 0,
                srcMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
                srcHost: std::ptr::null(),
                srcDevice: base + (k * nvox * texel) as u64,
                srcArray: std::ptr::null_mut(),
                reserved0: std::ptr::null_mut(),
                srcPitch: dims[0] * texel,
                srcHeight: dims[1],
                dstXInBytes: 0,
                dstY: 0,
                dstZ: 0,
                dstLOD: 0,
                dstMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_ARRAY,
                dstHost: std::ptr::null_mut(),
                dstDevice: 0,
                dstArray: arr,
                reserved1: std::ptr::null_mut(),
                dstPitch: 0,
                dstHeight: 0,
                WidthInBytes: dims[0] * texel,
                Height: dims[1],
                Depth: dims[2],
            };
            let (r, ms) = dev.timed(|| unsafe { sys::cuMemcpy3DAsync_v2(&cp, dev.stream.cu_stream()) }.result())?;
            r.map_err(|e| err("cannot fill a field texture", e))?;
            t.transfer_ms += ms;
            // SAFETY: every enum in these two descriptors has a zero variant (ARRAY, WRAP, POINT),
            // and zero is the documented value of each field not set below.
            let mut res: sys::CUDA_RESOURCE_DESC = unsafe { std::mem::zeroed() };
            res.resType = sys::CUresourcetype::CU_RESOURCE_TYPE_ARRAY;
            res.res.array.hArray = arr;
            let mut td: sys::CUDA_TEXTURE_DESC = unsafe { std::mem::zeroed() };
            td.addressMode = [sys::CUaddress_mode::CU_TR_ADDRESS_MODE_CLAMP; 3];
            td.filterMode = sys::CUfilter_mode::CU_TR_FILTER_MODE_LINEAR;
            td.flags = 0; // unnormalised coordinates, values read as float
            let mut tex: sys::CUtexObject = 0;
            unsafe { sys::cuTexObjectCreate(&mut tex, &res, &td, std::ptr::null()) }.result().map_err(|e| err("cannot create a texture object", e))?;
            out.tex.push(tex);
        }
        dev.stream.synchronize().map_err(|e| err("texture fill failed", e))?;
        Ok(out)
    }
}

/// IEEE half-precision bits of `x`, rounded to nearest even (overflow to infinity, NaN kept).
fn f16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let exp = ((b >> 23) & 0xff) as i32;
    let man = b & 0x7f_ffff;
    if exp == 0xff {
        return sign | 0x7c00 | if man != 0 { 0x200 } else { 0 };
    }
    let e = exp - 127 + 15;
    if e >= 31 {
        return sign | 0x7c00;
    }
    if e <= 0 {
        if e < -10 {
            return sign;
        }
        let m = man | 0x80_0000;
        let shift = (14 - e) as u32;
        let half_bit = 1u32 << (shift - 1);
        let r = m & ((1 << shift) - 1);
        let mut h = m >> shift;
        if r > half_bit || (r == half_bit && h & 1 == 1) {
            h += 1;
        }
        return sign | h as u16;
    }
    let mut h = ((e as u32) << 10) | (man >> 13);
    let r = man & 0x1fff;
    if r > 0x1000 || (r == 0x1000 && h & 1 == 1) {
        h += 1; // a carry into the exponent is the correct rounding
    }
    sign | h as u16
}

impl Drop for FieldTextures {
    fn drop(&mut self) {
        let _ = self.dev.ctx.bind_to_thread();
        let _ = self.dev.stream.synchronize();
        for &t in &self.tex {
            let _ = unsafe { sys::cuTexObjectDestroy(t) };
        }
        for &a in &self.arrays {
            let _ = unsafe { sys::cuArrayDestroy(a) };
        }
    }
}

struct Resident {
    dims: [usize; 3],
    voxel_size: [f32; 3],
    f4: CudaSlice<f32>,
    labels: CudaSlice<u8>,
    textures: Option<FieldTextures>,
}

pub struct CudaGeodesic {
    dev: Arc<CudaDevice>,
    trace_kernel: CudaFunction,
    trace_texture: CudaFunction,
    pack: CudaFunction,
    resident: Option<Resident>,
    t: Timings,
}

impl CudaGeodesic {
    pub fn new(dev: Arc<CudaDevice>) -> Result<CudaGeodesic> {
        let m = dev.module("geodesic", SOURCE)?;
        Ok(CudaGeodesic {
            trace_kernel: dev.function(&m, "geodesic_trace_kernel")?,
            trace_texture: dev.function(&m, "geodesic_trace_texture")?,
            pack: dev.function(&m, "geodesic_pack")?,
            dev,
            resident: None,
            t: Timings::default(),
        })
    }

    fn launch_config(&self, n: usize) -> LaunchConfig {
        grid(n, super::block_size(n, self.dev.info.compute_units) as u32)
    }
}

impl CudaGeodesic {
    /// Traces the seeds in the order given.
    fn trace_as_given(&mut self, seeds: &[Seed], p: &TraceParams) -> Result<FibreBatch> {
        let n = seeds.len();
        let cfg = self.launch_config(n);
        let dev = self.dev.clone();
        let t = &mut self.t;
        let r = self.resident.as_mut().ok_or_else(|| anyhow!("geodesic fields not uploaded"))?;
        if p.interp == Interp::Texture && r.textures.is_none() {
            r.textures = Some(FieldTextures::from_device(&dev, &r.f4, r.dims, t)?);
        }
        if n == 0 {
            return Ok(FibreBatch::default());
        }
        let gp = geo_params(r.dims, r.voxel_size, p, n);
        let b_seeds = dev.upload(&seeds_component_major(seeds), t)?;
        let npts = if p.record { (p.max_steps as usize + 1) * 3 * n } else { 1 };
        let mut b_points = dev.alloc::<f32>(npts)?;
        let mut b_si = dev.alloc::<i32>(3 * n)?;
        let mut b_sf = dev.alloc::<f32>(4 * n)?;
        match (&r.textures, p.interp) {
            (Some(tx), Interp::Texture) => dev.launch(t, || {
                let mut l = dev.stream.launch_builder(&self.trace_texture);
                for tex in &tx.tex {
                    l.arg(tex);
                }
                l.arg(&r.labels).arg(&b_seeds).arg(&gp).arg(&mut b_points).arg(&mut b_si).arg(&mut b_sf);
                unsafe { l.launch(cfg) }.map(|_| ())
            })?,
            _ => dev.launch(t, || {
                let mut l = dev.stream.launch_builder(&self.trace_kernel);
                l.arg(&r.f4).arg(&r.labels).arg(&b_seeds).arg(&gp).arg(&mut b_points).arg(&mut b_si).arg(&mut b_sf);
                unsafe { l.launch(cfg) }.map(|_| ())
            })?,
        }
        let sum_i = dev.download(&b_si, t)?;
        let sum_f = dev.download(&b_sf, t)?;
        let mut batch = FibreBatch::from_summaries(&sum_i, &sum_f, n);
        if !p.record {
            return Ok(batch);
        }
        let (offsets, total) = batch.pack_plan();
        let b_off = dev.upload(&offsets, t)?;
        let mut b_packed = dev.alloc::<f32>(3 * total)?;
        let nn = n as i32;
        let mut pack_t = Timings::default();
        dev.launch(&mut pack_t, || {
            let mut l = dev.stream.launch_builder(&self.pack);
            l.arg(&nn).arg(&b_points).arg(&b_si).arg(&b_off).arg(&mut b_packed);
            unsafe { l.launch(cfg) }.map(|_| ())
        })?;
        t.transfer_ms += pack_t.kernel_ms;
        batch.set_packed(dev.download(&b_packed, t)?);
        Ok(batch)
    }
}

impl GeodesicKernels for CudaGeodesic {
    fn upload(&mut self, fields: &Fields) -> Result<()> {
        self.resident = None;
        let f4 = self.dev.upload(&fields.packed4(), &mut self.t)?;
        let labels = self.dev.upload(&fields.labels, &mut self.t)?;
        self.resident = Some(Resident { dims: fields.dims, voxel_size: fields.voxel_size, f4, labels, textures: None });
        Ok(())
    }

    fn max_batch(&self, p: &TraceParams) -> usize {
        batch_within(self.dev.info.global_mem_bytes.max(1 << 28) / 3, p)
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

#[cfg(test)]
mod tests {
    #[test]
    fn half_bits_round_to_nearest_even() {
        let cases: [(f32, u16); 9] = [(1.0, 0x3c00), (-2.0, 0xc000), (0.5, 0x3800), (65504.0, 0x7bff), (1e6, 0x7c00), (0.1, 0x2e66), (5.960_464_5e-8, 0x0001), (1e-9, 0), (6.103_515_6e-5, 0x0400)];
        for (x, h) in cases {
            assert_eq!(super::f16_bits(x), h, "{x}");
        }
        assert_eq!(super::f16_bits(1.0 + 1.0 / 2048.0), 0x3c00); // tie to even
        assert_eq!(super::f16_bits(1.0 + 3.0 / 2048.0), 0x3c02);
    }
}
