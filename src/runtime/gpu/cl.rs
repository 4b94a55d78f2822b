//! The layer's primitives on OpenCL: one profiling command queue per `Gpu`, programs cached per
//! device (`runtime::opencl::ClDevice`), page-locked memory as mapped ALLOC_HOST_PTR buffers.

use super::api::{LaunchDims, PinnedOwner, Queue, RawEvent, RawKernel, RawPinned};
use super::args::Arg;
use super::buffer::RawBuf;
use super::room::out_of_memory;
use super::texture::{RawTexture, TexelFormat};
use super::timeline::{Interval, Timeline};
use crate::runtime::opencl::{event_ms, ClDevice};
use crate::runtime::{DeviceInfo, Timings};
use anyhow::{anyhow, bail, Context as _, Result};
use opencl3::command_queue::{self as cq, CommandQueue, CL_QUEUE_PROFILING_ENABLE};
use opencl3::event::Event;
use opencl3::kernel::{set_kernel_arg, Kernel};
use opencl3::memory::{
    cl_image_desc, cl_image_format, Buffer, Image, CL_FLOAT, CL_HALF_FLOAT, CL_MAP_READ, CL_MAP_WRITE, CL_MEM_ALLOC_HOST_PTR,
    CL_MEM_OBJECT_IMAGE3D, CL_MEM_READ_ONLY, CL_MEM_READ_WRITE, CL_R, CL_RG, CL_RGBA,
};
use opencl3::memory::ClMem as _;
use opencl3::error_codes::{CL_INVALID_BUFFER_SIZE, CL_MEM_OBJECT_ALLOCATION_FAILURE, CL_OUT_OF_RESOURCES};
use opencl3::types::{cl_mem, CL_BLOCKING, CL_NON_BLOCKING};
use std::ffi::c_void;
use std::ptr;
use std::sync::{Arc, Mutex};

/// An OpenCL buffer; released on drop.
pub struct ClMem(pub(crate) Buffer<u8>);

impl ClMem {
    fn mem(&self) -> cl_mem {
        self.0.get()
    }
}

/// What a queue's pinned buffers need to stay mapped: the queue they were mapped on.
pub struct ClQueueShared {
    pub(crate) queue: CommandQueue,
}

pub struct ClQueue {
    dev: Arc<ClDevice>,
    shared: Arc<ClQueueShared>,
    timeline: Timeline<Event>,
    /// Only one queue at a time may have kernels in flight ([`POCL_KERNELS`]).
    one_queue_at_a_time: bool,
}

/// PoCL keeps one process-wide cache of compiled work-group functions, counted per launch in
/// flight. Its lookup takes an entry whose grid width covers the launch's, but its release
/// (3.1, Debian 12's; lib/CL/devices/common.c) decrements the first entry of the same kernel and
/// work-group size, whatever the width, so with launches of one kernel in flight on two queues
/// (two threads, or a pipeline's two queues) one can release the other's entry, and PoCL aborts
/// the process (`pocl_release_dlhandle_cache: Assertion 'found->ref_count > 0' failed`; seen once
/// in CI, tests running in parallel). A queue's own kernels never overlap (in order), so on PoCL
/// kernels are enqueued on one queue at a time: the queue named here, which another queue takes
/// over only after waiting for it to finish. One queue alone pays nothing.
static POCL_KERNELS: Mutex<std::sync::Weak<ClQueueShared>> = Mutex::new(std::sync::Weak::new());

/// PoCL's platform, by the name it reports.
fn is_pocl(info: &DeviceInfo) -> bool {
    info.platform.contains("Portable Computing Language")
}

impl Interval for Event {
    fn ms(&self) -> Result<f64> {
        event_ms(self)
    }
}

fn cl_err(what: &str, code: i32) -> anyhow::Error {
    // Drivers allocate a buffer's memory at its first use: a device too small for the run's
    // buffers says so at a copy, a kernel or a wait, with this code.
    let hint = if code == CL_MEM_OBJECT_ALLOCATION_FAILURE { "; the device is out of memory: use --backend cpu, a device with more memory, or a smaller volume" } else { "" };
    anyhow!("{what}: OpenCL error {code} ({}){hint}", opencl3::error_codes::error_text(code))
}

