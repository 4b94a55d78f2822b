//! The paper-table harness (`neuroport reproduce`): reruns a published table on every selected
//! device and writes, per table, a CSV (one row per configuration x device), a Markdown table
//! and a plot, with the published figure beside ours.

mod plot;
pub mod pipeline;
pub mod scaling;
pub mod prep;
pub mod published;
pub mod write;

use crate::runtime::cpu::Cpu;
use crate::runtime::{Device, DeviceInfo, Inventory};
use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
pub use write::{check_outputs_are_not_inputs, merge, read_csv, report_paths, write, write_merged};

/// Variant names of the two CPU baselines every speed-up is computed against.
pub const ONE_THREAD: &str = "1 thread";
pub const ALL_CORES: &str = "all cores";

/// Fills both speed-up columns of time-like rows from the CPU baselines of the same config and
/// metric (rows whose variant is [`ONE_THREAD`] and [`ALL_CORES`] on the cpu backend).
pub fn add_speedups(rows: &mut [Row]) {
    let base = |rows: &[Row], cfg: &str, metric: &str, variant: &str| {
        rows.iter().find(|r| r.device == "cpu" && r.config == cfg && r.metric == metric && r.variant == variant).map(|r| r.ours)
    };
    let snapshot = rows.to_vec();
    for r in rows.iter_mut() {
        let one = base(&snapshot, &r.config, &r.metric, ONE_THREAD);
        let all = base(&snapshot, &r.config, &r.metric, ALL_CORES);
        *r = std::mem::take(r).speedups(one, all);
    }
}

/// What a bench's timed figure is over `n` repeats: "median of 5 runs", but "one run" for
/// `--repeats 1`, where "median of 1 runs" claimed a statistic that was not taken.
pub fn median_of(n: usize) -> String {
    if n == 1 { "one run".into() } else { format!("median of {n} runs") }
}

/// A float32 setting (a step of 0.1 voxel) as the decimal it was written as: `0.1f32 as f64` is
/// 0.10000000149011612, which the CSV's x column printed beside the published 0.1.
pub fn decimal(v: f32) -> f64 {
    v.to_string().parse().unwrap_or(v as f64)
}

/// Problem sizes: the paper's, or a quick size that runs in seconds on 2 CPU cores (CI).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Scale {
    Quick,
    Paper,
}

impl Scale {
    pub fn name(self) -> &'static str {
        match self {
            Scale::Quick => "quick",
            Scale::Paper => "paper",
        }
    }
}

/// This machine's name for result files: the host name, else the CPU model.
pub fn machine() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").map(|s| s.trim().to_string()).unwrap_or_default();
    if host.is_empty() { crate::runtime::cpu::host_info().name } else { host }
}

/// Marks every row of a fresh report with this machine and the scale, seed and repeats it ran
/// with, so `compare` can label rows from several machines and say where their runs differ.
pub fn stamp(report: &mut Report, rc: &RunCtx) {
    let m = machine();
    for r in &mut report.rows {
        r.machine = m.clone();
        r.scale = rc.scale.name().into();
        r.seed = Some(rc.seed);
        r.repeats = Some(rc.repeats);
    }
}

/// A note for a report whose "all cores" rows ran on fewer threads than the machine has
/// (`reproduce --threads N`): the label stays, as speed-ups and `compare` match rows by it,
/// and the note says what it stood for.
pub fn threads_note(report: &Report, devices: &[Device], cores: usize) -> Option<String> {
    let threads = devices.iter().find_map(|d| match d {
        Device::Cpu(c) => Some(c.threads()),
        _ => None,
    })?;
    let labelled = report.rows.iter().any(|r| r.variant.contains(ALL_CORES));
    (labelled && threads < cores).then(|| format!("cpu: ran on {} of this machine's {cores} cores (--threads): the '{ALL_CORES}' rows and 'x vs {ALL_CORES}' are {}", crate::runtime::threads_label(threads), crate::runtime::threads_label(threads)))
}

