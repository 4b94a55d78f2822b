//! Applying a transform to other images (`neuroport resample`, as `flirt -applyxfm`,
//! `reg_resample`, `antsApplyTransforms`): a label image with nearest neighbour, another
//! contrast of the same subject trilinearly, onto the reference (fixed) grid.
//!
//! Linear is `register`'s own warp ([`super::warp`]: the same voxel map, positions and
//! samples, 0 outside the box of moving voxel centres), so the matrix `register` wrote gives
//! its PREFIX_warped.nii.gz again, bit for bit. Nearest takes the same positions and the same
//! inside test, and copies the nearest voxel's value. Both run on the host's cores: the warp of
//! `register` does too, and one pass over the output grid is no work for a device.

use super::affine::{self, Mat4};
use super::cpu;
use super::itk;
use crate::runtime::BackendSpec;
use crate::volume::{Geometry, Volume};
use anyhow::{bail, Result};
use std::path::Path;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Interp {
    /// Trilinear, as register's PREFIX_warped
    #[value(alias = "trilinear")]
    Linear,
    /// Nearest neighbour: the moving image's values as they are (labels, masks, atlases)
    #[value(alias = "nn", alias = "nearestneighbour", alias = "nearestneighbor")]
    Nearest,
}

/// How a matrix file is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MatrixFile {
    /// World mm, reference (fixed) point -> moving point: register's PREFIX_affine.txt,
    /// reg_aladin's -aff.
    World,
    /// FSL FLIRT's .mat (register's PREFIX.mat): moving scaled voxels -> reference ones.
    Flirt,
}

/// The matrix in `path`, checked (4x4, finite, affine, invertible: [`affine::read`]), as the
/// file holds it: before the images are read, so a bad matrix fails at once. A world matrix
/// in a file named `.mat` is refused: register writes its FLIRT matrix under that name, and
/// read as world coordinates it would resample to the wrong place without a word. An ITK/ANTs
/// transform file says what it is, so `World` reads it whatever its name (ANTs writes
/// 0GenericAffine.mat); given as a FLIRT matrix it is refused, naming the option that reads it.
pub fn read_matrix(path: &Path, kind: MatrixFile) -> Result<Mat4> {
    if let Some(format) = itk::detect(path) {
        if kind == MatrixFile::Flirt && format == itk::Format::Elastix {
            bail!("{}: an elastix transform parameter file, not an FSL FLIRT matrix: give it with --affine (which reads elastix's TransformParameters files)", path.display());
        }
        if kind == MatrixFile::Flirt {
            bail!("{}: an ITK/ANTs transform, not an FSL FLIRT matrix: give it with --affine (which reads ITK transform files)", path.display());
        }
        return itk::read(path);
    }
    if kind == MatrixFile::World && path.extension().is_some_and(|e| e.eq_ignore_ascii_case("mat")) {
        bail!(
            "{}: a .mat file is taken for FSL FLIRT's convention (register's PREFIX.mat): give it with --fsl-mat; --affine reads a world matrix (register's PREFIX_affine.txt, reg_aladin's -aff)",
            path.display()
        );
    }
    affine::read(path)
}

/// The world transform (reference point -> moving point) of a matrix `m` read as `kind`: the
/// FLIRT convention depends on both grids (affine.rs `from_flirt`).
pub fn world(m: &Mat4, kind: MatrixFile, reference: &Geometry, moving: &Geometry) -> Mat4 {
    match kind {
        MatrixFile::World => *m,
        MatrixFile::Flirt => affine::from_flirt(m, reference, moving),
    }
}

/// Refuses a reference that cannot give the output grid, naming `what` (the file).
pub fn check_reference(nvol: usize, what: &str) -> Result<()> {
    if nvol != 1 {
        bail!("{what}: the reference must be a 3-D image (it gives the output grid), this has {nvol} volumes");
    }
    Ok(())
}

/// `moving` (every volume of it, one at a time) resampled onto the `reference` grid through
/// `t` (reference world -> moving world). Linear: [`super::warp`]'s values (NaN or infinite
/// where a sample reads such a voxel); nearest: the moving voxels' values, copied. 0 outside.
pub fn resample(moving: &Volume, reference: &Geometry, t: &Mat4, interp: Interp) -> Vec<f32> {
    let m = super::output_map(t, reference, &moving.geom);
    let (n, dims) = (moving.geom.dims, reference.dims);
    let mut out = vec![0.0f32; reference.nvox() * moving.nvol()];
    for (k, o) in out.chunks_mut(reference.nvox().max(1)).enumerate() {
        match interp {
            Interp::Linear => cpu::resample_into(moving.frame(k), n, &m, dims, o),
            Interp::Nearest => cpu::nearest_into(moving.frame(k), n, &m, dims, o),
        }
    }
    out
}

