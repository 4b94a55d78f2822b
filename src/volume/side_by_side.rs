//! Several volumes of one grid, written by neuroport (gzip members that say their lengths,
//! `gz_members`), read side by side: a task takes member j of every file, inflates them
//! together a few thousand voxels at a time, and hands each stretch of all the files' values to
//! the caller, which turns them into its own output there. No file is held whole: probtrack's
//! six bedpost sample volumes (0.93 GB on the issue-7 volume) went into fresh memory and were
//! read again to make the records, ~0.5 s of a 0.7 s command on the H100 host (round 32). Side
//! by side the pass is bound by the inflating alone: the command's peak memory fell by 0.8 GB,
//! its time stayed within the spread (round 33, docs/performance.md).
//!
//! Files written by the same neuroport command for one grid and sample count have the same
//! member layout (`nifti_write::member_size` depends on the length alone); anything else (other
//! writers' one-member files, layouts that differ, any header this reader does not take as
//! plain) is answered "not side by side", and the caller reads the files one by one, whose
//! reader also says what is wrong with a bad file.

use super::gz_members::{self, HEADER};
use super::nifti_decode::{whole_voxels, Decode, Joint, Whole};
use super::Geometry;
use anyhow::{anyhow, Result};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Voxels inflated from each file per stretch: the stretch's bytes of every file (6 x 64 KiB for
/// probtrack) and the caller's output for it stay in a core's cache.
const STRETCH: usize = 16 << 10;
/// Voxels a task of uncompressed files (as many as a member of neuroport's .nii.gz holds).
const PLAIN: usize = 1 << 20;

/// One member: where it starts in the file, its compressed length, its raw length.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Member {
    at: u64,
    len: usize,
    raw: usize,
}

struct Input {
    path: PathBuf,
    file: File,
    /// The gzip members; None for an uncompressed .nii.
    members: Option<Vec<Member>>,
    decode: Decode,
}

/// Files of one grid and one member layout, ready to be read side by side.
pub struct SideBySide {
    inputs: Vec<Input>,
    geom: Geometry,
    dims: [usize; 4],
    /// Where the voxels start in the raw stream (vox_offset).
    vox: usize,
}

/// A member's compressed bytes, inflated a stretch at a time, its CRC-32 and length checked at
/// the end.
struct Inflating<'a> {
    body: &'a [u8],
    d: flate2::Decompress,
    crc: flate2::Crc,
    raw: usize,
    trailer: (u32, u32),
}

impl<'a> Inflating<'a> {
    fn new(m: &'a [u8]) -> std::io::Result<Self> {
        let (len, raw) = gz_members::sizes(m).filter(|&(len, _)| len == m.len()).ok_or_else(|| bad("bad gzip member header"))?;
        let t = &m[len - 8..];
        let trailer = (u32::from_le_bytes([t[0], t[1], t[2], t[3]]), u32::from_le_bytes([t[4], t[5], t[6], t[7]]));
        Ok(Inflating { body: &m[HEADER..len - 8], d: flate2::Decompress::new(false), crc: flate2::Crc::new(), raw, trailer })
    }

    /// The next `out.len()` raw bytes.
    fn exact(&mut self, out: &mut [u8]) -> std::io::Result<()> {
        let mut got = 0;
        while got < out.len() {
            let (i, o) = (self.d.total_in(), self.d.total_out());
            let status = self
                .d
                .decompress(&self.body[i as usize..], &mut out[got..], flate2::FlushDecompress::None)
                .map_err(|e| bad(&format!("corrupt deflate data ({e})")))?;
            let n = (self.d.total_out() - o) as usize;
            got += n;
            if got < out.len() && (status == flate2::Status::StreamEnd || (n == 0 && self.d.total_in() == i)) {
                return Err(bad("corrupt gzip member (it ends before its length)"));
            }
        }
        self.crc.update(out);
        Ok(())
    }

