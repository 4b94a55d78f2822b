//! The layer's own costs, for `neuroport bench layer`: launches per second of an empty kernel
//! (queued back to back, and each waited for — the old per-launch synchronisation), and
//! host<->device copy rates through the pinned staging against a pinned buffer's own rate.

use super::{args, Gpu, Shape};
use anyhow::Result;
use std::time::Instant;

#[derive(Debug, Clone, serde::Serialize)]
pub struct LayerRates {
    /// Empty-kernel launches per second, queued back to back, then one wait.
    pub launches_async_per_s: f64,
    /// Launch + wait per kernel (what every launch cost before the layer queued them).
    pub launches_sync_per_s: f64,
    /// GB/s of `upload`/`download` of ordinary (pageable) memory through the staging slots.
    pub upload_gb_s: f64,
    pub download_gb_s: f64,
    /// GB/s of copies from/to pinned memory directly.
    pub pinned_up_gb_s: f64,
    pub pinned_down_gb_s: f64,
}

fn best_of<F: FnMut() -> Result<()>>(reps: usize, mut f: F) -> Result<f64> {
    f()?;
    let mut best = f64::INFINITY;
    for _ in 0..reps {
        let t = Instant::now();
        f()?;
        best = best.min(t.elapsed().as_secs_f64());
    }
    Ok(best)
}

pub fn measure(gpu: &Gpu, launches: usize, bytes: usize) -> Result<LayerRates> {
    // A host buffer, its copy back and a pinned one.
    crate::runtime::memory::room_for(&format!("--bytes {bytes}"), bytes, 3)?;
    let k = gpu.kernel("layer", super::selftest::SOURCE, "layer_nop")?;
    let a = best_of(3, || {
        for _ in 0..launches {
            gpu.launch(&k, Shape::items(1), args![1i32])?;
        }
        gpu.finish()
    })?;
    let s = best_of(3, || {
        for _ in 0..launches / 10 {
            gpu.launch(&k, Shape::items(1), args![1i32])?;
            gpu.finish()?;
        }
        Ok(())
    })?;
    let n = bytes / 4;
    let host = vec![1.0f32; n];
    let mut back = vec![0.0f32; n];
    let b = gpu.alloc::<f32>(n)?;
    let up = best_of(3, || {
        gpu.write(&b, 0, &host)?;
        gpu.finish()
    })?;
    let down = best_of(3, || gpu.read(&b, 0, &mut back))?;
    let mut pin = gpu.pinned::<f32>(n)?;
    let pup = best_of(3, || {
        gpu.upload_from(&pin, 0..n, &b, 0)?;
        gpu.finish()
    })?;
    let pdown = best_of(3, || {
        gpu.download_into(&b, 0, &mut pin, 0..n)?;
        gpu.finish()
    })?;
    gpu.take_timings()?;
    let gb = bytes as f64 / 1e9;
    Ok(LayerRates {
        launches_async_per_s: launches as f64 / a,
        launches_sync_per_s: (launches / 10) as f64 / s,
        upload_gb_s: gb / up,
        download_gb_s: gb / down,
        pinned_up_gb_s: gb / pup,
        pinned_down_gb_s: gb / pdown,
    })
}
