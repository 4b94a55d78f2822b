//! The sampler on a GPU (OpenCL or CUDA, through `runtime::gpu`): entry points in
//! `cl/bedpost.cl`, everything else in `cl/common/bedpost.h` and `cl/common/rng.h`.

use super::{chunk_from_memory, BedpostKernels, ChainPart, ChainPartMut, Schedule, Table, Variant, LANES, NPARAM};
use crate::runtime::columns::{Columns, ColumnsMut};
use crate::runtime::gpu::{args, Buf, Event, Gpu, Kernel, Lanes, Shape};
use std::collections::VecDeque;
use crate::runtime::Timings;
use anyhow::{anyhow, bail, Result};

/// The entry file built for one variant only (`NP_BP_ONLY`, see `cl/bedpost.cl`), as its own
/// program: the first run compiles one sampler, not five.
fn program(v: Variant) -> (&'static str, &'static str) {
    macro_rules! only {
        ($k:literal) => {
            concat!("#define NP_BP_ONLY ", $k, "\n", include_str!("../../cl/bedpost.cl"))
        };
    }
    match v {
        Variant::Naive => ("bedpost_naive", only!(0)),
        Variant::Cached => ("bedpost_cached", only!(1)),
        // NVIDIA's OpenCL caps the moments program at 96 registers: 109.6-109.7 ms uncapped on
        // the H200 in `bench bedpost`, 107.5-107.8 at 128, 104.1-104.5 at 112 or 104, 99.4-99.9
        // at 96, the same bytes; the naive and warp layouts were slower capped (132.6 -> 139,
        // 567 -> 646), and CUDA's __maxnreg__ at 96-64 slower too (106-130 against 100.2), so
        // those stay uncapped (round 35, scripts/device/round35.sh PART=a-d).
        Variant::Moments => ("bedpost_moments", concat!("/* NP_OPENCL_NV_OPTIONS: -cl-nv-maxrregcount=96 */\n", only!(2))),
        Variant::CachedMoments => ("bedpost_cached_moments", only!(3)),
        Variant::Warp => ("bedpost_warp", only!(4)),
    }
}
/// Voxels per work-group in the warp layout (`NP_BP_WARP_VOXELS` in the entry file).
const WARP_VOXELS: usize = 4;

struct Chunk {
    nvox: usize,
    /// Voxels the buffers hold (>= nvox: a reserved chunk serves any smaller load).
    cap: usize,
    ndir: usize,
    sched: Schedule,
    y: Buf<f32>,
    gtab: Buf<f32>,
    par: Buf<f32>,
    prop: Buf<f32>,
    acc: Buf<i32>,
    rng: Buf<u32>,
    nacc: Buf<i32>,
    samples: Buf<f32>,
    ec: Buf<f32>,
    /// After the chunk's last queued launch (overlapped runs), for its read.
    done: Option<Event>,
}

pub struct GpuBedpost {
    gpu: Gpu,
    /// Chunk copies on a second queue when overlapping (`runtime::gpu::pipeline`).
    lanes: Lanes,
    variant: Variant,
    chain: Kernel,
    energy: Kernel,
    rng: Kernel,
    /// Loaded chunks, oldest first (two while overlapping).
    loaded: VecDeque<Chunk>,
    /// The last chunk read, whose buffers the next load of its size reuses.
    spare: Option<Chunk>,
}

impl GpuBedpost {
    /// Overlapping chunk copies with the sampling only with `NEUROPORT_PIPELINE=1` (off by default: see `pipeline::overlap_default`).
    pub fn new(gpu: Gpu, variant: Variant) -> Result<GpuBedpost> {
        GpuBedpost::with_overlap(gpu, variant, crate::runtime::gpu::pipeline::overlap_default())
    }

    pub fn with_overlap(gpu: Gpu, variant: Variant, overlap: bool) -> Result<GpuBedpost> {
        let (prog, source) = program(variant);
        let k = |name| gpu.kernel(prog, source, name);
        let (chain, energy, rng) = (k(variant.kernel())?, k("bedpost_energy")?, k("bedpost_rng")?);
        Ok(GpuBedpost { lanes: Lanes::new(gpu.clone(), overlap)?, chain, energy, rng, gpu, variant, loaded: VecDeque::new(), spare: None })
    }

