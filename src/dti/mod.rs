//! Diffusion-tensor fitting and the fields the trackers need (paper 001 Sec. 4.1/4.3, paper 004
//! eq. 3). The host logic lives here once; `cpu.rs`, `opencl.rs` and `cuda.rs` implement the
//! per-voxel device operations of [`DtiKernels`].

pub mod bench;
pub mod check;
pub mod cpu;
pub mod gpu;
pub mod design;
pub mod fsl_maps;
pub(crate) mod fastmath;
pub mod sym3;
pub mod sym3_lanes;

use crate::io::progress::Progress;
use crate::runtime::columns::{Columns, ColumnsMut};
use crate::runtime::split::{Shares, Split};
use crate::runtime::{Device, Timings};
use crate::volume::{GradientTable, Volume};
use anyhow::{bail, Result};
pub use design::Design;

/// Eigenvalue floor (mm^2/s) of the repair rule: a fitted tensor whose smallest eigenvalue is
/// below it has those eigenvalues raised to it (eigenvectors kept) and is counted as repaired.
pub const LAMBDA_FLOOR: f32 = 1.0e-6;
/// Isotropic diffusivity (mm^2/s, free water at body temperature) given to voxels outside the
/// mask when the metric fields are prepared, so the trackers' interpolation stays finite there.
pub const D_ISO: f32 = 3.0e-3;

/// Applies the fit's repair rule to a tensor volume read from a file (6 x nvox, component-major):
/// every tensor not positive definite beyond [`LAMBDA_FLOOR`] has its low eigenvalues raised to
/// it, so the trackers never invert it as is. All-zero voxels (no tensor) are left alone.
/// Returns how many were repaired.
pub fn repair_tensors(tensor: &mut [f32]) -> usize {
    let n = tensor.len() / 6;
    let mut count = 0;
    for v in 0..n {
        let t: [f64; 6] = std::array::from_fn(|c| tensor[c * n + v] as f64);
        if t.iter().all(|&x| x == 0.0) {
            continue;
        }
        if let Some(r) = cpu::repair(&t, LAMBDA_FLOOR as f64) {
            for c in 0..6 {
                tensor[c * n + v] = r[c] as f32;
            }
            count += 1;
        }
    }
    count
}

/// The summary's words for [`repair_tensors`]' count (empty when none).
pub fn repaired_note(count: usize) -> String {
    if count == 0 { String::new() } else { format!("; {count} tensors not positive definite were repaired (eigenvalues raised to {LAMBDA_FLOOR})") }
}

#[cfg(test)]
mod repair_tests {
    #[test]
    fn read_tensors_are_repaired_like_fitted_ones() {
        // voxel 0: eigenvalues 1e-3, 5e-4, -2e-4 (not positive definite); voxel 1: fine; voxel 2: none
        let bad = super::sym3::compose([1e-3, 5e-4, -2e-4], &[0.6, 0.8, 0.0, -0.8, 0.6, 0.0, 0.0, 0.0, 1.0]);
        let good = [1e-3, 0.0, 0.0, 5e-4, 0.0, 4e-4];
        let mut t = vec![0.0f32; 18];
        for c in 0..6 {
            t[c * 3] = bad[c] as f32;
            t[c * 3 + 1] = good[c] as f32;
        }
        let before = t.clone();
        assert_eq!(super::repair_tensors(&mut t), 1);
        let fixed: [f64; 6] = std::array::from_fn(|c| t[c * 3] as f64);
        let (lam, _) = super::sym3::eigen(&fixed);
        // f32 storage: eigenvalues within a few ulp of 1e-3 of the floor
        assert!(lam[2] >= super::LAMBDA_FLOOR as f64 - 1e-9 && (lam[0] - 1e-3).abs() < 1e-8, "{lam:?}");
        for c in 0..6 {
            assert_eq!(t[c * 3 + 1], before[c * 3 + 1]);
            assert_eq!(t[c * 3 + 2], 0.0);
        }
    }
}

/// Voxel flags written by the fit.
pub const BACKGROUND: i32 = 0;
pub const FITTED: i32 = 1;
pub const REPAIRED: i32 = 2;

