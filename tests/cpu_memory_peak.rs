//! Peak heap of the CPU paths that held whole-grid copies beside their results at HCP size
//! (145x174x145): dti's fit (its rows and its maps' rows, ~224 MiB), the metric preparation (D
//! and G in float64 and the fields' rows, ~700 MB beside the 352 MB fields) and the geodesic
//! tracer's voxel-major copy of the fields (352 MB). A counting allocator gives the most bytes
//! live during a call above those live before it (the tests take turns).

use neuroport::dti::{self, Design, DtiKernels, FitShare, Frame, TensorFit, NFIELDS, NSCALARS};
use neuroport::geodesic::{cpu::CpuGeodesic, prepare, GeodesicKernels};
use neuroport::runtime::Device;
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

/// A grid larger than a slab of the metric's, its tensors (anisotropic and not), and its geometry.
fn grid() -> ([usize; 3], Vec<f32>, neuroport::volume::Geometry) {
    let dims = [96, 96, 128];
    let nvox: usize = dims.iter().product();
    let tensor = (0..6 * nvox).map(|i| if (i / nvox).is_multiple_of(3) && !i.is_multiple_of(5) { 1e-3 } else { 1e-5 }).collect();
    (dims, tensor, neuroport::volume::Geometry::synthetic(dims, [1.5, 1.5, 2.0]))
}

#[test]
fn cpu_metric_and_tracer_fields_are_held_once() {
    let _turn = turn();
    let cpu = cpu();
    let (dims, tensor, geom) = grid();
    let nvox: usize = dims.iter().product();
    let fields_bytes = 4 * NFIELDS * nvox;
    // The metric: its result (96 bytes a voxel) and G of a slab of planes, not D and G of every
    // voxel in float64 (96 bytes) and every voxel's fields twice.
    let mut k = dti::cpu::CpuDti::new(cpu.clone());
    let (metric, extra) = extra_peak(|| k.metric(&tensor, dims, Frame::of(&geom)).unwrap());
    assert_eq!(metric.len() * 4, fields_bytes);
    assert!(extra < fields_bytes + fields_bytes / 3, "the metric held {extra} bytes at most, its result {fields_bytes}");
    drop(metric);
    // The trackers' fields, made in the CPU tracer's layout, not from a component-major copy.
    let mask = vec![1u8; nvox];
    let ((fields, _), extra) = extra_peak(|| prepare(&Device::Cpu(cpu.clone()), &tensor, &geom, &mask, None).unwrap());
    assert!(extra < fields_bytes + fields_bytes / 3 + nvox, "the fields' preparation held {extra} bytes at most, the fields {fields_bytes}");
    // The CPU tracer reads them where they lie: labels, not a second copy.
    let mut t = CpuGeodesic::new(cpu);
    let ((), extra) = extra_peak(|| t.upload(&fields).unwrap());
    assert!(extra < 2 * nvox, "the tracer's upload held {extra} bytes for {nvox} voxels");
}
