//! Temporary output files that a failed, interrupted or killed run does not leave behind.
//!
//! On Linux a temporary is an unnamed file (`O_TMPFILE`) in the output's folder: it has no name
//! until the commit links it in (`linkat` through `/proc/self/fd`), so the kernel frees it when
//! the process dies, even by SIGKILL. Elsewhere (or on a filesystem without `O_TMPFILE`) it is a
//! hidden `.neuroport-PID.part-N-NAME` beside the final file; those are registered here and
//! removed on SIGINT/SIGTERM/SIGHUP by a handler thread, and ones left by a dead process (a
//! SIGKILL, a power cut) are removed by the next run that writes to the same folder.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Named temporaries and backups that exist on disk now. The commit holds this lock while it
/// moves files, so a signal waits for a commit to finish (all or nothing) before cleaning up.
pub(super) static LIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

pub(super) fn lock() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    LIVE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Scratch folders (whole trees) that a signal removes too: a `Drop` that removes them on an
/// error or a normal end is never reached when SIGINT/SIGTERM ends the process.
static SCRATCH: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn scratch() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    SCRATCH.lock().unwrap_or_else(|p| p.into_inner())
}

/// Registers a scratch folder for removal (with everything inside) on SIGINT/SIGTERM/SIGHUP;
/// its owner removes it otherwise and calls [`forget_scratch`].
pub fn register_scratch(dir: &Path) {
    install_handler();
    scratch().push(dir.to_path_buf());
}

/// Stops watching a scratch folder (its owner has removed it).
pub fn forget_scratch(dir: &Path) {
    scratch().retain(|q| q != dir);
}

/// Output folders an uncommitted output set created (they did not exist before the command), so
/// that a signal removes them too once the temporaries inside are gone.
static MADE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn made() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    MADE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Watches a folder about to be created for an output (see [`MADE`]).
pub(super) fn made_folder(dir: &Path) {
    install_handler();
    made().push(dir.to_path_buf());
}

/// Stops watching `dirs` (their set committed, or removed them).
pub(super) fn forget_folders(dirs: &[PathBuf]) {
    made().retain(|q| !dirs.contains(q));
}

/// Removes the folders of `dirs` that are empty, deepest first (so a chain `a/b/c` goes whole);
/// a folder that holds anything (another command's file) stays.
pub(super) fn remove_empty(dirs: &[PathBuf]) {
    let mut dirs = dirs.to_vec();
    dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
    for d in &dirs {
        let _ = std::fs::remove_dir(d);
    }
}

/// A file being written.
pub(super) enum Temp {
    /// Unnamed (O_TMPFILE); written through `/proc/self/fd/N`.
    Anon(File),
    /// A hidden name beside the final file (registered in [`LIVE`]).
    Named(PathBuf),
}

impl Temp {
    /// A path the writer can open to write the temporary.
    pub fn write_path(&self) -> PathBuf {
        match self {
            Temp::Anon(f) => fd_path(f),
            Temp::Named(p) => p.clone(),
        }
    }
    /// Removes a named temporary (an unnamed one goes when its handle closes).
    pub fn discard(self) {
        if let Temp::Named(p) = self {
            let _ = std::fs::remove_file(&p);
            forget(&p);
        }
    }
}

#[cfg(target_os = "linux")]
fn fd_path(f: &File) -> PathBuf {
    use std::os::fd::AsRawFd;
    PathBuf::from(format!("/proc/self/fd/{}", f.as_raw_fd()))
}
#[cfg(not(target_os = "linux"))]
fn fd_path(_: &File) -> PathBuf {
    unreachable!("unnamed temporaries exist on Linux only")
}

/// The hidden name of temporary `n` (or of a backup, `kind` = "old") for `fin`.
pub(super) fn hidden(fin: &Path, kind: &str, n: usize) -> PathBuf {
    let name = fin.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
    fin.with_file_name(format!(".neuroport-{}.{kind}-{n}-{name}", std::process::id()))
}

