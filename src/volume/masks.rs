//! Masks and ROIs, and the input policy every command shares: a mask must be 3-D, on the data's
//! grid (same dimensions and, within [`AFFINE_TOL`], the same voxel-to-world affine) and not
//! empty; NaN/Inf voxels outside the mask are ignored, inside it they are reported and skipped.

use super::nifti_io::read_into;
use super::{xyz_of, Geometry, TakenOut, Volume};
use anyhow::{bail, Result};
use std::path::Path;

/// Largest difference between two affines (3x4 part) still taken as the same grid, as a fraction
/// of the smallest voxel size: NIfTI stores the affine in float32 and qform/sform round-trips
/// move it by ~1e-6 mm; a real shift, scale or flip moves it by a voxel or more.
pub const AFFINE_TOL: f64 = 1e-3;

/// Reads a mask: any non-zero voxel is inside. 3-D, of `dims` when given, not empty; the
/// affine is not compared (see [`read_mask_like`], which commands use).
pub fn read_mask(path: &Path, dims: Option<[usize; 3]>) -> Result<Vec<u8>> {
    let (geom, m) = read_mask_raw(path, "mask")?;
    if let Some(d) = dims {
        if geom.dims != d {
            bail!("{}: mask grid {:?} does not match the data grid {:?}", path.display(), geom.dims, d);
        }
    }
    Ok(m)
}

/// Reads a mask or ROI (`what`: "mask", "seed ROI", ...) that must lie on the grid of the
/// volume read from `reference_path`: same dimensions and affine, else an error naming both
/// files. An all-zero one is an error too.
pub fn read_mask_like(path: &Path, reference: &Geometry, reference_path: &Path, what: &str) -> Result<Vec<u8>> {
    let (geom, m) = read_mask_raw(path, what)?;
    let (p, r) = (path.display(), reference_path.display());
    if geom.dims != reference.dims {
        bail!("{p}: the {what} grid {:?} does not match the data grid {:?} of {r}", geom.dims, reference.dims);
    }
    let d = affine_difference(&geom, reference);
    let vs = reference.voxel_size.iter().fold(f32::INFINITY, |a, &b| a.min(b)) as f64;
    if d > AFFINE_TOL * vs {
        bail!(
            "{p}: the {what} does not match the grid of {r}: same size, but its voxel-to-world affine differs by up to {d:.3} mm (shifted, scaled or flipped); resample it onto {r} first"
        );
    }
    Ok(m)
}

/// Largest absolute difference between the 3x4 parts of two affines, in mm.
pub fn affine_difference(a: &Geometry, b: &Geometry) -> f64 {
    (0..3).flat_map(|r| (0..4).map(move |c| (r, c))).map(|(r, c)| (a.affine[r][c] - b.affine[r][c]).abs()).fold(0.0, f64::max)
}

fn read_mask_raw(path: &Path, what: &str) -> Result<(Geometry, Vec<u8>)> {
    // 2 marks a non-finite voxel: a mask holding NaN is broken, not "inside".
    let (geom, dims, m) = read_into(path, |x| if x.is_finite() { (x != 0.0) as u8 } else { 2 })?;
    let shown = path.display();
    if dims[3] != 1 {
        bail!("{shown}: a {what} must be 3-D, this has {} volumes", dims[3]);
    }
    if let Some(i) = m.iter().position(|&x| x == 2) {
        let [x, y, z] = xyz_of(i, geom.dims);
        bail!("{shown}: the {what} holds NaN or infinite values (first at x={x} y={y} z={z})");
    }
    if !m.contains(&1) {
        bail!("{shown}: the {what} is empty (every voxel is zero)");
    }
    Ok((geom, m))
}

/// The mask for `data` (read from `data_path`): `mask_path` read on its grid, or every voxel.
/// Voxels where any volume of `data` is NaN or infinite are taken out of the mask with a
/// warning that counts them; non-finite values anywhere are set to 0 so no kernel sees them.
pub fn mask_for(data: &mut Volume, data_path: &Path, mask_path: Option<&Path>) -> Result<Vec<u8>> {
    let mut mask = match mask_path {
        Some(m) => read_mask_like(m, &data.geom, data_path, "mask")?,
        None => vec![1u8; data.nvox()],
    };
    skip_nonfinite(data, data_path, &mut mask)?;
    Ok(mask)
}

/// Takes voxels holding NaN/Inf out of `mask` (warning with their count and the first one) and
/// zeroes every non-finite value; an error when no voxel of the mask is left. Returns the voxels
/// it took out, so a seed or region on one is told why.
pub fn skip_nonfinite(data: &mut Volume, data_path: &Path, mask: &mut [u8]) -> Result<TakenOut> {
    skip_nonfinite_in(data, data_path, mask, "mask")
}

