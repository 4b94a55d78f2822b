//! Geodesic tracking on a GPU (OpenCL or CUDA, through `runtime::gpu`): entry points in
//! `cl/geodesic.cl`, integrator in `cl/common/geodesic.h`. The texture variant reads six float4
//! 3-D textures (linear filtering, clamped) made on the device from the fields buffer the first
//! time it is used, and freed with the fields.

use super::{batch_within, geo_params, seeds_component_major, FibreBatch, Fields, GeodesicKernels, Interp, Seed, TraceParams, GROUPS};
use crate::runtime::gpu::pipeline::{self, Step};
use crate::runtime::gpu::{args, Arg, Buf, Event, Gpu, Kernel, Lanes, Shape, Texture3d};
use crate::runtime::Timings;
use anyhow::{anyhow, Result};

pub const SOURCE: &str = include_str!("../../cl/geodesic.cl");

struct Resident {
    dims: [usize; 3],
    voxel_size: [f32; 3],
    f4: Buf<f32>,
    labels: Buf<u8>,
    textures: Option<Vec<Texture3d>>,
}

pub struct GpuGeodesic {
    gpu: Gpu,
    /// Batch copies on a second queue when overlapping (`runtime::gpu::pipeline`).
    lanes: Lanes,
    trace_kernel: Kernel,
    trace_texture: Kernel,
    pack: Kernel,
    resident: Option<Resident>,
    /// Time already taken off the queue, with the on-device packing of points counted as
    /// transfer (it only prepares the download).
    carry: Timings,
    /// Host wall time of the batches' packing and download, recorded as the stage "points down"
    /// when the timings are taken.
    down_ms: f64,
}

impl GpuGeodesic {
    /// Overlapping batch copies with tracing only with `NEUROPORT_PIPELINE=1` (off by default: see `pipeline::overlap_default`).
    pub fn new(gpu: Gpu) -> Result<GpuGeodesic> {
        GpuGeodesic::with_overlap(gpu, pipeline::overlap_default())
    }

    pub fn with_overlap(gpu: Gpu, overlap: bool) -> Result<GpuGeodesic> {
        let k = |name| gpu.kernel("geodesic", SOURCE, name);
        let (trace_kernel, trace_texture, pack) = (k("geodesic_trace_kernel")?, k("geodesic_trace_texture")?, k("geodesic_pack")?);
        Ok(GpuGeodesic { lanes: Lanes::new(gpu.clone(), overlap)?, trace_kernel, trace_texture, pack, gpu, resident: None, carry: Timings::default(), down_ms: 0.0 })
    }

    /// GPUs: `block_size`; CPU devices choose their own.
    fn shape(&self, n: usize) -> Shape {
        let i = self.gpu.info();
        if i.is_gpu {
            Shape::items_in(n, super::block_size(n, i.compute_units))
        } else {
            Shape::items(n)
        }
    }

    fn ensure_textures(&mut self) -> Result<()> {
        let r = self.resident.as_mut().ok_or_else(|| anyhow!("geodesic fields not uploaded"))?;
        if r.textures.is_none() {
            let nvox: usize = r.dims.iter().product();
            let tex = (0..GROUPS).map(|k| self.gpu.texture3d(&r.f4, k * nvox, r.dims)).collect::<Result<Vec<_>>>().map_err(|e| anyhow!("{e:#}: use --interp kernel"))?;
            r.textures = Some(tex);
        }
        Ok(())
    }

    /// Queues a batch (`pipeline::Step::Load` and `Compute`): its seeds, in the spatial order of
    /// [`super::order`], up on the copy queue, its trace on the compute queue.
    fn begin(&mut self, seeds: &[Seed], p: &TraceParams) -> Result<InFlight> {
        if p.interp == Interp::Texture {
            self.ensure_textures()?;
        }
        let n = seeds.len();
        let mut host = Timings::default();
        let order = super::order::spatial_order(seeds, &mut host);
        self.carry.host_ms += host.host_ms;
        let traced: std::borrow::Cow<[Seed]> = match &order {
            Some(o) => o.iter().map(|&i| seeds[i]).collect::<Vec<_>>().into(),
            None => seeds.into(),
        };
        let shape = self.shape(n);
        let g = self.lanes.copy();
        let r = self.resident.as_ref().ok_or_else(|| anyhow!("geodesic fields not uploaded"))?;
        let gp = geo_params(r.dims, r.voxel_size, p, n);
        let b_seeds = g.upload(&seeds_component_major(&traced))?;
        let npts = if p.record { (p.max_steps as usize + 1) * 3 * n } else { 1 };
        let (points, si, sf) = (g.alloc::<f32>(npts)?, g.alloc::<i32>(3 * n)?, g.alloc::<f32>(4 * n)?);
        self.lanes.loaded()?;
        let c = self.lanes.compute();
        match (&r.textures, p.interp) {
            (Some(t), Interp::Texture) => c.launch(&self.trace_texture, shape, args![&t[0], &t[1], &t[2], &t[3], &t[4], &t[5], &r.labels, &b_seeds, Arg::structure(&gp), &points, &si, &sf])?,
            _ => c.launch(&self.trace_kernel, shape, args![&r.f4, &r.labels, &b_seeds, Arg::structure(&gp), &points, &si, &sf])?,
        }
        Ok(InFlight { n, order, shape, record: p.record, every: p.every, points, si, sf, done: self.lanes.computed()? })
    }

