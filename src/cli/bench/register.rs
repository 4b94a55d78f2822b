//! `neuroport bench register`: the registration cost kernel (002) on every selected device:
//! evaluations per second, one map per call (what a lone simplex step costs) and eight per call
//! (a lockstep round), wall time and device time per evaluation, and the image bytes per second
//! the kernel time implies (one pass over both images: 8 bytes per fixed voxel), to set against
//! the device's memory bandwidth. Images: the T1 phantom and its copy moved by airwc (a)'s
//! rigid transform, at --dims (default 002's 240x256x176 at 1 mm).

use super::Runs;
use crate::cli::Ctx;
use anyhow::{bail, Result};
use neuroport::register::gpu::{Sampling, MAX_MAPS};
use neuroport::register::{self, affine, kernels_with, params, voxel_map_f32, CostKind, CostSpec};
use neuroport::runtime::timing::median;
use neuroport::synth::t1::{centred_geometry, render, Head};
use neuroport::volume::Volume;
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// Grid of both images, x,y,z (1 mm voxels)
    #[arg(long, default_value = "240,256,176", value_delimiter = ',')]
    dims: Vec<usize>,
    /// Evaluations per timed run
    #[arg(long, default_value_t = 200)]
    evals: usize,
    /// Costs to time, comma-separated (default: all five)
    #[arg(long, value_enum, value_delimiter = ',')]
    costs: Vec<CostKind>,
    #[command(flatten)]
    runs: Runs,
}

struct Measured {
    wall_ms: f64,
    kernel_ms: f64,
    batched_wall_ms: f64,
}

pub fn run(ctx: &Ctx, a: Args) -> Result<i32> {
    neuroport::repro::check_distinct("--costs", &a.costs, |c| c.name().into())?;
    let &[x, y, z] = &a.dims[..] else { bail!("--dims takes three sizes x,y,z, not {:?}", a.dims) };
    if x < 2 || y < 2 || z < 2 {
        bail!("--dims: every axis needs at least 2 voxels, got {x},{y},{z}");
    }
    neuroport::repro::check_repeats(a.runs.repeats)?;
    // The fixed and moving heads and their pyramids in float32 (the renderer's scratch too).
    neuroport::runtime::memory::room_for(&format!("--dims {x},{y},{z}"), x.saturating_mul(y).saturating_mul(z), 64)?;
    if a.evals == 0 {
        bail!("--evals must be at least 1");
    }
    let g = centred_geometry([x, y, z], [1.0; 3]);
    let fixed = render(&Head::subject(0), &g, &affine::IDENTITY, 0.02, a.runs.seed).volume;
    let moved = params::matrix(&[7.0, -11.0, 5.0, 8.0, -6.0, 10.0], [0.0; 3]);
    let moving = render(&Head::subject(0), &g, &moved, 0.02, a.runs.seed + 1).volume;
    // The map at the truth and seven simplex-like neighbours of it.
    let maps: Vec<[f32; 12]> = (0..MAX_MAPS)
        .map(|i| {
            let mut p = [0.0f64; 6];
            if i > 0 {
                p[(i - 1) % 6] = if i % 2 == 0 { 1.0 } else { -1.0 };
            }
            voxel_map_f32(&affine::mul(&affine::inverse(&moved), &params::matrix(&p, [0.0; 3])), &g, &moving.geom)
        })
        .collect();
    let nvox = fixed.nvox() as f64;
    let devices = ctx.inventory().select(&ctx.backend_or_all(), true)?;
    println!("registration cost, {x}x{y}x{z} fixed and moving, {} evaluations per run, {}", a.evals, neuroport::repro::median_of(a.runs.repeats));
    let mut json = Vec::new();
    for dev in &devices {
        let samplings: &[Sampling] = if dev.is_cpu() { &[Sampling::InKernel] } else { &[Sampling::InKernel, Sampling::Texture] };
        for &sampling in samplings {
            let mut k = match kernels_with(dev, sampling) {
                Ok(k) => k,
                Err(e) => {
                    eprintln!("  {} [{sampling:?}]: not run ({e:#})", dev.label());
                    continue;
                }
            };
            for kind in if a.costs.is_empty() { CostKind::ALL.to_vec() } else { a.costs.clone() } {
                eprintln!("  bench register: {} {} on {}", kind.name(), k.variant(), dev.label());
                // On a pool thread for the CPU, as `register` runs its evaluations.
                let m = register::on_pool(k.pool(), || measure(k.as_mut(), &fixed, &moving, kind, &maps, a.evals, a.runs.repeats))?;
                let gbs = 8.0 * nvox / (m.kernel_ms * 1e-3) / 1e9;
                println!(
                    "{:<40} {:<9} {:<3}  {:>8.4} ms/eval wall ({:>7.0} evals/s), kernels {:>8.4} ms ({:>7.1} GB/s of image data), {} per call {:>8.4} ms/eval",
                    dev.label(),
                    k.variant(),
                    kind.name(),
                    m.wall_ms,
                    1e3 / m.wall_ms,
                    m.kernel_ms,
                    gbs,
                    MAX_MAPS,
                    m.batched_wall_ms
                );
                json.push(serde_json::json!({ "device": dev.info(), "variant": k.variant(), "cost": kind.name(), "dims": [x, y, z], "wall_ms_per_eval": m.wall_ms, "kernel_ms_per_eval": m.kernel_ms, "batched_wall_ms_per_eval": m.batched_wall_ms, "image_gb_per_s": gbs }));
            }
        }
    }
    if a.runs.json {
        println!("{}", serde_json::to_string_pretty(&json)?);
    }
    Ok(0)
}

fn measure(k: &mut dyn neuroport::register::CostKernels, fixed: &Volume, moving: &Volume, kind: CostKind, maps: &[[f32; 12]], n: usize, repeats: usize) -> Result<Measured> {
    k.load(fixed, moving, &CostSpec::new(kind, fixed.as_flat(), moving.as_flat())?)?;
    k.evaluate_many(maps)?; // warm-up
    k.take_timings();
    let (mut wall, mut kern, mut batched) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..repeats {
        let t0 = Instant::now();
        for i in 0..n {
            k.evaluate(&maps[i % maps.len()])?;
        }
        wall.push(t0.elapsed().as_secs_f64() * 1e3 / n as f64);
        kern.push(k.take_timings().kernel_ms / n as f64);
        let rounds = n.div_ceil(maps.len());
        let t0 = Instant::now();
        for _ in 0..rounds {
            k.evaluate_many(maps)?;
        }
        batched.push(t0.elapsed().as_secs_f64() * 1e3 / (rounds * maps.len()) as f64);
        k.take_timings();
    }
    Ok(Measured { wall_ms: median(&mut wall), kernel_ms: median(&mut kern), batched_wall_ms: median(&mut batched) })
}
