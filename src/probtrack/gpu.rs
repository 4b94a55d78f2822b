//! The tracker on a GPU (OpenCL or CUDA, through `runtime::gpu`): entry points in
//! `cl/probtrack.cl`, the step in `cl/common/probtrack.h`. The samples (one 32-byte record per
//! voxel the field holds, `crop.rs`, per sample), the index of their box, ROI words and seeds
//! are uploaded once; a batch's paths live in a dense array that each segment advances and each
//! compaction shrinks, either on the device (prefix sum + scatter into a second array, only the
//! count read back) or as 003 did it (the paths read back, compacted on the host, written
//! again). The results never leave the device: the tally kernel turns them into the run's
//! counters there (`tally.rs`), and only one keep bit per streamline comes back per batch.

use super::step::{Params, Path};
use super::tally::{Counts, Rules};
use super::field::RECORD;
use super::{Batch, Compaction, Field, ProbtrackKernels};
use crate::runtime::gpu::{args, Arg, Buf, Elem, Gpu, Kernel, Shape};
use crate::runtime::{timing::wall_ms, Timings};
use anyhow::{anyhow, Result};
use rayon::prelude::*;
use std::sync::Arc;

pub const SOURCE: &str = include_str!("../../cl/probtrack.cl");
/// `NP_PT_GROUP` of the entry file.
const GROUP: usize = 256;

impl Elem for Path {
    const NAME: &'static str = "np_pt_path";
}

struct Uploaded {
    samples: Buf<f32>,
    /// The row of each voxel of the samples' box (`crop.rs`).
    index: Buf<i32>,
    roi: Buf<u32>,
    seeds: Buf<i32>,
    nvox: usize,
}

/// The run's counters (`tally.rs`), shared with a twin: atomics from both queues add into them.
struct Counters {
    rules: Rules,
    visits: Buf<u32>,
    seed_targets: Buf<u32>,
    sums: Buf<u32>,
}

struct Paths {
    /// Paths of the batch (2 per streamline).
    total: usize,
    live: usize,
    st: Buf<Path>,
    spare: Buf<Path>,
    flags: Buf<i32>,
    sums: Buf<i32>,
    count: Buf<i32>,
    out_steps: Buf<i32>,
    out_flags: Buf<u32>,
    /// The batch's streamline list (a 1-word dummy for a range), its use flag and first number.
    list: Buf<u32>,
    use_list: i32,
    t0: u32,
    keep: Buf<u32>,
}

struct Kernels {
    start: Kernel,
    segment: Kernel,
    count: Kernel,
    offsets: Kernel,
    scatter: Kernel,
    tally: Kernel,
}

pub struct GpuProbtrack {
    gpu: Gpu,
    k: Kernels,
    /// Shared with a twin (`ProbtrackKernels::twin`): the same samples and visitation map.
    data: Option<Arc<Uploaded>>,
    /// Which sample volumes `data.samples` holds (`upload_part`); every one after `upload`.
    present: Vec<bool>,
    counters: Option<Arc<Counters>>,
    batch: Option<Paths>,
    host_ms: f64,
}

impl GpuProbtrack {
    pub fn new(gpu: Gpu) -> Result<GpuProbtrack> {
        let k = |name| gpu.kernel("probtrack", SOURCE, name);
        let k = Kernels {
            start: k("probtrack_start")?,
            segment: k("probtrack_segment")?,
            count: k("probtrack_count")?,
            offsets: k("probtrack_offsets")?,
            scatter: k("probtrack_scatter")?,
            tally: k("probtrack_tally")?,
        };
        Ok(GpuProbtrack {
            k,
            gpu,
            data: None,
            present: Vec::new(),
            counters: None,
            batch: None,
            host_ms: 0.0,
        })
    }

}

fn shape(g: &Gpu, n: usize) -> Shape {
    Shape::items_in(n, if g.info().is_gpu { 128 } else { 64 })
}

impl GpuProbtrack {
    /// The device, the kernels, the uploaded data and the batch, borrowed apart.
    fn counters(&self) -> Result<&Counters> {
        self.counters.as_deref().ok_or_else(|| anyhow!("probtrack: counters not reset"))
    }

    fn parts(&mut self) -> Result<(&Gpu, &Kernels, &Uploaded, &mut Paths)> {
        let d = self.data.as_deref().ok_or_else(|| anyhow!("probtrack: no upload"))?;
        let b = self.batch.as_mut().ok_or_else(|| anyhow!("probtrack: no batch started"))?;
        Ok((&self.gpu, &self.k, d, b))
    }
}

impl ProbtrackKernels for GpuProbtrack {
    fn name(&self) -> String {
        self.gpu.info().spec.clone()
    }

    fn upload(&mut self, field: &Field, seeds: &[u32]) -> Result<()> {
        self.upload_part(field, seeds, &[0..field.nsamp])
    }

