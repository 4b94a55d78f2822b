//! The cost kernel on a GPU (OpenCL or CUDA through `runtime::gpu`): entry points in
//! cl/register.cl, math in cl/common/register.h. The images of a level are uploaded once; up to
//! [`MAX_MAPS`] evaluations are one launch, the 12-number voxel maps passed by value, each map
//! served by its own [`Layout::groups`] work-groups, whose last one to finish reduces the map's
//! sums (MI/NMI: its joint histogram to entropies); one 32-byte record per map is read back
//! into pinned memory. Nothing else crosses the bus per launch: histograms and the groups'
//! counters are left zeroed on the device for the next launch; the last histograms are kept on
//! the device for the conformance check. Only one launch in [`TIME_EVERY`] is timed with device
//! events (a CUDA event pair per operation costs microseconds in a loop of ~30 us evaluations);
//! the split reported scales the timed ones to all.

use super::cost::{CostSpec, Stats, BINS};
use super::CostKernels;
use crate::runtime::gpu::{args, half_bits, Arg, Buf, Gpu, Kernel, Mapped, Pinned, Shape, TexelFormat, Texture3d};
use crate::runtime::Timings;
use crate::volume::Volume;
use anyhow::{bail, Result};

pub const SOURCE: &str = include_str!("../../cl/register.cl");
/// Work-group size (NP_REG_GROUP in register.h).
pub const GROUP: usize = 256;
/// One launch in this many is timed with device events.
pub const TIME_EVERY: u64 = 16;
/// Maps per launch (NP_REG_MAXMAPS in register.h).
pub const MAX_MAPS: usize = 8;
/// A tile's extent in x and y (NP_REG_TX, NP_REG_TY: one item per column).
pub const TILE: [usize; 2] = [16, 16];
/// The longest walk in z of one tile.
pub const MAX_TZ: usize = 16;

/// How one map's fixed grid is cut into tiles and shared among work-groups (register.cl).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Slices per tile.
    pub tz: usize,
    pub tiles: usize,
    /// Work-groups per map; group g takes tiles g, g + groups, ...
    pub groups: usize,
}

impl Layout {
    /// The tile depth that gives the busiest work-group the fewest slices to walk with at most
    /// `cap` groups (ties: the deeper tile, which re-reads fewer halo slices).
    pub fn new(dims: [usize; 3], cap: usize) -> Layout {
        let cols = dims[0].div_ceil(TILE[0]) * dims[1].div_ceil(TILE[1]);
        let cap = cap.max(1);
        let mut best: Option<(usize, Layout)> = None;
        for tz in 1..=MAX_TZ.min(dims[2].max(1)) {
            let tiles = cols * dims[2].div_ceil(tz);
            let groups = tiles.min(cap);
            let work = tiles.div_ceil(groups) * tz;
            if best.as_ref().is_none_or(|(w, _)| work <= *w) {
                best = Some((work, Layout { tz, tiles, groups }));
            }
        }
        best.expect("at least one depth").1
    }

    /// Most terms one item adds (its slices over all its tiles): the accumulation depth.
    pub fn terms_per_item(&self) -> usize {
        self.tiles.div_ceil(self.groups) * self.tz
    }
}

