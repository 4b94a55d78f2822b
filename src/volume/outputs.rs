//! All-or-nothing output: every file of a command is written to a temporary in its final folder
//! (see [`super::temps`]), and all are moved into place only when the command succeeds. A
//! failure while moving puts back what was already moved (and any file it replaced); dropping an
//! uncommitted set removes the temporaries and the folders it created for them; a signal removes
//! them too. Existing files are not
//! overwritten unless [`set_overwrite`] (the CLI's `--force`) allows it.

use super::temps::{self, Temp};
use super::{plain_io, write_nifti_to, write_voxels_to, Geometry, OutputType, Voxels};
use anyhow::{anyhow, bail, Result};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

static OVERWRITE: AtomicBool = AtomicBool::new(false);

/// Whether output sets may replace existing files (`--force`); off by default.
pub fn set_overwrite(on: bool) {
    OVERWRITE.store(on, Ordering::Relaxed);
}

/// Refuses paths that exist (unless overwriting is allowed), naming the first; commands call it
/// with their output names before any work so a user learns it at once.
/// Also refuses, with or without --force, a path whose folder cannot be made because a file sits
/// on the way, a path that is a folder, and a folder that takes no file (read-only, full):
/// bedpost found those only once its sampling was done.
pub fn check_free<P: AsRef<Path>>(paths: impl IntoIterator<Item = P>) -> Result<()> {
    check_paths(paths, true)
}

/// [`check_free`]; `probe`: also write a byte in each folder (done once, up front: not again
/// for each file a set adds).
fn check_paths<P: AsRef<Path>>(paths: impl IntoIterator<Item = P>, probe: bool) -> Result<()> {
    let overwrite = OVERWRITE.load(Ordering::Relaxed);
    // A command's outputs share a folder or a few: each is looked at (and, when still to be
    // made, tried with a probe folder) once.
    let mut folders: Vec<PathBuf> = Vec::new();
    for p in paths {
        let p = p.as_ref();
        if let Some(dir) = p.parent().filter(|d| !folders.iter().any(|f| f == d)) {
            folder_possible(dir, probe.then_some(p))?;
            folders.push(dir.to_path_buf());
        }
        // --force cannot replace a folder: the commit failed on it after all the work.
        if p.is_dir() {
            bail!("cannot write {}: a folder stands there", p.display());
        }
        if !overwrite && p.symlink_metadata().is_ok() {
            bail!("{} already exists (use --force to overwrite)", p.display());
        }
        // X.nii and X.nii.gz are one output under two FSLOUTPUTTYPEs: a second run with the
        // other type left both, a folder probtrack then refuses as ambiguous.
        if let Some(twin) = nifti_twin(p).filter(|t| !overwrite && t.symlink_metadata().is_ok()) {
            bail!("{} already exists: the same output as {} under the other FSLOUTPUTTYPE (use --force to replace it)", twin.display(), p.display());
        }
    }
    Ok(())
}

/// The other NIfTI spelling of `p` (`X.nii` for `X.nii.gz` and back: the other
/// [`OutputType`]'s name for it); None for other names.
pub fn nifti_twin(p: &Path) -> Option<PathBuf> {
    let s = p.to_str()?;
    let other = if s.ends_with(".nii.gz") { OutputType::Nifti } else if s.ends_with(".nii") { OutputType::NiftiGz } else { return None };
    Some(other.apply(p))
}

/// An error naming the file when `dir` or a folder above it is a file: mkdir there said only
/// "File exists" (or "Not a directory"), not which file was in the way. A `dir` still to be made
/// must be makeable in the folder above it that exists: `reproduce --out /proc/x` ran its table
/// and only then failed to make the folder. Tried with a folder made and removed at once.
/// With `file` (the first output in `dir`), the folder (or the probe folder) must also take a
/// byte of a new file, else the error names `file` with the OS's reason.
fn folder_possible(dir: &Path, file: Option<&Path>) -> Result<()> {
    let takes_file = |d: &Path| match file {
        Some(f) => write_probe(d).map_err(|e| anyhow!("cannot write {}: {}", f.display(), plain_io(&e))),
        None => Ok(()),
    };
    // A bare file name's folder is the working one, as is the top of a relative path's.
    let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
    let cwd = dir.is_relative().then_some(Path::new("."));
    for a in dir.ancestors().filter(|a| !a.as_os_str().is_empty()).chain(cwd) {
        match std::fs::metadata(a) {
            Ok(m) if m.is_dir() && a == dir => return takes_file(dir),
            Ok(m) if m.is_dir() => {
                let probe = a.join(format!(".neuroport-probe-{}-{}", std::process::id(), probe_number()));
                return match std::fs::create_dir(&probe) {
                    Ok(()) => {
                        let r = takes_file(&probe);
                        std::fs::remove_dir(&probe)?;
                        r
                    }
                    Err(e) => bail!("cannot create the folder {}: {} takes no new folder ({e})", dir.display(), a.display()),
                };
            }
            Ok(_) if a == dir => bail!("cannot write into {}: it is a file, not a folder", dir.display()),
            Ok(_) => bail!("cannot create the folder {}: {} is a file, not a folder", dir.display(), a.display()),
            Err(_) => {}
        }
    }
    Ok(())
}