/// [`skip_nonfinite`] with the mask named `what` in the warning and error, as its caller names it
/// in its own messages ("tracking mask", ...).
pub(super) fn skip_nonfinite_in(data: &mut Volume, data_path: &Path, mask: &mut [u8], what: &str) -> Result<TakenOut> {
    let n = data.nvox();
    let dims = data.geom.dims;
    let names = Nonfinite { path: data_path, mask: what, values: "values" };
    skip_nonfinite_values(data.as_flat_mut(), dims, |i| i % n, |i| format!(" volume {}", i / n), mask, &names)
}

/// How [`skip_nonfinite_values`]'s messages name the file, its mask and its values.
pub struct Nonfinite<'a> {
    pub path: &'a Path,
    pub mask: &'a str,
    pub values: &'a str,
}

/// The rule for NaN/Inf in data read for a method confined to a mask (a DWI, a tensor volume,
/// bedpost's samples), whatever the data's layout: value `i` of `flat` belongs to voxel
/// `voxel_of(i)` of a `dims` grid (`which(i)` names its volume or sample in the message). Voxels
/// holding one leave `mask`, counted in a warning that names the first, and are returned; every
/// non-finite value is set to 0 so no kernel sees it; an error when no voxel of the mask is left.
pub fn skip_nonfinite_values(
    flat: &mut [f32],
    dims: [usize; 3],
    voxel_of: impl Fn(usize) -> usize,
    which: impl Fn(usize) -> String,
    mask: &mut [u8],
    names: &Nonfinite,
) -> Result<TakenOut> {
    let mut taken = TakenOut::new(names.path);
    // The usual case, every value finite, in one pass over memory on every core.
    {
        use rayon::prelude::*;
        if flat.par_chunks(1 << 16).all(|c| c.iter().all(|x| x.is_finite())) {
            return Ok(taken);
        }
    }
    let mut bad = vec![false; mask.len()];
    for (i, x) in flat.iter().enumerate() {
        if !x.is_finite() {
            bad[voxel_of(i)] = true;
        }
    }
    let left = leave_mask(mask, |v| bad[v]);
    let skipped = left.len();
    // The first voxel's first non-finite value, found before the values are zeroed.
    let first = left.first().map(|&v| (v, (0..flat.len()).find(|&i| voxel_of(i) == v && !flat[i].is_finite()).unwrap_or(0)));
    flat.iter_mut().filter(|x| !x.is_finite()).for_each(|x| *x = 0.0);
    if let Some((v, i)) = first {
        let [x, y, z] = xyz_of(v, dims);
        let (path, what, values, at) = (names.path.display(), names.mask, names.values, which(i));
        if !mask.contains(&1) {
            bail!("{path}: every voxel of the {what} holds NaN or infinite {values} (first at x={x} y={y} z={z}{at})");
        }
        let (s, verb) = holds(skipped);
        eprintln!("warning: {path}: {skipped} voxel{s} in the {what} {verb} NaN or infinite {values} (first at x={x} y={y} z={z}{at}); skipped");
    }
    taken.add_nonfinite(left);
    Ok(taken)
}

/// Takes the voxels of `mask` where `bad(v)` out of it; returns them, ascending.
pub(super) fn leave_mask(mask: &mut [u8], bad: impl Fn(usize) -> bool) -> Vec<usize> {
    let mut left = Vec::new();
    for v in 0..mask.len() {
        if mask[v] != 0 && bad(v) {
            mask[v] = 0;
            left.push(v);
        }
    }
    left
}

/// The plural's suffix and the verb for `n` voxels: ("", "holds") for one, ("s", "hold") else.
pub(super) fn holds(n: usize) -> (&'static str, &'static str) {
    if n == 1 { ("", "holds") } else { ("s", "hold") }
}

/// Reads an image used without a mask by a method that leaves NaN/Inf voxels out itself (a
/// registration input: its cost excludes them, src/register/cost.rs). They are kept as read,
/// with a warning that counts them, names the first and says what becomes of them (`fate`,
/// e.g. "excluded from the cost"); an image with no finite voxel is an error naming the file.
pub fn read_keeping_nonfinite(path: &Path, fate: &str) -> Result<Volume> {
    let v = super::read_nifti(path)?;
    let n = v.nvox();
    let nvol = v.nvol();
    let flat = v.as_flat();
    let bad = |i: usize| (0..nvol).any(|t| !flat[t * n + i].is_finite());
    let Some(first) = (0..n).find(|&i| bad(i)) else { return Ok(v) };
    let count = (first..n).filter(|&i| bad(i)).count();
    if count == n {
        bail!("{}: every voxel holds NaN or infinite values", path.display());
    }
    let [x, y, z] = xyz_of(first, v.geom.dims);
    let (s, verb) = holds(count);
    eprintln!("warning: {}: {count} voxel{s} {verb} NaN or infinite values (first at x={x} y={y} z={z}); {fate}", path.display());
    Ok(v)
}

