//! What `neuroport track geodesic` writes: the tractogram (.tck or .trk by extension, world
//! coordinates from the NIfTI affine) and a CSV with one row per written fibre.

use super::seeding::voxel_to_world_dir;
use super::{FibreBatch, FibreEnd, GeodesicKernels, Seed, TraceParams};
use crate::io::{tck, trk};
use crate::volume::{Geometry, Outputs};
use anyhow::{anyhow, bail, Result};
use rayon::prelude::*;
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Tck,
    Trk,
}

impl Format {
    pub fn of(path: &Path) -> Result<Format> {
        match path.extension().and_then(|e| e.to_str()).map(|e| e.to_ascii_lowercase()).as_deref() {
            Some("tck") => Ok(Format::Tck),
            Some("trk") => Ok(Format::Trk),
            _ => bail!("{}: the tractogram must end in .tck (MRtrix) or .trk (TrackVis)", path.display()),
        }
    }
}

/// The CSV written beside a tractogram: same name, `.csv`.
pub fn csv_path(tractogram: &Path) -> PathBuf {
    tractogram.with_extension("csv")
}

pub const CSV_HEADER: [&str; 14] = ["fibre", "seed", "seed_x", "seed_y", "seed_z", "dir_x", "dir_y", "dir_z", "length_mm", "steps", "stop", "connectivity", "reached_target", "target_length_mm"];

/// Fibre i's (kept) points in world millimetres into `out` (its length).
fn world_into(geom: &Geometry, batch: &FibreBatch, i: usize, out: &mut [[f32; 3]]) {
    for (o, p) in out.iter_mut().zip(batch.fibre(i)) {
        *o = geom.voxel_to_world(p.map(|c| c as f64)).map(|c| c as f32);
    }
}

fn world(geom: &Geometry, batch: &FibreBatch, i: usize) -> Vec<[f32; 3]> {
    let mut out = vec![[0.0; 3]; batch.fibre(i).len()];
    world_into(geom, batch, i, &mut out);
    out
}

/// Adds the tractogram of the fibres `order` names (in that order) and its CSV to `out`.
pub fn write(out: &mut Outputs, path: &Path, geom: &Geometry, batch: &FibreBatch, seeds: &[Seed], order: &[usize]) -> Result<()> {
    match Format::of(path)? {
        Format::Tck => out.file(path, |tmp| {
            // total_count: every fibre traced, as tckgen counts those a target rejected.
            let mut w = tck::TckWriter::create_of(tmp, order.len(), batch.len())?;
            w.append(order.len(), |k| batch.fibre(order[k]).len(), |k, pts| world_into(geom, batch, order[k], pts))?;
            w.finish()
        })?,
        Format::Trk => out.file(path, |tmp| trk::write_trk(tmp, &trk::TrkSpace::of(geom), order.iter().map(|&i| world(geom, batch, i))))?,
    }
    write_csv_of(out, path, geom, &batch.ends, seeds, order)
}

/// Traces every seed on `k` and adds the `.tck` of all fibres (seed order, as [`write`] with
/// every fibre selected) and its CSV to `out`, writing each batch while the next one traces:
/// the points are never all held at once. Returns the fibres' summaries (no points).
/// `batch` fibres a batch ([`super::batch_len`] for a whole run); the points `p` keeps
/// ([`TraceParams::every`]) written.
pub fn trace_to_tck(k: &mut dyn GeodesicKernels, seeds: &[Seed], p: &TraceParams, batch: usize, geom: &Geometry, out: &mut Outputs, path: &Path, progress: bool) -> Result<FibreBatch> {
    stream_to_tck(|sink| super::trace_streamed(k, seeds, p, batch, progress, sink), seeds, geom, out, path)
}