/// Voxels [first, first + out.len()) of [`resample`]'s output (volumes last), made a slab at a
/// time on the calling thread (a slab the range cuts is made whole aside): the writer asks for
/// the output a member at a time on every core, so a 4-D result onto a finer grid (a 100-volume
/// DWI onto a 1 mm T1, 2.9 GB) is never held whole. The same values as [`resample`].
pub fn resample_part(moving: &Volume, reference: &Geometry, t: &Mat4, interp: Interp, first: usize, out: &mut [f32]) {
    let m = super::output_map(t, reference, &moving.geom);
    let (n, dims) = (moving.geom.dims, reference.dims);
    let (plane, nz) = (dims[0] * dims[1], dims[2]);
    if plane == 0 || out.is_empty() {
        return;
    }
    let nearest = interp == Interp::Nearest;
    let end = first + out.len();
    let mut aside = Vec::new();
    for g in first / plane..end.div_ceil(plane) {
        let (s, e) = (g * plane, (g + 1) * plane);
        let (k, z) = (g / nz, g % nz);
        if s >= first && e <= end {
            cpu::slab_into(moving.frame(k), n, &m, dims, z, nearest, &mut out[s - first..e - first]);
        } else {
            aside.resize(plane, 0.0);
            cpu::slab_into(moving.frame(k), n, &m, dims, z, nearest, &mut aside);
            let (a, b) = (s.max(first), e.min(end));
            out[a - first..b - first].copy_from_slice(&aside[a - s..b - s]);
        }
    }
}

/// `moving` with every axis of one voxel (a single slice, a one-voxel-wide image) made two
/// copies of that voxel, at half a voxel either side of its centre: the image then covers the
/// slab of its thickness, as ITK and FSL sample a 2-D image. The box of voxel centres that both
/// interpolations sample inside is a plane on such an axis, which a turned or shifted grid
/// misses: the output was 0 nearly everywhere. The same volume where no axis has one voxel.
/// Call it after [`world`], which reads a FLIRT matrix through the image's own grid.
pub fn single_voxel_axes_as_slabs(moving: Volume) -> Volume {
    let n = moving.geom.dims;
    if n.iter().all(|&d| d > 1) {
        return moving;
    }
    let d = n.map(|d| d.max(2));
    let nvol = moving.nvol();
    let src = moving.as_flat();
    let at = |x: usize, y: usize, z: usize, t: usize| src[x.min(n[0] - 1) + n[0] * (y.min(n[1] - 1) + n[1] * (z.min(n[2] - 1) + n[2] * t))];
    let mut data = Vec::with_capacity(d.iter().product::<usize>() * nvol);
    for t in 0..nvol {
        for z in 0..d[2] {
            for y in 0..d[1] {
                data.extend((0..d[0]).map(|x| at(x, y, z, t)));
            }
        }
    }
    let mut geom = moving.geom.clone();
    geom.dims = d;
    for a in (0..3).filter(|&a| n[a] == 1) {
        for r in 0..3 {
            geom.affine[r][3] -= 0.5 * geom.affine[r][a];
        }
    }
    Volume::from_flat(geom, nvol, data)
}

/// The output's geometry: the reference grid and affine; a 4-D output keeps the moving
/// series' time step and unit (pixdim[4], xyzt_units), which a 3-D reference has not.
pub fn output_geometry(reference: &Geometry, moving: &Volume) -> Geometry {
    let mut g = reference.clone();
    if moving.nvol() > 1 {
        let mh = &moving.geom.header;
        g.header.pixdim[4] = mh.pixdim[4];
        g.header.xyzt_units = (g.header.xyzt_units & 0x07) | (mh.xyzt_units & 0x38);
    }
    g
}

/// The warning for `--backend` (other than cpu and the default auto) or `--threads`: the
/// resampling runs on the host's cores whatever they name.
pub fn unused_options_warning(backend: &BackendSpec, threads: Option<usize>) -> Option<String> {
    let b = if *backend == BackendSpec::Cpu { BackendSpec::Auto } else { backend.clone() };
    crate::runtime::unused::unused_device_options("resample", "runs on the CPU, on every core (as register's warped image)", &b, threads)
}

