//! Overlapped chunks (copies on a second queue while the next chunk computes,
//! `runtime::gpu::pipeline`) give the serial run's bytes, on OpenCL (PoCL in CI), with chunks
//! forced small so that many are in flight one after another: bedpost's chunks and geodesic
//! tracking's batches. Every chunk runs the same kernels on the same inputs either way; any
//! difference is a missing event (a chunk read before its kernels finished, a slot overwritten
//! while still read), so the comparison is exact and NaN fails it.

mod common;

use neuroport::bedpost::{self, gpu::GpuBedpost, sim, Config, Variant};
use neuroport::geodesic::check::random_case;
use neuroport::geodesic::gpu::GpuGeodesic;
use neuroport::geodesic::{trace_batched, GeodesicKernels, Interp, TraceParams};
use neuroport::runtime::gpu::Gpu;
use neuroport::synth::gradient_table;

fn bits(x: &[f32]) -> Vec<u32> {
    assert!(x.iter().all(|v| v.is_finite()), "a non-finite value came back");
    x.iter().map(|v| v.to_bits()).collect()
}

#[test]
fn bedpost_overlapped_chunks_give_the_serial_bytes() {
    let Some(dev) = common::opencl() else { return };
    let g = gradient_table(4, 32, 1000.0);
    let (vol, mask) = sim::row(&sim::white_matter(150, 5), &g, 30.0, 6);
    // 150 voxels in chunks of 37: five chunks, two alive at a time when overlapping.
    let cfg = Config { samples: 8, burnin: 60, thin: 2, every: 20, seed: 9, max_chunk: Some(37), ..Default::default() };
    let run = |overlap: bool| {
        let gpu = Gpu::require(&dev).unwrap();
        let mut dk = neuroport::dti::kernels(&dev).unwrap();
        let mut bk = GpuBedpost::with_overlap(gpu, Variant::Moments, overlap).unwrap();
        bedpost::run(dk.as_mut(), &mut bk, &vol, &g, &mask, &cfg).unwrap()
    };
    let (serial, over) = (run(false), run(true));
    assert_eq!(serial.voxels.len(), 150);
    assert_eq!(bits(&over.samples), bits(&serial.samples), "samples differ");
    assert_eq!(bits(&over.state.par), bits(&serial.state.par), "final parameters differ");
    assert_eq!(bits(&over.state.prop), bits(&serial.state.prop));
    assert_eq!(over.state.acc, serial.state.acc);
    assert_eq!(over.state.rng, serial.state.rng);
    assert_eq!(over.state.nacc, serial.state.nacc);
    // Both queues' device time is collected: the sampling's kernels and the chunks' copies.
    assert!(over.timings.kernel_ms > 0.0 && over.timings.transfer_ms > 0.0, "{:?}", over.timings);
}

#[test]
fn geodesic_overlapped_batches_give_the_serial_bytes() {
    let Some(dev) = common::opencl() else { return };
    let (fields, seeds) = random_case(4, 300).unwrap();
    for interp in [Interp::Kernel, Interp::Texture] {
        let p = TraceParams { step: 0.2, max_steps: 120, interp, ..Default::default() };
        let run = |overlap: bool| {
            let mut k = GpuGeodesic::with_overlap(Gpu::require(&dev).unwrap(), overlap).unwrap();
            k.upload(&fields).unwrap();
            // 300 seeds in batches of 37: nine batches.
            let b = trace_batched(&mut k, &seeds, &p, 37, false).unwrap();
            (b, k.take_timings())
        };
        let ((serial, _), (over, t)) = (run(false), run(true));
        assert!(serial.total_steps() > 1000, "too few steps to compare: {}", serial.total_steps());
        assert_eq!(over.ends, serial.ends, "{interp:?}: summaries differ");
        assert_eq!(over.offsets, serial.offsets, "{interp:?}");
        let flat = |b: &neuroport::geodesic::FibreBatch| bits(&b.points.iter().flatten().copied().collect::<Vec<f32>>());
        assert_eq!(flat(&over), flat(&serial), "{interp:?}: points differ");
        assert!(t.kernel_ms > 0.0 && t.transfer_ms > 0.0, "{interp:?}: {t:?}");
    }
}