    /// Inflates what is left (bytes past the voxels), then checks the stream's end, length and
    /// CRC-32.
    fn finish(mut self, scratch: &mut [u8]) -> std::io::Result<()> {
        let left = self.raw.checked_sub(self.d.total_out() as usize).ok_or_else(|| bad("corrupt gzip member (length mismatch)"))?;
        let mut k = 0;
        while k < left {
            let n = (left - k).min(scratch.len());
            self.exact(&mut scratch[..n])?;
            k += n;
        }
        // The end-of-stream code (and nothing more) remains.
        let i = self.d.total_in() as usize;
        let status = self.d.decompress(&self.body[i..], &mut scratch[..1], flate2::FlushDecompress::Finish).map_err(|e| bad(&format!("corrupt deflate data ({e})")))?;
        if status != flate2::Status::StreamEnd || self.d.total_out() as usize != self.raw || self.raw as u32 != self.trailer.1 || self.crc.sum() != self.trailer.0 {
            return Err(bad("corrupt gzip member (length or CRC mismatch)"));
        }
        Ok(())
    }
}

/// Where a task's bytes of one file come from: a member inflated, or the file itself.
enum Source<'a> {
    Gz(Inflating<'a>),
    Plain { file: &'a File, at: u64 },
}

impl Source<'_> {
    fn exact(&mut self, out: &mut [u8]) -> std::io::Result<()> {
        match self {
            Source::Gz(z) => z.exact(out),
            Source::Plain { file, at } => {
                read_at(file, out, *at)?;
                *at += out.len() as u64;
                Ok(())
            }
        }
    }

    fn finish(self, scratch: &mut [u8]) -> std::io::Result<()> {
        match self {
            Source::Gz(z) => z.finish(scratch),
            Source::Plain { .. } => Ok(()),
        }
    }
}

fn bad(what: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_string())
}

/// The members of `file` (None where one does not say its lengths, or the file ends inside one).
fn walk(file: &File) -> Option<Vec<Member>> {
    let size = file.metadata().ok()?.len();
    let (mut at, mut out) = (0u64, Vec::new());
    while at < size {
        let mut h = [0u8; HEADER];
        read_at(file, &mut h, at).ok()?;
        let (len, raw) = gz_members::sizes(&h)?;
        if at + len as u64 > size {
            return None;
        }
        out.push(Member { at, len, raw });
        at += len as u64;
    }
    Some(out)
}

fn read_member(file: &File, m: Member, buf: &mut Vec<u8>) -> std::io::Result<()> {
    buf.resize(m.len, 0);
    read_at(file, buf, m.at)
}

/// Reads at an offset without moving a shared cursor, so tasks read one file at once. Where the
/// platform cannot, no file opens side by side (`walk` fails) and the caller reads them whole.
fn read_at(file: &File, buf: &mut [u8], at: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    return std::os::unix::fs::FileExt::read_exact_at(file, buf, at);
    #[cfg(not(unix))]
    {
        let _ = (file, buf, at);
        Err(std::io::ErrorKind::Unsupported.into())
    }
}

/// The header and layout of one file, or None where it is not plainly ours (see the module).
fn open_one(path: &Path) -> Option<(Input, Geometry, [usize; 4], usize)> {
    let file = File::open(path).ok()?;
    let size = file.metadata().ok()?.len();
    let mut magic = [0u8; 2];
    read_at(&file, &mut magic, 0).ok()?;
    let members = if magic == [0x1f, 0x8b] { Some(walk(&file)?) } else { None };
    // The header: our writer's first member (or as many as hold it), or the file's start.
    let (mut buf, mut head) = (Vec::new(), Vec::new());
    match &members {
        Some(ms) => {
            for &m in ms {
                if head.len() >= 348 {
                    break;
                }
                read_member(&file, m, &mut buf).ok()?;
                head.extend(gz_members::inflate(&buf, Vec::new()).ok()?);
            }
        }
        None => {
            head.resize(348, 0);
            read_at(&file, &mut head, 0).ok()?;
        }
    }
    let head: &[u8; 348] = head.get(..348)?.try_into().ok()?;
    let (h, dims, elem, geom) = super::nifti_io::parse_header(head, &path.display().to_string(), members.is_some()).ok()?;
    if &h.magic != b"n+1\0" || !(h.vox_offset >= 352.0 && h.vox_offset.is_finite()) {
        return None;
    }
    let decode = Decode::of(&h, elem).ok()?;
    let vox = h.vox_offset as usize;
    let want = dims.iter().product::<usize>() * decode.bytes;
    let raw = members.as_ref().map_or(size as usize, |ms| ms.iter().map(|m| m.raw).sum());
    if raw < vox + want {
        return None;
    }
    Some((Input { path: path.to_path_buf(), file, members, decode }, geom, dims, vox))
}

