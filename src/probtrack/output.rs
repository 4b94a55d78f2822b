//! probtrackx2's outputs from a run: fdt_paths, waytotal, seeds_to_<target>, the seed x target
//! matrix, the length histogram (with 003 Fig. 5's exponential fit) and, optionally, the
//! streamlines as .tck. All or nothing, through `volume::Outputs`.

use super::{cpu::trace_points, Field, Params, Tracks};
use crate::io::{table::write_csv, tck::write_tck_of};
use crate::volume::{xyz_of, Outputs};
use anyhow::Result;
use std::path::{Path, PathBuf};

/// 003 Fig. 5: lengths follow p(x) = lambda exp(-lambda x). Fitted as a straight line through
/// the semi-log histogram (Fig. 5c), each non-empty bin weighted by its count (the tail's
/// single-streamline bins are the noisiest); quality is the weighted R^2 of that line. Length 0
/// is left out of the fit as of the mean: no step taken says nothing of how far tracts run.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ExpFit {
    pub lambda: f64,
    pub r2: f64,
    /// Mean length of the streamlines that took a step: those that took none (a seed outside
    /// the mask, a first step out of it), averaged in, pulled the mean towards 0.
    pub mean: f64,
    /// Streamlines that took a step, and those that took none (length 0).
    pub moved: u64,
    pub still: u64,
}

pub fn exp_fit(hist: &[u64]) -> ExpFit {
    let pts: Vec<(f64, f64, f64)> = hist.iter().enumerate().skip(1).filter(|(_, &c)| c > 0).map(|(x, &c)| (x as f64, (c as f64).ln(), c as f64)).collect();
    let still = hist.first().copied().unwrap_or(0);
    let moved = hist.iter().sum::<u64>() - still;
    let mean = hist.iter().enumerate().map(|(x, &c)| x as f64 * c as f64).sum::<f64>() / (moved as f64).max(1.0);
    if pts.len() < 2 {
        return ExpFit { lambda: f64::NAN, r2: f64::NAN, mean, moved, still };
    }
    let w: f64 = pts.iter().map(|p| p.2).sum();
    let mx = pts.iter().map(|p| p.2 * p.0).sum::<f64>() / w;
    let my = pts.iter().map(|p| p.2 * p.1).sum::<f64>() / w;
    let sxy: f64 = pts.iter().map(|p| p.2 * (p.0 - mx) * (p.1 - my)).sum();
    let sxx: f64 = pts.iter().map(|p| p.2 * (p.0 - mx) * (p.0 - mx)).sum();
    let syy: f64 = pts.iter().map(|p| p.2 * (p.1 - my) * (p.1 - my)).sum();
    let slope = sxy / sxx;
    let r2 = if syy > 0.0 { sxy * sxy / (sxx * syy) } else { 1.0 };
    ExpFit { lambda: -slope, r2, mean, moved, still }
}

/// The summary's words on the length histogram `hist`: the fit and the mean, and apart from
/// them how many streamlines took no step (as tckgen and probtrackx count their rejects apart).
pub fn lengths_summary(hist: &[u64]) -> String {
    let f = exp_fit(hist);
    if f.moved == 0 && f.still > 0 {
        return format!("lengths: all {} streamlines took no step", f.still);
    }
    let mean = match f.still {
        0 => format!("mean {:.1} steps", f.mean),
        s => format!("mean {:.1} steps over the {} that moved, {s} took no step", f.mean, f.moved),
    };
    // Fewer than two distinct lengths above 0 fit no line.
    if f.lambda.is_finite() {
        format!("lengths ~ exp(-lambda x): lambda {:.4}/step, R^2 {:.3}, {mean}", f.lambda, f.r2)
    } else {
        format!("lengths: too few distinct lengths to fit exp(-lambda x), {mean}")
    }
}

/// File stem of a mask path (`A.nii.gz` -> `A`), whichever image ending it has (`.nii.gz`,
/// `.nii`, a pair's `.hdr`/`.img`, gzipped or not; any case).
pub fn stem(path: &Path) -> String {
    let name = path.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
    let lower = name.to_ascii_lowercase();
    let cut = [".nii.gz", ".hdr.gz", ".img.gz", ".nii", ".hdr", ".img"].iter().find(|e| lower.ends_with(*e)).map_or(0, |e| e.len());
    name[..name.len() - cut].to_string()
}

