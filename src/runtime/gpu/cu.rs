//! The layer's primitives on CUDA, through the driver API directly (cudarc's `result`/`sys`):
//! one non-blocking stream per `Gpu`, modules cached per device (`runtime::cuda::CudaDevice`),
//! page-locked memory from cuMemHostAlloc, times from event pairs around every operation.

use super::api::{LaunchDims, PinnedOwner, Queue, RawEvent, RawKernel, RawPinned};
use super::args::Arg;
use super::buffer::RawBuf;
use super::room::out_of_memory;
use super::texture::{RawTexture, TexelFormat};
use super::timeline::{Interval, Timeline};
use crate::runtime::cuda::CudaDevice;
use crate::runtime::{DeviceInfo, Timings};
use anyhow::{anyhow, bail, Result};
use cudarc::driver::result as cu;
use cudarc::driver::sys;
use cudarc::driver::{CudaContext, DriverError};
use std::ffi::c_void;
use std::sync::Arc;

fn err(what: &str, e: DriverError) -> anyhow::Error {
    anyhow!("{what}: {e:?}")
}

/// A device allocation; freed on drop.
pub struct CuMem {
    pub(crate) ptr: sys::CUdeviceptr,
    bytes: usize,
    ctx: Arc<CudaContext>,
    /// The device's view of mapped host memory, freed with its host side (`RawPinned`).
    borrowed: bool,
}

impl Drop for CuMem {
    fn drop(&mut self) {
        if self.borrowed {
            return;
        }
        let _ = self.ctx.bind_to_thread();
        let _ = unsafe { cu::free_sync(self.ptr) };
    }
}

/// An event; destroyed on drop.
pub struct CuEvent {
    ev: sys::CUevent,
    ctx: Arc<CudaContext>,
}
// SAFETY: a driver handle, used with its context bound.
unsafe impl Send for CuEvent {}
unsafe impl Sync for CuEvent {}

impl CuEvent {
    fn new(ctx: &Arc<CudaContext>, timing: bool) -> Result<CuEvent> {
        let flags = if timing { sys::CUevent_flags::CU_EVENT_DEFAULT } else { sys::CUevent_flags::CU_EVENT_DISABLE_TIMING };
        Ok(CuEvent { ev: cu::event::create(flags).map_err(|e| err("cannot create a CUDA event", e))?, ctx: ctx.clone() })
    }
    pub fn wait(&self) -> Result<()> {
        self.ctx.bind_to_thread().map_err(|e| err("cannot bind the CUDA context", e))?;
        unsafe { cu::event::synchronize(self.ev) }.map_err(|e| err("CUDA work failed", e))
    }
}

impl Drop for CuEvent {
    fn drop(&mut self) {
        let _ = self.ctx.bind_to_thread();
        let _ = unsafe { cu::event::destroy(self.ev) };
    }
}

/// A 3-D CUDA array (float or half texels, 1-4 channels) and its texture object.
pub struct CuTexture {
    pub(crate) obj: sys::CUtexObject,
    array: sys::CUarray,
    ctx: Arc<CudaContext>,
}
// SAFETY: driver handles, used with their context bound.
unsafe impl Send for CuTexture {}
unsafe impl Sync for CuTexture {}

impl Drop for CuTexture {
    fn drop(&mut self) {
        let _ = self.ctx.bind_to_thread();
        let _ = unsafe { sys::cuCtxSynchronize() };
        let _ = unsafe { sys::cuTexObjectDestroy(self.obj) };
        let _ = unsafe { sys::cuArrayDestroy(self.array) };
    }
}

pub struct CuQueue {
    dev: Arc<CudaDevice>,
    stream: sys::CUstream,
    timeline: Timeline<(CuEvent, CuEvent)>,
}
// SAFETY: the stream is a driver handle, used with the owning context bound.
unsafe impl Send for CuQueue {}
unsafe impl Sync for CuQueue {}


fn raw(b: &RawBuf) -> Result<&CuMem> {
    match b {
        RawBuf::Cu(m) => Ok(m),
        RawBuf::Cl(_) => bail!("an OpenCL buffer passed to a CUDA device"),
    }
}