/// The streamed .tck tests' case: `n` random seeds in a random field (`seed`), its grid with
/// anisotropic voxels, a scratch folder and the trace parameters.
fn tck_case(seed: u64, n: usize) -> (neuroport::geodesic::Fields, Vec<neuroport::geodesic::Seed>, neuroport::volume::Geometry, tempfile::TempDir, TraceParams) {
    let (fields, seeds) = random_case(seed, n).unwrap();
    let geom = neuroport::volume::Geometry::synthetic(fields.dims, [1.5, 1.5, 2.0]);
    let p = TraceParams { step: 0.2, max_steps: 80, interp: Interp::Kernel, ..Default::default() };
    (fields, seeds, geom, tempfile::tempdir().unwrap(), p)
}

#[test]
fn streamed_tck_is_the_file_of_the_collected_run() {
    use neuroport::geodesic::output;
    use neuroport::volume::Outputs;
    let (fields, seeds, geom, dir, p) = tck_case(6, 200);
    let mut devs = vec![neuroport::Inventory::discover(Some(2)).select_one(&neuroport::BackendSpec::Cpu).unwrap()];
    devs.extend(common::opencl());
    for dev in devs {
        let mut k = neuroport::geodesic::kernels(&dev).unwrap();
        k.upload(&fields).unwrap();
        // Collected: every batch kept, then written.
        let all = trace_batched(k.as_mut(), &seeds, &p, 23, false).unwrap();
        let order: Vec<usize> = (0..seeds.len()).collect();
        let (a, b) = (dir.path().join("collected.tck"), dir.path().join("streamed.tck"));
        let mut out = Outputs::new();
        output::write(&mut out, &a, &geom, &all, &seeds, &order).unwrap();
        out.commit().unwrap();
        // Streamed: nine batches of 23, each written while the next traces.
        let mut out = Outputs::new();
        let ends = output::trace_to_tck(k.as_mut(), &seeds, &p, 23, &geom, &mut out, &b, false).unwrap();
        out.commit().unwrap();
        assert_eq!(ends.ends, all.ends, "{}", dev.label());
        let (fa, fb) = (std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
        assert!(fa.len() > 12 * all.total_steps() as usize, "{}: tractogram too short", dev.label());
        assert!(fa == fb, "{}: streamed .tck differs from the collected one", dev.label());
        assert_eq!(std::fs::read(output::csv_path(&a)).unwrap(), std::fs::read(output::csv_path(&b)).unwrap(), "{}", dev.label());
        std::fs::remove_dir_all(dir.path()).ok();
        std::fs::create_dir_all(dir.path()).unwrap();
    }
}

/// `--downsample N`: each fibre of the streamed .tck holds the full one's points 0, N, 2N, ...
/// and its last, in order; every 1 is the full file. GPUs thin the points where they pack them
/// (`np_geo_pack`), the CPU as it collects them: each device against its own full file, which
/// also checks every 1.
#[test]
fn downsampled_tck_keeps_every_nth_point_and_the_last() {
    use neuroport::geodesic::output;
    use neuroport::io::tck::read_tck;
    use neuroport::volume::Outputs;
    let (fields, seeds, geom, dir, p) = tck_case(7, 120);
    let mut devs = vec![neuroport::Inventory::discover(Some(2)).select_one(&neuroport::BackendSpec::Cpu).unwrap()];
    devs.extend(common::opencl());
    for dev in devs {
        let mut k = neuroport::geodesic::kernels(&dev).unwrap();
        k.upload(&fields).unwrap();
        let path = |every: u32| dir.path().join(format!("{}-every{every}.tck", dev.label().replace(':', "-")));
        for every in [1, 3, 7, 5000] {
            let mut out = Outputs::new();
            output::trace_to_tck(k.as_mut(), &seeds, &TraceParams { every, ..p }, 50, &geom, &mut out, &path(every), false).unwrap();
            out.commit().unwrap();
        }
        let full = read_tck(&path(1)).unwrap();
        assert_eq!(full.len(), seeds.len());
        assert!(full.iter().any(|f| f.len() > 10), "fibres too short to thin");
        assert!(full.iter().flatten().flatten().all(|c| c.is_finite()), "{}: a point is not finite", dev.label());
        for every in [3, 7, 5000] {
            let thin = read_tck(&path(every)).unwrap();
            assert_eq!(thin.len(), full.len(), "every {every}");
            for (i, (f, t)) in full.iter().zip(&thin).enumerate() {
                let want: Vec<[f32; 3]> = f.iter().enumerate().filter(|&(j, _)| j % every as usize == 0 || j + 1 == f.len()).map(|(_, p)| *p).collect();
                assert_eq!(t, &want, "{}, every {every}: fibre {i}", dev.label());
            }
        }
    }
}
