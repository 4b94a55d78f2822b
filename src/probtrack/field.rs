//! What the tracker reads: the bedpost sample volumes, interleaved so that one step reads one
//! 32-byte record (two float4: x, y, z, f of stick 1 then of stick 2) per voxel per sample, and
//! one 32-bit ROI word per voxel (mask, exclusion, waypoint and target bits).
//!
//! bedpost stores each stick as (theta, phi) in FSL's bvecs frame; the records hold the unit
//! vector in image voxel axes (x negated where FSL's convention asks, `Geometry::bvecs_to_voxel`),
//! made once on the host, so no device evaluates a sine and every backend reads the same floats.
//! Components below 1e-12 are stored as 0 so no product in the step is subnormal (GPUs that
//! flush subnormals then agree with the CPU to the bit).

use super::crop::Crop;
use crate::volume::{read_mask, read_mask_like, read_nifti, xyz_of, Geometry, SideBySide, TakenOut, Whole};
use anyhow::{bail, Result};
use rayon::prelude::*;
use std::path::Path;
use std::sync::Arc;

/// Bit of a voxel inside the tracking mask.
pub const INSIDE: u32 = 1;
/// Bit of a voxel of the exclusion mask: a streamline entering it is discarded.
pub const EXCLUDE: u32 = 2;
/// First bit of the waypoint masks, then the targets.
pub const FIRST_ROI: u32 = 2;
/// Waypoint and target masks together.
pub const MAX_ROIS: usize = 30;

/// Floats per voxel per sample.
pub const RECORD: usize = 8;

pub struct Field {
    pub geom: Geometry,
    pub nsamp: usize,
    /// The voxels whose records `samples` holds: those tracking can read, and the index of
    /// their bounding box (`crop.rs`).
    pub crop: Crop,
    /// nsamp x held voxels x [x1, y1, z1, f1, x2, y2, z2, f2]; shared (not copied) by the CPU
    /// tracker.
    pub samples: Arc<Vec<f32>>,
    /// Per voxel: [`INSIDE`], [`EXCLUDE`], then one bit per waypoint and per target.
    pub roi: Vec<u32>,
    pub nwaypoints: usize,
    pub targets: Vec<String>,
    /// The file the grid was read from (the folder's merged_th1samples): masks must lie on its
    /// grid, size and affine, as every command's masks must (`read_mask_like`). None for a field
    /// built from arrays (`from_angles`), whose masks are checked for size only.
    pub grid_file: Option<std::path::PathBuf>,
    /// Voxels of the tracking mask taken out of it for NaN/Inf samples.
    pub nonfinite: TakenOut,
    /// The seed mask `from_bedpost` read, and its voxels: `seeds` does not read it again.
    seed_voxels: Option<(std::path::PathBuf, Vec<u32>)>,
}

/// The record of one stick: unit vector (voxel axes) and fraction.
pub fn stick_record(geom: &Geometry, th: f32, ph: f32, f: f32) -> [f32; 4] {
    record_of(geom, crate::bedpost::post::direction(th, ph), f)
}

/// The record of a stick of direction `d` (FSL's bvecs frame) and fraction `f`.
fn record_of(geom: &Geometry, d: [f64; 3], f: f32) -> [f32; 4] {
    let v = geom.bvecs_to_voxel(d);
    let c = |x: f64| if x.abs() < 1e-12 { 0.0 } else { x as f32 };
    // A non-finite fraction stays so: a bedpost folder's reading takes its voxel out of the mask.
    [c(v[0]), c(v[1]), c(v[2]), f]
}

fn read_samples(dir: &Path, name: &str, dims: Option<[usize; 3]>, nvol: Option<usize>) -> Result<crate::volume::Volume> {
    let p = image(dir, name)?;
    let v = read_nifti(&p)?;
    if let Some(d) = dims {
        if v.geom.dims != d {
            bail!("{}: grid {:?} differs from merged_th1samples' {:?}", p.display(), v.geom.dims, d);
        }
    }
    if let Some(n) = nvol {
        if v.nvol() != n {
            bail!("{}: {} sample volumes, merged_th1samples has {}", p.display(), v.nvol(), n);
        }
    }
    Ok(v)
}

/// Where the records come from: neuroport's own files, read side by side, or merged_th1samples
/// read whole (another writer's), the others to follow one by one.
enum Source {
    Ours(SideBySide),
    Whole(crate::volume::Volume),
}

