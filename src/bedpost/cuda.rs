//! The sampler on a CUDA device: entry points in `cu/bedpost.cu`, everything else in
//! `cl/common/bedpost.h` and `cl/common/rng.h`.

use super::{chunk_from_memory, BedpostKernels, ChainState, Schedule, Table, Variant, LANES, NPARAM};
use crate::runtime::cuda::{grid, CudaDevice, LaunchConfig, PushKernelArg, Slice};
use crate::runtime::Timings;
use anyhow::{anyhow, Result};
use cudarc::driver::CudaFunction;
use std::sync::Arc;

pub const SOURCE: &str = include_str!("../../cu/bedpost.cu");
/// Threads per block: 128 voxels in the thread layout, 4 voxels (warps) in the warp layout.
const BLOCK: u32 = 128;

struct Chunk {
    nvox: usize,
    ndir: usize,
    sched: Schedule,
    y: Slice<f32>,
    gtab: Slice<f32>,
    par: Slice<f32>,
    prop: Slice<f32>,
    acc: Slice<i32>,
    rng: Slice<u32>,
    nacc: Slice<i32>,
    samples: Slice<f32>,
    ec: Slice<f32>,
}

pub struct CudaBedpost {
    dev: Arc<CudaDevice>,
    variant: Variant,
    chain: CudaFunction,
    energy: CudaFunction,
    rng: CudaFunction,
    loaded: Option<Chunk>,
    t: Timings,
}

impl CudaBedpost {
    pub fn new(dev: Arc<CudaDevice>, variant: Variant) -> Result<CudaBedpost> {
        let m = dev.module("bedpost", SOURCE)?;
        Ok(CudaBedpost {
            chain: dev.function(&m, variant.kernel())?,
            energy: dev.function(&m, "bedpost_energy")?,
            rng: dev.function(&m, "bedpost_rng")?,
            dev,
            variant,
            loaded: None,
            t: Timings::default(),
        })
    }
}

impl BedpostKernels for CudaBedpost {
    fn variant(&self) -> &'static str {
        self.variant.name()
    }

    fn load(&mut self, table: &Table, y: &[f32], st: &ChainState, sched: &Schedule) -> Result<()> {
        let n = st.nvox();
        self.variant.check_table(table.ndir)?;
        let (dev, t) = (&self.dev, &mut self.t);
        let ec_len = self.variant.term_cache_len(table.ndir, n);
        self.loaded = Some(Chunk {
            nvox: n,
            ndir: table.ndir,
            sched: *sched,
            y: dev.upload(y, t)?,
            gtab: dev.upload(&table.gtab, t)?,
            par: dev.upload(&st.par, t)?,
            prop: dev.upload(&st.prop, t)?,
            acc: dev.upload(&st.acc, t)?,
            rng: dev.upload(&st.rng, t)?,
            nacc: dev.upload(&st.nacc, t)?,
            samples: dev.alloc::<f32>(NPARAM * sched.nsamp * n)?,
            ec: dev.alloc::<f32>(ec_len)?,
        });
        Ok(())
    }

    fn run(&mut self, l0: usize, l1: usize) -> Result<()> {
        let c = self.loaded.as_mut().ok_or_else(|| anyhow!("bedpost: run before load"))?;
        let s = c.sched;
        let (nvox, ndir, l0, l1) = (c.nvox as i32, c.ndir as i32, l0 as i32, l1 as i32);
        let (burnin, thin, nsamp, every, ard) = (s.burnin as i32, s.thin as i32, s.nsamp as i32, s.every as i32, s.ard);
        let cfg = if self.variant == Variant::Warp {
            let per_block = BLOCK as usize / LANES;
            LaunchConfig { grid_dim: (c.nvox.div_ceil(per_block).max(1) as u32, 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: 0 }
        } else {
            grid(c.nvox, BLOCK)
        };
        let (dev, f) = (&self.dev, &self.chain);
        dev.launch(&mut self.t, || {
            let mut l = dev.stream.launch_builder(f);
            l.arg(&c.y).arg(&c.gtab).arg(&nvox).arg(&ndir).arg(&l0).arg(&l1);
            l.arg(&burnin).arg(&thin).arg(&nsamp).arg(&every).arg(&ard);
            l.arg(&mut c.par).arg(&mut c.prop).arg(&mut c.acc).arg(&mut c.rng).arg(&mut c.nacc);
            l.arg(&mut c.samples).arg(&mut c.ec);
            unsafe { l.launch(cfg) }.map(|_| ())
        })
    }

    fn read(&mut self) -> Result<(Vec<f32>, ChainState)> {
        let c = self.loaded.take().ok_or_else(|| anyhow!("bedpost: read before load"))?;
        let (dev, t) = (&self.dev, &mut self.t);
        let st = ChainState {
            par: dev.download(&c.par, t)?,
            prop: dev.download(&c.prop, t)?,
            acc: dev.download(&c.acc, t)?,
            rng: dev.download(&c.rng, t)?,
            nacc: dev.download(&c.nacc, t)?,
        };
        Ok((dev.download(&c.samples, t)?, st))
    }

    fn energy(&mut self, table: &Table, y: &[f32], par: &[f32], ard: f32) -> Result<Vec<f32>> {
        let n = par.len() / NPARAM;
        let (dev, t) = (&self.dev, &mut self.t);
        let (b_y, b_g, b_p) = (dev.upload(y, t)?, dev.upload(&table.gtab, t)?, dev.upload(par, t)?);
        let mut b_o = dev.alloc::<f32>(2 * n)?;
        let (nv, nd) = (n as i32, table.ndir as i32);
        let f = &self.energy;
        dev.launch(t, || {
            let mut l = dev.stream.launch_builder(f);
            l.arg(&b_y).arg(&b_g).arg(&nv).arg(&nd).arg(&ard).arg(&b_p).arg(&mut b_o);
            unsafe { l.launch(grid(n, BLOCK)) }.map(|_| ())
        })?;
        let mut out = dev.download(&b_o, t)?;
        out.truncate(2 * n);
        Ok(out)
    }

    fn rng(&mut self, states: &[u32], count: usize) -> Result<Vec<f32>> {
        let n = states.len() / super::rng::VOXEL_WORDS;
        let (dev, t) = (&self.dev, &mut self.t);
        let mut b_s = dev.upload(states, t)?;
        let mut b_o = dev.alloc::<f32>(2 * count * n)?;
        let (nv, cnt) = (n as i32, count as i32);
        let f = &self.rng;
        dev.launch(t, || {
            let mut l = dev.stream.launch_builder(f);
            l.arg(&mut b_s).arg(&nv).arg(&cnt).arg(&mut b_o);
            unsafe { l.launch(grid(n, BLOCK)) }.map(|_| ())
        })?;
        let mut out = dev.download(&b_o, t)?;
        out.truncate(2 * count * n);
        Ok(out)
    }

    /// 80 % of the memory the driver reports free now.
    fn max_chunk(&self, ndir: usize, nsamp: usize) -> usize {
        let total = self.dev.info.global_mem_bytes;
        let free = self.dev.ctx.mem_get_info().map(|(f, _)| f as u64).unwrap_or(total / 2);
        chunk_from_memory(free / 10 * 8, free, ndir, nsamp, self.variant.caches_terms())
    }

    fn take_timings(&mut self) -> Timings {
        std::mem::take(&mut self.t)
    }
}
