//! One gzip member inflated in pieces on every core (the method of rapidgzip: Knespel and Brunst,
//! HPDC 2023). dcm2niix, FSL, nibabel and MRtrix write a `.nii.gz` as one member, which one core
//! inflates at ~440 MB/s: a 415 MB DWI took ~1 s to read on the 16-core H100 host, 85-90 % of
//! `dti`, against 0.12 s for our own multi-member copy (`gz_members`; round 29).
//!
//! Deflate blocks do not say where they start, so a piece's start is found by trial: the first
//! bit offset past its nominal byte where a dynamic-Huffman block header parses with every code
//! valid and complete, and which then inflates. A piece is inflated without the 32 KB of output
//! before it, in one pass that marks each byte copied from before it with its index there
//! (`inflate_marked`); those bytes are filled in once the output before is known, each piece's
//! last 32 KB in order (the next piece's window), the rest side by side. Nothing found by trial
//! is trusted: every piece must end where the next begins, the last where the member does, and
//! the whole must match the member's CRC-32 and length; any failure, early or at the end, is a
//! [`SplitFailed`] error, on which the caller reads the file again on one core.

use super::inflate_marked::{fill, inflate_marked, peek, Stop, Tables, WINDOW};
use flate2::Crc;
use rayon::prelude::*;
use std::collections::VecDeque;
use std::io::{self, Read};

/// Compressed bytes per piece.
pub const PIECE: usize = 1 << 20;
/// Output a candidate start must inflate (its bytes from before it marked) to be taken.
const TRIAL: usize = 16 << 10;
/// The most output per compressed byte a piece may give: a wave of pieces is held at once,
/// where the one-core read holds only what the header asks for, so a member that inflates
/// more than this (deflate allows ~1032:1: a volume mostly of zeros, or a hostile file) is
/// left to one core. NIfTI floats inflate ~2-4x.
const MAX_RATIO: usize = 32;

/// Split reads that passed their checks, in this process (for tests and `bench nifti`).
static SPLIT_READS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// How many one-member gzip files this process has read in pieces (every check passed).
pub fn split_reads() -> usize {
    SPLIT_READS.load(std::sync::atomic::Ordering::Relaxed)
}

/// The split did not hold (a start not found, a piece that does not inflate, or the whole
/// against the member's CRC-32 or length): read the file again on one core.
#[derive(Debug)]
pub struct SplitFailed(pub &'static str);

impl std::fmt::Display for SplitFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "gzip pieces: {}", self.0)
    }
}

impl std::error::Error for SplitFailed {}

fn failed(why: &'static str) -> io::Error {
    io::Error::other(SplitFailed(why))
}

/// Whether `e` says a split read failed (and the file should be read on one core).
pub fn is_split_failure(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|x| x.is::<SplitFailed>())
}

/// The length of a gzip member's header at the start of `d`, or None.
pub fn header_len(d: &[u8]) -> Option<usize> {
    if d.len() < 18 || d[..3] != [0x1f, 0x8b, 8] || d[3] & 0xe0 != 0 {
        return None;
    }
    let flg = d[3];
    let mut p = 10;
    if flg & 4 != 0 {
        p += 2 + u16::from_le_bytes([*d.get(p)?, *d.get(p + 1)?]) as usize;
    }
    for bit in [8u8, 16] {
        if flg & bit != 0 {
            p += d.get(p..)?.iter().position(|&b| b == 0)? + 1;
        }
    }
    if flg & 2 != 0 {
        p += 2;
    }
    (p + 8 <= d.len()).then_some(p)
}

