//! How much memory this machine has free, so a request that cannot fit is an error up front
//! instead of an allocation abort (or the OOM killer) halfway through.

use anyhow::{bail, Result};

/// MemAvailable of /proc/meminfo in bytes; `None` where there is no such file (not Linux).
pub fn available() -> Option<u64> {
    // NEUROPORT_MEMORY_AVAILABLE=bytes stands in for /proc/meminfo: tests reach the refusals
    // without a machine that small (and without allocating what they refuse).
    if let Some(b) = std::env::var("NEUROPORT_MEMORY_AVAILABLE").ok().and_then(|v| v.trim().parse().ok()) {
        return Some(b);
    }
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kb: u64 = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// An error naming `what` when it needs more than `available` bytes (unknown: no check).
pub fn check_fits(what: &str, needed: f64, available: Option<u64>) -> Result<()> {
    match available {
        Some(a) if needed > a as f64 => bail!("{what} needs about {} of memory, and {} is available", size(needed), size(a as f64)),
        _ => Ok(()),
    }
}

/// Bytes in GiB, or in the binary unit above that keeps the figure below 1024.
fn size(bytes: f64) -> String {
    let mut v = bytes / (1u64 << 30) as f64;
    for unit in ["GiB", "TiB", "PiB"] {
        if v < 1024.0 {
            return format!("{v:.1} {unit}");
        }
        v /= 1024.0;
    }
    format!("{v:.1} EiB")
}

/// Refuses, as the user's error, `count` items of `bytes_each` bytes that this machine cannot
/// hold (more than [`available`], or than the allocator would give: an overflow counts as too
/// many), instead of the abort (with a backtrace) or the OOM kill that allocating them would
/// be. `what` names the option or input that asked for them.
pub fn room_for(what: &str, count: usize, bytes_each: usize) -> Result<()> {
    let needed = count as f64 * bytes_each as f64;
    let what = format!("{what}: too large:");
    check_fits(&what, needed, available())?;
    // Where MemAvailable is unknown (or allows it): what the allocator says, without touching a
    // page.
    if count.checked_mul(bytes_each).is_none_or(|b| Vec::<u8>::new().try_reserve_exact(b).is_err()) {
        bail!("{what} {count} x {bytes_each} bytes are more than fit in memory");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fits_or_names_both_sizes() {
        assert!(check_fits("x", 1e9, Some(2 << 30)).is_ok());
        assert!(check_fits("x", 1e30, None).is_ok());
        let e = check_fits("a thing", 3.0 * (1u64 << 30) as f64, Some(1 << 30)).unwrap_err().to_string();
        assert_eq!(e, "a thing needs about 3.0 GiB of memory, and 1.0 GiB is available");
        let e = check_fits("b", 1.5 * (1u64 << 50) as f64, Some(1 << 30)).unwrap_err().to_string();
        assert_eq!(e, "b needs about 1.5 PiB of memory, and 1.0 GiB is available");
    }

    #[test]
    fn room_for_refuses_an_overflow_and_what_the_allocator_will_not_give() {
        assert!(room_for("x", 1000, 8).is_ok());
        for (count, each) in [(usize::MAX, 2), (usize::MAX / 2, 1)] {
            let e = room_for("--dims 9", count, each).unwrap_err().to_string();
            assert!(e.starts_with("--dims 9: too large: "), "{e}");
        }
    }
}