/// What a target runs with.
pub struct RunCtx<'a> {
    pub devices: &'a [Device],
    pub inventory: &'a Inventory,
    pub scale: Scale,
    /// Timed repeats after one warm-up; the median is reported.
    pub repeats: usize,
    pub seed: u64,
}

impl RunCtx<'_> {
    /// A one-thread CPU device: the baseline of every "vs one CPU thread" speed-up.
    pub fn one_thread_cpu(&self) -> Result<Device> {
        Ok(Device::Cpu(Arc::new(Cpu::new(Some(1))?)))
    }
    pub fn say(&self, msg: &str) {
        eprintln!("  {msg}");
    }
}

/// One measured configuration on one device. Serialised as one CSV row.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Row {
    pub table: String,
    pub config: String,
    /// Numeric value of the configuration, for plots (seeds, step, threads...).
    pub x: Option<f64>,
    pub device: String,
    pub device_name: String,
    pub vendor: String,
    pub compute_units: u32,
    pub clock_mhz: u32,
    pub memory_gib: f64,
    /// Variant of the method on that device (e.g. "texture", "1 thread").
    pub variant: String,
    pub metric: String,
    pub unit: String,
    pub published: Option<f64>,
    pub published_device: String,
    pub ours: f64,
    /// ours / published.
    pub ratio: Option<f64>,
    pub kernel_ms: Option<f64>,
    pub transfer_ms: Option<f64>,
    pub host_ms: Option<f64>,
    pub speedup_vs_1thread: Option<f64>,
    pub speedup_vs_all_cores: Option<f64>,
    /// What stands in for the paper's data or hardware.
    pub substituted: String,
    /// The machine that ran it (its host name), written by `reproduce`; empty in older files.
    #[serde(default)]
    pub machine: String,
    /// The problem sizes it ran at (`quick` or `paper`); empty in older files.
    #[serde(default)]
    pub scale: String,
    /// The seed of its synthetic data (`reproduce --seed`); empty in older files.
    #[serde(default)]
    pub seed: Option<u64>,
    /// Its timed runs per median (`reproduce --repeats`); empty in older files.
    #[serde(default)]
    pub repeats: Option<usize>,
    /// Which machine or result file a row came from (filled by `compare`).
    #[serde(default)]
    pub source: String,
}

impl Row {
    pub fn new(table: &str, config: impl Into<String>, dev: &DeviceInfo, variant: impl Into<String>, metric: &str, unit: &str, ours: f64) -> Row {
        Row {
            table: table.into(),
            config: config.into(),
            device: dev.spec.clone(),
            device_name: dev.name.clone(),
            vendor: dev.vendor.clone(),
            compute_units: dev.compute_units,
            clock_mhz: dev.clock_mhz,
            memory_gib: (dev.global_mem_bytes as f64 / (1u64 << 30) as f64 * 10.0).round() / 10.0,
            variant: variant.into(),
            metric: metric.into(),
            unit: unit.into(),
            ours,
            ..Default::default()
        }
    }
    pub fn x(mut self, x: f64) -> Row {
        self.x = Some(x);
        self
    }
    pub fn published(mut self, value: Option<f64>, device: &str) -> Row {
        self.published = value;
        self.published_device = device.into();
        self.ratio = value.filter(|p| *p != 0.0).map(|p| self.ours / p);
        self
    }
    pub fn split(mut self, t: &crate::Timings) -> Row {
        self.kernel_ms = Some(t.kernel_ms);
        self.transfer_ms = Some(t.transfer_ms);
        self.host_ms = Some(t.host_ms);
        self
    }
    pub fn substituted(mut self, s: impl Into<String>) -> Row {
        self.substituted = s.into();
        self
    }
    /// Speed-ups of a time-like `ours` against the two CPU baselines (same unit); none where
    /// either time is not positive (the CPU's transfer time of 0 s gave NaN columns, 0/0).
    pub fn speedups(mut self, one_thread: Option<f64>, all_cores: Option<f64>) -> Row {
        let ours = self.ours;
        let ratio = |b: f64| Some(b / ours).filter(|_| b > 0.0 && ours > 0.0).filter(|x| x.is_finite());
        self.speedup_vs_1thread = one_thread.and_then(ratio);
        self.speedup_vs_all_cores = all_cores.and_then(ratio);
        self
    }
    /// The series a row belongs to in plots.
    pub fn series(&self) -> String {
        let name = if self.device == "cpu" { format!("CPU {}", self.device_name) } else { format!("{} {}", self.device, self.device_name) };
        let mut s = if self.variant.is_empty() { name } else { format!("{name} [{}]", self.variant) };
        if !self.source.is_empty() {
            s = format!("{}: {s}", self.source);
        }
        s
    }
}

