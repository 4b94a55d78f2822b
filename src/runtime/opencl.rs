//! The OpenCL backend's plumbing: discovery, one context per device, programs built once per
//! device per process, and times from profiling events (the queues are the GPU layer's, `gpu::cl`).
//! libOpenCL is loaded at run time (opencl3's `dynamic`), so a machine without it simply lists
//! no OpenCL devices.

use super::source::{assemble, marked_options, Dialect};
use super::identity::{self, GpuId};
use super::DeviceInfo;
use anyhow::{anyhow, Context as _, Result};
use opencl3::context::Context;
use opencl3::device::{Device, CL_DEVICE_TYPE_ALL, CL_DEVICE_TYPE_GPU};
use opencl3::event::Event;
use opencl3::platform::get_platforms;
use opencl3::program::Program;
use opencl3::types::cl_device_id;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Every OpenCL device of every platform, as (platform index, device index, id, info).
pub fn probe() -> Result<Vec<(usize, usize, cl_device_id, DeviceInfo)>, String> {
    // PoCL initialises its devices lazily inside the first queries and crashes (SIGSEGV) when
    // another thread queries at the same time, so discovery is serialised.
    static PROBE: Mutex<()> = Mutex::new(());
    let _one_at_a_time = PROBE.lock().unwrap_or_else(|e| e.into_inner());
    let platforms = get_platforms().map_err(|e| format!("no OpenCL platform ({e})"))?;
    let mut out = Vec::new();
    for (p, platform) in platforms.iter().enumerate() {
        let pname = platform.name().unwrap_or_default();
        let ids = match platform.get_devices(CL_DEVICE_TYPE_ALL) {
            Ok(ids) => ids,
            Err(_) => continue,
        };
        for (d, id) in ids.into_iter().enumerate() {
            let dev = Device::new(id);
            let info = DeviceInfo {
                backend: "opencl".into(),
                spec: format!("opencl:{p}:{d}"),
                name: dev.name().unwrap_or_default().trim().to_string(),
                vendor: dev.vendor().unwrap_or_default().trim().to_string(),
                platform: pname.trim().to_string(),
                compute_units: dev.max_compute_units().unwrap_or(0),
                clock_mhz: dev.max_clock_frequency().unwrap_or(0),
                global_mem_bytes: dev.global_mem_size().unwrap_or(0),
                image_support: dev.image_support().unwrap_or(false),
                is_gpu: dev.dev_type().map(|t| t & CL_DEVICE_TYPE_GPU != 0).unwrap_or(false),
                id: Default::default(),
            };
            let info = DeviceInfo { id: gpu_id(&dev, &info), ..info };
            out.push((p, d, id, info));
        }
    }
    Ok(out)
}

/// A GPU's UUID and PCI address, where its driver answers (`identity.rs`); none for CPUs.
fn gpu_id(dev: &Device, info: &DeviceInfo) -> GpuId {
    if !info.is_gpu {
        return GpuId::default();
    }
    let raw = |param| match opencl3::device::get_device_info(dev.id(), param) {
        Ok(cl3::info_type::InfoType::VecUchar(v)) => Some(v),
        _ => None,
    };
    let word = |param| raw(param).filter(|v| v.len() == 4).map(|v| u32::from_ne_bytes([v[0], v[1], v[2], v[3]]));
    let nv = || {
        // cl_nv_device_attribute_query; the domain attribute came later than bus and slot.
        let (bus, slot) = (dev.pci_bus_id_nv().ok()?, dev.pci_slot_id_nv().ok()?);
        Some(identity::pci_from_nv(word(CL_DEVICE_PCI_DOMAIN_ID_NV)?, bus, slot))
    };
    GpuId {
        uuid: dev.uuid_khr().ok(),
        pci: raw(opencl3::device::CL_DEVICE_PCI_BUS_INFO_KHR).and_then(|v: Vec<u8>| identity::pci_from_khr(&v)).or_else(nv),
    }
}

const CL_DEVICE_PCI_DOMAIN_ID_NV: u32 = 0x400A;

pub struct ClDevice {
    pub info: DeviceInfo,
    pub device: Device,
    pub context: Context,
    /// The device takes NVIDIA's compiler options (cl_nv_compiler_options: -cl-nv-maxrregcount...).
    nv_options: bool,
    programs: Mutex<HashMap<&'static str, Arc<Program>>>,
}

impl ClDevice {
    pub fn open(id: cl_device_id, info: DeviceInfo) -> Result<ClDevice> {
        let device = Device::new(id);
        let context = Context::from_device(&device).with_context(|| format!("cannot create an OpenCL context on {}", info.name))?;
        let nv_options = device.extensions().is_ok_and(|e| e.split_whitespace().any(|x| x == "cl_nv_compiler_options"));
        Ok(ClDevice { info, device, context, nv_options, programs: Mutex::new(HashMap::new()) })
    }

