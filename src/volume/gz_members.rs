//! gzip members that say how long they are, so a reader can inflate them on every core.
//!
//! A gzip stream is inflated in order on one core: a 171 MB `.nii.gz` takes ~1 s however many
//! cores wait. Our writer already compresses independent members of [`super::nifti_write::BLOCK`]
//! bytes; each also carries, in the header's FEXTRA field (RFC 1952 §2.3.1.1, which every
//! decoder skips), a subfield `NP` with the member's compressed length and its raw length, as
//! BGZF's `BC` does for BAM files. A reader that finds it walks from member to member without
//! inflating, then inflates a wave of members in parallel while it reads the next wave. Files
//! from other writers (one member, no field) take the ordinary streaming path.

use rayon::prelude::*;
use std::collections::VecDeque;
use std::io::{self, Read};
use std::sync::Mutex;

/// Header of a member with the `NP` subfield: ID1 ID2 CM FLG(FEXTRA) MTIME(4) XFL OS, XLEN,
/// SI1 SI2 LEN, then compressed member length and raw length (u32, little-endian).
pub const HEADER: usize = 10 + 2 + 4 + 8;

/// The member header for `raw` bytes deflated into `deflated` bytes.
pub fn header(deflated: usize, raw: usize) -> [u8; HEADER] {
    let mut h = [0u8; HEADER];
    h[..10].copy_from_slice(&[0x1f, 0x8b, 8, 4, 0, 0, 0, 0, 0, 255]);
    h[10..12].copy_from_slice(&12u16.to_le_bytes());
    h[12..16].copy_from_slice(&[b'N', b'P', 8, 0]);
    h[16..20].copy_from_slice(&((HEADER + deflated + 8) as u32).to_le_bytes());
    h[20..24].copy_from_slice(&(raw as u32).to_le_bytes());
    h
}

/// (member length, raw length) when `h` starts a member with the `NP` subfield.
pub fn sizes(h: &[u8]) -> Option<(usize, usize)> {
    if h.len() < HEADER || h[..4] != [0x1f, 0x8b, 8, 4] || h[10..16] != [12, 0, b'N', b'P', 8, 0] {
        return None;
    }
    let u = |i: usize| u32::from_le_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]) as usize;
    // A damaged field must not make a reader allocate gigabytes: raw deflate grows data by at
    // most 5 bytes per 16 KiB stored block.
    let (len, raw) = (u(16), u(20));
    (len >= HEADER + 8 && raw <= 1 << 28 && len <= HEADER + 8 + raw + raw / 1024 + 64).then_some((len, raw))
}

/// Inflates a stream of `NP` members, a wave of them at a time on every core, reading the next
/// wave's compressed bytes meanwhile. Buffers of consumed members are handed back to the
/// inflate, so a read does not fault in fresh pages for every member. (Round 12 also tried
/// inflating the next wave while the caller copied out the current one, on a spawned task: no
/// measurable gain on the H100 host, and a reader inside a rayon pool - probtrack reads its
/// samples so - blocked on it with every worker waiting: a deadlock. A wave is a `join`, which
/// a waiting worker helps run.)
pub struct ParallelMembers<R: Read + Send> {
    src: R,
    eof: bool,
    /// Compressed members read ahead, inflated with the next refill.
    pending: Vec<Vec<u8>>,
    ready: VecDeque<Vec<u8>>,
    cur: Vec<u8>,
    pos: usize,
    wave: usize,
    spare: Mutex<Vec<Vec<u8>>>,
    /// Whether the first member has been read (it is inflated alone).
    started: bool,
}

impl<R: Read + Send> ParallelMembers<R> {
    pub fn new(src: R) -> Self {
        let wave = rayon::current_num_threads().max(1);
        ParallelMembers { src, eof: false, pending: Vec::new(), ready: VecDeque::new(), cur: Vec::new(), pos: 0, wave, spare: Mutex::default(), started: false }
    }

    fn refill(&mut self) -> io::Result<()> {
        if !self.started {
            // The first member alone: our writer puts the NIfTI header in a member of its own,
            // and the voxels' members are then left to a reader that takes them one by one
            // (`next_member`: nifti_decode's read_members) instead of waiting for a wave here.
            self.started = true;
            for m in read_wave(&mut self.src, &mut self.eof, 1)? {
                self.ready.push_back(inflate(&m, Vec::new())?);
            }
            return Ok(());
        }
        if self.pending.is_empty() && !self.eof {
            self.pending = read_wave(&mut self.src, &mut self.eof, self.wave)?;
        }
        if self.pending.is_empty() {
            return Ok(());
        }
        let comp = std::mem::take(&mut self.pending);
        let (src, eof, wave, spare) = (&mut self.src, &mut self.eof, self.wave, &self.spare);
        let take = || spare.lock().unwrap_or_else(|e| e.into_inner()).pop().unwrap_or_default();
        let (next, raw) = rayon::join(|| if *eof { Ok(Vec::new()) } else { read_wave(src, eof, wave) }, || comp.par_iter().map(|m| inflate(m, take())).collect::<io::Result<Vec<_>>>());
        self.ready.extend(raw?);
        self.pending = next?;
        Ok(())
    }