/// How a report is plotted.
#[derive(Clone, Debug)]
pub struct PlotSpec {
    pub x_label: String,
    pub y_label: String,
    pub log_x: bool,
    pub log_y: bool,
    /// The one metric drawn where a report's rows hold several (times beside counts and
    /// errors on one axis were unreadable); None draws every row.
    pub metric: Option<String>,
}

/// One table's results.
#[derive(Clone, Debug)]
pub struct Report {
    pub id: String,
    pub title: String,
    pub rows: Vec<Row>,
    pub notes: Vec<String>,
    pub plot: PlotSpec,
}

/// A reproducible paper table.
pub trait Target: Sync {
    fn id(&self) -> &'static str;
    fn title(&self) -> &'static str;
    /// How its report is plotted; `compare` plots merged results of the table the same way.
    fn plot(&self) -> PlotSpec;
    fn run(&self, ctx: &RunCtx) -> Result<Report>;
    /// This target's report of `rows` and `notes`.
    fn report(&self, rows: Vec<Row>, notes: Vec<String>) -> Report {
        Report { id: self.id().into(), title: self.title().into(), rows, notes, plot: self.plot() }
    }
}

/// Every table the harness knows; methods add theirs here.
pub fn registry() -> Vec<Box<dyn Target>> {
    use crate::geodesic::repro as geo;
    vec![
        Box::new(prep::GeodesicPrep),
        Box::new(geo::GeodesicT1),
        Box::new(geo::GeodesicT3),
        Box::new(geo::GeodesicF6),
        Box::new(geo::GeodesicF7),
        Box::new(crate::bedpost::repro::BedpostT3),
        Box::new(crate::probtrack::repro::ProbtrackT2),
        Box::new(crate::probtrack::repro::ProbtrackT4),
        Box::new(pipeline::Pipeline),
        Box::new(crate::register::repro::Airwc),
        Box::new(crate::fim::repro::FimT1),
    ]
}

/// The targets named (`all` for every one), in registry order.
pub fn select(names: &[String]) -> Result<Vec<Box<dyn Target>>> {
    let all = registry();
    if names.iter().any(|n| n == "all") {
        return Ok(all);
    }
    let known: Vec<&str> = all.iter().map(|t| t.id()).collect();
    for n in names {
        if !known.contains(&n.as_str()) {
            bail!("unknown table '{n}': known tables are {}, or all", known.join(", "));
        }
    }
    Ok(all.into_iter().filter(|t| names.iter().any(|n| n == t.id())).collect())
}

/// `--repeats` of reproduce and the timed benches: 0 used to time one run without a word
/// (`repeats.max(1)`), a figure the user did not ask for.
pub fn check_repeats(n: usize) -> Result<()> {
    if n == 0 {
        anyhow::bail!("--repeats must be positive (at least 1 timed run)");
    }
    Ok(())
}

/// A comma list of things to time (bench's --workloads, --costs, --variant, --compaction,
/// --cores): a value given twice was run and reported twice, two rows the user cannot tell apart.
pub fn check_distinct<T: PartialEq>(option: &str, values: &[T], name: impl Fn(&T) -> String) -> Result<()> {
    for v in values {
        let n = values.iter().filter(|w| *w == v).count();
        if n > 1 {
            let times = if n == 2 { "twice".to_string() } else { format!("{n} times") };
            anyhow::bail!("{option} lists {} {times}: give each value once", name(v));
        }
    }
    Ok(())
}

