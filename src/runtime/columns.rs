//! A share of a component-major array (`ncomp` components of `n` items each): items `range` of
//! every component, read or written where it lies. A split's device loads its share of the
//! measurements and chains straight from the whole arrays and reads its samples straight into
//! them, the gather and scatter riding on the copies through pinned staging that happen anyway;
//! cutting shares out and pasting results back had cost bedpost 12-15 and 10-19 ms a chunk on two
//! GPUs (round 27), on the critical path.

use rayon::prelude::*;
use std::marker::PhantomData;
use std::ops::Range;

/// Where a share lies: items `start..start + len` of each of `ncomp` components of `n` items.
#[derive(Clone, Copy, Debug)]
pub struct Place {
    ncomp: usize,
    n: usize,
    start: usize,
    len: usize,
}

impl Place {
    fn whole(total: usize, ncomp: usize) -> Place {
        let n = total.checked_div(ncomp).unwrap_or(0);
        Place { ncomp, n, start: 0, len: n }
    }

    /// Items `range` of this share (relative to it).
    fn part(&self, range: Range<usize>) -> Place {
        assert!(range.start <= range.end && range.end <= self.len, "part {range:?} of a share of {}", self.len);
        Place { start: self.start + range.start, len: range.len(), ..*self }
    }

    /// Where component `c`'s items begin in the whole array.
    fn at(&self, c: usize) -> usize {
        c * self.n + self.start
    }

    /// Items per component.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn ncomp(&self) -> usize {
        self.ncomp
    }
}

/// Items `range` of each of `ncomp` components of `data` (`ncomp` x `n`).
#[derive(Clone, Copy, Debug)]
pub struct Columns<'a, T> {
    data: &'a [T],
    place: Place,
}

impl<T> std::ops::Deref for Columns<'_, T> {
    type Target = Place;
    fn deref(&self) -> &Place {
        &self.place
    }
}

impl<'a, T: Copy + Send + Sync> Columns<'a, T> {
    /// All items of `data` (`ncomp` x n).
    pub fn whole(data: &'a [T], ncomp: usize) -> Columns<'a, T> {
        Columns { data, place: Place::whole(data.len(), ncomp) }
    }

    /// Items `range` of its items (relative to this share).
    pub fn part(&self, range: Range<usize>) -> Columns<'a, T> {
        Columns { data: self.data, place: self.place.part(range) }
    }

    /// Component `c`'s items.
    pub fn run(&self, c: usize) -> &'a [T] {
        let at = self.place.at(c);
        &self.data[at..at + self.len]
    }

    /// The components' runs in order: the share as the device holds it is their concatenation.
    pub fn runs(&self) -> Vec<&'a [T]> {
        (0..self.ncomp).map(|c| self.run(c)).collect()
    }

    /// Item `j` of component `c`.
    pub fn at(&self, c: usize, j: usize) -> T {
        self.run(c)[j]
    }

    /// The share as one array (`ncomp` x len), copied on every core.
    pub fn to_vec(&self) -> Vec<T> {
        let len = self.len;
        let mut out = Vec::with_capacity(self.ncomp * len);
        if len > 0 {
            out.spare_capacity_mut()[..self.ncomp * len].par_chunks_mut(len).enumerate().for_each(|(c, dst)| {
                for (d, s) in dst.iter_mut().zip(self.run(c)) {
                    d.write(*s);
                }
            });
            // SAFETY: the ncomp chunks of len items each were all written above.
            unsafe { out.set_len(self.ncomp * len) };
        }
        out
    }
}

/// Items of each of `ncomp` components of an array (`ncomp` x `n`) that this share alone may
/// write: made by [`ColumnsMut::split`], whose shares never overlap, so devices fill theirs at
/// once from their own threads.
pub struct ColumnsMut<'a, T> {
    ptr: *mut T,
    place: Place,
    _owner: PhantomData<&'a mut [T]>,
}

// SAFETY: a share is the only handle to its items (split hands out disjoint ranges and borrows
// the array mutably for their lifetime), so moving or sharing it across threads is as safe as
// for the `&mut [T]` pieces it stands for.
unsafe impl<T: Send> Send for ColumnsMut<'_, T> {}
unsafe impl<T: Sync> Sync for ColumnsMut<'_, T> {}

impl<T> std::ops::Deref for ColumnsMut<'_, T> {
    type Target = Place;
    fn deref(&self) -> &Place {
        &self.place
    }
}

