//! `geodesic-prep`: tensor fit and the geodesic tracker's metric preparation per million voxels
//! (001 Sec. 5.2 gives ~50 ms per million voxels for the preparation on a GTX 260).

use crate::runtime::columns::Columns;
use super::published::text::{GEODESIC_PREP_DEVICE, GEODESIC_PREP_MS_PER_MVOX};
use super::{add_speedups, timed_median, PlotSpec, Report, Row, RunCtx, Scale, Target, ALL_CORES, ONE_THREAD};
use crate::dti::{self, Design, Frame};
use crate::synth;
use anyhow::Result;

pub struct GeodesicPrep;

impl Target for GeodesicPrep {
    fn id(&self) -> &'static str {
        "geodesic-prep"
    }
    fn title(&self) -> &'static str {
        "Tensor fit and geodesic metric preparation, ms per million voxels (001 Sec. 5.2)"
    }
    fn plot(&self) -> PlotSpec {
        PlotSpec { x_label: "stage".into(), y_label: "time per million voxels (ms)".into(), log_x: false, log_y: true, metric: None }
    }
    fn run(&self, ctx: &RunCtx) -> Result<Report> {
        let dims = match ctx.scale {
            Scale::Quick => [48, 48, 24],
            Scale::Paper => [128, 128, 64],
        };
        let nvox: usize = dims.iter().product();
        let mvox = nvox as f64 / 1e6;
        let ph = synth::phantom::brain_like(dims, [2.0, 2.0, 2.0], ctx.seed);
        let grads = synth::gradient_table(6, 60, 1000.0);
        let dwi = synth::simulate_dwi(&ph.tensor, 1000.0, &grads, 30.0, ctx.seed);
        let design = Design::new(&grads)?;
        let frame = Frame::of(&ph.geom);
        let substituted = format!(
            "brain-like phantom {}x{}x{} ({} voxels, {} in the head), 6 b=0 + 60 directions at b=1000, SNR 30; per million grid voxels",
            dims[0],
            dims[1],
            dims[2],
            nvox,
            ph.mask.iter().filter(|&&m| m != 0).count()
        );
        let mut devices = vec![(ctx.one_thread_cpu()?, ONE_THREAD.to_string())];
        for d in ctx.devices {
            devices.push((d.clone(), if d.is_cpu() { ALL_CORES.to_string() } else { String::new() }));
        }
        let mut rows = Vec::new();
        for (dev, variant) in &devices {
            ctx.say(&format!("geodesic-prep on {}", dev.label()));
            let mut k = dti::kernels(dev)?;
            let (fit_ms, (fit_t, fit)) = timed_median(ctx.repeats, || {
                let f = k.fit(Columns::whole(&dwi, design.ngrad), &ph.mask, &design)?;
                let t = k.take_timings();
                Ok((t.kernel_ms, (t, f)))
            })?;
            let (prep_ms, prep_t) = timed_median(ctx.repeats, || {
                k.metric(&fit.tensor, dims, frame)?;
                let t = k.take_timings();
                Ok((t.kernel_ms, t))
            })?;
            let info = dev.info();
            let row = |config: &str, ms: f64| Row::new("geodesic-prep", config, info, variant.clone(), "time per million voxels", "ms", ms / mvox).substituted(substituted.clone());
            rows.push(row("preparation (metric fields)", prep_ms).published(Some(GEODESIC_PREP_MS_PER_MVOX), GEODESIC_PREP_DEVICE).split(&prep_t));
            rows.push(row("tensor fit (WLS)", fit_ms).split(&fit_t));
            let mut both = fit_t;
            both.add(&prep_t);
            rows.push(row("fit + preparation", fit_ms + prep_ms).split(&both));
        }
        add_speedups(&mut rows);
        Ok(self.report(
            rows,
            vec![
                "Times are device kernel times (OpenCL profiling events, CUDA events; wall clock on the CPU), median of the repeats after one warm-up; transfers are listed apart.".into(),
                "The paper's 50 ms covers inverting the tensors and differentiating the inverse (our 'preparation'); it did not time a tensor fit.".into(),
            ],
        ))
    }
}
