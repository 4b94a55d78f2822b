//! Devices found at run time and chosen by a spec string: `cpu`, `opencl`, `opencl:P:D`,
//! `cuda`, `cuda:N`, `auto` (CUDA > OpenCL GPU > CPU) and, where a command runs several, `all`.
//! Commands that split their work (`split.rs`) also take a comma-separated list of devices
//! (`cuda:0,cuda:1`, `opencl:1:0,cpu`) and `gpus` (every GPU present, once each); `list.rs`
//! resolves those.
//! A binary built with every backend starts on a machine with no GPU, no libcuda and no
//! libOpenCL, and lists fewer devices.

pub mod columns;
pub mod cpu;
pub mod cuda;
pub mod gpu;
pub mod identity;
mod list;
pub use list::check_split_spec;
pub mod memory;
pub mod opencl;
pub mod source;
pub mod split;
pub mod stages;
pub mod timing;
pub mod unused;

use anyhow::{anyhow, bail, Result};
use serde::Serialize;
use std::fmt;
use std::sync::Arc;
pub use timing::Timings;

/// What `neuroport devices` prints and every report row carries.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct DeviceInfo {
    pub backend: String,
    pub spec: String,
    pub name: String,
    pub vendor: String,
    pub platform: String,
    pub compute_units: u32,
    pub clock_mhz: u32,
    pub global_mem_bytes: u64,
    pub image_support: bool,
    pub is_gpu: bool,
    /// Which GPU this is (UUID, PCI address) where the API says: how `gpus` recognises one GPU
    /// seen through both APIs (`identity.rs`). Not in report rows; `devices --json` shows it.
    #[serde(skip)]
    pub id: identity::GpuId,
}

/// An opened device.
#[derive(Clone)]
pub enum Device {
    Cpu(Arc<cpu::Cpu>),
    OpenCl(Arc<opencl::ClDevice>),
    Cuda(Arc<cuda::CudaDevice>),
}

/// "1 thread", "2 threads": every label counting CPU threads says it this way ("1 threads" was
/// printed by `bench split` and the device labels).
pub fn threads_label(n: usize) -> String {
    format!("{n} thread{}", if n == 1 { "" } else { "s" })
}

impl Device {
    pub fn info(&self) -> &DeviceInfo {
        match self {
            Device::Cpu(d) => &d.info,
            Device::OpenCl(d) => &d.info,
            Device::Cuda(d) => &d.info,
        }
    }
    /// `spec (name)`, e.g. `opencl:1:0 (NVIDIA H100 80GB HBM3)`.
    pub fn label(&self) -> String {
        let i = self.info();
        match self {
            Device::Cpu(c) => format!("cpu ({}, {})", threads_label(c.threads()), i.name),
            _ => format!("{} ({})", i.spec, i.name),
        }
    }
    pub fn is_cpu(&self) -> bool {
        matches!(self, Device::Cpu(_))
    }
}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.label())
    }
}

/// A parsed `--backend` value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BackendSpec {
    Auto,
    All,
    Cpu,
    OpenCl(Option<(usize, usize)>),
    Cuda(Option<usize>),
    /// Every GPU present, each once (CUDA where a GPU is visible through both APIs).
    Gpus,
    /// Several devices that share one run's work (`cuda:0,cuda:1`, `gpus,cpu`).
    List(Vec<BackendSpec>),
}

impl std::str::FromStr for BackendSpec {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> Result<Self> {
        let s = s.trim().to_ascii_lowercase();
        if s.contains(',') {
            let items = s.split(',').map(|p| p.trim()).collect::<Vec<_>>();
            if let Some(bad) = items.iter().find(|p| matches!(**p, "" | "auto" | "all")) {
                let what = if bad.is_empty() { "an empty entry".to_string() } else { format!("'{bad}'") };
                bail!("backend list '{s}' holds {what}: list devices (cpu, opencl, opencl:P:D, cuda, cuda:N, gpus) separated by commas");
            }
            return Ok(BackendSpec::List(items.iter().map(|p| one_spec(p)).collect::<Result<_>>()?));
        }
        one_spec(&s)
    }
}

impl BackendSpec {
    /// Whether the spec can use no CUDA device but the first (`auto`, `cuda`, `cuda:0`): a
    /// command with such a spec may have the CUDA driver start that GPU alone. cuInit with every
    /// GPU visible took 0.90 s on a 4-GPU H100 host, with one 0.20 s, and the command waited for
    /// it (its `devices` stage 0.98-1.25 s against 0.30-0.37 s, round 27).
    pub fn first_cuda_device_only(&self) -> bool {
        matches!(self, BackendSpec::Auto | BackendSpec::Cuda(None) | BackendSpec::Cuda(Some(0)))
    }

