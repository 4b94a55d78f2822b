//! FSL gradient tables (bvals, bvecs).
//!
//! Convention: FSL bvecs are unit vectors in the image's voxel axes, with x negated when the
//! voxel-to-world affine has a positive determinant (the "radiological" convention FSL uses
//! internally; MRtrix applies the same flip when importing). neuroport fits tensors in the bvecs'
//! own frame, as dtifit does, so `PREFIX_tensor` and `PREFIX_V1` can be read by FSL tools; the
//! trackers convert to voxel axes (negating x when det > 0) where they need to.

use anyhow::{bail, Context, Result};
use std::path::Path;

#[derive(Clone, Debug, PartialEq)]
pub struct GradientTable {
    /// b-values in s/mm^2.
    pub bvals: Vec<f64>,
    /// Unit gradient directions (zero for b = 0 volumes), in the bvecs file's frame.
    pub bvecs: Vec<[f64; 3]>,
}

impl GradientTable {
    pub fn len(&self) -> usize {
        self.bvals.len()
    }
    pub fn is_empty(&self) -> bool {
        self.bvals.is_empty()
    }
    /// Builds a table from values, normalising the directions of diffusion-weighted volumes.
    pub fn new(bvals: Vec<f64>, bvecs: Vec<[f64; 3]>) -> Result<GradientTable> {
        if bvals.len() != bvecs.len() {
            bail!("{} b-values but {} gradient directions", bvals.len(), bvecs.len());
        }
        let bvecs = bvals
            .iter()
            .zip(bvecs)
            .map(|(&b, g)| {
                let n = (g[0] * g[0] + g[1] * g[1] + g[2] * g[2]).sqrt();
                if b > 0.0 && n > 1e-6 { [g[0] / n, g[1] / n, g[2] / n] } else { g }
            })
            .collect();
        Ok(GradientTable { bvals, bvecs })
    }
    /// Writes the table in FSL's layout (one row of bvals; three rows of bvecs).
    pub fn write_fsl(&self, bvals: &Path, bvecs: &Path) -> Result<()> {
        self.write_bvals(bvals)?;
        self.write_bvecs(bvecs)
    }
    /// The bvals file: one row.
    pub fn write_bvals(&self, path: &Path) -> Result<()> {
        std::fs::write(path, fsl_row(&self.bvals) + "\n").with_context(|| format!("cannot write {}", path.display()))
    }
    /// The bvecs file: three rows (x, y and z of every volume).
    pub fn write_bvecs(&self, path: &Path) -> Result<()> {
        let rows: Vec<String> = (0..3).map(|c| fsl_row(&self.bvecs.iter().map(|g| g[c]).collect::<Vec<_>>())).collect();
        std::fs::write(path, rows.join("\n") + "\n").with_context(|| format!("cannot write {}", path.display()))
    }
}

/// Numbers as the shortest text that reads back exactly (adding 0.0 turns -0 into 0).
fn fsl_row(v: &[f64]) -> String {
    v.iter().map(|&x| format!("{}", x + 0.0)).collect::<Vec<_>>().join(" ")
}

/// Volumes with b at or below this (s/mm^2) count as b = 0, as MRtrix's default
/// `BZeroThreshold`; [`b0_threshold`] lowers it for tables in ms/um^2.
pub const B0_MAX: f64 = 10.0;

/// The b-value at or below which a volume is unweighted: [`B0_MAX`], or 1 % of the largest
/// b-value when that is smaller (a table in ms/um^2, max 3, has b0s at 0, not at <= 10).
pub fn b0_threshold(bvals: &[f64]) -> f64 {
    let bmax = bvals.iter().fold(0.0f64, |a, &b| a.max(b));
    B0_MAX.min(bmax / 100.0)
}

/// The largest b-value accepted (s/mm^2). Ex vivo acquisitions reach about 1e5; at 1e6 even a
/// diffusivity of 1e-5 mm^2/s attenuates the signal by e^-10, below any noise. Tables in s/m^2
/// (Camino's unit: b = 1000 s/mm^2 is 1e9) land far above it, and so do typos.
pub const B_MAX: f64 = 1e6;

/// Gradient lengths further than this from 1 are reported.
pub const UNIT_TOL: f64 = 0.1;

