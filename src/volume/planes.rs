//! Volumes held plane after plane (plane c: component c of every voxel, as NIfTI stores the 4th
//! axis), filled in parallel a run of voxels at a time: each task writes its run of every plane,
//! so no per-voxel rows need transposing afterwards (the dti command's maps did that on one core:
//! ~0.8 s of a 1.6 s command on a 256x256x100 volume, round 26).

use rayon::prelude::*;

/// Voxels per task: long enough to amortise the task, short enough to spread a volume's mask.
pub const RUN: usize = 4096;

/// The `K` planes (each of the same length) cut into runs of [`RUN`] voxels: item r holds run r
/// of every plane, so runs can be filled in parallel.
pub fn runs<const K: usize>(planes: [&mut [f32]; K]) -> Vec<[&mut [f32]; K]> {
    let n = planes.first().map_or(0, |p| p.len());
    assert!(planes.iter().all(|p| p.len() == n), "planes of one length");
    let mut chunks = planes.map(|p| p.chunks_mut(RUN));
    (0..n.div_ceil(RUN)).map(|_| std::array::from_fn(|c| chunks[c].next().expect("planes of one length"))).collect()
}

/// `out` (K planes of `n`) split into its planes.
pub fn split<const K: usize>(out: &mut [f32], n: usize) -> [&mut [f32]; K] {
    assert_eq!(out.len(), K * n, "K planes of n");
    let mut it = out.chunks_mut(n.max(1));
    std::array::from_fn(|_| if n == 0 { &mut [][..] } else { it.next().expect("K planes of n") })
}

/// `f(v, row)` for every voxel v, its K values written to the K planes of a new `K x n` buffer
/// (component-major); a voxel `f` leaves alone stays 0.
pub fn fill<const K: usize>(n: usize, f: impl Fn(usize, &mut [f32; K]) + Sync) -> Vec<f32> {
    fill_runs::<K>(n, |first, rows| {
        for (i, row) in rows.iter_mut().enumerate() {
            f(first + i, row);
        }
    })
}

/// [`fill`] a run at a time: `f(first, rows)` fills the rows of voxels `first..first +
/// rows.len()` (at most [`RUN`]), for work that goes faster many voxels at once.
pub fn fill_runs<const K: usize>(n: usize, f: impl Fn(usize, &mut [[f32; K]]) + Sync) -> Vec<f32> {
    let mut out = vec![0.0f32; K * n];
    runs(split::<K>(&mut out, n)).into_par_iter().enumerate().for_each(|(r, mut run)| {
        let mut rows = vec![[0.0f32; K]; run[0].len()];
        f(r * RUN, &mut rows);
        for (i, row) in rows.iter().enumerate() {
            for (c, p) in run.iter_mut().enumerate() {
                p[i] = row[c];
            }
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_writes_each_voxels_row_down_the_planes() {
        // Lengths around the run's edge, and none.
        for n in [0, 1, RUN - 1, RUN, RUN + 1, 3 * RUN + 17] {
            let out = fill::<3>(n, |v, row| *row = [v as f32, -(v as f32), if v % 2 == 0 { 0.0 } else { 1.0 }]);
            assert_eq!(out.len(), 3 * n);
            for v in 0..n {
                assert_eq!([out[v], out[n + v], out[2 * n + v]], [v as f32, -(v as f32), (v % 2) as f32], "n {n} voxel {v}");
            }
        }
    }
}
