//! All-or-nothing output: every file of a command is written under a temporary name beside its
//! final one, and all are renamed only when the command succeeds. Dropping an uncommitted set
//! removes the temporaries, so a failed run leaves no partial file.

use super::{write_nifti, Geometry};
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

#[derive(Default)]
pub struct Outputs {
    pending: Vec<(PathBuf, PathBuf)>,
}

impl Outputs {
    pub fn new() -> Outputs {
        Outputs::default()
    }

    /// The temporary path for `path`; it keeps the extension so writers that choose compression
    /// or format by extension (.nii.gz, .tck, .trk) behave as for the final name.
    pub fn temp_for(&mut self, path: &Path) -> Result<PathBuf> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).with_context(|| format!("cannot create the folder {}", dir.display()))?;
        }
        let name = path.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
        let tmp = path.with_file_name(format!(".{}.part-{}-{}", std::process::id(), self.pending.len(), name));
        self.pending.push((tmp.clone(), path.to_path_buf()));
        Ok(tmp)
    }

    pub fn nifti(&mut self, path: &Path, geom: &Geometry, nvol: usize, data: &[f32]) -> Result<()> {
        let tmp = self.temp_for(path)?;
        write_nifti(&tmp, geom, nvol, data).with_context(|| format!("cannot write {}", path.display()))
    }

    /// Any other file, written by `write` to the temporary path it is given.
    pub fn file(&mut self, path: &Path, write: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
        let tmp = self.temp_for(path)?;
        write(&tmp).with_context(|| format!("cannot write {}", path.display()))
    }

    /// Renames every temporary to its final name.
    pub fn commit(mut self) -> Result<Vec<PathBuf>> {
        let mut done = Vec::new();
        for (tmp, fin) in std::mem::take(&mut self.pending) {
            std::fs::rename(&tmp, &fin).with_context(|| format!("cannot move {} into place", fin.display()))?;
            done.push(fin);
        }
        Ok(done)
    }
}

impl Drop for Outputs {
    fn drop(&mut self) {
        for (tmp, _) in &self.pending {
            let _ = std::fs::remove_file(tmp);
        }
    }
}