/// Whether bit `p` of `d` may start a non-final dynamic-Huffman block: its first 17 bits and
/// a complete code-length code, from two looks at the input (about one bit offset in 2,400 of
/// noise passes; the search tries every offset, and [`starts_at`] then decodes from it).
fn may_start(d: &[u8], p: usize) -> bool {
    let w = peek(d, p);
    // BFINAL 0, BTYPE 2; at most 286 literal/length and 30 distance symbols.
    if w & 7 != 4 || (w >> 3) & 31 > 29 || (w >> 8) & 31 > 29 {
        return false;
    }
    let ncode = ((w >> 13) & 15) as usize + 4;
    let lens = peek(d, p + 17);
    // The code-length code's Kraft sum, in 1/128ths: complete at exactly one.
    let kraft: u32 = (0..ncode).map(|i| ((lens >> (3 * i)) & 7) as u32).filter(|&l| l != 0).map(|l| 128 >> l).sum();
    kraft == 128
}

/// Whether a piece can start at bit `p`: a non-final dynamic-Huffman block whose header holds
/// by zlib's rules (every code valid, the code-length code complete, the others complete or a
/// single code, an end-of-block code) and which inflates [`TRIAL`] bytes (or to `end`, or to the
/// member's end), its bytes from before it marked. `out` and `t` are scratch.
fn starts_at(d: &[u8], p: usize, end: usize, out: &mut Vec<u16>, t: &mut Tables) -> bool {
    if !may_start(d, p) {
        return false;
    }
    out.clear();
    inflate_marked(d, p, end.min(p + 8 * (TRIAL + 1024)), TRIAL, out, t).is_ok() && out.len() >= 64
}

/// The first bit in [from, to) where a piece can start ([`starts_at`]).
fn find_start(d: &[u8], from: usize, to: usize, end: usize) -> Option<usize> {
    let (mut out, mut t) = (Vec::with_capacity(TRIAL + 1024), Tables::default());
    (from..to).find(|&p| starts_at(d, p, end, &mut out, &mut t))
}

/// One piece inflated, its bytes from the window before it marked; whether the member ended in
/// it, and its input bits unused after its last block.
struct Piece {
    marked: Vec<u16>,
    ended: bool,
    unused: usize,
}

/// Bits [p, e) inflated (`take` gives buffers).
fn piece(d: &[u8], p: usize, e: usize, take: &(impl Fn() -> Vec<u16> + Sync)) -> io::Result<Piece> {
    let mut marked = take();
    marked.clear();
    let limit = MAX_RATIO * (e - p) / 8 + (1 << 16);
    let (ended, unused) = match inflate_marked(d, p, e, limit, &mut marked, &mut Tables::default()) {
        Ok(Stop::Ended(q)) => (true, e - q),
        Ok(Stop::AtEnd) => (false, 0),
        Ok(Stop::Full) => return Err(failed("a piece inflates past its bound")),
        Ok(Stop::OutOfInput) => return Err(failed("a piece does not end where the member's blocks do")),
        Err(_) => return Err(failed("a piece does not inflate")),
    };
    Ok(Piece { marked, ended, unused })
}

/// The starts of a wave's pieces after its first (which starts at bit `from`): one found past
/// each nominal byte a [`PIECE`] apart (a start not found merges two pieces), the last piece
/// at least half a piece long; and whether the wave reaches the member's end (bit `end`).
fn starts(d: &[u8], from: usize, end: usize, wave: usize) -> io::Result<(Vec<usize>, bool)> {
    let sb = from / 8;
    let nominal: Vec<usize> = (1..=wave).map(|j| sb + j * PIECE).take_while(|&o| 8 * (o + PIECE / 2) < end).collect();
    let found: Vec<usize> = nominal.par_iter().filter_map(|&o| find_start(d, 8 * o, (8 * (o + PIECE)).min(end), end)).collect();
    if found.len() < nominal.len() / 2 || found.first().is_some_and(|&f| f <= from) {
        return Err(failed("too few piece starts found"));
    }
    Ok((found, nominal.len() < wave))
}