/// Components of the scalar maps: FA, MD, V1 (x, y, z), L1, L2, L3.
pub const NSCALARS: usize = 8;
/// Components of the geodesic fields: D (the g^ij of 001 eq. 3), then dG/dx, dG/dy, dG/dz.
pub const NFIELDS: usize = 24;

/// Fitted tensors, component-major (`tensor[c * nvox + v]`), in mm^2/s.
#[derive(Clone, Debug)]
pub struct TensorFit {
    pub tensor: Vec<f32>,
    pub s0: Vec<f32>,
    pub flags: Vec<i32>,
}

impl TensorFit {
    /// All zero (background) for `nvox` voxels.
    pub fn zeroed(nvox: usize) -> TensorFit {
        TensorFit { tensor: vec![0.0; 6 * nvox], s0: vec![0.0; nvox], flags: vec![BACKGROUND; nvox] }
    }

    pub fn count(&self, flag: i32) -> usize {
        self.flags.iter().filter(|&&f| f == flag).count()
    }
}

/// How the trackers see a tensor: in image voxel axes and voxel units.
#[derive(Clone, Copy, Debug)]
pub struct Frame {
    /// Negate x (the FSL bvec convention when the affine's determinant is positive).
    pub flip_x: bool,
    /// 1 / voxel size (mm) per axis.
    pub inv_voxel: [f32; 3],
}

impl Frame {
    pub fn of(geom: &crate::volume::Geometry) -> Frame {
        Frame { flip_x: geom.det() > 0.0, inv_voxel: geom.voxel_size.map(|v| 1.0 / v) }
    }
    pub fn identity() -> Frame {
        Frame { flip_x: false, inv_voxel: [1.0; 3] }
    }
}

/// Where a fit writes its voxels: their items of the whole tensor (6 components), S0 and flag
/// maps, and of the scalar maps ([`NSCALARS`]) where those are wanted. A split's device writes
/// its share where it lies (no share of results pasted back: ~50 MB in all on the issue-7
/// volume before round 29); a GPU makes the scalars from the tensors it has just fitted, which
/// stay on the device (they had gone down, then up again).
pub struct FitShare<'a> {
    pub tensor: ColumnsMut<'a, f32>,
    pub s0: ColumnsMut<'a, f32>,
    pub flags: ColumnsMut<'a, i32>,
    pub scalars: Option<ColumnsMut<'a, f32>>,
}

impl<'a> FitShare<'a> {
    /// All of `fit`'s voxels, and of the scalar maps `maps` where given.
    pub fn whole(fit: &'a mut TensorFit, maps: Option<&'a mut [f32]>) -> FitShare<'a> {
        FitShare { tensor: ColumnsMut::whole(&mut fit.tensor, 6), s0: ColumnsMut::whole(&mut fit.s0, 1), flags: ColumnsMut::whole(&mut fit.flags, 1), scalars: maps.map(|m| ColumnsMut::whole(m, NSCALARS)) }
    }

    /// Voxels in the share.
    pub fn len(&self) -> usize {
        self.tensor.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Voxels `range` of this share, borrowed.
    pub fn part(&mut self, range: std::ops::Range<usize>) -> FitShare<'_> {
        FitShare { tensor: self.tensor.part(range.clone()), s0: self.s0.part(range.clone()), flags: self.flags.part(range.clone()), scalars: self.scalars.as_mut().map(|s| s.part(range)) }
    }
}

/// Component-major fields (`m[c * nvox + v]`, [`NFIELDS`] components) voxel-major, a voxel's
/// values together, on every core: the layout the trackers hold.
pub fn voxel_major(m: &[f32]) -> Vec<[f32; NFIELDS]> {
    use rayon::prelude::*;
    let n = m.len() / NFIELDS;
    (0..n).into_par_iter().with_min_len(1 << 14).map(|v| std::array::from_fn(|c| m[c * n + v])).collect()
}