/// Runs `f` once to warm up, then `repeats` times; returns the run with the median figure
/// (the first element `f` returns) together with what that run returned.
pub fn timed_median<T>(repeats: usize, mut f: impl FnMut() -> Result<(f64, T)>) -> Result<(f64, T)> {
    let _ = f()?;
    let mut runs = Vec::new();
    for _ in 0..repeats.max(1) {
        runs.push(f()?);
    }
    runs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mid = (runs.len() - 1) / 2;
    Ok(runs.swap_remove(mid))
}

#[cfg(test)]
mod tests {

    #[test]
    fn one_repeat_is_not_called_a_median() {
        assert_eq!(median_of(1), "one run");
        assert_eq!(median_of(5), "median of 5 runs");
    }

    #[test]
    fn a_list_naming_a_value_twice_is_refused() {
        let name = |w: &&str| w.to_string();
        assert!(check_distinct("--workloads", &["geodesic", "probtrack"], name).is_ok());
        let e = check_distinct("--workloads", &["probtrack", "geodesic", "bedpost-t3", "geodesic"], name).unwrap_err();
        assert_eq!(e.to_string(), "--workloads lists geodesic twice: give each value once");
        let e = check_distinct("--cores", &[2, 2, 2], |c| c.to_string()).unwrap_err();
        assert_eq!(e.to_string(), "--cores lists 2 3 times: give each value once");
    }

    use super::*;

    #[test]
    fn fewer_threads_than_cores_are_noted() {
        let plot = PlotSpec { x_label: String::new(), y_label: String::new(), log_x: false, log_y: false, metric: None };
        let report = |variant: &str| Report { id: "t".into(), title: "t".into(), rows: vec![Row { variant: variant.into(), ..Row::default() }], notes: Vec::new(), plot: plot.clone() };
        let cpu = |n| vec![Device::Cpu(Arc::new(Cpu::new(Some(n)).unwrap()))];
        let note = threads_note(&report(ALL_CORES), &cpu(1), 16).expect("1 of 16 cores");
        assert!(note.contains("1 thread of this machine's 16 cores") && note.contains("are 1 thread"), "{note}");
        assert_eq!(threads_note(&report(ALL_CORES), &cpu(16), 16), None);
        assert_eq!(threads_note(&report(ONE_THREAD), &cpu(1), 16), None, "no row says all cores");
        assert_eq!(threads_note(&report(ALL_CORES), &[], 16), None, "no CPU device");
    }

    #[test]
    fn plot_axes_name_units_one_way() {
        // Axes read "time (s)", "tracing time, s" and "wall time [s]" side by side: a unit goes
        // in parentheses after the quantity, so no comma, bracket or bare leading unit.
        for t in registry() {
            let p = t.plot();
            for label in [&p.x_label, &p.y_label] {
                let bare_unit = ["s ", "ms ", "us "].iter().any(|u| label.starts_with(u));
                assert!(!label.contains([',', '[', ']']) && !bare_unit, "{}: axis label {label:?}", t.id());
            }
        }
    }

    #[test]
    fn a_zero_time_has_no_speedup_not_nan() {
        let row = |ours: f64| Row { device: "cpu".into(), config: "c".into(), metric: "transfer time".into(), ours, ..Row::default() };
        // probtrack-t2's CPU transfer rows: 0 s against a 0 s baseline printed NaN, NaN.
        let r = row(0.0).speedups(Some(0.0), Some(0.0));
        assert_eq!((r.speedup_vs_1thread, r.speedup_vs_all_cores), (None, None));
        let r = row(2.0).speedups(Some(4.0), Some(0.0));
        assert_eq!((r.speedup_vs_1thread, r.speedup_vs_all_cores), (Some(2.0), None));
    }

    #[test]
    fn a_float32_setting_keeps_its_decimal() {
        assert_eq!(decimal(0.1).to_string(), "0.1");
        assert_eq!(decimal(0.35), 0.35);
        assert_eq!(decimal(0.5), 0.5);
    }
}
