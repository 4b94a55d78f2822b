//! Several independent searches run in lockstep, their cost requests merged into one batch per
//! round. A registration runs many simplexes that do not depend on each other (the rotated
//! probes of a coarse level, the minima carried down from the level above); one at a time, each
//! evaluation is a device round trip (a launch and a read-back, ~20-40 us) around a kernel that
//! at a coarse level is shorter than that. Each search is a state machine
//! ([`super::simplex::Search`]); a round takes the next request of every search still running
//! and sends them to the device in one call.
//!
//! Each search sees the same costs in the same order as it would alone (a batch's costs do not
//! depend on what else is in it), so results do not depend on how requests were merged.
//!
//! All on the calling thread: the searches were threads, each written as if alone, but a round
//! then woke every search's thread and the coordinator's, 60-90 us a wake-up on a 2-core VM
//! where an idle core sleeps (round 38: the 5 mm airwc pair's 2,100 rounds on the CPU).

use super::simplex::{Search, Step};
use anyhow::Result;

/// Runs `searches` together; `eval` receives each round's points (searches in order, each
/// search's points in its order) and returns their costs. Results in the searches' order.
pub fn run<R>(mut searches: Vec<Box<dyn Search<R> + '_>>, eval: &mut dyn FnMut(&[Vec<f64>]) -> Result<Vec<f64>>) -> Result<Vec<R>> {
    let mut results: Vec<Option<R>> = searches.iter().map(|_| None).collect();
    let mut asks: Vec<(usize, Vec<Vec<f64>>)> = Vec::new();
    let mut take = |i: usize, step: Step<R>, asks: &mut Vec<(usize, Vec<Vec<f64>>)>| match step {
        Step::Ask(p) => asks.push((i, p)),
        Step::Done(r) => results[i] = Some(r),
    };
    for (i, s) in searches.iter_mut().enumerate() {
        take(i, s.step(None), &mut asks);
    }
    while !asks.is_empty() {
        let all: Vec<Vec<f64>> = asks.iter().flat_map(|a| a.1.iter().cloned()).collect();
        let costs = eval(&all)?;
        let mut at = 0;
        for (i, p) in std::mem::take(&mut asks) {
            let c = costs[at..at + p.len()].to_vec();
            at += p.len();
            take(i, searches[i].step(Some(c)), &mut asks);
        }
    }
    Ok(results.into_iter().map(|r| r.expect("a search that asks for nothing more has ended")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::register::simplex::{amoeba, Amoeba, Minimum, Stop};

    fn bowl(c: f64) -> impl Fn(&[f64]) -> f64 {
        move |x: &[f64]| x.iter().enumerate().map(|(i, v)| (v - c * (i + 1) as f64).powi(2)).sum()
    }

    #[test]
    fn lockstep_gives_each_search_what_it_gets_alone() {
        let stop = Stop { ftol: 1e-12, xtol: 1e-9, max_evals: 400 };
        let starts = [[0.0, 0.0, 0.0], [5.0, -1.0, 2.0], [1.0, 1.0, 1.0]];
        let alone: Vec<_> = starts
            .iter()
            .map(|s| {
                let g = bowl(0.5);
                amoeba(&mut |b: &[Vec<f64>]| Ok(b.iter().map(|x| g(x)).collect()), s, &[1.0; 3], stop).unwrap()
            })
            .collect();
        let (mut rounds, mut points) = (0, 0);
        let searches: Vec<Box<dyn Search<Minimum>>> = starts.iter().map(|s| Box::new(Amoeba::new(s, &[1.0; 3], stop)) as Box<dyn Search<Minimum>>).collect();
        let g = bowl(0.5);
        let together: Vec<Minimum> = run(searches, &mut |b| {
            rounds += 1;
            points += b.len();
            Ok(b.iter().map(|x| g(x)).collect())
        })
        .unwrap();
        for (a, t) in alone.iter().zip(&together) {
            assert_eq!(a.x, t.x);
            assert_eq!(a.f, t.f);
            assert_eq!(a.evals, t.evals);
        }
        assert_eq!(points, alone.iter().map(|m| m.evals).sum::<usize>());
        // Three searches in step: far fewer rounds than evaluations.
        assert!(rounds < points / 2, "{rounds} rounds for {points} points");
    }

    #[test]
    fn an_evaluation_error_stops_every_search() {
        let stop = Stop { ftol: 0.0, xtol: 0.0, max_evals: 1000 };
        let searches: Vec<Box<dyn Search<Minimum>>> = (0..3).map(|_| Box::new(Amoeba::new(&[1.0, 2.0], &[1.0; 2], stop)) as Box<dyn Search<Minimum>>).collect();
        let mut calls = 0;
        let r = run(searches, &mut |b| {
            calls += 1;
            if calls == 5 {
                anyhow::bail!("device lost")
            }
            Ok(b.iter().map(|x| x[0].abs() + x[1].abs()).collect())
        });
        assert_eq!(format!("{:#}", r.err().unwrap()), "device lost");
        assert_eq!(calls, 5);
    }
}
