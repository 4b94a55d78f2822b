//! The command's allocator: the system's, with transparent huge pages asked for (madvise
//! MADV_HUGEPAGE) on every allocation of 4 MiB or more. Volumes, sample arrays and their outputs
//! are hundreds of megabytes that are written once from fresh pages; with 4 KiB pages each
//! costs a fault per page, slow on the lent GPU host (a virtual machine). Round 26, H100 host,
//! three alternating runs each: this advice against NEUROPORT_HUGE_PAGES=0, `bedpost` on the
//! issue-7 volume 2.31-2.36 -> 2.09-2.23 s, `probtrack` on its samples 0.79-0.83 -> 0.66-0.69,
//! `fim --target` 0.81-0.86 -> 0.76-0.80, `dti` and `register` within their spread (glibc's own
//! switch, GLIBC_TUNABLES=glibc.malloc.hugetlb=1, had also taken `dti` 1.16-1.26 -> 1.08-1.12).
//! Where the kernel's THP setting is `never` the advice does nothing; `NEUROPORT_HUGE_PAGES=0`
//! turns it off (for measuring). Only the command's own allocations: the library imposes no
//! allocator.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, Ordering};

/// Allocations from this size on are advised.
const BIG: usize = 4 << 20;
/// The huge page's size on x86-64 and most aarch64 kernels; only whole, aligned ones are advised.
const HUGE: usize = 2 << 20;

static ON: AtomicBool = AtomicBool::new(true);

/// Reads `NEUROPORT_HUGE_PAGES` (main calls it first; the allocator itself reads no environment).
pub fn configure() {
    if std::env::var_os("NEUROPORT_HUGE_PAGES").is_some_and(|v| v == "0") {
        ON.store(false, Ordering::Relaxed);
    }
}

/// The whole huge pages inside [at, at + size), as (start, length), if any.
fn whole_pages(at: usize, size: usize) -> Option<(usize, usize)> {
    let start = at.checked_next_multiple_of(HUGE)?;
    let end = at.checked_add(size)? & !(HUGE - 1);
    (end > start).then(|| (start, end - start))
}

/// Advises the whole huge pages of an allocation of `size` bytes at p.
fn advise(p: *mut u8, size: usize) {
    if p.is_null() || size < BIG || !ON.load(Ordering::Relaxed) {
        return;
    }
    if let Some((start, len)) = whole_pages(p as usize, size) {
        // SAFETY: the range lies inside the allocation just made; advice changes no contents,
        // and a failure (no THP in this kernel) leaves the pages as they were.
        unsafe {
            libc::madvise(start as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
        }
    }
}

pub struct HugePages;

// SAFETY: every call is the system allocator's, with the same layouts; advise only hints.
unsafe impl GlobalAlloc for HugePages {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        advise(p, layout.size());
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        advise(p, layout.size());
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        advise(p, new_size);
        p
    }
}

#[cfg(test)]
mod tests {
    use super::{whole_pages, HUGE};

    /// Only whole, aligned huge pages inside the allocation are advised: never a byte outside it.
    #[test]
    fn only_whole_pages_inside_the_allocation() {
        for (at, size) in [(HUGE, 2 * HUGE), (HUGE + 16, 2 * HUGE), (16, 4 * HUGE), (HUGE - 1, HUGE + 1), (3 * HUGE + 5, HUGE), (usize::MAX - HUGE, HUGE)] {
            match whole_pages(at, size) {
                Some((start, len)) => {
                    assert!(start >= at && start + len <= at + size, "{at} {size}: {start} {len}");
                    assert!(start % HUGE == 0 && len % HUGE == 0 && len > 0, "{at} {size}: {start} {len}");
                    // No whole page left out at either end.
                    assert!(start - at < HUGE && at + size - (start + len) < HUGE, "{at} {size}: {start} {len}");
                }
                None => assert!(at.checked_add(size).is_none_or(|end| (end & !(HUGE - 1)) <= at.next_multiple_of(HUGE)), "{at} {size}"),
            }
        }
        assert_eq!(whole_pages(HUGE + 16, 2 * HUGE), Some((2 * HUGE, HUGE)));
        assert_eq!(whole_pages(HUGE - 1, HUGE + 1), Some((HUGE, HUGE)));
        assert_eq!(whole_pages(3 * HUGE + 5, HUGE), None);
    }
}