/// bedpost's sample volumes, in the records' order.
const SAMPLES: [&str; 6] = ["merged_th1samples", "merged_ph1samples", "merged_f1samples", "merged_th2samples", "merged_ph2samples", "merged_f2samples"];

/// The records of a stretch of sample-volume elements (`vols`: th1, ph1, f1, then th2, ph2, f2
/// of the same elements, or only the first three for a single-stick folder) into `out` (8 floats
/// each). A missing second stick's record is all zero: no direction and fraction 0, which no
/// `--fibthresh` lets the step follow. A run's angles are rows, turned into directions together
/// (`directions`: vectorised, the same values as one at a time), so the records do not depend
/// on how the elements are cut into stretches.
fn fill_records(geom: &Geometry, vols: &[&[f32]], out: &mut [f32]) {
    let mut dirs = vec![[0.0f64; 3]; crate::volume::planes::RUN.min(vols[0].len())];
    for (k, out) in out.chunks_mut(crate::volume::planes::RUN * RECORD).enumerate() {
        let ks = k * crate::volume::planes::RUN..k * crate::volume::planes::RUN + out.len() / RECORD;
        let dirs = &mut dirs[..ks.len()];
        for (stick, v) in vols.chunks(3).enumerate() {
            crate::bedpost::post::directions(&v[0][ks.clone()], &v[1][ks.clone()], dirs);
            for ((r, &d), &f) in out.chunks_mut(RECORD).zip(dirs.iter()).zip(&v[2][ks.clone()]) {
                r[4 * stick..4 * stick + 4].copy_from_slice(&record_of(geom, d, f));
            }
        }
        if vols.len() == 3 {
            out.chunks_mut(RECORD).for_each(|r| r[4..].fill(0.0));
        }
    }
}

/// The sample volumes of `dir`, in the records' order: all six, or th1, ph1 and f1 alone for a
/// folder of one stick per voxel (`bedpostx -n 1`; probtrackx tracks those too). A folder of
/// more sticks (`-n 3`) is tracked on its first two, with a warning: the records hold two, as
/// 003's tracker does.
fn sample_names(dir: &Path) -> Result<&'static [&'static str]> {
    let has = |n: &str| find_image(dir, n).map(|p| p.is_some());
    if has("merged_th3samples")? {
        eprintln!("warning: {}: holds a third stick (merged_th3samples); probtrack follows the first two sticks only", dir.display());
    }
    // A second stick partly there is a damaged folder: all six are then asked for, so the error
    // names the missing file.
    let mut second = false;
    for n in &SAMPLES[3..] {
        second |= has(n)?;
    }
    Ok(if second { &SAMPLES[..] } else { &SAMPLES[..3] })
}

/// The folder's image `name`: name.nii.gz, else name.nii (bedpost's outputs under
/// FSLOUTPUTTYPE=NIFTI), as FSL's tools find an image by its base name.
fn image(dir: &Path, name: &str) -> Result<std::path::PathBuf> {
    find_image(dir, name)?.ok_or_else(|| anyhow::anyhow!("{}: missing, nor {name}.nii beside it (is {} a bedpost output folder?)", dir.join(format!("{name}.nii.gz")).display(), dir.display()))
}

/// name.nii.gz or name.nii, or neither; both is an error, as FSL refuses "multiple possible
/// filenames" for one base name: a second bedpost run into the folder under another
/// FSLOUTPUTTYPE leaves the first run's files beside its own, and the .nii.gz, read first, was
/// the stale one.
fn find_image(dir: &Path, name: &str) -> Result<Option<std::path::PathBuf>> {
    let gz = dir.join(format!("{name}.nii.gz"));
    let nii = dir.join(format!("{name}.nii"));
    Ok(match (gz.exists(), nii.exists()) {
        (true, true) => bail!("{}: both {name}.nii.gz and {name}.nii are here (bedpost run twice, under different FSLOUTPUTTYPE?); remove the stale one", dir.display()),
        (true, false) => Some(gz),
        (false, true) => Some(nii),
        (false, false) => None,
    })
}