/// The device operations DTI needs. Inputs and outputs are flat component-major host arrays;
/// each call records where its time went in [`DtiKernels::take_timings`].
pub trait DtiKernels {
    /// Weighted linear least-squares fit per voxel of `mask`, written into `out` (and the scalar
    /// maps of the fitted tensors where `out` has them); `dwi` holds `design.ngrad` volumes of
    /// those voxels (a split's device's share read where it lies in the whole DWI). `bar` moves
    /// on by the mask's voxels of each piece as it is done (a block of voxels on the CPU, a chunk
    /// on a GPU).
    fn fit_into(&mut self, dwi: Columns<f32>, mask: &[u8], design: &Design, out: &mut FitShare, bar: &Progress) -> Result<()>;
    /// [`fit_into`](Self::fit_into) new arrays, without scalar maps.
    fn fit(&mut self, dwi: Columns<f32>, mask: &[u8], design: &Design) -> Result<TensorFit> {
        let mut fit = TensorFit::zeroed(mask.len());
        self.fit_into(dwi, mask, design, &mut FitShare::whole(&mut fit, None), &Progress::hidden())?;
        Ok(fit)
    }
    /// FA, MD, V1, L1-L3 per voxel ([`NSCALARS`] components).
    fn scalars(&mut self, tensor: &[f32]) -> Result<Vec<f32>>;
    /// D and the central-difference derivatives of G = D^-1 ([`NFIELDS`] components).
    fn metric(&mut self, tensor: &[f32], dims: [usize; 3], frame: Frame) -> Result<Vec<f32>>;
    /// [`metric`](Self::metric) voxel-major (a voxel's [`NFIELDS`] values together), as the
    /// trackers hold it: the CPU writes it so, with no component-major copy beside it.
    fn metric_voxels(&mut self, tensor: &[f32], dims: [usize; 3], frame: Frame) -> Result<Vec<[f32; NFIELDS]>> {
        Ok(voxel_major(&self.metric(tensor, dims, frame)?))
    }
    /// The sharpened metric of paper 004 eq. 3 (6 components).
    fn sharpen(&mut self, tensor: &[f32], alpha: f32) -> Result<Vec<f32>>;
    /// Time spent since the last call, split into kernel, transfer and host.
    fn take_timings(&mut self) -> Timings;
}

/// The DTI kernels on `device`.
pub fn kernels(device: &Device) -> Result<Box<dyn DtiKernels>> {
    Ok(match device {
        Device::Cpu(c) => Box::new(cpu::CpuDti::new(c.clone())),
        _ => Box::new(gpu::GpuDti::new(crate::runtime::gpu::Gpu::require(device)?)?),
    })
}

/// Everything `neuroport dti` writes.
pub struct DtiResult {
    pub fit: TensorFit,
    pub scalars: Vec<f32>,
    pub timings: Timings,
}

impl DtiResult {
    /// Zeroed maps for `nvox` voxels, the scalar maps only where `scalars`.
    fn zeroed(nvox: usize, scalars: bool) -> DtiResult {
        DtiResult { fit: TensorFit::zeroed(nvox), scalars: vec![0.0; if scalars { NSCALARS * nvox } else { 0 }], timings: Timings::default() }
    }

    /// One disjoint share of the maps per range of voxels (None if two overlap or one passes the
    /// end).
    fn shares(&mut self, ranges: &[std::ops::Range<usize>]) -> Option<Vec<FitShare<'_>>> {
        let TensorFit { tensor, s0, flags } = &mut self.fit;
        let maps: Vec<Option<ColumnsMut<f32>>> = if self.scalars.is_empty() { ranges.iter().map(|_| None).collect() } else { ColumnsMut::split(&mut self.scalars, NSCALARS, ranges)?.into_iter().map(Some).collect() };
        let (t, s, f) = (ColumnsMut::split(tensor, 6, ranges)?, ColumnsMut::split(s0, 1, ranges)?, ColumnsMut::split(flags, 1, ranges)?);
        Some(t.into_iter().zip(s).zip(f).zip(maps).map(|(((tensor, s0), flags), scalars)| FitShare { tensor, s0, flags, scalars }).collect())
    }
}

