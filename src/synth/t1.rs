//! A brain-like T1-weighted head phantom for registration: scalp (bright fat), skull (dark),
//! CSF, a folded cortical ribbon of grey matter over white matter, sulci reaching into the
//! cortex, ventricles, deep grey nuclei and the interhemispheric fissure, under a smooth
//! multiplicative bias field, with Rician noise. It stands in for 002's T1 scans, which cannot
//! be had. The head is defined continuously in its own millimetre frame (x left-right,
//! y posterior-anterior, z inferior-superior, origin at the head's centre), so an image can be
//! rendered through any affine without resampling, and a subject number changes its shape
//! (size, proportions, folding, ventricles) to stand in for a different person.

use super::rng;
use crate::register::affine::{apply, Mat4};
use crate::volume::{Geometry, Volume};
use rand::Rng;
use rayon::prelude::*;

/// Tissue intensities (arbitrary units, T1-like ordering).
const SCALP: f64 = 0.75;
const SKULL: f64 = 0.08;
const CSF: f64 = 0.15;
const GREY: f64 = 0.55;
const DEEP_GREY: f64 = 0.65;
const WHITE: f64 = 0.85;
/// Depths (mm) below the head's surface where the layers begin.
const SKULL_DEPTH: f64 = 5.0;
const CSF_DEPTH: f64 = 11.0;
pub const BRAIN_DEPTH: f64 = 14.0;
/// Width (mm) of the soft tissue boundaries.
const EDGE_MM: f64 = 0.8;

/// One subject's head.
#[derive(Clone, Debug)]
pub struct Head {
    radii: [f64; 3],
    fold_freq: [f64; 2],
    fold_phase: [f64; 2],
    ventricle_scale: f64,
    bias: [f64; 4],
}

impl Head {
    /// Subject 0 is the reference; others differ in size (about ±6 % per axis), folding,
    /// ventricle size and bias field.
    pub fn subject(id: u64) -> Head {
        let mut r = rng(0x7131_0000 + id);
        let mut u = |a: f64| if id == 0 { 0.0 } else { r.random_range(-a..a) };
        Head {
            radii: [72.0 * (1.0 + u(0.06)), 92.0 * (1.0 + u(0.06)), 78.0 * (1.0 + u(0.06))],
            fold_freq: [22.0 + u(3.0), 17.0 + u(3.0)],
            fold_phase: [0.3 + u(3.0), 1.1 + u(3.0)],
            ventricle_scale: 1.0 + u(0.3),
            bias: [0.08 + u(0.05), -0.05 + u(0.05), 0.1 + u(0.05), 0.04 + u(0.03)],
        }
    }

    /// Depth (mm) below the head's surface along the ray from the centre; negative outside.
    fn depth(&self, p: [f64; 3]) -> f64 {
        let rho = ((p[0] / self.radii[0]).powi(2) + (p[1] / self.radii[1]).powi(2) + (p[2] / self.radii[2]).powi(2)).sqrt();
        let len = (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]).sqrt();
        if rho < 1e-9 { self.radii[0] } else { len * (1.0 - rho) / rho }
    }

    /// The noise-free intensity at head point `p` (mm) and whether it is brain.
    pub fn intensity(&self, p: [f64; 3]) -> (f64, bool) {
        let d = self.depth(p);
        let s = |x: f64| 1.0 / (1.0 + (-x / EDGE_MM).exp());
        let lerp = |a: f64, b: f64, t: f64| a + (b - a) * t;
        let az = p[1].atan2(p[0]);
        let el = (p[2] / (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]).sqrt().max(1e-9)).asin();
        let fold = (self.fold_freq[0] * az + self.fold_phase[0]).sin() * (self.fold_freq[1] * el + self.fold_phase[1]).sin();
        // Sulci: where the fold pattern crosses zero, CSF reaches 7 mm into the cortex.
        let sulcus = (-(fold / 0.15).powi(2)).exp();
        let gyrus_wm = BRAIN_DEPTH + 3.0 + 4.0 * (1.0 - fold.abs());
        let mut v = 0.0;
        v = lerp(v, SCALP, s(d));
        v = lerp(v, SKULL, s(d - SKULL_DEPTH));
        v = lerp(v, CSF, s(d - CSF_DEPTH));
        v = lerp(v, GREY, s(d - BRAIN_DEPTH - 7.0 * sulcus));
        v = lerp(v, WHITE, s(d - gyrus_wm - 4.0 * sulcus));
        // Interhemispheric fissure: CSF in a 3 mm sheet at x = 0 in the upper 35 mm of brain.
        let fissure = s(1.5 - p[0].abs()) * s(p[2] + 10.0) * s(BRAIN_DEPTH + 35.0 - d);
        v = lerp(v, CSF, fissure * s(d - CSF_DEPTH));
        // Deep grey nuclei, then the lateral ventricles inside them.
        for sx in [-1.0, 1.0] {
            let e = |c: [f64; 3], r: [f64; 3]| 1.0 - ((p[0] - c[0]) / r[0]).powi(2) - ((p[1] - c[1]) / r[1]).powi(2) - ((p[2] - c[2]) / r[2]).powi(2);
            v = lerp(v, DEEP_GREY, s(8.0 * e([sx * 17.0, -4.0, -2.0], [9.0, 13.0, 9.0])));
            let k = self.ventricle_scale;
            v = lerp(v, CSF, s(6.0 * e([sx * 7.0, 4.0, 10.0], [4.5 * k, 20.0, 6.0 * k])));
        }
        let q: [f64; 3] = std::array::from_fn(|i| p[i] / self.radii[i]);
        let b = &self.bias;
        let bias = 1.0 + b[0] * q[0] + b[1] * q[1] + b[2] * q[2] + b[3] * q[0] * q[1];
        (v * bias, d > BRAIN_DEPTH)
    }
}

