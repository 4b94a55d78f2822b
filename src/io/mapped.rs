//! A file's next bytes written from every core through a shared mapping (Linux). One thread's
//! `write()` into the page cache reached 4.7-4.9 GB/s on the H100 host, a mapping filled from 8
//! to 16 threads 11.5-12.6 GB/s, and several threads' `write()`s to one file no more than one's
//! (round 32: `scripts/device/mmap_write_rate.c`, `pwrite_rate.py`).

use rayon::prelude::*;
use std::fs::File;
use std::os::unix::fs::FileExt;

/// Appends at the end of `f` (whose first `end` bytes are written): each window's pieces are
/// copied into a mapping of the window's range by their own tasks. The range is reserved first
/// (`fallocate`), so a full disk is an error there, not a SIGBUS while copying; where the file
/// system cannot reserve or map, the pieces are written one after another instead.
pub struct MappedAppend {
    f: File,
    end: u64,
    mapping: bool,
}

impl MappedAppend {
    /// `f` opened for reading and writing (a shared writable mapping needs both).
    pub fn new(f: File, end: u64) -> MappedAppend {
        MappedAppend { f, end, mapping: true }
    }

    /// Appends the pieces' bytes in order.
    pub fn append(&mut self, pieces: &[&[u8]]) -> std::io::Result<()> {
        let total: usize = pieces.iter().map(|p| p.len()).sum();
        if total == 0 {
            return Ok(());
        }
        if self.mapping {
            match self.mapped(pieces, total) {
                Ok(()) => {
                    self.end += total as u64;
                    return Ok(());
                }
                Err(e) if unsupported(&e) => self.mapping = false,
                Err(e) => return Err(e),
            }
        }
        for p in pieces {
            self.f.write_all_at(p, self.end)?;
            self.end += p.len() as u64;
        }
        Ok(())
    }

    fn mapped(&self, pieces: &[&[u8]], total: usize) -> std::io::Result<()> {
        use std::os::fd::AsRawFd;
        let fd = self.f.as_raw_fd();
        // SAFETY: plain system calls on an open descriptor; the mapping is checked for failure.
        if unsafe { libc::fallocate(fd, 0, self.end as libc::off_t, total as libc::off_t) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let page = (unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).max(1) as u64;
        let start = self.end / page * page;
        let skip = (self.end - start) as usize;
        let len = skip + total;
        let base = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd, start as libc::off_t) };
        if base == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let mut at = Vec::with_capacity(pieces.len());
        let mut o = skip;
        for p in pieces {
            at.push(o);
            o += p.len();
        }
        let addr = base as usize;
        // SAFETY: each piece goes to its own range inside the mapping (prefix sums of the
        // lengths, within `len`), the ranges do not overlap, and the mapping outlives the copies.
        pieces.par_iter().zip(at).for_each(|(p, o)| unsafe { std::ptr::copy_nonoverlapping(p.as_ptr(), (addr as *mut u8).add(o), p.len()) });
        if unsafe { libc::munmap(base, len) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }

    /// The file, its bytes all written.
    pub fn into_file(self) -> File {
        self.f
    }
}

/// A file system (or file) that cannot reserve space or be mapped: written instead.
fn unsupported(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EOPNOTSUPP) | Some(libc::ENOSYS) | Some(libc::ENODEV) | Some(libc::EINVAL) | Some(libc::EACCES))
}

#[cfg(test)]
#[test]
fn appends_give_the_bytes_in_order_after_what_was_there() {
    use rand::Rng;
    let (seed, mut r) = crate::synth::fresh_rng();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("f.bin");
    let head = b"a header of odd length\n".to_vec();
    std::fs::write(&p, &head).unwrap();
    let f = std::fs::OpenOptions::new().read(true).write(true).open(&p).unwrap();
    let mut m = MappedAppend::new(f, head.len() as u64);
    let mut want = head.clone();
    // Windows across page boundaries, empty pieces and windows among them.
    for _ in 0..6 {
        let pieces: Vec<Vec<u8>> = (0..r.random_range(0..40)).map(|_| (0..r.random_range(0..9000)).map(|_| r.random()).collect()).collect();
        m.append(&pieces.iter().map(|p| &p[..]).collect::<Vec<_>>()).unwrap();
        want.extend(pieces.concat());
    }
    drop(m.into_file());
    assert!(std::fs::read(&p).unwrap() == want, "seed {seed}: the file differs");
}
