//! The PTX NVRTC makes of a kernel entry file, for reading what a kernel compiles to (no GPU
//! needed, NVRTC 13 on the library path: `. scripts/setup.sh`):
//!   cargo run --release --example ptx_dump -- cl/bedpost.cl '#define NP_BP_ONLY 2' > bedpost.ptx
//! The second argument (optional) is put before the source, as the host's defines are; the
//! headers are the ones built into this binary (cl/common), so rebuild after editing them.
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1) else {
        eprintln!("usage: ptx_dump ENTRY.cl ['#define ...']");
        std::process::exit(2);
    };
    let src = match std::fs::read_to_string(path) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {path}: {e}");
            std::process::exit(1);
        }
    };
    let defines = args.get(2).map(|d| d.replace("\\n", "\n") + "\n").unwrap_or_default();
    let entry: &'static str = Box::leak(format!("{defines}{src}").into_boxed_str());
    match neuroport::runtime::cuda::compile_ptx("ptx_dump", entry, "compute_90") {
        Ok(ptx) => print!("{}", ptx.to_src()),
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::exit(1);
        }
    }
}