    /// The bytes inflated and not yet read (after a header read through [`Read`]), in order:
    /// with [`Self::next_member`], the rest of the stream for a reader that uses each member on
    /// the core that inflated it (nifti_decode's `read_members`).
    pub fn take_inflated(&mut self) -> Vec<Vec<u8>> {
        let mut v = Vec::new();
        let cur = std::mem::take(&mut self.cur);
        if self.pos < cur.len() {
            v.push(if self.pos == 0 { cur } else { cur[self.pos..].to_vec() });
        }
        self.pos = 0;
        v.extend(self.ready.drain(..));
        v
    }

    /// The next compressed member (None at the end of the stream), to be inflated with
    /// [`inflate`]: those read ahead first, then one at a time from the source.
    pub fn next_member(&mut self) -> io::Result<Option<Vec<u8>>> {
        if !self.pending.is_empty() {
            return Ok(Some(self.pending.remove(0)));
        }
        if self.eof {
            return Ok(None);
        }
        Ok(read_wave(&mut self.src, &mut self.eof, 1)?.pop())
    }
}

/// A compressed member's raw (inflated) length, from its `NP` field.
pub fn raw_len(m: &[u8]) -> usize {
    sizes(m).map_or(0, |s| s.1)
}

impl<R: Read + Send> Read for ParallelMembers<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.pos == self.cur.len() {
            if self.ready.is_empty() {
                self.refill()?;
            }
            match self.ready.pop_front() {
                Some(next) => {
                    let done = std::mem::replace(&mut self.cur, next);
                    if done.capacity() > 0 {
                        self.spare.lock().unwrap_or_else(|e| e.into_inner()).push(done);
                    }
                    self.pos = 0;
                }
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.cur.len() - self.pos);
        buf[..n].copy_from_slice(&self.cur[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

fn bad(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_string())
}

/// Up to `wave` whole members; sets `eof` at the end of the stream.
fn read_wave(src: &mut impl Read, eof: &mut bool, wave: usize) -> io::Result<Vec<Vec<u8>>> {
    let mut out = Vec::new();
    while out.len() < wave {
        let mut h = [0u8; HEADER];
        let got = read_up_to(src, &mut h)?;
        if got == 0 {
            *eof = true;
            break;
        }
        if got < HEADER {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        let (len, _) = sizes(&h).ok_or_else(|| bad("a gzip member without its length field follows members with one"))?;
        let mut m = vec![0u8; len];
        m[..HEADER].copy_from_slice(&h);
        src.read_exact(&mut m[HEADER..])?;
        out.push(m);
    }
    Ok(out)
}

fn read_up_to(src: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match src.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// One member's raw bytes (into `out`, emptied first: its buffer reused), its CRC-32 and length
/// checked.
pub fn inflate(m: &[u8], mut out: Vec<u8>) -> io::Result<Vec<u8>> {
    let (len, raw) = sizes(m).ok_or_else(|| bad("bad gzip member header"))?;
    let body = &m[HEADER..len - 8];
    out.clear();
    out.reserve(raw);
    let mut d = flate2::Decompress::new(false);
    let status = d.decompress_vec(body, &mut out, flate2::FlushDecompress::Finish).map_err(|e| bad(&format!("corrupt deflate data ({e})")))?;
    let t = &m[len - 8..];
    let (crc, size) = (u32::from_le_bytes([t[0], t[1], t[2], t[3]]), u32::from_le_bytes([t[4], t[5], t[6], t[7]]));
    let mut c = flate2::Crc::new();
    c.update(&out);
    if status != flate2::Status::StreamEnd || out.len() != raw || size != raw as u32 || c.sum() != crc {
        return Err(bad("corrupt gzip member (length or CRC mismatch)"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn members(data: &[u8], block: usize) -> Vec<u8> {
        let mut out = Vec::new();
        crate::volume::nifti_write::write_gz_blocks(&mut out, &[data], block).unwrap();
        out
    }

    #[test]
    fn parallel_members_read_back_what_was_written_and_plain_gzip_agrees() {
        let data: Vec<u8> = (0..1_000_003u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8 & 0x3f).collect();
        let gz = members(&data, 65536);
        let mut par = Vec::new();
        ParallelMembers::new(&gz[..]).read_to_end(&mut par).unwrap();
        assert_eq!(par, data);
        // Every ordinary decoder reads the same bytes (the extra field is skipped).
        let mut plain = Vec::new();
        flate2::read::MultiGzDecoder::new(&gz[..]).read_to_end(&mut plain).unwrap();
        assert_eq!(plain, data);
    }

    #[test]
    fn corruption_and_truncation_are_errors() {
        let data = vec![7u8; 300_000];
        let gz = members(&data, 65536);
        let mut flipped = gz.clone();
        let k = gz.len() / 2;
        flipped[k] ^= 0x55;
        assert!(ParallelMembers::new(&flipped[..]).read_to_end(&mut Vec::new()).is_err());
        let cut = &gz[..gz.len() - 5];
        assert!(ParallelMembers::new(cut).read_to_end(&mut Vec::new()).is_err());
    }
}