/// A start/end event pair around one operation on the stream.
impl Interval for (CuEvent, CuEvent) {
    fn ms(&self) -> Result<f64> {
        self.1.wait()?;
        Ok(unsafe { cu::event::elapsed(self.0.ev, self.1.ev) }.map_err(|e| err("CUDA event timing failed", e))? as f64)
    }
}

impl CuQueue {
    pub fn new(dev: Arc<CudaDevice>) -> Result<CuQueue> {
        dev.ctx.bind_to_thread().map_err(|e| err("cannot bind the CUDA context", e))?;
        let stream = cu::stream::create(cu::stream::StreamKind::NonBlocking).map_err(|e| err("cannot create a CUDA stream", e))?;
        Ok(CuQueue { dev, stream, timeline: Timeline::new() })
    }

    fn bind(&self) -> Result<()> {
        self.dev.ctx.bind_to_thread().map_err(|e| err("cannot bind the CUDA context", e))
    }

    /// Runs `f` (which queues work on the stream) between two timing events.
    fn timed(&self, kernel: bool, f: impl FnOnce() -> Result<()>) -> Result<()> {
        self.bind()?;
        if !self.timeline.enabled() {
            return f();
        }
        let s = CuEvent::new(&self.dev.ctx, true)?;
        let e = CuEvent::new(&self.dev.ctx, true)?;
        unsafe { cu::event::record(s.ev, self.stream) }.map_err(|e| err("cannot record a CUDA event", e))?;
        f()?;
        unsafe { cu::event::record(e.ev, self.stream) }.map_err(|e| err("cannot record a CUDA event", e))?;
        self.timeline.push(kernel, (s, e))
    }
}

impl Drop for CuQueue {
    fn drop(&mut self) {
        let _ = self.dev.ctx.bind_to_thread();
        let _ = unsafe { cu::stream::synchronize(self.stream) };
        let _ = unsafe { cu::stream::destroy(self.stream) };
    }
}

impl Queue for CuQueue {
    fn info(&self) -> &DeviceInfo {
        &self.dev.info
    }

    fn alloc(&self, bytes: usize) -> Result<RawBuf> {
        self.bind()?;
        let ptr = unsafe { cu::malloc_sync(bytes) }.map_err(|e| match e.0 {
            // Not sticky: the context goes on, and the user reads the sizes, not the code.
            sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY => out_of_memory(&self.dev.info, Some(bytes), self.dev.ctx.mem_get_info().ok().map(|(f, _)| f as u64)),
            _ => anyhow!("cannot allocate {bytes} bytes on {}: {e:?}", self.dev.info.name),
        })?;
        Ok(RawBuf::Cu(CuMem { ptr, bytes, ctx: self.dev.ctx.clone(), borrowed: false }))
    }

    fn fill(&self, buf: &RawBuf, byte: u8) -> Result<()> {
        let m = raw(buf)?;
        self.timed(false, || unsafe { cu::memset_d8_async(m.ptr, byte, m.bytes, self.stream) }.map_err(|e| err("CUDA memset failed", e)))
    }

    unsafe fn write_async(&self, buf: &RawBuf, offset: usize, src: *const u8, len: usize, mark: bool) -> Result<Option<RawEvent>> {
        let m = raw(buf)?;
        if offset + len > m.bytes {
            bail!("copy past the end of a device buffer");
        }
        let s = std::slice::from_raw_parts(src, len);
        self.timed(false, || cu::memcpy_htod_async(m.ptr + offset as u64, s, self.stream).map_err(|e| err("host-to-device copy failed", e)))?;
        if mark { self.record().map(Some) } else { Ok(None) }
    }

    unsafe fn read_async(&self, buf: &RawBuf, offset: usize, dst: *mut u8, len: usize, mark: bool) -> Result<Option<RawEvent>> {
        let m = raw(buf)?;
        if offset + len > m.bytes {
            bail!("copy past the end of a device buffer");
        }
        let d = std::slice::from_raw_parts_mut(dst, len);
        self.timed(false, || cu::memcpy_dtoh_async(d, m.ptr + offset as u64, self.stream).map_err(|e| err("device-to-host copy failed", e)))?;
        if mark { self.record().map(Some) } else { Ok(None) }
    }

