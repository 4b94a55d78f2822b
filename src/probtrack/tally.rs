//! A batch's per-path results (steps, ROI flags) turned into the run's outputs: which
//! streamlines are kept, the length histograms and the seed-to-target counts. On a GPU this is
//! the `probtrack_tally` kernel (cl/probtrack.cl), which adds into counters that stay on the
//! device for the whole run and hands back only one keep bit per streamline; the CPU runs
//! [`Rules::tally`], the reference, in fixed chunks added in order. Everything is an integer
//! count, so both give the same numbers whatever the order of the additions.
//!
//! `sums` (one u32 array, [`Rules::sums_len`] words):
//! `[0, L)` kept streamlines by length s0 + s1 (L = 2 max_steps + 1), `[L, 2L)` every streamline
//! by length (gives the total steps and finished paths), `[2L, 2L + max_steps + 1)` every
//! streamline by its longer half (gives the longest), then one word: streamlines without a
//! result (a path lost: an error). Every count is at most the number of streamlines (< 2^32).

use super::{field, Batch, Field};
use anyhow::{bail, Result};
use rayon::prelude::*;

/// Streamlines per chunk of the parallel tally (a multiple of 32: whole keep words).
const CHUNK: usize = 1 << 14;

/// What the tally needs of the field and the run.
#[derive(Clone, Debug)]
pub struct Rules {
    pub nseeds: usize,
    /// ROI bits every kept streamline has (all waypoints).
    pub need: u32,
    /// Targets are the `ntarg` bits from `tshift` on.
    pub tshift: u32,
    pub ntarg: usize,
    pub max_steps: usize,
}

/// The run's counters (see the module comment), summed over its batches.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Counts {
    /// Per voxel: kept streamlines' voxel entries (the seed voxel once per streamline).
    pub visits: Vec<u32>,
    /// Per seed x target.
    pub seed_targets: Vec<u32>,
    pub sums: Vec<u32>,
}

impl Rules {
    pub fn new(field: &Field, nseeds: usize, max_steps: usize) -> Rules {
        let ntarg = field.targets.len();
        let tshift = if ntarg > 0 { field.target_bit(0).trailing_zeros() } else { 0 };
        Rules { nseeds, need: field.waypoint_bits(), tshift, ntarg, max_steps }
    }

    /// L: bins of a histogram by s0 + s1.
    pub fn len_bins(&self) -> usize {
        2 * self.max_steps + 1
    }

    pub fn sums_len(&self) -> usize {
        2 * self.len_bins() + self.max_steps + 2
    }

    pub fn lost_index(&self) -> usize {
        self.sums_len() - 1
    }

    /// Zeroed counters for a grid of `nvox` voxels.
    pub fn empty(&self, nvox: usize) -> Counts {
        Counts { visits: vec![0; nvox], seed_targets: vec![0; self.nseeds * self.ntarg], sums: vec![0; self.sums_len()] }
    }

    /// The reference of `probtrack_tally`: the keep words of batch `b` (bit j % 32 of word
    /// j / 32: streamline j of the batch kept) from its results (`steps`, `flags`: both halves,
    /// half 0 first); with `full`, its counts added to `seed_targets` and `sums` (a second pass
    /// over streamlines already counted adds only the lost ones).
    pub fn tally(&self, b: &Batch, steps: &[i32], flags: &[u32], full: bool, seed_targets: &mut [u32], sums: &mut [u32]) -> Vec<u32> {
        let n = b.len();
        // A chunk's sums come back as the indices it adds 1 to, not as a copy of `sums`: that
        // is ~20 bytes a step of --max-steps, and a batch has up to ~64 chunks in flight (with
        // --max-steps 10^9, 20 GB each).
        let parts: Vec<(Vec<u32>, Vec<u32>, Vec<u32>)> =
            (0..n.div_ceil(CHUNK)).into_par_iter().map(|c| self.chunk(b, steps, flags, full, c * CHUNK..((c + 1) * CHUNK).min(n))).collect();
        let mut words = Vec::with_capacity(n.div_ceil(32));
        for (w, adds, hits) in parts {
            words.extend_from_slice(&w);
            for i in adds {
                sums[i as usize] += 1;
            }
            for i in hits {
                seed_targets[i as usize] += 1;
            }
        }
        words
    }

