//! Raw deflate (RFC 1951) for the float32 volumes neuroport writes, at several times the speed of
//! zlib's or miniz's level 1 and about their size.
//!
//! Measured on bedpost's samples (near-random mantissas beside a background of zeros), the time of
//! a level-1 compressor is in its entropy coder, not its match search: zlib-rs with no matches at
//! all (`Z_HUFFMAN_ONLY`) was slower than its level 1. So this encoder codes only two things, as
//! cheaply as it can: literals, with a dynamic Huffman code per block of [`BLOCK`] input bytes,
//! written four to a 64-bit store; and repeats of the 4 bytes before (a match at distance 4, a
//! multiple of 4 bytes long), which is what the background's zeros, a mask's ones and any constant
//! region are. A block that would come out larger than the bytes themselves is stored.
//!
//! The output depends on the input alone (the blocks and matches on offsets within it).

// The format's tables, shared with the decoder beside it.
use super::inflate_marked::{CL_ORDER, LEN_BASE, LEN_EXTRA};

/// Input bytes per deflate block: each gets its own Huffman code, so a block of background costs
/// little beside a block of tissue; the header (~100 bytes) is < 0.1 % of a block of noise.
pub const BLOCK: usize = 128 << 10;

/// The longest repeat coded as one match: 256 bytes (length code 284 with extra bits 29), the
/// longest multiple of 4 deflate allows.
const MAX_RUN: usize = 256;

const END: usize = 256;
const LIT_CODES: usize = 286;
/// The distance code used, 3 (distance 4), and a second one (0) so that the distance code is
/// complete: [0 -> "0", 3 -> "1"].
const DIST_LENS: [u8; 4] = [1, 0, 0, 1];

/// (symbol, extra bits, their value) of a match of `len` bytes (3..=258).
fn length_code(len: usize) -> (usize, u32, u64) {
    let i = LEN_BASE.partition_point(|&b| b as usize <= len) - 1;
    (257 + i, LEN_EXTRA[i] as u32, (len - LEN_BASE[i] as usize) as u64)
}

/// A repeat of the 4 bytes before: `len` bytes (a multiple of 4, at most [`MAX_RUN`]) from `at`.
#[derive(Clone, Copy, Debug)]
struct Run {
    at: usize,
    len: usize,
}

/// `data` deflated as one raw stream, its last block final.
pub fn deflate(data: &[u8]) -> Vec<u8> {
    let mut w = Bits::new(bound(data.len()));
    let mut runs = Vec::new();
    if data.is_empty() {
        stored(&mut w, &[], true);
    }
    let nblocks = data.len().div_ceil(BLOCK);
    for (b, s) in (0..data.len()).step_by(BLOCK).enumerate() {
        let e = (s + BLOCK).min(data.len());
        runs.clear();
        find_runs(data, s, e, &mut runs);
        block(&mut w, data, s, e, &runs, b + 1 == nblocks);
    }
    w.finish()
}

/// The most bytes [`deflate`] writes for `n`: every block stored (a block is coded only where
/// that is smaller), and the 8 bytes a flush stores past the end.
fn bound(n: usize) -> usize {
    let per_block = BLOCK.div_ceil(0xffff) * 5;
    n + n.div_ceil(BLOCK).max(1) * per_block + 16
}

/// The repeats in `data[s..e]`, looked for every 4 bytes from `s` (a multiple of 4), each at
/// least 4 bytes and at most [`MAX_RUN`]. Float data compare a float with the one before whatever
/// the stream's alignment to the floats, since a constant float repeats every 4 bytes.
fn find_runs(data: &[u8], s: usize, e: usize, runs: &mut Vec<Run>) {
    let from = s.max(4) - 4;
    let (words, _) = data[from..e].as_chunks::<4>();
    let mut k = 1;
    while k < words.len() {
        if words[k] != words[k - 1] {
            k += 1;
            continue;
        }
        let at = k;
        k += 1;
        while k < words.len() && k - at < MAX_RUN / 4 && words[k] == words[k - 1] {
            k += 1;
        }
        runs.push(Run { at: from + 4 * at, len: 4 * (k - at) });
    }
}

