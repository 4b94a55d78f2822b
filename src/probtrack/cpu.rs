//! The tracker on the CPU: the reference. Paths run in parallel on the backend's rayon pool,
//! each through `step.rs`, the f32 arithmetic the devices run; compaction is a host `retain`
//! whichever way is asked for (there is no device to keep them on).

use super::step::{self, Params, Path};
use super::tally::{Counts, Rules};
use super::{Batch, Compaction, Field, ProbtrackKernels};
use crate::runtime::cpu::Cpu;
use crate::runtime::{timing::wall_ms, Timings};
use anyhow::Result;
use rayon::prelude::*;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

pub struct CpuProbtrack {
    cpu: Arc<Cpu>,
    samples: Arc<Vec<f32>>,
    index: Arc<Vec<i32>>,
    roi: Vec<u32>,
    seeds: Vec<u32>,
    visits: Vec<AtomicU32>,
    rules: Option<Rules>,
    seed_targets: Vec<u32>,
    sums: Vec<u32>,
    paths: Vec<Path>,
    live: Vec<bool>,
    steps: Vec<i32>,
    flags: Vec<u32>,
    timings: Timings,
}

impl CpuProbtrack {
    pub fn new(cpu: Arc<Cpu>) -> CpuProbtrack {
        CpuProbtrack {
            cpu,
            samples: Arc::new(Vec::new()),
            index: Arc::new(Vec::new()),
            roi: Vec::new(),
            seeds: Vec::new(),
            visits: Vec::new(),
            rules: None,
            seed_targets: Vec::new(),
            sums: Vec::new(),
            paths: Vec::new(),
            live: Vec::new(),
            steps: Vec::new(),
            flags: Vec::new(),
            timings: Timings::default(),
        }
    }

    fn timed<R: Send>(&mut self, f: impl FnOnce(&mut Self) -> R + Send) -> R {
        let cpu = self.cpu.clone();
        let (r, ms) = wall_ms(|| cpu.install(|| f(self)));
        self.timings.kernel_ms += ms;
        r
    }

    /// Results of the paths that ended: found in parallel, written by id (each path once in
    /// a run, so the serial write is O(paths) in all, not per segment).
    fn finish_ended(&mut self) {
        let ended: Vec<(u32, i32, u32)> = self.cpu.install(|| self.paths.par_iter().zip(&self.live).filter(|(_, &l)| !l).map(|(s, _)| (s.id, s.steps, s.flags)).collect());
        for (id, steps, flags) in ended {
            self.steps[id as usize] = steps;
            self.flags[id as usize] = flags;
        }
    }
}

/// Path i of `batch` from the seeds.
pub fn start_path(samples: &[f32], index: &[i32], roi: &[u32], seeds: &[u32], p: &Params, batch: &Batch, i: usize) -> (Path, bool) {
    let n = batch.len();
    let (half, j) = (i / n, i % n);
    let t = batch.streamline(j);
    let nseeds = p.nseeds as u32;
    step::start(samples, index, roi, p, seeds[(t % nseeds) as usize] as usize, t / nseeds, half as u32, i as u32)
}

/// The points (voxel coordinates) of streamline `t`: half 1 reversed, the seed, half 0.
pub fn trace_points(field: &Field, seeds: &[u32], p: &Params, t: u32) -> Vec<[f32; 3]> {
    let b = Batch::List(std::slice::from_ref(&t));
    let mut halves = [Vec::new(), Vec::new()];
    for (h, pts) in halves.iter_mut().enumerate() {
        let (mut s, mut live) = start_path(&field.samples, &field.crop.index, &field.roi, seeds, p, &b, h);
        if h == 0 {
            pts.push(s.p);
        }
        while live {
            let before = s.steps;
            live = step::step(&mut s, &field.samples, &field.crop.index, &field.roi, p, &|_| {});
            if s.steps != before {
                pts.push(s.p);
            }
        }
    }
    let [a, mut b] = halves;
    b.reverse();
    b.extend(a);
    b
}

impl ProbtrackKernels for CpuProbtrack {
    fn name(&self) -> String {
        format!("cpu ({})", crate::runtime::threads_label(self.cpu.threads()))
    }

