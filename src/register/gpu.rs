//! The cost kernel on a GPU (OpenCL or CUDA through `runtime::gpu`): entry points in
//! cl/register.cl, math in cl/common/register.h. The images of a level are uploaded once; an
//! evaluation is one launch, with the 12-number voxel map passed by value, over a fixed number
//! of work-groups whose last one to finish reduces everything (MI/NMI: the joint histogram to
//! its entropies), and one 32-byte record read back into pinned memory. Nothing else crosses
//! the bus per evaluation: the histogram and the groups' counter are left zeroed on the device
//! for the next launch; the last histogram is kept on the device for the conformance check.
//! Only one evaluation in [`TIME_EVERY`] is timed with device events (a CUDA event pair per
//! operation costs microseconds in a loop of ~30 us evaluations); the split reported scales the
//! timed ones to all.

use super::cost::{CostSpec, Stats};
use super::CostKernels;
use crate::runtime::gpu::{args, Arg, Buf, Gpu, Kernel, Pinned, Shape, Texture3d};
use crate::runtime::Timings;
use crate::volume::Volume;
use anyhow::{bail, Result};

pub const SOURCE: &str = include_str!("../../cl/register.cl");
/// Work-group size (NP_REG_GROUP in register.h).
pub const GROUP: usize = 256;
/// One evaluation in this many is timed with device events.
pub const TIME_EVERY: u64 = 16;

/// How the moving image is sampled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sampling {
    /// Trilinear in the kernel from a plain buffer: bit-identical to the CPU.
    InKernel,
    /// The texture unit's filter (002's tex3D); NVIDIA's weights have 8 fractional bits.
    Texture,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct Map {
    pub m: [f32; 12],
}
unsafe impl bytemuck::Zeroable for Map {}
unsafe impl bytemuck::Pod for Map {}

/// np_reg_partial: 5 sums, the overlap and the sample count.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct Partial {
    s: [f32; 5],
    inside: i32,
    total: i32,
    pad: i32,
}
unsafe impl bytemuck::Zeroable for Partial {}
unsafe impl bytemuck::Pod for Partial {}
const PARTIAL_WORDS: usize = 8;

struct Loaded {
    fixed: Buf<f32>,
    moving: Buf<f32>,
    tex: Option<Texture3d>,
    fdims: [usize; 3],
    mdims: [usize; 3],
    spec: CostSpec,
    groups: usize,
    partial: Buf<u32>,
    out: Buf<u32>,
    /// Zero between launches (the last work-group re-zeroes them).
    hist: Buf<u32>,
    done: Buf<u32>,
    /// The last evaluation's joint histogram.
    hist_out: Buf<u32>,
    record: Pinned<u32>,
}

pub struct GpuCost {
    gpu: Gpu,
    sampling: Sampling,
    cost: Kernel,
    cost_tex: Kernel,
    loaded: Option<Loaded>,
    /// Evaluations, and of them timed, since the last `take_timings`.
    evals: u64,
    timed: u64,
    /// The uploads of the last `load` (timed in full, not scaled).
    load_t: Timings,
}

impl GpuCost {
    pub fn new(gpu: Gpu, sampling: Sampling) -> Result<GpuCost> {
        let k = |name| gpu.kernel("register", SOURCE, name);
        Ok(GpuCost { cost: k("register_cost")?, cost_tex: k("register_cost_texture")?, gpu, sampling, loaded: None, evals: 0, timed: 0, load_t: Timings::default() })
    }

    /// Work-groups per evaluation. On a GPU a whole number of waves: `NEUROPORT_REG_GROUPS_PER_UNIT`
    /// (default 4) per compute unit, all resident at once (4 x 256 items fit an SM up to 64
    /// registers), so no partial last wave leaves units idle while the grid-stride loop of the
    /// others finishes (ncu: 1024 groups were 1.29-1.55 waves on the H100); each item keeps
    /// NP_REG_UNROLL voxels' loads in flight instead. On CPU OpenCL devices a few per core.
    pub fn groups(&self, nvox: usize) -> usize {
        let info = self.gpu.info();
        let units = info.compute_units as usize;
        let cap = if (info.is_gpu || info.backend == "cuda") && units > 0 {
            let per_unit = std::env::var("NEUROPORT_REG_GROUPS_PER_UNIT").ok().and_then(|v| v.parse::<usize>().ok()).filter(|&k| k > 0).unwrap_or(4);
            units * per_unit
        } else if info.is_gpu || info.backend == "cuda" {
            1024
        } else {
            8 * units.max(1)
        };
        nvox.div_ceil(GROUP).clamp(1, cap)
    }

