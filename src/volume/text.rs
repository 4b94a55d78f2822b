//! Text inputs (bvals, bvecs, MRtrix gradient tables, affine matrices, seed and results CSV
//! files): read whole, with the same plain errors as the images get. Kept apart from the NIfTI
//! reader, which reads none of them.

/// A text input's content, or an error naming it in plain words: "no such file", "is a
/// folder" (which opens on Linux and fails only at the read), else the OS's message without its
/// "(os error N)". A UTF-8 byte-order mark (Windows editors, Excel's "CSV UTF-8") is dropped: it
/// would spoil the first number (bvals, bvecs) or make a seed file's first row read as a header.
pub fn read_text(path: &std::path::Path) -> anyhow::Result<String> {
    if path.is_dir() {
        anyhow::bail!("{}: is a folder", path.display());
    }
    let text = std::fs::read_to_string(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => anyhow::anyhow!("{}: no such file", path.display()),
        _ => anyhow::anyhow!("{}: cannot read ({})", path.display(), super::plain_io(&e)),
    })?;
    Ok(match text.strip_prefix('\u{feff}') {
        Some(rest) => rest.to_string(),
        None => text,
    })
}