/// Says when the output is 0 everywhere though the moving image is not: the matrix took every
/// reference voxel outside the moving image's data (a matrix for other images, the inverse one,
/// or --affine and --fsl-mat mixed up). register stops on no overlap; this wrote an empty image
/// without a word.
/// `all_zero`: whether every voxel of the output was 0 (it is made a part at a time as it is
/// written, [`resample_part`]).
pub fn empty_output_warning(all_zero: bool, moving: &Volume, out_name: &str, moving_name: &str) -> Option<String> {
    let empty = all_zero && moving.as_flat().iter().any(|v| *v != 0.0);
    empty.then(|| format!("warning: {out_name}: every voxel is 0, though {moving_name} is not: the matrix takes the whole reference grid off the moving image's data (a matrix for other images, or its inverse?)"))
}

/// Integer labels above 2^24 are not all float32 numbers: the reader has already rounded them
/// (outputs are float32), so two such labels may have become one. Says so for a nearest run
/// whose moving image is stored as integers and holds such values.
pub fn large_label_warning(moving: &Volume, what: &str) -> Option<String> {
    // NIfTI datatypes INT32, UINT32, INT64, UINT64: integers float32 cannot all hold.
    let wide = [8, 768, 1024, 1280].contains(&moving.geom.header.datatype);
    let big = wide && moving.as_flat().iter().any(|v| v.abs() > (1u32 << 24) as f32);
    big.then(|| format!("warning: {what}: values above 16777216 (2^24) are rounded to float32 on reading (outputs are float32), so labels that large may merge"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::register::{params, voxel_map_f32};

    fn geometry(dims: [usize; 3], vs: f32, shift: [f64; 3]) -> Geometry {
        let mut g = Geometry::synthetic(dims, [vs; 3]);
        for r in 0..3 {
            g.affine[r][3] += shift[r];
        }
        g
    }

    /// A label image resampled with nearest neighbour through a rotation keeps its label set
    /// (no value appears that the moving image lacks), and every voxel inside holds the value
    /// of the moving voxel nearest its mapped position.
    #[test]
    fn nearest_keeps_the_labels() {
        let mg = geometry([20, 22, 18], 2.0, [3.0, -4.0, 1.0]);
        let labels: Vec<f32> = (0..mg.nvox()).map(|i| [0.0, 2.0, 7.0, 41.0, 1003.0][(i * 7 + i / 20) % 5]).collect();
        let moving = Volume::from_flat(mg.clone(), 1, labels);
        let rg = geometry([25, 21, 19], 1.7, [0.0; 3]);
        let t = params::matrix(&[2.0, -1.0, 3.0, 7.0, -5.0, 11.0], [10.0, 10.0, 10.0]);
        let out = resample(&moving, &rg, &t, Interp::Nearest);
        let mut set: Vec<u32> = out.iter().map(|v| v.to_bits()).collect();
        set.sort_unstable();
        set.dedup();
        let want: Vec<u32> = [0.0f32, 2.0, 7.0, 41.0, 1003.0].iter().map(|v| v.to_bits()).collect();
        assert_eq!(set, want, "labels out: {:?}", set.iter().map(|&b| f32::from_bits(b)).collect::<Vec<_>>());
        let m = voxel_map_f32(&t, &rg, &mg);
        let (mut inside, mut checked) = (0, 0);
        for z in 0..rg.dims[2] {
            for y in 0..rg.dims[1] {
                for x in 0..rg.dims[0] {
                    let p = cpu::map_point(&m, x as f32, y as f32, z as f32);
                    let got = out[rg.index(x, y, z)];
                    if cpu::sample(moving.as_flat(), mg.dims, p).is_none() {
                        assert_eq!(got, 0.0);
                        continue;
                    }
                    inside += 1;
                    // Away from a half, the nearest centre is unambiguous.
                    if p.iter().any(|q| (q - q.floor() - 0.5).abs() < 1e-3) {
                        continue;
                    }
                    let k = p.map(|q| q.round() as usize);
                    assert_eq!(got, moving.as_flat()[mg.index(k[0], k[1], k[2])], "({x},{y},{z}) at {p:?}");
                    checked += 1;
                }
            }
        }
        assert!(inside > 1000 && inside < rg.nvox() && checked > inside / 2, "{inside} inside, {checked} checked of {}", rg.nvox());
    }

    /// The output made a part at a time, as the writer asks for it (parts that start and end
    /// inside a slab, span slabs, cross from one volume into the next, a single voxel), is
    /// [`resample`]'s output bit for bit, for both interpolations.
    #[test]
    fn parts_are_the_whole_output() {
        let mg = geometry([16, 14, 12], 2.5, [1.0, 2.0, -3.0]);
        let n = mg.nvox();
        let data: Vec<f32> = (0..3 * n).map(|i| ((i * 37) % 101) as f32 + 1.0 + (i / n) as f32 * 0.25).collect();
        let moving = Volume::from_flat(mg, 3, data);
        let rg = geometry([13, 11, 9], 2.0, [0.5, -1.0, 2.0]);
        let t = params::matrix(&[1.0, -2.0, 0.5, 6.0, -4.0, 9.0], [8.0, 8.0, 8.0]);
        let total = rg.nvox() * 3;
        for interp in [Interp::Linear, Interp::Nearest] {
            let whole = resample(&moving, &rg, &t, interp);
            assert!(whole.iter().filter(|v| **v != 0.0).count() > total / 4, "{interp:?}: too few voxels inside to tell");
            for len in [1, 7, 13 * 11 - 3, 13 * 11, 13 * 11 * 9 + 5, 1000, total] {
                let mut made = vec![f32::NAN; total];
                for (i, part) in made.chunks_mut(len).enumerate() {
                    resample_part(&moving, &rg, &t, interp, i * len, part);
                }
                let same = made.iter().zip(&whole).all(|(a, b)| a.to_bits() == b.to_bits());
                assert!(same, "{interp:?}, parts of {len}: first difference at {:?}", made.iter().zip(&whole).position(|(a, b)| a.to_bits() != b.to_bits()));
            }
        }
    }

    /// A single slice resampled through a shift within its thickness, or a small turn, is the
    /// slice where the reference voxels fall within half a voxel of its plane and 0 past that
    /// (it was 0 everywhere off the plane); onto itself it is itself, bit for bit. A moving
    /// image with no axis of one voxel is passed through untouched.
    #[test]
    fn a_single_slice_is_the_slab_of_its_thickness() {
        let mg = geometry([6, 5, 1], 2.0, [1.0, -2.0, 3.0]);
        let data: Vec<f32> = (0..2 * mg.nvox()).map(|i| (i * 13 % 29) as f32 + 1.0).collect();
        let moving = Volume::from_flat(mg.clone(), 2, data.clone());
        let slab = single_voxel_axes_as_slabs(moving.clone());
        let plane = mg.nvox();
        for interp in [Interp::Linear, Interp::Nearest] {
            let same = resample(&slab, &mg, &affine::IDENTITY, interp);
            assert_eq!(same, data, "{interp:?}: onto itself");
            // Reference slices 0.3 and 0.7 voxels (0.6 and 1.4 mm) above the slice's centre.
            for (dz, inside) in [(0.6, true), (-0.6, true), (1.4, false)] {
                let t = params::matrix(&[0.0, 0.0, dz, 0.0, 0.0, 0.0], [0.0; 3]);
                let out = resample(&slab, &mg, &t, interp);
                let want: Vec<f32> = if inside { data.clone() } else { vec![0.0; data.len()] };
                assert_eq!(out, want, "{interp:?}, {dz} mm off the plane");
                if inside {
                    assert!(resample(&moving, &mg, &t, interp).iter().all(|v| *v == 0.0), "{interp:?}: without the slab, nothing is inside");
                }
            }
            // A 3-degree turn about x: a 5-voxel-wide slice rises at most ~0.5 mm.
            let t = params::matrix(&[0.0, 0.0, 0.0, 3.0, 0.0, 0.0], mg.voxel_to_world([2.5, 2.0, 0.0]));
            let out = resample(&slab, &mg, &t, interp);
            assert!(out[..plane].iter().all(|v| *v != 0.0), "{interp:?}: the turned slice lies within the slab");
        }
        assert_eq!(slab.geom.dims, [6, 5, 2]);
        let thick = Volume::from_flat(geometry([6, 5, 3], 2.0, [0.0; 3]), 1, (0..90).map(|i| i as f32).collect());
        let kept = single_voxel_axes_as_slabs(thick.clone());
        assert_eq!((kept.geom.dims, kept.geom.affine, kept.as_flat()), (thick.geom.dims, thick.geom.affine, thick.as_flat()));
    }

    /// An oblique image resampled onto itself through the identity is itself, border faces
    /// included, with either interpolation; so is register's warp. The affines are the sforms
    /// of DIPY's aniso_vox.nii.gz and nibabel's someones_epi.nii.gz (float32, as stored), which
    /// lost 64 and 63 of these 504 voxels.
    #[test]
    fn an_oblique_image_onto_itself_is_itself() {
        let sforms: [[[f64; 4]; 3]; 2] = [
            [
                [-3.999786615371704, -5.817553756060079e-06, -0.05163605883717537, 118.76344299316406],
                [0.023993905633687973, -3.2563929557800293, -2.9034810066223145, 132.19818115234375],
                [-0.03362608328461647, -2.322908639907837, 4.070274353027344, 22.819555282592773],
            ],
            [[3.0, 0.0, 0.0, -78.0], [0.0, 2.866009473800659, -0.8865606188774109, -76.0], [0.0, 0.8865606188774109, 2.866009473800659, -64.0]],
        ];
        for (k, rows) in sforms.iter().enumerate() {
            let mut g = Geometry::synthetic([9, 8, 7], [4.0, 4.0, 5.0]);
            for (r, row) in rows.iter().enumerate() {
                g.affine[r] = *row;
            }
            let data: Vec<f32> = (0..g.nvox()).map(|i| ((i * 37) % 101) as f32 + 1.0).collect();
            let v = Volume::from_flat(g.clone(), 1, data.clone());
            for interp in [Interp::Linear, Interp::Nearest] {
                let out = resample(&v, &g, &affine::IDENTITY, interp);
                let lost = out.iter().zip(&data).filter(|(a, b)| a != b).count();
                assert_eq!(lost, 0, "sform {k}, {interp:?}: {lost} of {} voxels changed", g.nvox());
            }
            assert_eq!(super::super::warp(&v, &g, &affine::IDENTITY), data, "sform {k}: the warp");
        }
    }

    /// Linear is register's warp, bit for bit; a 4-D image is resampled volume by volume (each
    /// volume as it would be alone), and nearest fills exactly the voxels linear fills.
    #[test]
    fn linear_is_the_warp_and_volumes_are_independent() {
        let mg = geometry([16, 14, 12], 2.5, [1.0, 2.0, -3.0]);
        let n = mg.nvox();
        let data: Vec<f32> = (0..3 * n).map(|i| ((i * 37) % 101) as f32 + 1.0 + (i / n) as f32 * 0.25).collect();
        let four = Volume::from_flat(mg.clone(), 3, data.clone());
        let rg = geometry([20, 18, 15], 2.0, [-2.0, 0.0, 1.0]);
        let t = params::matrix(&[1.5, -2.0, 0.5, 4.0, -3.0, 6.0, 3.0, -2.0, 1.0], [15.0, 15.0, 15.0]);
        let lin = resample(&four, &rg, &t, Interp::Linear);
        let near = resample(&four, &rg, &t, Interp::Nearest);
        assert_eq!(lin.len(), 3 * rg.nvox());
        for k in 0..3 {
            let one = Volume::from_flat(mg.clone(), 1, data[k * n..(k + 1) * n].to_vec());
            let w = super::super::warp(&one, &rg, &t);
            let got = &lin[k * rg.nvox()..(k + 1) * rg.nvox()];
            assert!(got.iter().zip(&w).all(|(a, b)| a.to_bits() == b.to_bits()), "volume {k} differs from the warp");
            // Every moving value is >= 1, so 0 marks outside in both.
            let nz = &near[k * rg.nvox()..(k + 1) * rg.nvox()];
            assert!(got.iter().zip(nz).all(|(a, b)| (*a == 0.0) == (*b == 0.0)), "volume {k}: nearest and linear fill different voxels");
        }
        let outside = lin[..rg.nvox()].iter().filter(|v| **v == 0.0).count();
        assert!(outside > 0 && outside < rg.nvox(), "{outside} outside: both kinds needed");
        // The volumes differ, so a mix-up of frames would show.
        assert_ne!(lin[..rg.nvox()], lin[rg.nvox()..2 * rg.nvox()]);
    }

    #[test]
    fn flirt_matrices_are_read_through_both_grids() {
        let d = tempfile::tempdir().unwrap();
        let (rg, mg) = (geometry([30, 30, 20], 2.0, [5.0, 0.0, 0.0]), geometry([20, 24, 20], 3.0, [0.0, -6.0, 2.0]));
        let t = params::matrix(&[3.0, -2.0, 1.0, 5.0, 4.0, -6.0], [0.0; 3]);
        let (world, flirt, misnamed) = (d.path().join("a.txt"), d.path().join("a.mat"), d.path().join("w.mat"));
        affine::write(&world, &t).unwrap();
        affine::write(&flirt, &affine::to_flirt(&t, &rg, &mg)).unwrap();
        affine::write(&misnamed, &t).unwrap();
        let a = super::world(&read_matrix(&world, MatrixFile::World).unwrap(), MatrixFile::World, &rg, &mg);
        let b = super::world(&read_matrix(&flirt, MatrixFile::Flirt).unwrap(), MatrixFile::Flirt, &rg, &mg);
        for r in 0..4 {
            for c in 0..4 {
                // 10 decimals written: entries up to ~100 mm agree to ~1e-8.
                assert!((a[r][c] - t[r][c]).abs() < 1e-9 && (b[r][c] - t[r][c]).abs() < 1e-7, "{a:?} {b:?} {t:?}");
            }
        }
        let e = read_matrix(&misnamed, MatrixFile::World).unwrap_err().to_string();
        assert!(e.contains("w.mat") && e.contains("--fsl-mat"), "{e}");
    }

    /// ANTs' 0GenericAffine.mat given to --affine is read as the ITK transform it is, though
    /// named .mat; given to --fsl-mat it is refused, naming --affine (as a FLIRT matrix it
    /// failed as "not valid UTF-8").
    #[test]
    fn an_ants_mat_is_read_by_affine_not_fsl_mat() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("0GenericAffine.mat");
        let var = |name: &str, v: &[f64]| -> Vec<u8> {
            let mut b: Vec<u8> = [0, v.len() as i32, 1, 0, name.len() as i32 + 1].iter().flat_map(|x: &i32| x.to_le_bytes()).collect();
            b.extend(name.bytes().chain([0]));
            b.extend(v.iter().flat_map(|x| x.to_le_bytes()));
            b
        };
        let shift = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 5.0, -6.0, 7.0];
        std::fs::write(&p, [var("AffineTransform_double_3_3", &shift), var("fixed", &[0.0; 3])].concat()).unwrap();
        assert_eq!(read_matrix(&p, MatrixFile::World).unwrap(), affine::translation([-5.0, 6.0, 7.0]));
        let e = read_matrix(&p, MatrixFile::Flirt).unwrap_err().to_string();
        assert!(e.starts_with(&format!("{}: an ITK/ANTs transform", p.display())) && e.contains("--affine"), "{e}");
    }

    #[test]
    fn device_options_other_than_the_cpu_are_said() {
        let w = |b: &str, t| unused_options_warning(&b.parse().unwrap(), t);
        assert_eq!(w("auto", None), None);
        assert_eq!(w("cpu", None), None);
        assert_eq!(w("opencl", None).unwrap(), "warning: --backend opencl does not apply to resample, which runs on the CPU, on every core (as register's warped image)");
        assert!(w("cpu", Some(2)).unwrap().starts_with("warning: --threads 2 does not apply to resample"));
    }

    /// Labels above 2^24 in an integer image are said (they may have merged on reading); the
    /// same values stored as floats, or smaller integers, are not.
    #[test]
    fn large_integer_labels_are_said() {
        let mut g = Geometry::synthetic([2, 2, 2], [1.0; 3]);
        let big = Volume::from_flat(g.clone(), 1, vec![0.0, 1.0, 16_777_218.0, 3.0, 0.0, 0.0, 0.0, 0.0]);
        assert!(large_label_warning(&big, "a.nii").is_none(), "float32 data: nothing was rounded on reading");
        g.header.datatype = 8;
        let big = Volume::from_flat(g.clone(), 1, big.as_flat().to_vec());
        assert!(large_label_warning(&big, "a.nii").unwrap().starts_with("warning: a.nii: values above 16777216"));
        let small = Volume::from_flat(g, 1, vec![16_777_216.0; 8]);
        assert!(large_label_warning(&small, "a.nii").is_none());
    }

    #[test]
    fn a_4d_reference_is_refused() {
        let e = check_reference(2, "ref.nii.gz").unwrap_err().to_string();
        assert!(e.starts_with("ref.nii.gz:") && e.contains("2 volumes"), "{e}");
    }
}
