//! The sampler on an OpenCL device: entry points in `cl/bedpost.cl`, everything else in
//! `cl/common/bedpost.h` and `cl/common/rng.h`.

use super::{chunk_from_memory, BedpostKernels, ChainState, Schedule, Table, Variant, LANES, NPARAM};
use crate::runtime::opencl::{ClBuffer, ClDevice};
use crate::runtime::Timings;
use anyhow::{anyhow, Result};
use opencl3::kernel::{ExecuteKernel, Kernel};
use std::sync::Arc;

pub const SOURCE: &str = include_str!("../../cl/bedpost.cl");

struct Chunk {
    nvox: usize,
    ndir: usize,
    sched: Schedule,
    y: ClBuffer<f32>,
    gtab: ClBuffer<f32>,
    par: ClBuffer<f32>,
    prop: ClBuffer<f32>,
    acc: ClBuffer<i32>,
    rng: ClBuffer<u32>,
    nacc: ClBuffer<i32>,
    samples: ClBuffer<f32>,
    ec: ClBuffer<f32>,
}

pub struct ClBedpost {
    dev: Arc<ClDevice>,
    variant: Variant,
    chain: Kernel,
    energy: Kernel,
    rng: Kernel,
    loaded: Option<Chunk>,
    t: Timings,
}

impl ClBedpost {
    pub fn new(dev: Arc<ClDevice>, variant: Variant) -> Result<ClBedpost> {
        let p = dev.program("bedpost", SOURCE)?;
        Ok(ClBedpost {
            chain: dev.kernel(&p, variant.kernel())?,
            energy: dev.kernel(&p, "bedpost_energy")?,
            rng: dev.kernel(&p, "bedpost_rng")?,
            dev,
            variant,
            loaded: None,
            t: Timings::default(),
        })
    }

    /// Work-group size of the thread layout: left to the driver on CPUs (PoCL vectorises
    /// across work-items), 128 on GPUs.
    fn thread_local_size(&self) -> Option<usize> {
        Some(if self.dev.info.is_gpu { 128 } else { 64 })
    }
}

impl BedpostKernels for ClBedpost {
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
        let local = self.thread_local_size();
        let c = self.loaded.as_ref().ok_or_else(|| anyhow!("bedpost: run before load"))?;
        let s = &c.sched;
        let (nvox, ndir, l0, l1) = (c.nvox as i32, c.ndir as i32, l0 as i32, l1 as i32);
        let (burnin, thin, nsamp, every, ard) = (s.burnin as i32, s.thin as i32, s.nsamp as i32, s.every as i32, s.ard);
        let mut e = ExecuteKernel::new(&self.chain);
        unsafe {
            e.set_arg(&c.y).set_arg(&c.gtab).set_arg(&nvox).set_arg(&ndir).set_arg(&l0).set_arg(&l1);
            e.set_arg(&burnin).set_arg(&thin).set_arg(&nsamp).set_arg(&every).set_arg(&ard);
            e.set_arg(&c.par).set_arg(&c.prop).set_arg(&c.acc).set_arg(&c.rng).set_arg(&c.nacc);
            e.set_arg(&c.samples).set_arg(&c.ec);
        }
        if self.variant == Variant::Warp {
            self.dev.run(&mut e, c.nvox * LANES, Some(LANES), &mut self.t)
        } else {
            self.dev.run(&mut e, c.nvox, local, &mut self.t)
        }
    }

    fn read(&mut self) -> Result<(Vec<f32>, ChainState)> {
        let c = self.loaded.take().ok_or_else(|| anyhow!("bedpost: read before load"))?;
        let (dev, t, n) = (&self.dev, &mut self.t, c.nvox);
        let st = ChainState {
            par: dev.download(&c.par, NPARAM * n, t)?,
            prop: dev.download(&c.prop, NPARAM * n, t)?,
            acc: dev.download(&c.acc, NPARAM * n, t)?,
            rng: dev.download(&c.rng, super::rng::VOXEL_WORDS * n, t)?,
            nacc: dev.download(&c.nacc, n, t)?,
        };
        Ok((dev.download(&c.samples, NPARAM * c.sched.nsamp * n, t)?, st))
    }

    fn energy(&mut self, table: &Table, y: &[f32], par: &[f32], ard: f32) -> Result<Vec<f32>> {
        let n = par.len() / NPARAM;
        let (dev, t) = (&self.dev, &mut self.t);
        let (b_y, b_g, b_p) = (dev.upload(y, t)?, dev.upload(&table.gtab, t)?, dev.upload(par, t)?);
        let b_o = dev.alloc::<f32>(2 * n)?;
        let (nv, nd) = (n as i32, table.ndir as i32);
        let mut e = ExecuteKernel::new(&self.energy);
        unsafe {
            e.set_arg(&b_y).set_arg(&b_g).set_arg(&nv).set_arg(&nd).set_arg(&ard).set_arg(&b_p).set_arg(&b_o);
        }
        dev.run(&mut e, n, None, t)?;
        dev.download(&b_o, 2 * n, t)
    }

    fn rng(&mut self, states: &[u32], count: usize) -> Result<Vec<f32>> {
        let n = states.len() / super::rng::VOXEL_WORDS;
        let (dev, t) = (&self.dev, &mut self.t);
        let b_s = dev.upload(states, t)?;
        let b_o = dev.alloc::<f32>(2 * count * n)?;
        let (nv, cnt) = (n as i32, count as i32);
        let mut e = ExecuteKernel::new(&self.rng);
        unsafe {
            e.set_arg(&b_s).set_arg(&nv).set_arg(&cnt).set_arg(&b_o);
        }
        dev.run(&mut e, n, None, t)?;
        dev.download(&b_o, 2 * count * n, t)
    }

    /// OpenCL 1.2 cannot say how much memory is free: half the device's global memory, and no
    /// buffer above its largest allocation.
    fn max_chunk(&self, ndir: usize, nsamp: usize) -> usize {
        let total = self.dev.info.global_mem_bytes;
        let max_alloc = self.dev.device.max_mem_alloc_size().unwrap_or(total / 4);
        chunk_from_memory(total / 2, max_alloc, ndir, nsamp, self.variant.caches_terms())
    }

    fn take_timings(&mut self) -> Timings {
        std::mem::take(&mut self.t)
    }
}
