//! Raw deflate inflated without the 32 KB of output before it, in one pass: a byte copied from
//! before the start is written as a marker, [`MARK`] + its index in that window, for the caller
//! to fill in once the window is known (rapidgzip's marker decoding: Knespel and Brunst, HPDC
//! 2023). `gz_split` inflates a one-member gzip file's pieces with it; round 29 had zlib-rs
//! inflate each piece twice, against two made-up windows, to find the same bytes.
//!
//! Written for that one use: table-driven (an 11-bit first level for literals and lengths, 8
//! bits for distances, a fixed-size second level under each), one 64-bit look at the input per
//! match or run of literals, bounds kept by checks, not `unsafe`. Everything is checked that zlib checks (codes
//! over-subscribed or incomplete, symbols past the alphabets, distances past the output and its
//! window, stored lengths), so a start found by trial that is not one fails here.

/// Output values below this are the bytes themselves; `MARK + i` is byte i of the 32 KB window
/// before the start.
pub const MARK: u16 = 256;
pub const WINDOW: usize = 32 << 10;

const LIT_BITS: u32 = 11;
const DIST_BITS: u32 = 8;
const MAX_BITS: u32 = 15;

// A table entry: bits 0-3 the code's length (first and second level together), 4-7 the extra
// bits after it, 8-10 its kind, 16-30 its value (the literal, the length or distance base, or a
// second level's offset), bit 31 set for a literal (one test of the sign in the hot loop). Zero
// is BAD, so a slot no code reaches fails.
const BAD: u32 = 0;
const LIT: u32 = 1;
const LEN: u32 = 2;
const END: u32 = 3;
const SUB: u32 = 4;

fn kind(e: u32) -> u32 {
    (e >> 8) & 7
}

fn is_literal(e: u32) -> bool {
    (e as i32) < 0
}

pub(super) const LEN_BASE: [u16; 29] = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258];
pub(super) const LEN_EXTRA: [u8; 29] = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0];
const DIST_BASE: [u16; 30] = [1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577];
const DIST_EXTRA: [u8; 30] = [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13];
/// The order a dynamic block sends its code-length code's lengths in (RFC 1951 §3.2.7).
pub(super) const CL_ORDER: [usize; 19] = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15];

/// Why a stretch does not inflate (the caller only needs to know that it does not).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bad(pub &'static str);

/// How an inflate stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The final block ended, at this bit.
    Ended(usize),
    /// A block ended exactly at the stretch's end.
    AtEnd,
    /// The output reached the limit asked for (checked between looks at the input and between
    /// blocks, so up to a match, or a stored block, past it).
    Full,
    /// The input ran out inside a block.
    OutOfInput,
}

/// Deflate's codes as lookup tables, kept between blocks and calls (no allocation a block).
#[derive(Default)]
pub struct Tables {
    lit: Vec<u32>,
    dist: Vec<u32>,
    fixed_lit: Vec<u32>,
    fixed_dist: Vec<u32>,
    lengths: Vec<u32>,
}

/// The input as bits, least significant first (deflate's order).
struct Bits<'a> {
    d: &'a [u8],
    /// The next bit to take.
    p: usize,
}

/// At least 57 bits of `d` from bit `p` (zeros past its end).
#[inline(always)]
pub fn peek(d: &[u8], p: usize) -> u64 {
    let q = p >> 3;
    let w = match d.get(q..q + 8) {
        Some(b) => u64::from_le_bytes(b.try_into().expect("8 bytes")),
        None => d.get(q..).unwrap_or(&[]).iter().rev().fold(0u64, |w, &b| w << 8 | b as u64),
    };
    w >> (p & 7)
}

impl Bits<'_> {
    #[inline(always)]
    fn peek(&self) -> u64 {
        peek(self.d, self.p)
    }

    fn take(&mut self, n: u32) -> u32 {
        let v = (self.peek() & ((1u64 << n) - 1)) as u32;
        self.p += n as usize;
        v
    }
}

