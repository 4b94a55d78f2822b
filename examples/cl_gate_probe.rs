//! Measures what a lone OpenCL evaluation (one kernel of ~50 us, one small record back) costs the
//! host beyond its kernel, launched four ways: (a) as `register` does (value argument, launch,
//! non-blocking read, finish); (b) the write, kernel and read of evaluation i+1 enqueued while
//! evaluation i runs, held by a user event until the host knows i+1's parameters, which go up
//! by a write from pinned memory; (c) as (b) with the parameters written into a mapped buffer
//! the kernel reads and the record written by the kernel into a mapped buffer the host watches
//! (outside OpenCL 1.2's rules: the kernel echoes the parameter it read, so a stale read shows).
//! Registration round 36 in docs/performance.md.
//!
//! `cargo run --release --example cl_gate_probe -- [PLATFORM-SUBSTRING] [EVALS]`
use cl3::event::{create_user_event, release_event, set_user_event_status, CL_COMPLETE};
use cl3::memory::{CL_MAP_READ, CL_MAP_WRITE};
use cl3::types::{cl_event, CL_BLOCKING, CL_NON_BLOCKING};
use opencl3::command_queue::{CommandQueue, CL_QUEUE_PROFILING_ENABLE};
use opencl3::context::Context;
use opencl3::device::{Device, CL_DEVICE_TYPE_ALL};
use opencl3::kernel::Kernel;
use opencl3::memory::{Buffer, CL_MEM_ALLOC_HOST_PTR, CL_MEM_READ_ONLY, CL_MEM_READ_WRITE};
use opencl3::platform::get_platforms;
use opencl3::program::Program;
use std::time::Instant;