/// A task's buffers, kept for the next task.
#[derive(Default)]
struct Scratch {
    comp: Vec<Vec<u8>>,
    raw: Vec<Vec<u8>>,
    vals: Vec<Vec<f32>>,
}

impl SideBySide {
    /// The files, when every one is neuroport's .nii.gz or an uncompressed .nii, and all share
    /// the first's grid (x, y, z, volumes), voxel size in bytes, data offset and member layout
    /// (or are all uncompressed); else None.
    pub fn open(paths: &[PathBuf]) -> Option<SideBySide> {
        let mut inputs = Vec::new();
        let mut first: Option<(Geometry, [usize; 4], usize)> = None;
        for p in paths {
            let (input, geom, dims, vox) = open_one(p)?;
            if let Some((_, d0, v0)) = &first {
                let i0: &Input = &inputs[0];
                let layout = |i: &Input| i.members.as_ref().map(|ms| ms.iter().map(|m| m.raw).collect::<Vec<_>>());
                if *d0 != dims || *v0 != vox || i0.decode.bytes != input.decode.bytes || layout(i0) != layout(&input) {
                    return None;
                }
            } else {
                first = Some((geom, dims, vox));
            }
            inputs.push(input);
        }
        let (geom, dims, vox) = first?;
        Some(SideBySide { inputs, geom, dims, vox })
    }

    /// The first file's geometry (the others hold the same grid).
    pub fn geom(&self) -> &Geometry {
        &self.geom
    }

    /// x, y, z and volumes.
    pub fn dims(&self) -> [usize; 4] {
        self.dims
    }

    /// Reads every file once: `fill(values, out)` is called for disjoint stretches of voxels
    /// (flat index, volumes last) covering the grid once, `values[f]` holding file f's voxels of
    /// the stretch (as float32, scaled as its header asks, as `read_nifti` gives them) and `out`
    /// the stretch's `per` elements a voxel of `out`. An I/O error or a corrupt member names
    /// its file.
    pub fn read_into<T: Send>(&self, out: &mut [T], per: usize, fill: impl Fn(&[&[f32]], &mut [T]) + Sync) -> Result<()> {
        assert_eq!(out.len(), self.dims.iter().product::<usize>() * per, "{per} outputs a voxel");
        let whole = Whole(out.as_mut_ptr(), out.len());
        // SAFETY: `read_each` hands out each voxel once, so the ranges are disjoint.
        self.read_each(|v, vals| fill(vals, unsafe { whole.range(v * per, (v + vals[0].len()) * per) }))
    }

