//! The streamline step, in f32, operation for operation as `cl/common/probtrack.h` writes it
//! (products and sums in the same order, no fused multiply-add on either side, only exact
//! operations besides them: comparisons, floor, absolute value, integer hashing), so the CPU
//! reference and every device trace the very same streamlines. The rules are documented once,
//! in docs/probtrack.md and the header.

use super::field::{EXCLUDE, INSIDE, RECORD};

/// `np_pt_params`: what every launch needs (21 words).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Params {
    pub nx: i32,
    pub ny: i32,
    pub nz: i32,
    pub nsamp: i32,
    /// Step in voxels along each axis (`--step` mm / voxel size).
    pub hx: f32,
    pub hy: f32,
    pub hz: f32,
    /// Smallest cosine between successive steps (`--curvature`).
    pub min_cos: f32,
    /// Sticks with a smaller fraction are ignored (probtrackx's --fibthresh).
    pub fibthresh: f32,
    pub max_steps: i32,
    /// 1: probtrackx's random sub-voxel choice of the voxel whose sample is read; 0: nearest.
    pub jitter: i32,
    /// Hash of the user's --seed.
    pub key: u32,
    /// 1: count voxel entries into the visitation map.
    pub count: i32,
    pub nseeds: i32,
    /// The bounding box of the voxels the samples hold (`crop.rs`): its first voxel and its
    /// size, and how many voxels it holds (the records per sample volume).
    pub origin: [i32; 3],
    pub crop: [i32; 3],
    pub rows: i32,
}

/// `np_pt_path`: one half-streamline between launches (48 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Path {
    /// Position in voxel coordinates (voxel centres at integers).
    pub p: [f32; 3],
    /// Unit direction, voxel axes, physical (mm) frame.
    pub d: [f32; 3],
    pub steps: i32,
    /// OR of the ROI words of every voxel reached.
    pub flags: u32,
    /// Voxel of the last point (for the visitation count).
    pub vox: i32,
    /// Slot of this path's result in the batch.
    pub id: u32,
    /// Random key of this path: (seed, seed voxel, streamline index, half).
    pub rkey: u32,
    /// Sample volume this streamline reads.
    pub samp: i32,
}

// SAFETY: both are repr(C) of 4-byte integers and floats only, no padding; every bit pattern
// is a valid value.
unsafe impl bytemuck::Zeroable for Params {}
unsafe impl bytemuck::Pod for Params {}
unsafe impl bytemuck::Zeroable for Path {}
unsafe impl bytemuck::Pod for Path {}

/// lowbias32 (Chris Wellons): a full-avalanche 32-bit integer hash.
pub fn hash(mut x: u32) -> u32 {
    x ^= x >> 16;
    x = x.wrapping_mul(0x7feb_352d);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846c_a68b);
    x ^= x >> 16;
    x
}

/// Uniform in [0, 1) from the top 24 bits: exact in f32.
pub fn u01(h: u32) -> f32 {
    (h >> 8) as f32 * (1.0 / 16_777_216.0)
}

/// The random key of a half-streamline; every draw of the path derives from it and its step
/// count only, so chunking, schedules and threads cannot change a streamline.
pub fn path_key(key: u32, seed_vox: u32, k: u32, half: u32) -> u32 {
    hash(key ^ hash(seed_vox ^ hash(k.wrapping_mul(2).wrapping_add(half))))
}

fn dims(p: &Params) -> [i32; 3] {
    [p.nx, p.ny, p.nz]
}

/// The record of grid voxel `i` in sample volume `samp`: the box's origin is subtracted from
/// the integer index alone, and the box's index gives the voxel's row (`np_pt_record`).
fn record<'a>(samples: &'a [f32], index: &[i32], p: &Params, samp: i32, i: [i32; 3]) -> &'a [f32] {
    let [cx, cy, _] = p.crop;
    let b = (i[0] - p.origin[0]) + cx * ((i[1] - p.origin[1]) + cy * (i[2] - p.origin[2]));
    // Every voxel a step can read is held (`crop.rs`): -1 here would be a bug, and panics.
    let row = usize::try_from(index[b as usize]).expect("a step read a voxel the field does not hold");
    &samples[(samp as usize * p.rows as usize + row) * RECORD..][..RECORD]
}

/// Flat index of the voxel holding `q` (nearest centre), or None outside the grid.
pub fn nearest(q: [f32; 3], p: &Params) -> Option<usize> {
    let n = dims(p);
    let mut i = [0i32; 3];
    for c in 0..3 {
        let f = (q[c] + 0.5f32).floor();
        if !(f >= 0.0 && f < n[c] as f32) {
            return None;
        }
        i[c] = f as i32;
    }
    Some((i[0] + n[0] * (i[1] + n[1] * i[2])) as usize)
}