    fn pinned(&self, bytes: usize) -> Result<RawPinned> {
        self.bind()?;
        let p = unsafe { cu::malloc_host(bytes, 0) }.map_err(|e| err(&format!("cannot allocate {bytes} bytes of pinned memory"), e))?;
        Ok(RawPinned { ptr: p as *mut u8, bytes, owner: PinnedOwner::Cu(self.dev.ctx.clone()) })
    }

    fn mapped(&self, bytes: usize) -> Result<Option<(RawPinned, RawBuf)>> {
        self.bind()?;
        let p = unsafe { cu::malloc_host(bytes, sys::CU_MEMHOSTALLOC_DEVICEMAP) }.map_err(|e| err(&format!("cannot allocate {bytes} bytes of mapped memory"), e))?;
        let host = RawPinned { ptr: p as *mut u8, bytes, owner: PinnedOwner::Cu(self.dev.ctx.clone()) };
        let mut dptr: sys::CUdeviceptr = 0;
        unsafe { sys::cuMemHostGetDevicePointer_v2(&mut dptr, p, 0) }.result().map_err(|e| err("cannot map pinned memory for the device", e))?;
        Ok(Some((host, RawBuf::Cu(CuMem { ptr: dptr, bytes, ctx: self.dev.ctx.clone(), borrowed: true }))))
    }

    fn kernel(&self, program: &'static str, source: &'static str, name: &str) -> Result<RawKernel> {
        let m = self.dev.module(program, source)?;
        Ok(RawKernel::Cu(self.dev.function(&m, name)?))
    }

    fn launch(&self, k: &RawKernel, name: &str, dims: LaunchDims, args: &[Arg]) -> Result<()> {
        let RawKernel::Cu(f) = k else { bail!("an OpenCL kernel launched on a CUDA device") };
        let block = dims.local.unwrap_or(128);
        let grid = dims.global.div_ceil(block);
        // Every argument's bytes in a slot of its own; the driver reads them through pointers.
        let mut slots: Vec<u64> = Vec::with_capacity(args.len());
        for a in args {
            slots.push(match a {
                Arg::Buf(b) => raw(b.raw())?.ptr,
                Arg::Tex(t) => match &t.raw {
                    RawTexture::Cu(x) => x.obj,
                    RawTexture::Cl(_) => bail!("an OpenCL image passed to a CUDA device"),
                },
                Arg::I32(v) => *v as u32 as u64,
                Arg::U32(v) => *v as u64,
                Arg::F32(v) => v.to_bits() as u64,
                Arg::U64(v) => *v,
                Arg::Struct(_) => 0,
            });
        }
        let mut params: Vec<*mut c_void> = args
            .iter()
            .zip(slots.iter_mut())
            .map(|(a, s)| match a {
                Arg::Struct(b) => b.as_ptr() as *mut c_void,
                _ => s as *mut u64 as *mut c_void,
            })
            .collect();
        self.timed(true, || {
            unsafe { cu::launch_kernel(f.cu_function(), (grid as u32, 1, 1), (block as u32, 1, 1), 0, self.stream, &mut params) }
                .map_err(|e| anyhow!("CUDA kernel {name} launch failed: {e:?}"))
        })
    }

