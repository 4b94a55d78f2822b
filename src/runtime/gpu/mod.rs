//! The GPU host layer: one API over OpenCL and CUDA (docs/gpu-layer.md). Methods write their
//! host sequence once against `Gpu`; `cl.rs` and `cu.rs` implement the few primitives that
//! differ (`api::Queue`), and everything built on them — staged copies through pinned memory,
//! argument checks, launch shapes, timing — lives here once.

mod api;
pub mod args;
mod buffer;
pub(crate) mod cl;
pub(crate) mod cu;
pub mod bench;
pub mod pipeline;
mod room;
pub mod selftest;
mod signature;
mod staging;
mod texture;
mod timeline;

pub use api::RawEvent as Event;
pub use args::{args, Arg, Elem};
pub use buffer::Buf;
pub use pipeline::{Lanes, Step};
pub use signature::{Param, ParamKind};
pub use texture::{half_bits, half_value, TexelFormat, Texture3d};

use super::columns::{Columns, ColumnsMut};
use super::{Device, DeviceInfo, Timings};
use anyhow::{anyhow, Result};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// A GPU (or any OpenCL device) with one queue; clones share the queue.
#[derive(Clone)]
pub struct Gpu {
    q: Arc<dyn api::Queue>,
    staging: Arc<staging::Staging>,
    /// The device's largest single allocation, asked once ([`room::check`]).
    max_alloc: u64,
}

/// A compiled kernel and the parameters its source declares.
pub struct Kernel {
    name: String,
    params: Arc<Vec<Param>>,
    raw: api::RawKernel,
}

impl Kernel {
    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn params(&self) -> &[Param] {
        &self.params
    }
}

/// How many work-items a launch runs.
#[derive(Clone, Copy, Debug)]
pub enum Shape {
    /// `n` independent items (kernels bounds-check their id); the group size is the layer's
    /// default for the device unless given.
    Items { n: usize, group: Option<usize> },
    /// Exactly `groups` work-groups of `size` items (kernels that cooperate through local memory).
    Groups { groups: usize, size: usize },
}

impl Shape {
    pub fn items(n: usize) -> Shape {
        Shape::Items { n, group: None }
    }
    pub fn items_in(n: usize, group: usize) -> Shape {
        Shape::Items { n, group: Some(group) }
    }
    pub fn groups(groups: usize, size: usize) -> Shape {
        Shape::Groups { groups, size }
    }
}

/// Page-locked host memory for copies at the bus's speed; `Deref`s to `[T]`.
pub struct Pinned<T: Elem> {
    raw: api::RawPinned,
    len: usize,
    _t: std::marker::PhantomData<T>,
}

impl<T: Elem> std::ops::Deref for Pinned<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: the allocation holds at least len * size_of::<T>() bytes, page-aligned.
        unsafe { std::slice::from_raw_parts(self.raw.ptr as *const T, self.len) }
    }
}
impl<T: Elem> std::ops::DerefMut for Pinned<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        unsafe { std::slice::from_raw_parts_mut(self.raw.ptr as *mut T, self.len) }
    }
}

/// Host memory that kernels write directly ([`Gpu::mapped`]): `buf` is passed to a kernel, and
/// the host reads the values (`Deref`) after the queue has finished the launch, with no copy.
pub struct Mapped<T: Elem> {
    // Declared first so it drops first: the device's view goes before the memory it views.
    buf: Buf<T>,
    host: Pinned<T>,
}

impl<T: Elem> Mapped<T> {
    pub fn buf(&self) -> &Buf<T> {
        &self.buf
    }

    /// Element `i` as the host sees it now, while a kernel may be writing it (a volatile read).
    pub fn peek(&self, i: usize) -> T {
        assert!(i < self.host.len);
        // SAFETY: in bounds (above); the memory is the pinned allocation, T is Pod.
        unsafe { std::ptr::read_volatile((self.host.raw.ptr as *const T).add(i)) }
    }

