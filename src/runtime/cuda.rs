//! The CUDA backend's plumbing: driver API through cudarc, kernels compiled at run time by NVRTC
//! for the device's own architecture, modules cached per device, times from CUDA events.
//! cudarc panics if libcuda or libnvrtc is absent, so `probe` checks both before touching them.

use super::source::{assemble, Dialect};
use super::identity::{GpuId, Pci};
use super::{DeviceInfo, Timings};
use anyhow::{anyhow, Result};
use cudarc::driver::result as cu;
use cudarc::driver::sys::{CUdevice_attribute as Attr, CUevent_flags};
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DeviceRepr, ValidAsZeroBits};
use cudarc::nvrtc::{CompileOptions, Ptx};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

pub fn driver_present() -> bool {
    unsafe { cudarc::driver::sys::is_culib_present() }
}
pub fn nvrtc_present() -> bool {
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

/// The CUDA devices, or why there are none ("CUDA unavailable: ..."). A driver too old for a
/// symbol cudarc expects makes cudarc panic; that is caught and reported like any other failure.
pub fn probe() -> Result<Vec<DeviceInfo>, String> {
    crate::guard::quiet_catch(probe_inner).unwrap_or_else(|| Err("the CUDA driver or NVRTC lacks a function neuroport needs (driver too old?)".into()))
}

/// Each device is described without a context (the driver's device queries need none); the
/// device a command uses makes its context once, when opened. Until round 27 the probe made every
/// GPU's primary context: on the 4-GPU host a command's wait for its devices was 1.1-1.7 s with
/// them and 0.5-1.0 s without (the rest is cuInit's, see `BackendSpec::first_cuda_device_only`).
fn probe_inner() -> Result<Vec<DeviceInfo>, String> {
    if !driver_present() {
        return Err("libcuda not found (no NVIDIA driver)".into());
    }
    if !nvrtc_present() {
        return Err("libnvrtc.so.13 not found (install CUDA 13.0 NVRTC and put it on LD_LIBRARY_PATH)".into());
    }
    let n = CudaContext::device_count().map_err(|e| format!("driver error: {e:?}"))?;
    let mut out = Vec::new();
    for i in 0..n.max(0) as usize {
        let dev = cu::device::get(i as i32).map_err(|e| format!("cannot open cuda:{i}: {e:?}"))?;
        out.push(info_of(dev, i));
    }
    Ok(out)
}

fn info_of(dev: cudarc::driver::sys::CUdevice, i: usize) -> DeviceInfo {
    // SAFETY: `dev` came from cuDeviceGet after cuInit; the queries only read.
    let attr = |a| unsafe { cu::device::get_attribute(dev, a) }.unwrap_or(0);
    let (maj, min) = (attr(Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR), attr(Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR));
    DeviceInfo {
        backend: "cuda".into(),
        spec: format!("cuda:{i}"),
        name: cu::device::get_name(dev).unwrap_or_default(),
        vendor: "NVIDIA Corporation".into(),
        platform: format!("CUDA driver, compute capability {maj}.{min}"),
        compute_units: attr(Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT) as u32,
        clock_mhz: (attr(Attr::CU_DEVICE_ATTRIBUTE_CLOCK_RATE) / 1000) as u32,
        // SAFETY: as above.
        global_mem_bytes: unsafe { cu::device::total_mem(dev) }.unwrap_or(0) as u64,
        image_support: true,
        is_gpu: true,
        id: GpuId {
            uuid: cu::device::get_uuid(dev).ok().map(|u| u.bytes.map(|b| b as u8)),
            pci: Some(Pci {
                domain: attr(Attr::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID) as u32,
                bus: attr(Attr::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID) as u32,
                device: attr(Attr::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID) as u32,
            }),
        },
    }
}

/// NVRTC's virtual architecture name for a compute capability.
pub fn arch_for(major: i32, minor: i32) -> &'static str {
    match (major, minor) {
        (5, _) => "compute_52",
        (6, 0) => "compute_60",
        (6, _) => "compute_61",
        (7, 0) => "compute_70",
        (7, 2) => "compute_72",
        (7, _) => "compute_75",
        (8, 0) => "compute_80",
        (8, 6) => "compute_86",
        (8, 7) => "compute_87",
        (8, _) => "compute_89",
        (9, _) => "compute_90",
        (10, 0) => "compute_100",
        (10, _) => "compute_103",
        (12, _) => "compute_120",
        _ => "compute_75",
    }
}