/// An error naming the file (`files`: merged_f1samples, merged_f2samples), the first voxel of
/// `inside`, its first sample and the value, when a fraction there lies outside [0, 1]. No
/// rounding is allowed for: bedpost rejects every proposal outside (0, 1) (`bedpost::cpu`'s
/// `inside`, the kernels' np_bp_inside), starts the chains within [0.05, 0.9], and writes the
/// float32 samples unchanged, as bedpostx does; a value outside is a damaged or foreign file.
/// Voxels off the mask are read only beside it, for a step's sub-voxel choice, so they are not
/// checked (as for NaN).
fn check_fractions(samples: &[f32], dims: [usize; 3], crop: &Crop, inside: &[u8], files: [&Path; 2]) -> Result<()> {
    // Held voxels run in the grid's order, so the first bad one found is the grid's first.
    let nvox = crop.nvox();
    let bad = |k: usize, r: &[f32]| inside[crop.grid_voxel(dims, k % nvox)] != 0 && [r[3], r[7]].iter().any(|f| !(0.0..=1.0).contains(f));
    if !samples.par_chunks(RECORD).enumerate().any(|(k, r)| bad(k, r)) {
        return Ok(());
    }
    let nsamp = samples.len() / (RECORD * nvox);
    let record = |s: usize, v: usize| &samples[(s * nvox + v) * RECORD..][..RECORD];
    let v = (0..nvox).find(|&v| (0..nsamp).any(|s| bad(v, record(s, v)))).expect("a bad record was found");
    let s = (0..nsamp).find(|&s| bad(v, record(s, v))).expect("the voxel has a bad record");
    let (stick, f) = [record(s, v)[3], record(s, v)[7]].into_iter().enumerate().find(|(_, f)| !(0.0..=1.0).contains(f)).expect("a bad fraction");
    let [x, y, z] = xyz_of(crop.grid_voxel(dims, v), dims);
    bail!("{}: fraction {f} at x={x} y={y} z={z} sample {s} is outside [0, 1]", files[stick].display())
}

/// The tracking mask: `mask`, else the folder's nodif_brain_mask, else mean_f1samples > 0; a
/// mask file must lie on the grid (size and affine) of `grid_file`, the samples' file.
fn tracking_mask(dir: &Path, mask: Option<&Path>, geom: &Geometry, grid_file: &Path) -> Result<Vec<u8>> {
    let dims = geom.dims;
    Ok(if let Some(m) = mask {
        read_mask_like(m, geom, grid_file, "tracking mask")?
    } else if let Some(m) = find_image(dir, "nodif_brain_mask")? {
        read_mask_like(&m, geom, grid_file, "tracking mask")?
    } else {
        let mf = read_samples(dir, "mean_f1samples", Some(dims), None)?;
        mf.frame(0).iter().map(|&x| (x > 0.0) as u8).collect()
    })
}

impl Field {
    /// Reads a bedpost folder (merged_{th,ph,f}{1,2}samples). The tracking mask is `mask`, else
    /// the folder's nodif_brain_mask, else the voxels with mean_f1samples > 0. Only the records
    /// that tracking from the seed mask `seeds` can read are kept (`crop.rs`); with no seed
    /// mask, those of tracking within the mask, and `run` refuses seeds beyond them.
    pub fn from_bedpost(dir: &Path, mask: Option<&Path>, seeds: Option<&Path>) -> Result<Field> {
        if !dir.is_dir() {
            bail!("{}: not a folder", dir.display());
        }
        use crate::runtime::stages::stage;
        let names = sample_names(dir)?;
        let paths: Vec<_> = names.iter().map(|n| image(dir, n)).collect::<Result<_>>()?;
        // neuroport's own sample files are read side by side into the records, each stretch of
        // voxels while its angles are in cache; other writers' files one by one, each file's
        // box gathered into the records' slots, then turned.
        let src = match SideBySide::open(&paths) {
            Some(files) => Source::Ours(files),
            None => Source::Whole(stage("read samples", || read_samples(dir, names[0], None, None))?),
        };
        let (geom, ns) = match &src {
            Source::Ours(f) => (f.geom().clone(), f.dims()[3]),
            Source::Whole(t) => (t.geom.clone(), t.nvol()),
        };
        // The masks before the samples: only the records tracking can read are kept.
        let mut inside = stage("read mask", || tracking_mask(dir, mask, &geom, &paths[0]))?;
        let seed_voxels = seeds.map(|s| read_mask_like(s, &geom, &paths[0], "seed mask").map(|m| (s.to_path_buf(), crate::volume::masks::inside_as(&m, |v| v as u32)))).transpose()?;
        let listed = seed_voxels.iter().flat_map(|(_, s)| s.iter().map(|&v| v as usize));
        let crop = Crop::around(geom.dims, (0..geom.nvox()).filter(|&v| inside[v] != 0).chain(listed));
        let mut f = match src {
            Source::Ours(files) => stage("samples to records", || Self::side_by_side(&files, crop))?,
            Source::Whole(th1) => stage("read samples", || Self::one_by_one(dir, names, th1, ns, crop))?,
        };
        f.seed_voxels = seed_voxels;
        let crop = f.crop.clone();
        let samples = Arc::get_mut(&mut f.samples).expect("records just made, not shared yet");
        f.nonfinite = stage("check samples", || super::nonfinite::skip_nonfinite(samples, f.geom.dims, &crop, &mut inside, dir))?;
        // A single-stick folder's second fractions are the records' zeros, never outside.
        stage("check fractions", || check_fractions(samples, f.geom.dims, &crop, &inside, [&paths[2], paths.get(5).unwrap_or(&paths[2])]))?;
        f.roi = inside.iter().map(|&m| if m != 0 { INSIDE } else { 0 }).collect();
        f.grid_file = Some(paths[0].clone());
        Ok(f)
    }

