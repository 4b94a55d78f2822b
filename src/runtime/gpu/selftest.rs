//! `neuroport check` rows for the layer itself: copies through pinned staging, poisoning,
//! every argument kind, local memory and atomics, textures and two queues, on fresh random
//! inputs, so a new device shows at once whether the plumbing under every method works.

use super::{args, Arg, Gpu, Shape};
use crate::check::CheckRow;
use crate::runtime::columns::{Columns, ColumnsMut};
use crate::runtime::Device;
use anyhow::{bail, Result};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

pub const SOURCE: &str = include_str!("../../../cl/layer.cl");

#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    a: f32,
    n: i32,
    b: f32,
    pad: i32,
}

fn row(name: &str, dev: &Device, ok: bool, err: f64, tol: f64, note: &str) -> CheckRow {
    let mut r = CheckRow::new(name, dev, if ok { err } else { f64::INFINITY }, tol, note);
    r.pass &= ok;
    r
}

pub fn run(dev: &Device, _reference: &Device, seed: u64) -> Result<Vec<CheckRow>> {
    let Some(gpu) = Gpu::new(dev)? else { return Ok(Vec::new()) };
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x1a7e);
    let mut rows = Vec::new();

    // Copies: a size that crosses the staging slots unevenly, both ways, bit-exact.
    let n = (40 << 20) / 4 + 12345;
    let host: Vec<u32> = (0..n).map(|_| rng.random()).collect();
    let b = gpu.upload(&host)?;
    let back = gpu.download(&b)?;
    let mut part = vec![0u32; 1000];
    gpu.read(&b, n - 1000, &mut part)?;
    rows.push(row("layer copies (staged, 40 MB)", dev, back == host && part[..] == host[n - 1000..], 0.0, 0.0, "bit-exact round trip"));

    // Shares of a component-major array (a split's device's voxels), gathered into the staging
    // slots on the way in and scattered on the way out: one large enough to cross a slot in the
    // middle of a component, one small enough to go direct; the items around a share untouched.
    let (ncomp, items) = (7usize, 1_500_001usize);
    let whole: Vec<u32> = (0..ncomp * items).map(|_| rng.random()).collect();
    let mut shares_ok = true;
    for r in [rng.random_range(0..1000)..items - rng.random_range(0..300_000), 1234..1234 + rng.random_range(1..20_000)] {
        let cols = Columns::whole(&whole, ncomp).part(r.clone());
        let at = rng.random_range(0..100);
        let b = gpu.alloc::<u32>(at + ncomp * r.len())?;
        gpu.write_columns(&b, at, &cols)?;
        let got = gpu.download(&b)?;
        shares_ok &= got[at..] == cols.to_vec()[..] && got[..at].iter().all(|&x| x == u32::MAX);
        let mut out = vec![0u32; ncomp * items];
        // read_columns reads a buffer's head: the share as it lies past `at`, uploaded alone.
        let head = gpu.upload(&got[at..])?;
        gpu.read_columns(&head, &mut ColumnsMut::whole(&mut out, ncomp).part(r.clone()))?;
        shares_ok &= (0..ncomp).all(|c| {
            let run = &out[c * items..(c + 1) * items];
            run[r.clone()] == whole[c * items + r.start..c * items + r.end] && run[..r.start].iter().chain(&run[r.end..]).all(|&x| x == 0)
        });
    }
    rows.push(row("layer share copies (gather / scatter)", dev, shares_ok, 0.0, 0.0, "bit-exact, neighbours untouched"));

    let poisoned = gpu.download(&gpu.alloc::<f32>(1000)?)?;
    rows.push(row("layer alloc poison", dev, poisoned.iter().all(|x| x.to_bits() == u32::MAX), 0.0, 0.0, "every byte 0xFF"));

    // Every scalar kind and a struct by value.
    let k = gpu.kernel("layer", SOURCE, "layer_axpy")?;
    let m = 100_003usize;
    let x: Vec<f32> = (0..m).map(|_| rng.random_range(-1.0..1.0)).collect();
    let y: Vec<f32> = (0..m).map(|_| rng.random_range(-1.0..1.0)).collect();
    let (a, p, mask) = (rng.random_range(-2.0f32..2.0), Params { a: 0.5, n: m as i32, b: 0.25, pad: 0 }, 7u32);
    let (bx, by) = (gpu.upload(&x)?, gpu.upload(&y)?);
    gpu.launch(&k, Shape::items(m), args![&bx, &by, m as i32, a, Arg::structure(&p), mask])?;
    let got = gpu.download(&by)?;
    let want: Vec<f32> = (0..m).map(|i| a * x[i] + p.a * y[i] + p.b + (i as u32 & mask) as f32).collect();
    // Two products and three sums of magnitudes below 16: a fused multiply-add may round each
    // once less, so the difference stays under a few ulps of 16.
    let err = got.iter().zip(&want).map(|(g, w)| ((g - w).abs() / 16.0) as f64).fold(0.0, f64::max);
    rows.push(row("layer_axpy (every argument kind)", dev, got.iter().all(|v| v.is_finite()), err, 4.0 * f32::EPSILON as f64, ""));

    // Mapped host memory (CUDA): the kernel writes it directly and the host reads it after
    // `finish`, no copy. It starts as y, which differs from the launch's result everywhere a
    // is not 0, so a launch that did not write it cannot pass.
    if let Some(mp) = gpu.mapped::<f32>(m)? {
        gpu.write(mp.buf(), 0, &y)?;
        gpu.launch(&k, Shape::items(m), args![&bx, mp.buf(), m as i32, a, Arg::structure(&p), mask])?;
        gpu.finish()?;
        let differ = mp.iter().zip(&got).filter(|(a, b)| a.to_bits() != b.to_bits()).count();
        rows.push(row("layer mapped host memory", dev, differ == 0, differ as f64, 0.0, "values differing from the same launch into device memory (must be 0)"));
    }

    // The argument check refuses a swapped list before the device sees it.
    let refused = gpu.launch(&k, Shape::items(m), args![&bx, m as i32, &by, a, Arg::structure(&p), mask]).is_err()
        && gpu.launch(&k, Shape::items(m), args![&bx, &by, m as i32]).is_err();
    rows.push(row("layer argument check", dev, refused, 0.0, 0.0, "swapped and short lists refused"));

    // Local memory, barriers and integer atomics: exact.
    let ks = gpu.kernel("layer", SOURCE, "layer_group_sum")?;
    let xi: Vec<i32> = (0..m).map(|_| rng.random_range(-1000..1000)).collect();
    let total = gpu.zeros::<i32>(1)?;
    gpu.launch(&ks, Shape::groups(m.div_ceil(64), 64), args![&gpu.upload(&xi)?, m as i32, &total])?;
    let s = gpu.download(&total)?[0];
    rows.push(row("layer_group_sum (local memory, atomics)", dev, s == xi.iter().sum::<i32>(), 0.0, 0.0, "exact"));

    // Float atomics: any order of m additions of |x| <= 1 is within m * eps * sum|x| of the sum.
    let kf = gpu.kernel("layer", SOURCE, "layer_fatomic")?;
    let ft = gpu.zeros::<f32>(1)?;
    gpu.launch(&kf, Shape::items(m), args![&bx, m as i32, &ft])?;
    let fs = gpu.download(&ft)?[0] as f64;
    let exact: f64 = x.iter().map(|&v| v as f64).sum();
    let abs_sum: f64 = x.iter().map(|&v| (v as f64).abs()).sum();
    rows.push(row("layer_fatomic (float atomics)", dev, fs.is_finite(), (fs - exact).abs() / abs_sum, m as f64 * f32::EPSILON as f64, ""));

    // A second queue waits for an event of the first.
    let q2 = gpu.second_queue()?;
    let shared = gpu.alloc::<u32>(n)?;
    gpu.write(&shared, 0, &host)?;
    let ev = gpu.record()?;
    q2.wait_for(&ev)?;
    let mut pin = q2.pinned::<u32>(n)?;
    q2.download_into(&shared, 0, &mut pin, 0..n)?;
    q2.finish()?;
    rows.push(row("layer second queue + pinned", dev, pin[..] == host[..], 0.0, 0.0, "event ordering across queues"));

    rows.push(texture_row(&gpu, dev, &mut rng)?);
    let t = gpu.take_timings()?;
    if !(t.kernel_ms > 0.0 && t.transfer_ms > 0.0) {
        bail!("device events reported no time (kernel {} ms, transfer {} ms)", t.kernel_ms, t.transfer_ms);
    }
    Ok(rows)
}

