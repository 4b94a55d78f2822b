//! DTI kernel speed on every device present: `cargo bench --bench dti [-- --voxels N --repeats R]`.
//! Prints voxels/s and ms per million voxels per stage (device-event times, median of the repeats
//! after a warm-up), and voxels/s per core on the cpu backend. `neuroport bench dti --backend all`
//! prints the same table from the release binary.

use neuroport::dti::bench;
use neuroport::runtime::{BackendSpec, Inventory};

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(|v| v.parse().unwrap_or_else(|_| panic!("{name} takes a number, got {v}")))
        .unwrap_or(default)
}

fn main() {
    let (voxels, repeats) = (arg("--voxels", 1 << 18), arg("--repeats", 5));
    let inv = Inventory::discover(None);
    for n in &inv.notes {
        println!("{n}");
    }
    let devices = inv.select(&BackendSpec::All, true).expect("devices open");
    let mut rows = Vec::new();
    for d in &devices {
        match bench::measure(d, voxels, repeats, 1) {
            Ok(r) => rows.extend(r),
            Err(e) => println!("{}: {e:#}", d.label()),
        }
    }
    print!("{}", bench::table(&rows));
    println!("median of {repeats} runs after a warm-up; kernel times from device events (wall clock on the cpu backend)");
}
