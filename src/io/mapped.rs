//! A file written from every core through one shared mapping of all of it (Linux). On the H100
//! host one thread's `write()` into the page cache reached 3.3-4.9 GB/s and several threads'
//! `write()`s to one file no more; a 3 GiB mapping filled from 16 threads 10.8-11.5 GB/s, but
//! 76 MiB mappings one after another only 1.6-1.7 GB/s (round 32, `scripts/device/
//! mmap_window_rate.c`): the mapping must cover the whole file, so a stream whose length is known
//! only at its end reserves an upper bound and is cut to its length when it ends.

use rayon::prelude::*;
use std::fs::File;
use std::os::fd::AsRawFd;

/// The bytes after `start` of a file, up to a bound reserved on disk (`fallocate`: a full disk
/// is an error when the file is made, not a SIGBUS while it is filled) and mapped at once.
pub struct MappedFile {
    f: File,
    base: usize,
    len: usize,
    end: usize,
}

impl MappedFile {
    /// Reserves `bound` bytes after the `start` already written in `f` (opened for reading and
    /// writing) and maps all of it. An error leaves the file as it was (up to its length).
    pub fn reserve(f: File, start: usize, bound: usize) -> std::io::Result<MappedFile> {
        let fd = f.as_raw_fd();
        let len = start.checked_add(bound).ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "bound too large"))?;
        // SAFETY (here and below): plain system calls on an open descriptor and on the mapping
        // this value owns; each result is checked.
        if unsafe { libc::fallocate(fd, 0, start as libc::off_t, bound.max(1) as libc::off_t) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let base = unsafe { libc::mmap(std::ptr::null_mut(), len.max(1), libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd, 0) };
        if base == libc::MAP_FAILED {
            let e = std::io::Error::last_os_error();
            let _ = f.set_len(start as u64);
            return Err(e);
        }
        Ok(MappedFile { f, base: base as usize, len: len.max(1), end: start })
    }

    /// Appends the pieces' bytes in order, each copied by its own task.
    pub fn append(&mut self, pieces: &[&[u8]]) -> std::io::Result<()> {
        let total: usize = pieces.iter().map(|p| p.len()).sum();
        if self.end + total > self.len {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("{} bytes past the {} reserved", self.end + total - self.len, self.len)));
        }
        let mut at = Vec::with_capacity(pieces.len());
        for p in pieces {
            at.push(self.end);
            self.end += p.len();
        }
        let base = self.base;
        // SAFETY: each piece goes to its own range of the mapping (prefix sums of the lengths,
        // checked against its length above); the ranges do not overlap.
        pieces.par_iter().zip(at).for_each(|(p, o)| unsafe { std::ptr::copy_nonoverlapping(p.as_ptr(), (base as *mut u8).add(o), p.len()) });
        Ok(())
    }

    /// Unmaps, cuts the file to what was appended and returns it.
    pub fn finish(mut self) -> std::io::Result<File> {
        self.unmap()?;
        let f = self.f.try_clone()?;
        f.set_len(self.end as u64)?;
        Ok(f)
    }

    fn unmap(&mut self) -> std::io::Result<()> {
        if self.base != 0 {
            let r = unsafe { libc::munmap(self.base as *mut libc::c_void, self.len) };
            self.base = 0;
            if r != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

impl Drop for MappedFile {
    fn drop(&mut self) {
        let _ = self.unmap();
    }
}

#[cfg(test)]
#[test]
fn appends_give_the_bytes_in_order_after_the_start_and_the_file_is_cut_to_them() {
    use rand::Rng;
    let (seed, mut r) = crate::synth::fresh_rng();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("f.bin");
    let head = b"a header of odd length\n".to_vec();
    std::fs::write(&p, &head).unwrap();
    let f = std::fs::OpenOptions::new().read(true).write(true).open(&p).unwrap();
    let mut m = MappedFile::reserve(f, head.len(), 1 << 20).unwrap();
    let mut want = head.clone();
    // Calls across page boundaries, empty pieces and calls among them.
    for _ in 0..6 {
        let pieces: Vec<Vec<u8>> = (0..r.random_range(0..20)).map(|_| (0..r.random_range(0..9000)).map(|_| r.random()).collect()).collect();
        m.append(&pieces.iter().map(|p| &p[..]).collect::<Vec<_>>()).unwrap();
        want.extend(pieces.concat());
    }
    assert!(m.append(&[&vec![0u8; 1 << 20][..]]).is_err(), "past the bound");
    drop(m.finish().unwrap());
    assert!(std::fs::read(&p).unwrap() == want, "seed {seed}: the file differs");
}