    fn upload_part(&mut self, field: &Field, seeds: &[u32], volumes: &[std::ops::Range<usize>]) -> Result<()> {
        let g = &self.gpu;
        // The staging slots are allocated while the samples' buffer is.
        g.stage_ahead();
        let seeds: Vec<i32> = seeds.iter().map(|&s| s as i32).collect();
        self.batch = None;
        self.counters = None;
        // A whole upload (one device) copies the samples at once; a part starts from `alloc`'s
        // buffer, every byte 0xFF, so a volume not uploaded is NaN and a path reading it shows.
        let whole = volumes.iter().map(|r| r.len()).sum::<usize>() >= field.nsamp;
        let samples = if whole { g.upload(&field.samples)? } else { g.alloc::<f32>(field.samples.len())? };
        self.data = Some(Arc::new(Uploaded { samples, index: g.upload(&field.crop.index)?, roi: g.upload(&field.roi)?, seeds: g.upload(&seeds)?, nvox: field.nvox() }));
        self.present = vec![whole; field.nsamp];
        self.add_volumes(field, volumes)
    }

    fn add_volumes(&mut self, field: &Field, volumes: &[std::ops::Range<usize>]) -> Result<()> {
        let d = self.data.as_ref().ok_or_else(|| anyhow!("probtrack: no upload"))?;
        let per = field.crop.nvox() * RECORD;
        for r in volumes {
            let mut s = r.start;
            while s < r.end.min(self.present.len()) {
                if self.present[s] {
                    s += 1;
                    continue;
                }
                // One copy per run of missing volumes.
                let e = (s..r.end.min(self.present.len())).find(|&e| self.present[e]).unwrap_or(r.end.min(self.present.len()));
                self.gpu.write(&d.samples, s * per, &field.samples[s * per..e * per])?;
                self.present[s..e].fill(true);
                s = e;
            }
        }
        Ok(())
    }

    /// 2 paths per streamline: two path arrays (48 B each), live flags, results (8 B): 216 B
    /// per streamline, in a quarter of the free memory and within 32-bit indexing.
    fn max_batch(&self) -> usize {
        let per = 2 * (2 * std::mem::size_of::<Path>() + 4 + 8) as u64;
        let budget = (self.gpu.mem_free() / 4).min(self.gpu.max_alloc() / 48 * per / 2);
        ((budget / per) as usize).clamp(1 << 12, (i32::MAX as usize) / 4)
    }

    fn reset_counts(&mut self, rules: &Rules) -> Result<()> {
        let d = self.data.as_ref().ok_or_else(|| anyhow!("probtrack: no upload"))?;
        let g = &self.gpu;
        self.counters = Some(Arc::new(Counters {
            rules: rules.clone(),
            visits: g.zeros(d.nvox)?,
            seed_targets: g.zeros((rules.nseeds * rules.ntarg).max(1))?,
            sums: g.zeros(rules.sums_len())?,
        }));
        Ok(())
    }

    fn start(&mut self, p: &Params, batch: Batch) -> Result<usize> {
        let n = batch.len();
        let total = 2 * n;
        let g = &self.gpu;
        let d = self.data.as_ref().ok_or_else(|| anyhow!("probtrack: no upload"))?;
        let c = self.counters.as_ref().ok_or_else(|| anyhow!("probtrack: counters not reset"))?;
        let reuse = self.batch.as_ref().is_some_and(|b| b.st.len() >= total);
        if !reuse {
            self.batch = None;
            self.batch = Some(Paths {
                total,
                live: 0,
                st: g.alloc(total)?,
                spare: g.alloc(total)?,
                flags: g.alloc(total)?,
                sums: g.alloc(total.div_ceil(GROUP).max(1))?,
                count: g.alloc(1)?,
                out_steps: g.alloc(total)?,
                out_flags: g.alloc(total)?,
                list: g.alloc(1)?,
                use_list: 0,
                t0: 0,
                keep: g.alloc(n.div_ceil(32).max(1))?,
            });
        }
        let b = self.batch.as_mut().expect("set above");
        b.total = total;
        if reuse {
            // Poisoned again, so a path without a result shows in `results`.
            g.fill_bytes(&b.out_steps, 0xFF)?;
        }
        (b.list, b.use_list, b.t0) = match batch {
            Batch::Range(t0, _) => (g.alloc::<u32>(1)?, 0, t0),
            Batch::List(l) => (g.upload(l)?, 1, 0),
        };
        if b.keep.len() < n.div_ceil(32) {
            b.keep = g.alloc(n.div_ceil(32))?;
        }
        g.launch(
            &self.k.start,
            shape(g, total),
            args![&d.samples, &d.index, &d.roi, &d.seeds, &b.list, b.use_list, b.t0, n as i32, &b.st, &b.flags, &b.out_steps, &b.out_flags, &c.visits, Arg::structure(p)],
        )?;
        b.live = total;
        self.compact(Compaction::Device)
    }

