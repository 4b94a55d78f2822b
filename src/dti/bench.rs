//! Speed of the DTI kernels on one device: tensor fit, scalar maps, metric preparation (G = D^-1
//! and its derivatives) and the sharpened metric, on a synthetic volume. Times come from device
//! events (`take_timings`) after a warm-up run; each figure is the median of `repeats` runs.
//! Used by `neuroport bench dti` and `cargo bench --bench dti`.

use crate::runtime::columns::Columns;
use super::{kernels, Design, Frame};
use crate::runtime::{timing::median, Device, Timings};
use crate::synth;
use anyhow::Result;
use serde::Serialize;

/// One stage on one device.
#[derive(Clone, Debug, Serialize)]
pub struct BenchRow {
    pub device: String,
    pub stage: String,
    pub voxels: usize,
    /// CPU threads (cpu backend) or compute units (others).
    pub units: u32,
    /// Medians over the repeats, milliseconds.
    pub kernel_ms: f64,
    pub transfer_ms: f64,
    pub voxels_per_s: f64,
    pub ms_per_mvox: f64,
    /// Kernel throughput divided by the CPU threads; None off the CPU.
    pub voxels_per_s_per_core: Option<f64>,
}

/// The grid benchmarked for about `voxels` voxels: 64 x 64 x as many slices as needed.
pub fn grid(voxels: usize) -> [usize; 3] {
    [64, 64, voxels.div_ceil(64 * 64).max(1)]
}

/// Times every DTI stage on `dev` over about `voxels` voxels (33 volumes: 3 b=0 and 30
/// directions at b = 1000, SNR 30), `repeats` times after one warm-up.
pub fn measure(dev: &Device, voxels: usize, repeats: usize, seed: u64) -> Result<Vec<BenchRow>> {
    // ~33 volumes of float32 DWI, the tensor and its outputs: ~260 bytes a voxel.
    crate::runtime::memory::room_for(&format!("--voxels {voxels}"), voxels, 260)?;
    let dims = grid(voxels);
    let nvox: usize = dims.iter().product();
    let tensor = synth::random_tensor_field(nvox, seed);
    let g = synth::gradient_table(3, 30, 1000.0);
    let dwi = synth::simulate_dwi(&tensor, 1000.0, &g, 30.0, seed);
    let design = Design::new(&g)?;
    let mask = vec![1u8; nvox];
    let frame = Frame { flip_x: true, inv_voxel: [0.5; 3] };
    let mut k = kernels(dev)?;

    let stages = ["fit", "scalars", "metric", "sharpen"];
    let mut samples: Vec<Vec<Timings>> = vec![Vec::new(); stages.len()];
    for rep in 0..=repeats.max(1) {
        let fit = k.fit(Columns::whole(&dwi, design.ngrad), &mask, &design)?;
        let t_fit = k.take_timings();
        k.scalars(&fit.tensor)?;
        let t_sc = k.take_timings();
        k.metric(&fit.tensor, dims, frame)?;
        let t_me = k.take_timings();
        k.sharpen(&fit.tensor, 3.0)?;
        let t_sh = k.take_timings();
        if rep > 0 {
            // rep 0 is the warm-up: program builds, first-touch allocations, caches
            for (s, t) in samples.iter_mut().zip([t_fit, t_sc, t_me, t_sh]) {
                s.push(t);
            }
        }
    }
    let info = dev.info();
    let row = |stage: &str, ts: &[Timings]| {
        let kernel_ms = median(&mut ts.iter().map(|t| t.kernel_ms).collect::<Vec<_>>());
        let transfer_ms = median(&mut ts.iter().map(|t| t.transfer_ms).collect::<Vec<_>>());
        let vps = nvox as f64 / (kernel_ms * 1e-3);
        BenchRow {
            device: dev.label(),
            stage: stage.into(),
            voxels: nvox,
            units: info.compute_units,
            kernel_ms,
            transfer_ms,
            voxels_per_s: vps,
            ms_per_mvox: kernel_ms * 1e6 / nvox as f64,
            voxels_per_s_per_core: if dev.is_cpu() { Some(vps / info.compute_units.max(1) as f64) } else { None },
        }
    };
    let mut rows: Vec<BenchRow> = stages.iter().zip(&samples).map(|(s, ts)| row(s, ts)).collect();
    // the tensor preparation of paper 001 Sec. 5.2: fit plus metric fields, per repeat
    let prep: Vec<Timings> = samples[0]
        .iter()
        .zip(&samples[2])
        .map(|(a, b)| {
            let mut t = *a;
            t.add(b);
            t
        })
        .collect();
    rows.push(row("fit+metric", &prep));
    Ok(rows)
}

/// The rows as a terminal table.
pub fn table(rows: &[BenchRow]) -> String {
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.device.clone(),
                r.stage.clone(),
                r.voxels.to_string(),
                format!("{:.2}", r.kernel_ms),
                format!("{:.2}", r.transfer_ms),
                format!("{:.3e}", r.voxels_per_s),
                format!("{:.2}", r.ms_per_mvox),
                r.voxels_per_s_per_core.map(|v| format!("{v:.3e}")).unwrap_or_default(),
            ]
        })
        .collect();
    crate::io::table::aligned(&["device", "stage", "voxels", "kernel ms", "transfer ms", "voxels/s", "ms/Mvox", "voxels/s/core"], &body)
}