impl ClQueue {
    pub fn new(dev: Arc<ClDevice>) -> Result<ClQueue> {
        #[allow(deprecated)]
        let queue = CommandQueue::create_default(&dev.context, CL_QUEUE_PROFILING_ENABLE)
            .with_context(|| format!("cannot create an OpenCL queue on {}", dev.info.name))?;
        let one_queue_at_a_time = is_pocl(&dev.info);
        Ok(ClQueue { dev, shared: Arc::new(ClQueueShared { queue }), timeline: Timeline::new(), one_queue_at_a_time })
    }

    fn q(&self) -> opencl3::types::cl_command_queue {
        self.shared.queue.get()
    }

    /// Makes this queue the one whose kernels may be in flight on PoCL ([`POCL_KERNELS`]),
    /// after the queue that was finishes its work (a dropped queue finished on drop).
    fn take_baton(&self) -> Result<std::sync::MutexGuard<'static, std::sync::Weak<ClQueueShared>>> {
        let mut baton = POCL_KERNELS.lock().unwrap_or_else(|e| e.into_inner());
        if baton.as_ptr() != Arc::as_ptr(&self.shared) {
            if let Some(other) = baton.upgrade() {
                other.queue.finish().map_err(|e| cl_err(&format!("OpenCL queue on {} failed", self.dev.info.name), e.0))?;
            }
            *baton = Arc::downgrade(&self.shared);
        }
        Ok(baton)
    }

    fn track(&self, kernel: bool, ev: Event) -> Result<()> {
        self.timeline.push(kernel, ev)
    }

    /// Work queued now is not timed and nobody waits on it by event: enqueue it without an
    /// event object (opencl3's calls always ask for one, and each is created and released).
    fn quiet(&self) -> bool {
        !self.timeline.enabled() && no_events()
    }
}

/// The OpenCL library's entry points, for the calls opencl3 makes only with an event.
fn runtime() -> Result<&'static cl3::OpenClRuntime> {
    cl3::load_library().as_ref().map_err(|e| anyhow!("the OpenCL library could not be loaded: {e}"))
}

fn status(st: Option<i32>, what: &str) -> Result<()> {
    match st {
        Some(0) => Ok(()),
        Some(e) => Err(cl_err(what, e)),
        None => bail!("{what}: the OpenCL library lacks the entry point"),
    }
}

/// Untimed work goes without event objects unless `NEUROPORT_CL_EVENTS=1` (for comparison):
/// on the H100's OpenCL the two events of a registration evaluation (launch, read-back) cost
/// ~8 us of its ~80 us wall (docs/performance.md, registration round 8).
fn no_events() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var("NEUROPORT_CL_EVENTS").map_or(true, |v| v != "1"))
}

fn raw(b: &RawBuf) -> Result<&ClMem> {
    match b {
        RawBuf::Cl(m) => Ok(m),
        RawBuf::Cu(_) => bail!("a CUDA buffer passed to an OpenCL device"),
    }
}

impl Queue for ClQueue {
    fn info(&self) -> &DeviceInfo {
        &self.dev.info
    }

    fn alloc(&self, bytes: usize) -> Result<RawBuf> {
        let b = unsafe { Buffer::<u8>::create(&self.dev.context, CL_MEM_READ_WRITE, bytes, ptr::null_mut()) }.map_err(|e| match e.0 {
            CL_INVALID_BUFFER_SIZE | CL_MEM_OBJECT_ALLOCATION_FAILURE | CL_OUT_OF_RESOURCES => out_of_memory(&self.dev.info, Some(bytes), None),
            _ => anyhow!("cannot allocate {bytes} bytes on {}: {e}", self.dev.info.name),
        })?;
        Ok(RawBuf::Cl(ClMem(b)))
    }

    fn fill(&self, buf: &RawBuf, byte: u8) -> Result<()> {
        let m = raw(buf)?;
        let pattern = [byte; 4];
        let size = m.0.size()?;
        // Fill in 4-byte words where the size allows (faster on most drivers), else bytewise.
        let (pat, psize) = if size % 4 == 0 { (pattern.as_ptr(), 4) } else { (pattern.as_ptr(), 1) };
        let ev = unsafe { cq::enqueue_fill_buffer(self.q(), m.mem(), pat as *const c_void, psize, 0, size, 0, ptr::null()) }
            .map_err(|e| cl_err("cannot fill a buffer", e))?;
        self.track(false, Event::new(ev))
    }