/// Fills `t` with the canonical Huffman code of `lens` under a first level of `first` bits;
/// `entry(symbol)` gives a symbol's entry without its length. Over-subscribed codes fail;
/// incomplete ones only where zlib allows them (a single code of one bit: `incomplete_ok`).
fn build(t: &mut Vec<u32>, lens: &[u8], first: u32, incomplete_ok: bool, entry: impl Fn(usize) -> u32) -> Result<(), Bad> {
    let mut count = [0u32; 16];
    for &l in lens {
        count[l as usize] += 1;
    }
    count[0] = 0;
    let mut left = 1i32;
    for &c in &count[1..] {
        left = 2 * left - c as i32;
        if left < 0 {
            return Err(Bad("an over-subscribed code"));
        }
    }
    let used: u32 = count.iter().sum();
    if left > 0 && !(incomplete_ok && used == 1 && count[1] == 1) && used > 0 {
        return Err(Bad("an incomplete code"));
    }
    let mut next = [0u32; 16];
    for l in 1..16 {
        next[l] = (next[l - 1] + count[l - 1]) << 1;
    }
    t.clear();
    t.resize(1 << first, BAD);
    let sub_bits = MAX_BITS - first;
    for (s, &l) in lens.iter().enumerate() {
        if l == 0 {
            continue;
        }
        let l = l as u32;
        let code = next[l as usize];
        next[l as usize] += 1;
        let rev = code.reverse_bits() >> (32 - l);
        let e = entry(s) | l;
        if l <= first {
            for i in (rev as usize..1 << first).step_by(1 << l) {
                t[i] = e;
            }
        } else {
            let head = (rev & ((1 << first) - 1)) as usize;
            if kind(t[head]) != SUB {
                let off = t.len();
                t.resize(off + (1 << sub_bits), BAD);
                t[head] = SUB << 8 | (off as u32) << 16;
            }
            let off = (t[head] >> 16) as usize;
            for i in ((rev >> first) as usize..1 << sub_bits).step_by(1 << (l - first)) {
                t[off + i] = e;
            }
        }
    }
    Ok(())
}

fn lit_entry(s: usize) -> u32 {
    match s {
        0..=255 => 1 << 31 | LIT << 8 | (s as u32) << 16,
        256 => END << 8,
        257..=285 => LEN << 8 | (LEN_EXTRA[s - 257] as u32) << 4 | (LEN_BASE[s - 257] as u32) << 16,
        _ => BAD,
    }
}

/// A distance's entry is of kind LEN too: a base and its extra bits.
fn dist_entry(s: usize) -> u32 {
    match s {
        0..=29 => (DIST_EXTRA[s] as u32) << 4 | (DIST_BASE[s] as u32) << 16 | LEN << 8,
        _ => BAD,
    }
}

/// The entry for the code at the front of `b` (a second level's where the first points to one).
#[inline(always)]
fn lookup(t: &[u32], b: u64, first: u32) -> u32 {
    let e = t[(b & ((1 << first) - 1)) as usize];
    if kind(e) != SUB {
        return e;
    }
    t[(e >> 16) as usize + ((b >> first) & ((1 << (MAX_BITS - first)) - 1)) as usize]
}

impl Tables {
    /// A dynamic block's header (after its three bits): the two codes into `lit` and `dist`.
    fn dynamic(&mut self, b: &mut Bits) -> Result<(), Bad> {
        let (nlen, ndist, ncode) = (b.take(5) as usize + 257, b.take(5) as usize + 1, b.take(4) as usize + 4);
        if nlen > 286 || ndist > 30 {
            return Err(Bad("too many length or distance symbols"));
        }
        let mut cl = [0u8; 19];
        for &o in &CL_ORDER[..ncode] {
            cl[o] = b.take(3) as u8;
        }
        build(&mut self.lengths, &cl, 7, false, |s| LIT << 8 | (s as u32) << 16)?;
        let code = &self.lengths;
        let mut lens = [0u8; 316];
        let mut i = 0;
        while i < nlen + ndist {
            let e = code[(b.peek() & 127) as usize];
            if kind(e) == BAD {
                return Err(Bad("a code length's code not in its code"));
            }
            b.p += (e & 15) as usize;
            let sym = (e >> 16) as usize;
            let (value, times) = match sym {
                0..=15 => (sym as u8, 1),
                16 if i > 0 => (lens[i - 1], 3 + b.take(2) as usize),
                16 => return Err(Bad("a repeat with nothing before it")),
                17 => (0, 3 + b.take(3) as usize),
                _ => (0, 11 + b.take(7) as usize),
            };
            if i + times > nlen + ndist {
                return Err(Bad("code lengths past their count"));
            }
            lens[i..i + times].fill(value);
            i += times;
        }
        if lens[256] == 0 {
            return Err(Bad("no end-of-block code"));
        }
        build(&mut self.lit, &lens[..nlen], LIT_BITS, true, lit_entry)?;
        build(&mut self.dist, &lens[nlen..nlen + ndist], DIST_BITS, true, dist_entry)
    }

