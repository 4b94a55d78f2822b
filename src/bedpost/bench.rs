//! Speed of the sampler: voxel-loops per second of each kernel layout on one device, on
//! simulated white matter (4 b=0 + 64 directions at b = 1000, SNR 30) with chains started from
//! the tensor fit as `neuroport bedpost` starts them. Times are device-event kernel times (wall
//! clock on the cpu backend) of full `SEGMENT`-loop launches, median of the repeats after a
//! warm-up launch. Used by `neuroport bench bedpost` and the device script.

use crate::runtime::columns::Columns;
use super::{init, kernels, sample, sim, ChainState, Config, Table, Variant};
use crate::dti::{self, Design};
use crate::runtime::{timing::median, Device, Inventory};
use crate::synth;
use anyhow::Result;
use serde::Serialize;

/// Voxels x loops of paper 003's Table III, dataset 1 (205,082 voxels, 500 + 50 x 2 loops).
pub const TABLE3_VOXEL_LOOPS: f64 = 205_082.0 * 600.0;

/// A benchmark problem: data, table and starting states of `nvox` voxels.
pub struct Problem {
    pub table: Table,
    pub y: Vec<f32>,
    pub init: ChainState,
}

/// `nvox` simulated white-matter voxels with chains initialised from a CPU tensor fit.
pub fn problem(nvox: usize, seed: u64) -> Result<Problem> {
    let g = synth::gradient_table(4, 64, 1000.0);
    let table = Table::new(&g)?;
    let truths = sim::white_matter(nvox, seed);
    let y = sim::simulate(&truths, &g, 30.0, seed ^ 0x5EED);
    // the tensor fit wants volumes x voxels, which is what `y` already is
    let cpu = Inventory::discover(None).open_cpu()?;
    let design = Design::new(&g)?;
    let fit = dti::kernels(&cpu)?.fit(Columns::whole(&y, design.ngrad), &vec![1u8; nvox], &design)?;
    let voxels: Vec<usize> = (0..nvox).collect();
    let init = init::from_tensors(&fit, &y, &table, &voxels, seed);
    Ok(Problem { table, y, init })
}

#[derive(Clone, Debug, Serialize)]
pub struct BenchRow {
    pub device: String,
    pub device_name: String,
    pub variant: String,
    pub voxels: usize,
    pub ndir: usize,
    pub loops: usize,
    /// Medians over the repeats, milliseconds.
    pub kernel_ms: f64,
    pub transfer_ms: f64,
    pub voxel_loops_per_s: f64,
    /// Table III dataset 1 at this rate (kernel time only), seconds.
    pub table3_s: f64,
    /// CPU backend: voxel-samples (voxel-loops) per second per thread.
    pub per_core: Option<f64>,
}

/// Times `variant` (ignored on the cpu backend) over `loops` loops of every chain of `p`.
pub fn measure(dev: &Device, variant: Variant, p: &Problem, loops: usize, repeats: usize) -> Result<BenchRow> {
    let cfg = Config::default();
    let sched = cfg.schedule();
    let mut k = kernels(dev, Some(variant))?;
    let nvox = p.init.nvox();
    // warm-up: program build and first touch, one launch on a few voxels
    let few = nvox.min(256);
    sample(k.as_mut(), &p.table, &super::Columns::whole(&p.y, p.table.ndir).part(0..few).to_vec(), &p.init.cut(0..few), &sched, super::SEGMENT.min(loops), None, &crate::io::progress::Progress::hidden())?;
    k.take_timings();
    let (mut kern, mut xfer) = (Vec::new(), Vec::new());
    for _ in 0..repeats.max(1) {
        sample(k.as_mut(), &p.table, &p.y, &p.init, &sched, loops, None, &crate::io::progress::Progress::hidden())?;
        let t = k.take_timings();
        kern.push(t.kernel_ms);
        xfer.push(t.transfer_ms);
    }
    let kernel_ms = median(&mut kern);
    let rate = (nvox * loops) as f64 / (kernel_ms * 1e-3);
    let info = dev.info();
    Ok(BenchRow {
        device: info.spec.clone(),
        device_name: info.name.clone(),
        variant: k.variant().to_string(),
        voxels: nvox,
        ndir: p.table.ndir,
        loops,
        kernel_ms,
        transfer_ms: median(&mut xfer),
        voxel_loops_per_s: rate,
        table3_s: TABLE3_VOXEL_LOOPS / rate,
        per_core: dev.is_cpu().then(|| rate / info.compute_units.max(1) as f64),
    })
}

pub fn table(rows: &[BenchRow]) -> String {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                format!("{} ({})", r.device, r.device_name),
                r.variant.clone(),
                r.voxels.to_string(),
                r.loops.to_string(),
                format!("{:.1}", r.kernel_ms),
                format!("{:.1}", r.transfer_ms),
                format!("{:.3e}", r.voxel_loops_per_s),
                format!("{:.3}", r.table3_s),
                r.per_core.map(|c| format!("{c:.3e}")).unwrap_or_default(),
            ]
        })
        .collect();
    crate::io::table::aligned(
        &["device", "variant", "voxels", "loops", "kernel ms", "transfer ms", "voxel-loops/s", "Table III ds1 s", "per core /s"],
        &cells,
    )
}
