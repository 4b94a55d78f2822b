//! The host's share of a batch: its per-path results (steps, ROI flags) turned into kept
//! streamlines, the length histogram, seed-to-target counts and the workload figures. Done on
//! the rayon pool in fixed chunks whose partial tallies are added in chunk order (sums of
//! integers and an ordered concatenation), so the result never depends on threads or batches;
//! a batch's tally can run while the device traces the next batch (`Config::overlap`).

use super::{field, Batch, Field};
use anyhow::{bail, Result};
use rayon::prelude::*;

/// Streamlines per chunk of the parallel tally.
const CHUNK: usize = 1 << 14;

/// What a set of streamlines adds to a run's outputs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tally {
    /// The kept streamlines' numbers, in batch order (ascending within a batch).
    pub kept: Vec<u32>,
    /// Per seed x target: kept streamlines reaching the target.
    pub seed_targets: Vec<u32>,
    /// Kept streamlines by length in steps (both halves).
    pub lengths: Vec<u64>,
    pub total_steps: u64,
    pub longest: u32,
    /// Half-paths that came back with a result.
    pub finished: u64,
}

/// What the tally needs of the field and the run.
pub struct Rules {
    pub nseeds: usize,
    pub need: u32,
    pub tbits: Vec<u32>,
    pub max_steps: usize,
}

impl Rules {
    pub fn new(field: &Field, nseeds: usize, max_steps: usize) -> Rules {
        Rules { nseeds, need: field.waypoint_bits(), tbits: (0..field.targets.len()).map(|j| field.target_bit(j)).collect(), max_steps }
    }

    pub fn empty(&self) -> Tally {
        Tally { seed_targets: vec![0; self.nseeds * self.tbits.len()], lengths: vec![0; 2 * self.max_steps + 1], ..Tally::default() }
    }

    /// The tally of batch `b` from its results (`steps`, `flags`: both halves, half 0 first).
    /// Errs if a path has no result (its slot still poisoned: lost by a compaction).
    pub fn tally(&self, b: &Batch, steps: &[i32], flags: &[u32]) -> Result<Tally> {
        let n = b.len();
        if steps.len() < 2 * n || flags.len() < 2 * n {
            bail!("a batch of {n} streamlines came back with {} results", steps.len().min(flags.len()) / 2);
        }
        let parts: Vec<Result<(Tally, Vec<u32>)>> =
            (0..n.div_ceil(CHUNK)).into_par_iter().map(|c| self.chunk(b, steps, flags, c * CHUNK..((c + 1) * CHUNK).min(n))).collect();
        let mut t = self.empty();
        for p in parts {
            let (part, hits) = p?;
            for i in hits {
                t.seed_targets[i as usize] += 1;
            }
            t.add(part);
        }
        Ok(t)
    }

    /// One chunk's tally (no seed-target map) and its (seed x target) hits, as indices.
    fn chunk(&self, b: &Batch, steps: &[i32], flags: &[u32], range: std::ops::Range<usize>) -> Result<(Tally, Vec<u32>)> {
        let n = b.len();
        let ntarg = self.tbits.len();
        let mut t = Tally { lengths: vec![0; 2 * self.max_steps + 1], ..Tally::default() };
        let mut hits = Vec::new();
        for j in range {
            let (s0, s1) = (steps[j], steps[n + j]);
            if s0 < 0 || s1 < 0 || s0 as usize > self.max_steps || s1 as usize > self.max_steps {
                bail!("streamline {} has no result (a path was lost)", b.streamline(j));
            }
            let f = flags[j] | flags[n + j];
            t.total_steps += (s0 + s1) as u64;
            t.longest = t.longest.max(s0.max(s1) as u32);
            t.finished += 2;
            if f & field::EXCLUDE != 0 || f & self.need != self.need {
                continue;
            }
            let st = b.streamline(j);
            t.kept.push(st);
            t.lengths[(s0 + s1) as usize] += 1;
            let seed = st as usize % self.nseeds;
            for (c, &bit) in self.tbits.iter().enumerate() {
                if f & bit != 0 {
                    hits.push((seed * ntarg + c) as u32);
                }
            }
        }
        Ok((t, hits))
    }
}

impl Tally {
    /// Adds `o`, whose streamlines come after ours.
    pub fn add(&mut self, o: Tally) {
        if self.kept.is_empty() {
            self.kept = o.kept;
        } else {
            self.kept.extend_from_slice(&o.kept);
        }
        if self.seed_targets.len() < o.seed_targets.len() {
            self.seed_targets.resize(o.seed_targets.len(), 0);
        }
        self.seed_targets.iter_mut().zip(&o.seed_targets).for_each(|(a, b)| *a += b);
        if self.lengths.len() < o.lengths.len() {
            self.lengths.resize(o.lengths.len(), 0);
        }
        self.lengths.iter_mut().zip(&o.lengths).for_each(|(a, b)| *a += b);
        self.total_steps += o.total_steps;
        self.longest = self.longest.max(o.longest);
        self.finished += o.finished;
    }
}
