//! Which GPU a device is, whichever API shows it: `gpus` takes each GPU once, and a list naming
//! one GPU twice is refused (`list.rs`).
//!
//! The UUID is the first witness (CUDA's `cuDeviceGetUuid`, OpenCL's `cl_khr_device_uuid`), the
//! full PCI address (domain, bus, device) the second (CUDA's attributes; OpenCL's
//! `cl_khr_pci_bus_info`, else NVIDIA's own attribute query). Round 3 compared (bus, slot >> 3)
//! alone, and on a 4-GPU host NVIDIA's OpenCL reported a value that no CUDA device had and that
//! two of its own GPUs shared, so `gpus` refused itself. Hence also [`drop_ambiguous`]: a value
//! that one API reports for two of its own devices witnesses nothing.

use std::fmt;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GpuId {
    pub uuid: Option<[u8; 16]>,
    pub pci: Option<Pci>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pci {
    pub domain: u32,
    pub bus: u32,
    pub device: u32,
}

impl fmt::Display for Pci {
    /// As `lspci -D` and nvidia-smi write it (function left out: a GPU is function 0).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04x}:{:02x}:{:02x}", self.domain, self.bus, self.device)
    }
}

impl GpuId {
    /// The UUID as 32 hex digits (nvidia-smi's, without its "GPU-" and dashes).
    pub fn uuid_hex(&self) -> Option<String> {
        self.uuid.map(|b| b.iter().map(|x| format!("{x:02x}")).collect())
    }

    /// Whether the two are one GPU, where both carry a witness of the same kind; None where
    /// they share none (the caller falls back to name and memory size).
    pub fn same(&self, other: &GpuId) -> Option<bool> {
        if let (Some(a), Some(b)) = (self.uuid, other.uuid) {
            return Some(a == b);
        }
        if let (Some(a), Some(b)) = (self.pci, other.pci) {
            return Some(a == b);
        }
        None
    }
}

/// Forgets each witness that several of one API's devices share (an all-zero UUID counts as
/// none): a driver's placeholder must not make two GPUs one.
pub fn drop_ambiguous(ids: &mut [&mut GpuId]) {
    let uuids: Vec<Option<[u8; 16]>> = ids.iter().map(|i| i.uuid.filter(|u| u.iter().any(|&b| b != 0))).collect();
    let pcis: Vec<Option<Pci>> = ids.iter().map(|i| i.pci).collect();
    for (k, id) in ids.iter_mut().enumerate() {
        let twice_u = uuids[k].is_some() && uuids.iter().filter(|u| **u == uuids[k]).count() > 1;
        id.uuid = if twice_u { None } else { uuids[k] };
        let twice_p = pcis[k].is_some() && pcis.iter().filter(|p| **p == pcis[k]).count() > 1;
        if twice_p {
            id.pci = None;
        }
    }
}

/// `cl_khr_pci_bus_info`'s value: four cl_uints (domain, bus, device, function).
pub fn pci_from_khr(bytes: &[u8]) -> Option<Pci> {
    if bytes.len() != 16 {
        return None;
    }
    let u = |k: usize| u32::from_ne_bytes(bytes[4 * k..4 * k + 4].try_into().unwrap());
    Some(Pci { domain: u(0), bus: u(1), device: u(2) })
}

/// NVIDIA's `cl_nv_device_attribute_query`: the slot id is (device << 3) | function.
pub fn pci_from_nv(domain: u32, bus: u32, slot: u32) -> Pci {
    Pci { domain, bus, device: slot >> 3 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(u: Option<u8>, p: Option<(u32, u32, u32)>) -> GpuId {
        GpuId { uuid: u.map(|b| [b; 16]), pci: p.map(|(domain, bus, device)| Pci { domain, bus, device }) }
    }

    #[test]
    fn the_uuid_decides_before_the_address() {
        assert_eq!(id(Some(1), Some((0, 1, 0))).same(&id(Some(1), Some((0, 2, 0)))), Some(true));
        assert_eq!(id(Some(1), Some((0, 1, 0))).same(&id(Some(2), Some((0, 1, 0)))), Some(false));
        assert_eq!(id(None, Some((0, 1, 0))).same(&id(Some(2), Some((0, 1, 0)))), Some(true));
        assert_eq!(id(None, Some((1, 1, 0))).same(&id(None, Some((0, 1, 0)))), Some(false), "domains differ");
        assert_eq!(id(Some(1), None).same(&id(None, Some((0, 1, 0)))), None);
        assert_eq!(id(Some(0xab), None).uuid_hex(), Some("ab".repeat(16)));
        assert_eq!(id(None, None).uuid_hex(), None);
    }

    #[test]
    fn a_value_two_devices_share_is_forgotten() {
        let (mut a, mut b, mut c) = (id(Some(1), Some((0, 0, 0))), id(Some(2), Some((0, 0, 0))), id(Some(0), Some((0, 3, 0))));
        drop_ambiguous(&mut [&mut a, &mut b, &mut c]);
        assert_eq!((a, b), (id(Some(1), None), id(Some(2), None)));
        assert_eq!(c, id(None, Some((0, 3, 0))), "an all-zero UUID is no UUID");
    }

    #[test]
    fn khr_bus_info_reads_four_words() {
        let b: Vec<u8> = [2u32, 0x1b, 4, 0].iter().flat_map(|x| x.to_ne_bytes()).collect();
        assert_eq!(pci_from_khr(&b).unwrap().to_string(), "0002:1b:04");
        assert_eq!(pci_from_khr(&b[..12]), None);
        assert_eq!(pci_from_nv(0, 0x3b, 5 << 3 | 1), Pci { domain: 0, bus: 0x3b, device: 5 });
    }
}
