//! Segment schedules (003 Sec. IV-B): `NumIteration[]`, the steps of each kernel launch, with
//! the unfinished paths compacted between launches. Names as 003 Sec. V defines them:
//! `A<k>` (every segment k steps), `A_MaxStep` (one segment), `B` = {1, 2, 5, ..., 500},
//! `C` = {1, 1, 2, 2, ..., 200, 200}, the paper's default {1, 2, 5, ..., 1000}, or any list.
//!
//! The step limit is a separate parameter (`--max-steps`), so that a schedule can never change
//! the result: a list shorter than the limit repeats its last segment, and the segment that
//! reaches the limit is cut there. (003 says the sum of the array "determines MaxStep"; with its
//! own B (888 steps) and C (776) that sum is below Table II's longest fibre of 777 steps, so the
//! paper must have continued past the list; repeating the last entry is our reading.)

use anyhow::{bail, Result};

/// 003 Sec. V: the increasing-interval strategy of Table II.
pub const PAPER_DEFAULT: &[usize] = &[1, 2, 5, 10, 20, 50, 100, 200, 500, 1000];
/// 003 Table IV's strategy B.
pub const B: &[usize] = &[1, 2, 5, 10, 20, 50, 100, 200, 500];
/// 003 Table IV's strategy C.
pub const C: &[usize] = &[1, 1, 2, 2, 5, 5, 10, 10, 20, 20, 50, 50, 100, 100, 200, 200];

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Schedule {
    /// Segments of these lengths, the last one repeated.
    List(Vec<usize>),
    /// One segment of `--max-steps` (003's A_MaxStep, no compaction at all).
    MaxStep,
}

impl Default for Schedule {
    fn default() -> Schedule {
        Schedule::List(PAPER_DEFAULT.to_vec())
    }
}

impl std::str::FromStr for Schedule {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> Result<Schedule> {
        let t = s.trim();
        let list = match t {
            "B" | "b" => B.to_vec(),
            "C" | "c" => C.to_vec(),
            "paper" | "default" => PAPER_DEFAULT.to_vec(),
            "A_MaxStep" | "AMaxStep" | "A_maxstep" | "amaxstep" => return Ok(Schedule::MaxStep),
            _ if t.starts_with(['A', 'a']) => {
                let k: usize = t[1..].parse().map_err(|_| anyhow::anyhow!("schedule '{s}': A must be followed by a step count (A10) or _MaxStep"))?;
                vec![k]
            }
            _ => t
                .split(',')
                .map(|x| x.trim().parse::<usize>().map_err(|_| anyhow::anyhow!("schedule '{s}': '{x}' is not a step count; use a list like 1,2,5,10, or A10, A_MaxStep, B, C")))
                .collect::<Result<Vec<_>>>()?,
        };
        if list.is_empty() || list.contains(&0) {
            bail!("schedule '{s}': every segment needs at least one step");
        }
        Ok(Schedule::List(list))
    }
}

impl Schedule {
    /// The launches of a run with step limit `max_steps`: lengths summing to exactly
    /// `max_steps`.
    pub fn segments(&self, max_steps: usize) -> Vec<usize> {
        let list = match self {
            Schedule::MaxStep => return if max_steps > 0 { vec![max_steps] } else { Vec::new() },
            Schedule::List(l) => l,
        };
        let mut out = Vec::new();
        let mut done = 0;
        let mut i = 0;
        while done < max_steps {
            let k = list[i.min(list.len() - 1)].min(max_steps - done);
            out.push(k);
            done += k;
            i += 1;
        }
        out
    }

    /// Short name for reports (`A10`, `B`, `1,2,5`).
    pub fn name(&self) -> String {
        match self {
            Schedule::MaxStep => "A_MaxStep".into(),
            Schedule::List(l) if l.as_slice() == B => "B".into(),
            Schedule::List(l) if l.as_slice() == C => "C".into(),
            Schedule::List(l) if l.len() == 1 => format!("A{}", l[0]),
            Schedule::List(l) => l.iter().map(|k| k.to_string()).collect::<Vec<_>>().join(","),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_papers_names() {
        assert_eq!("A10".parse::<Schedule>().unwrap(), Schedule::List(vec![10]));
        assert_eq!("A_MaxStep".parse::<Schedule>().unwrap(), Schedule::MaxStep);
        assert_eq!("B".parse::<Schedule>().unwrap().name(), "B");
        assert_eq!("C".parse::<Schedule>().unwrap().name(), "C");
        assert_eq!("1, 2,5".parse::<Schedule>().unwrap(), Schedule::List(vec![1, 2, 5]));
        for bad in ["", "A", "Ax", "1,0", "1,,2", "Q"] {
            assert!(bad.parse::<Schedule>().is_err(), "{bad}");
        }
    }

    #[test]
    fn segments_sum_to_the_step_limit() {
        for s in ["A1", "A7", "A_MaxStep", "B", "C", "paper", "3,1"] {
            let s: Schedule = s.parse().unwrap();
            for max in [0, 1, 5, 776, 777, 2000] {
                let seg = s.segments(max);
                assert_eq!(seg.iter().sum::<usize>(), max, "{s:?} {max}");
                assert!(seg.iter().all(|&k| k > 0));
            }
        }
        assert_eq!("C".parse::<Schedule>().unwrap().segments(780).last(), Some(&4));
        assert_eq!("B".parse::<Schedule>().unwrap().segments(1000)[9], 112);
    }
}