    /// Writes element `i` from the host (a volatile write), for a kernel queued after it to
    /// overwrite: a sentinel the host then watches with `peek`.
    pub fn poke(&self, i: usize, v: T) {
        assert!(i < self.host.len);
        // SAFETY: as `peek`; no kernel writing this element is running (the caller's contract).
        unsafe { std::ptr::write_volatile((self.host.raw.ptr as *mut T).add(i), v) }
    }
}

impl<T: Elem> std::ops::Deref for Mapped<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.host
    }
}

/// Signatures parsed once per entry source per process, shared by every device.
fn signatures(program: &'static str, source: &'static str) -> Result<Arc<HashMap<String, Vec<Param>>>> {
    static CACHE: Mutex<Vec<(&'static str, Arc<HashMap<String, Vec<Param>>>)>> = Mutex::new(Vec::new());
    let mut c = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, m)) = c.iter().find(|(n, _)| *n == program) {
        return Ok(m.clone());
    }
    let m = Arc::new(signature::parse(source).map_err(|e| anyhow!("{program}.cl: {e}"))?);
    c.push((program, m.clone()));
    Ok(m)
}

impl Gpu {
    /// The GPU layer over a device; None for the native CPU backend.
    pub fn new(dev: &Device) -> Result<Option<Gpu>> {
        let q: Arc<dyn api::Queue> = match dev {
            Device::Cpu(_) => return Ok(None),
            Device::OpenCl(d) => Arc::new(cl::ClQueue::new(d.clone())?),
            Device::Cuda(d) => Arc::new(cu::CuQueue::new(d.clone())?),
        };
        Ok(Some(Gpu::from_queue(q)))
    }

    /// The GPU layer over a device that is not the CPU.
    pub fn require(dev: &Device) -> Result<Gpu> {
        Gpu::new(dev)?.ok_or_else(|| anyhow!("{} is not a GPU device", dev.label()))
    }

    fn from_queue(q: Arc<dyn api::Queue>) -> Gpu {
        Gpu { staging: Arc::new(staging::Staging::new()), max_alloc: q.max_alloc(), q }
    }

    pub fn info(&self) -> &DeviceInfo {
        self.q.info()
    }

    /// Kernel `name` of the entry source `source` (program `program`), built once per device per
    /// process.
    pub fn kernel(&self, program: &'static str, source: &'static str, name: &str) -> Result<Kernel> {
        let sigs = signatures(program, source)?;
        let params = sigs.get(name).ok_or_else(|| anyhow!("{program}.cl declares no NP_KERNEL {name}"))?;
        Ok(Kernel { name: name.to_string(), params: Arc::new(params.clone()), raw: self.q.kernel(program, source, name)? })
    }

    /// A buffer of `n` elements, every byte 0xFF (NaN as a float, -1 as an integer), so an
    /// element a kernel forgets to write shows instead of passing as stale memory.
    pub fn alloc<T: Elem>(&self, n: usize) -> Result<Buf<T>> {
        let raw = self.raw_alloc(buffer::alloc_bytes::<T>(n))?;
        self.q.fill(&raw, 0xFF)?;
        Ok(Buf::new(raw, n))
    }

    pub fn zeros<T: Elem>(&self, n: usize) -> Result<Buf<T>> {
        let raw = self.raw_alloc(buffer::alloc_bytes::<T>(n))?;
        self.q.fill(&raw, 0)?;
        Ok(Buf::new(raw, n))
    }

    /// Every device buffer's allocation: one over the device's largest is refused up front with
    /// the sizes, not sent to the API for its error code.
    fn raw_alloc(&self, bytes: usize) -> Result<buffer::RawBuf> {
        room::check(self.info(), bytes, self.max_alloc)?;
        self.q.alloc(bytes)
    }

    /// Sets every byte of `b` to `byte`, in queue order.
    pub fn fill_bytes<T: Elem>(&self, b: &Buf<T>, byte: u8) -> Result<()> {
        self.q.fill(&b.raw, byte)
    }

    /// A buffer holding `data`. Returns once `data` has been copied out (into pinned staging or
    /// onto the device); the device copy completes in queue order.
    pub fn upload<T: Elem>(&self, data: &[T]) -> Result<Buf<T>> {
        let raw = self.raw_alloc(buffer::alloc_bytes::<T>(data.len()))?;
        let b = Buf::new(raw, data.len());
        self.write(&b, 0, data)?;
        Ok(b)
    }

