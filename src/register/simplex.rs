//! Nelder-Mead downhill simplex, as Numerical Recipes' `amoeba` (002 used it): reflect the worst
//! vertex through the opposite face, expand by 2 when that beats the best, contract by 1/2 when
//! it is still the worst, and shrink every vertex halfway to the best when contraction fails.
//!
//! Stopping rule (either ends a run): NR's fractional range of the vertex costs,
//! 2 |f_hi - f_lo| / (|f_hi| + |f_lo| + 1e-20) < `ftol`; or every vertex within `xtol` step
//! units of the best on every parameter (the simplex has collapsed: parameters are scaled so
//! one unit is one initial step); or `max_evals` cost evaluations. NR advises restarting at
//! the claimed minimum; [`minimise`] restarts once with half the initial steps.
//!
//! The objective takes a batch of points and returns their costs: the starting simplex (n + 1
//! vertices) and a shrink (n) are independent evaluations, which a GPU does in one launch, and
//! [`super::lockstep`] merges the requests of several runs into one batch.

use anyhow::Result;

/// Costs of a batch of points, in order.
pub type Batch<'a> = dyn FnMut(&[Vec<f64>]) -> Result<Vec<f64>> + 'a;

#[derive(Clone, Copy, Debug)]
pub struct Stop {
    pub ftol: f64,
    pub xtol: f64,
    pub max_evals: usize,
}

pub struct Minimum {
    pub x: Vec<f64>,
    pub f: f64,
    pub evals: usize,
}

/// Minimises `f` from `start` with initial steps `steps` (one vertex per parameter), then
/// restarts once from the result with half the steps.
pub fn minimise(f: &mut Batch, start: &[f64], steps: &[f64], stop: Stop) -> Result<Minimum> {
    let first = amoeba(f, start, steps, stop)?;
    let left = stop.max_evals.saturating_sub(first.evals);
    if left <= start.len() + 1 {
        return Ok(first);
    }
    let half: Vec<f64> = steps.iter().map(|s| 0.5 * s).collect();
    let second = amoeba(f, &first.x, &half, Stop { max_evals: left, ..stop })?;
    let evals = first.evals + second.evals;
    let best = if second.f <= first.f { second } else { first };
    Ok(Minimum { evals, ..best })
}

/// One run of the simplex.
pub fn amoeba(f: &mut Batch, start: &[f64], steps: &[f64], stop: Stop) -> Result<Minimum> {
    let n = start.len();
    let mut p: Vec<Vec<f64>> = (0..=n)
        .map(|i| {
            let mut v = start.to_vec();
            if i > 0 {
                v[i - 1] += steps[i - 1];
            }
            v
        })
        .collect();
    let mut y = f(&p)?;
    let mut evals = n + 1;
    let scale: Vec<f64> = steps.iter().map(|s| s.abs().max(1e-300)).collect();
    loop {
        let (mut ilo, mut ihi) = (0, 0);
        for i in 0..=n {
            if y[i] < y[ilo] {
                ilo = i;
            }
            if y[i] > y[ihi] {
                ihi = i;
            }
        }
        let inhi = (0..=n).filter(|&i| i != ihi).max_by(|&a, &b| y[a].total_cmp(&y[b])).unwrap_or(ilo);
        let rtol = 2.0 * (y[ihi] - y[ilo]).abs() / (y[ihi].abs() + y[ilo].abs() + 1e-20);
        let spread = p.iter().flat_map(|v| v.iter().zip(&p[ilo]).zip(&scale).map(|((a, b), s)| (a - b).abs() / s)).fold(0.0, f64::max);
        if rtol < stop.ftol || spread < stop.xtol || evals >= stop.max_evals {
            return Ok(Minimum { x: p[ilo].clone(), f: y[ilo], evals });
        }
        let centroid: Vec<f64> = (0..n).map(|j| (0..=n).filter(|&i| i != ihi).map(|i| p[i][j]).sum::<f64>() / n as f64).collect();
        let mut tr = |fac: f64, p: &mut Vec<Vec<f64>>, y: &mut Vec<f64>, evals: &mut usize| -> Result<f64> {
            // The point on the line from the worst vertex through the centroid at `fac`.
            let trial: Vec<f64> = (0..n).map(|j| centroid[j] + fac * (p[ihi][j] - centroid[j])).collect();
            let yt = f(std::slice::from_ref(&trial))?[0];
            *evals += 1;
            if yt < y[ihi] {
                y[ihi] = yt;
                p[ihi] = trial;
            }
            Ok(yt)
        };
        let yr = tr(-1.0, &mut p, &mut y, &mut evals)?;
        if yr <= y[ilo] {
            tr(2.0, &mut p, &mut y, &mut evals)?;
        } else if yr >= y[inhi] {
            let ysave = y[ihi];
            let yc = tr(0.5, &mut p, &mut y, &mut evals)?;
            if yc >= ysave {
                let others: Vec<usize> = (0..=n).filter(|&i| i != ilo).collect();
                for &i in &others {
                    p[i] = (0..n).map(|j| 0.5 * (p[i][j] + p[ilo][j])).collect();
                }
                let ys = f(&others.iter().map(|&i| p[i].clone()).collect::<Vec<_>>())?;
                for (&i, v) in others.iter().zip(ys) {
                    y[i] = v;
                }
                evals += n;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_by_one(g: impl Fn(&[f64]) -> f64) -> impl FnMut(&[Vec<f64>]) -> Result<Vec<f64>> {
        move |b: &[Vec<f64>]| Ok(b.iter().map(|x| g(x)).collect())
    }

    #[test]
    fn finds_the_minimum_of_a_skewed_quadratic() {
        let mut f = one_by_one(|x: &[f64]| (x[0] - 3.0).powi(2) + 10.0 * (x[1] + 1.0 - 0.5 * x[0]).powi(2) + (x[2] - 0.25).powi(2));
        let m = minimise(&mut f, &[0.0, 0.0, 0.0], &[1.0, 1.0, 1.0], Stop { ftol: 0.0, xtol: 1e-6, max_evals: 5000 }).unwrap();
        assert!((m.x[0] - 3.0).abs() < 1e-4 && (m.x[1] - 0.5).abs() < 1e-4 && (m.x[2] - 0.25).abs() < 1e-4, "{:?}", m.x);
        assert!(m.evals < 5000);
    }

    #[test]
    fn respects_the_evaluation_budget() {
        let mut f = one_by_one(|x: &[f64]| x.iter().map(|v| v.abs()).sum());
        let m = minimise(&mut f, &[5.0; 6], &[1.0; 6], Stop { ftol: 0.0, xtol: 0.0, max_evals: 100 }).unwrap();
        assert!(m.evals <= 100 + 6, "{}", m.evals);
    }
}