/// A one-member gzip file inflated a wave of pieces at a time on the current rayon pool, read
/// in order; the next wave is made while this one is read. Any failure is a [`SplitFailed`]
/// error.
pub struct SplitMember {
    source: Source,
    queue: VecDeque<Vec<u8>>,
    cur: Vec<u8>,
    pos: usize,
    finished: bool,
    spare: Spare,
}

/// Where the waves come from: a task on the pool one wave ahead of the reader (a read's
/// conversion of one wave beside the next wave's inflate: round 30), or, on a pool of one
/// thread (where a task behind a blocked reader might never run), made on demand.
enum Source {
    Ahead(std::sync::mpsc::Receiver<io::Result<Wave>>),
    Here(Box<Waves>),
}

/// One wave's bytes, in order, and whether it ended the member (its checks passed).
type Wave = (Vec<Vec<u8>>, bool);

/// Buffers of bytes read, for the next pieces (fresh pages cost the kernel's zeroing: a
/// quarter of a read's time before they were kept; round 29).
type Spare = std::sync::Arc<std::sync::Mutex<Vec<Vec<u8>>>>;

/// What makes the waves: the compressed member and where its inflate stands.
struct Waves {
    data: Vec<u8>,
    /// The next piece's first bit; the deflate data's end (the trailer's first byte).
    next: usize,
    end: usize,
    /// The last 32 KB of output so far (empty before the first piece).
    window: Vec<u8>,
    crc: Crc,
    /// Pieces a wave: one per thread (two per thread read no faster on the H100 host, 0.49-0.53
    /// against 0.51-0.53 s, and held 110 MB more; round 29).
    wave: usize,
    spare: Spare,
    spare_marked: std::sync::Mutex<Vec<Vec<u16>>>,
    /// The next wave's piece starts, searched ahead.
    ahead: Option<io::Result<(Vec<usize>, bool)>>,
}

/// A buffer from `pool`, or a new one.
fn take_from<T>(pool: &std::sync::Mutex<Vec<Vec<T>>>) -> Vec<T> {
    pool.lock().unwrap_or_else(|e| e.into_inner()).pop().unwrap_or_default()
}

/// The last [`WINDOW`] bytes of `window` followed by `more`, in `window`.
fn slide(window: &mut Vec<u8>, more: &[u8]) {
    window.extend_from_slice(&more[more.len().saturating_sub(WINDOW)..]);
    let cut = window.len().saturating_sub(WINDOW);
    window.drain(..cut);
}

impl SplitMember {
    /// Over the whole file `data`, if it is a gzip member worth splitting (at least two
    /// pieces); else `data` back. The first wave starts at once.
    pub fn new(data: Vec<u8>) -> Result<SplitMember, Vec<u8>> {
        let Some(h) = header_len(&data) else { return Err(data) };
        let end = data.len() - 8;
        if end < h + 2 * PIECE {
            return Err(data);
        }
        let spare = Spare::default();
        let threads = rayon::current_num_threads();
        let mut waves = Box::new(Waves { next: 8 * h, end: 8 * end, data, window: Vec::new(), crc: Crc::new(), wave: threads.max(2), spare: spare.clone(), spare_marked: Default::default(), ahead: None });
        let source = if threads < 2 {
            Source::Here(waves)
        } else {
            // A rendezvous: the task makes wave k + 1 while wave k is read, no further ahead.
            let (tx, rx) = std::sync::mpsc::sync_channel(0);
            rayon::spawn(move || loop {
                // A panic here (a bug) would abort the process from a spawned task: a split
                // failure instead, and the file read on one core.
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| waves.make())).unwrap_or_else(|_| Err(failed("a wave panicked")));
                let more = matches!(r, Ok((_, false)));
                if tx.send(r).is_err() || !more {
                    break;
                }
            });
            Source::Ahead(rx)
        };
        Ok(SplitMember { source, queue: VecDeque::new(), cur: Vec::new(), pos: 0, finished: false, spare })
    }

    /// The next wave, queued.
    fn fill(&mut self) -> io::Result<()> {
        let (outs, last) = match &mut self.source {
            Source::Ahead(rx) => rx.recv().map_err(|_| failed("the waves' task ended early"))??,
            Source::Here(w) => w.make()?,
        };
        self.queue.extend(outs);
        self.finished = last;
        Ok(())
    }
}

