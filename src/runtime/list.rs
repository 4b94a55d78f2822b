//! The devices one run splits its work across (`split.rs`): a comma-separated list such as
//! `cuda:0,cuda:1` or `opencl:1:0,cpu`, `gpus` (every GPU present, each once), and mixes.
//!
//! Rules: a GPU is used at most once. `gpus` takes every CUDA device, then every OpenCL GPU that
//! is not one of them: the same UUID or PCI address where both APIs report one (`identity.rs`),
//! else the same name and memory size, matched one to one. A list naming one GPU twice
//! (`cuda:0,cuda:0`, or `opencl:P:D,cuda:N` with the same UUID or address) is refused. A CPU-type device
//! may be listed more than once: `cpu,cpu` gives two native worker pools, each with its share of
//! the threads (`--threads` or every core, divided evenly, the first pools taking the remainder);
//! an OpenCL CPU device (PoCL) listed twice gets two contexts that both use every core (the tests
//! use this to run two OpenCL workers on a machine without a GPU).

use super::{cpu, identity, BackendSpec, Device, DeviceInfo, Inventory};
use anyhow::{anyhow, bail, Result};
use std::sync::Arc;

/// One entry of a resolved list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pick {
    Cpu,
    /// Index into `Inventory::opencl`.
    Cl(usize),
    Cuda(usize),
}

impl Inventory {
    /// Forgets the identities an API gives two of its devices (`identity::drop_ambiguous`): CUDA's
    /// as a whole, OpenCL's per platform (two platforms may show one GPU).
    pub(super) fn settle_ids(&mut self) {
        identity::drop_ambiguous(&mut self.cuda.iter_mut().map(|c| &mut c.id).collect::<Vec<_>>());
        let mut platforms: Vec<usize> = self.opencl.iter().map(|o| o.0).collect();
        platforms.dedup();
        for p in platforms {
            identity::drop_ambiguous(&mut self.opencl.iter_mut().filter(|o| o.0 == p).map(|o| &mut o.3.id).collect::<Vec<_>>());
        }
    }

    /// The devices a command that splits its work runs on: one for a single-device spec (exactly
    /// as [`Inventory::select_one`]), every listed one for a list or `gpus`.
    pub fn select_split(&self, spec: &BackendSpec) -> Result<Vec<Device>> {
        check_split_spec(spec)?;
        let items = match spec {
            BackendSpec::List(v) => v.clone(),
            BackendSpec::Gpus => vec![BackendSpec::Gpus],
            BackendSpec::All => return Err(split_spec_error()),
            single => return Ok(vec![self.select_one(single)?]),
        };
        let mut picks = Vec::new();
        for it in &items {
            match it {
                BackendSpec::Gpus => {
                    let g = self.gpu_picks();
                    if g.is_empty() {
                        bail!("--backend gpus: no GPU found; `neuroport devices` lists those present{}", self.why("CUDA"));
                    }
                    picks.extend(g);
                }
                other => picks.push(self.pick(other)?),
            }
        }
        self.check_distinct(&picks)?;
        self.open_picks(&picks)
    }

    fn pick(&self, spec: &BackendSpec) -> Result<Pick> {
        Ok(match spec {
            BackendSpec::Cpu => Pick::Cpu,
            BackendSpec::OpenCl(None) => {
                let i = self.opencl.iter().position(|o| o.3.is_gpu).or(if self.opencl.is_empty() { None } else { Some(0) });
                Pick::Cl(i.ok_or_else(|| anyhow!("no OpenCL device found{}", self.why("OpenCL")))?)
            }
            BackendSpec::OpenCl(Some((p, d))) => Pick::Cl(self.opencl.iter().position(|o| o.0 == *p && o.1 == *d).ok_or_else(|| {
                anyhow!("no OpenCL device opencl:{p}:{d}; `neuroport devices` lists those present{}", self.why("OpenCL"))
            })?),
            BackendSpec::Cuda(n) => {
                let n = n.unwrap_or(0);
                if n >= self.cuda.len() {
                    bail!("no CUDA device cuda:{n}; `neuroport devices` lists those present{}", self.why("CUDA"));
                }
                Pick::Cuda(n)
            }
            other => bail!("'{other:?}' cannot be part of a device list"),
        })
    }

    fn info_of(&self, p: Pick) -> &DeviceInfo {
        match p {
            Pick::Cpu => &self.cpu,
            Pick::Cl(i) => &self.opencl[i].3,
            Pick::Cuda(n) => &self.cuda[n],
        }
    }

    /// Every GPU once: the CUDA devices, then the OpenCL GPUs that are none of them.
    fn gpu_picks(&self) -> Vec<Pick> {
        let mut v: Vec<Pick> = (0..self.cuda.len()).map(Pick::Cuda).collect();
        let mut taken = vec![false; self.cuda.len()];
        for (i, o) in self.opencl.iter().enumerate().filter(|(_, o)| o.3.is_gpu) {
            match twin(&o.3, &self.cuda, &taken) {
                Some(n) => taken[n] = true,
                None => v.push(Pick::Cl(i)),
            }
        }
        v
    }