impl<'a, T: Copy + Send + Sync> ColumnsMut<'a, T> {
    /// All items of `data` (`ncomp` x n).
    pub fn whole(data: &'a mut [T], ncomp: usize) -> ColumnsMut<'a, T> {
        ColumnsMut { ptr: data.as_mut_ptr(), place: Place::whole(data.len(), ncomp), _owner: PhantomData }
    }

    /// One share per range of `data` (`ncomp` x n); None if two ranges overlap or one passes n.
    pub fn split(data: &'a mut [T], ncomp: usize, ranges: &[Range<usize>]) -> Option<Vec<ColumnsMut<'a, T>>> {
        let whole = Place::whole(data.len(), ncomp);
        let mut sorted: Vec<&Range<usize>> = ranges.iter().collect();
        sorted.sort_by_key(|r| r.start);
        if sorted.iter().any(|r| r.start > r.end || r.end > whole.n) || sorted.windows(2).any(|w| w[0].end > w[1].start) {
            return None;
        }
        let ptr = data.as_mut_ptr();
        Some(ranges.iter().map(|r| ColumnsMut { ptr, place: whole.part(r.clone()), _owner: PhantomData }).collect())
    }

    /// Items `range` of this share, borrowed.
    pub fn part(&mut self, range: Range<usize>) -> ColumnsMut<'_, T> {
        ColumnsMut { ptr: self.ptr, place: self.place.part(range), _owner: PhantomData }
    }

    /// The components' runs in order, each writable.
    pub fn runs_mut(&mut self) -> Vec<&mut [T]> {
        // SAFETY: the runs are disjoint pieces of the items this share alone owns.
        (0..self.ncomp).map(|c| unsafe { std::slice::from_raw_parts_mut(self.ptr.add(self.place.at(c)), self.len) }).collect()
    }

    /// Writes `src` (`ncomp` x len, component-major) into the share, on every core.
    pub fn fill_from(&mut self, src: &[T]) {
        assert_eq!(src.len(), self.ncomp * self.len, "a share of {} x {} items", self.ncomp, self.len);
        let len = self.len;
        if len == 0 {
            return;
        }
        self.runs_mut().into_par_iter().zip(src.par_chunks(len)).for_each(|(d, s)| d.copy_from_slice(s));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_read_and_write_their_items_only() {
        let (ncomp, n) = (3, 10);
        let data: Vec<u32> = (0..(ncomp * n) as u32).collect();
        let c = Columns::whole(&data, ncomp).part(4..7);
        assert_eq!(c.to_vec(), vec![4, 5, 6, 14, 15, 16, 24, 25, 26]);
        assert_eq!(c.part(1..3).runs(), vec![&[5u32, 6][..], &[15, 16], &[25, 26]]);
        assert_eq!(c.at(2, 0), 24);

        let mut out = vec![0u32; ncomp * n];
        let mut shares = ColumnsMut::split(&mut out, ncomp, &[0..4, 7..10, 4..7]).unwrap();
        std::thread::scope(|s| {
            for (i, sh) in shares.iter_mut().enumerate() {
                s.spawn(move || {
                    let len = sh.len();
                    let src: Vec<u32> = (0..ncomp * len).map(|k| 100 * (i as u32 + 1) + k as u32).collect();
                    sh.fill_from(&src);
                });
            }
        });
        drop(shares);
        assert_eq!(out[..10], [100, 101, 102, 103, 300, 301, 302, 200, 201, 202]);
        assert_eq!(out[10..20], [104, 105, 106, 107, 303, 304, 305, 203, 204, 205]);
        assert!(ColumnsMut::split(&mut out, ncomp, &[0..5, 4..6]).is_none());
        assert!(ColumnsMut::split(&mut out, ncomp, &[8..11]).is_none());
    }

    #[test]
    fn parts_written_back_give_the_array() {
        let v: Vec<u32> = (0..7 * 1000).collect();
        let mut w = vec![0; v.len()];
        let ranges = [0..1, 1..400, 400..400, 400..999, 999..1000];
        let mut shares = ColumnsMut::split(&mut w, 7, &ranges).unwrap();
        for (sh, r) in shares.iter_mut().zip(&ranges) {
            let part = Columns::whole(&v, 7).part(r.clone());
            assert_eq!(part.len(), r.len());
            sh.fill_from(&part.to_vec());
        }
        drop(shares);
        assert_eq!(w, v);
    }
}