    /// The program `name` built from `entry` (with its shared headers), built once and cached.
    /// A build failure carries the compiler's log.
    pub fn program(&self, name: &'static str, entry: &str) -> Result<Arc<Program>> {
        let mut cache = self.programs.lock().expect("program cache poisoned");
        if let Some(p) = cache.get(name) {
            return Ok(p.clone());
        }
        let src = assemble(Dialect::OpenCl, entry)?;
        let program = Program::create_and_build_from_source(&self.context, &src, &build_options(&src, self.nv_options))
            .map_err(|log| anyhow!("OpenCL build of {name}.cl failed on {}:\n{log}", self.info.name))?;
        // The compiler's log on request (with NVIDIA's `-cl-nv-verbose`: registers per kernel).
        if std::env::var("NEUROPORT_OPENCL_LOG").is_ok_and(|v| v == "1") {
            let log = program.get_build_log(self.device.id()).unwrap_or_default();
            eprintln!("OpenCL build log of {name}.cl on {}:\n{}", self.info.name, log.trim());
        }
        let p = Arc::new(program);
        cache.insert(name, p.clone());
        Ok(p)
    }
}

/// A program's build options: OpenCL C 1.2, the options its source names after
/// `NP_OPENCL_OPTIONS:` (the `-` words that follow; the FIM flushes denormals, as its CUDA
/// build does) and, on a device that takes NVIDIA's compiler options (`nv`), after
/// `NP_OPENCL_NV_OPTIONS:` (the FIM's register cap, as `__maxnreg__` on CUDA), and
/// `NEUROPORT_OPENCL_OPTIONS` (for tuning and diagnosis, e.g. NVIDIA's
/// `-cl-nv-maxrregcount=80 -cl-nv-verbose`; the CUDA programs' counterpart is
/// `NEUROPORT_NVRTC_OPTIONS`).
fn build_options(src: &str, nv: bool) -> String {
    let mut opts = vec!["-cl-std=CL1.2".to_string()];
    let markers: &[&str] = if nv { &["NP_OPENCL_OPTIONS:", "NP_OPENCL_NV_OPTIONS:"] } else { &["NP_OPENCL_OPTIONS:"] };
    for marker in markers {
        opts.extend(marked_options(src, marker, "-"));
    }
    if let Ok(extra) = std::env::var("NEUROPORT_OPENCL_OPTIONS") {
        opts.extend(extra.split_whitespace().map(str::to_string));
    }
    opts.join(" ")
}

/// Milliseconds between an event's start and end, from the profiling queue.
pub fn event_ms(ev: &Event) -> Result<f64> {
    ev.wait().context("OpenCL command failed")?;
    let s = ev.profiling_command_start()?;
    let e = ev.profiling_command_end()?;
    Ok(e.saturating_sub(s) as f64 * 1e-6)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// fim.cl asks OpenCL to flush denormals (as its CUDA build does), and NVIDIA's compiler
    /// for a register cap only where the device takes its options; a source without the
    /// markers builds as OpenCL C 1.2 alone.
    #[test]
    fn sources_name_their_opencl_options() {
        let fim = assemble(Dialect::OpenCl, crate::fim::gpu::SOURCE).unwrap();
        let capped = format!("/* NP_OPENCL_NV_OPTIONS: -cl-nv-maxrregcount=80 */\n{fim}");
        if std::env::var("NEUROPORT_OPENCL_OPTIONS").is_err() {
            assert_eq!(build_options(&fim, false), "-cl-std=CL1.2 -cl-denorms-are-zero");
            assert_eq!(build_options(&capped, false), "-cl-std=CL1.2 -cl-denorms-are-zero");
            assert_eq!(build_options(&capped, true), "-cl-std=CL1.2 -cl-denorms-are-zero -cl-nv-maxrregcount=80");
            assert_eq!(build_options("__kernel void k() {}", true), "-cl-std=CL1.2");
            // bedpost's exponentials by the hardware's e^x on NVIDIA's OpenCL only (bedpost.h).
            let bedpost = assemble(Dialect::OpenCl, include_str!("../../cl/bedpost.cl")).unwrap();
            assert_eq!(build_options(&bedpost, true), "-cl-std=CL1.2 -DNP_BP_EXP=1");
            assert_eq!(build_options(&bedpost, false), "-cl-std=CL1.2");
            // probtrack's tracing kernels faster capped on NVIDIA's OpenCL (probtrack.cl).
            let probtrack = assemble(Dialect::OpenCl, include_str!("../../cl/probtrack.cl")).unwrap();
            assert_eq!(build_options(&probtrack, true), "-cl-std=CL1.2 -cl-nv-maxrregcount=128");
            assert_eq!(build_options(&probtrack, false), "-cl-std=CL1.2");
        }
    }
}
