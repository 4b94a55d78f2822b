use rayon::prelude::*;
fn touch(v: &mut [f32], par: bool) {
    if par { v.par_chunks_mut(1 << 16).for_each(|c| { let mut i = 0; while i < c.len() { c[i] = 1.0; i += 1024; } }); }
    else { let mut i = 0; while i < v.len() { v[i] = 1.0; i += 1024; } }
}
fn main() {
    let n = 39_321_600usize;
    for par in [false, true] {
        for huge in [false, true] {
            let t = std::time::Instant::now();
            let mut v: Vec<f32> = Vec::with_capacity(n);
            if huge {
                let p = v.as_mut_ptr() as usize;
                let a = (p + (1 << 21) - 1) & !((1 << 21) - 1);
                let end = (p + 4 * n) & !((1 << 21) - 1);
                if end > a { unsafe { libc::madvise(a as *mut libc::c_void, end - a, libc::MADV_HUGEPAGE); } }
            }
            unsafe { v.set_len(n) };
            touch(&mut v, par);
            let a = t.elapsed().as_secs_f64() * 1e3;
            let t2 = std::time::Instant::now();
            touch(&mut v, par);
            let b = t2.elapsed().as_secs_f64() * 1e3;
            eprintln!("par {par} huge {huge}: first touch {a:.1} ms, second {b:.2} ms ({} MB)", (4 * n) >> 20);
        }
    }
}