/// Fits the tensors of a 4-D DWI volume and derives the scalar maps.
pub fn run(k: &mut dyn DtiKernels, dwi: &Volume, grads: &GradientTable, mask: &[u8]) -> Result<DtiResult> {
    if dwi.nvol() != grads.len() {
        bail!("{} volumes but {} gradient entries", dwi.nvol(), grads.len());
    }
    let design = Design::new(grads)?;
    let nvox = mask.len();
    let mut r = DtiResult::zeroed(nvox, true);
    k.fit_into(Columns::whole(dwi.as_flat(), design.ngrad), mask, &design, &mut FitShare::whole(&mut r.fit, Some(&mut r.scalars)), &Progress::hidden())?;
    r.timings = k.take_timings();
    require_fitted(&r, mask.iter().filter(|&&m| m != 0).count())?;
    zero_v1_without_tensor(&mut r.scalars, &r.fit.tensor);
    Ok(r)
}

/// A fit that fitted no voxel of a non-empty mask (a DWI all zero or negative there) is the
/// data's problem, not a result: its maps of zeros would pass for one. A few such voxels among
/// fitted ones are counted as unfittable instead, as before.
pub(crate) fn require_fitted(r: &DtiResult, inside: usize) -> Result<()> {
    if inside > 0 && r.fit.count(FITTED) + r.fit.count(REPAIRED) == 0 {
        bail!("no voxel of the {inside} in the mask could be fitted (the signal is zero or negative in every one)");
    }
    Ok(())
}

/// Voxels of `mask` whose every measurement is zero (`dwi` x-fastest, volume slowest): no fit
/// can start there.
///
/// Every run of bedpost asks this of the whole DWI before it samples: the grid is taken in runs
/// of voxels on every core, each run read volume by volume (the frames are contiguous), and a
/// run with no mask voxel is skipped (one thread over the whole grid had taken ~55 ms of a
/// 96x112x72x134 DWI on 2 cores).
pub fn all_zero_voxels(dwi: &Volume, mask: &[u8]) -> Vec<usize> {
    use rayon::prelude::*;
    const RUN: usize = 1 << 14;
    let n = dwi.nvox();
    (0..n.div_ceil(RUN))
        .into_par_iter()
        .flat_map_iter(|r| {
            let run = r * RUN..((r + 1) * RUN).min(n);
            // Outside the mask counts as signal, so only the mask's silent voxels are left.
            let mut signal: Vec<bool> = mask[run.clone()].iter().map(|&m| m == 0).collect();
            if !signal.iter().all(|&s| s) {
                for t in 0..dwi.nvol() {
                    for (s, &x) in signal.iter_mut().zip(&dwi.frame(t)[run.clone()]) {
                        *s |= x != 0.0;
                    }
                }
            }
            run.zip(signal).filter(|&(_, s)| !s).map(|(v, _)| v).collect::<Vec<_>>()
        })
        .collect()
}

/// The counts of `dti`'s summary line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FitCounts {
    pub inside: usize,
    /// All-zero voxels of an unmasked run: the background around the head, skipped, not failed.
    pub background: usize,
    /// Fitted, repaired ones included.
    pub fitted: usize,
    pub repaired: usize,
    pub unfittable: usize,
}

/// Counts of a fit over `mask`. Without a mask (`masked` false) every voxel is fitted and the
/// all-zero background was reported as thousands of "unfittable" voxels; it is counted apart.
/// With a mask, an all-zero voxel the user called brain stays unfittable.
pub fn fit_counts(r: &DtiResult, dwi: &Volume, mask: &[u8], masked: bool) -> FitCounts {
    let inside = mask.iter().filter(|&&m| m != 0).count();
    let repaired = r.fit.count(REPAIRED);
    let fitted = r.fit.count(FITTED) + repaired;
    let background = if masked { 0 } else { all_zero_voxels(dwi, mask).into_iter().filter(|&v| r.fit.flags[v] == BACKGROUND).count() };
    FitCounts { inside, background, fitted, repaired, unfittable: inside.saturating_sub(fitted + background) }
}

/// Smallest chunk of voxels a split hands a device.
pub const SPLIT_MIN_VOXELS: usize = 65536;

