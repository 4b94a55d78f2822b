//! Peak heap of the CPU paths that held whole-grid copies beside their results at HCP size
//! (145x174x145): dti's fit (its rows and its maps' rows, ~224 MiB). A counting allocator gives
//! the most bytes live during a call above those live before it (the tests take turns).

use neuroport::dti::{self, Design, DtiKernels, FitShare, TensorFit, NSCALARS};
use neuroport::io::progress::Progress;
use neuroport::runtime::columns::Columns;
use neuroport::runtime::cpu::Cpu;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;

struct Counting;
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(by: usize) {
    let now = LIVE.fetch_add(by, SeqCst) + by;
    PEAK.fetch_max(now, SeqCst);
}

// SAFETY: every call is System's, with the same arguments; only the counters are added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            grew(l.size());
        }
        p
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(l) };
        if !p.is_null() {
            grew(l.size());
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) };
        LIVE.fetch_sub(l.size(), SeqCst);
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        let q = unsafe { System.realloc(p, l, new) };
        if !q.is_null() {
            // Both blocks may be live at once during the move.
            grew(new);
            LIVE.fetch_sub(l.size(), SeqCst);
        }
        q
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Held by each test throughout: the count is the binary's, so the tests take turns.
fn turn() -> std::sync::MutexGuard<'static, ()> {
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ONE.lock().unwrap_or_else(|e| e.into_inner())
}

/// `f`'s result and the most bytes live during it above those live before (its result included).
fn extra_peak<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = LIVE.load(SeqCst);
    PEAK.store(base, SeqCst);
    let r = f();
    (r, PEAK.load(SeqCst) - base)
}

fn cpu() -> Arc<Cpu> {
    Arc::new(Cpu::new(Some(2)).unwrap())
}

#[test]
fn cpu_fit_writes_into_its_outputs() {
    let _turn = turn();
    // Rows of all voxels (32 bytes a voxel) and of their maps (32 more) had lived beside the
    // outputs. A few voxels fitted keep it quick; the rows were the grid's.
    let mut k = dti::cpu::CpuDti::new(cpu());
    let nvox = 1 << 20;
    let g = neuroport::synth::gradient_table(1, 6, 1000.0);
    let d = Design::new(&g).unwrap();
    let dwi: Vec<f32> = (0..d.ngrad * nvox).map(|i| 500.0 + (i % 7) as f32).collect();
    let mut mask = vec![0u8; nvox];
    mask[..4096].fill(1);
    let mut fit = TensorFit::zeroed(nvox);
    let mut maps = vec![0.0f32; NSCALARS * nvox];
    let ((), extra) = extra_peak(|| k.fit_into(Columns::whole(&dwi, d.ngrad), &mask, &d, &mut FitShare::whole(&mut fit, Some(&mut maps)), &Progress::hidden()).unwrap());
    assert_eq!(fit.count(dti::FITTED) + fit.count(dti::REPAIRED), 4096);
    assert!(extra < 4 * nvox, "the fit held {extra} bytes beyond its outputs for {nvox} voxels");
}
