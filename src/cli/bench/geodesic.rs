//! `neuroport bench geodesic`: RK2 steps per second on every selected device and interpolation
//! (the long synthetic volume of 001 Sec. 5, no fibre leaving it). Times are device-event kernel
//! times, median of repeats after a warm-up.

use crate::cli::Ctx;
use anyhow::Result;
use neuroport::geodesic::bench::{bytes_per_step, long_fields, steps_per_second};
use neuroport::geodesic::{Interp, Method, TraceParams};
use neuroport::io::table::aligned;

#[derive(clap::Args)]
pub struct GeodesicArgs {
    /// Fibres traced on GPU devices (CPU devices trace --cpu-fibres)
    #[arg(long, default_value_t = 1_000_000)]
    fibres: usize,
    /// Fibres on CPU devices (native and OpenCL CPUs), which are orders of magnitude slower;
    /// steps/s is a rate, so fewer fibres measure it as well (at most --fibres)
    #[arg(long, default_value_t = 65_536)]
    cpu_fibres: usize,
    /// Steps per fibre at most (fibres that end sooner are counted as stopped early)
    #[arg(long, default_value_t = 1000)]
    steps: u32,
    /// Step h in voxels
    #[arg(long, default_value_t = 0.2)]
    step: f32,
    /// Volume size x,y,z
    #[arg(long, default_value = "1024,64,64", value_delimiter = ',')]
    dims: Vec<usize>,
    /// Integration of the geodesic equation
    #[arg(long, value_enum, default_value_t = Method::Rk2)]
    method: Method,
    /// Only this interpolation (default: both on GPU backends)
    #[arg(long, value_enum)]
    interp: Option<Interp>,
    /// Also write every point (as tracking does); off, only the per-fibre summaries are written
    #[arg(long)]
    points: bool,
    #[command(flatten)]
    runs: super::Runs,
}

pub fn geodesic(ctx: &Ctx, a: GeodesicArgs) -> Result<i32> {
    // Sizes that measure nothing (a NaN or zero rate in the table) are refused, as the other
    // benches refuse theirs.
    if a.fibres == 0 || a.cpu_fibres == 0 || a.steps == 0 || a.runs.repeats == 0 {
        anyhow::bail!("--fibres, --cpu-fibres, --steps and --repeats must be positive");
    }
    if !(a.step > 0.0 && a.step.is_finite()) {
        anyhow::bail!("--step must be a positive number of voxels, not {}", a.step);
    }
    let devices = ctx.inventory().select(&ctx.backend_or_all(), true)?;
    let [x, y, z] = a.dims[..] else { anyhow::bail!("--dims takes three sizes x,y,z, not {:?}", a.dims) };
    let dims = [x, y, z];
    let fields = long_fields(dims)?;
    let mut rows = Vec::new();
    let mut json = Vec::new();
    for dev in &devices {
        let interps: Vec<Interp> = match (dev.is_cpu(), a.interp) {
            (true, _) => vec![Interp::Kernel],
            (false, Some(i)) => vec![i],
            (false, None) if dev.info().image_support => vec![Interp::Texture, Interp::Kernel],
            (false, None) => vec![Interp::Kernel],
        };
        for interp in interps {
            let p = TraceParams { step: a.step, max_steps: a.steps, method: a.method, interp, record: a.points, ..Default::default() };
            let n = if dev.info().is_gpu { a.fibres } else { a.cpu_fibres.min(a.fibres) };
            // Progress on stderr: a full run takes minutes on CPUs.
            eprintln!(
                "  bench geodesic on {} [{}]: {n} fibres x {} steps, {} timed runs {}",
                dev.label(),
                if dev.is_cpu() { "float64 reference" } else { interp.label() },
                a.steps,
                a.runs.repeats,
                // as geodesic::bench::steps_per_second decides: the native CPU compiles nothing
                if dev.is_cpu() { "(no warm-up on the native CPU)" } else { "after a warm-up" }
            );
            let m = steps_per_second(dev, &fields, n, &p, a.runs.repeats, a.runs.seed)?;
            eprintln!("    {:.3e} steps/s ({:.1} ms kernel)", m.steps_per_s(), m.timings.kernel_ms);
            let bps = bytes_per_step(&p);
            let gbs = m.steps as f64 * bps as f64 / (m.timings.kernel_ms * 1e-3) / 1e9;
            let label = if dev.is_cpu() { "float64 reference".to_string() } else { interp.label().to_string() };
            rows.push(vec![
                dev.label(),
                label.clone(),
                m.fibres.to_string(),
                m.steps.to_string(),
                format!("{:.2}", m.timings.kernel_ms),
                format!("{:.3e}", m.steps_per_s()),
                bps.to_string(),
                format!("{gbs:.1}"),
                m.stopped_early.to_string(),
            ]);
            json.push(
                serde_json::json!({ "device": dev.info(), "interp": label, "method": a.method.name(), "measured": m, "steps_per_s": m.steps_per_s(), "bytes_per_step": bps, "effective_gb_s": gbs }),
            );
        }
    }
    if a.runs.json {
        println!("{}", serde_json::to_string_pretty(&json)?);
    } else {
        println!(
            "geodesic {} steps/s: {} fibres ({} on CPUs) x {} steps, h = {}, {:?} volume, points {}; kernel time, {} after a warm-up (none on the native CPU)",
            a.method.name(),
            a.fibres,
            a.cpu_fibres.min(a.fibres),
            a.steps,
            a.step,
            dims,
            if a.points { "written" } else { "not written" },
            neuroport::repro::median_of(a.runs.repeats)
        );
        print!("{}", aligned(&["device", "interpolation", "fibres", "steps", "kernel ms", "steps/s", "bytes/step", "effective GB/s", "stopped early"], &rows));
    }
    Ok(0)
}
