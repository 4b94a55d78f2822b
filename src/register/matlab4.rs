//! MATLAB v4 `.mat` files, as ITK's MatlabTransformIO writes them (through vnl_matlab_write):
//! ANTs' 0GenericAffine.mat. A run of variables, each a 20-byte header (type, rows, columns,
//! imaginary flag, name length: five int32), its NUL-terminated name, then rows x columns
//! numbers. Only what those files hold is read: real vectors of doubles or singles.

use anyhow::{bail, Result};

#[derive(Debug)]
pub struct Var {
    pub name: String,
    pub values: Vec<f64>,
}

/// The first header's name, if `bytes` begin like a v4 file (a plausible header): how a
/// transform file is told from a 4x4 text matrix without reading it all.
pub fn first_name(bytes: &[u8]) -> Option<String> {
    let h = header(bytes).ok()?;
    let name = bytes.get(20..20 + h.namlen)?;
    Some(String::from_utf8_lossy(name.split(|b| *b == 0).next()?).into_owned())
}

struct Header {
    big: bool,
    single: bool,
    rows: usize,
    cols: usize,
    namlen: usize,
}

/// Type is MOPT in decimal: M byte order (0 little, 1 big endian), O 0 (vnl writes 1 for
/// row-wise: the same numbers for a vector), P precision (0 double, 1 single), T 0 (numeric).
fn header(b: &[u8]) -> Result<Header> {
    let Some(raw) = b.get(..20) else { bail!("ends inside a variable's header") };
    for big in [false, true] {
        let i = |k: usize| {
            let w: [u8; 4] = raw[4 * k..4 * k + 4].try_into().unwrap();
            if big { i32::from_be_bytes(w) } else { i32::from_le_bytes(w) }
        };
        let t = i(0);
        if !(0..10_000).contains(&t) || (t / 1000 == 1) != big {
            continue;
        }
        let (o, p, kind) = ((t / 100) % 10, (t / 10) % 10, t % 10);
        if o > 1 || kind != 0 || p > 1 {
            bail!("holds a variable of MATLAB type {t}, not real doubles or singles");
        }
        if i(3) != 0 {
            bail!("holds a complex variable");
        }
        let (rows, cols, namlen) = (i(1), i(2), i(4));
        if rows < 0 || cols < 0 || !(1..=4096).contains(&namlen) {
            bail!("a variable's header is damaged ({rows} x {cols}, name of {namlen} bytes)");
        }
        return Ok(Header { big, single: p == 1, rows: rows as usize, cols: cols as usize, namlen: namlen as usize });
    }
    bail!("not a MATLAB v4 file (its first word is not a v4 type)")
}

/// Every variable of the file `b`, in order; an error (without the file's name: the caller
/// adds it) for anything else: a truncated or damaged file, a matrix that is not a vector.
pub fn parse(b: &[u8]) -> Result<Vec<Var>> {
    let mut vars = Vec::new();
    let mut at = 0;
    while at < b.len() {
        let h = header(&b[at..])?;
        at += 20;
        let Some(name) = b.get(at..at + h.namlen) else { bail!("ends inside a variable's name") };
        let name = String::from_utf8_lossy(name.split(|c| *c == 0).next().unwrap_or(&[])).into_owned();
        at += h.namlen;
        if h.rows.min(h.cols) > 1 {
            bail!("variable '{name}' is a {} x {} matrix, a vector was expected", h.rows, h.cols);
        }
        let size = if h.single { 4 } else { 8 };
        let n = h.rows * h.cols;
        let Some(data) = at.checked_add(n * size).and_then(|end| b.get(at..end)) else { bail!("ends inside variable '{name}' ({n} numbers)") };
        at += n * size;
        let values = data
            .chunks_exact(size)
            .map(|w| match (h.single, h.big) {
                (true, false) => f32::from_le_bytes(w.try_into().unwrap()) as f64,
                (true, true) => f32::from_be_bytes(w.try_into().unwrap()) as f64,
                (false, false) => f64::from_le_bytes(w.try_into().unwrap()),
                (false, true) => f64::from_be_bytes(w.try_into().unwrap()),
            })
            .collect();
        vars.push(Var { name, values });
    }
    Ok(vars)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn var(name: &str, ty: i32, rows: i32, data: &[u8], big: bool) -> Vec<u8> {
        let w = |v: i32| if big { v.to_be_bytes() } else { v.to_le_bytes() };
        let mut b: Vec<u8> = [ty, rows, 1, 0, name.len() as i32 + 1].iter().flat_map(|v| w(*v)).collect();
        b.extend_from_slice(name.as_bytes());
        b.push(0);
        b.extend_from_slice(data);
        b
    }

    /// Doubles and singles, either byte order, in one file.
    #[test]
    fn reads_doubles_and_singles() {
        let mut b = var("a", 0, 2, &[1.5f64.to_le_bytes(), (-2.0f64).to_le_bytes()].concat(), false);
        b.extend(var("fixed", 1010, 1, &0.25f32.to_be_bytes(), true));
        assert_eq!(first_name(&b).as_deref(), Some("a"));
        let v = parse(&b).unwrap();
        assert_eq!((v[0].name.as_str(), v[0].values.as_slice()), ("a", &[1.5, -2.0][..]));
        assert_eq!((v[1].name.as_str(), v[1].values.as_slice()), ("fixed", &[0.25][..]));
    }

    #[test]
    fn damaged_files_are_errors() {
        let good = var("a", 0, 2, &[0u8; 16], false);
        assert!(parse(&good[..good.len() - 1]).unwrap_err().to_string().contains("ends inside variable 'a'"));
        assert!(parse(&good[..10]).unwrap_err().to_string().contains("header"));
        assert!(parse(&var("a", 20, 1, &[0u8; 4], false)).unwrap_err().to_string().contains("type 20"));
        assert!(parse(b"1 0 0 0\n0 1 0 0\n0 0 1 0\n0 0 0 1\n").unwrap_err().to_string().contains("not a MATLAB v4 file"));
        assert_eq!(first_name(b"1 0 0 0\n0 1 0 0\n0 0 1 0\n0 0 0 1\n"), None);
    }
}