impl Waves {
    /// The next wave's pieces inflated and filled in from their windows; on the member's last,
    /// the whole checked against its CRC-32 and length.
    fn make(&mut self) -> io::Result<Wave> {
        let d = &self.data;
        let t0 = std::time::Instant::now();
        // This wave's piece starts: found beside the last wave's inflate, or now.
        let (found, last) = match self.ahead.take() {
            Some(a) => a?,
            None => starts(d, self.next, self.end, self.wave)?,
        };
        let mut bounds = vec![self.next];
        bounds.extend(&found);
        if last {
            bounds.push(self.end);
        }
        let t1 = std::time::Instant::now();
        let spare_marked = &self.spare_marked;
        let take = || take_from(spare_marked);
        // The next wave's starts are searched beside this wave's inflate (the search needs only
        // the compressed bytes).
        let next = (!last).then(|| *bounds.last().expect("a piece start"));
        let (end, wave) = (self.end, self.wave);
        let (pieces, ahead): (Vec<io::Result<Piece>>, _) = rayon::join(
            || bounds.par_windows(2).map(|b| piece(d, b[0], b[1], &take)).collect(),
            || next.map(|b| starts(d, b, end, wave)),
        );
        self.ahead = ahead;
        let pieces = pieces.into_iter().collect::<io::Result<Vec<Piece>>>()?;
        let t2 = std::time::Instant::now();
        let n = pieces.len();
        // In order, each piece's window (the 32 KB of output before it: its markers point
        // there, and copies of them keep their index) and, from its last 32 KB filled in, the
        // next piece's; then every piece filled in side by side.
        let mut windows = Vec::with_capacity(n);
        let mut tail = Vec::with_capacity(WINDOW);
        for (j, p) in pieces.iter().enumerate() {
            let is_last = last && j + 1 == n;
            // Every piece but the member's last stops where its input does; the last ends the
            // member, leaving fewer than 8 bits (padding) before the trailer.
            if p.ended != is_last || p.unused >= 8 {
                return Err(failed("a piece does not end where the member's blocks do"));
            }
            windows.push(self.window.clone());
            fill(&p.marked[p.marked.len().saturating_sub(WINDOW)..], &self.window, &mut tail).map_err(|_| failed("a piece refers to output before the member"))?;
            slide(&mut self.window, &tail);
        }
        let spare = &*self.spare;
        let filled: Vec<(Vec<u8>, Crc, usize)> = pieces.par_iter().zip(&windows).map(|(p, w)| {
            let mut out = take_from(spare);
            let marks = fill(&p.marked, w, &mut out).map_err(|_| failed("a piece refers to output before the member"))?;
            let mut c = Crc::new();
            c.update(&out);
            Ok((out, c, marks))
        }).collect::<io::Result<_>>()?;
        spare_marked.lock().unwrap_or_else(|e| e.into_inner()).extend(pieces.into_iter().map(|p| p.marked));
        let marked: usize = filled.iter().map(|f| f.2).sum();
        let mut outs = Vec::with_capacity(n);
        for (out, c, _) in filled {
            self.crc.combine(&c);
            outs.push(out);
        }
        if std::env::var_os("NEUROPORT_GZ_TRACE").is_some() {
            let raw: usize = outs.iter().map(|o| o.len()).sum();
            eprintln!("gz wave: {} pieces, {raw} bytes ({marked} from windows): search {:.1} ms, inflate {:.1} ms, the rest {:.1} ms", n, (t1 - t0).as_secs_f64() * 1e3, (t2 - t1).as_secs_f64() * 1e3, t2.elapsed().as_secs_f64() * 1e3);
        }
        if last {
            let t = &d[d.len() - 8..];
            let (crc, size) = (u32::from_le_bytes([t[0], t[1], t[2], t[3]]), u32::from_le_bytes([t[4], t[5], t[6], t[7]]));
            if crc != self.crc.sum() || size != self.crc.amount() {
                return Err(failed("the pieces do not match the member's CRC-32 and length"));
            }
            SPLIT_READS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        } else {
            self.next = *bounds.last().expect("a piece start");
        }
        Ok((outs, last))
    }
}