/// The voxels where `mask` is non-zero, ascending, each as `index(v)` (`usize` for the host's
/// loops, `i32` for a device's list): a slab of the grid per task, eight voxels at a time where
/// all are off the mask (most of a brain's grid is off its white matter; round 25 wrote it for
/// FIM, round 26 gave bedpost and probtrack, which filtered the grid on one core, the same scan).
pub fn inside_as<T: Send + Copy>(mask: &[u8], index: impl Fn(usize) -> T + Sync) -> Vec<T> {
    use rayon::prelude::*;
    const SLAB: usize = 1 << 16;
    let slabs: Vec<Vec<T>> = mask
        .par_chunks(SLAB)
        .enumerate()
        .map(|(k, slab)| {
            let mut out = Vec::new();
            for (j, word) in slab.chunks(8).enumerate() {
                if word.len() == 8 && u64::from_ne_bytes(word.try_into().expect("8 bytes")) == 0 {
                    continue;
                }
                let at = k * SLAB + 8 * j;
                out.extend(word.iter().enumerate().filter(|(_, &m)| m != 0).map(|(i, _)| index(at + i)));
            }
            out
        })
        .collect();
    slabs.concat()
}

/// The voxels where `mask` is non-zero, ascending (see [`inside_as`]).
pub fn inside(mask: &[u8]) -> Vec<usize> {
    inside_as(mask, |v| v)
}

#[cfg(test)]
mod tests {
    use super::{inside, skip_nonfinite_values, Nonfinite};
    use crate::volume::Hits;
    use std::path::Path;

    /// The rule returns the mask voxels it took out (not those off the mask, not the finite),
    /// and nothing when every value is finite; the values are zeroed either way.
    #[test]
    fn skipping_nonfinite_values_returns_the_voxels_taken_out() {
        let names = Nonfinite { path: Path::new("d.nii"), mask: "mask", values: "values" };
        // 2 volumes of a 4x1x1 grid: voxel 1 NaN in volume 1, voxel 2 (off the mask) Inf.
        let mut flat = [1.0, 2.0, f32::INFINITY, 4.0, 5.0, f32::NAN, 7.0, 8.0];
        let mut mask = [1u8, 1, 0, 1];
        let taken = skip_nonfinite_values(&mut flat, [4, 1, 1], |i| i % 4, |i| format!(" volume {}", i / 4), &mut mask, &names).unwrap();
        assert_eq!(mask, [1, 0, 0, 1]);
        assert_eq!((taken.len(), taken.hits([0, 1, 2, 3, 1])), (1, Hits { nonfinite: 2, zero: 0 }));
        assert!(flat.iter().all(|x| x.is_finite()));
        let taken = skip_nonfinite_values(&mut flat, [4, 1, 1], |i| i % 4, |i| format!(" volume {}", i / 4), &mut mask, &names).unwrap();
        assert!(taken.is_empty() && mask == [1, 0, 0, 1]);
    }

    /// The word-skipping scan finds the plain filter's voxels on fresh random masks: sparse,
    /// clustered in runs, empty, full, lengths off the 8-voxel words and the slabs.
    #[test]
    fn inside_is_the_non_zero_voxels_in_order() {
        use rand::Rng;
        let (seed, mut rng) = crate::synth::fresh_rng();
        for (n, keep) in [(200_003usize, 50u32), (70_001, 0), (1 << 17, 1), (5, 2), (131_075, 3)] {
            let mut mask = vec![0u8; n];
            let mut v = 0;
            while v < n {
                // A run of mask voxels (values 1-255) after a gap.
                let run = rng.random_range(1..20).min(n - v);
                if keep == 1 || (keep != 0 && rng.random_range(0..keep) == 0) {
                    mask[v..v + run].iter_mut().for_each(|m| *m = rng.random_range(1..=255));
                }
                v += run;
            }
            let want: Vec<usize> = (0..n).filter(|&v| mask[v] != 0).collect();
            assert_eq!(inside(&mask), want, "seed {seed}: n {n}");
        }
    }
}