const SRC: &str = r#"
__kernel void busy(__global const float *restrict data, int n, float pv, __global const float *pbuf,
                   int from_buf, __global volatile uint *done, __global float *rec, __global float *partial)
{
    __local float red[256];
    float p = from_buf ? pbuf[0] : pv;
    float acc = 0.0f;
    for (int i = get_global_id(0); i < n; i += get_global_size(0))
        acc += fabs(data[i] - p);
    red[get_local_id(0)] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = 128; s > 0; s >>= 1) {
        if (get_local_id(0) < s) red[get_local_id(0)] += red[get_local_id(0) + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    __local int last;
    if (get_local_id(0) == 0) {
        partial[get_group_id(0)] = red[0];
        mem_fence(CLK_GLOBAL_MEM_FENCE);
        last = atomic_inc(done) == get_num_groups(0) - 1;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (last && get_local_id(0) == 0) {
        float s = 0.0f;
        for (int g = 0; g < get_num_groups(0); g++) s += partial[g];
        *done = 0u;
        rec[1] = s;
        mem_fence(CLK_GLOBAL_MEM_FENCE);
        rec[0] = p;
    }
}
"#;

type R<T> = Result<T, Box<dyn std::error::Error>>;

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn main() -> R<()> {
    let args: Vec<String> = std::env::args().collect();
    let want = args.get(1).cloned().unwrap_or_default();
    let evals: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(300);
    let platform = get_platforms()?.into_iter().find(|p| p.name().unwrap_or_default().contains(&want)).ok_or("no such platform")?;
    let dev = Device::new(*platform.get_devices(CL_DEVICE_TYPE_ALL)?.first().ok_or("no device")?);
    println!("device: {} ({})", dev.name()?, platform.name()?);
    let ctx = Context::from_device(&dev)?;
    #[allow(deprecated)]
    let q = CommandQueue::create_default(&ctx, CL_QUEUE_PROFILING_ENABLE)?;
    let prog = Program::create_and_build_from_source(&ctx, SRC, "").map_err(|e| format!("build: {e}"))?;
    let k = Kernel::create(&prog, "busy")?;
    let n: i32 = 240 * 256 * 176;
    let (groups, lsize) = (528usize, 256usize);
    let host: Vec<f32> = (0..n).map(|i| ((i * 7919) % 1000) as f32 * 0.001).collect();
    let mut data = unsafe { Buffer::<f32>::create(&ctx, CL_MEM_READ_ONLY, n as usize, std::ptr::null_mut())? };
    unsafe { q.enqueue_write_buffer(&mut data, CL_BLOCKING, 0, &host, &[])? };
    let mk = |flags, len| unsafe { Buffer::<f32>::create(&ctx, flags, len, std::ptr::null_mut()) };
    let mut pbuf = mk(CL_MEM_READ_ONLY, 2)?;
    let mut done = unsafe { Buffer::<u32>::create(&ctx, CL_MEM_READ_WRITE, 1, std::ptr::null_mut())? };
    unsafe { q.enqueue_write_buffer(&mut done, CL_BLOCKING, 0, &[0u32], &[])? };
    let rec = mk(CL_MEM_READ_WRITE, 8)?;
    let partial = mk(CL_MEM_READ_WRITE, groups)?;
    // Pinned host memory: two parameter slots and two record slots (a, b).
    let pin = mk(CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, 64)?;
    let mut pp: cl3::types::cl_mem = std::ptr::null_mut();
    unsafe { q.enqueue_map_buffer(&pin, CL_BLOCKING, CL_MAP_READ | CL_MAP_WRITE, 0, 64 * 4, &mut pp, &[])? };
    let pinned = unsafe { std::slice::from_raw_parts_mut(pp as *mut f32, 64) };
    // Mapped buffers the kernel reads (parameter) and writes (record) for (c).
    let zp = mk(CL_MEM_READ_ONLY | CL_MEM_ALLOC_HOST_PTR, 2)?;
    let zr = mk(CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, 8)?;
    let (mut zpp, mut zrp): (cl3::types::cl_mem, cl3::types::cl_mem) = (std::ptr::null_mut(), std::ptr::null_mut());
    unsafe {
        q.enqueue_map_buffer(&zp, CL_BLOCKING, CL_MAP_WRITE, 0, 8, &mut zpp, &[])?;
        q.enqueue_map_buffer(&zr, CL_BLOCKING, CL_MAP_READ | CL_MAP_WRITE, 0, 32, &mut zrp, &[])?;
    }
    let (zpar, zrec) = (zpp as *mut f32, zrp as *mut f32);
    let gws = [groups * lsize];
    let lws = [lsize];
    let set = |pv: f32, from_buf: i32, pb: &Buffer<f32>, rb: &Buffer<f32>| -> R<()> {
        unsafe {
            k.set_arg(0, &data)?;
            k.set_arg(1, &n)?;
            k.set_arg(2, &pv)?;
            k.set_arg(3, pb)?;
            k.set_arg(4, &from_buf)?;
            k.set_arg(5, &done)?;
            k.set_arg(6, rb)?;
            k.set_arg(7, &partial)?;
        }
        Ok(())
    };
    let launch = |wait: &[cl_event]| unsafe { q.enqueue_nd_range_kernel(k.get(), 1, std::ptr::null(), gws.as_ptr(), lws.as_ptr(), wait) };
    let param = |i: usize| 0.25 + (i % 17) as f32 * 0.03;
    let warm = 30;

    // (a) as register does.
    let (mut wall_a, mut kern_a, mut bad_a) = (vec![], vec![], 0);
    set(0.0, 0, &pbuf, &rec)?;
    for i in 0..warm + evals {
        let t = Instant::now();
        let p = param(i);
        unsafe { k.set_arg(2, &p)? };
        let ev = launch(&[])?;
        unsafe { q.enqueue_read_buffer(&rec, CL_NON_BLOCKING, 0, &mut pinned[32..40], &[])? };
        q.finish()?;
        let w = t.elapsed().as_secs_f64();
        if pinned[32] != p {
            bad_a += 1;
        }
        if i >= warm {
            wall_a.push(w * 1e6);
            kern_a.push((ev.profiling_command_end()? - ev.profiling_command_start()?) as f64 * 1e-3);
        }
    }
    println!("a (launch, read, finish): wall {:.1} us, kernel {:.1} us, echo wrong {bad_a}", median(&mut wall_a), median(&mut kern_a));

    // (b) enqueued ahead, held by a user event; the parameter written from pinned memory.
    set(0.0, 1, &pbuf, &rec)?;
    let mut wall_b = vec![];
    let mut bad_b = 0;
    let enqueue_b = |slot: usize, pinned: &mut [f32], pbuf: &mut Buffer<f32>| -> R<(cl_event, opencl3::event::Event)> {
        let ue = create_user_event(ctx.get()).map_err(|e| format!("user event: {e}"))?;
        unsafe {
            q.enqueue_write_buffer(pbuf, CL_NON_BLOCKING, 0, &pinned[slot * 2..slot * 2 + 1], &[ue])?;
            launch(&[])?;
            let rd = q.enqueue_read_buffer(&rec, CL_NON_BLOCKING, 0, &mut pinned[32 + slot * 8..40 + slot * 8], &[])?;
            Ok((ue, rd))
        }
    };
    let mut prev = {
        let (ue, rd) = enqueue_b(0, pinned, &mut pbuf)?;
        Some((ue, rd, 0))
    };
    for i in 0..warm + evals {
        let t = Instant::now();
        let (ue, rd, slot) = prev.take().unwrap();
        let p = param(i);
        pinned[slot * 2] = p;
        set_user_event_status(ue, CL_COMPLETE).map_err(|e| format!("set status: {e}"))?;
        let nslot = 1 - slot;
        if i + 1 < warm + evals {
            let (nue, nrd) = enqueue_b(nslot, pinned, &mut pbuf)?;
            prev = Some((nue, nrd, nslot));
        }
        rd.wait()?;
        let w = t.elapsed().as_secs_f64();
        unsafe { release_event(ue).ok() };
        if pinned[32 + slot * 8] != p {
            bad_b += 1;
        }
        if i >= warm {
            wall_b.push(w * 1e6);
        }
    }
    q.finish()?;
    println!("b (enqueued ahead, user event, pinned write): wall {:.1} us, echo wrong {bad_b}", median(&mut wall_b));

    // (c) enqueued ahead; parameter and record through mapped buffers the kernel touches.
    set(0.0, 1, &zp, &zr)?;
    let mut wall_c = vec![];
    let (mut bad_c, mut late_c) = (0, 0);
    let enqueue_c = || -> R<(cl_event, opencl3::event::Event)> {
        let ue = create_user_event(ctx.get()).map_err(|e| format!("user event: {e}"))?;
        let ev = launch(&[ue])?;
        Ok((ue, ev))
    };
    let mut held = Some(enqueue_c()?);
    for i in 0..warm + evals {
        let t = Instant::now();
        let (ue, ev) = held.take().unwrap();
        let p = param(i) + 1.0;
        unsafe {
            std::ptr::write_volatile(zrec, -1.0);
            std::ptr::write_volatile(zpar, p);
        }
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        set_user_event_status(ue, CL_COMPLETE).map_err(|e| format!("set status: {e}"))?;
        if i + 1 < warm + evals {
            held = Some(enqueue_c()?);
        }
        let spin = Instant::now();
        let mut seen = false;
        while spin.elapsed().as_micros() < 2000 {
            if unsafe { std::ptr::read_volatile(zrec) } != -1.0 {
                seen = true;
                break;
            }
            std::hint::spin_loop();
        }
        if !seen {
            late_c += 1;
            ev.wait()?;
        }
        let w = t.elapsed().as_secs_f64();
        unsafe { release_event(ue).ok() };
        if unsafe { std::ptr::read_volatile(zrec) } != p {
            bad_c += 1;
        }
        if i >= warm {
            wall_c.push(w * 1e6);
        }
    }
    q.finish()?;
    println!("c (enqueued ahead, mapped parameter and record): wall {:.1} us, echo wrong {bad_c}, record not seen within 2 ms {late_c}", median(&mut wall_c));
    Ok(())
}
