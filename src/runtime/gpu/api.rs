//! What genuinely differs between OpenCL and CUDA, as one trait each backend implements once
//! (`cl.rs`, `cu.rs`). Everything built from these primitives (staged copies, argument checks,
//! timing) is written once in the layer above.

use super::args::Arg;
use super::buffer::RawBuf;
use super::texture::{RawTexture, TexelFormat};
use crate::runtime::{DeviceInfo, Timings};
use anyhow::Result;
use std::sync::Arc;

/// A compiled kernel of either API.
pub enum RawKernel {
    Cl(std::sync::Mutex<opencl3::kernel::Kernel>),
    Cu(cudarc::driver::CudaFunction),
}

/// A point in a queue's order: completed when everything queued before it has.
pub enum RawEvent {
    Cl(opencl3::event::Event),
    Cu(super::cu::CuEvent),
}

impl RawEvent {
    pub fn wait(&self) -> Result<()> {
        match self {
            RawEvent::Cl(e) => e.wait().map_err(|e| anyhow::anyhow!("OpenCL command failed: {e}")),
            RawEvent::Cu(e) => e.wait(),
        }
    }
}

/// Page-locked host memory, mapped for DMA.
pub struct RawPinned {
    pub ptr: *mut u8,
    #[allow(dead_code)]
    pub bytes: usize,
    pub(crate) owner: PinnedOwner,
}
pub(crate) enum PinnedOwner {
    Cl(opencl3::memory::Buffer<u8>, Arc<super::cl::ClQueueShared>),
    Cu(Arc<cudarc::driver::CudaContext>),
}
// SAFETY: the pointer is host memory owned by this value; access is through &/&mut of the owner.
unsafe impl Send for RawPinned {}
unsafe impl Sync for RawPinned {}

/// How a launch is shaped after the layer resolved defaults: `global` work-items in groups of
/// `local` (None: the driver chooses; OpenCL only).
pub struct LaunchDims {
    pub global: usize,
    pub local: Option<usize>,
}

/// One queue (OpenCL command queue / CUDA stream) on one device.
pub trait Queue: Send + Sync {
    fn info(&self) -> &DeviceInfo;
    fn alloc(&self, bytes: usize) -> Result<RawBuf>;
    /// Sets every byte of the allocation to `byte` (asynchronously, in queue order).
    fn fill(&self, buf: &RawBuf, byte: u8) -> Result<()>;
    /// Copies `len` bytes from host memory at `src` into `buf` at `offset`. The source must stay
    /// valid and unchanged until the returned event completes.
    /// With `mark`, the returned event completes with the copy; without, None (no event object
    /// is made: a caller that waits with `finish` saves its cost, microseconds per copy).
    unsafe fn write_async(&self, buf: &RawBuf, offset: usize, src: *const u8, len: usize, mark: bool) -> Result<Option<RawEvent>>;
    /// Copies `len` bytes of `buf` at `offset` to host memory at `dst`, complete with the event.
    unsafe fn read_async(&self, buf: &RawBuf, offset: usize, dst: *mut u8, len: usize, mark: bool) -> Result<Option<RawEvent>>;
    fn pinned(&self, bytes: usize) -> Result<RawPinned>;
    /// Pinned host memory that kernels write directly (CUDA mapped memory), with the device's
    /// view of it; None where the API has no such guarantee (OpenCL 1.2: a kernel may not write
    /// a buffer while the host has it mapped).
    fn mapped(&self, _bytes: usize) -> Result<Option<(RawPinned, RawBuf)>> {
        Ok(None)
    }
    fn kernel(&self, program: &'static str, source: &'static str, name: &str) -> Result<RawKernel>;
    fn launch(&self, k: &RawKernel, name: &str, dims: LaunchDims, args: &[Arg]) -> Result<()>;
    /// A 3-D texture of texels in `format` with linear filtering, clamped, filled from `src`
    /// at `byte_offset` (texels packed, x fastest).
    fn texture3d(&self, src: &RawBuf, byte_offset: usize, dims: [usize; 3], format: TexelFormat) -> Result<RawTexture>;
    fn record(&self) -> Result<RawEvent>;
    fn wait_for(&self, e: &RawEvent) -> Result<()>;
    fn finish(&self) -> Result<()>;
    /// Device time of the kernels and transfers queued since the last call (waits for them).
    fn take_timings(&self) -> Result<Timings>;
    /// Timing events on (default) or off for the work queued from now on.
    fn set_timing(&self, on: bool);
    fn mem_free(&self) -> u64;
    fn max_alloc(&self) -> u64;
    /// Whether the device runs kernels on host cores (no transfers worth staging).
    fn second_queue(&self) -> Result<Arc<dyn Queue>>;
}

impl Drop for RawPinned {
    fn drop(&mut self) {
        match &self.owner {
            PinnedOwner::Cl(b, q) => unsafe {
                use opencl3::memory::ClMem as _;
                if let Ok(ev) = opencl3::command_queue::enqueue_unmap_mem_object(q.queue.get(), b.get(), self.ptr as *mut _, 0, std::ptr::null()) {
                    let _ = opencl3::event::Event::new(ev).wait();
                }
            },
            PinnedOwner::Cu(ctx) => {
                let _ = ctx.bind_to_thread();
                let _ = unsafe { cudarc::driver::result::free_host(self.ptr as *mut _) };
            }
        }
    }
}