pub(super) fn register(p: &Path) {
    install_handler();
    lock().push(p.to_path_buf());
}

pub(super) fn forget(p: &Path) {
    lock().retain(|q| q != p);
}

/// Opens `path` for writing from its start, as `File::create` does, but without truncating a
/// file that is already empty (an output's temporary, which the writers open by name): ext4
/// (`auto_da_alloc`) marks a file truncated to length 0 and, when it is closed, starts writing
/// out all its delayed blocks in the closing thread, which took ~0.3 s for a 0.74 GB tractogram
/// on the H100 host (round 32). A file with content is truncated.
pub fn create_file(path: &Path) -> std::io::Result<File> {
    let f = std::fs::OpenOptions::new().write(true).create(true).truncate(false).open(path)?;
    if f.metadata()?.len() > 0 {
        f.set_len(0)?;
    }
    Ok(f)
}

/// A new temporary for `fin` (number `n` of its set).
pub(super) fn create(fin: &Path, n: usize) -> std::io::Result<Temp> {
    let dir = fin.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    remove_stale(dir);
    if let Some(f) = anon_in(dir) {
        return Ok(Temp::Anon(f));
    }
    let p = hidden(fin, "part", n);
    register(&p);
    match File::create(&p) {
        Ok(_) => Ok(Temp::Named(p)),
        Err(e) => {
            forget(&p);
            Err(e)
        }
    }
}

#[cfg(target_os = "linux")]
fn anon_in(dir: &Path) -> Option<File> {
    use std::os::unix::fs::OpenOptionsExt;
    if std::env::var_os("NEUROPORT_NO_TMPFILE").is_some() || !Path::new("/proc/self/fd").is_dir() {
        return None;
    }
    std::fs::OpenOptions::new().read(true).write(true).custom_flags(libc::O_TMPFILE).mode(0o666).open(dir).ok()
}
#[cfg(not(target_os = "linux"))]
fn anon_in(_: &Path) -> Option<File> {
    None
}

/// Gives an unnamed temporary the name `to` (which must not exist).
#[cfg(target_os = "linux")]
pub(super) fn link(f: &File, to: &Path) -> std::io::Result<()> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let from = CString::new(fd_path(f).as_os_str().as_bytes())?;
    let to_c = CString::new(to.as_os_str().as_bytes())?;
    // SAFETY: both arguments are NUL-terminated strings that outlive the call.
    let r = unsafe { libc::linkat(libc::AT_FDCWD, from.as_ptr(), libc::AT_FDCWD, to_c.as_ptr(), libc::AT_SYMLINK_FOLLOW) };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}
#[cfg(not(target_os = "linux"))]
pub(super) fn link(_: &File, _: &Path) -> std::io::Result<()> {
    unreachable!("unnamed temporaries exist on Linux only")
}

/// Removes `.neuroport-PID.*` files (and the `.PID.part-N-*` names of earlier versions) whose
/// process is gone.
fn remove_stale(dir: &Path) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        let rest = name.strip_prefix(".neuroport-").or_else(|| name.strip_prefix('.'));
        let Some((pid, tail)) = rest.and_then(|r| r.split_once('.')) else { continue };
        let ours = tail.starts_with("part-") || (name.starts_with(".neuroport-") && tail.starts_with("old-"));
        let Ok(pid) = pid.parse::<u32>() else { continue };
        if ours && pid != std::process::id() && !alive(pid) && e.file_type().map(|t| t.is_file()).unwrap_or(false) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

#[cfg(unix)]
fn alive(pid: u32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    let r = unsafe { libc::kill(pid as libc::pid_t, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}
#[cfg(not(unix))]
fn alive(_: u32) -> bool {
    true
}

/// On SIGINT/SIGTERM/SIGHUP: wait for a commit in progress, remove every named temporary, then
/// let the signal take its course (the handler found before ours runs, else the default: the
/// process ends by that signal, as a shell expects). Our handler replaces the one found rather
/// than chaining to it, because runtimes loaded before (PoCL's LLVM) install handlers that
/// re-raise at once and would end the process before the clean-up; the signal itself only
/// writes a byte to a pipe (async-signal-safe), and a thread does the rest.
fn install_handler() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        #[cfg(unix)]
        signals::install();
    });
}