    fn fixed(&mut self) -> Result<(), Bad> {
        if self.fixed_lit.is_empty() {
            let mut lens = [8u8; 288];
            lens[144..256].fill(9);
            lens[256..280].fill(7);
            build(&mut self.fixed_lit, &lens, LIT_BITS, false, lit_entry)?;
            build(&mut self.fixed_dist, &[5u8; 32], DIST_BITS, false, dist_entry)?;
        }
        Ok(())
    }
}

/// Inflates bits [from, to) of `d` onto `out` (values below [`MARK`] are bytes, the rest refer to
/// the window before `from`), stopping at the final block's end, at a block's end at `to`, when
/// the input runs out inside a block, or once `out` holds `limit` values. An error for anything
/// that is not deflate.
pub fn inflate_marked(d: &[u8], from: usize, to: usize, limit: usize, out: &mut Vec<u16>, t: &mut Tables) -> Result<Stop, Bad> {
    let mut b = Bits { d, p: from };
    loop {
        if b.p >= to {
            return Ok(if b.p == to { Stop::AtEnd } else { Stop::OutOfInput });
        }
        let head = b.take(3);
        let last = head & 1 != 0;
        match head >> 1 {
            0 => {
                b.p = b.p.next_multiple_of(8);
                let (n, not_n) = (b.take(16), b.take(16));
                if n != !not_n & 0xffff {
                    return Err(Bad("a stored block's length and its complement differ"));
                }
                let q = b.p >> 3;
                let Some(bytes) = d.get(q..q + n as usize) else { return Ok(Stop::OutOfInput) };
                if b.p + 8 * n as usize > to {
                    return Ok(Stop::OutOfInput);
                }
                out.extend(bytes.iter().map(|&x| x as u16));
                b.p += 8 * n as usize;
            }
            1 => {
                t.fixed()?;
                if let Some(stop) = symbols(&mut b, to, limit, out, &t.fixed_lit, &t.fixed_dist)? {
                    return Ok(stop);
                }
            }
            2 => {
                t.dynamic(&mut b)?;
                if let Some(stop) = symbols(&mut b, to, limit, out, &t.lit, &t.dist)? {
                    return Ok(stop);
                }
            }
            _ => return Err(Bad("a reserved block type")),
        }
        if last {
            return Ok(if b.p <= to { Stop::Ended(b.p) } else { Stop::OutOfInput });
        }
        if out.len() >= limit {
            return Ok(Stop::Full);
        }
    }
}

/// Room kept past the output while decoding: the literals of one look at the input (at most
/// 43) or a match, written in chunks of eight that may overshoot it.
const SLACK: usize = 258 + 64;

/// One Huffman block's symbols onto `out`, up to its end-of-block code (None) or an early stop.
#[inline(never)]
fn symbols(b: &mut Bits, to: usize, limit: usize, out: &mut Vec<u16>, lit: &[u32], dist: &[u32]) -> Result<Option<Stop>, Bad> {
    // `out` is kept longer than the output (by zeros, in steps), and `o` is the output's end: a
    // value is a store, not a push.
    let mut o = out.len();
    // Where the next look at `out`'s length is due (the limit, or SLACK before its end).
    let mut room = 0;
    let r = loop {
        if o >= room || b.p > to {
            if b.p > to {
                break Ok(Some(Stop::OutOfInput));
            }
            if o >= limit {
                break Ok(Some(Stop::Full));
            }
            out.resize(o + SLACK + (1 << 15), 0);
            room = limit.min(out.len() - SLACK);
        }
        let mut w = b.peek();
        let mut e = lookup(lit, w, LIT_BITS);
        // Literals: as many from one look as leave 15 bits (a literal's longest code) of its 57.
        let mut left = 57;
        while is_literal(e) {
            out[o] = (e >> 16) as u8 as u16;
            o += 1;
            let n = e & 15;
            b.p += n as usize;
            // A literal's entry holds no extra bits, so its low six bits are its length: the
            // shift takes them as they are (one operation fewer on the chain from one table
            // load to the next).
            w = w.wrapping_shr(e);
            left -= n;
            if left < 15 {
                break;
            }
            e = lookup(lit, w, LIT_BITS);
        }
        if is_literal(e) {
            continue;
        }
        if left < 57 {
            // A length code and its distance need up to 48 bits: look again.
            w = b.peek();
        }
        match kind(e) {
            LEN => {
                let (n, x) = (e & 15, (e >> 4) & 15);
                let len = (e >> 16) as usize + ((w >> n) & ((1 << x) - 1)) as usize;
                let w = w >> (n + x);
                let f = lookup(dist, w, DIST_BITS);
                if kind(f) != LEN {
                    break Err(Bad("a distance symbol not in its code"));
                }
                let (m, y) = (f & 15, (f >> 4) & 15);
                let dst = (f >> 16) as usize + ((w >> m) & ((1 << y) - 1)) as usize;
                b.p += (n + x + m + y) as usize;
                if let Err(e) = copy(out, o, len, dst) {
                    break Err(e);
                }
                o += len;
            }
            END => {
                b.p += (e & 15) as usize;
                break Ok(None);
            }
            _ => break Err(Bad("a literal or length symbol not in its code")),
        }
    };
    out.truncate(o);
    r
}