/// A rendered image and its brain mask.
pub struct T1Image {
    pub volume: Volume,
    pub brain: Vec<u8>,
}

/// Renders `head` on `geom`, where `world_to_head` maps world mm to the head's frame; Rician
/// noise of `sigma` (0 for none) from `seed`, one stream per slice so any thread count gives
/// the same image.
pub fn render(head: &Head, geom: &Geometry, world_to_head: &Mat4, sigma: f64, seed: u64) -> T1Image {
    let [nx, ny, nz] = geom.dims;
    let slices: Vec<(Vec<f32>, Vec<u8>)> = (0..nz)
        .into_par_iter()
        .map(|z| {
            let mut r = rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ z as u64);
            let mut vals = Vec::with_capacity(nx * ny);
            let mut brain = Vec::with_capacity(nx * ny);
            for y in 0..ny {
                for x in 0..nx {
                    let p = apply(world_to_head, geom.voxel_to_world([x as f64, y as f64, z as f64]));
                    let (v, b) = head.intensity(p);
                    let v = super::rician(v, sigma, &mut r);
                    vals.push(v as f32);
                    brain.push(b as u8);
                }
            }
            (vals, brain)
        })
        .collect();
    let (mut data, mut brain) = (Vec::with_capacity(geom.nvox()), Vec::with_capacity(geom.nvox()));
    for (v, b) in slices {
        data.extend(v);
        brain.extend(b);
    }
    T1Image { volume: Volume::from_flat(geom.clone(), 1, data), brain }
}

/// The same head imaged twice: `fixed` on `fixed_geom` and `moving` on `moving_geom`, the head
/// moved between the scans so that `truth` (fixed world mm -> moving world mm) maps each fixed
/// point to the moving point showing the same tissue. Independent noise in each.
pub fn same_subject_pair(head: &Head, fixed_geom: &Geometry, moving_geom: &Geometry, truth: &Mat4, sigma: f64, seed: u64) -> (T1Image, T1Image) {
    let fixed = render(head, fixed_geom, &crate::register::affine::IDENTITY, sigma, seed);
    let moving = render(head, moving_geom, &crate::register::affine::inverse(truth), sigma, seed.wrapping_add(1));
    (fixed, moving)
}

/// Subject `id`'s head moved by `placement` (world mm, applied to the head as imaged unmoved)
/// and imaged on `geom`, with the transform that registers subject 0's unmoved image to it
/// (fixed world mm -> moving world mm, `register`'s PREFIX_affine.txt direction): `placement`
/// after the scaling between the two heads' axes. That scaling takes subject 0's outline
/// exactly onto subject `id`'s; their folding, ventricles and layer depths differ, so for
/// another subject the transform is the right answer only approximately (for subject 0, exactly).
pub fn placed_subject(id: u64, geom: &Geometry, placement: &Mat4, sigma: f64, seed: u64) -> (T1Image, Mat4) {
    let (h0, h) = (Head::subject(0), Head::subject(id));
    let image = render(&h, geom, &crate::register::affine::inverse(placement), sigma, seed);
    let mut axes = crate::register::affine::IDENTITY;
    for i in 0..3 {
        axes[i][i] = h.radii[i] / h0.radii[i];
    }
    (image, crate::register::affine::mul(placement, &axes))
}