/// The program's name and source: cl/register.cl, for images that hold NaN/Inf (`nonfinite`)
/// with its finiteness tests compiled in (NP_REG_NONFINITE), or, when `NEUROPORT_REG_UNROLL`,
/// `NEUROPORT_REG_MIN_BLOCKS` or `NEUROPORT_REG_STREAM=0` is set (tuning the loop shape with
/// `bench register`), the same with those defines in front, under its own name (kernels are
/// cached by program name).
fn program(nonfinite: bool) -> (&'static str, &'static str) {
    use std::sync::OnceLock;
    static TUNED: [OnceLock<(&'static str, &'static str)>; 2] = [OnceLock::new(), OnceLock::new()];
    *TUNED[nonfinite as usize].get_or_init(|| {
        let var = |n: &str| std::env::var(n).ok().and_then(|v| v.parse::<u32>().ok()).filter(|&v| v <= 64);
        let (unroll, blocks, stream) = (var("NEUROPORT_REG_UNROLL").filter(|&v| v > 0), var("NEUROPORT_REG_MIN_BLOCKS").filter(|&v| v > 0), var("NEUROPORT_REG_STREAM"));
        if unroll.is_none() && blocks.is_none() && stream != Some(0) && !nonfinite {
            return ("register", SOURCE);
        }
        let mut defs = String::new();
        if nonfinite {
            defs += "#define NP_REG_NONFINITE 1\n";
        }
        if let Some(u) = unroll {
            defs += &format!("#define NP_REG_UNROLL {u}\n");
        }
        if let Some(b) = blocks {
            defs += &format!("#define NP_REG_MIN_BLOCKS {b}\n");
        }
        if stream == Some(0) {
            defs += "#define NP_REG_NO_STREAM 1\n";
        }
        let name = format!("register-u{}-b{}-s{}-n{}", unroll.unwrap_or(0), blocks.unwrap_or(0), stream.unwrap_or(1), nonfinite as u8);
        (Box::leak(name.into_boxed_str()), Box::leak(format!("{defs}{SOURCE}").into_boxed_str()))
    })
}

/// The in-kernel and texture cost kernels of [`program`]`(nonfinite)`.
fn cost_kernels(gpu: &Gpu, nonfinite: bool) -> Result<[Kernel; 2]> {
    let (program, source) = program(nonfinite);
    Ok([gpu.kernel(program, source, "register_cost")?, gpu.kernel(program, source, "register_cost_texture")?])
}

/// How the moving image is sampled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sampling {
    /// Trilinear in the kernel from a plain buffer: bit-identical to the CPU.
    InKernel,
    /// The texture unit's filter (002's tex3D); NVIDIA's weights have 8 fractional bits.
    Texture,
}

/// How the texture's texels stand for the moving image: its values themselves, as floats or
/// (`half`) rounded to halves, within `error` of them.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Texels {
    half: bool,
    error: f32,
}

impl Texels {
    const FLOAT: Texels = Texels { half: false, error: 0.0 };

    /// Halves where they represent `values` well: the largest magnitude in [2^-10, 2^15]
    /// (normal halves, far from overflow) and at most 4 times the range (no large offset,
    /// whose rounding would swamp the contrast); else floats. A half within [2^e, 2^(e+1))
    /// is within 2^(e-11) of the value it rounds, so every texel is within 2^(E-11) of its
    /// voxel, E = floor(log2 max|v|); values below 2^-14 (subnormal halves) within 2^-25.
    fn of(values: &[f32]) -> Texels {
        let (lo, hi, big) = values.iter().filter(|v| v.is_finite()).fold((f32::INFINITY, f32::NEG_INFINITY, 0.0f32), |(a, b, m), &v| (a.min(v), b.max(v), m.max(v.abs())));
        if !(lo < hi) || !(2f32.powi(-10)..=2f32.powi(15)).contains(&big) || big > 4.0 * (hi - lo) {
            return Texels::FLOAT;
        }
        Texels { half: true, error: 2f32.powi(big.log2().floor() as i32 - 11).max(2f32.powi(-25)) }
    }

    fn error(&self) -> f64 {
        self.error as f64
    }
}

/// Whether texture sampling stores halves: on GPUs (CUDA, GPU OpenCL devices), unless
/// `NEUROPORT_REG_TEX=float`. CPU OpenCL devices filter in float anyway, and PoCL 3.1 reads
/// half images wrongly (round 17).
fn half_texels(gpu: &Gpu) -> bool {
    let i = gpu.info();
    (i.is_gpu || i.backend == "cuda") && std::env::var("NEUROPORT_REG_TEX").map_or(true, |v| v != "float")
}

/// np_reg_maps: the maps of one launch.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Maps {
    pub m: [f32; 12 * MAX_MAPS],
}
unsafe impl bytemuck::Zeroable for Maps {}
unsafe impl bytemuck::Pod for Maps {}

/// np_reg_spec: the fields of [`CostSpec`] the kernels read, in CostSpec's order (not
/// `nonfinite`: the program chosen is the test).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct KernelSpec {
    cost: i32,
    bins: i32,
    fixed_shift: f32,
    moving_shift: f32,
    fixed_lo: f32,
    fixed_inv_width: f32,
    moving_lo: f32,
    moving_inv_width: f32,
}
unsafe impl bytemuck::Zeroable for KernelSpec {}
unsafe impl bytemuck::Pod for KernelSpec {}