/// Where a gradient table comes from: FSL's bvals + bvecs (image axes) or MRtrix's `-grad`
/// table (`.b`: one row "x y z b" per volume, scanner axes).
#[derive(Clone, Copy, Debug)]
pub enum GradFiles<'a> {
    Fsl { bvals: &'a Path, bvecs: &'a Path },
    Mrtrix(&'a Path),
}

impl GradFiles<'_> {
    /// The files' names, for messages.
    pub fn describe(&self) -> String {
        match self {
            GradFiles::Fsl { bvals, bvecs } => format!("{} + {}", bvals.display(), bvecs.display()),
            GradFiles::Mrtrix(p) => p.display().to_string(),
        }
    }
    /// Reads and checks the table for `nvol` volumes of an image on `geom`.
    pub fn read(&self, nvol: usize, geom: &super::Geometry) -> Result<GradientTable> {
        match *self {
            GradFiles::Fsl { bvals, bvecs } => read_bvals_bvecs(bvals, bvecs, nvol),
            GradFiles::Mrtrix(p) => read_mrtrix_grad(p, nvol, geom),
        }
    }
}

fn read_numbers(path: &Path, nonfinite_ok: bool) -> Result<Vec<Vec<f64>>> {
    let text = super::read_text(path)?;
    let mut rows = Vec::new();
    for (ln, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("");
        let vals: Vec<&str> = line.split(|c: char| c.is_whitespace() || c == ',').filter(|s| !s.is_empty()).collect();
        if vals.is_empty() {
            continue;
        }
        let mut row = Vec::with_capacity(vals.len());
        for s in &vals {
            match s.parse::<f64>() {
                Ok(v) if v.is_finite() || nonfinite_ok => row.push(v),
                _ => bail!("{}: line {} is not a list of numbers ('{}' is not a finite number)", path.display(), ln + 1, s.chars().take(20).collect::<String>()),
            }
        }
        rows.push(row);
    }
    if rows.is_empty() {
        bail!("{}: holds no numbers", path.display());
    }
    Ok(rows)
}

/// Reads FSL bvals (one row, or one value per line) and bvecs (3 rows x N, or N rows x 3 as
/// DIPY and MRtrix also accept), checking both against `nvol` volumes.
pub fn read_bvals_bvecs(bvals_path: &Path, bvecs_path: &Path, nvol: usize) -> Result<GradientTable> {
    let b = read_numbers(bvals_path, false)?;
    let bvals: Vec<f64> = if b.len() == 1 || b.iter().all(|r| r.len() == 1) {
        b.into_iter().flatten().collect()
    } else {
        bail!("{}: expected one row of b-values", bvals_path.display());
    };
    if bvals.len() != nvol {
        bail!("{}: {} b-values for {nvol} volumes", bvals_path.display(), bvals.len());
    }
    let g = read_numbers(bvecs_path, true)?;
    let bvecs: Vec<[f64; 3]> = if g.len() == 3 && g.iter().all(|r| r.len() == nvol) {
        (0..nvol).map(|i| [g[0][i], g[1][i], g[2][i]]).collect()
    } else if g.len() == nvol && g.iter().all(|r| r.len() == 3) {
        g.iter().map(|r| [r[0], r[1], r[2]]).collect()
    } else {
        bail!(
            "{}: expected 3 rows of {nvol} values (or {nvol} rows of 3), found {} rows of {}",
            bvecs_path.display(),
            g.len(),
            g.first().map(|r| r.len()).unwrap_or(0)
        );
    };
    checked(bvals, bvecs, bvals_path, bvecs_path)
}

