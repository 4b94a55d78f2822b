//! The CPU backend: native Rust on a rayon pool of a chosen size. It is also the reference
//! every other backend is checked against.

use super::DeviceInfo;
use anyhow::{Context, Result};

/// Whether code compiled a second time for AVX2 (`#[target_feature(enable = "avx2")]`, no FMA,
/// so the same bits as the first) may run here: the CPU has it and `NEUROPORT_NO_AVX2` is unset
/// (for measuring, and for testing the other copy). Looked up once.
#[cfg(target_arch = "x86_64")]
pub fn avx2() -> bool {
    static AVX2: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AVX2.get_or_init(|| std::arch::is_x86_feature_detected!("avx2") && std::env::var_os("NEUROPORT_NO_AVX2").is_none())
}

/// A function's whole body: `$body(args)` through a copy of `$body` compiled for AVX2 where
/// [`avx2`] allows it, else `$body` itself. One source compiled twice, the same bits: no FMA is
/// enabled and Rust never contracts, so every operation still rounds once. `$body` is
/// `#[inline(always)]`, so that its code is compiled into the copy. For a method, bind `self` to
/// a name first: `let s = self; avx2_twin!(Stick::fill_body, (s: &Stick, out: &mut [f32]))`.
macro_rules! avx2_twin {
    ($body:path, ($($a:ident: $t:ty),* $(,)?) $(-> $r:ty)?) => {{
        #[cfg(target_arch = "x86_64")]
        {
            #[target_feature(enable = "avx2")]
            fn twin($($a: $t),*) $(-> $r)? {
                $body($($a),*)
            }
            if $crate::runtime::cpu::avx2() {
                // SAFETY: avx2() found the feature on this CPU.
                return unsafe { twin($($a),*) };
            }
        }
        $body($($a),*)
    }};
}
pub(crate) use avx2_twin;

pub struct Cpu {
    pool: rayon::ThreadPool,
    threads: usize,
    pub info: DeviceInfo,
}

impl Cpu {
    /// `threads = None` uses every core the OS reports.
    pub fn new(threads: Option<usize>) -> Result<Cpu> {
        let n = threads.unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)).max(1);
        let pool = rayon::ThreadPoolBuilder::new().num_threads(n).build().context("cannot start the CPU thread pool")?;
        let mut info = host_info();
        info.compute_units = n as u32;
        Ok(Cpu { pool, threads: n, info })
    }
    pub fn threads(&self) -> usize {
        self.threads
    }
    /// Runs `f` inside this backend's pool, so rayon's parallel iterators use its thread count.
    pub fn install<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        self.pool.install(f)
    }
}

/// Name, vendor, clock and memory of the host, from /proc where it exists.
pub fn host_info() -> DeviceInfo {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |key: &str| {
        cpuinfo
            .lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split(':').nth(1))
            .map(|s| s.trim().to_string())
    };
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let mem_kb: u64 = meminfo
        .lines()
        .find(|l| l.starts_with("MemTotal"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    DeviceInfo {
        backend: "cpu".into(),
        spec: "cpu".into(),
        name: field("model name").unwrap_or_else(|| std::env::consts::ARCH.to_string()),
        vendor: field("vendor_id").unwrap_or_default(),
        platform: "native (rayon)".into(),
        compute_units: std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(1),
        clock_mhz: field("cpu MHz").and_then(|s| s.parse::<f64>().ok()).map(|f| f.round() as u32).unwrap_or(0),
        global_mem_bytes: mem_kb * 1024,
        image_support: false,
        is_gpu: false,
        id: Default::default(),
    }
}