    /// The joint histogram of the last evaluation (for the conformance check).
    pub fn last_histogram(&self) -> Result<Vec<u32>> {
        match &self.loaded {
            Some(l) => self.gpu.download(&l.hist_out),
            None => bail!("register: no images loaded"),
        }
    }
}

impl CostKernels for GpuCost {
    fn load(&mut self, fixed: &Volume, moving: &Volume, spec: &CostSpec) -> Result<()> {
        // Evaluations not yet taken keep their own scale; the uploads below are timed in full.
        let pending = self.take_timings();
        let g = &self.gpu;
        g.set_timing(true);
        let nf = fixed.nvox();
        if nf > i32::MAX as usize || moving.nvox() > i32::MAX as usize {
            bail!("register: images beyond 2^31 voxels are not supported on GPUs");
        }
        let tex = match self.sampling {
            Sampling::Texture => {
                // float4 texels with the image in .x: the layer's one texture format.
                let mut f4 = vec![0.0f32; 4 * moving.nvox()];
                for (t, &v) in f4.chunks_exact_mut(4).zip(moving.as_flat()) {
                    t[0] = v;
                }
                let b = g.upload(&f4)?;
                Some(g.texture3d(&b, 0, moving.geom.dims)?)
            }
            Sampling::InKernel => None,
        };
        let groups = self.groups(nf);
        let bins = (spec.bins * spec.bins) as usize;
        self.loaded = Some(Loaded {
            fixed: g.upload(fixed.as_flat())?,
            moving: if tex.is_some() { g.alloc(1)? } else { g.upload(moving.as_flat())? },
            tex,
            fdims: fixed.geom.dims,
            mdims: moving.geom.dims,
            spec: *spec,
            groups,
            partial: g.alloc(PARTIAL_WORDS * groups)?,
            out: g.alloc(PARTIAL_WORDS)?,
            hist: g.zeros(bins)?,
            done: g.zeros(1)?,
            hist_out: g.alloc(bins)?,
            record: g.pinned(PARTIAL_WORDS)?,
        });
        self.load_t = self.gpu.take_timings().unwrap_or_default();
        self.load_t.add(&pending);
        Ok(())
    }

    fn evaluate(&mut self, m: &[f32; 12]) -> Result<Stats> {
        let Some(l) = &mut self.loaded else { bail!("register: evaluate before load") };
        let g = &self.gpu;
        let timed = self.evals % TIME_EVERY == 0;
        g.set_timing(timed);
        self.evals += 1;
        self.timed += timed as u64;
        let map = Map { m: *m };
        let [fx, fy, fz] = l.fdims.map(|d| d as i32);
        let [mx, my, mz] = l.mdims.map(|d| d as i32);
        let shape = Shape::groups(l.groups, GROUP);
        let (ng, mp, sp) = (l.groups as i32, Arg::structure(&map), Arg::structure(&l.spec));
        match &l.tex {
            Some(t) => g.launch(&self.cost_tex, shape, args![&l.fixed, t, fx, fy, fz, mx, my, mz, ng, mp, sp, &l.partial, &l.hist, &l.done, &l.out, &l.hist_out])?,
            None => g.launch(&self.cost, shape, args![&l.fixed, &l.moving, fx, fy, fz, mx, my, mz, ng, mp, sp, &l.partial, &l.hist, &l.done, &l.out, &l.hist_out])?,
        }
        g.download_into(&l.out, 0, &mut l.record, 0..PARTIAL_WORDS)?;
        // One queue sync: no event object created and destroyed per evaluation.
        g.finish()?;
        let p: Partial = bytemuck::cast_slice::<u32, Partial>(&l.record[..])[0];
        // MI/NMI: the device has put H(F), H(M), H(F,M) in the sums (Stats).
        Ok(Stats { inside: p.inside as u64, total: p.total as u64, sums: p.s.map(|v| v as f64), hist: Vec::new() })
    }

    fn take_timings(&mut self) -> Timings {
        let mut t = self.gpu.take_timings().unwrap_or_default();
        let scale = self.evals as f64 / self.timed.max(1) as f64;
        t.kernel_ms *= scale;
        t.transfer_ms *= scale;
        (self.evals, self.timed) = (0, 0);
        t.add(&std::mem::take(&mut self.load_t));
        t
    }

    fn variant(&self) -> &'static str {
        match self.sampling {
            Sampling::InKernel => "in-kernel",
            Sampling::Texture => "texture",
        }
    }
}