/// One block of `data[s..e]` with its `runs`: dynamic Huffman, or stored where that is smaller.
fn block(w: &mut Bits, data: &[u8], s: usize, e: usize, runs: &[Run], last: bool) {
    let mut hist = Histogram::new();
    let mut freq = [0u32; LIT_CODES];
    let mut from = s;
    for r in runs {
        hist.add(&data[from..r.at]);
        freq[length_code(r.len).0] += 1;
        from = r.at + r.len;
    }
    hist.add(&data[from..e]);
    hist.into(&mut freq);
    freq[END] = 1;
    let lens = code_lengths(&freq, 15);
    let nlit = 257.max(lens.iter().rposition(|&l| l > 0).map_or(0, |p| p + 1));
    let header = Header::new(&lens[..nlit]);
    let extra: u64 = runs.iter().map(|r| length_code(r.len).1 as u64 + 1).sum();
    let coded: u64 = freq.iter().zip(&lens).map(|(&f, &l)| f as u64 * l as u64).sum();
    let dynamic_bits = 3 + header.bits() + coded + extra;
    let stored_bits = ((e - s).div_ceil(0xffff).max(1) * 5 + (e - s)) as u64 * 8 + 7;
    if stored_bits <= dynamic_bits {
        stored(w, &data[s..e], last);
        return;
    }
    w.put(last as u64 | 2 << 1, 3);
    header.write(w);
    let codes = canonical(&lens);
    let lit = Literals::new(&codes, &lens);
    let mut from = s;
    for r in runs {
        lit.write(w, &data[from..r.at]);
        let (sym, n, v) = length_code(r.len);
        w.put(codes[sym] as u64, lens[sym] as u32);
        w.put(v, n);
        w.put(1, 1); // distance code 3: distance 4, no extra bits
        w.flush();
        from = r.at + r.len;
    }
    lit.write(w, &data[from..e]);
    w.put(codes[END] as u64, lens[END] as u32);
    w.flush();
}

/// Byte counts, in four tables so that repeated bytes do not wait on each other's increments.
struct Histogram([[u32; 256]; 4]);

impl Histogram {
    fn new() -> Histogram {
        Histogram([[0; 256]; 4])
    }
    fn add(&mut self, d: &[u8]) {
        let t = &mut self.0;
        let (q, rest) = d.as_chunks::<4>();
        for c in q {
            t[0][c[0] as usize] += 1;
            t[1][c[1] as usize] += 1;
            t[2][c[2] as usize] += 1;
            t[3][c[3] as usize] += 1;
        }
        for &b in rest {
            t[0][b as usize] += 1;
        }
    }
    fn into(self, freq: &mut [u32; LIT_CODES]) {
        let t = &self.0;
        for (i, f) in freq.iter_mut().take(256).enumerate() {
            *f += t[0][i] + t[1][i] + t[2][i] + t[3][i];
        }
    }
}

/// A block's literal code, written four literals to a flush where its longest literal allows
/// (7 bits left over + 4 x 14 < 64), else two.
struct Literals {
    /// Each byte's code (bits 0-15) and length (16-23): one load a literal.
    table: [u32; 256],
    four: bool,
}

impl Literals {
    fn new(codes: &[u16], lens: &[u8]) -> Literals {
        Literals { table: std::array::from_fn(|b| codes[b] as u32 | (lens[b] as u32) << 16), four: lens[..256].iter().all(|&l| l <= 14) }
    }
    #[inline(always)]
    fn put(&self, w: &mut Bits, b: u8) {
        let e = self.table[b as usize];
        w.put((e & 0xffff) as u64, e >> 16);
    }
    fn write(&self, w: &mut Bits, d: &[u8]) {
        let (q, rest) = d.as_chunks::<4>();
        if self.four {
            for c in q {
                self.put(w, c[0]);
                self.put(w, c[1]);
                self.put(w, c[2]);
                self.put(w, c[3]);
                w.flush();
            }
        } else {
            for c in q {
                self.put(w, c[0]);
                self.put(w, c[1]);
                w.flush();
                self.put(w, c[2]);
                self.put(w, c[3]);
                w.flush();
            }
        }
        for &b in rest {
            self.put(w, b);
            w.flush();
        }
    }
}

/// Stored blocks of at most 65,535 bytes (one, empty, for no bytes).
fn stored(w: &mut Bits, d: &[u8], last: bool) {
    let n = d.len().div_ceil(0xffff).max(1);
    for (k, part) in d.chunks(0xffff).chain((d.is_empty()).then_some(&d[..0])).enumerate() {
        w.put((last && k + 1 == n) as u64, 3);
        w.align();
        let len = part.len() as u16;
        w.bytes(&len.to_le_bytes());
        w.bytes(&(!len).to_le_bytes());
        w.bytes(part);
    }
}

/// The dynamic block's header: HLIT, HDIST, HCLEN, the code-length code, then the literal and
/// distance code lengths run-length coded with it (16: repeat the last 3-6 times, 17: 3-10 zeros,
/// 18: 11-138 zeros).
struct Header {
    nlit: usize,
    cl_lens: Vec<u8>,
    ncl: usize,
    /// (symbol, extra bits, their value)
    seq: Vec<(u8, u32, u64)>,
}

