//! Seeds: points from an ROI with several directions each, uniform on the sphere or in a cone
//! around the principal eigenvector V1 (001 Sec. 2.3), deterministic for a given RNG seed; or
//! explicit fibres from a CSV file in world millimetres.
//!
//! Directions are drawn in millimetres along the voxel axes (so "uniform" and "cone" mean what they
//! say physically when voxels are anisotropic) and converted to voxel units for the kernels.

use super::Seed;
use crate::dti::{cpu::voxel_frame, sym3, Frame};
use crate::synth::{unit_vector, SeededRng};
use crate::volume::{invert3, xyz_of, Geometry, TakenOut};
use anyhow::{anyhow, bail, Result};
use rand::Rng;
use std::path::Path;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Directions {
    /// Uniform on the sphere.
    Sphere,
    /// Uniform in a cone of this half-angle (degrees) around V1; odd-numbered directions of a
    /// point are reversed, so fibres leave a seed both ways along the tract.
    Cone(f64),
}

fn normalise(v: [f64; 3]) -> [f64; 3] {
    let n = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
    v.map(|c| c / n)
}

fn cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
}

/// A direction uniform in the cap of half-angle `deg` around the unit vector `axis`.
pub fn in_cone(axis: [f64; 3], deg: f64, r: &mut SeededRng) -> [f64; 3] {
    let cos_max = deg.to_radians().cos();
    let c: f64 = r.random_range(cos_max..=1.0);
    let phi: f64 = r.random_range(0.0..std::f64::consts::TAU);
    let s = (1.0 - c * c).max(0.0).sqrt();
    let h = if axis[0].abs() < 0.9 { [1.0, 0.0, 0.0] } else { [0.0, 1.0, 0.0] };
    let e1 = normalise(cross(axis, h));
    let e2 = cross(axis, e1);
    std::array::from_fn(|i| c * axis[i] + s * (phi.cos() * e1[i] + phi.sin() * e2[i]))
}

/// Principal eigenvector of the tensor (FSL frame, mm^2/s) in millimetres along the voxel axes.
pub fn v1_mm(tensor: &[f32], nvox: usize, v: usize, frame_flip_x: bool) -> [f64; 3] {
    let t: [f64; 6] = std::array::from_fn(|e| tensor[e * nvox + v] as f64);
    let t = voxel_frame(&t, Frame { flip_x: frame_flip_x, inv_voxel: [1.0; 3] });
    let (_, vec) = sym3::eigen(&t);
    sym3::v1(&vec)
}

/// A direction in millimetres along the voxel axes, in voxel units.
pub fn mm_to_voxel_dir(d: [f64; 3], voxel_size: [f32; 3]) -> [f32; 3] {
    normalise(std::array::from_fn(|c| d[c] / voxel_size[c] as f64)).map(|x| x as f32)
}

/// Seed points in an ROI: every ROI voxel's centre (`count = None`), or `count` points uniform
/// inside the ROI's voxels.
pub fn roi_points(roi: &[u8], dims: [usize; 3], count: Option<usize>, r: &mut SeededRng) -> Result<Vec<[f64; 3]>> {
    let voxels: Vec<usize> = (0..roi.len()).filter(|&v| roi[v] != 0).collect();
    if voxels.is_empty() {
        bail!("the seed ROI holds no voxel");
    }
    let centre = |v: usize| xyz_of(v, dims).map(|c| c as f64);
    Ok(match count {
        None => voxels.iter().map(|&v| centre(v)).collect(),
        Some(n) => {
            // A count too large for memory is the user's error, not an allocation abort.
            let mut pts = Vec::new();
            pts.try_reserve_exact(n).map_err(|_| anyhow!("{n} seed points: more fibres than fit in memory"))?;
            pts.extend((0..n).map(|_| {
                let c = centre(voxels[r.random_range(0..voxels.len())]);
                std::array::from_fn(|a| c[a] + r.random_range(-0.5..0.5))
            }));
            pts
        }
    })
}

/// `ndirs` seeds at each point. `tensor` (FSL frame, mm^2/s) supplies V1 for cones. More fibres
/// than memory holds (or than usize counts) is an error, not an allocation abort.
pub fn seeds_at(points: &[[f64; 3]], ndirs: usize, dirs: Directions, geom: &Geometry, tensor: &[f32], r: &mut SeededRng) -> Result<Vec<Seed>> {
    let nvox = geom.nvox();
    let flip = geom.det() > 0.0;
    let too_many = || anyhow!("{} seed points x {ndirs} directions: more fibres than fit in memory", points.len());
    let mut out = Vec::new();
    out.try_reserve_exact(points.len().checked_mul(ndirs).ok_or_else(too_many)?).map_err(|_| too_many())?;
    for p in points {
        let axis = match dirs {
            Directions::Cone(_) => {
                let v: [usize; 3] = std::array::from_fn(|a| ((p[a].round().max(0.0)) as usize).min(geom.dims[a] - 1));
                Some(v1_mm(tensor, nvox, geom.index(v[0], v[1], v[2]), flip))
            }
            Directions::Sphere => None,
        };
        for k in 0..ndirs {
            let d = match (dirs, axis) {
                (Directions::Cone(deg), Some(a)) => {
                    let d = in_cone(a, deg, r);
                    if k % 2 == 1 { d.map(|x| -x) } else { d }
                }
                _ => unit_vector(r),
            };
            out.push(Seed { pos: p.map(|x| x as f32), dir: mm_to_voxel_dir(d, geom.voxel_size) });
        }
    }
    Ok(out)
}