    fn segment(&mut self, p: &Params, iters: usize) -> Result<()> {
        let visits = &self.counters.as_deref().ok_or_else(|| anyhow!("probtrack: counters not reset"))?.visits;
        let d = self.data.as_deref().ok_or_else(|| anyhow!("probtrack: no upload"))?;
        let b = self.batch.as_mut().ok_or_else(|| anyhow!("probtrack: no batch started"))?;
        let (g, k) = (&self.gpu, &self.k);
        if b.live == 0 {
            return Ok(());
        }
        g.launch(
            &k.segment,
            shape(g, b.live),
            args![&b.st, &b.flags, b.live as i32, iters as i32, &d.samples, &d.index, &d.roi, visits, &b.out_steps, &b.out_flags, Arg::structure(p)],
        )
    }

    fn compact(&mut self, how: Compaction) -> Result<usize> {
        let mut host_ms = 0.0;
        let (g, k, _, b) = self.parts()?;
        let n = b.live;
        if n == 0 {
            return Ok(0);
        }
        match how {
            Compaction::Device => {
                let groups = n.div_ceil(GROUP);
                g.launch(&k.count, Shape::groups(groups, GROUP), args![&b.flags, n as i32, &b.sums])?;
                g.launch(&k.offsets, Shape::groups(1, GROUP), args![&b.sums, groups as i32, &b.count])?;
                g.launch(&k.scatter, Shape::groups(groups, GROUP), args![&b.st, &b.flags, n as i32, &b.sums, &b.spare])?;
                let mut c = [0i32];
                g.read(&b.count, 0, &mut c)?;
                std::mem::swap(&mut b.st, &mut b.spare);
                b.live = c[0].max(0) as usize;
            }
            Compaction::Host => {
                let mut st = vec![Path::default(); n];
                let mut live = vec![0i32; n];
                g.read(&b.st, 0, &mut st)?;
                g.read(&b.flags, 0, &mut live)?;
                // In parallel, order kept (rayon's collect keeps it): 003's host reduction.
                let (kept, ms) = wall_ms(|| st.par_iter().zip(&live).filter(|(_, &l)| l != 0).map(|(s, _)| *s).collect::<Vec<Path>>());
                host_ms = ms;
                if !kept.is_empty() {
                    g.write(&b.st, 0, &kept)?;
                }
                b.live = kept.len();
            }
        }
        let live = b.live;
        self.host_ms += host_ms;
        Ok(live)
    }

    fn tally(&mut self, p: &Params, _batch: Batch, full: bool) -> Result<Vec<u32>> {
        // The batch's list is on the device since `start`.
        let c = self.counters.as_deref().ok_or_else(|| anyhow!("probtrack: counters not reset"))?;
        let b = self.batch.as_ref().ok_or_else(|| anyhow!("probtrack: no batch started"))?;
        let (g, r) = (&self.gpu, &c.rules);
        let n = b.total / 2;
        let words = n.div_ceil(32);
        if words > 0 {
            g.launch(
                &self.k.tally,
                Shape::groups(words.div_ceil(GROUP), GROUP),
                args![&b.out_steps, &b.out_flags, n as i32, &b.list, b.use_list, b.t0, r.need, r.tshift as i32, r.ntarg as i32, full as i32, &b.keep, &c.seed_targets, &c.sums, Arg::structure(p)],
            )?;
        }
        let mut keep = vec![0u32; words];
        g.read(&b.keep, 0, &mut keep)?;
        Ok(keep)
    }

    fn counts(&mut self) -> Result<Counts> {
        let c = self.counters()?;
        let g = &self.gpu;
        let mut seed_targets = g.download(&c.seed_targets)?;
        seed_targets.truncate(c.rules.nseeds * c.rules.ntarg);
        Ok(Counts { visits: g.download(&c.visits)?, seed_targets, sums: g.download(&c.sums)? })
    }

    fn take_timings(&mut self) -> Timings {
        let mut t = self.gpu.take_timings().unwrap_or_default();
        t.host_ms += std::mem::take(&mut self.host_ms);
        t
    }

    fn twin(&mut self) -> Result<Option<Box<dyn ProbtrackKernels>>> {
        // The upload and the zeroed map must be done before the other queue reads them.
        self.gpu.finish()?;
        let mut t = GpuProbtrack::new(self.gpu.second_queue()?)?;
        t.data = self.data.clone();
        t.present = self.present.clone();
        t.counters = self.counters.clone();
        Ok(Some(Box::new(t)))
    }

    fn progress(&mut self) -> Result<(Vec<u32>, Vec<i32>)> {
        let (g, _, _, b) = self.parts()?;
        let mut st = vec![Path::default(); b.live];
        g.read(&b.st, 0, &mut st)?;
        let mut steps = vec![0i32; b.total];
        g.read(&b.out_steps, 0, &mut steps)?;
        Ok((st.iter().map(|s| s.id).collect(), steps))
    }
}