    /// A buffer holding a share of a component-major array as one array (`ncomp` x len).
    pub fn upload_columns<T: Elem>(&self, cols: &Columns<T>) -> Result<Buf<T>> {
        let n = cols.ncomp() * cols.len();
        let b = Buf::new(self.raw_alloc(buffer::alloc_bytes::<T>(n))?, n);
        self.write_columns(&b, 0, cols)?;
        Ok(b)
    }

    /// Allocates the page-locked staging slots (2 x 16 MB) on another thread now, so that the
    /// first copy over 1 MB does not wait for them (~15-20 ms on the H100): for a caller with
    /// host work to do before its large copies (registration builds its pyramid, then uploads
    /// the second level's 5 MB images; the FIM reorders its volumes). A caller that queues
    /// launches before its first large copy calls [`stage_settle`](Self::stage_settle) first.
    /// GPUs only: a CPU device's copies are plain memcpys.
    pub fn stage_ahead(&self) {
        if !self.q.info().is_gpu && self.q.info().backend != "cuda" {
            return;
        }
        let g = self.clone();
        std::thread::spawn(move || g.staging.warm(&*g.q));
    }

    /// Waits for [`stage_ahead`](Self::stage_ahead)'s allocation where launches queued beside it
    /// would wait for it: on NVIDIA's OpenCL they did (a 1 mm registration's first level 34-37 ->
    /// 44-59 ms, round 8), so there the allocation ends before the first launch instead, behind
    /// the caller's host work. CUDA's launches run beside it: returns at once.
    pub fn stage_settle(&self) {
        if self.q.info().backend != "cuda" && self.q.info().is_gpu {
            self.staging.warm(&*self.q);
        }
    }

    /// Copies `data` into `b` from element `offset` on.
    pub fn write<T: Elem>(&self, b: &Buf<T>, offset: usize, data: &[T]) -> Result<()> {
        if offset + data.len() > b.len() {
            return Err(anyhow!("write of {} elements at {offset} past a buffer of {}", data.len(), b.len()));
        }
        let sz = std::mem::size_of::<T>();
        self.staging.write(&*self.q, &b.raw, offset * sz, bytemuck::cast_slice(data))
    }

    /// Copies a share of a component-major array into `b` from element `offset` on, as one
    /// array (`ncomp` x len), gathering its components on the way into the staging slots.
    pub fn write_columns<T: Elem>(&self, b: &Buf<T>, offset: usize, cols: &Columns<T>) -> Result<()> {
        if offset + cols.ncomp() * cols.len() > b.len() {
            return Err(anyhow!("write of {} x {} elements at {offset} past a buffer of {}", cols.ncomp(), cols.len(), b.len()));
        }
        let runs: Vec<&[u8]> = cols.runs().into_iter().map(bytemuck::cast_slice).collect();
        self.staging.write_runs(&*self.q, &b.raw, offset * std::mem::size_of::<T>(), &runs)
    }

    /// Reads `b`'s first `ncomp` x len elements into a share of a component-major array,
    /// scattering its components on the way out of the staging slots; waits.
    pub fn read_columns<T: Elem>(&self, b: &Buf<T>, cols: &mut ColumnsMut<T>) -> Result<()> {
        if cols.ncomp() * cols.len() > b.len() {
            return Err(anyhow!("read of {} x {} elements past a buffer of {}", cols.ncomp(), cols.len(), b.len()));
        }
        let mut runs: Vec<&mut [u8]> = cols.runs_mut().into_iter().map(bytemuck::cast_slice_mut).collect();
        self.staging.read_runs(&*self.q, &b.raw, 0, &mut runs)
    }

    /// The whole buffer; waits for the queue.
    pub fn download<T: Elem>(&self, b: &Buf<T>) -> Result<Vec<T>> {
        self.download_first(b, b.len())
    }

