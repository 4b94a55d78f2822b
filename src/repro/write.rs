//! Report files: `<id>.csv` (every field of every row), `<id>.md` (for people) and the plot.

use super::{plot, Report, Row};
use crate::io::table::markdown;
use crate::volume::Outputs;
use anyhow::{bail, Context, Result};
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
                // A count has no unit: "evaluations []" read as a missing one.
                if w.unit.is_empty() { w.metric.clone() } else { format!("{} [{}]", w.metric, w.unit) },
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

/// The three files of report `id` in `dir`.
pub fn report_paths(id: &str, dir: &Path) -> [PathBuf; 3] {
    ["csv", "md", "png"].map(|ext| dir.join(format!("{id}.{ext}")))
}

/// Writes the CSV, Markdown and plot of `r` into `dir` as one all-or-nothing output set (see
/// [`Outputs`]: no file is replaced without `--force`, none is left behind on a failure);
/// returns the paths.
pub fn write(r: &Report, dir: &Path) -> Result<Vec<PathBuf>> {
    let [csv_path, md_path, png_path] = report_paths(&r.id, dir);
    let mut outs = Outputs::new();
    outs.file(&csv_path, |p| {
        let mut w = csv::Writer::from_writer(crate::volume::create_file(p)?);
        for row in &r.rows {
            w.serialize(row)?;
        }
        w.flush()?;
        Ok(())
    })?;
    outs.file(&md_path, |p| Ok(std::fs::write(p, to_markdown(r))?))?;
    match plot::draw(r) {
        Ok(png) => outs.file(&png_path, |p| Ok(std::fs::write(p, png)?))?,
        Err(e) => eprintln!("warning: no plot for {}: {e:#}", r.id),
    }
    outs.commit()
}

/// Rows of a CSV written by [`write`], tagged with the file's name as their source.
pub fn read_csv(path: &Path) -> Result<Vec<Row>> {
    let mut r = csv::Reader::from_reader(std::io::Cursor::new(crate::volume::read_text(path)?));
    let source = path.file_stem().map(|s| s.to_string_lossy().to_string()).unwrap_or_default();
    let mut rows = Vec::new();
    for (i, rec) in r.deserialize::<Row>().enumerate() {
        let mut row = rec.with_context(|| format!("{}: row {} is not a neuroport result row", path.display(), i + 2))?;
        if row.source.is_empty() {
            row.source = source.clone();
        }
        check_times(&row).map_err(|e| anyhow::anyhow!("{}: row {}, column {e}", path.display(), i + 2))?;
        rows.push(row);
    }
    Ok(rows)
}

/// A time `reproduce` wrote is finite and not negative; a hand-edited NaN or -1 was merged and
/// plotted as if measured. The error names the column and the value.
fn check_times(row: &Row) -> std::result::Result<(), String> {
    let timed = matches!(row.unit.as_str(), "ms" | "s");
    let cols = [("ours", timed.then_some(row.ours)), ("published", row.published.filter(|_| timed)), ("kernel_ms", row.kernel_ms), ("transfer_ms", row.transfer_ms), ("host_ms", row.host_ms)];
    match cols.into_iter().find_map(|(c, v)| v.filter(|v| !v.is_finite() || *v < 0.0).map(|v| (c, v))) {
        Some((c, v)) => Err(format!("{c}: {v} is not a time (a time is finite and not negative)")),
        None => Ok(()),
    }
}

