//! A complete synthetic diffusion dataset on disk (what `neuroport synth` writes): DWI, FSL
//! bvals/bvecs, brain and white-matter masks, and the ground truth, so the pipeline can be tried
//! and checked without scanner data.
//!
//! The phantom is defined in voxel axes. Its geometry has a positive-determinant affine, so the
//! bvecs are written as FSL expects them (x negated, see `volume::gradients`) and the truth is
//! written in that same bvecs frame: `neuroport dti`'s `_tensor` and `_V1` compare with
//! `truth_tensor` and `truth_V1` directly.

use super::{gradient_table, phantom, simulate_dwi, sticks, GradientTable};
use crate::volume::{xyz_of, Geometry, Outputs, B0_MAX, B_MAX};
use anyhow::{bail, Result};
use std::path::{Path, PathBuf};

/// Which model makes the signal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Model {
    /// The diffusion tensor of the phantom (single-tensor DTI truth).
    Tensor,
    /// Ball and two sticks: one stick per bundle, two where bundles cross.
    Sticks,
}

impl std::str::FromStr for Model {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> Result<Model> {
        match s.to_ascii_lowercase().as_str() {
            "tensor" => Ok(Model::Tensor),
            "sticks" | "ball-and-sticks" => Ok(Model::Sticks),
            _ => bail!("unknown model '{s}': use tensor or sticks"),
        }
    }
}

/// What to simulate.
#[derive(Clone, Debug)]
pub struct Spec {
    pub dims: [usize; 3],
    pub voxel_size: [f32; 3],
    /// Signal-to-noise ratio of the b = 0 signal (S0 / sigma); infinity for no noise.
    pub snr: f64,
    pub seed: u64,
    pub model: Model,
    /// b = 0 volumes, directions per shell, and the shells' b-values (s/mm^2).
    pub nb0: usize,
    pub ndirs: usize,
    pub shells: Vec<f64>,
}

/// S0 of the phantom's tissue.
pub const S0: f64 = 1000.0;
/// Stick fractions in one-bundle and in crossing voxels, and the diffusivity of the sticks model.
pub const F_ONE: f64 = 0.6;
pub const F_CROSS: f64 = 0.35;
pub const D_STICKS: f64 = 1.2e-3;

impl Spec {
    pub fn new(dims: [usize; 3], model: Model) -> Spec {
        let shells = match model {
            Model::Tensor => vec![1000.0],
            Model::Sticks => vec![1000.0, 2000.0],
        };
        Spec { dims, voxel_size: [2.0; 3], snr: 30.0, seed: 1, model, nb0: 3, ndirs: 32, shells }
    }

    /// About how many bytes [`build`] and [`write`] hold at once: the DWI (f32 per volume) and,
    /// per voxel, the phantom (62 B) with the model's truth (36 B for the tensor, 80 B of
    /// voxel configurations and ~100 B of truth for sticks) and the masks written as f32.
    pub fn memory_needed(&self) -> f64 {
        let nvol = self.nb0 as f64 + (self.ndirs * self.shells.len()) as f64;
        let per_voxel = match self.model {
            Model::Tensor => 112.0,
            Model::Sticks => 256.0,
        };
        self.dims.iter().map(|&d| d as f64).product::<f64>() * (4.0 * nvol + per_voxel)
    }

    /// The gradient table in voxel axes (the frame the phantom is defined in).
    pub fn table(&self) -> Result<GradientTable> {
        let mut bvals = vec![0.0; self.nb0];
        let mut bvecs = vec![[0.0; 3]; self.nb0];
        for (i, &b) in self.shells.iter().enumerate() {
            // At or below B0_MAX the readers take a volume for b = 0 (and warn of ms/um^2);
            // above B_MAX they refuse the table: either way the phantom would not read back.
            if !(b > B0_MAX && b <= B_MAX) {
                bail!("shell b-values must be above {B0_MAX} s/mm^2 (at or below, a volume counts as b=0) and at most {B_MAX:e}, got {b}");
            }
            // The same directions again: a repeat of the shell, not a second shell.
            if self.shells[..i].contains(&b) {
                bail!("--shells gives {b} twice: give each shell once (--dirs sets the directions per shell)");
            }
            let g = gradient_table(0, self.ndirs, b);
            bvals.extend(g.bvals);
            bvecs.extend(g.bvecs);
        }
        GradientTable::new(bvals, bvecs)
    }
}