impl KernelSpec {
    fn of(s: &CostSpec) -> KernelSpec {
        let CostSpec { cost, bins, fixed_shift, moving_shift, fixed_lo, fixed_inv_width, moving_lo, moving_inv_width, nonfinite: _ } = *s;
        KernelSpec { cost, bins, fixed_shift, moving_shift, fixed_lo, fixed_inv_width, moving_lo, moving_inv_width }
    }
}

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

/// One level's images.
struct Loaded {
    fixed: Buf<f32>,
    moving: Buf<f32>,
    tex: Option<Texture3d>,
    /// The texels: floats, or halves within an error of the moving image's values.
    texel: Texels,
    fdims: [usize; 3],
    mdims: [usize; 3],
    /// `spec.nonfinite`: the images may hold NaN/Inf, run the kernels that test for them.
    spec: CostSpec,
    layout: Layout,
}

/// The reduction's buffers, made once for the largest layout and kept across levels, so a level
/// change allocates only its images. (Suspected of the 15-22 ms a 1 mm registration's second
/// level spends loading on the H100; not it: that is the layer's page-locked staging slots,
/// allocated at the first copy over 1 MB. docs/performance.md, registration round 8.)
struct Scratch {
    partial: Buf<u32>,
    /// Zero between launches (the last work-group re-zeroes them).
    hist: Buf<u32>,
    done: Buf<u32>,
    /// The last evaluation's joint histogram.
    hist_out: Buf<u32>,
    records: Records,
}

/// Where the kernel's per-map records land: CUDA writes them into mapped host memory itself
/// (no read-back copy); OpenCL (and CUDA with `NEUROPORT_REG_MAPPED=0`) into a device buffer
/// copied back into pinned memory.
enum Records {
    Mapped(Mapped<u32>),
    Copied { out: Buf<u32>, record: Pinned<u32> },
}

/// A mapped record's words before the kernel writes them (see `launch`).
const UNSET: u32 = u32::MAX;
/// How long the host watches a mapped record before waiting for the queue instead.
const SPIN_LIMIT: std::time::Duration = std::time::Duration::from_millis(2);

/// Joint-histogram words per map the scratch holds: the bins every CostSpec has (cost.rs), which
/// register.h's NP_REG_MAXBINS must cover (a test reads it).
const MAX_HIST: usize = BINS * BINS;

pub struct GpuCost {
    gpu: Gpu,
    sampling: Sampling,
    /// The cost kernels, in-kernel and texture sampling, for finite images and (built at the
    /// first load of images that hold NaN/Inf) with the finiteness tests compiled in.
    cost: [Kernel; 2],
    nonfinite: Option<[Kernel; 2]>,
    /// Whether the host watches the mapped records' words before waiting for the queue
    /// (`NEUROPORT_REG_SPIN=0`: not, for comparison).
    spin: bool,
    /// Texture sampling from half-float texels (GPUs; `NEUROPORT_REG_TEX=float` keeps floats).
    half: bool,
    loaded: Option<Loaded>,
    scratch: Option<Scratch>,
    /// Launches, and of them timed, since the last `take_timings`.
    launches: u64,
    timed: u64,
    /// The uploads of the last `load` (timed in full, not scaled).
    load_t: Timings,
}

impl GpuCost {
    pub fn new(gpu: Gpu, sampling: Sampling) -> Result<GpuCost> {
        // The second level's images are the first copy over 1 MB: its staging slots are made
        // while the pyramid is built.
        gpu.stage_ahead();
        let spin = std::env::var("NEUROPORT_REG_SPIN").map_or(true, |v| v != "0");
        Ok(GpuCost { cost: cost_kernels(&gpu, false)?, nonfinite: None, spin, half: half_texels(&gpu), gpu, sampling, loaded: None, scratch: None, launches: 0, timed: 0, load_t: Timings::default() })
    }