    /// The first `n` elements of `b` (a buffer made for more than one use holds).
    pub fn download_first<T: Elem>(&self, b: &Buf<T>, n: usize) -> Result<Vec<T>> {
        let mut out = vec![T::zeroed(); n];
        self.read(b, 0, &mut out)?;
        Ok(out)
    }

    /// `out.len()` elements of `b` from element `offset` on; waits.
    pub fn read<T: Elem>(&self, b: &Buf<T>, offset: usize, out: &mut [T]) -> Result<()> {
        if offset + out.len() > b.len() {
            return Err(anyhow!("read of {} elements at {offset} past a buffer of {}", out.len(), b.len()));
        }
        let sz = std::mem::size_of::<T>();
        self.staging.read(&*self.q, &b.raw, offset * sz, bytemuck::cast_slice_mut(out))
    }

    /// Queues a kernel over `shape` with `args`, checked against the kernel's declared parameters
    /// (count, kinds, element types, 32-bit index range). Asynchronous; errors from the kernel's
    /// execution surface at the next wait.
    pub fn launch(&self, k: &Kernel, shape: Shape, args: &[Arg]) -> Result<()> {
        signature::check(&k.name, &k.params, args)?;
        let dims = match shape {
            Shape::Items { n, group } => {
                if n == 0 {
                    return Ok(());
                }
                let local = group.or_else(|| self.default_group());
                let global = local.map_or(n, |l| n.div_ceil(l) * l);
                api::LaunchDims { global, local }
            }
            Shape::Groups { groups, size } => {
                if groups == 0 {
                    return Ok(());
                }
                api::LaunchDims { global: groups * size, local: Some(size) }
            }
        };
        if dims.global > i32::MAX as usize {
            return Err(anyhow!("kernel {}: {} work-items exceed the 32-bit id range", k.name, dims.global));
        }
        self.q.launch(&k.raw, &k.name, dims, args)
    }

    /// Work-group size for `Shape::items`: 128 on GPUs; on CPU OpenCL devices the driver's choice
    /// (PoCL vectorises across work-items and picks the size itself).
    fn default_group(&self) -> Option<usize> {
        if self.info().is_gpu || self.info().backend == "cuda" {
            Some(128)
        } else {
            None
        }
    }

    /// A float4 3-D texture (linear filtering, clamped to the edge) filled on the device from
    /// `src`, starting at float4 element `texel_offset`. An error (no image support, grid beyond
    /// the device's limits) lets the caller fall back to in-kernel interpolation.
    pub fn texture3d(&self, src: &Buf<f32>, texel_offset: usize, dims: [usize; 3]) -> Result<Texture3d> {
        self.texture(src, texel_offset * 4, dims, TexelFormat { channels: 4, half: false })
    }

    /// A one-float-per-texel 3-D texture (read by `np_tex3d_f1`), otherwise as
    /// [`texture3d`](Self::texture3d): a scalar image costs a quarter of the float4 texture's
    /// bytes and texture-cache lines.
    pub fn texture3d_scalar(&self, src: &Buf<f32>, offset: usize, dims: [usize; 3]) -> Result<Texture3d> {
        self.texture(src, offset, dims, TexelFormat { channels: 1, half: false })
    }

    /// A texture of `dims` texels in `format` from `src` at element `offset`, the buffer's
    /// elements being the texels' channels (f32, or u16 holding halves).
    pub fn texture<T: Elem>(&self, src: &Buf<T>, offset: usize, dims: [usize; 3], format: TexelFormat) -> Result<Texture3d> {
        // One buffer element per channel.
        if std::mem::size_of::<T>() * format.channels != format.bytes() {
            return Err(anyhow!("texture of {format:?} texels from a buffer of {}", T::NAME));
        }
        let texels: usize = dims.iter().product();
        if offset + format.channels * texels > src.len() {
            return Err(anyhow!("texture of {dims:?} texels at {offset} past a buffer of {} elements", src.len()));
        }
        let raw = self.q.texture3d(&src.raw, offset * std::mem::size_of::<T>(), dims, format)?;
        Ok(Texture3d { raw, dims })
    }

