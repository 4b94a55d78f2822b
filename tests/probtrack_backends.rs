//! The OpenCL kernels (PoCL in CI; the same entry file NVRTC compiles for CUDA) against the CPU
//! reference, exactly: the step is IEEE products and sums in one order with no contraction on
//! either side (cl/common/probtrack.h), so every streamline, visit count and seed-to-target
//! count must be equal, not close, for every schedule, both compaction paths and any batch size.

mod common;
use common::opencl;
use neuroport::probtrack::{self, phantom, Batch, Compaction, Config, ProbtrackKernels, Tracks};
use neuroport::runtime::{BackendSpec, Device, Inventory};

fn track(dev: &Device, f: &probtrack::Field, seeds: &[u32], c: &Config) -> Tracks {
    let mut k = probtrack::kernels(dev).unwrap();
    probtrack::run(k.as_mut(), f, seeds, c).unwrap()
}

/// Every output of two runs equal.
fn same(r: &Tracks, want: &Tracks, what: &str) {
    assert_eq!(r.finished, want.finished, "{what}: paths lost or duplicated");
    assert_eq!(r.total_steps, want.total_steps, "{what}");
    assert_eq!(r.longest, want.longest, "{what}");
    assert_eq!(r.waytotal, want.waytotal, "{what}");
    assert_eq!(r.kept, want.kept, "{what}");
    assert_eq!(r.lengths, want.lengths, "{what}");
    assert_eq!(r.seed_targets, want.seed_targets, "{what}");
    assert_eq!(r.visits, want.visits, "{what}");
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
            same(&r, &want, &what);
        }
    }
}

/// Drives one batch segment by segment on `k` and checks after every compaction that no path
/// was lost or duplicated: the live ids are distinct and in ascending order (compaction keeps
/// the order), none of them has a result yet, and live + finished = every path of the batch.
fn paths_accounted(k: &mut dyn ProbtrackKernels, f: &probtrack::Field, seeds: &[u32], c: &Config, what: &str) -> usize {
    let p = c.params(f, seeds.len(), true);
    k.upload(f, seeds).unwrap();
    k.reset_counts(&probtrack::Rules::new(f, seeds.len(), c.max_steps)).unwrap();
    let n = seeds.len() * c.nsamples;
    let mut live = k.start(&p, Batch::Range(0, n)).unwrap();
    let mut checked = 0;
    for seg in c.schedule.segments(c.max_steps) {
        let (ids, steps) = k.progress().unwrap();
        assert_eq!(ids.len(), live, "{what}: live count");
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "{what}: live paths duplicated or out of order");
        assert!(ids.iter().all(|&i| steps[i as usize] < 0), "{what}: a live path already has a result");
        let done = steps.iter().filter(|&&s| s >= 0).count();
        assert_eq!(done + live, 2 * n, "{what}: a path was lost");
        checked += 1;
        if live == 0 {
            break;
        }
        k.segment(&p, seg).unwrap();
        live = k.compact(c.compaction).unwrap();
    }
    assert_eq!(live, 0, "{what}");
    let (_, steps) = k.progress().unwrap();
    assert!(steps.iter().all(|&s| s >= 0), "{what}: a path has no result");
    checked
}

#[test]
fn compaction_neither_loses_nor_duplicates_a_path() {
    let cpu = Inventory::discover(None).select_one(&BackendSpec::Cpu).unwrap();
    let devs: Vec<Device> = std::iter::once(cpu).chain(opencl()).collect();
    let t = phantom::crossing();
    let f = t.field(&t.angles(3, 25.0, 2));
    let seeds: Vec<u32> = (0..t.geom.nvox() as u32).filter(|&v| t.sticks[v as usize].f[0] > 0.0 && v % 5 == 0).collect();
    for dev in &devs {
        for (s, how) in [("A1", Compaction::Device), ("A1", Compaction::Host), ("paper", Compaction::Device), ("C", Compaction::Host)] {
            let c = Config { nsamples: 3, max_steps: 120, schedule: s.parse().unwrap(), compaction: how, ..Config::default() };
            let mut k = probtrack::kernels(dev).unwrap();
            let what = format!("{} {s} {how:?}", dev.label());
            // A1 must see many compactions with paths still live (the wide spread ends them early
            // and late), not one trivial check.
            let checked = paths_accounted(k.as_mut(), &f, &seeds, &c, &what);
            assert!(checked > if s == "A1" { 10 } else { 3 }, "{what}: only {checked} segments");
        }
    }
}