    fn side_by_side(files: &SideBySide, crop: Crop) -> Result<Field> {
        let (geom, ns) = (files.geom().clone(), files.dims()[3]);
        let mut samples = vec![0.0f32; ns * crop.nvox() * RECORD];
        let whole = Whole(samples.as_mut_ptr(), samples.len());
        files.read_each(|e0, vals| {
            for (off, at, n) in crop.pieces(geom.dims, e0, vals[0].len()) {
                let piece: Vec<&[f32]> = vals.iter().map(|v| &v[off..off + n]).collect();
                // SAFETY: each element is handed out once, and lands in its own box record.
                fill_records(&geom, &piece, unsafe { whole.range(at * RECORD, (at + n) * RECORD) });
            }
        })?;
        Ok(Field { nsamp: ns, crop, samples: Arc::new(samples), roi: vec![INSIDE; geom.nvox()], nwaypoints: 0, targets: Vec::new(), geom, grid_file: None, nonfinite: TakenOut::default(), seed_voxels: None })
    }

    /// merged_th1samples (`th1`, read) and the other sample volumes of `names`, read one at a
    /// time, each file's box copied into its slot of the records (th1, ph1, f1, th2, ph2, f2:
    /// six of the eight floats), then every record turned in place: the peak is the records
    /// and one file, not the six files whole beside the records (10 GB on an HCP folder).
    fn one_by_one(dir: &Path, names: &[&str], th1: crate::volume::Volume, ns: usize, crop: Crop) -> Result<Field> {
        let geom = th1.geom.clone();
        let mut samples = vec![0.0f32; ns * crop.nvox() * RECORD];
        let mut gather = |slot: usize, v: &[f32]| {
            for (off, at, n) in crop.pieces(geom.dims, 0, v.len()) {
                for (r, &x) in samples[at * RECORD..(at + n) * RECORD].chunks_mut(RECORD).zip(&v[off..off + n]) {
                    r[slot] = x;
                }
            }
        };
        gather(0, th1.as_flat());
        drop(th1);
        for (slot, n) in names.iter().enumerate().skip(1) {
            let v = read_samples(dir, n, Some(geom.dims), Some(ns))?;
            gather(slot, v.as_flat());
        }
        let nf = names.len();
        samples.par_chunks_mut(crate::volume::planes::RUN * RECORD).for_each(|out| {
            let cols: Vec<Vec<f32>> = (0..nf).map(|c| out.chunks(RECORD).map(|r| r[c]).collect()).collect();
            let cols: Vec<&[f32]> = cols.iter().map(|c| &c[..]).collect();
            fill_records(&geom, &cols, out);
        });
        Ok(Field { nsamp: ns, crop, samples: Arc::new(samples), roi: vec![INSIDE; geom.nvox()], nwaypoints: 0, targets: Vec::new(), geom, grid_file: None, nonfinite: TakenOut::default(), seed_voxels: None })
    }