    /// Bits of the hardware filter's interpolation weights: NVIDIA's texture units use 8-bit
    /// fixed point (1/256 steps); None where the device filters in full float or is unknown.
    pub fn filter_bits(&self) -> Option<u32> {
        let i = self.info();
        (i.backend == "cuda" || i.vendor.to_ascii_lowercase().contains("nvidia")).then_some(8)
    }

    /// Page-locked host memory of `n` elements for `upload_from`/`download_into`.
    pub fn pinned<T: Elem>(&self, n: usize) -> Result<Pinned<T>> {
        let raw = self.q.pinned(buffer::alloc_bytes::<T>(n))?;
        Ok(Pinned { raw, len: n, _t: std::marker::PhantomData })
    }

    /// `n` elements of host memory that kernels write directly (CUDA mapped memory): a small
    /// result read without a copy after `finish`. None on OpenCL.
    pub fn mapped<T: Elem>(&self, n: usize) -> Result<Option<Mapped<T>>> {
        let bytes = buffer::alloc_bytes::<T>(n);
        Ok(self.q.mapped(bytes)?.map(|(host, raw)| Mapped { buf: Buf::new(raw, n), host: Pinned { raw: host, len: n, _t: std::marker::PhantomData } }))
    }

    /// Queues a copy of `src[range]` into `dst` at element `offset`, returning at once; `src` must
    /// not change until the queue has passed the copy (`record()` after it, then `wait`).
    pub fn upload_from<T: Elem>(&self, src: &Pinned<T>, range: std::ops::Range<usize>, dst: &Buf<T>, offset: usize) -> Result<()> {
        let sz = std::mem::size_of::<T>();
        if range.end > src.len || offset + range.len() > dst.len() {
            return Err(anyhow!("pinned upload out of range"));
        }
        unsafe { self.q.write_async(&dst.raw, offset * sz, src.raw.ptr.add(range.start * sz), range.len() * sz, false) }.map(|_| ())
    }

    /// Queues a copy of `src` from element `offset` into `dst[range]`, returning at once; the
    /// data is there after the next `finish` (no event is made for it: `record()` after it
    /// gives one).
    pub fn download_into<T: Elem>(&self, src: &Buf<T>, offset: usize, dst: &mut Pinned<T>, range: std::ops::Range<usize>) -> Result<()> {
        let sz = std::mem::size_of::<T>();
        if range.end > dst.len || offset + range.len() > src.len() {
            return Err(anyhow!("pinned download out of range"));
        }
        unsafe { self.q.read_async(&src.raw, offset * sz, dst.raw.ptr.add(range.start * sz), range.len() * sz, false) }.map(|_| ())
    }

    /// A point in this queue's order, for `wait_for` on another queue or a host `wait`.
    pub fn record(&self) -> Result<Event> {
        self.q.record()
    }

    /// Makes later work on this queue wait for `e` (from any queue of the same device).
    pub fn wait_for(&self, e: &Event) -> Result<()> {
        self.q.wait_for(e)
    }

    /// A second queue on the same device and context, for overlapping copies with kernels.
    pub fn second_queue(&self) -> Result<Gpu> {
        Ok(Gpu::from_queue(self.q.second_queue()?))
    }

    /// Waits for everything queued so far.
    pub fn finish(&self) -> Result<()> {
        self.q.finish()
    }

    /// Device time of the kernels and transfers since the last call (device events).
    pub fn take_timings(&self) -> Result<Timings> {
        self.q.take_timings()
    }

    /// Timing events on (the default) or off for the work queued from now on; untimed work is
    /// missing from `take_timings`.
    pub fn set_timing(&self, on: bool) {
        self.q.set_timing(on)
    }

    pub fn mem_total(&self) -> u64 {
        self.info().global_mem_bytes
    }
    /// Free device memory now (CUDA); half the total where the API cannot say (OpenCL 1.2).
    pub fn mem_free(&self) -> u64 {
        self.q.mem_free()
    }
    /// The largest single allocation the device allows.
    pub fn max_alloc(&self) -> u64 {
        self.max_alloc
    }
}
