//! The log-linear design matrix of the tensor model and its pseudo-inverse, built once per
//! gradient table on the host in f64 and shipped to the devices in f32.

use crate::volume::GradientTable;
use anyhow::{bail, Result};

/// Volumes a tensor fit needs at least (7 unknowns: S0 and the tensor's 6) and at most.
pub const MIN_VOLUMES: usize = 7;
pub const MAX_VOLUMES: usize = 1024;
/// Non-collinear gradient directions the tensor's 6 components need (with a b=0 volume or a
/// second shell for S0).
pub const MIN_DIRECTIONS: usize = 6;

#[derive(Clone, Debug)]
pub struct Design {
    pub ngrad: usize,
    /// n x 7, row-major: [1, -b gx^2, -2b gx gy, -2b gx gz, -b gy^2, -2b gy gz, -b gz^2], b in ms/um^2.
    pub b: Vec<f32>,
    /// 7 x n, row-major: (B^T B)^-1 B^T.
    pub pinv: Vec<f32>,
    pub b64: Vec<[f64; 7]>,
    pub pinv64: Vec<[f64; 7]>,
    /// The f64 design and pseudo-inverse column by column (7 columns of n), for the CPU fit.
    pub b_cols: Vec<f64>,
    pub pinv_cols: Vec<f64>,
}

impl Design {
    pub fn new(g: &GradientTable) -> Result<Design> {
        let rows: Vec<[f64; 7]> = g
            .bvals
            .iter()
            .zip(&g.bvecs)
            .map(|(&b, v)| {
                let b = b / 1000.0;
                [1.0, -b * v[0] * v[0], -2.0 * b * v[0] * v[1], -2.0 * b * v[0] * v[2], -b * v[1] * v[1], -2.0 * b * v[1] * v[2], -b * v[2] * v[2]]
            })
            .collect();
        let n = rows.len();
        if n > MAX_VOLUMES {
            bail!("the gradient table has {n} volumes; at most {MAX_VOLUMES} are supported");
        }
        if n < MIN_VOLUMES {
            bail!("the gradient table has {n} volumes; a tensor fit needs at least {MIN_VOLUMES}");
        }
        let ata = normal(&rows);
        let inv = invert7(ata).ok_or_else(|| singular(g, &rows))?;
        let pinv64: Vec<[f64; 7]> = (0..n).map(|i| std::array::from_fn(|k| (0..7).map(|q| inv[k][q] * rows[i][q]).sum())).collect();
        let b = rows.iter().flat_map(|r| r.map(|x| x as f32)).collect();
        let pinv = (0..7).flat_map(|k| pinv64.iter().map(move |p| p[k] as f32)).collect();
        let b_cols = (0..7).flat_map(|k| rows.iter().map(move |r| r[k])).collect();
        let pinv_cols = (0..7).flat_map(|k| pinv64.iter().map(move |p| p[k])).collect();
        Ok(Design { ngrad: n, b, pinv, b64: rows, pinv64, b_cols, pinv_cols })
    }
}

/// A DWI and its gradient table ([`crate::volume::read_dwi_with`]), the table checked for a
/// tensor fit. Every command that reads a DWI fits tensors (bedpost starts from them; fim and
/// track fit --dwi first): a table that cannot determine one is its files' problem, said by name
/// here rather than later as the fit of the DWI's. (Here, not in `volume`, which `dti` builds on.)
pub fn read_dwi(dwi: &std::path::Path, grad: crate::volume::GradFiles<'_>) -> Result<(crate::volume::Volume, GradientTable)> {
    read_dwi_showing(dwi, grad, false)
}

/// [`read_dwi`], the read's progress shown where it is long (`show`).
pub fn read_dwi_showing(dwi: &std::path::Path, grad: crate::volume::GradFiles<'_>, show: bool) -> Result<(crate::volume::Volume, GradientTable)> {
    let (v, g) = crate::volume::read_dwi_showing(dwi, grad, show)?;
    require_tensor_table(&g, grad)?;
    Ok((v, g))
}

/// A table read from `grad` must determine a tensor (see [`read_dwi`]).
pub fn require_tensor_table(g: &GradientTable, grad: crate::volume::GradFiles<'_>) -> Result<()> {
    Design::new(g).map(|_| ()).map_err(|e| anyhow::anyhow!("{}: {e}", grad.describe()))
}