    /// Interleaves bedpost's six sample volumes (th1, ph1, f1, th2, ph2, f2; each nsamp x nvox)
    /// into records; every voxel is inside the mask until `roi` is set.
    pub fn from_angles(geom: Geometry, ns: usize, vols: [&[f32]; 6]) -> Field {
        Self::from_sticks(geom, ns, &vols)
    }

    /// As [`Field::from_angles`], for six volumes or the first stick's three alone.
    fn from_sticks(geom: Geometry, ns: usize, vols: &[&[f32]]) -> Field {
        let nvox = geom.nvox();
        let mut samples = vec![0.0f32; ns * nvox * RECORD];
        // A run of records per task, not a sample volume: 50 samples over 16 cores left the
        // last round's cores idle (round 26).
        samples.par_chunks_mut(crate::volume::planes::RUN * RECORD).enumerate().for_each(|(t, out)| {
            let ks = t * crate::volume::planes::RUN..t * crate::volume::planes::RUN + out.len() / RECORD;
            let stretch: Vec<&[f32]> = vols.iter().map(|v| &v[ks.clone()]).collect();
            fill_records(&geom, &stretch, out);
        });
        Field { crop: Crop::whole(geom.dims), geom, nsamp: ns, samples: Arc::new(samples), roi: vec![INSIDE; nvox], nwaypoints: 0, targets: Vec::new(), grid_file: None, nonfinite: TakenOut::default(), seed_voxels: None }
    }

    /// Refuses seeds whose records, or a neighbour's, the field does not hold (a field read for
    /// another seed mask): a step there would read past the samples.
    pub fn check_seeds(&self, seeds: &[u32]) -> Result<()> {
        if let Some(&v) = seeds.par_iter().find_first(|&&v| v as usize >= self.nvox() || !self.crop.holds_around(self.geom.dims, v as usize)) {
            bail!("probtrack: seed voxel {v} or a voxel beside it is not among the voxels of samples read (the field was read for another seed mask)");
        }
        Ok(())
    }

    pub fn nvox(&self) -> usize {
        self.geom.nvox()
    }

    fn add_bit(&mut self, bit: u32, m: &[u8]) -> Result<()> {
        if m.len() != self.roi.len() {
            bail!("a mask of {} voxels on a grid of {}", m.len(), self.roi.len());
        }
        for (w, &x) in self.roi.iter_mut().zip(m) {
            if x != 0 {
                *w |= 1 << bit;
            }
        }
        Ok(())
    }

    fn next_bit(&self) -> Result<u32> {
        let used = self.nwaypoints + self.targets.len();
        if used >= MAX_ROIS {
            bail!("at most {MAX_ROIS} waypoint and target masks together");
        }
        Ok(FIRST_ROI + used as u32)
    }

    /// A mask file (`what`: "seed mask", ...) on this field's grid: its size and, when the field
    /// was read from files, its affine too (a mask of the right size shifted or flipped in the
    /// world would otherwise seed or stop streamlines in the wrong voxels without a word).
    fn read(&self, path: &Path, what: &str) -> Result<Vec<u8>> {
        match &self.grid_file {
            Some(g) => read_mask_like(path, &self.geom, g, what),
            None => read_mask(path, Some(self.geom.dims)),
        }
    }

    /// Marks the exclusion mask's voxels.
    pub fn set_exclusion(&mut self, path: &Path) -> Result<()> {
        let m = self.read(path, "exclusion mask")?;
        self.exclude_voxels(&m)
    }

    /// Seed voxels inside the exclusion mask (`exclusion`) discard every streamline they start:
    /// counted in a warning naming both files.
    pub fn warn_excluded_seeds(&self, seeds: &[u32], seeds_path: &Path, exclusion: &Path) {
        let n = seeds.iter().filter(|&&v| self.roi[v as usize] & EXCLUDE != 0).count();
        if n > 0 {
            eprintln!("warning: {}: {n} of {} seed voxels of {} lie inside the exclusion mask; their streamlines are all discarded", exclusion.display(), seeds.len(), seeds_path.display());
        }
    }

    pub fn exclude_voxels(&mut self, m: &[u8]) -> Result<()> {
        self.add_bit(1, m)
    }

    /// Adds a waypoint mask (before any target).
    pub fn add_waypoint(&mut self, path: &Path) -> Result<()> {
        let m = self.read(path, "waypoint mask")?;
        self.add_waypoint_voxels(&m)
    }