    fn upload(&mut self, field: &Field, seeds: &[u32]) -> Result<()> {
        self.samples = field.samples.clone();
        self.index = field.crop.index.clone();
        self.roi = field.roi.clone();
        self.seeds = seeds.to_vec();
        self.visits = (0..field.nvox()).map(|_| AtomicU32::new(0)).collect();
        Ok(())
    }

    fn max_batch(&self) -> usize {
        1 << 20
    }

    fn reset_counts(&mut self, rules: &Rules) -> Result<()> {
        self.visits.iter().for_each(|v| v.store(0, Ordering::Relaxed));
        let c = rules.empty(0);
        (self.seed_targets, self.sums, self.rules) = (c.seed_targets, c.sums, Some(rules.clone()));
        Ok(())
    }

    fn start(&mut self, p: &Params, batch: Batch) -> Result<usize> {
        let n = 2 * batch.len();
        let (paths, live): (Vec<Path>, Vec<bool>) = self.timed(|me| {
            // The seed voxel counts once per streamline (as `probtrack_start`): counting is on
            // only where every streamline of the batch is kept.
            if p.count != 0 {
                (0..batch.len()).into_par_iter().for_each(|j| {
                    me.visits[me.seeds[(batch.streamline(j) % p.nseeds as u32) as usize] as usize].fetch_add(1, Ordering::Relaxed);
                });
            }
            (0..n).into_par_iter().map(|i| start_path(&me.samples, &me.index, &me.roi, &me.seeds, p, &batch, i)).unzip()
        });
        self.paths = paths;
        self.live = live;
        self.steps = vec![-1; n];
        self.flags = vec![u32::MAX; n];
        self.finish_ended();
        self.compact(Compaction::Host)
    }

    fn segment(&mut self, p: &Params, iters: usize) -> Result<()> {
        self.timed(|me| {
            let (samples, index, roi, visits) = (&me.samples, &me.index, &me.roi, &me.visits);
            let visit = |v: usize| {
                visits[v].fetch_add(1, Ordering::Relaxed);
            };
            me.paths.par_iter_mut().zip(me.live.par_iter_mut()).with_min_len(256).for_each(|(s, l)| {
                for _ in 0..iters {
                    if !step::step(s, samples, index, roi, p, &visit) {
                        *l = false;
                        return;
                    }
                }
            });
        });
        let ((), ms) = wall_ms(|| self.finish_ended());
        self.timings.host_ms += ms;
        Ok(())
    }

    fn compact(&mut self, _how: Compaction) -> Result<usize> {
        let ((), ms) = wall_ms(|| {
            let live = std::mem::take(&mut self.live);
            let paths = std::mem::take(&mut self.paths);
            // rayon's collect keeps the order, as the device scatter does.
            self.paths = self.cpu.install(|| paths.par_iter().zip(&live).filter(|(_, &l)| l).map(|(s, _)| *s).collect());
            self.live = vec![true; self.paths.len()];
        });
        self.timings.host_ms += ms;
        Ok(self.paths.len())
    }

    fn tally(&mut self, _p: &Params, batch: Batch, full: bool) -> Result<Vec<u32>> {
        let rules = self.rules.take().ok_or_else(|| anyhow::anyhow!("probtrack: counters not reset"))?;
        let (steps, flags) = (std::mem::take(&mut self.steps), std::mem::take(&mut self.flags));
        let (mut st, mut sums) = (std::mem::take(&mut self.seed_targets), std::mem::take(&mut self.sums));
        // A path without a result (steps -1) is counted as lost, and the run fails on it.
        let words = self.timed(|_| rules.tally(&batch, &steps, &flags, full, &mut st, &mut sums));
        (self.seed_targets, self.sums, self.rules) = (st, sums, Some(rules));
        Ok(words)
    }

    fn counts(&mut self) -> Result<Counts> {
        Ok(Counts { visits: self.visits.iter().map(|v| v.load(Ordering::Relaxed)).collect(), seed_targets: self.seed_targets.clone(), sums: self.sums.clone() })
    }

    fn take_timings(&mut self) -> Timings {
        std::mem::take(&mut self.timings)
    }

    fn twin(&mut self) -> Result<Option<Box<dyn ProbtrackKernels>>> {
        Ok(None)
    }

    fn progress(&mut self) -> Result<(Vec<u32>, Vec<i32>)> {
        Ok((self.paths.iter().map(|s| s.id).collect(), self.steps.clone()))
    }
}