fn probe_number() -> usize {
    static PROBES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    PROBES.fetch_add(1, Ordering::Relaxed)
}

/// Writes one byte into a new temporary in `dir` (as an output's, so a kill leaves nothing) and
/// removes it: a read-only or full filesystem says so here, before the work, not at the write.
fn write_probe(dir: &Path) -> std::io::Result<()> {
    use std::io::Write;
    let t = temps::create(&dir.join("write-probe"), probe_number())?;
    let written = match &t {
        Temp::Anon(f) => (&*f).write_all(b"0"),
        Temp::Named(p) => std::fs::OpenOptions::new().write(true).open(p).and_then(|mut f| f.write_all(b"0")),
    };
    t.discard();
    written
}

struct Pending {
    temp: Option<Temp>,
    fin: PathBuf,
}

pub struct Outputs {
    pending: Vec<Pending>,
    kind: OutputType,
    /// Folders this set created for its files: removed again (when empty) if it never commits.
    made: Vec<PathBuf>,
}

impl Default for Outputs {
    fn default() -> Outputs {
        Outputs::new()
    }
}

impl Outputs {
    /// A set writing NIfTI files of the type `FSLOUTPUTTYPE` asks for.
    pub fn new() -> Outputs {
        Outputs { pending: Vec::new(), kind: OutputType::from_env(), made: Vec::new() }
    }

    /// The name a NIfTI output given as `NAME.nii.gz` gets under the output type in force.
    pub fn nifti_name(&self, path: &Path) -> PathBuf {
        self.kind.apply(path)
    }

    /// A temporary for the final file `path`, in its folder (created if missing).
    fn temp(&mut self, fin: &Path) -> Result<&Temp> {
        check_paths([fin], false)?;
        if self.pending.iter().any(|p| p.fin == fin) {
            bail!("{} is written twice by this command", fin.display());
        }
        if let Some(dir) = fin.parent().filter(|d| !d.as_os_str().is_empty()) {
            // The folders missing on the way, noted (and watched for signals) before they are
            // made, so a failed or interrupted run removes them with its temporaries.
            let missing: Vec<PathBuf> = dir.ancestors().take_while(|a| !a.as_os_str().is_empty() && a.symlink_metadata().is_err()).map(Path::to_path_buf).collect();
            for m in &missing {
                temps::made_folder(m);
            }
            self.made.extend(missing);
            std::fs::create_dir_all(dir).map_err(|e| anyhow!("cannot create the folder {}: {}", dir.display(), plain_io(&e)))?;
        }
        let t = temps::create(fin, self.pending.len()).map_err(|e| anyhow!("cannot write {}: {}", fin.display(), plain_io(&e)))?;
        self.pending.push(Pending { temp: Some(t), fin: fin.to_path_buf() });
        Ok(self.pending.last().and_then(|p| p.temp.as_ref()).expect("just pushed"))
    }

    /// A path to write the final file `path` through: an unnamed temporary's `/proc/self/fd/N`
    /// on Linux (no extension: writers must not choose the format by this name), else a hidden
    /// name beside `path`.
    pub fn temp_for(&mut self, path: &Path) -> Result<PathBuf> {
        Ok(self.temp(path)?.write_path())
    }

    /// A float32 NIfTI volume; `path` ends in `.nii.gz` and is renamed to `.nii` when
    /// `FSLOUTPUTTYPE=NIFTI`.
    pub fn nifti(&mut self, path: &Path, geom: &Geometry, nvol: usize, data: &[f32]) -> Result<()> {
        let (fin, gz, f) = self.nifti_temp(path)?;
        f.and_then(|f| write_nifti_to(f, gz, geom, nvol, data)).map_err(|e| anyhow!("cannot write {}: {}", fin.display(), plain_io(&e)))
    }

    /// Several float32 NIfTI volumes on one grid, `(path, nvol, data)` each as in
    /// [`Outputs::nifti`], written (and compressed) concurrently: a map's header, file creation
    /// and last partial wave of members no longer wait for the one before. Each file's wall time
    /// is a stage (`runtime::stages`) named `write NAME`.
    pub fn niftis(&mut self, geom: &Geometry, maps: &[(PathBuf, usize, &[f32])]) -> Result<()> {
        self.niftis_of(geom, &maps.iter().map(|(p, n, d)| (p.clone(), *n, Voxels::Held(d))).collect::<Vec<_>>())
    }

