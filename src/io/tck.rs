//! MRtrix `.tck` tractograms: a text header ("mrtrix tracks", `datatype: Float32LE`,
//! `file: . OFFSET`, `count`, `END`), then float32 xyz triplets in world millimetres, each
//! streamline closed by (NaN, NaN, NaN) and the file by (Inf, Inf, Inf).

use anyhow::{anyhow, bail, Context, Result};
use std::io::Write;
use std::path::Path;

/// Refuses an `--out-tck` name that does not end in .tck (any case): the file is MRtrix's
/// format, and .tck bytes under another name (a .trk) are rejected by the tools that name
/// promises.
pub fn require_tck_name(path: &Path) -> Result<()> {
    if !path.extension().and_then(|e| e.to_str()).is_some_and(|e| e.eq_ignore_ascii_case("tck")) {
        bail!("{}: --out-tck must name a .tck file (MRtrix)", path.display());
    }
    Ok(())
}

/// Writes streamlines (world mm) to `path`.
pub fn write_tck<S: AsRef<[[f32; 3]]> + Sync>(path: &Path, streamlines: impl ExactSizeIterator<Item = S>) -> Result<()> {
    let n = streamlines.len();
    write_tck_of(path, streamlines, n)
}

/// [`write_tck`] for streamlines selected from `total` generated (the header's `total_count`,
/// as tckgen writes it when it keeps only some).
pub fn write_tck_of<S: AsRef<[[f32; 3]]> + Sync>(path: &Path, streamlines: impl ExactSizeIterator<Item = S>, total: usize) -> Result<()> {
    let all: Vec<S> = streamlines.collect();
    let mut w = TckWriter::create_of(path, all.len(), total)?;
    w.append(all.len(), |i| all[i].as_ref().len(), |i, out| out.copy_from_slice(all[i].as_ref()))?;
    w.finish()
}

/// Streamlines a piece of a window holds: encoded by one task.
const PIECE: usize = 512;
/// Pieces a window holds: encoded on every core at once, then handed to the writing thread.
const WINDOW: usize = 64;

/// A window of encoded streamlines: the points of each, then (NaN, NaN, NaN).
type Window = Vec<Vec<[f32; 3]>>;

/// A `.tck` written piece by piece (streamlines as they are traced): the header names `count`,
/// [`TckWriter::append`] adds streamlines, encoded on the caller's cores while a thread of the writer's own writes the windows before (across calls:
/// one batch's last window is written while the next batch encodes), [`TckWriter::finish`]
/// checks that `count` came and closes the file. Dropped unfinished, the writer stops and the
/// file is left to its caller (an `Outputs` temporary) to remove.
pub struct TckWriter {
    tx: Option<std::sync::mpsc::SyncSender<Window>>,
    writer: Option<std::thread::JoinHandle<std::io::Result<(std::fs::File, f64)>>>,
    count: usize,
    written: usize,
    /// Milliseconds encoding, and waiting for the writing thread to take a window (recorded as
    /// stages at [`TckWriter::finish`] with the thread's own writing time).
    encode_ms: f64,
    wait_ms: f64,
}

impl TckWriter {
    pub fn create(path: &Path, count: usize) -> Result<TckWriter> {
        Self::create_of(path, count, count)
    }

    /// [`TckWriter::create`] for `count` streamlines kept of `total` generated.
    pub fn create_of(path: &Path, count: usize, total: usize) -> Result<TckWriter> {
        let head = format!("mrtrix tracks\ndatatype: Float32LE\ncount: {count}\ntotal_count: {total}\n");
        // The offset counts the header including its own line: grow it until the digits settle.
        let mut offset = head.len() + "file: . \nEND\n".len();
        loop {
            let total = head.len() + format!("file: . {offset}\nEND\n").len();
            if total == offset {
                break;
            }
            offset = total;
        }
        let mut f = crate::volume::create_file(path).with_context(|| format!("cannot create {}", path.display()))?;
        f.write_all(format!("{head}file: . {offset}\nEND\n").as_bytes())?;
        // One window queued while one is written: at most three windows alive with the one
        // being encoded.
        let (tx, rx) = std::sync::mpsc::sync_channel::<Window>(1);
        let writer = std::thread::Builder::new().name("tck writer".into()).spawn(move || -> std::io::Result<(std::fs::File, f64)> {
            let mut ms = 0.0;
            for window in rx {
                let t = std::time::Instant::now();
                for piece in window {
                    write_le(&mut f, piece)?;
                }
                ms += t.elapsed().as_secs_f64() * 1e3;
            }
            Ok((f, ms))
        })?;
        Ok(TckWriter { tx: Some(tx), writer: Some(writer), count, written: 0, encode_ms: 0.0, wait_ms: 0.0 })
    }