    /// One chunk: its keep words, the `sums` words it adds 1 to, and its (seed x target) hits,
    /// both as indices.
    fn chunk(&self, b: &Batch, steps: &[i32], flags: &[u32], full: bool, range: std::ops::Range<usize>) -> (Vec<u32>, Vec<u32>, Vec<u32>) {
        let n = b.len();
        let (l, m) = (self.len_bins(), self.max_steps);
        let mut sums = Vec::new();
        let mut words = vec![0u32; range.len().div_ceil(32)];
        let mut hits = Vec::new();
        for j in range.clone() {
            let (s0, s1) = (steps.get(j).copied().unwrap_or(-1), steps.get(n + j).copied().unwrap_or(-1));
            if s0 < 0 || s1 < 0 || s0 as usize > m || s1 as usize > m {
                sums.push((l * 2 + m + 1) as u32);
                continue;
            }
            let f = flags[j] | flags[n + j];
            let kept = f & field::EXCLUDE == 0 && f & self.need == self.need;
            let k = j - range.start;
            words[k / 32] |= (kept as u32) << (k % 32);
            if !full {
                continue;
            }
            let len = (s0 + s1) as usize;
            sums.push((l + len) as u32);
            sums.push((2 * l + s0.max(s1) as usize) as u32);
            if kept {
                sums.push(len as u32);
                let seed = b.streamline(j) as usize % self.nseeds;
                for c in 0..self.ntarg {
                    if f >> (self.tshift as usize + c) & 1 != 0 {
                        hits.push((seed * self.ntarg + c) as u32);
                    }
                }
            }
        }
        (words, sums, hits)
    }
}

impl Counts {
    /// Adds `o` (counts of other streamlines of the same run).
    pub fn add(&mut self, o: &Counts) {
        for (a, b) in [(&mut self.visits, &o.visits), (&mut self.seed_targets, &o.seed_targets), (&mut self.sums, &o.sums)] {
            if a.len() < b.len() {
                a.resize(b.len(), 0);
            }
            a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
        }
    }
}

/// The kept streamlines' numbers as ascending runs [start, start + len), merged: without
/// waypoints or an exclusion mask every streamline is kept, and a run holds them all.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Kept {
    runs: Vec<(u32, u32)>,
    len: u64,
}

impl Kept {
    pub fn len(&self) -> usize {
        self.len as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends streamlines `start..start + n`, which come after every one held.
    pub fn push_run(&mut self, start: u32, n: u32) {
        if n == 0 {
            return;
        }
        self.len += n as u64;
        match self.runs.last_mut() {
            Some((s, l)) if *s + *l == start => *l += n,
            _ => self.runs.push((start, n)),
        }
    }

    /// Appends the streamlines of batch `b` whose keep bit is set in `words`.
    pub fn push_words(&mut self, b: &Batch, words: &[u32]) {
        let n = b.len();
        for (w, &word) in words.iter().enumerate() {
            let base = 32 * w;
            let width = (n - base.min(n)).min(32);
            if let (Batch::Range(t0, _), true) = (b, width == 32 && word == u32::MAX) {
                self.push_run(t0 + base as u32, 32);
                continue;
            }
            let mut bits = if width == 32 { word } else { word & ((1u32 << width) - 1) };
            while bits != 0 {
                let k = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                self.push_run(b.streamline(base + k), 1);
            }
        }
    }

    /// Appends `o`, whose streamlines come after ours.
    pub fn append(&mut self, o: &Kept) {
        for &(s, l) in &o.runs {
            self.push_run(s, l);
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.runs.iter().flat_map(|&(s, l)| s..s + l)
    }

    pub fn to_vec(&self) -> Vec<u32> {
        self.iter().collect()
    }
}

/// The run's figures from its counters.
pub struct Totals {
    pub lengths: Vec<u64>,
    pub total_steps: u64,
    pub longest: u32,
    pub finished: u64,
    /// Kept streamlines by the length histogram (must equal the kept runs' count).
    pub kept: u64,
}

impl Rules {
    pub fn totals(&self, sums: &[u32]) -> Result<Totals> {
        let (l, m) = (self.len_bins(), self.max_steps);
        if sums.len() != self.sums_len() {
            bail!("probtrack: {} counters came back, {} expected", sums.len(), self.sums_len());
        }
        let lost = sums[self.lost_index()];
        if lost != 0 {
            bail!("{lost} streamlines came back without a result (a path was lost)");
        }
        let all = &sums[l..2 * l];
        Ok(Totals {
            lengths: sums[..l].iter().map(|&c| c as u64).collect(),
            total_steps: all.iter().enumerate().map(|(x, &c)| x as u64 * c as u64).sum(),
            longest: sums[2 * l..2 * l + m + 1].iter().rposition(|&c| c > 0).unwrap_or(0) as u32,
            finished: 2 * all.iter().map(|&c| c as u64).sum::<u64>(),
            kept: sums[..l].iter().map(|&c| c as u64).sum(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keep_words_become_merged_runs() {
        let mut k = Kept::default();
        let b = Batch::Range(100, 70);
        // Words: all 32 kept, all 32 kept, then of the last 6 bits only 0 and 5 (bit 6 is past
        // the batch and must be ignored).
        k.push_words(&b, &[u32::MAX, u32::MAX, 0b110_0001]);
        assert_eq!(k.to_vec(), (100..164).chain([164, 169]).collect::<Vec<u32>>());
        assert_eq!(k.runs, vec![(100, 65), (169, 1)]);
        let list = [203u32, 207, 208, 240];
        let mut k2 = Kept::default();
        k2.push_words(&Batch::List(&list), &[0b1110]);
        assert_eq!(k2.to_vec(), vec![207, 208, 240]);
        k.append(&k2);
        assert_eq!(k.len(), 66 + 3);
    }
}