    /// The layout of one map over a fixed grid of `dims`. Work-groups per map on a GPU: at
    /// most `NEUROPORT_REG_GROUPS_PER_UNIT` (default 4) per compute unit, all resident at once
    /// (4 x 256 items fit an SM up to 64 registers), so no partial wave leaves units idle; each
    /// item keeps NP_REG_UNROLL slices' loads in flight instead. On CPU OpenCL devices a few
    /// per core.
    pub fn layout(&self, dims: [usize; 3]) -> Layout {
        Layout::new(dims, self.cap())
    }

    /// The most work-groups one map gets (see [`layout`](Self::layout)).
    fn cap(&self) -> usize {
        let info = self.gpu.info();
        let units = info.compute_units as usize;
        if (info.is_gpu || info.backend == "cuda") && units > 0 {
            let per_unit = std::env::var("NEUROPORT_REG_GROUPS_PER_UNIT").ok().and_then(|v| v.parse::<usize>().ok()).filter(|&k| k > 0).unwrap_or(4);
            units * per_unit
        } else if info.is_gpu || info.backend == "cuda" {
            1024
        } else {
            8 * units.max(1)
        }
    }

    /// The moving image as a texture: on GPUs as halves where they represent it well
    /// ([`Texels::of`]; 8-12 % faster on the H100 than float texels: docs/performance.md,
    /// registration round 17), else, or where the device refuses half images, as floats.
    fn moving_texture(&self, moving: &Volume) -> Result<(Texture3d, Texels)> {
        let g = &self.gpu;
        let dims = moving.geom.dims;
        let texel = if self.half { Texels::of(moving.as_flat()) } else { Texels::FLOAT };
        if texel.half {
            let h: Vec<u16> = {
                use rayon::prelude::*;
                moving.as_flat().par_iter().map(|&v| half_bits(v)).collect()
            };
            let b = g.upload(&h)?;
            if let Ok(t) = g.texture(&b, 0, dims, TexelFormat { channels: 1, half: true }) {
                return Ok((t, texel));
            }
        }
        let b = g.upload(moving.as_flat())?;
        Ok((g.texture3d_scalar(&b, 0, dims)?, Texels::FLOAT))
    }

    /// The most a texel of the loaded texture differs from the moving value it stands for
    /// (the halves' rounding, in image units; 0 for float texels), for `check`'s bounds.
    pub fn texel_error(&self) -> f64 {
        self.loaded.as_ref().map_or(0.0, |l| l.texel.error())
    }

    /// The joint histogram of map `i` of the last launch (for the conformance check).
    pub fn last_histogram(&self, i: usize) -> Result<Vec<u32>> {
        match (&self.loaded, &self.scratch) {
            (Some(l), Some(sc)) => {
                let nb = (l.spec.bins * l.spec.bins) as usize;
                let mut h = vec![0u32; nb];
                self.gpu.read(&sc.hist_out, i * nb, &mut h)?;
                Ok(h)
            }
            _ => bail!("register: no images loaded"),
        }
    }

