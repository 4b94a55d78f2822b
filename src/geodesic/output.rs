//! What `neuroport track geodesic` writes: the tractogram (.tck or .trk by extension, world
//! coordinates from the NIfTI affine) and a CSV with one row per written fibre.

use super::seeding::voxel_to_world_dir;
use super::{FibreBatch, FibreEnd, GeodesicKernels, Seed, TraceParams};
use crate::io::table::write_csv;
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

/// Fibre i's points in world millimetres: every `every`-th step from its start, and its last
/// (tckgen's `-downsample`).
fn world(geom: &Geometry, batch: &FibreBatch, i: usize, every: usize) -> Vec<[f32; 3]> {
    let f = batch.fibre(i);
    let kept = |j: usize| j % every.max(1) == 0 || j + 1 == f.len();
    f.iter().enumerate().filter(|&(j, _)| kept(j)).map(|(_, p)| geom.voxel_to_world(p.map(|c| c as f64)).map(|c| c as f32)).collect()
}

/// Adds the tractogram of the fibres `order` names (in that order), every `every`-th point of each
/// (see [`world`]), and its CSV to `out`.
#[allow(clippy::too_many_arguments)]
pub fn write(out: &mut Outputs, path: &Path, geom: &Geometry, batch: &FibreBatch, seeds: &[Seed], order: &[usize], every: usize) -> Result<()> {
    match Format::of(path)? {
        Format::Tck => out.file(path, |tmp| tck::write_tck_par(tmp, order.len(), |k| world(geom, batch, order[k], every).into()))?,
        Format::Trk => out.file(path, |tmp| trk::write_trk(tmp, &trk::TrkSpace::of(geom), order.iter().map(|&i| world(geom, batch, i, every))))?,
    }
    write_csv_of(out, path, geom, &batch.ends, seeds, order)
}

/// Traces every seed on `k` and adds the `.tck` of all fibres (seed order, as [`write`] with
/// every fibre selected) and its CSV to `out`, writing each batch while the next one traces:
/// the points are never all held at once. Returns the fibres' summaries (no points).
/// `batch` fibres a batch ([`super::batch_len`] for a whole run); every `every`-th point written.
#[allow(clippy::too_many_arguments)]
pub fn trace_to_tck(k: &mut dyn GeodesicKernels, seeds: &[Seed], p: &TraceParams, batch: usize, geom: &Geometry, out: &mut Outputs, path: &Path, every: usize, progress: bool) -> Result<FibreBatch> {
    stream_to_tck(|sink| super::trace_streamed(k, seeds, p, batch, progress, sink), seeds, geom, out, path, every)
}

/// [`trace_to_tck`] with the tracing given as `trace`, which hands every fibre of `seeds` to its
/// sink in seed order (one device's batches, or a split's chunks put back in order).
pub fn stream_to_tck(trace: impl FnOnce(&mut dyn FnMut(FibreBatch) -> Result<()>) -> Result<()>, seeds: &[Seed], geom: &Geometry, out: &mut Outputs, path: &Path, every: usize) -> Result<FibreBatch> {
    if Format::of(path)? != Format::Tck {
        bail!("{}: streamed writing makes .tck only", path.display());
    }
    let tmp = out.temp_for(path)?;
    let named = |e: anyhow::Error| anyhow!("cannot write {}: {e:#}", path.display());
    let w = tck::TckWriter::create(&tmp, seeds.len()).map_err(named)?;
    let mut ends = Vec::with_capacity(seeds.len());
    let (tx, rx) = std::sync::mpsc::sync_channel::<FibreBatch>(1);
    let (traced, written) = std::thread::scope(|sc| {
        let writer = sc.spawn(move || -> Result<tck::TckWriter> {
            let mut w = w;
            for b in rx {
                w.append(b.len(), |i| world(geom, &b, i, every).into())?;
            }
            Ok(w)
        });
        let traced = trace(&mut |b| {
            ends.extend_from_slice(&b.ends);
            tx.send(b).map_err(|_| anyhow!("the tractogram writer stopped"))
        });
        drop(tx);
        (traced, writer.join().map_err(|_| anyhow!("tractogram writer thread panicked")).and_then(|w| w))
    });
    // A writer failure stops the tracing too: report the cause, not the closed channel.
    let w = written.map_err(named)?;
    traced?;
    w.finish().map_err(named)?;
    let batch = FibreBatch { ends, ..Default::default() };
    let order: Vec<usize> = (0..seeds.len()).collect();
    write_csv_of(out, path, geom, &batch.ends, seeds, &order)?;
    Ok(batch)
}

/// The CSV beside the tractogram: one row per fibre of `order`.
fn write_csv_of(out: &mut Outputs, path: &Path, geom: &Geometry, ends: &[FibreEnd], seeds: &[Seed], order: &[usize]) -> Result<()> {
    let rows: Vec<Vec<String>> = order
        .par_iter()
        .enumerate()
        .map(|(k, &i)| {
            let s = &seeds[i];
            let e = &ends[i];
            let p = geom.voxel_to_world(s.pos.map(|c| c as f64));
            let d = voxel_to_world_dir(geom, s.dir);
            vec![
                k.to_string(),
                i.to_string(),
                format!("{:.4}", p[0]),
                format!("{:.4}", p[1]),
                format!("{:.4}", p[2]),
                format!("{:.6}", d[0]),
                format!("{:.6}", d[1]),
                format!("{:.6}", d[2]),
                format!("{:.4}", e.length_mm),
                e.steps.to_string(),
                e.stop.name().to_string(),
                format!("{:.6e}", e.connectivity()),
                (e.target_step.is_some() as u8).to_string(),
                if e.target_step.is_some() { format!("{:.4}", e.target_length_mm) } else { String::new() },
            ]
        })
        .collect();
    out.file(&csv_path(path), |tmp| write_csv(tmp, &CSV_HEADER, &rows))
}