/// Hardware trilinear filtering against the host's, at random points inside the grid.
fn texture_row(gpu: &Gpu, dev: &Device, rng: &mut Xoshiro256PlusPlus) -> Result<CheckRow> {
    let dims = [13usize, 9, 7];
    let nt: usize = dims.iter().product();
    let texels: Vec<f32> = (0..4 * nt).map(|_| rng.random_range(-1.0..1.0)).collect();
    let src = gpu.upload(&texels)?;
    let tex = match gpu.texture3d(&src, 0, dims) {
        Ok(t) => t,
        Err(e) => return Ok(CheckRow::new("layer texture3d", dev, 0.0, 0.0, format!("not available: {e:#}"))),
    };
    let q: Vec<f32> = (0..3 * 2000).map(|i| rng.random_range(0.0..(dims[i % 3] - 1) as f32)).collect();
    let out = gpu.alloc::<f32>(4 * 2000)?;
    let k = gpu.kernel("layer", SOURCE, "layer_tex_sample")?;
    gpu.launch(&k, Shape::items(2000), args![&tex, &gpu.upload(&q)?, 2000i32, &out])?;
    let got = gpu.download(&out)?;
    let mut err = 0.0f64;
    for i in 0..2000 {
        let want = trilinear(&texels, dims, [q[3 * i], q[3 * i + 1], q[3 * i + 2]]);
        for c in 0..4 {
            err = err.max((got[4 * i + c] - want[c]).abs() as f64);
        }
    }
    // Values span [-1, 1]: a weight quantised to 2^-bits moves a sample by at most 2 * 2^-bits
    // per axis, three axes; exact filtering leaves float rounding (1e-5).
    let (tol, note) = match gpu.filter_bits() {
        Some(b) => (6.0 / (1u64 << b) as f64, format!("{b}-bit filter weights")),
        None => (1e-5, "float filter weights".to_string()),
    };
    Ok(row("layer texture3d (linear filter)", dev, got.iter().all(|v| v.is_finite()), err, tol, &note))
}

fn trilinear(t: &[f32], d: [usize; 3], p: [f32; 3]) -> [f32; 4] {
    let mut out = [0.0f32; 4];
    let i0: Vec<usize> = (0..3).map(|a| (p[a].floor() as usize).min(d[a] - 1)).collect();
    let w: Vec<f32> = (0..3).map(|a| p[a] - i0[a] as f32).collect();
    for c in 0..8 {
        let mut idx = [0usize; 3];
        let mut wt = 1.0;
        for a in 0..3 {
            let hi = (c >> a) & 1 == 1;
            idx[a] = if hi { (i0[a] + 1).min(d[a] - 1) } else { i0[a] };
            wt *= if hi { w[a] } else { 1.0 - w[a] };
        }
        let v = idx[0] + d[0] * (idx[1] + d[1] * idx[2]);
        for ch in 0..4 {
            out[ch] += wt * t[4 * v + ch];
        }
    }
    out
}