/// [`trace_to_tck`] with the tracing given as `trace`, which hands every fibre of `seeds` to its
/// sink in seed order (one device's batches, or a split's chunks put back in order).
pub fn stream_to_tck(trace: impl FnOnce(&mut dyn FnMut(FibreBatch) -> Result<()>) -> Result<()>, seeds: &[Seed], geom: &Geometry, out: &mut Outputs, path: &Path) -> Result<FibreBatch> {
    if Format::of(path)? != Format::Tck {
        bail!("{}: streamed writing makes .tck only", path.display());
    }
    let tmp = out.temp_for(path)?;
    // The OS's words without "(os error N)", as every other output's error.
    let named = |e: anyhow::Error| anyhow!("cannot write {}: {}", path.display(), crate::volume::write_cause(&e, &tmp, path));
    let start = std::time::Instant::now();
    let at = |name: &str| crate::runtime::stages::record(name, start.elapsed().as_secs_f64() * 1e3);
    let w = tck::TckWriter::create(&tmp, seeds.len()).map_err(named)?;
    let mut ends = Vec::with_capacity(seeds.len());
    let (tx, rx) = std::sync::mpsc::sync_channel::<FibreBatch>(1);
    let (traced, written) = std::thread::scope(|sc| {
        // Each batch's CSV rows are formatted once its points are handed to the tractogram's
        // writing thread, while that thread writes: the cores are otherwise idle then.
        let writer = sc.spawn(move || -> Result<(tck::TckWriter, Vec<String>)> {
            let (mut w, mut csv, mut base) = (w, Vec::new(), 0);
            for b in rx {
                w.append(b.len(), |i| b.fibre(i).len(), |i, pts| world_into(geom, &b, i, pts))?;
                let local: Vec<usize> = (0..b.len()).collect();
                csv.extend(csv_runs(geom, &b.ends, &seeds[base..base + b.len()], &local, base));
                base += b.len();
            }
            Ok((w, csv))
        });
        let traced = trace(&mut |b| {
            ends.extend_from_slice(&b.ends);
            tx.send(b).map_err(|_| anyhow!("the tractogram writer stopped"))
        });
        drop(tx);
        at("tck traced at");
        (traced, writer.join().map_err(|_| anyhow!("tractogram writer thread panicked")).and_then(|w| w))
    });
    // A writer failure stops the tracing too: report the cause, not the closed channel.
    let (w, csv) = written.map_err(named)?;
    traced?;
    at("tck encoded at");
    w.finish().map_err(named)?;
    at("tck written at");
    crate::runtime::stages::stage("csv", || write_csv_runs(out, path, csv))?;
    Ok(FibreBatch { ends, ..Default::default() })
}

/// The CSV beside the tractogram: one row per fibre of `order`.
fn write_csv_of(out: &mut Outputs, path: &Path, geom: &Geometry, ends: &[FibreEnd], seeds: &[Seed], order: &[usize]) -> Result<()> {
    write_csv_runs(out, path, csv_runs(geom, ends, seeds, order, 0))
}

/// The CSV's rows for the fibres of `order` (indices into `ends` and `seeds`), numbered from
/// `first` (row k = first + j, seed first + order[j]), formatted on every core a run of rows at
/// a time (a whole-brain run has hundreds of thousands): the same bytes as the `csv` crate
/// writes for them (no field needs quoting: numbers and stop names).
fn csv_runs(geom: &Geometry, ends: &[FibreEnd], seeds: &[Seed], order: &[usize], first: usize) -> Vec<String> {
    const RUN: usize = 4096;
    order
        .par_chunks(RUN)
        .enumerate()
        .map(|(r, run)| {
            use std::fmt::Write as _;
            let mut s = String::with_capacity(run.len() * 160);
            for (j, &i) in run.iter().enumerate() {
                let (sd, e) = (&seeds[i], &ends[i]);
                let p = geom.voxel_to_world(sd.pos.map(|c| c as f64));
                let d = voxel_to_world_dir(geom, sd.dir);
                let (k, i) = (first + r * RUN + j, first + i);
                let _ = write!(s, "{k},{i},{:.4},{:.4},{:.4},{:.6},{:.6},{:.6},{:.4},{},{},{:.6e},", p[0], p[1], p[2], d[0], d[1], d[2], e.length_mm, e.steps, e.stop.name(), e.connectivity());
                let _ = match e.target_step {
                    Some(_) => writeln!(s, "1,{:.4}", e.target_length_mm),
                    None => writeln!(s, "0,"),
                };
            }
            s
        })
        .collect()
}