    /// Reads every file once, as [`read_into`](Self::read_into), handing `fill(v, values)` each
    /// stretch's first voxel (flat index, volumes last) and values instead of an output: for a
    /// caller that keeps only some voxels (probtrack's box around its mask).
    pub fn read_each(&self, fill: impl Fn(usize, &[&[f32]]) + Sync) -> Result<()> {
        let b = self.inputs[0].decode.bytes;
        let want = self.dims.iter().product::<usize>() * b;
        let vox = self.vox;
        let nf = self.inputs.len();
        // The tasks: each member holding voxel bytes, as its index and its data bytes [s, e)
        // (`starts[j]`: where member j starts in the raw stream); uncompressed files in pieces
        // of whole voxels.
        let mut starts = Vec::new();
        let tasks: Vec<(Option<usize>, usize, usize)> = match &self.inputs[0].members {
            Some(ms) => {
                let mut at = 0;
                for m in ms {
                    starts.push(at);
                    at += m.raw;
                }
                starts
                    .iter()
                    .zip(ms)
                    .enumerate()
                    .filter_map(|(j, (&rs, m))| {
                        let (s, e) = (rs.max(vox), (rs + m.raw).min(vox + want));
                        (s < e).then_some((Some(j), s - vox, e - vox))
                    })
                    .collect()
            }
            None => (0..want).step_by(PLAIN * b).map(|s| (None, s, (s + PLAIN * b).min(want))).collect(),
        };
        let pool = Mutex::new(Vec::<Scratch>::new());
        let edges = Mutex::new(vec![Vec::<(usize, Vec<u8>)>::new(); nf]);
        tasks.par_iter().try_for_each(|&(j, s, e)| -> Result<()> {
            let mut sc = lock(&pool).pop().unwrap_or_default();
            sc.comp.resize_with(nf, Vec::new);
            sc.raw.resize_with(nf, Vec::new);
            sc.vals.resize_with(nf, Vec::new);
            let (fe, le) = whole_voxels(s, e, b);
            // The voxels' bytes start `skip` bytes into the member, after a part of the voxel
            // before (`head` bytes), and end with `tail` bytes of the next voxel.
            let skip = j.map_or(0, |j| (vox + s) - starts[j]);
            let head = (fe * b).min(e) - s;
            let tail = if fe < le { e - le * b } else { 0 };
            let Scratch { comp, raw, vals } = &mut sc;
            let named = |f: usize, e: std::io::Error| {
                let i = &self.inputs[f];
                anyhow!("{}: {}", i.path.display(), super::nifti_io::describe_io(e, i.members.is_some(), "data"))
            };
            let mut inf = Vec::with_capacity(nf);
            for ((f, input), c) in self.inputs.iter().enumerate().zip(comp.iter_mut()) {
                inf.push(match (j, &input.members) {
                    (Some(j), Some(ms)) => {
                        read_member(&input.file, ms[j], c).map_err(|e| named(f, e))?;
                        Source::Gz(Inflating::new(c).map_err(|e| named(f, e))?)
                    }
                    _ => Source::Plain { file: &input.file, at: (vox + s) as u64 },
                });
            }
            let mut mine_edges = vec![Vec::new(); nf];
            for (f, z) in inf.iter_mut().enumerate() {
                let r = &mut raw[f];
                r.resize((skip + head).max(tail).max(STRETCH * b), 0);
                z.exact(&mut r[..skip + head]).map_err(|e| named(f, e))?;
                if head > 0 {
                    mine_edges[f].push((s, r[skip..skip + head].to_vec()));
                }
            }
            let mut v = fe;
            while v < le {
                let n = (le - v).min(STRETCH);
                for (f, z) in inf.iter_mut().enumerate() {
                    let r = &mut raw[f][..n * b];
                    z.exact(r).map_err(|e| named(f, e))?;
                    vals[f].resize(n, 0.0);
                    self.inputs[f].decode.convert(r, &mut vals[f], &|x| x as f32);
                }
                let vals: Vec<&[f32]> = vals.iter().map(|x| &x[..n]).collect();
                // Members hold disjoint byte ranges, so their whole voxels are disjoint, each
                // handed out by this task alone (the straddling voxels after every task).
                fill(v, &vals);
                v += n;
            }
            for (f, mut z) in inf.into_iter().enumerate() {
                let r = &mut raw[f];
                if tail > 0 {
                    z.exact(&mut r[..tail]).map_err(|e| named(f, e))?;
                    mine_edges[f].push((le * b, r[..tail].to_vec()));
                }
                z.finish(r).map_err(|e| named(f, e))?;
            }
            lock(&pool).push(sc);
            let mut all = lock(&edges);
            for (f, m) in mine_edges.into_iter().enumerate() {
                all[f].extend(m);
            }
            Ok(())
        })?;
        self.straddling(edges.into_inner().unwrap_or_else(|e| e.into_inner()), &fill);
        Ok(())
    }

