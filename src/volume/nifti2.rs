//! NIfTI-2 headers (540 bytes: 64-bit sizes and offsets, float64 geometry), as nibabel,
//! dcm2niix and Connectome Workbench write them, read into the NIfTI-1 header that the rest of
//! neuroport carries: its grids fit NIfTI-1's 16-bit sizes, and outputs are NIfTI-1 whatever
//! the input was (as FSL's are). The geometry is rounded to float32 on the way, ~1e-7 of each
//! coefficient.

use anyhow::{bail, Result};

/// Bytes in a NIfTI-2 header.
pub(super) const SIZE: usize = 540;

/// Whether a header's first bytes say NIfTI-2 (sizeof_hdr 540, in either byte order).
pub(super) fn is_nifti2(head: &[u8]) -> bool {
    let Some(b) = head.get(..4) else { return false };
    let b: [u8; 4] = [b[0], b[1], b[2], b[3]];
    i32::from_le_bytes(b) == SIZE as i32 || i32::from_be_bytes(b) == SIZE as i32
}

/// A NIfTI-2 header as a NIfTI-1 one (magic n+1, or ni1 for a pair), with its vox_offset, or
/// why it cannot be read (a dimension past NIfTI-1's 32767 among them).
pub(super) fn to_nifti1(b: &[u8; SIZE]) -> Result<(nifti::NiftiHeader, u64)> {
    let big = i32::from_le_bytes([b[0], b[1], b[2], b[3]]) != SIZE as i32;
    let r = Fields { b, big };
    let pair = match &b[4..8] {
        b"n+2\0" => false,
        b"ni2\0" => true,
        _ => bail!("not a NIfTI-2 file (sizeof_hdr is 540, but the header has no NIfTI-2 magic)"),
    };
    let ndim = r.i64(16);
    if !(1..=7).contains(&ndim) {
        bail!("invalid dimension count {ndim} in the header");
    }
    let mut dim = [1u16; 8];
    dim[0] = ndim as u16;
    for i in 1..=ndim as usize {
        let d = r.i64(16 + 8 * i);
        if d > i16::MAX as i64 {
            bail!("dimension {i} has size {d}, more than neuroport reads (32767)");
        }
        // 0 or negative: check_header names it.
        dim[i] = d.clamp(0, i16::MAX as i64) as u16;
    }
    let vox_offset = r.i64(168);
    if vox_offset < 0 {
        bail!("invalid vox_offset {vox_offset}");
    }
    let f = |at: usize| r.f64(at) as f32;
    let small = |v: i64| v.clamp(i16::MIN as i64, i16::MAX as i64) as i16;
    let h = nifti::NiftiHeader {
        sizeof_hdr: 348,
        dim_info: b[524],
        dim,
        intent_p1: f(80),
        intent_p2: f(88),
        intent_p3: f(96),
        intent_code: small(r.i32(504) as i64),
        datatype: r.i16(12),
        bitpix: r.i16(14),
        slice_start: small(r.i64(224)),
        pixdim: std::array::from_fn(|i| f(104 + 8 * i)),
        vox_offset: vox_offset as f32,
        scl_slope: f(176),
        scl_inter: f(184),
        slice_end: small(r.i64(232)),
        slice_code: r.i32(496).clamp(0, 255) as u8,
        xyzt_units: r.i32(500).clamp(0, 255) as u8,
        cal_max: f(192),
        cal_min: f(200),
        slice_duration: f(208),
        toffset: f(216),
        descrip: b[240..320].to_vec(),
        aux_file: b[320..344].try_into().expect("24 bytes"),
        qform_code: small(r.i32(344) as i64),
        sform_code: small(r.i32(348) as i64),
        quatern_b: f(352),
        quatern_c: f(360),
        quatern_d: f(368),
        quatern_x: f(376),
        quatern_y: f(384),
        quatern_z: f(392),
        srow_x: std::array::from_fn(|i| f(400 + 8 * i)),
        srow_y: std::array::from_fn(|i| f(432 + 8 * i)),
        srow_z: std::array::from_fn(|i| f(464 + 8 * i)),
        intent_name: b[508..524].try_into().expect("16 bytes"),
        magic: if pair { *b"ni1\0" } else { *b"n+1\0" },
        endianness: if big { nifti::Endianness::Big } else { nifti::Endianness::Little },
        ..Default::default()
    };
    Ok((h, vox_offset as u64))
}

/// The header's numbers at their byte offsets, in its byte order.
struct Fields<'a> {
    b: &'a [u8; SIZE],
    big: bool,
}

impl Fields<'_> {
    fn bytes<const N: usize>(&self, at: usize) -> [u8; N] {
        let mut a: [u8; N] = self.b[at..at + N].try_into().expect("N bytes");
        if self.big {
            a.reverse();
        }
        a
    }
    fn i16(&self, at: usize) -> i16 {
        i16::from_le_bytes(self.bytes(at))
    }
    fn i32(&self, at: usize) -> i32 {
        i32::from_le_bytes(self.bytes(at))
    }
    fn i64(&self, at: usize) -> i64 {
        i64::from_le_bytes(self.bytes(at))
    }
    fn f64(&self, at: usize) -> f64 {
        f64::from_le_bytes(self.bytes(at))
    }
}