/// Adds the CSV of `runs` (rows from [`csv_runs`]) under its header to `out`.
fn write_csv_runs(out: &mut Outputs, path: &Path, runs: Vec<String>) -> Result<()> {
    out.file(&csv_path(path), |tmp| {
        use std::io::Write as _;
        let mut f = crate::volume::create_file(tmp).map_err(|e| anyhow!("cannot create {}: {e}", tmp.display()))?;
        f.write_all(format!("{}\n", CSV_HEADER.join(",")).as_bytes())?;
        for r in runs {
            f.write_all(r.as_bytes())?;
        }
        Ok(())
    })
}

#[cfg(test)]
#[test]
fn the_csv_is_the_csv_crates_bytes() {
    use super::Stop;
    use rand::Rng;
    let (seed, mut r) = crate::synth::fresh_rng();
    let geom = Geometry::synthetic([9, 10, 11], [1.5, 1.5, 2.0]);
    // Past one run of rows, with every stop, reached and unreached targets, NaN and infinite
    // lengths.
    let n = 4096 + 300;
    let seeds: Vec<Seed> = (0..n).map(|_| Seed { pos: [r.random_range(0.0..9.0), r.random_range(0.0..10.0), r.random_range(0.0..11.0)], dir: [r.random_range(-1.0..1.0), r.random(), r.random()] }).collect();
    let pick = |r: &mut crate::synth::SeededRng| [f32::NAN, f32::INFINITY, 0.0, -0.0, 1e-7, 123.456_79][r.random_range(0..6)];
    let ends: Vec<FibreEnd> = (0..n)
        .map(|_| FibreEnd {
            steps: r.random_range(0..3000),
            stop: Stop::from_code(r.random_range(0..6)),
            length_mm: if r.random::<f32>() < 0.1 { pick(&mut r) } else { r.random_range(0.0..300.0) },
            riemann: r.random_range(0.0..50.0),
            target_step: if r.random() { Some(r.random_range(0..100)) } else { None },
            target_length_mm: r.random_range(0.0..100.0),
            target_riemann: if r.random::<f32>() < 0.1 { 0.0 } else { r.random_range(0.0..20.0) },
        })
        .collect();
    let mut order: Vec<usize> = (0..n).collect();
    order.reverse();
    order.truncate(n - 7);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.tck");
    let mut out = Outputs::new();
    write_csv_of(&mut out, &path, &geom, &ends, &seeds, &order).unwrap();
    out.commit().unwrap();
    let rows: Vec<Vec<String>> = order
        .iter()
        .enumerate()
        .map(|(k, &i)| {
            let (s, e) = (&seeds[i], &ends[i]);
            let p = geom.voxel_to_world(s.pos.map(|c| c as f64));
            let d = voxel_to_world_dir(&geom, s.dir);
            let mut row: Vec<String> = vec![k.to_string(), i.to_string()];
            row.extend(p.iter().map(|c| format!("{c:.4}")));
            row.extend(d.iter().map(|c| format!("{c:.6}")));
            row.extend([format!("{:.4}", e.length_mm), e.steps.to_string(), e.stop.name().to_string(), format!("{:.6e}", e.connectivity())]);
            row.push((e.target_step.is_some() as u8).to_string());
            row.push(if e.target_step.is_some() { format!("{:.4}", e.target_length_mm) } else { String::new() });
            row
        })
        .collect();
    let reference = dir.path().join("reference.csv");
    crate::io::table::write_csv(&reference, &CSV_HEADER, &rows).unwrap();
    let (a, b) = (std::fs::read(csv_path(&path)).unwrap(), std::fs::read(&reference).unwrap());
    assert!(a.len() > 60 * n, "seed {seed}: too short");
    // The first differing line, if any, then the bytes (a missing or extra line).
    for (la, lb) in String::from_utf8_lossy(&a).lines().zip(String::from_utf8_lossy(&b).lines()) {
        assert_eq!(la, lb, "seed {seed}");
    }
    assert!(a == b, "seed {seed}: the CSV differs from the csv crate's");
}