#[cfg(unix)]
mod signals {
    use std::sync::atomic::{AtomicI32, Ordering};
    static PIPE_W: AtomicI32 = AtomicI32::new(-1);
    const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

    extern "C" fn on_signal(sig: libc::c_int) {
        let fd = PIPE_W.load(Ordering::Relaxed);
        if fd >= 0 {
            let b = sig as u8;
            // SAFETY: write(2) is async-signal-safe; the byte lives on this stack frame.
            unsafe { libc::write(fd, &b as *const u8 as *const libc::c_void, 1) };
        }
    }

    pub fn install() {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: pipe(2) fills the two descriptors of a local array.
        if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
            return;
        }
        PIPE_W.store(fds[1], Ordering::Relaxed);
        let mut previous = Vec::new();
        for sig in SIGNALS {
            // SAFETY: zeroed sigaction structs are valid; ours names an extern "C" handler.
            unsafe {
                let mut new: libc::sigaction = std::mem::zeroed();
                let mut old: libc::sigaction = std::mem::zeroed();
                new.sa_sigaction = on_signal as *const () as usize;
                new.sa_flags = libc::SA_RESTART;
                libc::sigemptyset(&mut new.sa_mask);
                if libc::sigaction(sig, &new, &mut old) == 0 {
                    previous.push((sig, old));
                }
            }
        }
        let read_fd = fds[0];
        let _ = std::thread::Builder::new().name("neuroport-signals".into()).spawn(move || {
            let mut b = 0u8;
            // SAFETY: reads one byte into a local.
            let n = unsafe { libc::read(read_fd, &mut b as *mut u8 as *mut libc::c_void, 1) };
            if n != 1 {
                return;
            }
            let sig = b as libc::c_int;
            let live = super::lock();
            for p in live.iter() {
                let _ = std::fs::remove_file(p);
            }
            for d in super::scratch().iter() {
                let _ = std::fs::remove_dir_all(d);
            }
            super::remove_empty(&super::made());
            // SAFETY: restores the disposition saved above and re-raises the same signal.
            unsafe {
                match previous.iter().find(|(s, _)| *s == sig) {
                    Some((_, old)) if old.sa_sigaction != libc::SIG_IGN => {
                        libc::sigaction(sig, old, std::ptr::null_mut());
                    }
                    _ => {
                        libc::signal(sig, libc::SIG_DFL);
                    }
                }
                libc::raise(sig);
            }
            std::process::exit(128 + sig);
        });
    }
}

/// Removes every named temporary, scratch folder and output folder made for them, now: for an
/// exit that skips their owners' `Drop` (a panic hook's). A commit in progress (holding [`LIVE`]
/// with a replaced file's backup in it) is left alone rather than waited for.
pub fn remove_temporaries_now() {
    if let Ok(live) = LIVE.try_lock() {
        for p in live.iter() {
            let _ = std::fs::remove_file(p);
        }
    }
    if let Ok(dirs) = SCRATCH.try_lock() {
        for d in dirs.iter() {
            let _ = std::fs::remove_dir_all(d);
        }
    }
    if let Ok(made) = MADE.try_lock() {
        remove_empty(&made);
    }
}

/// Installs the handler even before the first named temporary (unnamed ones need none, but a
/// commit turns them into named files for a moment).
pub(super) fn ensure_handler() {
    install_handler();
}

#[cfg(test)]
#[test]
fn create_file_starts_empty_whatever_was_there() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("f.bin");
    // Missing, then longer than the new content (no stale tail), then empty.
    for before in [None, Some(&b"0123456789"[..]), Some(&b""[..])] {
        if let Some(b) = before {
            std::fs::write(&p, b).unwrap();
        }
        create_file(&p).unwrap().write_all(b"abc").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"abc", "over {before:?}");
    }
}
