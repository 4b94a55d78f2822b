//! The chains' state, component-major as the kernels keep it, and shares of it: a chunk or a
//! split's device loads its voxels' state from the whole arrays and reads its results back into
//! them (`runtime::columns`), with no copy cut out or pasted back.

use super::{rng::VOXEL_WORDS, NPARAM};
use crate::runtime::columns::{Columns, ColumnsMut};
use std::ops::Range;

/// Chain state of `nvox` voxels.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChainState {
    pub par: Vec<f32>,
    pub prop: Vec<f32>,
    pub acc: Vec<i32>,
    pub rng: Vec<u32>,
    pub nacc: Vec<i32>,
}

impl ChainState {
    pub fn nvox(&self) -> usize {
        self.nacc.len()
    }

    /// `nvox` voxels' state, all zero (to be read into: zeroed memory costs no pass over it).
    pub fn zeroed(nvox: usize) -> ChainState {
        ChainState { par: vec![0.0; NPARAM * nvox], prop: vec![0.0; NPARAM * nvox], acc: vec![0; NPARAM * nvox], rng: vec![0; VOXEL_WORDS * nvox], nacc: vec![0; nvox] }
    }

    /// Every voxel's state, as a share.
    pub fn whole(&self) -> ChainPart<'_> {
        ChainPart {
            par: Columns::whole(&self.par, NPARAM),
            prop: Columns::whole(&self.prop, NPARAM),
            acc: Columns::whole(&self.acc, NPARAM),
            rng: Columns::whole(&self.rng, VOXEL_WORDS),
            nacc: Columns::whole(&self.nacc, 1),
        }
    }

    /// A copy of voxels `r`' state.
    pub fn cut(&self, r: Range<usize>) -> ChainState {
        self.whole().part(r).to_state()
    }

    /// Every voxel's state, writable.
    pub fn whole_mut(&mut self) -> ChainPartMut<'_> {
        let n = self.nvox();
        self.split_mut(&[0..n]).expect("one range within the state").pop().expect("one share")
    }

    /// One writable share per range; None if ranges overlap or pass the voxels.
    pub fn split_mut(&mut self, ranges: &[Range<usize>]) -> Option<Vec<ChainPartMut<'_>>> {
        let par = ColumnsMut::split(&mut self.par, NPARAM, ranges)?;
        let prop = ColumnsMut::split(&mut self.prop, NPARAM, ranges)?;
        let acc = ColumnsMut::split(&mut self.acc, NPARAM, ranges)?;
        let rng = ColumnsMut::split(&mut self.rng, VOXEL_WORDS, ranges)?;
        let nacc = ColumnsMut::split(&mut self.nacc, 1, ranges)?;
        Some(
            par.into_iter()
                .zip(prop)
                .zip(acc)
                .zip(rng)
                .zip(nacc)
                .map(|((((par, prop), acc), rng), nacc)| ChainPartMut { par, prop, acc, rng, nacc })
                .collect(),
        )
    }
}

/// Some voxels' chain state, where it lies in the whole arrays.
#[derive(Clone, Copy, Debug)]
pub struct ChainPart<'a> {
    pub par: Columns<'a, f32>,
    pub prop: Columns<'a, f32>,
    pub acc: Columns<'a, i32>,
    pub rng: Columns<'a, u32>,
    pub nacc: Columns<'a, i32>,
}

impl<'a> ChainPart<'a> {
    pub fn nvox(&self) -> usize {
        self.nacc.len()
    }

    /// Voxels `r` of this share.
    pub fn part(&self, r: Range<usize>) -> ChainPart<'a> {
        ChainPart { par: self.par.part(r.clone()), prop: self.prop.part(r.clone()), acc: self.acc.part(r.clone()), rng: self.rng.part(r.clone()), nacc: self.nacc.part(r) }
    }

    /// The share as a state of its own.
    pub fn to_state(&self) -> ChainState {
        ChainState { par: self.par.to_vec(), prop: self.prop.to_vec(), acc: self.acc.to_vec(), rng: self.rng.to_vec(), nacc: self.nacc.to_vec() }
    }
}

/// Some voxels' chain state, writable where it lies (see [`ChainState::split_mut`]).
pub struct ChainPartMut<'a> {
    pub par: ColumnsMut<'a, f32>,
    pub prop: ColumnsMut<'a, f32>,
    pub acc: ColumnsMut<'a, i32>,
    pub rng: ColumnsMut<'a, u32>,
    pub nacc: ColumnsMut<'a, i32>,
}

impl ChainPartMut<'_> {
    pub fn nvox(&self) -> usize {
        self.nacc.len()
    }

    /// Voxels `r` of this share, borrowed.
    pub fn part(&mut self, r: Range<usize>) -> ChainPartMut<'_> {
        ChainPartMut { par: self.par.part(r.clone()), prop: self.prop.part(r.clone()), acc: self.acc.part(r.clone()), rng: self.rng.part(r.clone()), nacc: self.nacc.part(r) }
    }

    /// Writes `st` (this share's voxels' state) into the share.
    pub fn fill_from(&mut self, st: &ChainState) {
        self.par.fill_from(&st.par);
        self.prop.fill_from(&st.prop);
        self.acc.fill_from(&st.acc);
        self.rng.fill_from(&st.rng);
        self.nacc.fill_from(&st.nacc);
    }
}
