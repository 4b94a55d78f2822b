//! Plain-text tables: CSV through the csv crate, and Markdown for people.

use anyhow::{Context, Result};
use std::path::Path;

/// Writes `rows` (each a list of cells) under `header` as CSV.
pub fn write_csv(path: &Path, header: &[&str], rows: &[Vec<String>]) -> Result<()> {
    let mut w = csv::Writer::from_writer(crate::volume::create_file(path).with_context(|| format!("cannot create {}", path.display()))?);
    w.write_record(header)?;
    for r in rows {
        w.write_record(r)?;
    }
    w.flush()?;
    Ok(())
}

/// A Markdown table. A cell's `|` is escaped and a line break made a space: a config or label
/// holding either (a hand-edited CSV merged by `compare`) split its row into extra columns.
pub fn markdown(header: &[&str], rows: &[Vec<String>]) -> String {
    let cell = |c: &String| c.replace('|', "\\|").replace(['\r', '\n'], " ");
    let mut s = format!("| {} |\n|{}\n", header.join(" | "), "---|".repeat(header.len()));
    for r in rows {
        s.push_str(&format!("| {} |\n", r.iter().map(cell).collect::<Vec<_>>().join(" | ")));
    }
    s
}

/// A fixed-width table for the terminal.
pub fn aligned(header: &[&str], rows: &[Vec<String>]) -> String {
    let n = header.len();
    let mut w: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate().take(n) {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let line = |cells: Vec<&str>| cells.iter().enumerate().map(|(i, c)| format!("{:<width$}", c, width = w[i])).collect::<Vec<_>>().join("  ");
    let mut s = line(header.to_vec()).trim_end().to_string() + "\n";
    for r in rows {
        s.push_str(line(r.iter().map(|c| c.as_str()).collect()).trim_end());
        s.push('\n');
    }
    s
}