    fn texture3d(&self, src: &RawBuf, byte_offset: usize, dims: [usize; 3], format: TexelFormat) -> Result<RawTexture> {
        let m = raw(src)?;
        self.bind()?;
        let desc = sys::CUDA_ARRAY3D_DESCRIPTOR {
            Width: dims[0],
            Height: dims[1],
            Depth: dims[2],
            Format: if format.half { sys::CUarray_format::CU_AD_FORMAT_HALF } else { sys::CUarray_format::CU_AD_FORMAT_FLOAT },
            NumChannels: format.channels as u32,
            Flags: 0,
        };
        let mut array: sys::CUarray = std::ptr::null_mut();
        unsafe { sys::cuArray3DCreate_v2(&mut array, &desc) }.result().map_err(|e| err(&format!("cannot create a {dims:?} array of {format:?} texels"), e))?;
        let mut tex = CuTexture { obj: 0, array, ctx: self.dev.ctx.clone() };
        // Every field spelled out: CUmemorytype has no zero value, so mem::zeroed() is invalid.
        let cp = sys::CUDA_MEMCPY3D {
            srcXInBytes: 0,
            srcY: 0,
            srcZ: 0,
            srcLOD: 0,
            srcMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
            srcHost: std::ptr::null(),
            srcDevice: m.ptr + byte_offset as u64,
            srcArray: std::ptr::null_mut(),
            reserved0: std::ptr::null_mut(),
            srcPitch: dims[0] * format.bytes(),
            srcHeight: dims[1],
            dstXInBytes: 0,
            dstY: 0,
            dstZ: 0,
            dstLOD: 0,
            dstMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_ARRAY,
            dstHost: std::ptr::null_mut(),
            dstDevice: 0,
            dstArray: array,
            reserved1: std::ptr::null_mut(),
            dstPitch: 0,
            dstHeight: 0,
            WidthInBytes: dims[0] * format.bytes(),
            Height: dims[1],
            Depth: dims[2],
        };
        self.timed(false, || unsafe { sys::cuMemcpy3DAsync_v2(&cp, self.stream) }.result().map_err(|e| err("cannot fill a 3-D texture", e)))?;
        // SAFETY: every enum in these two descriptors has a zero variant (ARRAY, WRAP, POINT),
        // and zero is the documented value of each field not set below.
        let mut res: sys::CUDA_RESOURCE_DESC = unsafe { std::mem::zeroed() };
        res.resType = sys::CUresourcetype::CU_RESOURCE_TYPE_ARRAY;
        res.res.array.hArray = array;
        let mut td: sys::CUDA_TEXTURE_DESC = unsafe { std::mem::zeroed() };
        td.addressMode = [sys::CUaddress_mode::CU_TR_ADDRESS_MODE_CLAMP; 3];
        td.filterMode = sys::CUfilter_mode::CU_TR_FILTER_MODE_LINEAR;
        td.flags = 0; // unnormalised coordinates, values read as float
        unsafe { sys::cuTexObjectCreate(&mut tex.obj, &res, &td, std::ptr::null()) }.result().map_err(|e| err("cannot create a texture object", e))?;
        Ok(RawTexture::Cu(tex))
    }

    fn record(&self) -> Result<RawEvent> {
        self.bind()?;
        let e = CuEvent::new(&self.dev.ctx, false)?;
        unsafe { cu::event::record(e.ev, self.stream) }.map_err(|e| err("cannot record a CUDA event", e))?;
        Ok(RawEvent::Cu(e))
    }

    fn wait_for(&self, e: &RawEvent) -> Result<()> {
        let RawEvent::Cu(e) = e else { bail!("an OpenCL event waited for on a CUDA stream") };
        self.bind()?;
        unsafe { cu::stream::wait_event(self.stream, e.ev, sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT) }.map_err(|e| err("cannot wait for a CUDA event", e))
    }

    fn finish(&self) -> Result<()> {
        self.bind()?;
        unsafe { cu::stream::synchronize(self.stream) }.map_err(|e| err(&format!("CUDA work on {} failed", self.dev.info.name), e))
    }

    fn take_timings(&self) -> Result<Timings> {
        self.timeline.take()
    }

    fn set_timing(&self, on: bool) {
        self.timeline.set_enabled(on);
    }

    fn mem_free(&self) -> u64 {
        let _ = self.bind();
        self.dev.ctx.mem_get_info().map(|(f, _)| f as u64).unwrap_or(self.dev.info.global_mem_bytes / 2)
    }

    fn max_alloc(&self) -> u64 {
        self.dev.info.global_mem_bytes
    }

    fn second_queue(&self) -> Result<Arc<dyn Queue>> {
        Ok(Arc::new(CuQueue::new(self.dev.clone())?))
    }
}