/// [`run`] split across `split`'s devices in chunks of voxels (a fit is per voxel, so the chunking
/// changes no result), with a bar of the mask's voxels fitted where `progress` (an HCP-size
/// DWI's fit takes half a minute on CPUs).
pub fn run_split(split: &Split, dwi: &Volume, grads: &GradientTable, mask: &[u8], progress: bool) -> Result<(DtiResult, Shares)> {
    if dwi.nvol() != grads.len() {
        bail!("{} volumes but {} gradient entries", dwi.nvol(), grads.len());
    }
    let design = Design::new(grads)?;
    let inside = mask.iter().filter(|&&m| m != 0).count();
    let bar = Progress::new(inside as u64, progress, "dti {bar:40} {pos}/{len} voxels ({eta} left)", "dti", "voxels");
    let fitted = fit_split(split, Columns::whole(dwi.as_flat(), design.ngrad), mask, &design, true, &bar);
    bar.finish_and_clear();
    let (mut r, shares) = fitted?;
    require_fitted(&r, inside)?;
    zero_v1_without_tensor(&mut r.scalars, &r.fit.tensor);
    Ok((r, shares))
}

/// V1 is zero where the tensor is (outside the mask, unfittable voxels), as every other map is
/// there and as dtifit writes it: the eigen-decomposition of a zero tensor gives the identity's
/// first column, so V1 read (1, 0, 0) there while V2 and V3 read 0.
pub fn zero_v1_without_tensor(scalars: &mut [f32], tensor: &[f32]) {
    use rayon::prelude::*;
    let nvox = tensor.len() / 6;
    if scalars.len() != NSCALARS * nvox {
        return;
    }
    // Runs of voxels on every core: dti's every run passes over the whole grid here.
    const RUN: usize = 16 * 1024;
    let (x, rest) = scalars[2 * nvox..5 * nvox].split_at_mut(nvox);
    let (y, z) = rest.split_at_mut(nvox);
    x.par_chunks_mut(RUN).zip(y.par_chunks_mut(RUN)).zip(z.par_chunks_mut(RUN)).enumerate().for_each(|(k, ((x, y), z))| {
        for i in 0..x.len() {
            let v = k * RUN + i;
            if (0..6).all(|c| tensor[c * nvox + v] == 0.0) {
                (x[i], y[i], z[i]) = (0.0, 0.0, 0.0);
            }
        }
    });
}

/// The fit of `dwi`'s voxels (`design.ngrad` components, one item per voxel of `mask`) split across
/// `split`'s devices, and the scalar maps where `scalars` is set (else none). bedpost fits the
/// mask's measurements alone this way: half the bytes of the grid's DWI on its volumes, no maps.
/// `bar` is shared by the devices, each moving it as its pieces are done.
pub fn fit_split(split: &Split, dwi: Columns<f32>, mask: &[u8], design: &Design, scalars: bool, bar: &Progress) -> Result<(DtiResult, Shares)> {
    let nvox = mask.len();
    if dwi.len() != nvox || dwi.ncomp() != design.ngrad {
        bail!("DWI holds {} x {} values, expected {} voxels x {} volumes", dwi.ncomp(), dwi.len(), nvox, design.ngrad);
    }
    let plan = split.plan(nvox, SPLIT_MIN_VOXELS);
    // Each chunk writes its results where its voxels lie; a chunk's place is locked while a
    // device works on it (a failed device's chunk goes to another, which writes it again).
    let mut r = DtiResult::zeroed(nvox, scalars);
    let places: Vec<std::sync::Mutex<FitShare>> = r.shares(&plan).ok_or_else(|| anyhow::anyhow!("dti: the split's chunks overlap"))?.into_iter().map(std::sync::Mutex::new).collect();
    let shares = split.run(
        plan.len(),
        |d| crate::runtime::stages::stage("device init", || kernels(d)),
        |k, c| {
            let v = plan[c].clone();
            let mut place = places[c].lock().unwrap_or_else(|e| e.into_inner());
            k.fit_into(dwi.part(v.clone()), &mask[v], design, &mut place, bar)?;
            Ok(((), k.take_timings()))
        },
        |_, ()| {},
    )?;
    drop(places);
    r.timings = shares.timings();
    Ok((r, shares))
}

/// The FA-weighted colour map (|V1| x FA per axis, 3 volumes) from the scalar maps.
pub fn rgb(scalars: &[f32], nvox: usize) -> Vec<f32> {
    crate::volume::planes::fill::<3>(nvox, |v, row| {
        let fa = scalars[v].clamp(0.0, 1.0);
        *row = std::array::from_fn(|c| scalars[(2 + c) * nvox + v].abs() * fa);
    })
}
