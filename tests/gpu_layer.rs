//! The GPU host layer on the first OpenCL device (PoCL in CI): copies, poisoning, every argument
//! kind, local memory and atomics, textures and two queues (the `gpu-layer` rows of `check`),
//! and the launch check's messages. CUDA runs the same argument lists through the same check.

use neuroport::runtime::gpu::{args, Gpu, Shape};
use neuroport::runtime::{BackendSpec, Inventory};

fn opencl_gpu() -> Option<(neuroport::runtime::Device, Gpu)> {
    let inv = Inventory::discover(Some(2));
    if inv.opencl.is_empty() {
        assert!(std::env::var("NEUROPORT_REQUIRE_OPENCL").map_or(true, |v| v != "1"), "no OpenCL device but NEUROPORT_REQUIRE_OPENCL=1");
        eprintln!("skipped: no OpenCL device");
        return None;
    }
    let dev = inv.select_one(&BackendSpec::OpenCl(None)).unwrap();
    let gpu = Gpu::new(&dev).unwrap().unwrap();
    Some((dev, gpu))
}

#[test]
fn layer_self_test_passes_on_opencl() {
    let Some((dev, _)) = opencl_gpu() else { return };
    let cpu = Inventory::discover(Some(2)).open_cpu().unwrap();
    for seed in [1u64, 2] {
        let rows = neuroport::runtime::gpu::selftest::run(&dev, &cpu, seed).unwrap();
        assert!(rows.len() >= 8, "{rows:?}");
        for r in &rows {
            assert!(r.pass, "{r:?}");
        }
    }
}

#[test]
fn launch_check_names_the_kernel_and_argument() {
    let Some((_, gpu)) = opencl_gpu() else { return };
    let k = gpu.kernel("layer", neuroport::runtime::gpu::selftest::SOURCE, "layer_fatomic").unwrap();
    let x = gpu.upload(&[1.0f32, 2.0]).unwrap();
    let t = gpu.zeros::<f32>(1).unwrap();
    let wrong_type = gpu.upload(&[1i32]).unwrap();
    let e = format!("{:#}", gpu.launch(&k, Shape::items(2), args![&x, 2i32, &wrong_type]).unwrap_err());
    assert!(e.contains("layer_fatomic") && e.contains("argument 2") && e.contains("total"), "{e}");
    let e = format!("{:#}", gpu.launch(&k, Shape::items(2), args![&x, 2u32, &t]).unwrap_err());
    assert!(e.contains("argument 1") && e.contains("a uint"), "{e}");
    let e = format!("{:#}", gpu.launch(&k, Shape::items(2), args![&x, &t]).unwrap_err());
    assert!(e.contains("takes 3 arguments, 2 given"), "{e}");
    assert!(gpu.kernel("layer", neuroport::runtime::gpu::selftest::SOURCE, "nope").is_err());
    gpu.launch(&k, Shape::items(2), args![&x, 2i32, &t]).unwrap();
    assert_eq!(gpu.download(&t).unwrap(), vec![3.0]);
}

/// Timing off: the work still runs (same result) and leaves nothing in the timings; back on, it
/// is timed again.
#[test]
fn untimed_work_runs_and_is_not_timed() {
    let Some((_, gpu)) = opencl_gpu() else { return };
    let k = gpu.kernel("layer", neuroport::runtime::gpu::selftest::SOURCE, "layer_fatomic").unwrap();
    let x = gpu.upload(&[1.5f32, 2.0, 4.0]).unwrap();
    gpu.take_timings().unwrap();
    gpu.set_timing(false);
    let t = gpu.zeros::<f32>(1).unwrap();
    gpu.launch(&k, Shape::items(3), args![&x, 3i32, &t]).unwrap();
    assert_eq!(gpu.download(&t).unwrap(), vec![7.5]);
    let off = gpu.take_timings().unwrap();
    assert_eq!((off.kernel_ms, off.transfer_ms), (0.0, 0.0), "{off:?}");
    gpu.set_timing(true);
    gpu.launch(&k, Shape::items(3), args![&x, 3i32, &t]).unwrap();
    assert_eq!(gpu.download(&t).unwrap(), vec![15.0]);
    let on = gpu.take_timings().unwrap();
    assert!(on.kernel_ms > 0.0 && on.transfer_ms > 0.0, "{on:?}");
}

/// Two threads, each with its own queue on the one device, launching one kernel over grids of
/// different widths at the same time: each sees its own sums, and neither waits forever. On PoCL
/// the queues pass a baton (kernels in flight on one queue at a time, gpu/cl.rs), each taking it
/// after the other's queue has finished: this is that hand-over, up to 600 times.
#[test]
fn two_queues_launch_the_same_kernel_side_by_side() {
    let Some((_, gpu)) = opencl_gpu() else { return };
    let start = std::sync::Arc::new(std::sync::Barrier::new(2));
    let runs: Vec<_> = (0..2usize)
        .map(|id| {
            let q = gpu.second_queue().unwrap();
            let start = start.clone();
            std::thread::spawn(move || {
                let k = q.kernel("layer", neuroport::runtime::gpu::selftest::SOURCE, "layer_fatomic").unwrap();
                let ones = q.upload(&vec![1.0f32; 4096]).unwrap();
                let t = q.zeros::<f32>(1).unwrap();
                start.wait();
                let mut want = 0.0f32;
                for it in 0..300usize {
                    // Grid widths differ between the threads and from launch to launch.
                    let n = 64 * (1 + (7 * it + 13 * id) % 64);
                    q.launch(&k, Shape::items(n), args![&ones, n as i32, &t]).unwrap();
                    want += n as f32;
                    if it % 50 == 49 {
                        assert_eq!(q.download(&t).unwrap(), vec![want], "thread {id}, launch {it}");
                    }
                }
                q.finish().unwrap();
                assert_eq!(q.download(&t).unwrap(), vec![want], "thread {id}");
            })
        })
        .collect();
    for r in runs {
        r.join().unwrap();
    }
}