/// A simulated dataset in memory.
pub struct Dataset {
    pub geom: Geometry,
    /// DWI, component-major (`table.len()` volumes).
    pub dwi: Vec<f32>,
    /// The gradient table in the bvecs frame (as written to disk).
    pub table: GradientTable,
    pub mask: Vec<u8>,
    pub wm: Vec<u8>,
    /// Ground-truth volumes, each (file stem, volumes, component-major data), bvecs frame.
    pub truth: Vec<(&'static str, usize, Vec<f32>)>,
}

/// x negated: between voxel axes and the FSL bvecs frame when the affine's determinant is > 0.
fn flip(v: [f64; 3]) -> [f64; 3] {
    [0.0 - v[0], v[1], v[2]]
}

/// The grid sizes a phantom (this one or `synth t1`'s) may have: at least 4 each, at most 2^27
/// voxels (beyond, its arrays outgrow memory: an allocation abort, not an error), and at most
/// [`NIFTI_MAX_DIM`] along an axis (a larger one was built and only then refused at the write).
pub fn check_dims(dims: [usize; 3]) -> Result<()> {
    if dims.iter().any(|&d| d < 4) || dims.iter().try_fold(1usize, |p, &d| p.checked_mul(d)).is_none_or(|n| n > 1 << 27) {
        bail!("phantom dimensions must be at least 4 each and at most 2^27 voxels, got {:?}", dims);
    }
    if dims.iter().any(|&d| d > NIFTI_MAX_DIM) {
        bail!("phantom dimensions must be at most {NIFTI_MAX_DIM} each (a NIfTI-1 header's limit), got {:?}", dims);
    }
    Ok(())
}

/// Voxel sizes (mm) a phantom may have: 1 um to 1 m, past any MRI's. Smaller ones wrote an
/// affine the readers refuse as singular (1e-30 mm); larger ones, world coordinates of 1e30 mm
/// that the trackers step through as nothing.
pub const VOXEL_MM: [f32; 2] = [1e-3, 1e3];

/// Checks voxel sizes against [`VOXEL_MM`] (NaN and infinities fail too).
pub fn check_voxel(voxel: [f32; 3]) -> Result<()> {
    let [lo, hi] = VOXEL_MM;
    if voxel.iter().any(|v| !(*v >= lo && *v <= hi)) {
        bail!("--voxel sizes must be from {lo} to {hi} mm, got {voxel:?}");
    }
    Ok(())
}

/// `--voxel`: one size for isotropic voxels (as MRtrix3's `-voxel` and FSL's `-applyisoxfm`
/// read one number) or three, x,y,z; checked by [`check_voxel`].
pub fn parse_voxel(s: &str) -> Result<[f32; 3]> {
    let bad = || anyhow::anyhow!("--voxel must be one size (isotropic) or three x,y,z, got '{s}'");
    let v: Vec<f32> = s.split(',').map(|p| p.trim().parse::<f32>()).collect::<Result<_, _>>().map_err(|_| bad())?;
    let voxel = match v[..] {
        [d] => [d; 3],
        [x, y, z] => [x, y, z],
        _ => return Err(bad()),
    };
    check_voxel(voxel)?;
    Ok(voxel)
}

/// The most voxels along an axis, or volumes, that a NIfTI-1 header can hold (an i16).
pub const NIFTI_MAX_DIM: usize = i16::MAX as usize;

pub fn build(spec: &Spec) -> Result<Dataset> {
    check_dims(spec.dims)?;
    check_voxel(spec.voxel_size)?;
    if !(spec.snr > 0.0) {
        bail!("--snr must be positive (inf for no noise), got {}", spec.snr);
    }
    let [x, y, z] = spec.dims;
    let nvol = spec.nb0.saturating_add(spec.ndirs.saturating_mul(spec.shells.len()));
    crate::runtime::memory::check_fits(&format!("a {x}x{y}x{z} phantom with {nvol} volumes"), spec.memory_needed(), crate::runtime::memory::available())?;
    // A DWI of more volumes than its header can hold was simulated and only then refused at the
    // write ("cannot write dwi.nii.gz: dimension ... cannot be stored"), seconds later.
    if nvol > NIFTI_MAX_DIM {
        bail!(
            "--b0 {} + --dirs {} x {} shell{} = {nvol} volumes: a NIfTI-1 file holds at most {NIFTI_MAX_DIM}",
            spec.nb0,
            spec.ndirs,
            spec.shells.len(),
            if spec.shells.len() == 1 { "" } else { "s" }
        );
    }
    let voxel_table = spec.table()?;
    // A phantom dti refuses (too few directions, no b=0 on one shell) was written and only
    // failed at the fit: dti's own design check says it now. Over dti's volume limit the
    // phantom is still one for bedpost.
    if nvol <= crate::dti::design::MAX_VOLUMES {
        crate::dti::Design::new(&voxel_table).map_err(|e| {
            anyhow::anyhow!(
                "{} b=0 volume{} and {} direction{} per shell on {} shell{}: dti could not fit this phantom ({e}); it needs at least {} directions and 1 b=0 volume (or a second shell)",
                spec.nb0,
                if spec.nb0 == 1 { "" } else { "s" },
                spec.ndirs,
                if spec.ndirs == 1 { "" } else { "s" },
                spec.shells.len(),
                if spec.shells.len() == 1 { "" } else { "s" },
                crate::dti::design::MIN_DIRECTIONS
            )
        })?;
    }
    let p = phantom::brain_like(spec.dims, spec.voxel_size, spec.seed);
    let nvox = p.geom.nvox();
    let flip_x = p.geom.det() > 0.0;
    let to_bvecs = |v: [f64; 3]| if flip_x { flip(v) } else { v };
    let table = GradientTable::new(voxel_table.bvals.clone(), voxel_table.bvecs.iter().map(|&g| to_bvecs(g)).collect())?;
    let noise_seed = spec.seed.wrapping_mul(0xD1B5_4A32_D192_ED03) ^ 0x5EED;
    let (dwi, truth) = match spec.model {
        Model::Tensor => {
            let dwi = simulate_dwi(&p.tensor, S0, &voxel_table, spec.snr, noise_seed);
            let mut t = p.tensor.clone();
            phantom::voxel_axes_to_fsl(&mut t, &p.geom);
            let mut v1 = vec![0.0f32; 3 * nvox];
            for v in 0..nvox {
                if p.wm[v] != 0 {
                    let d = to_bvecs(p.direction[v].map(|x| x as f64));
                    for c in 0..3 {
                        v1[c * nvox + v] = d[c] as f32;
                    }
                }
            }
            (dwi, vec![("truth_tensor", 6, t), ("truth_V1", 3, v1)])
        }
        Model::Sticks => {
            let configs: Vec<sticks::SticksVoxel> = (0..nvox)
                .map(|v| {
                    if p.mask[v] == 0 {
                        return sticks::SticksVoxel::ball(0.0, 0.0);
                    }
                    let [a, b] = p.bundles[v].map(|d| d.map(|x| x as f64));
                    let two = b.iter().any(|&x| x != 0.0);
                    if p.wm[v] == 0 {
                        sticks::SticksVoxel::ball(S0, D_STICKS)
                    } else if two {
                        sticks::SticksVoxel::two(S0, D_STICKS, [F_CROSS, F_CROSS], a, b)
                    } else {
                        sticks::SticksVoxel::one(S0, D_STICKS, F_ONE, a)
                    }
                })
                .collect();
            let (dwi, t) = sticks::simulate_voxels(&configs, &voxel_table, spec.snr, noise_seed);
            let mut dyads = t.dyads.clone();
            if flip_x {
                for j in 0..sticks::NSTICKS {
                    for v in 0..nvox {
                        dyads[3 * j * nvox + v] = -dyads[3 * j * nvox + v];
                    }
                }
            }
            let f1 = t.f[..nvox].to_vec();
            let f2 = t.f[nvox..].to_vec();
            let (d1, d2) = (dyads[..3 * nvox].to_vec(), dyads[3 * nvox..].to_vec());
            let truth = vec![
                ("truth_dyads1", 3, d1),
                ("truth_dyads2", 3, d2),
                ("truth_f1", 1, f1),
                ("truth_f2", 1, f2),
                ("truth_d", 1, t.d),
                ("truth_S0", 1, t.s0),
            ];
            (dwi, truth)
        }
    };
    Ok(Dataset { geom: p.geom, dwi, table, mask: p.mask, wm: p.wm, truth })
}

/// Two small white-matter regions at the phantom's two ends along x (balls of radius
/// max(1, shortest edge / 24) voxels around the white-matter voxels at the 2nd and 98th
/// percentile of x), inside the white matter: a source and a target for `fim --target`,
/// `track geodesic --target` or probtrack's targets on built-in data.
pub fn end_regions(wm: &[u8], dims: [usize; 3]) -> (Vec<u8>, Vec<u8>) {
    let mut by_x: Vec<usize> = (0..wm.len()).filter(|&v| wm[v] != 0).collect();
    by_x.sort_by_key(|&v| (v % dims[0], v));
    let r = (dims.iter().min().copied().unwrap_or(0) / 24).max(1) as i64;
    let ball = |k: usize| -> Vec<u8> {
        let mut out = vec![0u8; wm.len()];
        let Some(&c) = by_x.get(k) else { return out };
        let at = |v: usize| xyz_of(v, dims).map(|c| c as i64);
        let cc = at(c);
        for v in 0..wm.len() {
            let p = at(v);
            out[v] = (wm[v] != 0 && (0..3).map(|i| (p[i] - cc[i]).pow(2)).sum::<i64>() <= r * r) as u8;
        }
        out
    };
    let n = by_x.len();
    (ball(n / 50), ball(n.saturating_sub(1 + n / 50)))
}

/// The files [`write`] makes in `dir` for a phantom of `model`, in its order: for refusing
/// existing ones before the phantom is built.
pub fn file_names(model: Model, dir: &Path) -> Vec<PathBuf> {
    let names = Outputs::new();
    let truth: &[&str] = match model {
        Model::Tensor => &["truth_tensor", "truth_V1"],
        Model::Sticks => &["truth_dyads1", "truth_dyads2", "truth_f1", "truth_f2", "truth_d", "truth_S0"],
    };
    let image = |n: &str| names.nifti_name(&dir.join(format!("{n}.nii.gz")));
    let mut v = vec![image("dwi"), dir.join("bvals"), dir.join("bvecs")];
    v.extend(["mask", "wm", "roi1", "roi2"].iter().chain(truth).map(|n| image(n)));
    v
}

/// Writes `ds` into `dir` (created if missing): dwi.nii.gz, bvals, bvecs, mask.nii.gz,
/// wm.nii.gz, roi1.nii.gz and roi2.nii.gz ([`end_regions`]) and the truth volumes. All files
/// appear together or none do.
pub fn write(ds: &Dataset, dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Outputs::new();
    let g = &ds.geom;
    let as_f32 = |m: &[u8]| m.iter().map(|&x| x as f32).collect::<Vec<f32>>();
    out.nifti(&dir.join("dwi.nii.gz"), g, ds.table.len(), &ds.dwi)?;
    out.file(&dir.join("bvals"), |p| ds.table.write_bvals(p))?;
    out.file(&dir.join("bvecs"), |p| ds.table.write_bvecs(p))?;
    out.nifti(&dir.join("mask.nii.gz"), g, 1, &as_f32(&ds.mask))?;
    out.nifti(&dir.join("wm.nii.gz"), g, 1, &as_f32(&ds.wm))?;
    let (a, b) = end_regions(&ds.wm, g.dims);
    out.nifti(&dir.join("roi1.nii.gz"), g, 1, &as_f32(&a))?;
    out.nifti(&dir.join("roi2.nii.gz"), g, 1, &as_f32(&b))?;
    for (name, nvol, data) in &ds.truth {
        out.nifti(&dir.join(format!("{name}.nii.gz")), g, *nvol, data)?;
    }
    out.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_snr_is_refused_naming_the_option() {
        // The error read "the SNR must be ...", naming no option, unlike every other synth error.
        for snr in [0.0, -1.0, f64::NAN] {
            let mut spec = Spec::new([6, 6, 4], Model::Tensor);
            spec.snr = snr;
            let e = build(&spec).err().expect("refused").to_string();
            assert!(e.starts_with("--snr must be positive (inf for no noise), got "), "{snr}: {e}");
        }
    }

    #[test]
    fn one_voxel_size_is_isotropic_two_are_refused() {
        assert_eq!(parse_voxel("2").unwrap(), [2.0; 3]);
        assert_eq!(parse_voxel("1.25,1.25,2.5").unwrap(), [1.25, 1.25, 2.5]);
        for bad in ["2,2", "1,2,3,4", "", "a"] {
            let e = parse_voxel(bad).unwrap_err().to_string();
            assert!(e.contains("--voxel must be one size (isotropic) or three x,y,z"), "{bad}: {e}");
        }
        assert!(parse_voxel("0").unwrap_err().to_string().contains("--voxel sizes must be from"));
    }

    /// `file_names` (what `synth` checks before building) lists exactly the files `write` makes,
    /// in its order, for both models: the two lists are kept apart, so a file added to one only
    /// would go unchecked or be refused for nothing.
    #[test]
    fn file_names_are_the_files_write_makes() {
        let tmp = tempfile::tempdir().unwrap();
        for model in [Model::Tensor, Model::Sticks] {
            let dir = tmp.path().join(format!("{model:?}"));
            let written = write(&build(&Spec::new([8, 8, 4], model)).unwrap(), &dir).unwrap();
            assert_eq!(written, file_names(model, &dir), "{model:?}");
        }
    }

    /// The two end regions: non-empty, inside the white matter, apart, at its two ends in x.
    #[test]
    fn end_regions_sit_in_the_white_matter_at_both_ends() {
        let ds = build(&Spec::new([48, 48, 24], Model::Tensor)).unwrap();
        let d = ds.geom.dims;
        let (a, b) = end_regions(&ds.wm, d);
        let xs = |m: &[u8]| (0..m.len()).filter(|&v| m[v] != 0).map(|v| v % d[0]).collect::<Vec<_>>();
        let (xa, xb, xw) = (xs(&a), xs(&b), xs(&ds.wm));
        assert!(!xa.is_empty() && !xb.is_empty());
        assert!((0..a.len()).all(|v| (a[v] == 0 && b[v] == 0) || (ds.wm[v] != 0 && a[v] + b[v] == 1)), "inside the white matter, disjoint");
        let (lo, hi) = (*xw.iter().min().unwrap(), *xw.iter().max().unwrap());
        assert!(xa.iter().all(|&x| x < lo + (hi - lo) / 4) && xb.iter().all(|&x| x > hi - (hi - lo) / 4), "{xa:?} {xb:?} in {lo}..{hi}");
    }

    #[test]
    fn tensor_truth_is_in_the_bvecs_frame() {
        // The signal simulated in voxel axes must equal the tensor model evaluated with the
        // written bvecs and the written truth tensor.
        let mut spec = Spec::new([12, 12, 6], Model::Tensor);
        spec.snr = f64::INFINITY;
        let ds = build(&spec).unwrap();
        let nvox = ds.geom.nvox();
        let t = &ds.truth[0].2;
        let v = (0..nvox).filter(|&v| ds.wm[v] != 0).max_by(|&a, &b| t[nvox + a].abs().total_cmp(&t[nvox + b].abs())).expect("white matter");
        let tv: [f64; 6] = std::array::from_fn(|e| t[e * nvox + v] as f64);
        assert!(tv[1] != 0.0 || tv[2] != 0.0, "an oblique bundle voxel");
        for i in 0..ds.table.len() {
            let want = crate::synth::tensor_signal(&tv, S0, ds.table.bvals[i], &ds.table.bvecs[i]);
            let got = ds.dwi[i * nvox + v] as f64;
            assert!((got - want).abs() < 1e-3 * want, "volume {i}: {got} vs {want}");
        }
    }

    #[test]
    fn sticks_phantom_has_one_and_two_fibre_voxels() {
        let mut spec = Spec::new([24, 24, 8], Model::Sticks);
        spec.snr = f64::INFINITY;
        let ds = build(&spec).unwrap();
        let nvox = ds.geom.nvox();
        let f2 = &ds.truth.iter().find(|t| t.0 == "truth_f2").unwrap().2;
        let f1 = &ds.truth.iter().find(|t| t.0 == "truth_f1").unwrap().2;
        let two = (0..nvox).filter(|&v| f2[v] > 0.0).count();
        let one = (0..nvox).filter(|&v| f1[v] > 0.0 && f2[v] == 0.0).count();
        assert!(two > 0 && one > two, "one-fibre {one}, two-fibre {two}");
        assert_eq!(ds.table.len(), 3 + 2 * 32);
    }
}
