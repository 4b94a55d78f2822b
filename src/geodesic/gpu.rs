//! Geodesic tracking on a GPU (OpenCL or CUDA, through `runtime::gpu`): entry points in
//! `cl/geodesic.cl`, integrator in `cl/common/geodesic.h`. The texture variant reads six float4
//! 3-D textures (linear filtering, clamped) made on the device from the fields buffer the first
//! time it is used, and freed with the fields.

use super::{batch_within, geo_params, seeds_component_major, FibreBatch, Fields, GeodesicKernels, Interp, Seed, TraceParams, GROUPS};
use crate::runtime::gpu::{args, Arg, Buf, Gpu, Kernel, Shape, Texture3d};
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
    trace_kernel: Kernel,
    trace_texture: Kernel,
    pack: Kernel,
    resident: Option<Resident>,
    /// Time already taken off the queue, with the on-device packing of points counted as
    /// transfer (it only prepares the download).
    carry: Timings,
}

impl GpuGeodesic {
    pub fn new(gpu: Gpu) -> Result<GpuGeodesic> {
        let k = |name| gpu.kernel("geodesic", SOURCE, name);
        Ok(GpuGeodesic { trace_kernel: k("geodesic_trace_kernel")?, trace_texture: k("geodesic_trace_texture")?, pack: k("geodesic_pack")?, gpu, resident: None, carry: Timings::default() })
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

    /// Traces `seeds` in the spatial order of [`super::order`] and returns them in the caller's:
    /// the summaries are put back on the host (a few bytes a fibre) and the packing kernel writes
    /// each fibre's points straight to its place in the caller's order, so the points (12 bytes a
    /// step, gigabytes on a whole-brain run) are never permuted on the host.
    fn trace_ordered(&mut self, seeds: &[Seed], p: &TraceParams) -> Result<FibreBatch> {
        if p.interp == Interp::Texture {
            self.ensure_textures()?;
        }
        let n = seeds.len();
        if n == 0 {
            return Ok(FibreBatch::default());
        }
        let mut host = Timings::default();
        let order = super::order::spatial_order(seeds, &mut host);
        let traced: std::borrow::Cow<[Seed]> = match &order {
            Some(o) => o.iter().map(|&i| seeds[i]).collect::<Vec<_>>().into(),
            None => seeds.into(),
        };
        let shape = self.shape(n);
        let g = &self.gpu;
        let r = self.resident.as_ref().ok_or_else(|| anyhow!("geodesic fields not uploaded"))?;
        let gp = geo_params(r.dims, r.voxel_size, p, n);
        let b_seeds = g.upload(&seeds_component_major(&traced))?;
        let npts = if p.record { (p.max_steps as usize + 1) * 3 * n } else { 1 };
        let (b_points, b_si, b_sf) = (g.alloc::<f32>(npts)?, g.alloc::<i32>(3 * n)?, g.alloc::<f32>(4 * n)?);
        match (&r.textures, p.interp) {
            (Some(t), Interp::Texture) => g.launch(&self.trace_texture, shape, args![&t[0], &t[1], &t[2], &t[3], &t[4], &t[5], &r.labels, &b_seeds, Arg::structure(&gp), &b_points, &b_si, &b_sf])?,
            _ => g.launch(&self.trace_kernel, shape, args![&r.f4, &r.labels, &b_seeds, Arg::structure(&gp), &b_points, &b_si, &b_sf])?,
        }
        let traced_batch = FibreBatch::from_summaries(&g.download(&b_si)?, &g.download(&b_sf)?, n);
        let mut batch = match &order {
            Some(o) => {
                let mut ends = traced_batch.ends.clone();
                for (j, &i) in o.iter().enumerate() {
                    ends[i] = traced_batch.ends[j];
                }
                FibreBatch { ends, ..Default::default() }
            }
            None => traced_batch,
        };
        self.carry.host_ms += host.host_ms;
        if !p.record {
            return Ok(batch);
        }
        let (caller_offsets, total) = batch.pack_plan();
        let offsets: Vec<u64> = match &order {
            Some(o) => o.iter().map(|&i| caller_offsets[i]).collect(),
            None => caller_offsets,
        };
        let b_packed = g.alloc::<f32>(3 * total)?;
        // The trace's time so far is the kernel's; the packing that follows counts as transfer.
        let traced = g.take_timings()?;
        g.launch(&self.pack, shape, args![n as i32, &b_points, &b_si, &g.upload(&offsets)?, &b_packed])?;
        let mut points = vec![[0.0f32; 3]; total];
        g.read(&b_packed, 0, bytemuck::cast_slice_mut(&mut points))?;
        let packing = g.take_timings()?;
        self.carry.add(&traced);
        self.carry.transfer_ms += packing.kernel_ms + packing.transfer_ms;
        batch.set_points(points);
        Ok(batch)
    }
}

impl GeodesicKernels for GpuGeodesic {
    fn upload(&mut self, fields: &Fields) -> Result<()> {
        self.resident = None;
        let f4 = self.gpu.upload(&fields.packed4())?;
        let labels = self.gpu.upload(&fields.labels)?;
        self.resident = Some(Resident { dims: fields.dims, voxel_size: fields.voxel_size, f4, labels, textures: None });
        Ok(())
    }

    fn max_batch(&self, p: &TraceParams) -> usize {
        let global = self.gpu.mem_total().max(1 << 28);
        // One fibre's points live in two buffers; neither may pass the largest allocation.
        let per_points = if p.record { (p.max_steps as u64 + 1) * 12 } else { 1 };
        let by_alloc = (self.gpu.max_alloc() / per_points).max(1) as usize;
        batch_within(global / 3, p).min(by_alloc)
    }

    fn trace(&mut self, seeds: &[Seed], p: &TraceParams) -> Result<FibreBatch> {
        self.trace_ordered(seeds, p)
    }

    fn take_timings(&mut self) -> Timings {
        let mut t = std::mem::take(&mut self.carry);
        t.add(&self.gpu.take_timings().unwrap_or_default());
        t
    }
}