impl Read for SplitMember {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.pos == self.cur.len() {
            match self.queue.pop_front() {
                Some(next) => {
                    let done = std::mem::replace(&mut self.cur, next);
                    self.pos = 0;
                    let mut spare = self.spare.lock().unwrap_or_else(|e| e.into_inner());
                    if spare.len() < 4 * rayon::current_num_threads().max(2) {
                        spare.push(done);
                    }
                }
                None if self.finished => return Ok(0),
                None => self.fill()?,
            }
        }
        let n = buf.len().min(self.cur.len() - self.pos);
        buf[..n].copy_from_slice(&self.cur[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::{write::GzEncoder, Compression};
    use rand::{Rng, SeedableRng};
    use std::io::Write;

    fn gz(raw: &[u8], level: u32) -> Vec<u8> {
        let mut e = GzEncoder::new(Vec::new(), Compression::new(level));
        e.write_all(raw).unwrap();
        e.finish().unwrap()
    }

    /// Data like a DWI's: runs of zeros (background) between noisy float32 voxels, and
    /// repeated stretches (copies reaching across pieces).
    fn volume_like(n: usize, seed: u64) -> Vec<u8> {
        let mut r = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut v = Vec::with_capacity(n);
        while v.len() < n {
            match r.random_range(0..3) {
                0 => v.extend(std::iter::repeat_n(0u8, r.random_range(1000..200_000))),
                1 => {
                    for _ in 0..r.random_range(10_000..200_000) {
                        v.extend_from_slice(&(r.random::<f32>() * 1000.0).round().to_le_bytes());
                    }
                }
                _ if v.len() > 70_000 => {
                    let (len, back) = (r.random_range(100..60_000), r.random_range(1..32_768));
                    let s = v.len() - back - len.min(v.len() - back);
                    let copy: Vec<u8> = v[s..s + len.min(v.len() - back - s)].to_vec();
                    v.extend(copy);
                }
                _ => {}
            }
        }
        v.truncate(n);
        v
    }

    fn read_split(file: Vec<u8>) -> io::Result<Vec<u8>> {
        let mut s = SplitMember::new(file).map_err(|_| io::Error::other("not split"))?;
        let mut out = Vec::new();
        s.read_to_end(&mut out)?;
        Ok(out)
    }

    /// Levels 2-9 (dynamic-Huffman blocks), several sizes and pools (one thread: the waves made
    /// on demand, not ahead): the pieces give the stream's bytes exactly. Level 1 here (zlib-rs's
    /// quick mode: fixed-Huffman blocks, whose 3-bit headers cannot be told from data) and level
    /// 0 (stored blocks) give no starts to find: a split failure, never wrong bytes.
    #[test]
    fn pieces_give_the_member_exactly() {
        for (seed, n, level, threads) in [(1u64, 9 << 20, 6u32, 4usize), (2, 23 << 20, 2, 3), (3, 17 << 20, 9, 8), (4, 12 << 20, 4, 2), (10, 6 << 20, 6, 1), (8, 12 << 20, 1, 4), (9, 5 << 20, 0, 4)] {
            let raw = volume_like(n, seed);
            let file = gz(&raw, level);
            eprintln!("seed {seed}: {} raw bytes, {} compressed, {threads} threads", raw.len(), file.len());
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            match pool.install(|| read_split(file.clone())) {
                Ok(out) => assert!(out == raw, "seed {seed} level {level}: {} bytes against {}", out.len(), raw.len()),
                Err(e) => assert!(level <= 1 && is_split_failure(&e), "seed {seed} level {level}: {e}"),
            }
        }
    }

    /// A damaged member (a flipped bit in its middle, a wrong CRC) is a split failure, never
    /// wrong bytes.
    #[test]
    fn damage_is_a_split_failure() {
        let raw = volume_like(9 << 20, 5);
        let file = gz(&raw, 6);
        let mut crc = file.clone();
        let n = crc.len();
        crc[n - 8] ^= 1;
        assert!(read_split(crc).is_err_and(|e| is_split_failure(&e)));
        for at in [file.len() / 3, file.len() / 2, 2 * file.len() / 3] {
            let mut bad = file.clone();
            bad[at] ^= 0x10;
            match read_split(bad) {
                Ok(out) => panic!("a flipped bit at {at} read back as {} bytes", out.len()),
                Err(e) => assert!(is_split_failure(&e), "{e}"),
            }
        }
    }

    /// A piece that inflates past the bound (zeros: ~1000:1) is a split failure; the same
    /// bytes at a ratio within it inflate.
    #[test]
    fn pieces_past_the_bound_fail() {
        let take = || Vec::new();
        let zeros = gz(&vec![0u8; 64 << 20], 6);
        let h = header_len(&zeros).unwrap();
        let e = piece(&zeros, 8 * h, 8 * (zeros.len() - 8), &take).map(|_| ()).unwrap_err();
        assert!(is_split_failure(&e), "{e}");
        let mixed = volume_like(4 << 20, 10);
        let file = gz(&mixed, 6);
        let h = header_len(&file).unwrap();
        let p = piece(&file, 8 * h, 8 * (file.len() - 8), &take).unwrap();
        let mut out = Vec::new();
        fill(&p.marked, &[], &mut out).unwrap();
        assert!(p.ended && out == mixed);
    }

    /// Too small to split, or not gzip: no split offered.
    #[test]
    fn small_or_not_gzip_is_not_split() {
        assert!(SplitMember::new(gz(&volume_like(1 << 20, 6), 6)).is_err());
        assert!(SplitMember::new(vec![0u8; 5 << 20]).is_err());
    }

    /// The start check accepts the real block starts of a stream and few others.
    #[test]
    fn block_starts_found_by_trial_are_real() {
        let raw = volume_like(3 << 20, 7);
        let file = gz(&raw, 6);
        let h = header_len(&file).unwrap();
        let end = 8 * (file.len() - 8);
        let (mut out, mut t) = (Vec::new(), Tables::default());
        // The first block of the member starts at its first bit.
        assert!(starts_at(&file, 8 * h, end, &mut out, &mut t));
        // The next 200,000 bit offsets hold at most a real block start or two; noise (8 M
        // offsets) none.
        let hits = (8 * h + 1..8 * h + 200_000).filter(|&p| starts_at(&file, p, end, &mut out, &mut t)).count();
        assert!(hits <= 2, "{hits} starts in 200,000 bits");
        let noise: Vec<u8> = volume_like(1 << 20, 8).iter().enumerate().map(|(i, &b)| b ^ (i as u8).wrapping_mul(151)).collect();
        let false_hits = (0..8 * noise.len() - 64).filter(|&p| starts_at(&noise, p, 8 * noise.len(), &mut out, &mut t)).count();
        assert_eq!(false_hits, 0, "starts in 8 M bits of noise");
        // The quick check lets few offsets through to the decoder (3,551 of these 8.4 M: one in
        // ~2,400).
        let passed = (0..8 * noise.len() - 64).filter(|&p| may_start(&noise, p)).count();
        assert!(passed < 8 * noise.len() / 1000, "{passed} offsets passed the quick check");
    }
}

