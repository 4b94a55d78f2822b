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

/// What a search does next: ask for the costs of points, or end with its result.
pub enum Step<R> {
    Ask(Vec<Vec<f64>>),
    Done(R),
}

/// A search written as a state machine: `step(None)` starts it, each `step(Some(costs))` gives
/// the costs of the points it last asked for. So several searches run in step on one thread
/// ([`super::lockstep`]) with no thread per search to wake for every round.
pub trait Search<R> {
    fn step(&mut self, costs: Option<Vec<f64>>) -> Step<R>;
}

/// Drives `search` alone, one batch at a time.
pub fn drive<R>(search: &mut dyn Search<R>, f: &mut Batch) -> Result<R> {
    let mut costs = None;
    loop {
        match search.step(costs.take()) {
            Step::Ask(pts) => costs = Some(f(&pts)?),
            Step::Done(r) => return Ok(r),
        }
    }
}

/// Minimises `f` from `start` with initial steps `steps` (one vertex per parameter), then
/// restarts once from the result with half the steps.
pub fn minimise(f: &mut Batch, start: &[f64], steps: &[f64], stop: Stop) -> Result<Minimum> {
    drive(&mut Minimise::new(start, steps, stop), f)
}

/// One run of the simplex.
pub fn amoeba(f: &mut Batch, start: &[f64], steps: &[f64], stop: Stop) -> Result<Minimum> {
    drive(&mut Amoeba::new(start, steps, stop), f)
}

/// [`minimise`] as a [`Search`]: an [`Amoeba`], then a second from its minimum with half the
/// steps and the evaluations left, unless too few are left for a starting simplex.
pub struct Minimise {
    first: Option<Minimum>,
    run: Amoeba,
    steps: Vec<f64>,
    stop: Stop,
}

impl Minimise {
    pub fn new(start: &[f64], steps: &[f64], stop: Stop) -> Minimise {
        Minimise { first: None, run: Amoeba::new(start, steps, stop), steps: steps.to_vec(), stop }
    }
}

impl Search<Minimum> for Minimise {
    fn step(&mut self, costs: Option<Vec<f64>>) -> Step<Minimum> {
        let r = match self.run.step(costs) {
            Step::Ask(p) => return Step::Ask(p),
            Step::Done(r) => r,
        };
        let Some(first) = self.first.take() else {
            let left = self.stop.max_evals.saturating_sub(r.evals);
            if left <= self.steps.len() + 1 {
                return Step::Done(r);
            }
            let half: Vec<f64> = self.steps.iter().map(|s| 0.5 * s).collect();
            self.run = Amoeba::new(&r.x, &half, Stop { max_evals: left, ..self.stop });
            self.first = Some(r);
            return self.run.step(None);
        };
        let evals = first.evals + r.evals;
        let best = if r.f <= first.f { r } else { first };
        Step::Done(Minimum { evals, ..best })
    }
}

/// Where a run of the simplex is: which points it asked for last.
enum Phase {
    Simplex,
    Reflect,
    Expand,
    /// The worst vertex's cost before the contraction.
    Contract(f64),
    /// The vertices moved halfway to the best.
    Shrink(Vec<usize>),
}

/// One run of the simplex as a [`Search`]; NR's amoeba step by step.
pub struct Amoeba {
    p: Vec<Vec<f64>>,
    y: Vec<f64>,
    evals: usize,
    scale: Vec<f64>,
    stop: Stop,
    phase: Phase,
    /// Best, worst and second worst vertex of the current iteration.
    ilo: usize,
    ihi: usize,
    inhi: usize,
    centroid: Vec<f64>,
    /// The point last asked for by a move along the line through the worst vertex.
    trial: Vec<f64>,
}

impl Amoeba {
    pub fn new(start: &[f64], steps: &[f64], stop: Stop) -> Amoeba {
        let n = start.len();
        let p: Vec<Vec<f64>> = (0..=n)
            .map(|i| {
                let mut v = start.to_vec();
                if i > 0 {
                    v[i - 1] += steps[i - 1];
                }
                v
            })
            .collect();
        let scale: Vec<f64> = steps.iter().map(|s| s.abs().max(1e-300)).collect();
        Amoeba { p, y: Vec::new(), evals: 0, scale, stop, phase: Phase::Simplex, ilo: 0, ihi: 0, inhi: 0, centroid: Vec::new(), trial: Vec::new() }
    }

    fn n(&self) -> usize {
        self.p.len() - 1
    }

    /// The point on the line from the worst vertex through the centroid at `fac`, asked for.
    fn try_at(&mut self, fac: f64, phase: Phase) -> Step<Minimum> {
        let (c, w) = (&self.centroid, &self.p[self.ihi]);
        self.trial = (0..c.len()).map(|j| c[j] + fac * (w[j] - c[j])).collect();
        self.phase = phase;
        Step::Ask(vec![self.trial.clone()])
    }

    /// The trial point's cost `yt`: it replaces the worst vertex if lower.
    fn take_trial(&mut self, yt: f64) {
        self.evals += 1;
        if yt < self.y[self.ihi] {
            self.y[self.ihi] = yt;
            self.p[self.ihi] = std::mem::take(&mut self.trial);
        }
    }

    /// A new iteration: the stopping rule, else the reflection.
    fn iterate(&mut self) -> Step<Minimum> {
        let (n, y, p) = (self.n(), &self.y, &self.p);
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
        let spread = p.iter().flat_map(|v| v.iter().zip(&p[ilo]).zip(&self.scale).map(|((a, b), s)| (a - b).abs() / s)).fold(0.0, f64::max);
        if rtol < self.stop.ftol || spread < self.stop.xtol || self.evals >= self.stop.max_evals {
            return Step::Done(Minimum { x: p[ilo].clone(), f: y[ilo], evals: self.evals });
        }
        self.centroid = (0..n).map(|j| (0..=n).filter(|&i| i != ihi).map(|i| p[i][j]).sum::<f64>() / n as f64).collect();
        (self.ilo, self.ihi, self.inhi) = (ilo, ihi, inhi);
        self.try_at(-1.0, Phase::Reflect)
    }
}