    /// One launch of up to MAX_MAPS maps.
    fn launch(&mut self, maps: &[[f32; 12]], out: &mut Vec<Stats>) -> Result<()> {
        let (Some(l), Some(sc)) = (&self.loaded, &mut self.scratch) else { bail!("register: evaluate before load") };
        let g = &self.gpu;
        let timed = self.launches.is_multiple_of(TIME_EVERY);
        g.set_timing(timed);
        self.launches += 1;
        self.timed += timed as u64;
        let mut all = Maps { m: [0.0; 12 * MAX_MAPS] };
        for (i, m) in maps.iter().enumerate() {
            all.m[12 * i..12 * i + 12].copy_from_slice(m);
        }
        let [fx, fy, fz] = l.fdims.map(|d| d as i32);
        let [mx, my, mz] = l.mdims.map(|d| d as i32);
        let shape = Shape::groups(maps.len() * l.layout.groups, GROUP);
        let ks = KernelSpec::of(&l.spec);
        let (tz, ng, mp, sp) = (l.layout.tz as i32, l.layout.groups as i32, Arg::structure(&all), Arg::structure(&ks));
        let dst = match &sc.records {
            Records::Mapped(m) => m.buf(),
            Records::Copied { out, .. } => out,
        };
        // Mapped records: every word set to a value the kernel never writes (a NaN no device
        // arithmetic makes, a negative count), so the host sees a record complete when none is
        // left, with no fence in the kernel; a record that keeps one (a 2 ms watch) is read
        // after the queue's wait instead.
        let words = PARTIAL_WORDS * maps.len();
        if let Records::Mapped(m) = &sc.records {
            for i in 0..words {
                m.poke(i, UNSET);
            }
        }
        let k = if l.spec.nonfinite { self.nonfinite.as_ref().expect("built by load") } else { &self.cost };
        match &l.tex {
            Some(t) => g.launch(&k[1], shape, args![&l.fixed, t, fx, fy, fz, mx, my, mz, tz, ng, mp, sp, &sc.partial, &sc.hist, &sc.done, dst, &sc.hist_out])?,
            None => g.launch(&k[0], shape, args![&l.fixed, &l.moving, fx, fy, fz, mx, my, mz, tz, ng, mp, sp, &sc.partial, &sc.hist, &sc.done, dst, &sc.hist_out])?,
        }
        if let Records::Copied { out, record } = &mut sc.records {
            g.download_into(out, 0, record, 0..words)?;
        }
        // One queue sync: no event object created and destroyed per launch. With mapped
        // records, first a short watch of their words: the result is there before the queue
        // reports the launch done.
        let seen = match &sc.records {
            Records::Mapped(m) if self.spin => {
                let t0 = std::time::Instant::now();
                loop {
                    if (0..words).all(|i| m.peek(i) != UNSET) {
                        std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
                        break true;
                    }
                    if t0.elapsed() > SPIN_LIMIT {
                        break false;
                    }
                    std::hint::spin_loop();
                }
            }
            _ => false,
        };
        if !seen {
            g.finish()?;
        }
        let record: &[u32] = match &sc.records {
            Records::Mapped(m) => &m[..words],
            Records::Copied { record, .. } => &record[..words],
        };
        for p in bytemuck::cast_slice::<u32, Partial>(record) {
            // MI/NMI: the device has put H(F), H(M), H(F,M) in the sums (Stats).
            out.push(Stats { inside: p.inside as u64, total: p.total as u64, sums: p.s.map(|v| v as f64), hist: Vec::new() });
        }
        Ok(())
    }
}

impl CostKernels for GpuCost {
    fn load(&mut self, fixed: &Volume, moving: &Volume, spec: &CostSpec) -> Result<()> {
        // Evaluations not yet taken keep their own scale; the uploads below are timed in full.
        let pending = self.take_timings();
        // The old level's images go before the new ones are uploaded (not both held at once),
        // once the last launch, whose record the host may have taken before its end, is done.
        self.gpu.finish()?;
        self.loaded = None;
        let g = &self.gpu;
        // Before the first launch: the staging slots begun in `new` (OpenCL; CUDA's are made
        // beside the launches).
        g.stage_settle();
        g.set_timing(true);
        let nf = fixed.nvox();
        if nf > i32::MAX as usize || moving.nvox() > i32::MAX as usize {
            bail!("register: images beyond 2^31 voxels are not supported on GPUs");
        }
        let (tex, texel) = match self.sampling {
            Sampling::Texture => {
                let (t, texel) = self.moving_texture(moving)?;
                (Some(t), texel)
            }
            Sampling::InKernel => (None, Texels::FLOAT),
        };
        let layout = self.layout(fixed.geom.dims);
        if spec.nonfinite && self.nonfinite.is_none() {
            self.nonfinite = Some(cost_kernels(&self.gpu, true)?);
        }
        let g = &self.gpu;
        if (spec.bins * spec.bins) as usize > MAX_HIST {
            bail!("register: {} histogram bins exceed the device kernel's {MAX_HIST}", spec.bins * spec.bins);
        }
        if self.scratch.is_none() {
            let groups = self.cap();
            self.scratch = Some(Scratch {
                partial: g.alloc(PARTIAL_WORDS * groups * MAX_MAPS)?,
                hist: g.zeros(MAX_HIST * MAX_MAPS)?,
                done: g.zeros(MAX_MAPS)?,
                hist_out: g.alloc(MAX_HIST * MAX_MAPS)?,
                records: match if std::env::var("NEUROPORT_REG_MAPPED").is_ok_and(|v| v == "0") { None } else { g.mapped(PARTIAL_WORDS * MAX_MAPS)? } {
                    Some(m) => Records::Mapped(m),
                    None => Records::Copied { out: g.alloc(PARTIAL_WORDS * MAX_MAPS)?, record: g.pinned(PARTIAL_WORDS * MAX_MAPS)? },
                },
            });
        }
        self.loaded = Some(Loaded {
            fixed: g.upload(fixed.as_flat())?,
            moving: if tex.is_some() { g.alloc(1)? } else { g.upload(moving.as_flat())? },
            tex,
            texel,
            fdims: fixed.geom.dims,
            mdims: moving.geom.dims,
            spec: *spec,
            layout,
        });
        self.load_t = self.gpu.take_timings().unwrap_or_default();
        self.load_t.add(&pending);
        Ok(())
    }