/// Compiles an entry source (with its shared headers) to PTX. Needs only libnvrtc, so CI checks
/// every `.cu` file this way on machines without a GPU.
pub fn compile_ptx(name: &str, entry: &str, arch: &'static str) -> Result<Ptx> {
    if !nvrtc_present() {
        return Err(anyhow!("CUDA unavailable: libnvrtc.so.13 not found"));
    }
    let src = assemble(Dialect::Cuda, entry)?;
    let opts = CompileOptions { arch: Some(arch), name: Some(format!("{name}.cu")), options: source_options(&src), ..Default::default() };
    let r = crate::guard::quiet_catch(|| cudarc::nvrtc::compile_ptx_with_opts(src, opts)).ok_or_else(|| anyhow!("NVRTC compile of {name}.cu failed: libnvrtc lacks a function neuroport needs"))?;
    r.map_err(|e| match e {
        cudarc::nvrtc::CompileError::CompileError { log, .. } => {
            anyhow!("NVRTC compile of {name}.cu failed:\n{}", log.to_string_lossy())
        }
        other => anyhow!("NVRTC compile of {name}.cu failed: {other:?}"),
    })
}

/// NVRTC options a program asks for in its source, after `NP_NVRTC_OPTIONS:` (the `--` words
/// that follow). The FIM asks for OpenCL 1.2's single-precision accuracy (division 2.5 ulp, sqrt
/// 3 ulp: `--prec-div=false --prec-sqrt=false`), which NVIDIA's OpenCL compiles to by default,
/// and denormals flushed (`--ftz=true`; its OpenCL build asks for `-cl-denorms-are-zero`), so
/// both dialects run the same arithmetic contract. `NEUROPORT_NVRTC_IEEE=1` ignores them
/// (correctly rounded division and sqrt, NVRTC's default), for measuring what they cost.
/// `NEUROPORT_NVRTC_OPTIONS` adds options to every program (for tuning, e.g. `--maxrregcount=64`).
fn source_options(src: &str) -> Vec<String> {
    let mut opts = if std::env::var("NEUROPORT_NVRTC_IEEE").is_ok_and(|v| v == "1") { Vec::new() } else { super::source::marked_options(src, "NP_NVRTC_OPTIONS:", "--") };
    if let Ok(extra) = std::env::var("NEUROPORT_NVRTC_OPTIONS") {
        opts.extend(extra.split_whitespace().map(str::to_string));
    }
    opts
}

/// [`compile_ptx`] through a disk cache: NVRTC takes about a second per program, on every run of
/// a command that lasts only a few. The key is the assembled source, the architecture and this
/// build's version, so an edited kernel or a new release never loads stale PTX. Where no cache
/// folder can be written the PTX is compiled as before. `NEUROPORT_PTX_CACHE=0` turns it off.
pub fn cached_ptx(name: &str, entry: &str, arch: &'static str) -> Result<Ptx> {
    cached_ptx_in(ptx_cache_dir(), name, entry, arch)
}

fn cached_ptx_in(dir: Option<std::path::PathBuf>, name: &str, entry: &str, arch: &'static str) -> Result<Ptx> {
    let src = assemble(Dialect::Cuda, entry)?;
    let key = fnv1a(&[src.as_bytes(), arch.as_bytes(), env!("CARGO_PKG_VERSION").as_bytes(), source_options(&src).join(" ").as_bytes()]);
    let file = dir.as_ref().map(|d| d.join(format!("{name}-{arch}-{key:016x}.ptx")));
    if let Some(Ok(text)) = file.as_ref().map(std::fs::read_to_string) {
        if text.contains(".entry") {
            return Ok(Ptx::from_src(text));
        }
    }
    let ptx = compile_ptx(name, entry, arch)?;
    if let (Some(d), Some(f)) = (dir, file) {
        // Written under a temporary name and renamed: a concurrent run never reads half a file.
        // The name holds the thread too: a split run builds the same module on several devices at once.
        let thread = format!("{:?}", std::thread::current().id()).chars().filter(char::is_ascii_digit).collect::<String>();
        let tmp = d.join(format!(".{}.{thread}.{}", std::process::id(), f.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()));
        if std::fs::create_dir_all(&d).is_ok() && std::fs::write(&tmp, ptx.to_src()).is_ok() && std::fs::rename(&tmp, &f).is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
    }
    Ok(ptx)
}