/// A match: `len` values from `dst` back written at `o` (with [`SLACK`] room after), from the
/// window before the start where it reaches past the output.
#[inline(always)]
fn copy(out: &mut [u16], o: usize, len: usize, dst: usize) -> Result<(), Bad> {
    if dst >= 8 && dst <= o {
        // Eight at a time: a chunk's source lies wholly before it, written already where the
        // match overlaps itself, as deflate's copy wants.
        let mut k = 0;
        while k < len {
            let chunk: [u16; 8] = out[o - dst + k..o - dst + k + 8].try_into().expect("8 values");
            out[o + k..o + k + 8].copy_from_slice(&chunk);
            k += 8;
        }
    } else if dst == 1 && o > 0 {
        let v = out[o - 1];
        out[o..o + len].fill(v);
    } else if dst <= o {
        for k in o..o + len {
            out[k] = out[k - dst];
        }
    } else {
        if dst > o + WINDOW {
            return Err(Bad("a distance past the window"));
        }
        // The first dst - o values come from the window, index WINDOW - (dst - o) on.
        let from_window = (dst - o).min(len);
        let i0 = WINDOW + o - dst;
        for (k, i) in (i0..i0 + from_window).enumerate() {
            out[o + k] = MARK + i as u16;
        }
        for k in o + from_window..o + len {
            out[k] = out[k - dst];
        }
    }
    Ok(())
}

