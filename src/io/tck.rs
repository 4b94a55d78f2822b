//! MRtrix `.tck` tractograms: a text header ("mrtrix tracks", `datatype: Float32LE`,
//! `file: . OFFSET`, `count`, `END`), then float32 xyz triplets in world millimetres, each
//! streamline closed by (NaN, NaN, NaN) and the file by (Inf, Inf, Inf).

use anyhow::{anyhow, bail, Context, Result};
use std::io::Write;
use std::path::Path;

/// Writes streamlines (world mm) to `path`.
pub fn write_tck<S: AsRef<[[f32; 3]]> + Sync>(path: &Path, streamlines: impl ExactSizeIterator<Item = S>) -> Result<()> {
    let all: Vec<S> = streamlines.collect();
    write_tck_par(path, all.len(), |i| std::borrow::Cow::Borrowed(all[i].as_ref()))
}

/// Writes `count` streamlines (world mm), streamline i from `fibre(i)`. Whole-brain tractograms
/// run to gigabytes: streamlines are encoded on every core, a window at a time, while one thread
/// writes the previous window in large writes.
pub fn write_tck_par<'a>(path: &Path, count: usize, fibre: impl Fn(usize) -> std::borrow::Cow<'a, [[f32; 3]]> + Sync) -> Result<()> {
    let mut w = TckWriter::create(path, count)?;
    w.append(count, fibre)?;
    w.finish()
}

/// A `.tck` written piece by piece (streamlines as they are traced): the header names `count`,
/// [`TckWriter::append`] adds streamlines, [`TckWriter::finish`] checks that `count` came and
/// closes the file.
pub struct TckWriter {
    f: std::fs::File,
    count: usize,
    written: usize,
}

impl TckWriter {
    pub fn create(path: &Path, count: usize) -> Result<TckWriter> {
        let head = format!("mrtrix tracks\ndatatype: Float32LE\ncount: {count}\ntotal_count: {count}\n");
        // The offset counts the header including its own line: grow it until the digits settle.
        let mut offset = head.len() + "file: . \nEND\n".len();
        loop {
            let total = head.len() + format!("file: . {offset}\nEND\n").len();
            if total == offset {
                break;
            }
            offset = total;
        }
        let mut f = std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
        f.write_all(format!("{head}file: . {offset}\nEND\n").as_bytes())?;
        Ok(TckWriter { f, count, written: 0 })
    }

    /// Appends `n` streamlines, streamline i from `fibre(i)`, encoded on every core a window at
    /// a time while this thread writes the previous window.
    pub fn append<'a>(&mut self, n: usize, fibre: impl Fn(usize) -> std::borrow::Cow<'a, [[f32; 3]]> + Sync) -> Result<()> {
        use rayon::prelude::*;
        if self.written + n > self.count {
            bail!("{} streamlines for a header of {}", self.written + n, self.count);
        }
        const PIECE: usize = 512;
        let encode = |range: std::ops::Range<usize>| -> Vec<u8> {
            let mut buf = Vec::new();
            for i in range {
                let s = fibre(i);
                buf.reserve((s.len() + 1) * 12);
                for p in s.iter().chain(std::iter::once(&[f32::NAN; 3])) {
                    for c in p {
                        buf.extend_from_slice(&c.to_le_bytes());
                    }
                }
            }
            buf
        };
        let f = &mut self.f;
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<Vec<u8>>>(1);
        std::thread::scope(|sc| -> Result<()> {
            let writer = sc.spawn(move || -> std::io::Result<()> {
                for window in rx {
                    for piece in window {
                        f.write_all(&piece)?;
                    }
                }
                Ok(())
            });
            for start in (0..n).step_by(PIECE * 64) {
                let end = (start + PIECE * 64).min(n);
                let window: Vec<Vec<u8>> = (start..end).step_by(PIECE).collect::<Vec<_>>().into_par_iter().map(|a| encode(a..(a + PIECE).min(end))).collect();
                if tx.send(window).is_err() {
                    break;
                }
            }
            drop(tx);
            writer.join().map_err(|_| anyhow!("tractogram writer thread panicked"))??;
            Ok(())
        })?;
        self.written += n;
        Ok(())
    }

    pub fn finish(mut self) -> Result<()> {
        if self.written != self.count {
            bail!("{} streamlines written for a header of {}", self.written, self.count);
        }
        for _ in 0..3 {
            self.f.write_all(&f32::INFINITY.to_le_bytes())?;
        }
        self.f.flush()?;
        Ok(())
    }
}

/// Buffer of the tractogram writers.
pub const WRITE_BUFFER: usize = 8 << 20;

/// Reads a `.tck` file (Float32LE or Float32BE) into streamlines (world mm).
pub fn read_tck(path: &Path) -> Result<Vec<Vec<[f32; 3]>>> {
    let shown = path.display();
    let bytes = std::fs::read(path).map_err(|e| anyhow!("{shown}: cannot read ({e})"))?;
    let end = bytes.windows(4).position(|w| w == b"END\n").ok_or_else(|| anyhow!("{shown}: no END line in the header"))?;
    let head = String::from_utf8_lossy(&bytes[..end]);
    let mut lines = head.lines();
    if lines.next().map(str::trim) != Some("mrtrix tracks") {
        bail!("{shown}: not an MRtrix tracks file");
    }
    let (mut offset, mut big_endian) = (None, None);
    for l in lines {
        let Some((k, v)) = l.split_once(':') else { continue };
        match k.trim() {
            "file" => offset = v.trim().strip_prefix(". ").or_else(|| v.trim().strip_prefix('.')).and_then(|o| o.trim().parse::<usize>().ok()),
            "datatype" => {
                big_endian = Some(match v.trim() {
                    "Float32LE" => false,
                    "Float32BE" => true,
                    other => bail!("{shown}: datatype {other} is not supported (Float32LE/BE only)"),
                })
            }
            _ => {}
        }
    }
    let offset = offset.ok_or_else(|| anyhow!("{shown}: no 'file: . OFFSET' line"))?;
    let be = big_endian.ok_or_else(|| anyhow!("{shown}: no datatype line"))?;
    if offset > bytes.len() {
        bail!("{shown}: data offset {offset} is past the end of the file");
    }
    let mut out = Vec::new();
    let mut cur = Vec::new();
    for c in bytes[offset..].chunks_exact(12) {
        let f = |i: usize| {
            let b = [c[4 * i], c[4 * i + 1], c[4 * i + 2], c[4 * i + 3]];
            if be {
                f32::from_be_bytes(b)
            } else {
                f32::from_le_bytes(b)
            }
        };
        let p = [f(0), f(1), f(2)];
        if p.iter().all(|x| x.is_infinite()) {
            return Ok(out);
        }
        if p.iter().all(|x| x.is_nan()) {
            out.push(std::mem::take(&mut cur));
        } else {
            cur.push(p);
        }
    }
    bail!("{shown}: truncated (no end-of-file marker)")
}