    /// A queued batch's fibres in the caller's order (`pipeline::Step::Unload`), on the copy
    /// queue: the summaries come back to the host (a few bytes a fibre) and the packing kernel
    /// writes each fibre's points straight to its place in the caller's order, so the points
    /// (12 bytes a step, gigabytes on a whole-brain run) are never permuted on the host.
    fn end(&mut self, f: InFlight) -> Result<FibreBatch> {
        self.lanes.after(f.done.as_ref())?;
        let g = self.lanes.copy().clone();
        let n = f.n;
        let traced_batch = FibreBatch::from_summaries(&g.download(&f.si)?, &g.download(&f.sf)?, n);
        let mut batch = match &f.order {
            Some(o) => {
                let mut ends = traced_batch.ends.clone();
                for (j, &i) in o.iter().enumerate() {
                    ends[i] = traced_batch.ends[j];
                }
                FibreBatch { ends, ..Default::default() }
            }
            None => traced_batch,
        };
        // One queue: the time so far is the trace's; the packing that follows counts as
        // transfer (it only prepares the download), as does all of the copy queue's.
        if !self.lanes.overlap() {
            let traced = g.take_timings()?;
            self.carry.add(&traced);
        }
        if f.record {
            let t = std::time::Instant::now();
            // Where each fibre's kept points start in the caller's order: `np_geo_pack`'s offsets
            // (traced order) and the batch's own.
            let offsets = super::offsets_of(&batch.ends, f.every);
            let total = offsets[n];
            let starts: Vec<u64> = match &f.order {
                Some(o) => o.iter().map(|&i| offsets[i] as u64).collect(),
                None => offsets[..n].iter().map(|&x| x as u64).collect(),
            };
            let b_packed = g.alloc::<f32>(3 * total)?;
            g.launch(&self.pack, f.shape, args![n as i32, f.every.clamp(1, i32::MAX as u32) as i32, &f.points, &f.si, &g.upload(&starts)?, &b_packed])?;
            let mut points = vec![[0.0f32; 3]; total];
            g.read(&b_packed, 0, bytemuck::cast_slice_mut(&mut points))?;
            (batch.offsets, batch.points) = (offsets, points);
            self.down_ms += t.elapsed().as_secs_f64() * 1e3;
        }
        let packing = g.take_timings()?;
        self.carry.transfer_ms += packing.kernel_ms + packing.transfer_ms;
        Ok(batch)
    }
}

/// A batch traced (or tracing) on the device, not yet brought back.
struct InFlight {
    n: usize,
    order: Option<Vec<usize>>,
    shape: Shape,
    record: bool,
    every: u32,
    points: Buf<f32>,
    si: Buf<i32>,
    sf: Buf<f32>,
    done: Option<Event>,
}

impl GeodesicKernels for GpuGeodesic {
    fn upload(&mut self, fields: &Fields) -> Result<()> {
        self.resident = None;
        // The staging slots are allocated while the fields are packed.
        self.gpu.stage_ahead();
        let f4 = self.gpu.upload(fields.packed4())?;
        let labels = self.gpu.upload(&fields.labels)?;
        self.resident = Some(Resident { dims: fields.dims, voxel_size: fields.voxel_size, f4, labels, textures: None });
        Ok(())
    }

    fn max_batch(&self, p: &TraceParams) -> usize {
        // Two batches are alive while overlapping: each gets half.
        let global = self.gpu.mem_total().max(1 << 28) / if self.lanes.overlap() { 2 } else { 1 };
        // One fibre's points live in two buffers; neither may pass the largest allocation.
        let per_points = if p.record { (p.max_steps as u64 + 1) * 12 } else { 1 };
        let by_alloc = (self.gpu.max_alloc() / per_points).max(1) as usize;
        batch_within(global / 3, p).min(by_alloc)
    }

    fn trace(&mut self, seeds: &[Seed], p: &TraceParams) -> Result<FibreBatch> {
        if seeds.is_empty() {
            return Ok(FibreBatch::default());
        }
        let f = self.begin(seeds, p)?;
        self.end(f)
    }

    /// Batch k+1's seeds go up and batch k-1's points come down (copy queue) while batch k
    /// traces (compute queue), in `pipeline::steps`' order.
    fn trace_batches(&mut self, seeds: &[Seed], p: &TraceParams, batch: usize, sink: &mut dyn FnMut(FibreBatch) -> Result<()>) -> Result<()> {
        let chunks: Vec<&[Seed]> = seeds.chunks(batch.max(1)).collect();
        let mut flying = std::collections::VecDeque::new();
        for step in pipeline::steps(chunks.len(), self.lanes.overlap()) {
            match step {
                Step::Load(k) => flying.push_back(self.begin(chunks[k], p)?),
                Step::Compute(_) => {}
                Step::Unload(_) => {
                    let f = flying.pop_front().expect("steps unload what they loaded");
                    sink(self.end(f)?)?;
                }
            }
        }
        Ok(())
    }

    fn take_timings(&mut self) -> Timings {
        if self.down_ms > 0.0 {
            crate::runtime::stages::record("points down", std::mem::take(&mut self.down_ms));
        }
        let mut t = std::mem::take(&mut self.carry);
        t.add(&self.lanes.take_timings().unwrap_or_default());
        t
    }
}