    /// Refuses a GPU listed twice (by spec, or through both APIs with one UUID or address).
    fn check_distinct(&self, picks: &[Pick]) -> Result<()> {
        for (a, &p) in picks.iter().enumerate() {
            let ip = self.info_of(p);
            if !ip.is_gpu {
                continue;
            }
            for &q in &picks[..a] {
                let iq = self.info_of(q);
                let same_gpu = iq.is_gpu && ip.id.same(&iq.id) == Some(true);
                if p == q || same_gpu {
                    let how = if p == q { String::new() } else { format!(" (as {})", iq.spec) };
                    bail!("--backend lists the GPU {} ({}) twice{how}: each GPU may run one share of the work", ip.spec, ip.name);
                }
            }
        }
        Ok(())
    }

    fn open_picks(&self, picks: &[Pick]) -> Result<Vec<Device>> {
        let pools = picks.iter().filter(|p| **p == Pick::Cpu).count();
        let total = self.threads.unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)).max(1);
        let mut pool = 0;
        picks
            .iter()
            .map(|&p| match p {
                Pick::Cpu if pools == 1 => self.open_cpu(),
                Pick::Cpu => {
                    let t = (total / pools + usize::from(pool < total % pools)).max(1);
                    pool += 1;
                    Ok(Device::Cpu(Arc::new(cpu::Cpu::new(Some(t))?)))
                }
                Pick::Cl(i) => self.open_opencl(&self.opencl[i]),
                Pick::Cuda(n) => self.open_cuda(n),
            })
            .collect()
    }
}

/// The CUDA device (not yet `taken`) that is the OpenCL GPU `cl` seen through the other API: by
/// UUID or PCI address where the two share a witness, else the same name and memory size.
fn twin(cl: &DeviceInfo, cuda: &[DeviceInfo], taken: &[bool]) -> Option<usize> {
    let mut free = (0..cuda.len()).filter(|&n| !taken[n]);
    if cuda.iter().any(|c| cl.id.same(&c.id).is_some()) {
        return free.find(|&n| cl.id.same(&cuda[n].id) == Some(true));
    }
    free.find(|&n| cuda[n].name == cl.name && cuda[n].global_mem_bytes == cl.global_mem_bytes)
}

/// What a command that splits its work can say about `spec` before any device is probed (so a
/// misuse is reported before the command reads its inputs).
pub fn check_split_spec(spec: &BackendSpec) -> Result<()> {
    if *spec == BackendSpec::All {
        return Err(split_spec_error());
    }
    Ok(())
}