/// Why the normal matrix did not invert. Its pivot test is relative to its largest entry, so
/// b-values far apart (one typed 1e9 among 1000s) or all tiny fail it with good directions;
/// scaling each row, then each column, to unit length keeps the rank and tells the two apart.
fn singular(g: &GradientTable, rows: &[[f64; 7]]) -> anyhow::Error {
    let unit: Vec<[f64; 7]> = rows.iter().map(|r| r.map(|x| x / r.iter().map(|x| x * x).sum::<f64>().sqrt())).collect();
    let norm: [f64; 7] = std::array::from_fn(|k| unit.iter().map(|r| r[k] * r[k]).sum::<f64>().sqrt());
    let scaled: Vec<[f64; 7]> = unit.iter().map(|r| std::array::from_fn(|k| if norm[k] > 0.0 { r[k] / norm[k] } else { 0.0 })).collect();
    if invert7(normal(&scaled)).is_none() {
        return anyhow::anyhow!("the gradient table cannot determine a tensor: it needs at least {MIN_DIRECTIONS} non-collinear directions and a b=0 volume or a second shell");
    }
    let thr = crate::volume::b0_threshold(&g.bvals);
    let (lo, hi) = g.bvals.iter().filter(|&&b| b > thr).fold((f64::INFINITY, 0.0f64), |(l, h), &b| (l.min(b), h.max(b)));
    anyhow::anyhow!("the gradient table's directions could determine a tensor, but its b-values ({lo} to {hi} s/mm^2 on the weighted volumes) are too small or too far apart for a stable fit")
}

/// B^T B of the rows.
fn normal(rows: &[[f64; 7]]) -> [[f64; 7]; 7] {
    let mut ata = [[0.0f64; 7]; 7];
    for r in rows {
        for p in 0..7 {
            for q in 0..7 {
                ata[p][q] += r[p] * r[q];
            }
        }
    }
    ata
}

/// Inverse by Gauss-Jordan with partial pivoting; None when (numerically) singular.
fn invert7(m: [[f64; 7]; 7]) -> Option<[[f64; 7]; 7]> {
    let mut a = m;
    let mut inv = [[0.0; 7]; 7];
    for (i, row) in inv.iter_mut().enumerate() {
        row[i] = 1.0;
    }
    let scale = (0..7).map(|i| m[i][i].abs()).fold(0.0, f64::max);
    for c in 0..7 {
        let p = (c..7).max_by(|&i, &j| a[i][c].abs().total_cmp(&a[j][c].abs()))?;
        if a[p][c].abs() <= 1e-10 * scale {
            return None;
        }
        a.swap(c, p);
        inv.swap(c, p);
        let d = a[c][c];
        for k in 0..7 {
            a[c][k] /= d;
            inv[c][k] /= d;
        }
        for r in 0..7 {
            if r != c {
                let f = a[r][c];
                for k in 0..7 {
                    a[r][k] -= f * a[c][k];
                    inv[r][k] -= f * inv[c][k];
                }
            }
        }
    }
    Some(inv)
}

#[cfg(test)]
mod tests {
    use super::Design;
    use crate::synth::gradient_table;
    use crate::volume::GradientTable;

    fn message(g: &GradientTable) -> String {
        Design::new(g).map(|_| ()).unwrap_err().to_string()
    }

    #[test]
    fn a_b_value_far_from_the_rest_is_named_not_the_directions() {
        let mut g = gradient_table(3, 32, 1000.0);
        assert!(Design::new(&g).is_ok());
        g.bvals[5] = 1e9;
        let e = message(&g);
        assert!(e.contains("b-values (1000 to 1000000000 s/mm^2") && !e.contains("non-collinear"), "{e}");
        // all weighting tiny: the same directions, b at most 0.01 s/mm^2
        let mut g = gradient_table(3, 32, 0.01);
        let e = message(&g);
        assert!(e.contains("b-values (0.01 to 0.01 s/mm^2") && !e.contains("non-collinear"), "{e}");
        // directions that cannot determine a tensor are still said to be the problem
        for v in g.bvecs.iter_mut().skip(3) {
            *v = [1.0, 0.0, 0.0];
        }
        g.bvals.iter_mut().skip(3).for_each(|b| *b = 1000.0);
        assert!(message(&g).contains("non-collinear"), "{}", message(&g));
    }
}