    /// [`Outputs::niftis`] of [`Voxels`], held or made as the writer reaches them.
    pub fn niftis_of(&mut self, geom: &Geometry, maps: &[(PathBuf, usize, Voxels<'_>)]) -> Result<()> {
        use rayon::prelude::*;
        let files = maps.iter().map(|(p, _, _)| self.nifti_temp(p)).collect::<Result<Vec<_>>>()?;
        files.into_par_iter().zip(maps.par_iter()).try_for_each(|((fin, gz, f), (_, nvol, data))| {
            let name = fin.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned());
            crate::runtime::stages::stage(&format!("write {name}"), || f.and_then(|f| write_voxels_to(f, gz, geom, *nvol, *data)))
                .map_err(|e| anyhow!("cannot write {}: {}", fin.display(), plain_io(&e)))
        })
    }

    /// The final name of a NIfTI output, whether it is compressed, and its temporary opened.
    fn nifti_temp(&mut self, path: &Path) -> Result<(PathBuf, bool, std::io::Result<std::fs::File>)> {
        let fin = self.kind.apply(path);
        let gz = self.kind == OutputType::NiftiGz || fin.to_string_lossy().ends_with(".gz");
        let f = match self.temp(&fin)? {
            Temp::Anon(f) => f.try_clone(),
            Temp::Named(p) => super::create_file(p),
        };
        Ok((fin, gz, f))
    }

    /// Any other file, written by `write` to the path it is given (see [`Outputs::temp_for`]).
    pub fn file(&mut self, path: &Path, write: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
        let tmp = self.temp_for(path)?;
        write(&tmp).map_err(|e| anyhow!("cannot write {}: {}", path.display(), cause(&e, &tmp, path)))
    }

    /// Moves every temporary to its final name; on a failure, puts back what was moved and
    /// removes every temporary.
    pub fn commit(mut self) -> Result<Vec<PathBuf>> {
        temps::ensure_handler();
        let mut live = temps::lock();
        let pending = std::mem::take(&mut self.pending);
        // Unnamed temporaries get hidden names first (a link is fast and cannot half-fail).
        let mut named: Vec<(PathBuf, PathBuf)> = Vec::new();
        let mut fail: Option<anyhow::Error> = None;
        for (n, p) in pending.into_iter().enumerate() {
            match p.temp {
                Some(Temp::Named(t)) => named.push((t, p.fin)),
                Some(Temp::Anon(f)) if fail.is_none() => {
                    let h = temps::hidden(&p.fin, "part", n);
                    live.push(h.clone());
                    match temps::link(&f, &h) {
                        Ok(()) => named.push((h, p.fin)),
                        Err(e) => fail = Some(anyhow!("cannot write {}: {}", p.fin.display(), plain_io(&e))),
                    }
                }
                _ => {}
            }
        }
        // Then into place, keeping any file replaced (--force) until all have moved.
        let mut moved: Vec<(PathBuf, Option<PathBuf>)> = Vec::new();
        if fail.is_none() {
            for (n, (t, fin)) in named.iter().enumerate() {
                let backup = if fin.is_file() && OVERWRITE.load(Ordering::Relaxed) {
                    let b = temps::hidden(fin, "old", n);
                    live.push(b.clone());
                    if let Err(e) = std::fs::rename(fin, &b) {
                        fail = Some(anyhow!("cannot replace {}: {}", fin.display(), plain_io(&e)));
                        break;
                    }
                    Some(b)
                } else {
                    None
                };
                if let Err(e) = std::fs::rename(t, fin) {
                    if let Some(b) = &backup {
                        let _ = std::fs::rename(b, fin);
                    }
                    let why = if fin.is_dir() { "a folder stands there".to_string() } else { plain_io(&e) };
                    fail = Some(anyhow!("cannot write {}: {}", fin.display(), why));
                    break;
                }
                moved.push((fin.clone(), backup));
            }
        }
        if let Some(e) = fail {
            for (fin, backup) in moved.iter().rev() {
                match backup {
                    Some(b) => {
                        let _ = std::fs::rename(b, fin);
                    }
                    None => {
                        let _ = std::fs::remove_file(fin);
                    }
                }
            }
            for (t, _) in &named {
                let _ = std::fs::remove_file(t);
            }
            let mine: Vec<PathBuf> = named.iter().map(|(t, _)| t.clone()).collect();
            live.retain(|p| !mine.contains(p) && !moved.iter().any(|(_, b)| b.as_ref() == Some(p)) && !is_ours_old(p));
            self.remove_made();
            return Err(e);
        }
        for (_, b) in &moved {
            if let Some(b) = b {
                let _ = std::fs::remove_file(b);
            }
        }
        // With --force, an output's twin under the other FSLOUTPUTTYPE goes once all are in
        // place (a failure before leaves it as it was), so the folder holds one of each.
        if OVERWRITE.load(Ordering::Relaxed) {
            for twin in moved.iter().filter_map(|(f, _)| nifti_twin(f)).filter(|t| t.symlink_metadata().is_ok_and(|m| !m.is_dir())) {
                if let Err(e) = std::fs::remove_file(&twin) {
                    eprintln!("warning: cannot remove {} (the same output under the other FSLOUTPUTTYPE): {}", twin.display(), plain_io(&e));
                }
            }
        }
        let mine: Vec<PathBuf> = named.iter().map(|(t, _)| t.clone()).collect();
        live.retain(|p| !mine.contains(p) && !is_ours_old(p));
        // The folders made now hold the outputs: they stay.
        temps::forget_folders(&std::mem::take(&mut self.made));
        Ok(moved.into_iter().map(|(f, _)| f).collect())
    }

    /// Removes the folders this set made, if empty (its files are gone), and stops watching them.
    fn remove_made(&mut self) {
        let made = std::mem::take(&mut self.made);
        temps::remove_empty(&made);
        temps::forget_folders(&made);
    }
}

/// Backups of this process that no longer exist (moved back or removed).
fn is_ours_old(p: &Path) -> bool {
    !p.exists() && p.file_name().is_some_and(|n| n.to_string_lossy().starts_with(&format!(".neuroport-{}.old-", std::process::id())))
}

/// A writer's error for people: the OS's message, with the temporary's name replaced by the
/// final one.
pub(crate) fn cause(e: &anyhow::Error, tmp: &Path, fin: &Path) -> String {
    if let Some(io) = e.chain().find_map(|c| c.downcast_ref::<std::io::Error>()) {
        return plain_io(io);
    }
    format!("{e:#}").replace(&tmp.display().to_string(), &fin.display().to_string())
}

impl Drop for Outputs {
    fn drop(&mut self) {
        for p in self.pending.drain(..) {
            if let Some(t) = p.temp {
                t.discard();
            }
        }
        self.remove_made();
    }
}

/// The file `SUFFIX` of an output prefix, FSL style: `PREFIX_SUFFIX`. A prefix ending in `/`
/// names a folder, and the files inside it are `STEM_SUFFIX` (`--out results/` writes
/// `results/dti_FA.nii.gz`, not `results/_FA.nii.gz`).
pub fn prefixed(prefix: &Path, stem: &str, suffix: &str) -> PathBuf {
    PathBuf::from(format!("{}_{suffix}", resolve_prefix(prefix, stem).display()))
}

/// An output prefix with a trailing `/` (a folder) completed by `stem`: `results/` and "dti"
/// give `results/dti`; so does a prefix whose last part is `.` or `..`, which can only name a
/// folder (as a prefix it would give hidden files: `._FA.nii.gz`). A prefix ending in an image
/// extension loses it, as FSL's tools make a basename (`--out res/dti.nii.gz` wrote
/// `res/dti.nii.gz_FA.nii.gz`); any other prefix is returned as is.
pub fn resolve_prefix(prefix: &Path, stem: &str) -> PathBuf {
    let s = prefix.to_string_lossy();
    let last = s.rsplit(['/', std::path::MAIN_SEPARATOR]).next().unwrap_or("");
    if last.is_empty() || last == "." || last == ".." {
        return prefix.join(stem);
    }
    let base = [".nii.gz", ".nii"].iter().find_map(|ext| last.strip_suffix(ext).filter(|b| !b.is_empty()));
    match base {
        Some(b) => PathBuf::from(format!("{}{b}", &s[..s.len() - last.len()])),
        None => prefix.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_ending_in_an_image_extension_loses_it() {
        let p = |s: &str| prefixed(Path::new(s), "dti", "FA.nii.gz");
        assert_eq!(p("res/dti.nii.gz"), PathBuf::from("res/dti_FA.nii.gz"));
        assert_eq!(p("res/dti.nii"), PathBuf::from("res/dti_FA.nii.gz"));
        assert_eq!(p("dti.nii.gz"), PathBuf::from("dti_FA.nii.gz"));
        // Unchanged: a plain prefix, a folder, and a name that is only the extension.
        assert_eq!(p("res/dti"), PathBuf::from("res/dti_FA.nii.gz"));
        assert_eq!(p("res/"), PathBuf::from("res/dti_FA.nii.gz"));
        assert_eq!(p("res/.nii"), PathBuf::from("res/.nii_FA.nii.gz"));
        assert_eq!(p("res.nii.gz/x"), PathBuf::from("res.nii.gz/x_FA.nii.gz"));
    }
}