fn split_spec_error() -> anyhow::Error {
    anyhow!("--backend all is for check, bench and reproduce (each device in turn); to split this command's work across devices give a list (cuda:0,cuda:1 or gpus,cpu) or gpus")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A GPU with no UUID and, where given, the PCI address (domain 0, bus, device).
    fn gpu(backend: &str, spec: &str, name: &str, mem: u64, pci: Option<(u32, u32)>) -> DeviceInfo {
        DeviceInfo {
            backend: backend.into(),
            spec: spec.into(),
            name: name.into(),
            vendor: "NVIDIA Corporation".into(),
            platform: String::new(),
            compute_units: 1,
            clock_mhz: 1,
            global_mem_bytes: mem,
            image_support: true,
            is_gpu: true,
            id: identity::GpuId { uuid: None, pci: pci.map(|(bus, device)| identity::Pci { domain: 0, bus, device }) },
        }
    }

    fn inventory(opencl: Vec<DeviceInfo>, cuda: Vec<DeviceInfo>) -> Inventory {
        let opencl = opencl.into_iter().enumerate().map(|(d, i)| (0, d, std::ptr::null_mut(), i)).collect();
        let mut inv = Inventory { cpu: cpu::host_info(), opencl, cuda, notes: Vec::new(), threads: Some(4), ahead: Default::default() };
        inv.settle_ids();
        inv
    }

    fn with_uuid(mut g: DeviceInfo, u: u8) -> DeviceInfo {
        g.id.uuid = Some([u; 16]);
        g
    }

    const H: &str = "NVIDIA H200";

    #[test]
    fn gpus_prefers_cuda_and_never_repeats_a_gpu() {
        // Two H200s through both APIs with PCI addresses, plus an AMD card through OpenCL alone.
        let mut amd = gpu("opencl", "opencl:0:2", "gfx1100", 24 << 30, None);
        amd.vendor = "AMD".into();
        let inv = inventory(
            vec![gpu("opencl", "opencl:0:0", H, 141 << 30, Some((0x3b, 0))), gpu("opencl", "opencl:0:1", H, 141 << 30, Some((0x1b, 0))), amd],
            vec![gpu("cuda", "cuda:0", H, 141 << 30, Some((0x1b, 0))), gpu("cuda", "cuda:1", H, 141 << 30, Some((0x3b, 0)))],
        );
        assert_eq!(inv.gpu_picks(), vec![Pick::Cuda(0), Pick::Cuda(1), Pick::Cl(2)]);
        // CUDA_VISIBLE_DEVICES hid one of them from CUDA: OpenCL still has it, matched by address.
        let inv = inventory(
            vec![gpu("opencl", "opencl:0:0", H, 141 << 30, Some((0x3b, 0))), gpu("opencl", "opencl:0:1", H, 141 << 30, Some((0x1b, 0)))],
            vec![gpu("cuda", "cuda:0", H, 141 << 30, Some((0x1b, 0)))],
        );
        assert_eq!(inv.gpu_picks(), vec![Pick::Cuda(0), Pick::Cl(0)]);
        // No addresses: name and memory, one to one.
        let inv = inventory(
            vec![gpu("opencl", "opencl:0:0", H, 141 << 30, None), gpu("opencl", "opencl:0:1", H, 141 << 30, None), gpu("opencl", "opencl:0:2", "other", 8 << 30, None)],
            vec![gpu("cuda", "cuda:0", H, 141 << 30, None), gpu("cuda", "cuda:1", H, 141 << 30, None)],
        );
        assert_eq!(inv.gpu_picks(), vec![Pick::Cuda(0), Pick::Cuda(1), Pick::Cl(2)]);
    }

    #[test]
    fn gpus_on_a_host_whose_opencl_reports_one_address_for_all() {
        // Four H100s: CUDA's addresses differ by domain; NVIDIA's OpenCL gave every GPU one value
        // (the 4-GPU host of round 27). The UUIDs match them; without UUIDs, name and memory do.
        let n = 4;
        let cuda = |u: bool| (0..n).map(move |k| {
            let mut g = gpu("cuda", &format!("cuda:{k}"), H, 80 << 30, Some((0, 0)));
            g.id.pci.as_mut().unwrap().domain = k as u32 + 1;
            if u { with_uuid(g, k as u8 + 1) } else { g }
        });
        let cl = |u: bool| (0..n).map(move |k| {
            let g = gpu("opencl", &format!("opencl:0:{k}"), H, 80 << 30, Some((0, 0)));
            if u { with_uuid(g, n as u8 - k as u8) } else { g }
        });
        for u in [true, false] {
            let inv = inventory(cl(u).collect(), cuda(u).collect());
            assert!(inv.opencl.iter().all(|o| o.3.id.pci.is_none()), "the shared address is forgotten");
            assert_eq!(inv.gpu_picks(), (0..n).map(Pick::Cuda).collect::<Vec<_>>(), "uuids {u}");
            assert!(inv.check_distinct(&inv.gpu_picks()).is_ok());
            // One GPU named through both APIs is refused where a witness says so.
            let r = inv.check_distinct(&[Pick::Cuda(0), Pick::Cl(n - 1)]);
            assert_eq!(r.is_err(), u, "{r:?}");
        }
    }

    #[test]
    fn a_gpu_listed_twice_is_refused_cpus_are_not() {
        let inv = inventory(vec![gpu("opencl", "opencl:0:0", H, 1 << 30, Some((5, 0)))], vec![gpu("cuda", "cuda:0", H, 1 << 30, Some((5, 0)))]);
        for (picks, ok) in [
            (vec![Pick::Cuda(0), Pick::Cuda(0)], false),
            (vec![Pick::Cl(0), Pick::Cuda(0)], false),
            (vec![Pick::Cpu, Pick::Cpu, Pick::Cuda(0)], true),
        ] {
            let r = inv.check_distinct(&picks);
            assert_eq!(r.is_ok(), ok, "{picks:?}: {r:?}");
            if let Err(e) = r {
                assert!(e.to_string().contains("twice") && !e.to_string().contains('\n'));
            }
        }
    }

    #[test]
    fn cpu_pools_share_the_threads() {
        let inv = inventory(Vec::new(), Vec::new());
        let d = inv.open_picks(&[Pick::Cpu, Pick::Cpu, Pick::Cpu]).unwrap();
        let t: Vec<usize> = d.iter().map(|d| if let Device::Cpu(c) = d { c.threads() } else { 0 }).collect();
        assert_eq!(t, vec![2, 1, 1]);
        assert!(inv.select_split(&"gpus".parse().unwrap()).unwrap_err().to_string().contains("no GPU"));
        assert!(inv.select_split(&"all".parse().unwrap()).is_err());
        assert!(inv.select(&"cpu,cpu".parse().unwrap(), false).is_err());
    }
}
