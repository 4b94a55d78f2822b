//! The voxels a command took out of its mask because their data could not be used: NaN/Inf
//! ([`super::skip_nonfinite`]) or, for a tensor, all six components 0 ([`super::read_tensor`]).
//! Filled by the rule that takes them out, so a seed or region on one of them is told why it
//! stops, not that it lies outside a mask the user sees it inside; `probtrack`, `fim` and `track
//! geodesic` word it alike through [`TakenOut::lie_on`] and [`TakenOut::data`].

use std::path::{Path, PathBuf};

/// Voxels taken out of a mask for their data in one file, ascending per cause (lists, not a copy
/// of the mask: usually empty, and then nothing is allocated).
#[derive(Clone, Debug, Default)]
pub struct TakenOut {
    file: PathBuf,
    nonfinite: Vec<usize>,
    zero: Vec<usize>,
}

/// How many of some voxels were taken out, per cause.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Hits {
    pub nonfinite: usize,
    pub zero: usize,
}

impl Hits {
    pub fn total(&self) -> usize {
        self.nonfinite + self.zero
    }
}

impl TakenOut {
    /// None yet, for data read from `file`.
    pub fn new(file: &Path) -> TakenOut {
        TakenOut { file: file.to_path_buf(), ..TakenOut::default() }
    }

    pub(super) fn add_nonfinite(&mut self, voxels: Vec<usize>) {
        add(&mut self.nonfinite, voxels);
    }

    pub(super) fn add_zero(&mut self, voxels: Vec<usize>) {
        add(&mut self.zero, voxels);
    }

    /// The voxels taken out for NaN/Inf data, ascending.
    pub(super) fn nonfinite_voxels(&self) -> &[usize] {
        &self.nonfinite
    }

    /// How many voxels were taken out, for any cause.
    pub fn len(&self) -> usize {
        self.nonfinite.len() + self.zero.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many of `voxels` (a voxel as often as it is listed) were taken out, per cause. Callers
    /// pass only voxels off the mask: the rest cannot have been taken out of it.
    pub fn hits(&self, voxels: impl IntoIterator<Item = usize>) -> Hits {
        let mut h = Hits::default();
        if self.is_empty() {
            return h;
        }
        for v in voxels {
            if self.nonfinite.binary_search(&v).is_ok() {
                h.nonfinite += 1;
            } else if self.zero.binary_search(&v).is_ok() {
                h.zero += 1;
            }
        }
        h
    }

    /// "NaN/Inf data in FILE", "all-zero tensors in FILE" or both, as `h` holds either.
    pub fn data(&self, h: Hits) -> String {
        let what = match (h.nonfinite > 0, h.zero > 0) {
            (true, true) => "NaN/Inf data or all-zero tensors",
            (false, true) => "all-zero tensors",
            _ => "NaN/Inf data",
        };
        format!("{what} in {}", self.file.display())
    }

    /// "H of OF NOUN lie on voxels with NaN/Inf data in FILE (taken out of the MASK)".
    pub fn lie_on(&self, h: Hits, of: usize, noun: &str, mask: &str) -> String {
        format!("{} of {of} {noun} lie on voxels with {} (taken out of the {mask})", h.total(), self.data(h))
    }
}

/// Adds ascending `voxels` to the ascending `list` (a voxel leaves a mask once, so the two share
/// none; the list is usually empty).
fn add(list: &mut Vec<usize>, voxels: Vec<usize>) {
    if list.is_empty() {
        *list = voxels;
    } else {
        list.extend(voxels);
        list.sort_unstable();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hits_count_each_cause_and_the_words_name_only_those_hit() {
        let mut t = TakenOut::new(Path::new("t.nii"));
        assert_eq!(t.hits([1, 2, 3]), Hits::default());
        t.add_nonfinite(vec![4, 9]);
        t.add_zero(vec![2, 7]);
        assert_eq!(t.len(), 4);
        // 9 twice: two seeds in one voxel are two seeds.
        let h = t.hits([9, 9, 3, 4]);
        assert_eq!(h, Hits { nonfinite: 3, zero: 0 });
        assert_eq!(t.lie_on(h, 6, "seeds", "tracking mask"), "3 of 6 seeds lie on voxels with NaN/Inf data in t.nii (taken out of the tracking mask)");
        assert_eq!(t.data(t.hits([7])), "all-zero tensors in t.nii");
        assert_eq!(t.data(t.hits([2, 4])), "NaN/Inf data or all-zero tensors in t.nii");
    }
}