impl Header {
    fn new(lit_lens: &[u8]) -> Header {
        let all: Vec<u8> = lit_lens.iter().chain(&DIST_LENS).copied().collect();
        let mut seq = Vec::new();
        let mut i = 0;
        while i < all.len() {
            let l = all[i];
            let run = all[i..].iter().take_while(|&&x| x == l).count();
            let mut left = run;
            if l == 0 {
                while left >= 11 {
                    let n = left.min(138);
                    seq.push((18, 7, (n - 11) as u64));
                    left -= n;
                }
                if left >= 3 {
                    seq.push((17, 3, (left - 3) as u64));
                    left = 0;
                }
            } else {
                seq.push((l, 0, 0));
                left -= 1;
                while left >= 3 {
                    let n = left.min(6);
                    seq.push((16, 2, (n - 3) as u64));
                    left -= n;
                }
            }
            seq.extend(std::iter::repeat_n((l, 0, 0), left));
            i += run;
        }
        let mut freq = [0u32; 19];
        seq.iter().for_each(|&(s, _, _)| freq[s as usize] += 1);
        let cl_lens = code_lengths(&freq, 7);
        let ncl = 4.max(CL_ORDER.iter().rposition(|&s| cl_lens[s] > 0).map_or(0, |p| p + 1));
        Header { nlit: lit_lens.len(), cl_lens, ncl, seq }
    }
    fn bits(&self) -> u64 {
        14 + 3 * self.ncl as u64 + self.seq.iter().map(|&(s, n, _)| self.cl_lens[s as usize] as u64 + n as u64).sum::<u64>()
    }
    fn write(&self, w: &mut Bits) {
        w.put((self.nlit - 257) as u64, 5);
        w.put((DIST_LENS.len() - 1) as u64, 5);
        w.put((self.ncl - 4) as u64, 4);
        for &s in &CL_ORDER[..self.ncl] {
            w.put(self.cl_lens[s] as u64, 3);
            w.flush();
        }
        let codes = canonical(&self.cl_lens);
        for &(s, n, v) in &self.seq {
            w.put(codes[s as usize] as u64, self.cl_lens[s as usize] as u32);
            w.put(v, n);
            w.flush();
        }
    }
}

/// Huffman code lengths for `freq`, none over `limit`, the code complete (as zlib's inflate
/// requires): two symbols at least, a second of length 1 added where only one occurs.
fn code_lengths(freq: &[u32], limit: u8) -> Vec<u8> {
    let n = freq.len();
    let mut lens = vec![0u8; n];
    let used: Vec<usize> = (0..n).filter(|&s| freq[s] > 0).collect();
    if used.len() < 2 {
        let a = used.first().copied().unwrap_or(0);
        lens[a] = 1;
        lens[if a == 0 { 1 } else { 0 }] = 1;
        return lens;
    }
    // Huffman's merging of the two lightest, with parents kept to read the depths.
    let mut parent = vec![usize::MAX; 2 * used.len()];
    let mut heap: std::collections::BinaryHeap<std::cmp::Reverse<(u64, usize)>> =
        used.iter().enumerate().map(|(k, &s)| std::cmp::Reverse((freq[s] as u64, k))).collect();
    let mut next = used.len();
    while heap.len() > 1 {
        let std::cmp::Reverse((fa, a)) = heap.pop().unwrap();
        let std::cmp::Reverse((fb, b)) = heap.pop().unwrap();
        parent[a] = next;
        parent[b] = next;
        heap.push(std::cmp::Reverse((fa + fb, next)));
        next += 1;
    }
    for (k, &s) in used.iter().enumerate() {
        let (mut d, mut p) = (0u32, k);
        while parent[p] != usize::MAX {
            d += 1;
            p = parent[p];
        }
        lens[s] = d.min(limit as u32) as u8;
    }
    // Clamped depths can over-fill the code: lengthen the longest codes under the limit (the
    // rarest first) until it fits, then shorten the commonest where the space left allows.
    let cap = 1u64 << limit;
    let weight = |l: u8| 1u64 << (limit - l);
    let mut kraft: u64 = used.iter().map(|&s| weight(lens[s])).sum();
    while kraft > cap {
        let s = *used.iter().filter(|&&s| lens[s] < limit).max_by_key(|&&s| (lens[s], std::cmp::Reverse(freq[s]))).unwrap();
        kraft -= weight(lens[s] + 1);
        lens[s] += 1;
    }
    while kraft < cap {
        let s = *used.iter().filter(|&&s| lens[s] > 1 && weight(lens[s]) <= cap - kraft).max_by_key(|&&s| (freq[s], lens[s])).unwrap();
        kraft += weight(lens[s]);
        lens[s] -= 1;
    }
    lens
}

