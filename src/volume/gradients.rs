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

fn read_numbers(path: &Path) -> Result<Vec<Vec<f64>>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => bail!("{}: no such file", path.display()),
        Err(e) => bail!("{}: cannot read ({e})", path.display()),
    };
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
                Ok(v) if v.is_finite() => row.push(v),
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

/// Reads FSL bvals (one row, or one value per line) and bvecs (3 rows x N, or N rows x 3),
/// checking both against `nvol` volumes.
pub fn read_bvals_bvecs(bvals_path: &Path, bvecs_path: &Path, nvol: usize) -> Result<GradientTable> {
    let b = read_numbers(bvals_path)?;
    let bvals: Vec<f64> = if b.len() == 1 || b.iter().all(|r| r.len() == 1) {
        b.into_iter().flatten().collect()
    } else {
        bail!("{}: expected one row of b-values", bvals_path.display());
    };
    if let Some(v) = bvals.iter().find(|v| **v < 0.0) {
        bail!("{}: negative b-value {v}", bvals_path.display());
    }
    if bvals.len() != nvol {
        bail!("{}: {} b-values for {nvol} volumes", bvals_path.display(), bvals.len());
    }
    let g = read_numbers(bvecs_path)?;
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
    for (i, (v, b)) in bvecs.iter().zip(&bvals).enumerate() {
        let n = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
        if *b > 0.0 && n < 1e-6 {
            bail!("{}: volume {i} has b = {b} but a zero gradient direction", bvecs_path.display());
        }
    }
    GradientTable::new(bvals, bvecs)
}
