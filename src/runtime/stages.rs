//! Wall time of a command's stages (device discovery, read, device init, fit, each output
//! written...), so a user or a device script can see where a command's wall time goes beyond
//! the device's own kernel and transfer times. Always recorded (a lock per stage); printed as
//! one `stages:` line on stderr by the CLI when `NEUROPORT_STAGES=1`.

use std::sync::Mutex;
use std::time::Instant;

static LOG: Mutex<Vec<(String, f64)>> = Mutex::new(Vec::new());

/// Whether the CLI prints the stages line.
pub fn wanted() -> bool {
    std::env::var("NEUROPORT_STAGES").is_ok_and(|v| v == "1")
}

/// Runs `f`, recording its wall time as stage `name` (stages may run concurrently: the
/// parallel output writes each record their own).
pub fn stage<R>(name: &str, f: impl FnOnce() -> R) -> R {
    let t = Instant::now();
    let r = f();
    record(name, t.elapsed().as_secs_f64() * 1e3);
    r
}

pub fn record(name: &str, ms: f64) {
    LOG.lock().unwrap_or_else(|e| e.into_inner()).push((name.to_string(), ms));
}

/// Milliseconds from the process's start (exec) to now, from /proc (10 ms resolution); None
/// where /proc is missing. Covers the loader and the runtime's start before `main`.
pub fn since_exec_ms() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Field 22 (starttime, clock ticks after boot) counted after the ")" closing the name.
    let start: f64 = stat.rsplit_once(')')?.1.split_whitespace().nth(19)?.parse().ok()?;
    let up: f64 = std::fs::read_to_string("/proc/uptime").ok()?.split_whitespace().next()?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let tck = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    (tck > 0.0).then(|| (up - start / tck).max(0.0) * 1e3)
}

/// `stages: exec->main 10 ms, devices 180 ms, read 412 ms, ... ; main 1503 ms` (stages in the
/// order they ended).
pub fn line(before_main_ms: Option<f64>, main_ms: f64) -> String {
    let log = LOG.lock().unwrap_or_else(|e| e.into_inner());
    let mut parts: Vec<String> = before_main_ms.map(|m| format!("exec->main {m:.0} ms")).into_iter().collect();
    parts.extend(log.iter().map(|(n, ms)| format!("{n} {ms:.0} ms")));
    format!("stages: {}; main {main_ms:.0} ms", parts.join(", "))
}