/// The placement `--move` asks for: 6, 9 or 12 of `register`'s parameters (translations mm,
/// rotations degrees, scales and shears percent) about the world origin. A value that is not a
/// number is named as such: refused under the count alone, a user who gave six read "got 6".
pub fn placement(p: &[f64]) -> anyhow::Result<Mat4> {
    if !matches!(p.len(), 0 | 6 | 9 | 12) {
        anyhow::bail!("--move takes 6, 9 or 12 numbers (tx,ty,tz,rx,ry,rz[,sx,sy,sz[,kxy,kxz,kyz]]), got {}", p.len());
    }
    if let Some(i) = p.iter().position(|v| !v.is_finite()) {
        anyhow::bail!("--move: value {} is {}, not a finite number", i + 1, p[i]);
    }
    let m = crate::register::params::matrix(p, [0.0; 3]);
    if crate::register::affine::det3(&m) <= 0.0 {
        anyhow::bail!("--move: the scales and shears given turn the head inside out");
    }
    Ok(m)
}

/// Refuses an image whose brain lies wholly outside its grid (a `--move` of more than the
/// field of view): written, it was an empty phantom that `register` can only fail on.
pub fn require_brain(img: &T1Image) -> anyhow::Result<()> {
    if img.brain.iter().all(|&b| b == 0) {
        anyhow::bail!("--move puts the whole brain outside the grid (no brain voxel is imaged); move it less or give a larger --dims");
    }
    Ok(())
}

/// About how many bytes `synth t1` holds at once on a `dims` grid: 10 a voxel, while [`render`]
/// joins its slices (the slices and the whole image, f32 values and u8 brain, 5 bytes a voxel
/// each); after, the image and the brain mask as f32 for the writer hold 9. The writer streams
/// each file to disk through fixed buffers (a megabyte a core), not counted.
pub fn memory_needed(dims: [usize; 3]) -> f64 {
    let image = (size_of::<f32>() + size_of::<u8>()) as f64;
    let per_voxel = (2.0 * image).max(image + size_of::<f32>() as f64);
    dims.iter().map(|&d| d as f64).product::<f64>() * per_voxel
}

/// An axis-aligned grid whose world origin is at its centre (as scanners centre a head).
pub fn centred_geometry(dims: [usize; 3], voxel_mm: [f32; 3]) -> Geometry {
    let mut g = Geometry::synthetic(dims, voxel_mm);
    for a in 0..3 {
        let off = -(dims[a] as f64 - 1.0) / 2.0 * voxel_mm[a] as f64;
        g.affine[a][3] = off;
    }
    g.header.srow_x[3] = g.affine[0][3] as f32;
    g.header.srow_y[3] = g.affine[1][3] as f32;
    g.header.srow_z[3] = g.affine[2][3] as f32;
    g.header.quatern_x = g.affine[0][3] as f32;
    g.header.quatern_y = g.affine[1][3] as f32;
    g.header.quatern_z = g.affine[2][3] as f32;
    g
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::register::affine::IDENTITY;

    #[test]
    fn tissues_are_where_they_should_be() {
        let h = Head::subject(0);
        assert!(h.intensity([0.0, 0.0, 0.0]).0.is_finite());
        let scalp = h.intensity([0.0, 0.0, 76.0]).0; // 2 mm below the top of the head
        let skull = h.intensity([0.0, 0.0, 70.0]).0;
        assert!(scalp > 0.6 && skull < 0.2, "{scalp} {skull}");
        assert!(h.intensity([120.0, 0.0, 0.0]).0 < 1e-6);
        let g = centred_geometry([24, 28, 24], [8.0; 3]);
        let a = render(&h, &g, &IDENTITY, 0.02, 3);
        let b = render(&h, &g, &IDENTITY, 0.02, 3);
        assert_eq!(a.volume.as_flat(), b.volume.as_flat());
        assert!(a.brain.iter().filter(|&&m| m != 0).count() > 500);
        assert_ne!(Head::subject(1).radii, h.radii);
    }

    /// The estimate is the arrays `synth t1` holds at once, counted from a rendered image: while
    /// `render` joins its slices, the slices and the whole image (values and brain); then the
    /// image with the brain mask as f32 for the writer.
    #[test]
    fn memory_needed_counts_the_arrays_held_at_once() {
        let dims = [24, 28, 20];
        let a = render(&Head::subject(0), &centred_geometry(dims, [8.0; 3]), &IDENTITY, 0.02, 3);
        let image = (std::mem::size_of_val(a.volume.as_flat()) + a.brain.len()) as f64;
        let joining = 2.0 * image;
        let writing = image + (a.brain.len() * size_of::<f32>()) as f64;
        assert_eq!(memory_needed(dims), joining.max(writing));
        // 002's grid, the default: 10 bytes a voxel, about 103 MiB.
        assert_eq!(memory_needed([240, 256, 176]), 240.0 * 256.0 * 176.0 * 10.0);
    }
}