/// The files [`write`] makes, in its order, for targets named `targets` (their [`stem`]s): for
/// refusing existing ones before any work.
pub fn file_names(dir: &Path, targets: &[String], tck: Option<&Path>) -> Vec<PathBuf> {
    let names = Outputs::new();
    let mut v = vec![names.nifti_name(&dir.join("fdt_paths.nii.gz")), dir.join("waytotal")];
    v.extend(targets.iter().map(|t| names.nifti_name(&dir.join(format!("seeds_to_{t}.nii.gz")))));
    if !targets.is_empty() {
        v.push(dir.join("matrix_seeds_to_all_targets.csv"));
    }
    v.push(dir.join("lengths.csv"));
    v.extend(tck.map(Path::to_path_buf));
    v
}

/// Writes the run's files into `dir` (and `tck`, world mm) and returns their paths.
pub fn write(t: &Tracks, field: &Field, seeds: &[u32], p: &Params, dir: &Path, tck: Option<&Path>) -> Result<Vec<PathBuf>> {
    let geom = &field.geom;
    let nv = geom.nvox();
    let mut out = Outputs::new();
    let fdt: Vec<f32> = t.visits.iter().map(|&c| c as f32).collect();
    out.nifti(&dir.join("fdt_paths.nii.gz"), geom, 1, &fdt)?;
    out.file(&dir.join("waytotal"), |f| Ok(std::fs::write(f, format!("{}\n", t.waytotal))?))?;
    let nt = field.targets.len();
    for (j, name) in field.targets.iter().enumerate() {
        let mut m = vec![0.0f32; nv];
        for (i, &s) in seeds.iter().enumerate() {
            m[s as usize] = t.seed_targets[i * nt + j] as f32;
        }
        out.nifti(&dir.join(format!("seeds_to_{name}.nii.gz")), geom, 1, &m)?;
    }
    if nt > 0 {
        let mut header = vec!["x", "y", "z"];
        header.extend(field.targets.iter().map(String::as_str));
        let rows: Vec<Vec<String>> = seeds
            .iter()
            .enumerate()
            .map(|(i, &s)| {
                let mut r: Vec<String> = xyz_of(s as usize, geom.dims).iter().map(ToString::to_string).collect();
                r.extend((0..nt).map(|j| t.seed_targets[i * nt + j].to_string()));
                r
            })
            .collect();
        out.file(&dir.join("matrix_seeds_to_all_targets.csv"), |f| write_csv(f, &header, &rows))?;
    }
    let last = t.lengths.iter().rposition(|&c| c > 0).map_or(0, |i| i + 1);
    let rows: Vec<Vec<String>> = t.lengths[..last].iter().enumerate().map(|(x, c)| vec![x.to_string(), c.to_string()]).collect();
    out.file(&dir.join("lengths.csv"), |f| write_csv(f, &["steps", "streamlines"], &rows))?;
    if let Some(path) = tck {
        let lines: Vec<Vec<[f32; 3]>> = {
            use rayon::prelude::*;
            t.kept
                .to_vec()
                .par_iter()
                .map(|&st| trace_points(field, seeds, p, st).into_iter().map(|q| geom.voxel_to_world(q.map(|x| x as f64)).map(|x| x as f32)).collect())
                .collect()
        };
        out.file(path, |f| write_tck_of(f, lines.iter(), t.nseeds * t.nsamples))?;
    }
    out.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exponential_fit_recovers_lambda() {
        let hist: Vec<u64> = (0..200).map(|x| (1e6 * (-0.05 * x as f64).exp()).round() as u64).collect();
        let f = exp_fit(&hist);
        assert!((f.lambda - 0.05).abs() < 1e-3 && f.r2 > 0.999, "{f:?}");
        assert!(exp_fit(&[0, 5]).lambda.is_nan());
    }

    /// Streamlines that took no step are counted apart, neither averaged in (30 of 45 at length
    /// 0 made the mean 0.8 where the 15 that moved average 2.3) nor fitted (with them lambda was
    /// 0.58 where the lengths 2 and 3 halve: ln 2). Without any, the words are as they were.
    #[test]
    fn the_mean_length_leaves_out_streamlines_that_took_no_step() {
        let f = exp_fit(&[30, 0, 10, 5]);
        assert_eq!((f.moved, f.still), (15, 30), "{f:?}");
        assert!((f.mean - 35.0 / 15.0).abs() < 1e-12 && (f.lambda - 2f64.ln()).abs() < 1e-12, "{f:?}");
        assert_eq!(lengths_summary(&[30, 0, 10, 5]), "lengths ~ exp(-lambda x): lambda 0.6931/step, R^2 1.000, mean 2.3 steps over the 15 that moved, 30 took no step");
        assert_eq!(lengths_summary(&[30, 0, 20]), "lengths: too few distinct lengths to fit exp(-lambda x), mean 2.0 steps over the 20 that moved, 30 took no step");
        assert_eq!(lengths_summary(&[0, 0, 20]), "lengths: too few distinct lengths to fit exp(-lambda x), mean 2.0 steps");
        assert_eq!(lengths_summary(&[0, 4, 2, 1]), "lengths ~ exp(-lambda x): lambda 0.6931/step, R^2 1.000, mean 1.6 steps");
        assert_eq!(lengths_summary(&[7]), "lengths: all 7 streamlines took no step");
        // Nothing kept (waytotal 0).
        assert_eq!(lengths_summary(&[0, 0, 0]), "lengths: too few distinct lengths to fit exp(-lambda x), mean 0.0 steps");
    }

    /// `file_names` (what probtrack refuses before tracking) lists exactly the files `write`
    /// makes, in its order, with no target, one or two, with and without the .tck: the two lists
    /// are kept apart, so a file added to one only would go unchecked or be refused for nothing.
    #[test]
    fn file_names_are_the_files_write_makes() {
        use crate::probtrack::{kernels, phantom, run, Config};
        let t = phantom::straight();
        let a = t.angles(2, 5.0, 1);
        let dev = crate::Device::Cpu(std::sync::Arc::new(crate::runtime::cpu::Cpu::new(Some(1)).unwrap()));
        let tmp = tempfile::tempdir().unwrap();
        for ntargets in 0..3 {
            for with_tck in [false, true] {
                let mut f = t.field(&a);
                let names: Vec<String> = (0..ntargets).map(|j| format!("t{j}")).collect();
                for (j, name) in names.iter().enumerate() {
                    f.add_target_voxels(&(0..t.geom.nvox()).map(|v| (v % 24 == 20 + j) as u8).collect::<Vec<_>>(), name).unwrap();
                }
                let seeds = vec![t.geom.index(10, 5, 5) as u32];
                let cfg = Config { nsamples: 2, max_steps: 50, ..Config::default() };
                let tracks = run(kernels(&dev).unwrap().as_mut(), &f, &seeds, &cfg).unwrap();
                let dir = tmp.path().join(format!("{ntargets}-{with_tck}"));
                let tck = with_tck.then(|| dir.join("paths.tck"));
                let p = cfg.params(&f, seeds.len(), true);
                let written = write(&tracks, &f, &seeds, &p, &dir, tck.as_deref()).unwrap();
                assert_eq!(written, file_names(&dir, &names, tck.as_deref()), "{ntargets} targets, tck {with_tck}");
                let mut on_disk: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
                let mut want = written.clone();
                on_disk.sort();
                want.sort();
                assert_eq!(on_disk, want, "{ntargets} targets, tck {with_tck}");
            }
        }
    }

    #[test]
    fn stems() {
        assert_eq!(stem(Path::new("/a/B.nii.gz")), "B");
        assert_eq!(stem(Path::new("c.nii")), "c");
        // A target given as a NIfTI pair (either file) or with an upper-case ending is named
        // as probtrackx names it: --targets a.hdr gave seeds_to_a.hdr.nii.gz and a CSV column
        // "a.hdr".
        for (path, want) in [("a.hdr", "a"), ("a.img", "a"), ("a.hdr.gz", "a"), ("a.img.gz", "a"), ("d/ROI.NII.GZ", "ROI"), ("my.roi.nii.gz", "my.roi"), ("x.Nii", "x")] {
            assert_eq!(stem(Path::new(path)), want, "{path}");
        }
    }
}
