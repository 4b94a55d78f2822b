//! Probabilistic streamlining conformance (`neuroport check`): `probtrack[device compaction]`
//! and `probtrack[host compaction]` trace fresh random samples (the crossing phantom with a
//! random spread, jitter on, a waypoint and a target) on the device in the paper's segment
//! schedule and on the CPU in one segment. The step is exact IEEE arithmetic on both sides
//! (`cl/common/probtrack.h`), so the tolerance is zero: the error is the largest relative
//! difference of the visitation map, and infinite if any streamline's length, kept status or
//! target count differs, or a path was lost.

use super::{kernels, phantom, Compaction, Config, Tracks};
use crate::check::{max_rel_err, CheckRow};
use crate::runtime::Device;
use anyhow::Result;

fn error(a: &Tracks, b: &Tracks) -> f64 {
    if a.finished != b.finished || a.kept != b.kept || a.lengths != b.lengths || a.seed_targets != b.seed_targets || a.total_steps != b.total_steps {
        return f64::INFINITY;
    }
    let f = |t: &Tracks| t.visits.iter().map(|&c| c as f32).collect::<Vec<f32>>();
    max_rel_err(&f(a), &f(b))
}

pub fn run(dev: &Device, reference: &Device, seed: u64) -> Result<Vec<CheckRow>> {
    let t = phantom::crossing();
    let spread = 5.0 + (seed % 20) as f64;
    let a = t.angles(4, spread, seed);
    let mut f = t.field(&a);
    let n = t.geom.nvox();
    let nx = t.geom.dims[0];
    f.add_waypoint_voxels(&(0..n).map(|v| (v % nx == 12) as u8).collect::<Vec<_>>())?;
    f.add_target_voxels(&(0..n).map(|v| (v % nx >= 20) as u8).collect::<Vec<_>>(), "far")?;
    let seeds: Vec<u32> = (0..n as u32).filter(|&v| t.sticks[v as usize].f[0] > 0.0 && v % 2 == 0).collect();
    let base = Config { nsamples: 8, max_steps: 400, seed, schedule: "A_MaxStep".parse()?, ..Config::default() };
    let want = super::run(kernels(reference)?.as_mut(), &f, &seeds, &base)?;
    let mut rows = Vec::new();
    for how in [Compaction::Device, Compaction::Host] {
        let c = Config { compaction: how, schedule: Default::default(), ..base.clone() };
        let got = super::run(kernels(dev)?.as_mut(), &f, &seeds, &c)?;
        let note = format!("{} streamlines, {} steps; same streamlines expected (exact arithmetic)", seeds.len() * 8, want.total_steps);
        rows.push(CheckRow::new(&format!("probtrack[{} compaction]", how.name()), dev, error(&got, &want), 0.0, note));
    }
    Ok(rows)
}