    /// Whether the spec asks for more than the CPU by name: `auto` (the default) and `cpu` (or a
    /// list of cpu pools) do not. A CPU-only method run with such a spec ignores it.
    pub fn asks_beyond_cpu(&self) -> bool {
        match self {
            BackendSpec::Auto | BackendSpec::Cpu => false,
            BackendSpec::List(v) => v.iter().any(BackendSpec::asks_beyond_cpu),
            BackendSpec::All | BackendSpec::Gpus | BackendSpec::OpenCl(_) | BackendSpec::Cuda(_) => true,
        }
    }

    /// Whether the spec can pick a (CUDA, OpenCL) device: the APIs worth probing for it.
    fn apis(&self) -> (bool, bool) {
        match self {
            BackendSpec::Cpu => (false, false),
            BackendSpec::Cuda(_) | BackendSpec::Auto => (true, false),
            BackendSpec::OpenCl(_) => (false, true),
            BackendSpec::List(v) => v.iter().map(BackendSpec::apis).fold((false, false), |a, b| (a.0 || b.0, a.1 || b.1)),
            BackendSpec::All | BackendSpec::Gpus => (true, true),
        }
    }
}

/// The spec as `--backend` spells it (`opencl:0:1`, `cuda:0,cpu`).
impl fmt::Display for BackendSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BackendSpec::Auto => f.write_str("auto"),
            BackendSpec::All => f.write_str("all"),
            BackendSpec::Cpu => f.write_str("cpu"),
            BackendSpec::Gpus => f.write_str("gpus"),
            BackendSpec::OpenCl(None) => f.write_str("opencl"),
            BackendSpec::OpenCl(Some((p, d))) => write!(f, "opencl:{p}:{d}"),
            BackendSpec::Cuda(None) => f.write_str("cuda"),
            BackendSpec::Cuda(Some(n)) => write!(f, "cuda:{n}"),
            BackendSpec::List(v) => f.write_str(&v.iter().map(|b| b.to_string()).collect::<Vec<_>>().join(",")),
        }
    }
}

fn one_spec(s: &str) -> Result<BackendSpec> {
    let parts: Vec<&str> = s.split(':').collect();
    let num = |p: &str| p.parse::<usize>().map_err(|_| anyhow!("bad device number '{p}' in backend '{s}'"));
    Ok(match parts.as_slice() {
        ["auto"] => BackendSpec::Auto,
        ["all"] => BackendSpec::All,
        ["gpus"] => BackendSpec::Gpus,
        ["cpu"] => BackendSpec::Cpu,
        ["opencl"] | ["cl"] => BackendSpec::OpenCl(None),
        ["opencl", p, d] | ["cl", p, d] => BackendSpec::OpenCl(Some((num(p)?, num(d)?))),
        ["cuda"] => BackendSpec::Cuda(None),
        ["cuda", n] => BackendSpec::Cuda(Some(num(n)?)),
        _ => bail!("unknown backend '{s}': use cpu, opencl, opencl:P:D, cuda, cuda:N, gpus, a comma-separated list of these, auto or all"),
    })
}

/// Every device present, opened lazily; `notes` say why a backend lists nothing.
pub struct Inventory {
    pub cpu: DeviceInfo,
    pub opencl: Vec<(usize, usize, opencl3::types::cl_device_id, DeviceInfo)>,
    pub cuda: Vec<DeviceInfo>,
    pub notes: Vec<String>,
    threads: Option<usize>,
    /// GPUs opened ahead ([`Inventory::open_ahead`]), each handed to the first open of its spec.
    ahead: std::sync::Mutex<Vec<Device>>,
}

// SAFETY: the only field that is not Send is OpenCL's cl_device_id, an opaque handle that the
// OpenCL API accepts from any thread (every OpenCL call is thread-safe except clSetKernelArg,
// which takes no device id); the CLI discovers on one thread and uses the result on another.
unsafe impl Send for Inventory {}

impl Inventory {
    pub fn discover(threads: Option<usize>) -> Inventory {
        Self::discover_for(threads, None)
    }