#[test]
fn two_batches_in_flight_give_the_serial_result() {
    let Some(dev) = opencl() else { return };
    let t = phantom::crossing();
    let mut f = t.field(&t.angles(4, 15.0, 3));
    let g = &t.geom;
    f.add_waypoint_voxels(&(0..g.nvox()).map(|v| (v % 24 == 12) as u8).collect::<Vec<_>>()).unwrap();
    f.add_target_voxels(&(0..g.nvox()).map(|v| (v % 24 >= 20) as u8).collect::<Vec<_>>(), "far").unwrap();
    let seeds: Vec<u32> = (0..g.nvox() as u32).filter(|&v| t.sticks[v as usize].f[0] > 0.0 && v % 3 == 0).collect();
    let base = Config { nsamples: 6, max_steps: 300, seed: 3, max_batch: Some(97), ..Config::default() };
    for how in [Compaction::Device, Compaction::Host] {
        let serial = track(&dev, &f, &seeds, &Config { compaction: how, ..base.clone() });
        let both = track(&dev, &f, &seeds, &Config { compaction: how, overlap: true, ..base.clone() });
        let what = format!("{how:?}");
        assert!(serial.waytotal > 0 && both.stats.batches > 4, "{what}: {} batches", both.stats.batches);
        assert_eq!(both.stats.batches, serial.stats.batches, "{what}");
        same(&both, &serial, &what);
    }
}

/// A seed never used before (the clock), printed so a failure can be replayed with
/// NEUROPORT_TEST_SEED.
fn fresh_seed() -> u64 {
    let s = std::env::var("NEUROPORT_TEST_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(1)
    });
    eprintln!("NEUROPORT_TEST_SEED={s}");
    s
}

/// The device tally (`probtrack_tally`: keep bits, length histograms counted in local memory
/// below 1024 steps and in global memory above, seed-target counts) and the seed visits of
/// `probtrack_start` against the CPU's `Rules::tally`, on fresh random samples: integer counts,
/// so fdt_paths, waytotal, the target counts and the histograms must be identical. Steps of
/// 0.02 mm (100 per 2 mm voxel) make streamlines of several thousand steps, so both histogram
/// paths are used; batches of 45 streamlines end in partial keep words.
#[test]
fn device_tally_counts_equal_the_cpu_for_fresh_inputs() {
    let Some(dev) = opencl() else { return };
    let cpu = Inventory::discover(None).select_one(&BackendSpec::Cpu).unwrap();
    let seed = fresh_seed();
    let t = phantom::crossing();
    let g = &t.geom;
    let mut f = t.field(&t.angles(3, 3.0 + (seed % 17) as f64, seed));
    let nx = g.dims[0] as u64;
    let plane = (seed / 17) % (nx - 4) + 2;
    f.add_target_voxels(&(0..g.nvox() as u64).map(|v| (v % nx == plane) as u8).collect::<Vec<_>>(), "plane").unwrap();
    f.add_target_voxels(&(0..g.nvox() as u64).map(|v| (v % nx >= nx - 3) as u8).collect::<Vec<_>>(), "far").unwrap();
    let every = 3 + (seed >> 8) % 5;
    let seeds: Vec<u32> = (0..g.nvox() as u32).filter(|&v| t.sticks[v as usize].f[0] > 0.0 && (v as u64).is_multiple_of(every)).collect();
    let long = Config { nsamples: 3, step_mm: 0.02, max_steps: 3000, schedule: "A500".parse().unwrap(), seed, ..Config::default() };
    let short = Config { nsamples: 5, max_steps: 400, seed: seed ^ 1, ..Config::default() };
    for (name, c) in [("long", long), ("short", short)] {
        let want = track(&cpu, &f, &seeds, &c);
        let hi = want.lengths.iter().rposition(|&c| c > 0).unwrap_or(0);
        assert!(want.waytotal > 0 && want.seed_targets.iter().any(|&c| c > 0), "{name}: nothing reached a target");
        if name == "long" {
            assert!(hi > 1024 && want.longest > 1024, "{name}: longest {} half {}: the global histogram path is not used", hi, want.longest);
        }
        for (batch, overlap) in [(None, false), (Some(45), false), (Some(45), true)] {
            let r = track(&dev, &f, &seeds, &Config { max_batch: batch, overlap, ..c.clone() });
            same(&r, &want, &format!("{name} batch {batch:?} overlap {overlap} (NEUROPORT_TEST_SEED={seed})"));
        }
    }
}