/// Reads an MRtrix gradient table (`-grad`, `.b`): one row "x y z b" per volume, directions in
/// scanner (world) axes, turned into the FSL bvecs frame of the image on `geom`.
pub fn read_mrtrix_grad(path: &Path, nvol: usize, geom: &super::Geometry) -> Result<GradientTable> {
    let rows = read_numbers(path, true)?;
    if rows.len() != nvol || rows.iter().any(|r| r.len() != 4) {
        bail!(
            "{}: expected {nvol} rows of 4 values (x y z b, MRtrix's -grad table), found {} rows of {}",
            path.display(),
            rows.len(),
            rows.first().map(|r| r.len()).unwrap_or(0)
        );
    }
    let bvals: Vec<f64> = rows.iter().map(|r| r[3]).collect();
    if let Some((i, _)) = bvals.iter().enumerate().find(|(_, b)| !b.is_finite()) {
        bail!("{}: row {} has a b-value that is not a finite number", path.display(), i + 1);
    }
    let bvecs = rows
        .iter()
        .map(|r| {
            let w = [r[0], r[1], r[2]];
            if !w.iter().all(|x| x.is_finite()) {
                return w;
            }
            // Keep the length (it is reported below); only the frame changes.
            let n = (w[0] * w[0] + w[1] * w[1] + w[2] * w[2]).sqrt();
            let v = geom.world_to_bvecs(w);
            v.map(|x| x * n)
        })
        .collect();
    checked(bvals, bvecs, path, path)
}

/// Refuses b-values above [`B_MAX`]: every weighted one (a table in s/m^2) or some (a typo).
/// Either way a fit would clamp every tensor to the eigenvalue floor, or fail to invert.
fn too_large(bvals: &[f64], path: &Path) -> Result<()> {
    let Some(i) = bvals.iter().position(|&b| b > B_MAX) else { return Ok(()) };
    let b = bvals[i];
    // s/m^2: nothing between the b = 0 volumes and the weighted ones, all of which are too large.
    if bvals.iter().all(|&x| x > B_MAX || x <= B0_MAX) {
        let bmax = bvals.iter().fold(0.0f64, |a, &x| a.max(x));
        bail!(
            "{}: the largest b-value is {bmax}, which looks like s/m^2; neuroport expects s/mm^2 (divide by 1e6: {} s/mm^2)",
            path.display(),
            bmax / 1e6
        );
    }
    bail!("{}: volume {i} has b = {b} s/mm^2, far above any diffusion acquisition (at most {B_MAX:e} is accepted; a typo?)", path.display())
}

/// The checks every table passes: b-values not negative nor above [`B_MAX`]; directions finite and non-zero on
/// diffusion-weighted volumes (NaN/zero allowed on b ~ 0 ones, which DIPY's sample data write);
/// warnings for directions far from unit length and for b-values that look like ms/um^2.
fn checked(bvals: Vec<f64>, mut bvecs: Vec<[f64; 3]>, bvals_path: &Path, bvecs_path: &Path) -> Result<GradientTable> {
    if let Some(v) = bvals.iter().find(|v| **v < 0.0) {
        bail!("{}: negative b-value {v}", bvals_path.display());
    }
    too_large(&bvals, bvals_path)?;
    let thr = b0_threshold(&bvals);
    let mut far = Vec::new();
    for (i, (v, &b)) in bvecs.iter_mut().zip(&bvals).enumerate() {
        let finite = v.iter().all(|x| x.is_finite());
        let n = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
        if b <= thr {
            if !finite {
                *v = [0.0; 3];
            }
            continue;
        }
        if !finite {
            bail!("{}: volume {i} has b = {b} but its gradient direction is not finite ({} {} {})", bvecs_path.display(), v[0], v[1], v[2]);
        }
        if n < 1e-6 {
            bail!("{}: volume {i} has b = {b} but a zero gradient direction", bvecs_path.display());
        }
        if (n - 1.0).abs() > UNIT_TOL {
            far.push(n);
        }
    }
    if !far.is_empty() {
        let (lo, hi) = far.iter().fold((f64::INFINITY, 0.0f64), |(l, h), &n| (l.min(n), h.max(n)));
        eprintln!(
            "warning: {}: {} of {} gradient directions have a length far from 1 ({lo:.2} to {hi:.2}); neuroport normalises each direction and uses the b-values as written (MRtrix would scale b by |g|^2)",
            bvecs_path.display(),
            far.len(),
            bvals.iter().filter(|&&b| b > thr).count()
        );
    }
    let bmax = bvals.iter().fold(0.0f64, |a, &b| a.max(b));
    if bmax > 0.0 && bmax <= B0_MAX {
        eprintln!(
            "warning: {}: the largest b-value is {bmax}, which looks like ms/um^2; neuroport expects s/mm^2 (multiply by 1000: {} s/mm^2)",
            bvals_path.display(),
            bmax * 1000.0
        );
    }
    GradientTable::new(bvals, bvecs)
}