    unsafe fn write_async(&self, buf: &RawBuf, offset: usize, src: *const u8, len: usize, mark: bool) -> Result<Option<RawEvent>> {
        let m = raw(buf)?;
        if !mark && self.quiet() {
            let st = runtime()?.clEnqueueWriteBuffer(self.q(), m.mem(), CL_NON_BLOCKING, offset, len, src as *const c_void, 0, ptr::null(), ptr::null_mut());
            return status(st, "host-to-device copy failed").map(|_| None);
        }
        let ev = cq::enqueue_write_buffer(self.q(), m.mem(), CL_NON_BLOCKING, offset, len, src as *const c_void, 0, ptr::null())
            .map_err(|e| cl_err("host-to-device copy failed", e))?;
        let ev = Event::new(ev);
        let done = if mark { Some(self.record()?) } else { None };
        self.track(false, ev)?;
        Ok(done)
    }

    unsafe fn read_async(&self, buf: &RawBuf, offset: usize, dst: *mut u8, len: usize, mark: bool) -> Result<Option<RawEvent>> {
        let m = raw(buf)?;
        if !mark && self.quiet() {
            let st = runtime()?.clEnqueueReadBuffer(self.q(), m.mem(), CL_NON_BLOCKING, offset, len, dst as *mut c_void, 0, ptr::null(), ptr::null_mut());
            return status(st, "device-to-host copy failed").map(|_| None);
        }
        let ev = cq::enqueue_read_buffer(self.q(), m.mem(), CL_NON_BLOCKING, offset, len, dst as *mut c_void, 0, ptr::null())
            .map_err(|e| cl_err("device-to-host copy failed", e))?;
        let ev = Event::new(ev);
        let done = if mark { Some(self.record()?) } else { None };
        self.track(false, ev)?;
        Ok(done)
    }

    fn pinned(&self, bytes: usize) -> Result<RawPinned> {
        let b = unsafe { Buffer::<u8>::create(&self.dev.context, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes, ptr::null_mut()) }
            .map_err(|e| anyhow!("cannot allocate {bytes} bytes of pinned memory on {}: {e}", self.dev.info.name))?;
        let mut p: *mut c_void = ptr::null_mut();
        let ev = unsafe { cq::enqueue_map_buffer(self.q(), b.get(), CL_BLOCKING, CL_MAP_READ | CL_MAP_WRITE, 0, bytes, &mut p, 0, ptr::null()) }
            .map_err(|e| cl_err("cannot map pinned memory", e))?;
        drop(Event::new(ev));
        Ok(RawPinned { ptr: p as *mut u8, bytes, owner: PinnedOwner::Cl(b, self.shared.clone()) })
    }

    fn kernel(&self, program: &'static str, source: &'static str, name: &str) -> Result<RawKernel> {
        let p = self.dev.program(program, source)?;
        let k = Kernel::create(&p, name).with_context(|| format!("OpenCL kernel {name} not found in {program}.cl"))?;
        Ok(RawKernel::Cl(Mutex::new(k)))
    }

    fn launch(&self, k: &RawKernel, name: &str, dims: LaunchDims, args: &[Arg]) -> Result<()> {
        let RawKernel::Cl(k) = k else { bail!("a CUDA kernel launched on an OpenCL device") };
        // Arguments live in the kernel object, so setting them and enqueueing is one critical section.
        let k = k.lock().unwrap_or_else(|e| e.into_inner());
        let mems: Vec<cl_mem> = args
            .iter()
            .map(|a| match a {
                Arg::Buf(b) => raw(b.raw()).map(|m| m.mem()),
                Arg::Tex(t) => match &t.raw {
                    RawTexture::Cl(img) => Ok(img.get()),
                    RawTexture::Cu(_) => bail!("a CUDA texture passed to an OpenCL device"),
                },
                _ => Ok(ptr::null_mut()),
            })
            .collect::<Result<_>>()?;
        for (i, a) in args.iter().enumerate() {
            let (size, p): (usize, *const c_void) = match a {
                Arg::Buf(_) | Arg::Tex(_) => (std::mem::size_of::<cl_mem>(), &mems[i] as *const cl_mem as *const c_void),
                Arg::I32(v) => (4, v as *const i32 as *const c_void),
                Arg::U32(v) => (4, v as *const u32 as *const c_void),
                Arg::F32(v) => (4, v as *const f32 as *const c_void),
                Arg::U64(v) => (8, v as *const u64 as *const c_void),
                Arg::Struct(b) => (b.len(), b.as_ptr() as *const c_void),
            };
            unsafe { set_kernel_arg(k.get(), i as u32, size, p) }.map_err(|e| cl_err(&format!("kernel {name}: argument {i} rejected"), e))?;
        }
        let global = [dims.global];
        let local = dims.local.map(|l| [l]);
        let lp = local.as_ref().map_or(ptr::null(), |l| l.as_ptr());
        // Held until the kernel is enqueued, so no other queue takes over in between.
        let _baton = if self.one_queue_at_a_time { Some(self.take_baton()?) } else { None };
        if self.quiet() {
            let st = runtime()?.clEnqueueNDRangeKernel(self.q(), k.get(), 1, ptr::null(), global.as_ptr(), lp, 0, ptr::null(), ptr::null_mut());
            return status(st, &format!("OpenCL kernel {name} launch failed"));
        }
        let ev = unsafe { cq::enqueue_nd_range_kernel(self.q(), k.get(), 1, ptr::null(), global.as_ptr(), lp, 0, ptr::null()) }
            .map_err(|e| cl_err(&format!("OpenCL kernel {name} launch failed"), e))?;
        self.track(true, Event::new(ev))
    }

