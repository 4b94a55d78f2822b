//! Several independent searches run in lockstep, their cost requests merged into one batch per
//! round. A registration runs many simplexes that do not depend on each other (the rotated
//! probes of a coarse level, the minima carried down from the level above); one at a time, each
//! evaluation is a device round trip (a launch and a read-back, ~20-40 us) around a kernel that
//! at a coarse level is shorter than that. Here every search runs on its own thread, written as
//! if alone; a request blocks it until every search still running has a request in (or has
//! finished), and then the whole round goes to the device in one call.
//!
//! Each search sees the same costs in the same order as it would alone (a batch's costs do not
//! depend on what else is in it), so results do not depend on how requests were merged.

use anyhow::{anyhow, Result};
use std::sync::mpsc;

/// One search: given its batch objective, its result.
pub type Search<'a, R> = Box<dyn FnOnce(&mut super::simplex::Batch) -> Result<R> + Send + 'a>;

enum Msg<R> {
    Ask(usize, Vec<Vec<f64>>),
    Done(usize, Result<R>),
}

/// Runs `searches` together; `eval` receives each round's points (searches in order, each
/// search's points in its order) and returns their costs. Results in the searches' order.
pub fn run<R: Send>(searches: Vec<Search<'_, R>>, eval: &mut dyn FnMut(&[Vec<f64>]) -> Result<Vec<f64>>) -> Result<Vec<R>> {
    if searches.len() == 1 {
        let s = searches.into_iter().next().expect("one search");
        return Ok(vec![s(eval)?]);
    }
    let n = searches.len();
    let (to_main, from_searches) = mpsc::channel::<Msg<R>>();
    std::thread::scope(|scope| {
        let mut replies = Vec::with_capacity(n);
        for (i, s) in searches.into_iter().enumerate() {
            let (tx, rx) = mpsc::channel::<Option<Vec<f64>>>();
            replies.push(tx);
            let to_main = to_main.clone();
            scope.spawn(move || {
                let mut ask = |pts: &[Vec<f64>]| -> Result<Vec<f64>> {
                    to_main.send(Msg::Ask(i, pts.to_vec())).map_err(|_| anyhow!("registration: the search coordinator has stopped"))?;
                    rx.recv().ok().flatten().ok_or_else(|| anyhow!("registration: stopped after another search's error"))
                };
                let r = s(&mut ask);
                let _ = to_main.send(Msg::Done(i, r));
            });
        }
        drop(to_main);
        let mut results: Vec<Option<Result<R>>> = (0..n).map(|_| None).collect();
        let mut live = n;
        let mut failed: Option<anyhow::Error> = None;
        while live > 0 {
            let mut asks: Vec<(usize, Vec<Vec<f64>>)> = Vec::new();
            while asks.len() < live {
                match from_searches.recv() {
                    Ok(Msg::Ask(i, p)) => asks.push((i, p)),
                    Ok(Msg::Done(i, r)) => {
                        results[i] = Some(r);
                        live -= 1;
                    }
                    Err(_) => return Err(anyhow!("registration: a search ended without a result")),
                }
            }
            if asks.is_empty() {
                break;
            }
            asks.sort_by_key(|a| a.0);
            let all: Vec<Vec<f64>> = asks.iter().flat_map(|a| a.1.iter().cloned()).collect();
            let costs = if failed.is_none() { eval(&all) } else { Err(anyhow!("stopped")) };
            match costs {
                Ok(c) => {
                    let mut at = 0;
                    for (i, p) in &asks {
                        let _ = replies[*i].send(Some(c[at..at + p.len()].to_vec()));
                        at += p.len();
                    }
                }
                Err(e) => {
                    failed.get_or_insert(e);
                    for (i, _) in &asks {
                        let _ = replies[*i].send(None);
                    }
                }
            }
        }
        if let Some(e) = failed {
            return Err(e);
        }
        results.into_iter().map(|r| r.unwrap_or_else(|| Err(anyhow!("registration: a search gave no result")))).collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::register::simplex::{amoeba, Stop};

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
        let searches: Vec<Search<'_, crate::register::simplex::Minimum>> = starts.iter().map(|s| Box::new(move |f: &mut crate::register::simplex::Batch| amoeba(f, s, &[1.0; 3], stop)) as Search<'_, _>).collect();
        let g = bowl(0.5);
        let together: Vec<crate::register::simplex::Minimum> = run(searches, &mut |b| {
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
        let searches: Vec<Search<'_, crate::register::simplex::Minimum>> = (0..3).map(|_| Box::new(move |f: &mut crate::register::simplex::Batch| amoeba(f, &[1.0, 2.0], &[1.0; 2], stop)) as Search<'_, _>).collect();
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
