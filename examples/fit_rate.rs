//! Single-thread CPU tensor-fit rate on a full-mask synthetic volume (developer tool; the
//! harness's geodesic-prep table is the reported figure).
use neuroport::dti::{self, Design};
use neuroport::runtime::cpu::Cpu;
use neuroport::runtime::Device;
use neuroport::synth;
use std::sync::Arc;

fn main() -> anyhow::Result<()> {
    let nvox = 100_000;
    let mut r = synth::rng(1);
    let mut tensor = vec![0.0f32; 6 * nvox];
    for v in 0..nvox {
        let t = synth::random_tensor(&mut r);
        for e in 0..6 {
            tensor[e * nvox + v] = t[e] as f32;
        }
    }
    let g = synth::gradient_table(6, 60, 1000.0);
    let dwi = synth::simulate_dwi(&tensor, 1000.0, &g, 30.0, 2);
    let design = Design::new(&g)?;
    let dev = Device::Cpu(Arc::new(Cpu::new(Some(1))?));
    let mut k = dti::kernels(&dev)?;
    let mask = vec![1u8; nvox];
    let start = cpu_time();
    let wall = std::time::Instant::now();
    k.fit(&dwi, &mask, &design)?;
    let (c, w) = (cpu_time() - start, wall.elapsed().as_secs_f64());
    println!("fit: {nvox} voxels, {:.0} voxels/s by CPU time ({:.0} by wall clock)", nvox as f64 / c, nvox as f64 / w);
    Ok(())
}

fn cpu_time() -> f64 {
    let s = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let f: Vec<&str> = s.rsplit(')').next().unwrap_or("").split_whitespace().collect();
    let ticks: f64 = f.get(11).and_then(|x| x.parse().ok()).unwrap_or(0.0);
    ticks / 100.0
}
