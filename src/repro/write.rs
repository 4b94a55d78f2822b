//! Report files: `<id>.csv` (every field of every row), `<id>.md` (for people) and the plot.

use super::{plot, Report, Row};
use crate::io::table::markdown;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

fn fmt(v: Option<f64>) -> String {
    match v {
        Some(x) if x.abs() >= 1000.0 || (x != 0.0 && x.abs() < 0.01) => format!("{x:.3e}"),
        Some(x) => format!("{x:.3}"),
        None => String::new(),
    }
}

/// The Markdown table of a report.
pub fn to_markdown(r: &Report) -> String {
    let header = ["config", "device", "variant", "metric", "published", "ours", "ours/published", "kernel ms", "transfer ms", "host ms", "x vs 1 thread", "x vs all cores"];
    let rows: Vec<Vec<String>> = r
        .rows
        .iter()
        .map(|w| {
            vec![
                w.config.clone(),
                if w.source.is_empty() { format!("{} ({})", w.device, w.device_name) } else { format!("{}: {} ({})", w.source, w.device, w.device_name) },
                w.variant.clone(),
                format!("{} [{}]", w.metric, w.unit),
                w.published.map(|p| format!("{} ({})", fmt(Some(p)), w.published_device)).unwrap_or_default(),
                fmt(Some(w.ours)),
                fmt(w.ratio),
                fmt(w.kernel_ms),
                fmt(w.transfer_ms),
                fmt(w.host_ms),
                fmt(w.speedup_vs_1thread),
                fmt(w.speedup_vs_all_cores),
            ]
        })
        .collect();
    let mut s = format!("# {}\n\n", r.title);
    s.push_str(&markdown(&header, &rows));
    let subs: Vec<&str> = {
        let mut v: Vec<&str> = r.rows.iter().map(|w| w.substituted.as_str()).filter(|s| !s.is_empty()).collect();
        v.sort();
        v.dedup();
        v
    };
    if !subs.is_empty() || !r.notes.is_empty() {
        s.push_str("\nNotes:\n");
        for n in subs.iter().map(|x| x.to_string()).chain(r.notes.iter().cloned()) {
            s.push_str(&format!("- {n}\n"));
        }
    }
    s
}

/// Writes the CSV, Markdown and plot of `r` into `dir`; returns the paths.
pub fn write(r: &Report, dir: &Path) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let csv_path = dir.join(format!("{}.csv", r.id));
    let mut w = csv::Writer::from_path(&csv_path).with_context(|| format!("cannot create {}", csv_path.display()))?;
    for row in &r.rows {
        w.serialize(row)?;
    }
    w.flush()?;
    let md_path = dir.join(format!("{}.md", r.id));
    std::fs::write(&md_path, to_markdown(r)).with_context(|| format!("cannot write {}", md_path.display()))?;
    let mut out = vec![csv_path, md_path];
    let png = dir.join(format!("{}.png", r.id));
    match plot::draw(r, &png) {
        Ok(()) => out.push(png),
        Err(e) => eprintln!("warning: no plot for {}: {e:#}", r.id),
    }
    Ok(out)
}

/// Rows of a CSV written by [`write`], tagged with the file's name as their source.
pub fn read_csv(path: &Path) -> Result<Vec<Row>> {
    let mut r = csv::Reader::from_path(path).with_context(|| format!("{}: cannot read", path.display()))?;
    let source = path.file_stem().map(|s| s.to_string_lossy().to_string()).unwrap_or_default();
    let mut rows = Vec::new();
    for (i, rec) in r.deserialize::<Row>().enumerate() {
        let mut row = rec.with_context(|| format!("{}: row {} is not a neuroport result row", path.display(), i + 2))?;
        if row.source.is_empty() {
            row.source = source.clone();
        }
        rows.push(row);
    }
    Ok(rows)
}

/// `neuroport compare`: one table and one plot from result files made on different machines.
pub fn write_merged(rows: Vec<Row>, out: &Path, id: &str) -> Result<Vec<PathBuf>> {
    let title = format!("{id}: merged results ({} rows)", rows.len());
    let report = Report { id: id.into(), title, rows, notes: vec![], plot: super::PlotSpec { x_label: "configuration".into(), y_label: "ours".into(), log_x: false, log_y: true } };
    write(&report, out)
}