impl Search<Minimum> for Amoeba {
    fn step(&mut self, costs: Option<Vec<f64>>) -> Step<Minimum> {
        let Some(c) = costs else {
            self.phase = Phase::Simplex;
            return Step::Ask(self.p.clone());
        };
        match std::mem::replace(&mut self.phase, Phase::Simplex) {
            Phase::Simplex => {
                self.evals += c.len();
                self.y = c;
                self.iterate()
            }
            Phase::Reflect => {
                let yr = c[0];
                self.take_trial(yr);
                if yr <= self.y[self.ilo] {
                    self.try_at(2.0, Phase::Expand)
                } else if yr >= self.y[self.inhi] {
                    let ysave = self.y[self.ihi];
                    self.try_at(0.5, Phase::Contract(ysave))
                } else {
                    self.iterate()
                }
            }
            Phase::Expand => {
                self.take_trial(c[0]);
                self.iterate()
            }
            Phase::Contract(ysave) => {
                let yc = c[0];
                self.take_trial(yc);
                // NR's test `yc >= ysave` decides the shrink, so a NaN cost does not shrink (as it
                // would with `yc < ysave` here).
                if !(yc >= ysave) {
                    return self.iterate();
                }
                let (n, ilo) = (self.n(), self.ilo);
                let others: Vec<usize> = (0..=n).filter(|&i| i != ilo).collect();
                for &i in &others {
                    self.p[i] = (0..n).map(|j| 0.5 * (self.p[i][j] + self.p[ilo][j])).collect();
                }
                let pts = others.iter().map(|&i| self.p[i].clone()).collect();
                self.phase = Phase::Shrink(others);
                Step::Ask(pts)
            }
            Phase::Shrink(others) => {
                for (&i, v) in others.iter().zip(c) {
                    self.y[i] = v;
                }
                self.evals += self.n();
                self.iterate()
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

    /// Numerical Recipes' amoeba as this file had it before the state machine (round 37),
    /// written as one loop over a batch objective: the reference [`Amoeba`] must follow.
    fn nr_amoeba(f: &mut Batch, start: &[f64], steps: &[f64], stop: Stop) -> Result<Minimum> {
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

    /// [`Amoeba`] asks for the very points NR's loop evaluates, in the same batches, and ends
    /// with the same minimum, on fresh random quadratics with NaN costs at scattered points
    /// (as a cost with no overlap would give), from 1 to 12 parameters, with and without the budget
    /// ending the run; [`minimise`] on top of it restarts as before.
    #[test]
    fn the_state_machine_is_nrs_amoeba() {
        use rand::Rng;
        let (seed, mut rng) = crate::synth::fresh_rng();
        for case in 0..200 {
            let n = rng.random_range(1..=12);
            let c: Vec<f64> = (0..n).map(|_| rng.random_range(-3.0..3.0)).collect();
            let w: Vec<f64> = (0..n).map(|_| rng.random_range(0.1..10.0)).collect();
            // NaN at scattered points (a fifth of them) in every third case.
            let holes = case % 3 == 0;
            let g = |x: &[f64]| if holes && (x.iter().sum::<f64>() * 7919.0).sin() > 0.8 { f64::NAN } else { x.iter().zip(&c).zip(&w).map(|((a, b), w)| w * (a - b).powi(2)).sum::<f64>() };
            let start: Vec<f64> = (0..n).map(|_| rng.random_range(-1.0..1.0)).collect();
            let steps: Vec<f64> = (0..n).map(|_| rng.random_range(0.2..2.0)).collect();
            let stop = Stop { ftol: if case % 2 == 0 { 1e-9 } else { 0.0 }, xtol: 1e-6, max_evals: rng.random_range(n + 2..40 * n + 40) };
            let (mut a, mut b) = (Vec::new(), Vec::new());
            let want = nr_amoeba(&mut |p: &[Vec<f64>]| { a.push(p.to_vec()); Ok(p.iter().map(|x| g(x)).collect()) }, &start, &steps, stop).unwrap();
            let got = amoeba(&mut |p: &[Vec<f64>]| { b.push(p.to_vec()); Ok(p.iter().map(|x| g(x)).collect()) }, &start, &steps, stop).unwrap();
            assert!(a == b, "seed {seed} case {case}: the batches differ");
            assert_eq!((want.x.clone(), want.f.to_bits(), want.evals), (got.x, got.f.to_bits(), got.evals), "seed {seed} case {case}");
            let restarted = minimise(&mut |p: &[Vec<f64>]| Ok(p.iter().map(|x| g(x)).collect()), &start, &steps, stop).unwrap();
            let left = stop.max_evals.saturating_sub(want.evals);
            if left <= n + 1 {
                assert_eq!((restarted.x, restarted.evals), (want.x, want.evals), "seed {seed} case {case}: no restart");
            } else {
                let half: Vec<f64> = steps.iter().map(|s| 0.5 * s).collect();
                let second = nr_amoeba(&mut |p: &[Vec<f64>]| Ok(p.iter().map(|x| g(x)).collect()), &want.x, &half, Stop { max_evals: left, ..stop }).unwrap();
                assert_eq!(restarted.evals, want.evals + second.evals, "seed {seed} case {case}");
                assert_eq!(restarted.x, if second.f <= want.f { second.x } else { want.x }, "seed {seed} case {case}");
            }
        }
    }
}