/// A world direction (mm) in voxel units, through the affine's linear part.
pub fn world_to_voxel_dir(geom: &Geometry, d: [f64; 3]) -> [f64; 3] {
    let a = &geom.affine;
    let inv = invert3(&[[a[0][0], a[0][1], a[0][2]], [a[1][0], a[1][1], a[1][2]], [a[2][0], a[2][1], a[2][2]]]);
    std::array::from_fn(|r| inv[r][0] * d[0] + inv[r][1] * d[1] + inv[r][2] * d[2])
}

/// A voxel-unit direction as a unit world direction.
pub fn voxel_to_world_dir(geom: &Geometry, d: [f32; 3]) -> [f64; 3] {
    let a = &geom.affine;
    normalise(std::array::from_fn(|r| a[r][0] * d[0] as f64 + a[r][1] * d[1] as f64 + a[r][2] * d[2] as f64))
}

/// Reads `x,y,z,dx,dy,dz` rows (world mm; a header row is allowed) as seeds in voxel coordinates.
pub fn read_seed_file(path: &Path, geom: &Geometry) -> Result<Vec<Seed>> {
    let shown = path.display();
    let text = crate::volume::read_text(path)?;
    let mut out = Vec::new();
    // A header is the first row (after blank and # lines) with no number in it: a first row of
    // numbers that does not parse (NaN, spaces for commas) is an error, not dropped.
    let header = |line: &str| line.split(|c: char| c == ',' || c.is_whitespace()).filter(|c| !c.is_empty()).all(|c| c.parse::<f64>().is_err());
    let mut first = true;
    for (ln, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let cells: Vec<&str> = line.split(',').map(str::trim).collect();
        let nums: Option<Vec<f64>> = cells.iter().map(|c| c.parse::<f64>().ok().filter(|v| v.is_finite())).collect();
        let Some(nums) = nums else {
            if std::mem::take(&mut first) && header(line) {
                continue;
            }
            let bad = cells.iter().find(|c| !c.parse::<f64>().is_ok_and(f64::is_finite)).expect("a cell failed to parse");
            if bad.split_whitespace().count() > 1 {
                bail!("{shown}: line {} is not six numbers x,y,z,dx,dy,dz (separate them with commas: '{bad}')", ln + 1);
            }
            bail!("{shown}: line {} is not six numbers x,y,z,dx,dy,dz ('{bad}' is not a finite number)", ln + 1);
        };
        first = false;
        if nums.len() != 6 {
            bail!("{shown}: line {} has {} values, expected x,y,z,dx,dy,dz", ln + 1, nums.len());
        }
        let d = [nums[3], nums[4], nums[5]];
        if d.iter().map(|x| x * x).sum::<f64>() < 1e-24 {
            bail!("{shown}: line {} has a zero direction", ln + 1);
        }
        let pos = geom.world_to_voxel([nums[0], nums[1], nums[2]]);
        out.push(Seed { pos: pos.map(|x| x as f32), dir: normalise(world_to_voxel_dir(geom, d)).map(|x| x as f32) });
    }
    if out.is_empty() {
        bail!("{shown}: holds no seed rows");
    }
    Ok(out)
}

/// A target ROI with no voxel in the tracking mask: no fibre can reach it (fibres stop where
/// they would leave the mask), so the run can only write an empty tractogram. Warned, as seeds
/// outside the mask are (a strict --min-fa may be meant).
pub fn check_target(target: &[u8], mask: &[u8], path: &Path) {
    if !target.iter().zip(mask).any(|(&t, &m)| t != 0 && m != 0) {
        eprintln!("warning: {}: the target ROI has no voxel inside the tracking mask; no fibre can reach it", path.display());
    }
}

/// Seeds that cannot start a fibre: outside the volume, outside the tracking mask, or on voxels
/// `taken` out of it for their data (said apart: the user sees them inside the mask file). A
/// warning counts each (they give single-point fibres); when every seed is outside the volume it
/// is an error (a mask that excludes every seed may be meant, e.g. a strict --min-fa: warned only).
pub fn check_seeds(seeds: &[Seed], geom: &Geometry, mask: &[u8], taken: &TakenOut, source: &Path) -> Result<()> {
    let d = geom.dims;
    let voxel = |p: [f32; 3]| -> Option<usize> {
        let i: [f32; 3] = std::array::from_fn(|c| p[c].round());
        (0..3).all(|c| i[c] >= 0.0 && (i[c] as usize) < d[c]).then(|| geom.index(i[0] as usize, i[1] as usize, i[2] as usize))
    };
    let outside = seeds.iter().filter(|s| voxel(s.pos).is_none()).count();
    let off = || seeds.iter().filter_map(|s| voxel(s.pos)).filter(|&v| mask[v] == 0);
    let bad = taken.hits(off());
    let unmasked = off().count() - bad.total();
    let shown = source.display();
    if outside == seeds.len() {
        bail!("{shown}: none of the {} seeds can start a fibre: all lie outside the {}x{}x{} volume", seeds.len(), d[0], d[1], d[2]);
    }
    if outside > 0 {
        // Their fibres are still written (one point, 0 steps) so that fibre i stays seed i.
        eprintln!("warning: {shown}: {outside} of {} seeds lie outside the volume; their fibres are single points (0 steps, stop left-volume)", seeds.len());
    }
    if unmasked > 0 {
        eprintln!("warning: {shown}: {unmasked} of {} seeds lie outside the tracking mask; they stop at once", seeds.len());
    }
    if bad.total() > 0 {
        eprintln!("warning: {shown}: {}; they stop at once", taken.lie_on(bad, seeds.len(), "seeds", "tracking mask"));
    }
    Ok(())
}
