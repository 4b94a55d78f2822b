//! The OpenCL kernels (PoCL in CI; the same entry file NVRTC compiles for CUDA) against the CPU
//! reference, exactly: the step is IEEE products and sums in one order with no contraction on
//! either side (cl/common/probtrack.h), so every streamline, visit count and seed-to-target
//! count must be equal, not close, for every schedule, both compaction paths and any batch size.

mod common;
use common::opencl;
use neuroport::probtrack::{self, phantom, Compaction, Config, Tracks};
use neuroport::runtime::{BackendSpec, Device, Inventory};

fn track(dev: &Device, f: &probtrack::Field, seeds: &[u32], c: &Config) -> Tracks {
    let mut k = probtrack::kernels(dev).unwrap();
    probtrack::run(k.as_mut(), f, seeds, c).unwrap()
}

#[test]
fn opencl_traces_the_very_streamlines_of_the_cpu_reference() {
    let Some(dev) = opencl() else { return };
    let cpu = Inventory::discover(None).select_one(&BackendSpec::Cpu).unwrap();
    let t = phantom::crossing();
    // A wide spread so paths turn, stop on curvature and leave the bundles: every rule is hit.
    let a = t.angles(5, 20.0, 9);
    let mut f = t.field(&a);
    let g = &t.geom;
    let plane: Vec<u8> = (0..g.nvox()).map(|v| (v % 24 == 12) as u8).collect();
    let far: Vec<u8> = (0..g.nvox()).map(|v| (v % 24 >= 20) as u8).collect();
    let excl: Vec<u8> = (0..g.nvox()).map(|v| (v % 24 == 6 && (v / 24) % 20 == 3) as u8).collect();
    f.exclude_voxels(&excl).unwrap();
    f.add_waypoint_voxels(&plane).unwrap();
    f.add_target_voxels(&far, "far").unwrap();
    let seeds: Vec<u32> = (0..g.nvox() as u32).filter(|&v| t.sticks[v as usize].f[0] > 0.0 && v % 3 == 0).collect();
    let base = Config { nsamples: 7, max_steps: 300, schedule: "A_MaxStep".parse().unwrap(), seed: 5, ..Config::default() };
    let reference = track(&cpu, &f, &seeds, &base);
    assert!(reference.waytotal > 0 && reference.total_steps > 10_000, "{} {}", reference.waytotal, reference.total_steps);
    for (s, how, batch) in [("paper", Compaction::Device, None), ("A1", Compaction::Host, Some(301)), ("C", Compaction::Device, Some(1000)), ("B", Compaction::Host, None)] {
        for jitter in [true, false] {
            let c = Config { schedule: s.parse().unwrap(), compaction: how, max_batch: batch, jitter, ..base.clone() };
            let r = track(&dev, &f, &seeds, &c);
            let want = if jitter { reference.clone() } else { track(&cpu, &f, &seeds, &c) };
            let what = format!("{s} {how:?} batch {batch:?} jitter {jitter}");
            assert_eq!(r.finished, want.finished, "{what}: paths lost or duplicated");
            assert_eq!(r.total_steps, want.total_steps, "{what}");
            assert_eq!(r.kept, want.kept, "{what}");
            assert_eq!(r.lengths, want.lengths, "{what}");
            assert_eq!(r.seed_targets, want.seed_targets, "{what}");
            assert_eq!(r.visits, want.visits, "{what}");
        }
    }
}
