//! The run summary's fibre lengths.

use super::FibreBatch;
use crate::io::figure::figure;

/// Lengths of the fibres written. Seeds outside the tracking mask, or whose first step leaves it,
/// stop at once at 0 mm: a mean over every fibre read 0.7 mm where those that moved averaged
/// 9 mm, so the mean is over the fibres that took a step and the others are counted apart.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Lengths {
    /// Fibres that took at least one step.
    pub moved: usize,
    /// Fibres that stopped at their seed (no step, 0 mm).
    pub still: usize,
    /// Mean length of the fibres that moved, mm (0 when none did).
    pub mean_mm: f64,
}

impl Lengths {
    /// The fibres `order` names.
    pub fn of(batch: &FibreBatch, order: &[usize]) -> Lengths {
        let moved: Vec<f64> = order.iter().map(|&i| &batch.ends[i]).filter(|e| e.steps > 0).map(|e| e.length_mm as f64).collect();
        // (+ 0.0: the sum of no fibres is -0.0, printed "-0.0 mm")
        let mean_mm = moved.iter().sum::<f64>() / moved.len().max(1) as f64 + 0.0;
        Lengths { moved: moved.len(), still: order.len() - moved.len(), mean_mm }
    }
}

/// "mean length 9.3 mm", with the fibres that stopped at their seed, if any, named apart.
impl std::fmt::Display for Lengths {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match (self.moved, self.still) {
            (_, 0) => write!(f, "mean length {} mm", figure(self.mean_mm, 1)),
            (0, n) => write!(f, "none moved: all {n} stopped at their seed (0 mm)"),
            (m, n) => write!(f, "mean length {} mm over the {m} that moved, {n} stopped at their seed (0 mm)", figure(self.mean_mm, 1)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geodesic::{FibreEnd, Stop};

    fn end(steps: u32, length_mm: f32) -> FibreEnd {
        let stop = if steps == 0 { Stop::LeftMask } else { Stop::MaxSteps };
        FibreEnd { steps, stop, length_mm, riemann: length_mm, target_step: None, target_length_mm: 0.0, target_riemann: 0.0 }
    }

    #[test]
    fn fibres_that_stopped_at_their_seed_are_left_out_of_the_mean() {
        let batch = FibreBatch { ends: vec![end(0, 0.0), end(40, 8.0), end(0, 0.0), end(60, 12.0), end(0, 0.0)], ..Default::default() };
        let all: Vec<usize> = (0..5).collect();
        let l = Lengths::of(&batch, &all);
        assert_eq!(l, Lengths { moved: 2, still: 3, mean_mm: 10.0 });
        assert_eq!(l.to_string(), "mean length 10.0 mm over the 2 that moved, 3 stopped at their seed (0 mm)");
        // Only the fibres written count (a target keeps some).
        assert_eq!(Lengths::of(&batch, &[3, 1]).to_string(), "mean length 10.0 mm");
        assert_eq!(Lengths::of(&batch, &[0, 2]).to_string(), "none moved: all 2 stopped at their seed (0 mm)");
        // No fibre written: the old text, not "-0.0 mm".
        assert_eq!(Lengths::of(&batch, &[]).to_string(), "mean length 0.0 mm");
        // Fibres of 0.01 mm voxels: two significant digits, not "0.0 mm".
        let tiny = FibreBatch { ends: vec![end(40, 0.012), end(60, 0.014)], ..Default::default() };
        assert_eq!(Lengths::of(&tiny, &[0, 1]).to_string(), "mean length 0.013 mm");
    }
}