/// `marked` with its markers filled in from `window` (the 32 KB before it; shorter at the start
/// of the member, where a marker into the missing part fails), onto `out` (cleared); how many
/// markers there were.
pub fn fill(marked: &[u16], window: &[u8], out: &mut Vec<u8>) -> Result<usize, Bad> {
    let missing = WINDOW - window.len().min(WINDOW);
    let mut full = [0u8; WINDOW];
    full[missing..].copy_from_slice(&window[window.len() - (WINDOW - missing)..]);
    out.clear();
    out.reserve(marked.len());
    let (mut bad, mut marks, mut in_runs) = (false, 0, 0);
    let mut one = |v: u16| {
        if v < MARK {
            v as u8
        } else {
            let i = (v - MARK) as usize;
            bad |= i < missing;
            marks += 1;
            full[i & (WINDOW - 1)]
        }
    };
    // 32 at a time where none is a marker, or all are and in a row (a run copied from the
    // window) or all the same (a run of one byte copied from it, as the background's zeros
    // mostly are), else one by one.
    let mut chunks = marked.chunks_exact(32);
    for c in &mut chunks {
        let first = c[0].wrapping_sub(MARK) as usize;
        if c.iter().fold(0, |m, &v| m | v) < MARK {
            out.extend(c.iter().map(|&v| v as u8));
        } else if first >= WINDOW || first < missing {
            out.extend(c.iter().map(|&v| one(v)));
        } else if c.iter().fold(0, |m, &v| m | (v ^ c[0])) == 0 {
            out.extend(std::iter::repeat_n(full[first], 32));
            in_runs += 32;
        } else if first + 32 <= WINDOW && c.iter().zip(c[0]..).fold(0, |m, (&v, k)| m | (v ^ k)) == 0 {
            out.extend_from_slice(&full[first..first + 32]);
            in_runs += 32;
        } else {
            out.extend(c.iter().map(|&v| one(v)));
        }
    }
    out.extend(chunks.remainder().iter().map(|&v| one(v)));
    if bad {
        return Err(Bad("a byte from before the member"));
    }
    Ok(marks + in_runs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress};
    use rand::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus as Rng64;

    /// Bytes like a NIfTI volume's: runs of zeros and floats with a few repeats.
    fn data(n: usize, seed: u64) -> Vec<u8> {
        let mut r = Rng64::seed_from_u64(seed);
        let mut v = Vec::with_capacity(n);
        while v.len() < n {
            match r.random_range(0..4) {
                0 => v.extend(std::iter::repeat_n(0u8, r.random_range(1..3000))),
                1 => {
                    let back = r.random_range(1..=v.len().clamp(1, 40000));
                    let len = r.random_range(3..600).min(back);
                    if back <= v.len() {
                        let s = v.len() - back;
                        v.extend_from_within(s..s + len);
                    }
                }
                _ => (0..r.random_range(1..400)).for_each(|_| v.extend((r.random::<f32>() * 100.0).to_le_bytes())),
            }
        }
        v.truncate(n);
        v
    }

    /// Raw deflate of `raw` at `level`, with `dict` as the window before it.
    fn deflate(raw: &[u8], level: u32, dict: Option<&[u8]>) -> Vec<u8> {
        let mut c = Compress::new(Compression::new(level), false);
        if let Some(w) = dict {
            c.set_dictionary(w).expect("a dictionary");
        }
        let mut out = Vec::with_capacity(raw.len() + 1024);
        loop {
            if out.capacity() - out.len() < 1024 {
                out.reserve(out.len());
            }
            let i = c.total_in() as usize;
            if c.compress_vec(&raw[i..], &mut out, FlushCompress::Finish).expect("compress") == flate2::Status::StreamEnd {
                return out;
            }
        }
    }

    #[test]
    fn every_level_inflates_as_zlib_does() {
        for (level, seed) in [(0, 1), (1, 2), (2, 3), (6, 4), (9, 5)] {
            let raw = data(3 << 20, seed);
            let z = deflate(&raw, level, None);
            let mut out = Vec::new();
            let stop = inflate_marked(&z, 0, 8 * z.len(), usize::MAX, &mut out, &mut Tables::default()).expect("inflates");
            assert!(matches!(stop, Stop::Ended(p) if p.div_ceil(8) == z.len()), "level {level}: {stop:?}");
            let mut bytes = Vec::new();
            fill(&out, &[], &mut bytes).expect("no markers at the start");
            assert!(bytes == raw, "level {level}: the bytes differ");
        }
    }

    #[test]
    fn markers_name_the_window_bytes() {
        let all = data((1 << 20) + WINDOW, 7);
        let (window, raw) = all.split_at(WINDOW);
        let z = deflate(raw, 6, Some(window));
        let mut out = Vec::new();
        let stop = inflate_marked(&z, 0, 8 * z.len(), usize::MAX, &mut out, &mut Tables::default()).expect("inflates");
        assert!(matches!(stop, Stop::Ended(_)));
        let marks = out.iter().filter(|&&v| v >= MARK).count();
        assert!(marks > 1000, "only {marks} markers: the test does not reach the window");
        let mut bytes = Vec::new();
        fill(&out, window, &mut bytes).expect("fills");
        assert!(bytes == raw);
        // Without the window the same markers cannot be filled.
        assert!(fill(&out, &window[..100], &mut bytes).is_err());
        // Against zlib with the same dictionary, as a second witness.
        let mut z2 = Decompress::new(false);
        z2.set_dictionary(window).expect("dictionary");
        let mut o2 = Vec::with_capacity(raw.len() + 64);
        z2.decompress_vec(&z, &mut o2, FlushDecompress::Finish).expect("zlib inflates");
        assert!(o2 == raw);
    }

    /// Filling in agrees with the rule one value at a time, on stretches of literals, of markers
    /// in a row, of one marker repeated and of mixtures, against whole and short windows.
    #[test]
    fn fill_follows_the_rule() {
        let mut r = Rng64::seed_from_u64(12);
        let window: Vec<u8> = (0..WINDOW).map(|_| r.random()).collect();
        for round in 0..200 {
            let mut marked = Vec::new();
            while marked.len() < 3000 {
                let n = r.random_range(1..100);
                let i0 = r.random_range(0..WINDOW - 100) as u16;
                match r.random_range(0..4) {
                    0 => marked.extend((0..n).map(|_| r.random_range(0..MARK))),
                    1 => marked.extend((0..n as u16).map(|k| MARK + i0 + k)),
                    2 => marked.extend(std::iter::repeat_n(MARK + i0, n)),
                    _ => marked.extend((0..n).map(|_| r.random_range(0..MARK + WINDOW as u16))),
                }
            }
            let have = if round % 2 == 0 { WINDOW } else { r.random_range(0..WINDOW) };
            let w = &window[WINDOW - have..];
            let missing = WINDOW - have;
            let want: Option<Vec<u8>> = marked.iter().map(|&v| if v < MARK { Some(v as u8) } else { ((v - MARK) as usize >= missing).then(|| window[(v - MARK) as usize]) }).collect();
            let mut out = Vec::new();
            match (fill(&marked, w, &mut out), want) {
                (Ok(marks), Some(want)) => {
                    assert!(out == want, "round {round}");
                    assert_eq!(marks, marked.iter().filter(|&&v| v >= MARK).count());
                }
                (Err(_), None) => {}
                (got, want) => panic!("round {round}: {:?} against {}", got.map(|_| ()), want.is_some()),
            }
        }
    }

    #[test]
    fn stops_at_a_block_end_at_the_limit_and_out_of_input() {
        let raw = data(2 << 20, 9);
        let z = deflate(&raw, 6, None);
        let mut t = Tables::default();
        let mut out = Vec::new();
        assert_eq!(inflate_marked(&z, 0, 8 * z.len(), 1000, &mut out, &mut t), Ok(Stop::Full));
        assert!(out.len() >= 1000 && out.len() < 1000 + 3 * 258);
        out.clear();
        assert_eq!(inflate_marked(&z, 0, 8 * z.len() / 2, usize::MAX, &mut out, &mut t), Ok(Stop::OutOfInput));
        // Damage: a flipped bit in the middle either fails or gives other bytes, never a panic.
        let mut r = Rng64::seed_from_u64(11);
        for _ in 0..200 {
            let mut bad = z.clone();
            let at = r.random_range(0..8 * bad.len());
            bad[at / 8] ^= 1 << (at % 8);
            out.clear();
            if let Ok(Stop::Ended(_)) = inflate_marked(&bad, 0, 8 * bad.len(), 4 * raw.len(), &mut out, &mut t) {
                let mut bytes = Vec::new();
                assert!(fill(&out, &[], &mut bytes).is_err() || bytes != raw || at / 8 + 8 >= bad.len());
            }
        }
    }
}