    /// Appends `n` streamlines, streamline i of `len(i)` points that `fill(i, points)` writes (world
    /// mm) straight into the encoded window: no copy of a streamline is made on the way. Encoded
    /// a window at a time, its pieces on every core, each window handed to the writing thread.
    pub fn append(&mut self, n: usize, len: impl Fn(usize) -> usize + Sync, fill: impl Fn(usize, &mut [[f32; 3]]) + Sync) -> Result<()> {
        use rayon::prelude::*;
        if self.written + n > self.count {
            bail!("{} streamlines for a header of {}", self.written + n, self.count);
        }
        let piece = |range: std::ops::Range<usize>| {
            // NaN everywhere, so each streamline's closing triplet is in place once it is filled.
            let mut piece = vec![[f32::NAN; 3]; range.clone().map(|i| len(i) + 1).sum()];
            let mut at = 0;
            for i in range {
                let l = len(i);
                fill(i, &mut piece[at..at + l]);
                at += l + 1;
            }
            piece
        };
        for start in (0..n).step_by(PIECE * WINDOW) {
            let end = (start + PIECE * WINDOW).min(n);
            let t = std::time::Instant::now();
            let window: Window = (start..end).step_by(PIECE).collect::<Vec<_>>().into_par_iter().map(|a| piece(a..(a + PIECE).min(end))).collect();
            let t1 = std::time::Instant::now();
            let sent = self.tx.as_ref().map(|tx| tx.send(window).is_ok()).unwrap_or(false);
            self.encode_ms += (t1 - t).as_secs_f64() * 1e3;
            self.wait_ms += t1.elapsed().as_secs_f64() * 1e3;
            if !sent {
                // The writer stopped: its error is the cause.
                return Err(self.stop().err().unwrap_or_else(|| anyhow!("the tractogram writer stopped")));
            }
        }
        self.written += n;
        Ok(())
    }

    /// Closes the channel and waits for the writing thread: its file, or its error.
    fn stop(&mut self) -> Result<(std::fs::File, f64)> {
        self.tx = None;
        let writer = self.writer.take().ok_or_else(|| anyhow!("the tractogram writer already stopped"))?;
        Ok(writer.join().map_err(|_| anyhow!("tractogram writer thread panicked"))??)
    }

    pub fn finish(mut self) -> Result<()> {
        if self.written != self.count {
            bail!("{} streamlines written for a header of {}", self.written, self.count);
        }
        let (mut f, write_ms) = self.stop()?;
        write_le(&mut f, vec![[f32::INFINITY; 3]])?;
        f.flush()?;
        use crate::runtime::stages::record;
        record("tck encode", self.encode_ms);
        record("tck wait for the writer", self.wait_ms);
        record("tck write", write_ms);
        Ok(())
    }
}

impl Drop for TckWriter {
    fn drop(&mut self) {
        if self.writer.is_some() {
            let _ = self.stop();
        }
    }
}

/// Writes the points as Float32LE (their own bytes on little-endian machines).
fn write_le(f: &mut std::fs::File, mut points: Vec<[f32; 3]>) -> std::io::Result<()> {
    if cfg!(target_endian = "big") {
        for c in points.iter_mut().flatten() {
            *c = f32::from_bits(c.to_bits().swap_bytes());
        }
    }
    f.write_all(bytemuck::cast_slice(&points))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Streamlines appended over several calls and across windows give the file of one
    /// `write_tck` call.
    #[test]
    fn appends_across_calls_and_windows_give_the_one_call_file() {
        use rand::Rng;
        let (seed, mut r) = crate::synth::fresh_rng();
        // Past one window (PIECE x WINDOW streamlines), with empty streamlines among them.
        let n = PIECE * WINDOW + 700;
        let lines: Vec<Vec<[f32; 3]>> = (0..n).map(|_| (0..r.random_range(0..6)).map(|_| [r.random(), r.random(), r.random()]).collect()).collect();
        let dir = tempfile::tempdir().unwrap();
        let (one, parts) = (dir.path().join("one.tck"), dir.path().join("parts.tck"));
        write_tck(&one, lines.iter()).unwrap();
        let mut w = TckWriter::create(&parts, n).unwrap();
        let cut = [0, 3, PIECE * WINDOW - 1, PIECE * WINDOW + 200, n];
        for c in cut.windows(2) {
            let part = &lines[c[0]..c[1]];
            w.append(part.len(), |i| part[i].len(), |i, out| out.copy_from_slice(&part[i])).unwrap();
        }
        w.finish().unwrap();
        assert!(std::fs::read(&one).unwrap() == std::fs::read(&parts).unwrap(), "seed {seed}: the files differ");
        assert_eq!(read_tck(&parts).unwrap(), lines, "seed {seed}");
    }

    /// More streamlines than the header names, or fewer, are refused; a write failing on the
    /// writing thread (a reader gone, as a full disk would) comes back from the call that hands
    /// the next window over, or from `finish`.
    #[cfg(unix)]
    #[test]
    fn counts_are_checked_and_a_failing_write_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let line = vec![[1.0f32, 2.0, 3.0]; 4];
        let mut w = TckWriter::create(&dir.path().join("a.tck"), 2).unwrap();
        assert!(w.append(3, |_| line.len(), |_, out| out.copy_from_slice(&line)).is_err());
        w.append(1, |_| line.len(), |_, out| out.copy_from_slice(&line)).unwrap();
        assert!(format!("{:#}", w.finish().unwrap_err()).contains("1 streamlines written for a header of 2"));
        // A pipe whose reader takes the header and leaves: the windows then fail (EPIPE).
        let fifo = dir.path().join("pipe");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || {
                use std::io::Read;
                let mut head = [0u8; 16];
                std::fs::File::open(&fifo).unwrap().read_exact(&mut head).unwrap();
            })
        };
        let n = 4 * PIECE * WINDOW;
        let mut w = TckWriter::create(&fifo, n).unwrap();
        reader.join().unwrap();
        let err = w.append(n, |_| line.len(), |_, out| out.copy_from_slice(&line)).and_then(|_| w.finish()).unwrap_err();
        assert!(format!("{err:#}").contains("Broken pipe"), "{err:#}");
    }
}