    fn evaluate(&mut self, m: &[f32; 12]) -> Result<Stats> {
        let mut out = Vec::with_capacity(1);
        self.launch(std::slice::from_ref(m), &mut out)?;
        Ok(out.pop().expect("one record"))
    }

    fn evaluate_many(&mut self, maps: &[[f32; 12]]) -> Result<Vec<Stats>> {
        let mut out = Vec::with_capacity(maps.len());
        for chunk in maps.chunks(MAX_MAPS) {
            self.launch(chunk, &mut out)?;
        }
        Ok(out)
    }

    fn take_timings(&mut self) -> Timings {
        let mut t = self.gpu.take_timings().unwrap_or_default();
        t.scale_sampled(self.launches, self.timed);
        (self.launches, self.timed) = (0, 0);
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

#[cfg(test)]
mod header_tests {
    /// The sizes the host allocates for agree with the ones register.h compiles in.
    #[test]
    fn host_sizes_match_register_h() {
        let h = include_str!("../../cl/common/register.h");
        let def = |name: &str| -> usize {
            let line = h.lines().find(|l| l.starts_with(&format!("#define {name} "))).unwrap_or_else(|| panic!("{name} not defined"));
            line.split_whitespace().nth(2).and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("{line}"))
        };
        assert!(def("NP_REG_MAXBINS") >= super::BINS);
        assert_eq!(def("NP_REG_GROUP"), super::GROUP);
        assert_eq!(def("NP_REG_MAXMAPS"), super::MAX_MAPS);
        assert_eq!([def("NP_REG_TX"), def("NP_REG_TY")], super::TILE);
    }
}

#[cfg(test)]
mod texel_tests {
    use super::Texels;
    use crate::runtime::gpu::{half_bits, half_value};
    use rand::Rng;

    /// Every voxel's half texel is within `Texels::error` of it, for ranges near zero and far
    /// from it, and the bound is not loose by more than ~2.5x; images that halves represent
    /// badly (a large offset, overflow, all subnormal) keep float texels.
    #[test]
    fn half_texels_within_their_bound() {
        let mut r = crate::synth::rng(0x7e1);
        for (lo, hi) in [(0.0f32, 1.0f32), (-3.0, 5.0), (0.0, 4095.0), (-1.0e4, 9.0e3), (2.0e-3, 3.0e-3)] {
            let v: Vec<f32> = (0..20_000).map(|_| r.random_range(lo..hi)).chain([lo, hi]).collect();
            let t = Texels::of(&v);
            assert!(t.half, "[{lo}, {hi}]");
            let worst = v.iter().map(|&x| (half_value(half_bits(x)) as f64 - x as f64).abs()).fold(0.0, f64::max);
            assert!(worst <= t.error(), "[{lo}, {hi}]: {worst} > {}", t.error());
            assert!(worst > t.error() / 2.5, "[{lo}, {hi}]: {worst} far below {}", t.error());
        }
        for (lo, hi) in [(1000.0f32, 1100.0f32), (0.0, 1.0e5), (0.0, 1.0e-4)] {
            let v: Vec<f32> = (0..1000).map(|_| r.random_range(lo..hi)).collect();
            assert_eq!(Texels::of(&v), Texels::FLOAT, "[{lo}, {hi}]");
        }
        assert_eq!(Texels::of(&[7.5; 10]), Texels::FLOAT);
    }
}