/// Rows of several result files, each file's rows labelled by the machine that ran them (older
/// files without one: the file's name; two files of one machine: machine and file name), with
/// the warnings a reader needs: runs at different scales do not compare.
pub fn merge(files: &[PathBuf]) -> Result<(Vec<Row>, Vec<String>)> {
    let mut per_file = Vec::new();
    let mut seen: Vec<PathBuf> = Vec::new();
    let mut first_table: Option<(String, String)> = None;
    for f in files {
        // The same file twice (under any spelling) would double its rows in the table and plot.
        if let Ok(c) = std::fs::canonicalize(f) {
            if seen.contains(&c) {
                bail!("{}: given twice (the same result file); name each file once", f.display());
            }
            seen.push(c);
        }
        // A folder opens and reads as no rows, as does an empty or non-CSV file: each is named,
        // rather than merging the other files as if it had been a result file.
        if f.is_dir() {
            bail!("{}: is a folder, not a result CSV written by `neuroport reproduce`", f.display());
        }
        let rows = read_csv(f)?;
        if rows.is_empty() {
            bail!("{}: holds no result rows (not a CSV written by `neuroport reproduce`)", f.display());
        }
        // One merged table and plot: rows of another table (geodesic-t3 beside fim-t1) share
        // neither configs nor metrics, and were merged without a word.
        let (first_file, table) = first_table.get_or_insert_with(|| (f.display().to_string(), rows[0].table.clone()));
        if let Some(r) = rows.iter().find(|r| r.table != *table) {
            bail!("{}: holds rows of table '{}' where {first_file} holds '{table}'; compare merges the results of one table", f.display(), r.table);
        }
        let stem = f.file_stem().map(|s| s.to_string_lossy().to_string()).unwrap_or_default();
        let machine = rows.iter().map(|r| r.machine.clone()).find(|m| !m.is_empty());
        per_file.push((f, stem, machine, rows));
    }
    let mut labels: Vec<String> = per_file.iter().map(|(_, stem, m, _)| m.clone().unwrap_or_else(|| stem.clone())).collect();
    let repeated = |labels: &[String], i: usize| labels.iter().filter(|l| **l == labels[i]).count() > 1;
    let first: Vec<bool> = (0..labels.len()).map(|i| repeated(&labels, i) && per_file[i].2.is_some()).collect();
    for (i, &r) in first.iter().enumerate() {
        if r {
            labels[i] = format!("{} ({})", labels[i], per_file[i].1);
        }
    }
    let second: Vec<bool> = (0..labels.len()).map(|i| repeated(&labels, i)).collect();
    for (i, &r) in second.iter().enumerate() {
        if r {
            labels[i] = format!("{} #{}", labels[i], i + 1);
        }
    }
    let sets: Vec<(String, &[Row])> = per_file.iter().map(|(f, _, _, rows)| (f.display().to_string(), rows.as_slice())).collect();
    let scales = values_in(&sets, |r| (!r.scale.is_empty()).then(|| r.scale.clone()));
    // Runs on other synthetic data, or timed over another number of runs, were merged without
    // a word: a user comparing two machines compares the runs as much as the machines.
    let seeds = values_in(&sets, |r| r.seed.map(|s| s.to_string()));
    let repeats = values_in(&sets, |r| r.repeats.map(|n| n.to_string()));
    let mut notes: Vec<String> = [
        differing(&scales, "{} scale").map(|d| format!("warning: merging runs at different problem sizes: {d}; their figures do not compare")),
        differing(&seeds, "--seed {}").map(|d| format!("warning: merging runs on different synthetic data: {d}")),
        differing(&repeats, "--repeats {}").map(|d| format!("warning: merging runs timed over different numbers of runs: {d}; their medians are not equally steady")),
    ]
    .into_iter()
    .flatten()
    .collect();
    notes.extend(per_file.iter().zip(&labels).map(|((f, ..), label)| format!("{label}: rows of {}", f.display())));
    if let Some((_, fs)) = scales.iter().find(|(s, _)| s.is_none()) {
        notes.push(format!("scale not recorded in {} (written by an older neuroport): check it matches the others", fs.join(", ")));
    }
    if let Some((_, fs)) = seeds.iter().find(|(s, _)| s.is_none()) {
        notes.push(format!("--seed and --repeats not recorded in {} (written by an older neuroport): check they match the others", fs.join(", ")));
    }
    let mut rows = Vec::new();
    for ((_, _, _, file_rows), label) in per_file.into_iter().zip(labels) {
        rows.extend(file_rows.into_iter().map(|mut r| {
            r.source = label.clone();
            r
        }));
    }
    Ok((rows, notes))
}

/// Each value `value` takes in the files' rows (None: not recorded, in an older file), with the
/// files holding it, in order of first appearance.
fn values_in(sets: &[(String, &[Row])], value: impl Fn(&Row) -> Option<String>) -> Vec<(Option<String>, Vec<String>)> {
    let mut out: Vec<(Option<String>, Vec<String>)> = Vec::new();
    for (f, rows) in sets {
        let mut vs: Vec<Option<String>> = rows.iter().map(&value).collect();
        vs.sort();
        vs.dedup();
        for v in vs {
            match out.iter_mut().find(|(k, _)| *k == v) {
                Some((_, fs)) => fs.push(f.clone()),
                None => out.push((v, vec![f.clone()])),
            }
        }
    }
    out
}