    fn texture3d(&self, src: &RawBuf, byte_offset: usize, dims: [usize; 3], texel: TexelFormat) -> Result<RawTexture> {
        let dev = &self.dev;
        if !dev.info.image_support {
            bail!("{} has no image support", dev.info.name);
        }
        let max = [dev.device.image3d_max_width()?, dev.device.image3d_max_height()?, dev.device.image3d_max_depth()?];
        if (0..3).any(|a| dims[a] > max[a]) {
            bail!("grid {dims:?} exceeds the image limits {max:?} of {}", dev.info.name);
        }
        let order = match texel.channels {
            1 => CL_R,
            2 => CL_RG,
            _ => CL_RGBA,
        };
        let format = cl_image_format { image_channel_order: order, image_channel_data_type: if texel.half { CL_HALF_FLOAT } else { CL_FLOAT } };
        // SAFETY: a plain C struct; all-zero is its documented "unused" value for the other fields.
        let mut desc: cl_image_desc = unsafe { std::mem::zeroed() };
        desc.image_type = CL_MEM_OBJECT_IMAGE3D;
        desc.image_width = dims[0];
        desc.image_height = dims[1];
        desc.image_depth = dims[2];
        let img = unsafe { Image::create(&dev.context, CL_MEM_READ_ONLY, &format, &desc, ptr::null_mut()) }
            .with_context(|| format!("cannot create a {dims:?} image of {texel:?} texels on {}", dev.info.name))?;
        let origin = [0usize; 3];
        let ev = unsafe { cq::enqueue_copy_buffer_to_image(self.q(), raw(src)?.mem(), img.get(), byte_offset, origin.as_ptr(), dims.as_ptr(), 0, ptr::null()) }
            .map_err(|e| cl_err("cannot fill a 3-D image", e))?;
        self.track(false, Event::new(ev))?;
        Ok(RawTexture::Cl(img))
    }

    fn record(&self) -> Result<RawEvent> {
        let ev = unsafe { cq::enqueue_marker_with_wait_list(self.q(), 0, ptr::null()) }.map_err(|e| cl_err("cannot enqueue a marker", e))?;
        Ok(RawEvent::Cl(Event::new(ev)))
    }

    fn wait_for(&self, e: &RawEvent) -> Result<()> {
        let RawEvent::Cl(e) = e else { bail!("a CUDA event waited for on an OpenCL queue") };
        let list = [e.get()];
        let ev = unsafe { cq::enqueue_barrier_with_wait_list(self.q(), 1, list.as_ptr()) }.map_err(|e| cl_err("cannot enqueue a barrier", e))?;
        drop(Event::new(ev));
        Ok(())
    }

    fn finish(&self) -> Result<()> {
        cq::finish(self.q()).map_err(|e| cl_err(&format!("OpenCL queue on {} failed", self.dev.info.name), e))
    }

    fn take_timings(&self) -> Result<Timings> {
        self.timeline.take()
    }

    fn set_timing(&self, on: bool) {
        self.timeline.set_enabled(on);
    }

    fn mem_free(&self) -> u64 {
        self.dev.info.global_mem_bytes / 2
    }

    fn max_alloc(&self) -> u64 {
        self.dev.device.max_mem_alloc_size().unwrap_or(self.dev.info.global_mem_bytes / 4)
    }

    fn second_queue(&self) -> Result<std::sync::Arc<dyn Queue>> {
        Ok(Arc::new(ClQueue::new(self.dev.clone())?))
    }
}

impl Drop for ClQueueShared {
    fn drop(&mut self) {
        let _ = self.queue.finish();
    }
}
