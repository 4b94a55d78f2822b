//! Wall time of a command's stages (device discovery, read, device init, fit, each output
//! written...), so a user or a device script can see where a command's wall time goes beyond
//! the device's own kernel and transfer times. Always recorded (a lock per stage); printed as
//! one `stages:` line on stderr by the CLI when `NEUROPORT_STAGES=1`.

use std::sync::{Arc, Mutex};
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

/// A stage run on a thread of its own while the command goes on (a device released while the
/// outputs are written: a CUDA context's release takes 60-80 ms on the H100), joined when
/// dropped, so it has ended before the command returns, on success or error.
pub struct Aside(Option<std::thread::JoinHandle<()>>);

type Job = Box<dyn FnOnce() + Send>;

impl Aside {
    pub fn spawn(name: &'static str, f: impl FnOnce() + Send + 'static) -> Aside {
        // Where no thread can be made, the stage runs here instead.
        let slot: Arc<Mutex<Option<Job>>> = Arc::new(Mutex::new(Some(Box::new(f))));
        let take = |s: &Mutex<Option<Job>>| s.lock().unwrap_or_else(|e| e.into_inner()).take();
        let theirs = slot.clone();
        match std::thread::Builder::new().name(name.into()).spawn(move || {
            if let Some(job) = take(&theirs) {
                stage(name, job)
            }
        }) {
            Ok(h) => Aside(Some(h)),
            Err(_) => {
                if let Some(job) = take(&slot) {
                    stage(name, job)
                }
                Aside(None)
            }
        }
    }
}

impl Drop for Aside {
    fn drop(&mut self) {
        if let Some(h) = self.0.take() {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[test]
    fn an_aside_stage_has_ended_when_its_guard_drops() {
        let done = Arc::new(AtomicBool::new(false));
        let d = done.clone();
        let guard = Aside::spawn("aside test", move || {
            std::thread::sleep(std::time::Duration::from_millis(50));
            d.store(true, Ordering::SeqCst);
        });
        drop(guard);
        assert!(done.load(Ordering::SeqCst), "the guard returned before its stage ended");
        assert!(LOG.lock().unwrap().iter().any(|(n, ms)| n == "aside test" && *ms >= 40.0), "stage not recorded");
    }
}
