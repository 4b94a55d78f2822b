//! MRtrix `.tck` tractograms: a text header ("mrtrix tracks", `datatype: Float32LE`,
//! `file: . OFFSET`, `count`, `END`), then float32 xyz triplets in world millimetres, each
//! streamline closed by (NaN, NaN, NaN) and the file by (Inf, Inf, Inf).

use anyhow::{anyhow, bail, Context, Result};
use std::io::{BufWriter, Write};
use std::path::Path;

/// Writes streamlines (world mm) to `path`.
pub fn write_tck<S: AsRef<[[f32; 3]]>>(path: &Path, streamlines: impl ExactSizeIterator<Item = S>) -> Result<()> {
    let count = streamlines.len();
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
    let f = std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    // Large writes: a streamline's points are packed into one buffer and the file is written
    // in 8 MiB pieces (a 100 MB tractogram is a dozen system calls, not millions).
    let mut w = BufWriter::with_capacity(WRITE_BUFFER, f);
    w.write_all(format!("{head}file: . {offset}\nEND\n").as_bytes())?;
    let mut buf: Vec<u8> = Vec::new();
    for s in streamlines {
        buf.clear();
        for p in s.as_ref().iter().chain(std::iter::once(&[f32::NAN; 3])) {
            for c in p {
                buf.extend_from_slice(&c.to_le_bytes());
            }
        }
        w.write_all(&buf)?;
    }
    for _ in 0..3 {
        w.write_all(&f32::INFINITY.to_le_bytes())?;
    }
    w.flush()?;
    Ok(())
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
            if be { f32::from_be_bytes(b) } else { f32::from_le_bytes(b) }
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
