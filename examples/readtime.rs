fn main() {
    let p = std::env::args().nth(1).unwrap();
    for _ in 0..3 {
        let t = std::time::Instant::now();
        let v = neuroport::volume::read_nifti(std::path::Path::new(&p)).unwrap();
        let a = t.elapsed().as_secs_f64() * 1e3;
        let flat = v.into_flat();
        eprintln!("read {a:.1} ms, total {:.1} ms, {} values", t.elapsed().as_secs_f64() * 1e3, flat.len());
    }
}