/// "quick scale (a.csv) and paper scale (b.csv)" when the files hold more than one recorded
/// value; `shown` spells a value ({} stands for it).
fn differing(values: &[(Option<String>, Vec<String>)], shown: &str) -> Option<String> {
    let known: Vec<String> = values.iter().filter_map(|(v, fs)| v.as_ref().map(|v| format!("{} ({})", shown.replace("{}", v), fs.join(", ")))).collect();
    (known.len() > 1).then(|| known.join(" and "))
}

/// `compare --out D --name N` whose N.csv, N.md or N.png is one of the result files merged
/// (`compare r/airwc.csv b/airwc.csv --out r --name airwc --force`) replaced a machine's only
/// copy of its results with the merge; refused, with or without --force.
pub fn check_outputs_are_not_inputs(files: &[PathBuf], out: &Path, name: &str) -> Result<()> {
    let inputs: Vec<PathBuf> = files.iter().filter_map(|f| std::fs::canonicalize(f).ok()).collect();
    for p in report_paths(name, out) {
        let Some(c) = p.parent().and_then(|d| std::fs::canonicalize(d).ok()).zip(p.file_name()).map(|(d, f)| d.join(f)) else { continue };
        if inputs.contains(&c) {
            bail!("{}: is one of the result files merged; compare would replace it with the merge (choose another --out or --name)", p.display());
        }
    }
    Ok(())
}

/// `neuroport compare`: one table and one plot from result files made on different machines.
pub fn write_merged(rows: Vec<Row>, notes: Vec<String>, out: &Path, id: &str) -> Result<Vec<PathBuf>> {
    write(&merged_report(rows, notes, id), out)
}

fn merged_report(rows: Vec<Row>, notes: Vec<String>, id: &str) -> Report {
    // The table's own plot: every row on one axis put probtrack-t2's steps/s, step counts and
    // seconds (zeros dropped from the log axis) on one line per series.
    let table = rows.first().map(|r| r.table.clone()).unwrap_or_default();
    let target = super::registry().into_iter().find(|t| t.id() == table);
    let plot = match &target {
        Some(t) => t.plot(),
        None => super::PlotSpec { x_label: "configuration".into(), y_label: "ours".into(), log_x: false, log_y: true, metric: None },
    };
    // Titled by what the table measures, as reproduce's own plot: "compare: merged results
    // (28 rows)" said neither what nor on what.
    let mut sources: Vec<&str> = rows.iter().map(|r| r.source.as_str()).collect();
    sources.sort();
    sources.dedup();
    let runs = if sources.len() == 1 { "1 run".to_string() } else { format!("{} runs", sources.len()) };
    let title = format!("{}, {runs} merged", target.map(|t| t.title().to_string()).unwrap_or(table));
    Report { id: id.into(), title, rows, notes, plot }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_merged_table_is_plotted_as_its_table() {
        let row = |metric: &str, unit: &str, ours: f64| Row { table: "probtrack-t2".into(), config: "c".into(), metric: metric.into(), unit: unit.into(), ours, ..Row::default() };
        let rows = vec![row("total time", "s", 0.02), row("steps per second", "steps/s", 1.6e7), row("total steps", "steps", 3.5e5)];
        let r = merged_report(rows, Vec::new(), "compare");
        assert_eq!(r.plot.metric.as_deref(), Some("total time"));
        assert_eq!(r.plot.y_label, "total time (s)");
    }

    #[test]
    fn a_merged_plot_is_titled_by_what_it_measures() {
        // The title read "compare: merged results (28 rows)": neither what was measured nor on what.
        let row = |source: &str| Row { table: "geodesic-t1".into(), config: "c".into(), source: source.into(), ..Row::default() };
        let r = merged_report(vec![row("a"), row("a"), row("b")], Vec::new(), "compare");
        let t1 = super::super::registry().into_iter().find(|t| t.id() == "geodesic-t1").unwrap();
        assert_eq!(r.title, format!("{}, 2 runs merged", t1.title()));
        let other = Row { table: "gone".into(), ..Row::default() };
        assert_eq!(merged_report(vec![other], Vec::new(), "x").title, "gone, 1 run merged");
    }
}