/// `$NEUROPORT_PTX_CACHE`, else `$XDG_CACHE_HOME/neuroport/ptx`, else `~/.cache/neuroport/ptx`.
fn ptx_cache_dir() -> Option<std::path::PathBuf> {
    match std::env::var_os("NEUROPORT_PTX_CACHE") {
        Some(v) if v == "0" || v.is_empty() => return None,
        Some(v) => return Some(v.into()),
        None => {}
    }
    let base = std::env::var_os("XDG_CACHE_HOME").map(std::path::PathBuf::from).or_else(|| std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join(".cache")))?;
    Some(base.join("neuroport").join("ptx"))
}

/// 64-bit FNV-1a over the parts (stable across builds and platforms, unlike std's hasher).
fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for b in parts.iter().flat_map(|p| p.iter().chain(std::iter::once(&0xffu8))) {
        h = (h ^ *b as u64).wrapping_mul(0x100_0000_01b3);
    }
    h
}

pub struct CudaDevice {
    pub info: DeviceInfo,
    pub ctx: Arc<CudaContext>,
    pub stream: Arc<CudaStream>,
    pub arch: &'static str,
    modules: Mutex<HashMap<&'static str, Arc<CudaModule>>>,
}

impl CudaDevice {
    pub fn open(ordinal: usize) -> Result<CudaDevice> {
        if !driver_present() || !nvrtc_present() {
            return Err(anyhow!("CUDA unavailable: libcuda or libnvrtc not found"));
        }
        let ctx = crate::guard::quiet_catch(|| CudaContext::new(ordinal))
            .ok_or_else(|| anyhow!("cannot open cuda:{ordinal}: the driver lacks a function neuroport needs"))?
            .map_err(|e| anyhow!("cannot open cuda:{ordinal}: {e:?}"))?;
        let (maj, min) = ctx.compute_capability().map_err(|e| anyhow!("{e:?}"))?;
        let stream = ctx.default_stream();
        let info = info_of(ctx.cu_device(), ordinal);
        Ok(CudaDevice { info, ctx, stream, arch: arch_for(maj, min), modules: Mutex::new(HashMap::new()) })
    }

    /// The module `name`, compiled once per device per process.
    pub fn module(&self, name: &'static str, entry: &str) -> Result<Arc<CudaModule>> {
        let mut cache = self.modules.lock().expect("module cache poisoned");
        if let Some(m) = cache.get(name) {
            return Ok(m.clone());
        }
        let ptx = cached_ptx(name, entry, self.arch)?;
        let m = self.ctx.load_module(ptx).map_err(|e| anyhow!("cannot load {name} on {}: {e:?}", self.info.name))?;
        cache.insert(name, m.clone());
        Ok(m)
    }

    pub fn function(&self, module: &Arc<CudaModule>, name: &str) -> Result<CudaFunction> {
        module.load_function(name).map_err(|e| anyhow!("CUDA kernel {name} not found: {e:?}"))
    }

    pub fn upload<T: DeviceRepr>(&self, data: &[T], t: &mut Timings) -> Result<CudaSlice<T>> {
        let (r, ms) = self.timed(|| self.stream.clone_htod(data).map_err(|e| anyhow!("upload failed: {e:?}")))?;
        t.transfer_ms += ms;
        r
    }

    /// `n` elements poisoned with all-ones bytes (NaN as a float, -1 as an integer).
    pub fn alloc<T: DeviceRepr + ValidAsZeroBits>(&self, n: usize) -> Result<CudaSlice<T>> {
        let mut s = unsafe { self.stream.alloc::<T>(n.max(1)) }.map_err(|e| anyhow!("cannot allocate {} bytes on {}: {e:?}", n * std::mem::size_of::<T>(), self.info.name))?;
        let bytes = n.max(1) * std::mem::size_of::<T>();
        {
            use cudarc::driver::DevicePtrMut;
            let (ptr, _sync) = s.device_ptr_mut(&self.stream);
            unsafe { cudarc::driver::result::memset_d8_async(ptr, 0xFF, bytes, self.stream.cu_stream()) }.map_err(|e| anyhow!("memset failed: {e:?}"))?;
        }
        Ok(s)
    }