    /// Probes only the APIs that `spec` can pick from (every API when None): initialising an
    /// OpenCL platform or a CUDA context costs tenths of a second, a large part of a short
    /// command's wall time. `auto` looks at OpenCL only when CUDA has no device.
    pub fn discover_for(threads: Option<usize>, spec: Option<&BackendSpec>) -> Inventory {
        let mut notes = Vec::new();
        let mut cpu = cpu::host_info();
        if let Some(t) = threads {
            cpu.compute_units = t as u32;
        }
        let (want_cuda, want_opencl) = spec.map_or((true, true), BackendSpec::apis);
        let cuda = if want_cuda {
            cuda::probe().unwrap_or_else(|e| {
                notes.push(format!("CUDA unavailable: {e}"));
                Default::default()
            })
        } else {
            Default::default()
        };
        let opencl = if want_opencl || (spec == Some(&BackendSpec::Auto) && cuda.is_empty()) {
            opencl::probe().unwrap_or_else(|e| {
                notes.push(format!("OpenCL unavailable: {e}"));
                Vec::new()
            })
        } else {
            Vec::new()
        };
        let mut inv = Inventory { cpu, opencl, cuda, notes, threads, ahead: Default::default() };
        inv.settle_ids();
        inv
    }

    /// Opens ahead the GPU that a one-device `spec` picks (`cuda[:N]`, `opencl[:P:D]`, `auto`),
    /// kept for the first open of that device. The CLI calls it on the discovery thread, so the
    /// driver's context creation (~0.1 s for CUDA on the H100 box) overlaps the reading of the
    /// command's inputs instead of following it. Errors are left for that open to report; a
    /// later open of the same device makes its own, as before.
    pub fn open_ahead(&self, spec: &BackendSpec) {
        let gpu_auto = !self.cuda.is_empty() || self.opencl.iter().any(|o| o.3.is_gpu);
        let one = matches!(spec, BackendSpec::Cuda(_) | BackendSpec::OpenCl(_)) || (*spec == BackendSpec::Auto && gpu_auto);
        if let Some(d) = one.then(|| self.select(spec, false).ok()).flatten().and_then(|mut v| v.pop()) {
            if !d.is_cpu() {
                self.ahead.lock().unwrap_or_else(|e| e.into_inner()).push(d);
            }
        }
    }

    /// The device opened ahead for `spec` (`cuda:0`, `opencl:1:0`), taken.
    fn take_ahead(&self, spec: &str) -> Option<Device> {
        let mut a = self.ahead.lock().unwrap_or_else(|e| e.into_inner());
        let i = a.iter().position(|d| d.info().spec == spec)?;
        Some(a.swap_remove(i))
    }

    pub fn infos(&self) -> Vec<DeviceInfo> {
        let mut v = vec![self.cpu.clone()];
        v.extend(self.opencl.iter().map(|o| o.3.clone()));
        v.extend(self.cuda.iter().cloned());
        v
    }

    /// What `neuroport devices --backend SPEC` lists: the devices SPEC runs on (opened, so one
    /// that cannot be opened is the error a command would meet), or every one for `all`.
    pub fn infos_for(&self, spec: &BackendSpec) -> Result<Vec<DeviceInfo>> {
        if *spec == BackendSpec::All {
            return Ok(self.infos());
        }
        let specs: Vec<String> = self.select(spec, true)?.iter().map(|d| d.info().spec.clone()).collect();
        Ok(self.infos().into_iter().filter(|i| specs.contains(&i.spec)).collect())
    }

    /// Opens the devices a spec names. `all`, `gpus` and lists are refused unless `allow_all`
    /// (commands that run each device in turn); commands that split one run's work across
    /// devices use [`Inventory::select_split`].
    pub fn select(&self, spec: &BackendSpec, allow_all: bool) -> Result<Vec<Device>> {
        match spec {
            BackendSpec::Gpus | BackendSpec::List(_) => {
                if !allow_all {
                    bail!("this command runs on one device: give --backend cpu, opencl[:P:D], cuda[:N] or auto");
                }
                self.select_split(spec)
            }
            BackendSpec::Cpu => Ok(vec![self.open_cpu()?]),
            BackendSpec::OpenCl(None) => {
                let pick = self.opencl.iter().find(|o| o.3.is_gpu).or_else(|| self.opencl.first());
                match pick {
                    Some(o) => Ok(vec![self.open_opencl(o)?]),
                    None => bail!("no OpenCL device found{}", self.why("OpenCL")),
                }
            }
            BackendSpec::OpenCl(Some((p, d))) => {
                let o = self.opencl.iter().find(|o| o.0 == *p && o.1 == *d).ok_or_else(|| {
                    anyhow!("no OpenCL device opencl:{p}:{d}; `neuroport devices` lists those present{}", self.why("OpenCL"))
                })?;
                Ok(vec![self.open_opencl(o)?])
            }
            BackendSpec::Cuda(n) => {
                let n = n.unwrap_or(0);
                if n >= self.cuda.len() {
                    bail!("no CUDA device cuda:{n}; `neuroport devices` lists those present{}", self.why("CUDA"));
                }
                Ok(vec![self.open_cuda(n)?])
            }
            BackendSpec::Auto => {
                if !self.cuda.is_empty() {
                    return self.select(&BackendSpec::Cuda(Some(0)), false);
                }
                if let Some(o) = self.opencl.iter().find(|o| o.3.is_gpu) {
                    return Ok(vec![self.open_opencl(o)?]);
                }
                Ok(vec![self.open_cpu()?])
            }
            BackendSpec::All => {
                if !allow_all {
                    bail!("this command runs on one device: give --backend cpu, opencl[:P:D], cuda[:N] or auto");
                }
                let mut v = vec![self.open_cpu()?];
                for o in &self.opencl {
                    v.push(self.open_opencl(o)?);
                }
                for n in 0..self.cuda.len() {
                    v.push(self.open_cuda(n)?);
                }
                Ok(v)
            }
        }
    }