#[cfg(test)]
mod speed {
    /// One core's rate against zlib-rs on a gzip file named by NEUROPORT_INFLATE_BENCH (not a
    /// test: `cargo test --release inflate_rate -- --ignored --nocapture`).
    #[test]
    #[ignore]
    fn inflate_rate() {
        let Some(path) = std::env::var_os("NEUROPORT_INFLATE_BENCH") else { return };
        let d = std::fs::read(path).unwrap();
        let h = crate::volume::gz_split::header_len(&d).unwrap();
        let body = &d[h..d.len() - 8];
        // Buffers kept from run to run, as a split read pools them (fresh pages would be half
        // the time).
        let (mut o, mut m, mut f) = (Vec::with_capacity(4 * body.len()), Vec::with_capacity(4 * body.len()), Vec::with_capacity(4 * body.len()));
        for _ in 0..4 {
            let t = std::time::Instant::now();
            let mut z = flate2::Decompress::new(false);
            o.clear();
            z.decompress_vec(body, &mut o, flate2::FlushDecompress::Finish).unwrap();
            let tz = t.elapsed().as_secs_f64();
            let t = std::time::Instant::now();
            m.clear();
            let stop = super::inflate_marked(&d, 8 * h, 8 * (d.len() - 8), usize::MAX, &mut m, &mut super::Tables::default()).unwrap();
            let tm = t.elapsed().as_secs_f64();
            assert!(matches!(stop, super::Stop::Ended(_)) && m.len() == o.len());
            let t = std::time::Instant::now();
            super::fill(&m, &[], &mut f).unwrap();
            let tf = t.elapsed().as_secs_f64();
            assert!(f == o);
            eprintln!("{} MB: zlib-rs {:.3} s ({:.0} MB/s), marked {:.3} s ({:.0} MB/s), filled in {:.3} s", o.len() >> 20, tz, o.len() as f64 / tz / 1e6, tm, o.len() as f64 / tm / 1e6, tf);
        }
    }
}