    pub fn add_waypoint_voxels(&mut self, m: &[u8]) -> Result<()> {
        if !self.targets.is_empty() {
            bail!("waypoints go before targets");
        }
        let b = self.next_bit()?;
        self.add_bit(b, m)?;
        self.nwaypoints += 1;
        Ok(())
    }

    /// Adds a target mask named `name` (seeds_to_<name>).
    pub fn add_target(&mut self, path: &Path, name: &str) -> Result<()> {
        let m = self.read(path, "target mask")?;
        self.add_target_voxels(&m, name)
    }

    pub fn add_target_voxels(&mut self, m: &[u8], name: &str) -> Result<()> {
        let b = self.next_bit()?;
        self.add_bit(b, m)?;
        self.targets.push(name.to_string());
        Ok(())
    }

    /// Bits every kept streamline must have (all waypoints).
    pub fn waypoint_bits(&self) -> u32 {
        (0..self.nwaypoints).fold(0, |m, i| m | 1 << (FIRST_ROI as usize + i))
    }

    /// Bit of target `j`.
    pub fn target_bit(&self, j: usize) -> u32 {
        1 << (FIRST_ROI as usize + self.nwaypoints + j)
    }

    /// Checks that a seed mask lies on this grid and lists its voxels (flat, ascending). Seed
    /// voxels outside the tracking mask are kept (their streamlines stop at once, as
    /// probtrackx's) and counted in a warning, as `track geodesic` counts its own. The mask
    /// `from_bedpost` read is not read again.
    pub fn seeds(&self, path: &Path) -> Result<Vec<u32>> {
        let s: Vec<u32> = match &self.seed_voxels {
            Some((p, s)) if p == path => s.clone(),
            _ => crate::volume::masks::inside_as(&self.read(path, "seed mask")?, |v| v as u32),
        };
        if s.is_empty() {
            bail!("{}: the seed mask holds no voxel", path.display());
        }
        let off = || s.iter().map(|&v| v as usize).filter(|&v| self.roi[v] & INSIDE == 0);
        // Those taken out for NaN/Inf samples were inside the mask the user gave: said apart.
        let taken = self.nonfinite.hits(off());
        let outside = off().count() - taken.total();
        if outside > 0 {
            eprintln!("warning: {}: {outside} of {} seed voxels lie outside the tracking mask; their streamlines stop at once", path.display(), s.len());
        }
        if taken.total() > 0 {
            eprintln!("warning: {}: {}; their streamlines stop at once", path.display(), self.nonfinite.lie_on(taken, s.len(), "seeds", "tracking mask"));
        }
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_nii_and_nii_gz_of_one_name_is_an_error_not_the_stale_gz() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("merged_th1samples.nii.gz"), b"old").unwrap();
        assert_eq!(image(d.path(), "merged_th1samples").unwrap(), d.path().join("merged_th1samples.nii.gz"));
        std::fs::write(d.path().join("merged_th1samples.nii"), b"new").unwrap();
        let err = image(d.path(), "merged_th1samples").expect_err("the .nii.gz was read beside a .nii").to_string();
        assert!(err.contains("both merged_th1samples.nii.gz and merged_th1samples.nii"), "{err}");
        assert!(find_image(d.path(), "nodif_brain_mask").unwrap().is_none());
    }

    /// The records equal each stick's own record, bit for bit, on fresh random angles with
    /// all-zero sticks (and -0.0, which is not all-zero bits) and a few huge angles among them,
    /// over sample and voxel counts off the runs' length; on a grid whose affine flips x and one
    /// that does not.
    #[test]
    fn records_equal_each_sticks_own() {
        use rand::Rng;
        let (seed, mut rng) = crate::synth::fresh_rng();
        for (dims, ns, flip, huge) in [([17usize, 9, 5], 3usize, false, true), ([64, 64, 3], 2, true, false), ([5, 1, 1], 7, false, false)] {
            let mut geom = Geometry::synthetic(dims, [2.0, 2.0, 2.0]);
            if flip {
                geom.affine[0][0] = -geom.affine[0][0];
            }
            let nvox = geom.nvox();
            let mut vols: Vec<Vec<f32>> = (0..6).map(|_| vec![0.0f32; ns * nvox]).collect();
            for k in 0..ns * nvox {
                match rng.random_range(0..5) {
                    0 => {} // outside bedpost's mask: all zero
                    1 => {
                        vols[0][k] = -0.0;
                        vols[4][k] = -0.0;
                    }
                    2 if huge && rng.random_bool(0.1) => {
                        // Past the fast sines' range (a run holding one takes libm's: only on the
                        // first grid, so the others' runs take the fast route), and NaN.
                        vols[0][k] = 7.0e5;
                        vols[4][k] = -3.0e6;
                        vols[2][k] = f32::NAN;
                    }
                    _ => {
                        for v in vols.iter_mut() {
                            v[k] = rng.random_range(-4.0f32..4.0);
                        }
                    }
                }
            }
            let f = Field::from_angles(geom.clone(), ns, std::array::from_fn(|i| &vols[i][..]));
            for k in 0..ns * nvox {
                let want = [stick_record(&geom, vols[0][k], vols[1][k], vols[2][k]), stick_record(&geom, vols[3][k], vols[4][k], vols[5][k])].concat();
                let got = &f.samples[k * RECORD..(k + 1) * RECORD];
                assert!(got.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits()), "seed {seed}: record {k}: {got:?} against {want:?}");
            }
        }
    }
    /// A bedpost folder of neuroport's, .nii.gz or .nii (read side by side into the records),
    /// gives the same records and mask, bit for bit, as the same volumes written by another tool
    /// as one gzip member each (read whole, then turned), with members that cut voxels.
    #[test]
    fn side_by_side_records_equal_the_whole_volumes_records() {
        use rand::Rng;
        use std::io::Write;
        let (seed, mut rng) = crate::synth::fresh_rng();
        let dir = tempfile::tempdir().unwrap();
        let (ours, other, nii) = (dir.path().join("ours"), dir.path().join("other"), dir.path().join("nii"));
        let (geom, ns) = (Geometry::synthetic([13, 11, 6], [2.0, 2.0, 2.0]), 5);
        let n = geom.nvox() * ns;
        std::fs::create_dir_all(&ours).unwrap();
        std::fs::create_dir_all(&other).unwrap();
        std::fs::create_dir_all(&nii).unwrap();
        let mask: Vec<f32> = (0..geom.nvox()).map(|_| rng.random_range(0..2) as f32).collect();
        for name in SAMPLES.iter().chain(&["nodif_brain_mask"]) {
            // Fractions within [0, 1], as bedpost writes them (from_bedpost refuses others).
            let v: Vec<f32> = match *name {
                "nodif_brain_mask" => mask.clone(),
                "merged_f1samples" | "merged_f2samples" => (0..n).map(|_| rng.random_range(0.0f32..=1.0)).collect(),
                _ => (0..n).map(|_| rng.random_range(-4.0f32..4.0)).collect(),
            };
            let nvol = v.len() / geom.nvox();
            let p = ours.join(format!("{name}.nii.gz"));
            crate::volume::write_nifti_members(&p, &geom, nvol, &v, 997).unwrap();
            let plain = nii.join(format!("{name}.nii"));
            crate::volume::write_nifti(&plain, &geom, nvol, &v).unwrap();
            let mut gz = flate2::write::GzEncoder::new(std::fs::File::create(other.join(format!("{name}.nii.gz"))).unwrap(), flate2::Compression::fast());
            gz.write_all(&std::fs::read(&plain).unwrap()).unwrap();
            gz.finish().unwrap();
        }
        let paths: Vec<_> = SAMPLES.iter().map(|s| ours.join(format!("{s}.nii.gz"))).collect();
        assert!(SideBySide::open(&paths).is_some());
        let other_paths: Vec<_> = SAMPLES.iter().map(|s| other.join(format!("{s}.nii.gz"))).collect();
        assert!(SideBySide::open(&other_paths).is_none());
        let bits = |f: &Field| f.samples.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        let a = Field::from_bedpost(&other, None, None).unwrap();
        for d in [&ours, &nii] {
            let b = Field::from_bedpost(d, None, None).unwrap();
            assert_eq!((a.nsamp, a.geom.dims), (b.nsamp, b.geom.dims));
            assert_eq!(a.roi, b.roi, "seed {seed}: {}", d.display());
            assert!(bits(&a) == bits(&b), "seed {seed}: {}: the records differ", d.display());
        }
    }
}