    pub fn download<T: DeviceRepr + Default + Clone>(&self, s: &CudaSlice<T>, t: &mut Timings) -> Result<Vec<T>> {
        let (r, ms) = self.timed(|| self.stream.clone_dtoh(s).map_err(|e| anyhow!("download failed: {e:?}")))?;
        t.transfer_ms += ms;
        r
    }

    /// Runs `f` between two events on the stream and returns its device time in milliseconds.
    pub fn timed<R>(&self, f: impl FnOnce() -> R) -> Result<(R, f64)> {
        let flags = Some(CUevent_flags::CU_EVENT_DEFAULT);
        let start = self.stream.record_event(flags).map_err(|e| anyhow!("{e:?}"))?;
        let r = f();
        let end = self.stream.record_event(flags).map_err(|e| anyhow!("{e:?}"))?;
        let ms = start.elapsed_ms(&end).map_err(|e| anyhow!("CUDA error: {e:?}"))? as f64;
        Ok((r, ms))
    }

    /// Times a kernel launch closure into `t.kernel_ms`; launch errors surface here.
    pub fn launch(&self, t: &mut Timings, f: impl FnOnce() -> Result<(), cudarc::driver::DriverError>) -> Result<()> {
        let (r, ms) = self.timed(f)?;
        r.map_err(|e| anyhow!("CUDA kernel launch failed: {e:?}"))?;
        self.stream.synchronize().map_err(|e| anyhow!("CUDA kernel failed: {e:?}"))?;
        t.kernel_ms += ms;
        Ok(())
    }
}

#[allow(unused)]
fn _assert_send_sync() {
    fn f<T: Send + Sync>() {}
    f::<CudaDevice>();
}

pub use cudarc::driver::{LaunchConfig, PushKernelArg};
pub type Slice<T> = CudaSlice<T>;

/// A 1-D launch over `n` threads in blocks of `block`.
pub fn grid(n: usize, block: u32) -> LaunchConfig {
    LaunchConfig { grid_dim: ((n as u32).div_ceil(block).max(1), 1, 1), block_dim: (block, 1, 1), shared_mem_bytes: 0 }
}

#[cfg(test)]
mod ptx_cache_tests {
    use super::*;

    /// fim.cl asks for OpenCL's accuracy of division and sqrt and flushed denormals; a source
    /// without the marker asks for nothing.
    #[test]
    fn sources_name_their_nvrtc_options() {
        let fim = assemble(Dialect::Cuda, crate::fim::gpu::SOURCE).unwrap();
        assert_eq!(source_options(&fim), ["--prec-div=false", "--prec-sqrt=false", "--ftz=true"]);
        assert!(source_options("__global__ void k() {}").is_empty());
    }

    #[test]
    fn cached_ptx_is_written_once_and_read_back() {
        if !nvrtc_present() {
            assert!(std::env::var("NEUROPORT_REQUIRE_NVRTC").map_or(true, |v| v != "1"), "libnvrtc.so.13 not found but NEUROPORT_REQUIRE_NVRTC=1");
            return;
        }
        let dir = std::env::temp_dir().join(format!("neuroport-ptx-{}", std::process::id()));
        let at = || Some(dir.clone());
        let entry = "#include \"common/portable.h\"\nNP_KERNEL void ptx_cache_probe(NP_GLOBAL float *x) { x[NP_GID()] = 1.0f; }\n";
        let a = cached_ptx_in(at(), "probe", entry, "compute_75").unwrap().to_src();
        let files: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.path()).collect();
        assert_eq!(files.len(), 1, "{files:?}");
        // A changed cache file is what the next call loads: proof that it read the cache.
        std::fs::write(&files[0], a.replace("ptx_cache_probe", "ptx_cache_probe_from_disk")).unwrap();
        let b = cached_ptx_in(at(), "probe", entry, "compute_75").unwrap().to_src();
        assert!(b.contains("ptx_cache_probe_from_disk"));
        // Another source is another key.
        let c = cached_ptx_in(at(), "probe", &entry.replace("1.0f", "2.0f"), "compute_75").unwrap().to_src();
        assert!(!c.contains("from_disk") && c.contains(".entry"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