    /// The one device a single-device command runs on.
    pub fn select_one(&self, spec: &BackendSpec) -> Result<Device> {
        Ok(self.select(spec, false)?.remove(0))
    }

    pub fn open_cpu(&self) -> Result<Device> {
        Ok(Device::Cpu(Arc::new(cpu::Cpu::new(self.threads)?)))
    }

    fn open_cuda(&self, n: usize) -> Result<Device> {
        if let Some(d) = self.take_ahead(&format!("cuda:{n}")) {
            return Ok(d);
        }
        Ok(Device::Cuda(Arc::new(cuda::CudaDevice::open(n)?)))
    }

    fn open_opencl(&self, o: &(usize, usize, opencl3::types::cl_device_id, DeviceInfo)) -> Result<Device> {
        if let Some(d) = self.take_ahead(&o.3.spec) {
            return Ok(d);
        }
        Ok(Device::OpenCl(Arc::new(opencl::ClDevice::open(o.2, o.3.clone())?)))
    }

    fn why(&self, backend: &str) -> String {
        self.notes.iter().find(|n| n.starts_with(backend)).map(|n| format!(" ({n})")).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn specs_parse() {
        assert_eq!("cpu".parse::<BackendSpec>().unwrap(), BackendSpec::Cpu);
        assert_eq!("opencl:1:0".parse::<BackendSpec>().unwrap(), BackendSpec::OpenCl(Some((1, 0))));
        assert_eq!("CUDA:2".parse::<BackendSpec>().unwrap(), BackendSpec::Cuda(Some(2)));
        assert!("gpu".parse::<BackendSpec>().is_err());
        assert!("opencl:x:0".parse::<BackendSpec>().is_err());
    }
    #[test]
    fn lists_parse() {
        use BackendSpec::*;
        assert_eq!("cuda:0,cuda:1".parse::<BackendSpec>().unwrap(), List(vec![Cuda(Some(0)), Cuda(Some(1))]));
        assert_eq!(" opencl:1:0, CUDA:0 ".parse::<BackendSpec>().unwrap(), List(vec![OpenCl(Some((1, 0))), Cuda(Some(0))]));
        assert_eq!("gpus".parse::<BackendSpec>().unwrap(), Gpus);
        assert_eq!("gpus,cpu".parse::<BackendSpec>().unwrap(), List(vec![Gpus, Cpu]));
        assert_eq!("cpu,cpu".parse::<BackendSpec>().unwrap(), List(vec![Cpu, Cpu]));
        for bad in ["cpu,", ",cpu", "cpu,,cuda", "cpu,auto", "all,cpu", "cpu,gpu", "cuda:x,cpu"] {
            let e = bad.parse::<BackendSpec>().unwrap_err().to_string();
            assert!(!e.contains('\n') && e.contains("backend"), "{bad}: {e}");
        }
    }
    #[test]
    fn only_specs_that_cannot_reach_a_second_cuda_device_hide_the_others() {
        for (s, first_only) in [("auto", true), ("cuda", true), ("cuda:0", true), ("cuda:1", false), ("cpu", false), ("opencl", false), ("opencl:1:0", false), ("gpus", false), ("all", false), ("cuda:0,cuda:1", false), ("cuda:0,cpu", false)] {
            assert_eq!(s.parse::<BackendSpec>().unwrap().first_cuda_device_only(), first_only, "{s}");
        }
    }
}