/// Voxel whose sample the step reads: floor(q + u) per axis, clamped to the grid; u = 0.5 is
/// the nearest voxel, u uniform in [0, 1) chooses a neighbour with its trilinear weight.
fn sample_voxel(q: [f32; 3], u: [f32; 3], p: &Params) -> [i32; 3] {
    let n = dims(p);
    let mut i = [0i32; 3];
    for c in 0..3 {
        let f = (q[c] + u[c]).floor();
        i[c] = if f >= 0.0 { (f as i32).min(n[c] - 1) } else { 0 };
    }
    i
}

fn dot(a: &[f32], d: [f32; 3]) -> f32 {
    a[0] * d[0] + a[1] * d[1] + a[2] * d[2]
}

/// The stick of record `r` to follow from direction `d`, oriented along it: the stick above
/// the fraction threshold with the largest |cos|, stick 1 on a tie. None when no stick counts.
pub fn choose(r: &[f32], d: [f32; 3], fibthresh: f32) -> Option<([f32; 3], f32)> {
    let ca = dot(&r[0..3], d);
    let cb = dot(&r[4..7], d);
    let mut best = -1.0f32;
    let mut pick = 0;
    if r[3] > fibthresh {
        best = ca.abs();
        pick = 1;
    }
    if r[7] > fibthresh && cb.abs() > best {
        best = cb.abs();
        pick = 2;
    }
    let (v, c) = match pick {
        1 => (&r[0..3], ca),
        2 => (&r[4..7], cb),
        _ => return None,
    };
    let v = [v[0], v[1], v[2]];
    Some((if c < 0.0 { v.map(|x| -x) } else { v }, best))
}

/// A new path at seed voxel `seed_vox` (flat index), half `half` of streamline `k`; `None`
/// direction when no stick at the seed is above the threshold (the path has ended).
pub fn start(samples: &[f32], index: &[i32], roi: &[u32], p: &Params, seed_vox: usize, k: u32, half: u32, id: u32) -> (Path, bool) {
    let n = dims(p);
    let v = seed_vox as i32;
    let i = [v % n[0], (v / n[0]) % n[1], v / (n[0] * n[1])];
    let pos = i.map(|x| x as f32);
    let samp = (k % p.nsamp as u32) as i32;
    let r = record(samples, index, p, samp, i);
    // The first direction: the stick of larger fraction (stick 1 on a tie), as probtrackx
    // starts on fibre 1 (bedpostx orders f1 >= f2 on average, not per sample).
    let pick = if r[3] > p.fibthresh && r[3] >= r[7] {
        Some(&r[0..3])
    } else if r[7] > p.fibthresh {
        Some(&r[4..7])
    } else {
        None
    };
    let flags = roi[seed_vox];
    let mut d = pick.map(|s| [s[0], s[1], s[2]]).unwrap_or([0.0; 3]);
    if half == 1 {
        d = d.map(|x| -x);
    }
    let path = Path { p: pos, d, steps: 0, flags, vox: v, id, rkey: path_key(p.key, seed_vox as u32, k, half), samp };
    let live = pick.is_some() && flags & EXCLUDE == 0 && p.max_steps > 0;
    (path, live)
}

/// One step; false when the path has ended (it then holds its final steps and flags).
/// `visit` is called with each voxel the path enters when counting.
pub fn step(s: &mut Path, samples: &[f32], index: &[i32], roi: &[u32], p: &Params, visit: &impl Fn(usize)) -> bool {
    if s.steps >= p.max_steps {
        return false;
    }
    let mut u = [0.5f32; 3];
    if p.jitter != 0 {
        let mut h = hash(s.rkey ^ hash(s.steps as u32));
        for uc in u.iter_mut() {
            *uc = u01(h);
            h = hash(h);
        }
    }
    let r = record(samples, index, p, s.samp, sample_voxel(s.p, u, p));
    let Some((nd, c)) = choose(r, s.d, p.fibthresh) else { return false };
    if c < p.min_cos {
        return false;
    }
    let h = [p.hx, p.hy, p.hz];
    let q = [s.p[0] + h[0] * nd[0], s.p[1] + h[1] * nd[1], s.p[2] + h[2] * nd[2]];
    let Some(w) = nearest(q, p) else { return false };
    let word = roi[w];
    if word & INSIDE == 0 {
        return false;
    }
    s.flags |= word;
    s.p = q;
    s.d = nd;
    s.steps += 1;
    if word & EXCLUDE != 0 {
        return false;
    }
    if w as i32 != s.vox {
        s.vox = w as i32;
        if p.count != 0 {
            visit(w);
        }
    }
    s.steps < p.max_steps
}