    /// The thread layout's work-group: 128 voxels on GPUs, 64 on CPU devices (PoCL).
    fn thread_shape(&self, n: usize) -> Shape {
        Shape::items_in(n, if self.gpu.info().is_gpu { 128 } else { 64 })
    }
}

impl BedpostKernels for GpuBedpost {
    fn variant(&self) -> &'static str {
        self.variant.name()
    }

    fn load(&mut self, table: &Table, y: Columns<f32>, st: ChainPart, sched: &Schedule) -> Result<()> {
        let n = st.nvox();
        self.variant.check_table(table.ndir)?;
        if !self.lanes.overlap() {
            self.loaded.clear();
        }
        let g = self.lanes.copy();
        // A chunk already read (or reserved) lends its buffers to the next one that fits them:
        // freeing device memory on CUDA waits for the whole device, which would stall the chunk
        // computing now. The kernels and `read` use the first nvox voxels' worth of each buffer.
        let chunk = match self.spare.take() {
            Some(mut c) if c.cap >= n && c.ndir == table.ndir && c.sched.nsamp == sched.nsamp => {
                g.write_columns(&c.y, 0, &y)?;
                g.write(&c.gtab, 0, &table.interleaved())?;
                g.write_columns(&c.par, 0, &st.par)?;
                g.write_columns(&c.prop, 0, &st.prop)?;
                g.write_columns(&c.acc, 0, &st.acc)?;
                g.write_columns(&c.rng, 0, &st.rng)?;
                g.write_columns(&c.nacc, 0, &st.nacc)?;
                // Outputs poisoned again, as `alloc` leaves fresh ones.
                g.fill_bytes(&c.samples, 0xFF)?;
                g.fill_bytes(&c.ec, 0xFF)?;
                c.sched = *sched;
                c.nvox = n;
                c.done = None;
                c
            }
            _ => Chunk {
                nvox: n,
                cap: n,
                ndir: table.ndir,
                sched: *sched,
                y: g.upload_columns(&y)?,
                gtab: g.upload(&table.interleaved())?,
                par: g.upload_columns(&st.par)?,
                prop: g.upload_columns(&st.prop)?,
                acc: g.upload_columns(&st.acc)?,
                rng: g.upload_columns(&st.rng)?,
                nacc: g.upload_columns(&st.nacc)?,
                samples: g.alloc::<f32>(NPARAM * sched.nsamp * n)?,
                ec: g.alloc::<f32>(self.variant.term_cache_len(table.ndir, n))?,
                done: None,
            },
        };
        self.loaded.push_back(chunk);
        self.lanes.loaded()
    }

    fn reserve(&mut self, table: &Table, nvox: usize, sched: &Schedule) -> Result<()> {
        if self.spare.as_ref().is_some_and(|c| c.cap >= nvox && c.ndir == table.ndir && c.sched.nsamp == sched.nsamp) {
            return Ok(());
        }
        let g = self.lanes.copy();
        g.stage_ahead();
        // Chains' state sized as the load's (NPARAM or VOXEL_WORDS values a voxel, poisoned).
        self.spare = Some(Chunk {
            nvox,
            cap: nvox,
            ndir: table.ndir,
            sched: *sched,
            y: g.alloc(table.ndir * nvox)?,
            gtab: g.alloc(table.gtab.len())?,
            par: g.alloc(NPARAM * nvox)?,
            prop: g.alloc(NPARAM * nvox)?,
            acc: g.alloc(NPARAM * nvox)?,
            rng: g.alloc(super::rng::VOXEL_WORDS * nvox)?,
            nacc: g.alloc(nvox)?,
            samples: g.alloc::<f32>(NPARAM * sched.nsamp * nvox)?,
            ec: g.alloc::<f32>(self.variant.term_cache_len(table.ndir, nvox))?,
            done: None,
        });
        Ok(())
    }

    fn run(&mut self, l0: usize, l1: usize) -> Result<()> {
        let nvox = self.loaded.back().ok_or_else(|| anyhow!("bedpost: run before load"))?.nvox;
        let shape = if self.variant == Variant::Warp {
            Shape::groups(nvox.div_ceil(WARP_VOXELS), WARP_VOXELS * LANES)
        } else {
            self.thread_shape(nvox)
        };
        let c = self.loaded.back_mut().expect("checked above");
        let s = &c.sched;
        self.lanes.compute().launch(
            &self.chain,
            shape,
            args![
                &c.y, &c.gtab, c.nvox as i32, c.ndir as i32, l0 as i32, l1 as i32,
                s.burnin as i32, s.thin as i32, s.nsamp as i32, s.every as i32, s.ard,
                &c.par, &c.prop, &c.acc, &c.rng, &c.nacc, &c.samples, &c.ec
            ],
        )?;
        c.done = self.lanes.computed()?;
        Ok(())
    }

    fn read(&mut self, samples: &mut ColumnsMut<f32>, st: &mut ChainPartMut) -> Result<()> {
        let c = self.loaded.pop_front().ok_or_else(|| anyhow!("bedpost: read before load"))?;
        if st.nvox() != c.nvox || samples.len() != c.nvox || samples.ncomp() != NPARAM * c.sched.nsamp {
            bail!("bedpost: a read of {} voxels into a share of {}", c.nvox, st.nvox());
        }
        self.lanes.after(c.done.as_ref())?;
        let g = self.lanes.copy();
        // The first nvox voxels' worth of each buffer (a reserved chunk's may hold more).
        g.read_columns(&c.par, &mut st.par)?;
        g.read_columns(&c.prop, &mut st.prop)?;
        g.read_columns(&c.acc, &mut st.acc)?;
        g.read_columns(&c.rng, &mut st.rng)?;
        g.read_columns(&c.nacc, &mut st.nacc)?;
        g.read_columns(&c.samples, samples)?;
        self.spare = Some(c);
        Ok(())
    }

    fn energy(&mut self, table: &Table, y: &[f32], par: &[f32], ard: f32) -> Result<Vec<f32>> {
        let n = par.len() / NPARAM;
        let g = &self.gpu;
        let out = g.alloc::<f32>(2 * n)?;
        g.launch(&self.energy, self.thread_shape(n), args![&g.upload(y)?, &g.upload(&table.interleaved())?, n as i32, table.ndir as i32, ard, &g.upload(par)?, &out])?;
        g.download(&out)
    }

    fn rng(&mut self, states: &[u32], count: usize) -> Result<Vec<f32>> {
        let n = states.len() / super::rng::VOXEL_WORDS;
        let g = &self.gpu;
        let out = g.alloc::<f32>(2 * count * n)?;
        g.launch(&self.rng, self.thread_shape(n), args![&g.upload(states)?, n as i32, count as i32, &out])?;
        g.download(&out)
    }

    /// A share of the memory the device reports free (80 % on CUDA; OpenCL 1.2 cannot say, so
    /// half the global memory), and no buffer above its largest allocation.
    fn max_chunk(&self, ndir: usize, nsamp: usize) -> usize {
        // Two chunks are alive while overlapping: each gets half.
        let free = self.gpu.mem_free() / if self.lanes.overlap() { 2 } else { 1 };
        chunk_from_memory(free / 10 * 8, self.gpu.max_alloc(), ndir, nsamp, self.variant.caches_terms())
    }

    fn take_timings(&mut self) -> Timings {
        self.lanes.take_timings().unwrap_or_default()
    }

    fn overlaps(&self) -> bool {
        self.lanes.overlap()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::source::marked_options;

    /// NVIDIA's OpenCL gets the hardware's e^x in every layout and the register cap in the
    /// moments program only (the host's prefix adds to the entry file's options).
    #[test]
    fn nvidia_opencl_options_per_layout() {
        let nv = |v: Variant| marked_options(program(v).1, "NP_OPENCL_NV_OPTIONS:", "-");
        assert_eq!(nv(Variant::Moments), ["-cl-nv-maxrregcount=96", "-DNP_BP_EXP=1"]);
        for v in [Variant::Naive, Variant::Cached, Variant::CachedMoments, Variant::Warp] {
            assert_eq!(nv(v), ["-DNP_BP_EXP=1"], "{v:?}");
        }
    }
}