    /// The voxels whose bytes two members share: put together from each file's pieces, then
    /// filled one at a time.
    fn straddling(&self, edges: Vec<Vec<(usize, Vec<u8>)>>, fill: &impl Fn(usize, &[&[f32]])) {
        let nf = self.inputs.len();
        let mut vals: BTreeMap<usize, Vec<f32>> = BTreeMap::new();
        for (f, mut pieces) in edges.into_iter().enumerate() {
            pieces.sort_unstable_by_key(|p| p.0);
            let d = &self.inputs[f].decode;
            let mut joint = Joint::default();
            for (off, bytes) in pieces {
                joint.add(d, off, &bytes, &mut |v, x| {
                    let mut one = [0.0f32];
                    d.convert(x, &mut one, &|x| x as f32);
                    vals.entry(v).or_insert_with(|| vec![f32::NAN; nf])[f] = one[0];
                });
            }
        }
        for (v, x) in vals {
            let each: Vec<&[f32]> = x.iter().map(std::slice::from_ref).collect();
            fill(v, &each);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::volume::{read_nifti, write_nifti};
    use rand::Rng;

    fn random_volume(rng: &mut impl Rng, n: usize) -> Vec<f32> {
        (0..n)
            .map(|_| match rng.random_range(0..8) {
                0 => 0.0,
                1 => -0.0,
                2 => f32::NAN,
                3 => f32::from_bits(rng.random()),
                _ => rng.random_range(-4.0f32..4.0),
            })
            .collect()
    }

    /// Every file's values, one voxel after another (per = the file count).
    fn side_by_side(paths: &[PathBuf]) -> Option<Result<Vec<f32>>> {
        let files = SideBySide::open(paths)?;
        let n: usize = files.dims().iter().product();
        let nf = paths.len();
        let mut out = vec![f32::from_bits(0x7fc0_dead); n * nf];
        Some(files.read_into(&mut out, nf, |vals, out| {
            for (i, o) in out.chunks_mut(nf).enumerate() {
                for (f, x) in o.iter_mut().enumerate() {
                    *x = vals[f][i];
                }
            }
        }).map(|()| out))
    }

    /// The values given side by side are each file's own, bit for bit, with members that cut
    /// voxels (odd sizes, a member shorter than a voxel's stretch and one longer than several),
    /// on fresh random values with NaN, -0.0 and any bit pattern among them; the output is
    /// poisoned first, so a voxel left unfilled fails.
    #[test]
    fn values_side_by_side_are_each_files_own() {
        let (seed, mut rng) = crate::synth::fresh_rng();
        let dir = tempfile::tempdir().unwrap();
        for (dims, nvol, block) in [([17usize, 9, 5], 3usize, 1001usize), ([40, 33, 7], 6, 150_003), ([5, 1, 1], 1, 7)] {
            let geom = Geometry::synthetic(dims, [2.0, 2.0, 2.0]);
            let n = geom.nvox() * nvol;
            let vols: Vec<Vec<f32>> = (0..3).map(|_| random_volume(&mut rng, n)).collect();
            let paths: Vec<PathBuf> = (0..3).map(|f| dir.path().join(format!("v{f}.nii.gz"))).collect();
            for (p, v) in paths.iter().zip(&vols) {
                crate::volume::nifti_write::write_nifti_members(p, &geom, nvol, v, block).unwrap();
            }
            // The same volumes uncompressed (.nii), side by side too.
            let plain: Vec<PathBuf> = (0..3).map(|f| dir.path().join(format!("v{f}.nii"))).collect();
            for (p, v) in plain.iter().zip(&vols) {
                write_nifti(p, &geom, nvol, v).unwrap();
            }
            for files in [&paths, &plain] {
                let got = side_by_side(files).expect("our files open side by side").unwrap();
                for (f, p) in files.iter().enumerate() {
                    let want = read_nifti(p).unwrap();
                    for (i, w) in want.as_flat().iter().enumerate() {
                        assert_eq!(got[i * 3 + f].to_bits(), w.to_bits(), "seed {seed}: {dims:?} block {block}: {} voxel {i}", p.display());
                    }
                }
            }
        }
    }

    /// Files that are not side by side: another writer's one gzip member, members of another
    /// size, another grid, a truncated file.
    #[test]
    fn other_files_are_not_side_by_side() {
        let (_, mut rng) = crate::synth::fresh_rng();
        let dir = tempfile::tempdir().unwrap();
        let geom = Geometry::synthetic([30, 20, 10], [1.0, 1.0, 1.0]);
        let v = random_volume(&mut rng, geom.nvox() * 2);
        let p = |s: &str| dir.path().join(s);
        let member = |name: &str, block: usize| crate::volume::nifti_write::write_nifti_members(&p(name), &geom, 2, &v, block).unwrap();
        member("a.nii.gz", 5000);
        member("b.nii.gz", 5000);
        member("c.nii.gz", 6000);
        assert!(SideBySide::open(&[p("a.nii.gz"), p("b.nii.gz")]).is_some());
        assert!(SideBySide::open(&[p("a.nii.gz"), p("c.nii.gz")]).is_none());
        write_nifti(&p("plain.nii"), &geom, 2, &v).unwrap();
        let mut gz = flate2::write::GzEncoder::new(std::fs::File::create(p("one.nii.gz")).unwrap(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, &std::fs::read(p("plain.nii")).unwrap()).unwrap();
        gz.finish().unwrap();
        assert!(SideBySide::open(&[p("a.nii.gz"), p("one.nii.gz")]).is_none());
        assert!(SideBySide::open(&[p("plain.nii")]).is_some());
        assert!(SideBySide::open(&[p("a.nii.gz"), p("plain.nii")]).is_none(), "a .nii.gz beside a .nii");
        let other = Geometry::synthetic([20, 30, 10], [1.0, 1.0, 1.0]);
        crate::volume::nifti_write::write_nifti_members(&p("d.nii.gz"), &other, 2, &v, 5000).unwrap();
        assert!(SideBySide::open(&[p("a.nii.gz"), p("d.nii.gz")]).is_none());
        let bytes = std::fs::read(p("b.nii.gz")).unwrap();
        std::fs::write(p("cut.nii.gz"), &bytes[..bytes.len() - 100]).unwrap();
        assert!(SideBySide::open(&[p("a.nii.gz"), p("cut.nii.gz")]).is_none());
    }

    /// A corrupt member in the middle of a file is an error naming that file, whichever byte
    /// of its deflate data is changed.
    #[test]
    fn a_corrupt_member_names_its_file() {
        let (seed, mut rng) = crate::synth::fresh_rng();
        let dir = tempfile::tempdir().unwrap();
        let geom = Geometry::synthetic([30, 20, 10], [1.0, 1.0, 1.0]);
        let v = random_volume(&mut rng, geom.nvox() * 2);
        let paths: Vec<PathBuf> = ["a", "b"].iter().map(|s| dir.path().join(format!("{s}.nii.gz"))).collect();
        for p in &paths {
            crate::volume::nifti_write::write_nifti_members(p, &geom, 2, &v, 5000).unwrap();
        }
        let mut bytes = std::fs::read(&paths[1]).unwrap();
        // A byte inside a data member's deflate data or its trailer, not a member header.
        let files = SideBySide::open(&paths).unwrap();
        let ms = files.inputs[1].members.as_ref().expect("gzip members");
        let m = ms[rng.random_range(1..ms.len())];
        let at = m.at as usize + rng.random_range(HEADER..m.len);
        bytes[at] ^= 1 << rng.random_range(0..8);
        std::fs::write(&paths[1], &bytes).unwrap();
        let e = side_by_side(&paths).expect("the headers are intact").expect_err("a corrupt member");
        assert!(e.to_string().contains("b.nii.gz") && e.to_string().contains("corrupt"), "seed {seed}: byte {at}: {e}");
    }
}