/// Canonical codes for `lens` (RFC 1951 §3.2.2), bit-reversed for an LSB-first writer.
fn canonical(lens: &[u8]) -> Vec<u16> {
    let mut count = [0u16; 16];
    lens.iter().for_each(|&l| count[l as usize] += 1);
    count[0] = 0;
    let mut next = [0u16; 16];
    let mut code = 0u16;
    for b in 1..16 {
        code = (code + count[b - 1]) << 1;
        next[b] = code;
    }
    lens.iter()
        .map(|&l| {
            if l == 0 {
                return 0;
            }
            let c = next[l as usize];
            next[l as usize] += 1;
            c.reverse_bits() >> (16 - l)
        })
        .collect()
}

/// An LSB-first bit writer: up to 64 bits gathered, then stored 8 bytes at a time, the position
/// advanced by the whole bytes. Its buffer is sized once for the most a stream can take
/// ([`bound`]); callers keep under 57 bits between flushes.
struct Bits {
    out: Vec<u8>,
    pos: usize,
    acc: u64,
    n: u32,
}

impl Bits {
    fn new(size: usize) -> Bits {
        Bits { out: vec![0; size], pos: 0, acc: 0, n: 0 }
    }
    #[inline(always)]
    fn put(&mut self, v: u64, n: u32) {
        debug_assert!(self.n + n <= 64 && (n == 64 || v >> n == 0));
        self.acc |= v << self.n;
        self.n += n;
    }
    #[inline(always)]
    fn flush(&mut self) {
        self.out[self.pos..self.pos + 8].copy_from_slice(&self.acc.to_le_bytes());
        let whole = self.n / 8;
        self.pos += whole as usize;
        self.acc = self.acc.checked_shr(whole * 8).unwrap_or(0);
        self.n -= whole * 8;
    }
    /// Pads to a byte boundary (stored blocks).
    fn align(&mut self) {
        self.n = self.n.div_ceil(8) * 8;
        self.flush();
    }
    /// Whole bytes, at a byte boundary.
    fn bytes(&mut self, d: &[u8]) {
        debug_assert_eq!(self.n, 0);
        self.out[self.pos..self.pos + d.len()].copy_from_slice(d);
        self.pos += d.len();
    }
    fn finish(mut self) -> Vec<u8> {
        self.align();
        self.out.truncate(self.pos);
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    fn inflate(d: &[u8], raw: usize) -> Vec<u8> {
        let mut z = flate2::Decompress::new(false);
        let mut out = Vec::with_capacity(raw + 1);
        let status = z.decompress_vec(d, &mut out, flate2::FlushDecompress::Finish).expect("zlib inflates it");
        assert_eq!(status, flate2::Status::StreamEnd);
        assert_eq!(z.total_in() as usize, d.len(), "the stream ends where its last block does");
        out
    }

    /// Float noise beside zeros and constants, as bedpost's samples, a mask and a background are.
    fn volume_like(n: usize, rng: &mut impl Rng) -> Vec<u8> {
        let mut v: Vec<f32> = Vec::with_capacity(n);
        while v.len() < n {
            let len = rng.random_range(1..5000).min(n - v.len());
            match rng.random_range(0..4) {
                0 => v.extend(std::iter::repeat_n(0.0, len)),
                1 => v.extend(std::iter::repeat_n(rng.random_range(-2.0f32..2.0), len)),
                _ => v.extend((0..len).map(|_| rng.random_range(0.0f32..std::f32::consts::PI))),
            }
        }
        bytemuck::cast_slice(&v).to_vec()
    }

    #[test]
    fn inflates_to_the_input() {
        let (seed, mut rng) = crate::synth::fresh_rng();
        let mut inputs: Vec<Vec<u8>> = (0..9).map(|n| (0..n).map(|_| rng.random()).collect()).collect();
        inputs.push(vec![0; 1 << 20]);
        inputs.push(vec![7; 3 * BLOCK + 5]);
        inputs.push((0..BLOCK + 3).map(|_| rng.random()).collect()); // uniform bytes: stored
        inputs.push(bytemuck::cast_slice(&[1.0f32; 70_000]).to_vec());
        for _ in 0..6 {
            let n = rng.random_range(1..600_000);
            let mut v = volume_like(n, &mut rng);
            v.truncate(v.len() - rng.random_range(0..4)); // not a whole number of floats
            let skip = rng.random_range(0..4); // nor aligned to them
            inputs.push(v[skip..].to_vec());
        }
        for d in &inputs {
            let z = deflate(d);
            assert_eq!(inflate(&z, d.len()), *d, "{} bytes, seed {seed}", d.len());
            // Each block at most its bytes stored: 5 bytes a stored block of 65,535 or fewer.
            let bound = d.len() + d.chunks(BLOCK).map(|b| b.len().div_ceil(0xffff) * 5).sum::<usize>().max(5) + 1;
            assert!(z.len() <= bound, "{} bytes deflated to {}, over the stored bound {bound} (seed {seed})", d.len(), z.len());
        }
    }

    /// What the encoder is for: the repeats make a background nearly free and the Huffman code
    /// takes the float's exponent bytes below 8 bits, within 5 % of miniz's level 1.
    #[test]
    fn about_level_one_in_size() {
        let (_, mut rng) = crate::synth::fresh_rng();
        assert!(deflate(&vec![0; 1 << 20]).len() < 1 << 12);
        let d = volume_like(1 << 20, &mut rng);
        let ours = deflate(&d).len();
        let miniz = miniz_oxide::deflate::compress_to_vec(&d, 1).len();
        assert!(ours < d.len() * 9 / 10 && ours * 100 <= miniz * 105, "ours {ours}, miniz level 1 {miniz}, raw {}", d.len());
    }

    /// Counts shaped as Fibonacci numbers give a Huffman tree 20+ deep: the lengths are cut to 15
    /// (7 for the code-length code) and the code stays complete, and the data inflate.
    #[test]
    fn deep_codes_are_limited_and_complete() {
        let mut fib = vec![1u32, 1];
        while fib.len() < 30 {
            fib.push(fib[fib.len() - 1] + fib[fib.len() - 2]);
        }
        for limit in [7u8, 15] {
            let lens = code_lengths(&fib, limit);
            assert!(lens.iter().all(|&l| (1..=limit).contains(&l)), "{lens:?}");
            let kraft: f64 = lens.iter().map(|&l| 0.5f64.powi(l as i32)).sum();
            assert_eq!(kraft, 1.0, "{lens:?}");
        }
        let mut d = Vec::new();
        for (b, &f) in fib.iter().take(26).enumerate() {
            d.extend(std::iter::repeat_n((b * 9) as u8, f as usize));
        }
        let (_, mut rng) = crate::synth::fresh_rng();
        for i in (1..d.len()).rev() {
            d.swap(i, rng.random_range(0..=i)); // no runs: every byte a literal
        }
        assert_eq!(inflate(&deflate(&d), d.len()), d);
    }

    /// The one-symbol and two-symbol cases of the code.
    #[test]
    fn small_alphabets() {
        assert_eq!(code_lengths(&[0, 0, 5, 0], 15), vec![1, 0, 1, 0]);
        assert_eq!(code_lengths(&[3, 0, 0], 7), vec![1, 1, 0]);
        assert_eq!(code_lengths(&[0, 0, 0], 7), vec![1, 1, 0]);
        assert_eq!(code_lengths(&[9, 1], 15), vec![1, 1]);
    }

    /// One core's rate against miniz level 1 on a `.nii.gz` (`NEUROPORT_DEFLATE_BENCH=file.nii.gz
    /// cargo test --release --lib deflate_rate -- --ignored --nocapture`).
    #[test]
    #[ignore]
    fn deflate_rate() {
        use std::io::Read;
        let Ok(path) = std::env::var("NEUROPORT_DEFLATE_BENCH") else { return };
        let mut raw = Vec::new();
        flate2::read::MultiGzDecoder::new(std::fs::File::open(&path).unwrap()).read_to_end(&mut raw).unwrap();
        let chunks: Vec<&[u8]> = raw.chunks(4 << 20).collect();
        let time = |f: &dyn Fn(&[u8]) -> usize| {
            let mut best = f64::MAX;
            let mut size = 0;
            for _ in 0..3 {
                let t = std::time::Instant::now();
                size = chunks.iter().map(|c| f(c)).sum();
                best = best.min(t.elapsed().as_secs_f64());
            }
            (raw.len() as f64 / best / 1e6, size as f64 / raw.len() as f64)
        };
        let (r, s) = time(&|c| deflate(c).len());
        println!("deflate_floats  {r:6.0} MB/s, {s:.3} of the size");
        let (r, s) = time(&|c| miniz_oxide::deflate::compress_to_vec(c, 1).len());
        println!("miniz level 1   {r:6.0} MB/s, {s:.3} of the size");
    }
}
