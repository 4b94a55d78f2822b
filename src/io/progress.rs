//! Progress of long runs on stderr. On a terminal, indicatif's bar. Elsewhere (a log file, a
//! batch job's output) the bar hid itself and an hours-long bedpost said nothing until it ended;
//! there a plain line is written now and then instead, never a carriage return or an escape.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Lines closer than this are skipped even at a new tenth (short runs print one or two).
const MIN_GAP: Duration = Duration::from_secs(5);
/// A line at least this often, so a tenth that takes an hour still shows the run is alive.
const MAX_GAP: Duration = Duration::from_secs(300);

pub struct Progress {
    bar: ProgressBar,
    log: Option<Mutex<Log>>,
    /// What is counted and in which unit ("dti", "voxels"), for [`Progress::piece`]'s words.
    names: [String; 2],
}

impl Progress {
    pub fn hidden() -> Progress {
        Progress { bar: ProgressBar::hidden(), log: None, names: Default::default() }
    }

    /// `len` units of work: on a terminal a bar drawn with indicatif's `template`; elsewhere
    /// lines such as "bedpost: 1450/3480 voxels (41%), 12s elapsed, about 17s left".
    pub fn new(len: u64, show: bool, template: &str, what: &str, unit: &str) -> Progress {
        Progress::since(Instant::now(), len, show, template, what, unit)
    }

    /// [`Progress::new`] for work that began at `start`: a bar made only once the work has
    /// proved long counts its elapsed time and its estimate from the start.
    pub fn since(start: Instant, len: u64, show: bool, template: &str, what: &str, unit: &str) -> Progress {
        if !show {
            return Progress::hidden();
        }
        let names = [what.into(), unit.into()];
        if std::io::stderr().is_terminal() {
            let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr()).with_elapsed(start.elapsed());
            if let Ok(style) = ProgressStyle::with_template(template) {
                bar.set_style(style);
            }
            return Progress { bar, log: None, names };
        }
        Progress { bar: ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::hidden()), log: Some(Mutex::new(Log::new(what, unit, len, start))), names }
    }

    /// `len` units counted and never shown: for tests of how far a run moves its bar.
    #[cfg(test)]
    pub(crate) fn silent(len: u64) -> Progress {
        Progress { bar: ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::hidden()), log: None, names: Default::default() }
    }

    #[cfg(test)]
    pub(crate) fn position(&self) -> u64 {
        self.bar.position()
    }

    #[cfg(test)]
    pub(crate) fn length(&self) -> Option<u64> {
        self.bar.length()
    }

    pub fn inc(&self, n: u64) {
        self.bar.inc(n);
        if let Some(log) = &self.log {
            let line = log.lock().map(|mut l| l.advance(n, Instant::now())).unwrap_or(None);
            if let Some(line) = line {
                eprintln!("{line}");
            }
        }
    }

    pub fn finish_and_clear(&self) {
        self.bar.finish_and_clear();
    }

    /// `f`, a piece of `n` units that moves the bar only when it ends. A piece that is the whole
    /// work (a single-GPU dti fit in one chunk) had shown nothing until the summary; it shows a
    /// spinner with the time on a terminal, and in a log [`Waiting`]'s lines.
    pub fn piece<T>(&self, n: u64, f: impl FnOnce() -> T) -> T {
        let whole = n > 0 && self.bar.position() == 0 && self.bar.length() == Some(n);
        let [what, unit] = &self.names;
        let r = match &self.log {
            Some(_) if whole => waiting_lines(Waiting::new(what, unit, n, Instant::now()), f, |line| eprintln!("{line}")),
            None if whole && !self.bar.is_hidden() => {
                let style = self.bar.style();
                if let Ok(spin) = ProgressStyle::with_template(&format!("{what} {{spinner}} {{len}} {unit} in one piece ({{elapsed}})")) {
                    self.bar.set_style(spin);
                }
                self.bar.enable_steady_tick(Duration::from_millis(200));
                let r = f();
                self.bar.disable_steady_tick();
                self.bar.set_style(style);
                r
            }
            _ => f(),
        };
        self.inc(n);
        r
    }
}

/// `f` with `w`'s lines handed to `out` from a second thread while it runs (the last when it ends).
fn waiting_lines<T>(mut w: Waiting, f: impl FnOnce() -> T, out: impl Fn(String) + Send) -> T {
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    std::thread::scope(|s| {
        s.spawn(move || {
            while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(w.next().saturating_duration_since(Instant::now())) {
                if let Some(line) = w.at(Instant::now()) {
                    out(line);
                }
            }
            if let Some(line) = w.done(Instant::now()) {
                out(line);
            }
        });
        let r = f();
        drop(tx);
        r
    })
}

/// The log lines of a piece that is the whole work: nothing counts within it, so no tenths and no
/// time left. Short pieces print nothing (the command's summary follows); one that runs MIN_GAP
/// gets a line then, another each MAX_GAP, and one when it ends (so a log does not stay on
/// "running" while the command writes its outputs).
pub(crate) struct Waiting {
    what: String,
    unit: String,
    len: u64,
    start: Instant,
    last: Option<Instant>,
}

impl Waiting {
    pub(crate) fn new(what: &str, unit: &str, len: u64, start: Instant) -> Waiting {
        Waiting { what: what.into(), unit: unit.into(), len, start, last: None }
    }

    /// When the next line is due.
    fn next(&self) -> Instant {
        self.last.map_or(self.start + MIN_GAP, |t| t + MAX_GAP)
    }

    pub(crate) fn at(&mut self, now: Instant) -> Option<String> {
        if now < self.next() {
            return None;
        }
        self.last = Some(now);
        Some(format!("{}: {} {} in one piece, {} elapsed (counted when it ends)", self.what, self.len, self.unit, span(now.duration_since(self.start).as_secs_f64())))
    }

    pub(crate) fn done(&self, now: Instant) -> Option<String> {
        self.last?;
        Some(format!("{}: {}/{} {} (100%), {} elapsed", self.what, self.len, self.len, self.unit, span(now.duration_since(self.start).as_secs_f64())))
    }
}

/// When a log line is due: at each new tenth of the work (the first at once, later ones
/// MIN_GAP apart), and after MAX_GAP without one. Shared by [`Log`] and fim's log lines.
pub(crate) struct Cadence {
    pub(crate) start: Instant,
    last: Option<Instant>,
    tenth: u64,
}

impl Cadence {
    pub(crate) fn new(start: Instant, tenth: u64) -> Cadence {
        Cadence { start, last: None, tenth }
    }

    /// Whether a line is due at `now` with the work at `tenth`; if so it counts as written.
    pub(crate) fn due(&mut self, tenth: u64, now: Instant) -> bool {
        let since = self.last.map(|t| now.duration_since(t));
        let due = (tenth > self.tenth && since.is_none_or(|s| s >= MIN_GAP)) || since.unwrap_or(now.duration_since(self.start)) >= MAX_GAP;
        if due {
            self.tenth = tenth;
            self.last = Some(now);
        }
        due
    }
}

/// The line-by-line form of a bar.
pub(crate) struct Log {
    what: String,
    unit: String,
    len: u64,
    pos: u64,
    cadence: Cadence,
}

impl Log {
    pub(crate) fn new(what: &str, unit: &str, len: u64, start: Instant) -> Log {
        Log { what: what.into(), unit: unit.into(), len, pos: 0, cadence: Cadence::new(start, 0) }
    }

    /// Moves on by `n` at `now`; the line due then, if any: at each new tenth of the work (the
    /// first at once, later ones MIN_GAP apart), and after MAX_GAP without one. None at the end
    /// (the command's own summary follows).
    pub(crate) fn advance(&mut self, n: u64, now: Instant) -> Option<String> {
        self.pos = (self.pos + n).min(self.len);
        if self.len == 0 || self.pos >= self.len {
            return None;
        }
        if !self.cadence.due(self.pos * 10 / self.len, now) {
            return None;
        }
        let elapsed = now.duration_since(self.cadence.start).as_secs_f64();
        let left = elapsed * (self.len - self.pos) as f64 / self.pos.max(1) as f64;
        Some(format!("{}: {}/{} {} ({}%), {} elapsed, about {} left", self.what, self.pos, self.len, self.unit, self.pos * 100 / self.len, span(elapsed), span(left)))
    }
}

/// A duration as people read it in a log: 42s, 3m05s, 2h07m.
pub(crate) fn span(secs: f64) -> String {
    let s = secs.round() as u64;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_gets_a_line_a_tenth_not_one_per_step() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut l = Log::new("bedpost", "voxels", 1000, t0);
        // Below the first tenth: nothing; crossing it: a line at once.
        assert_eq!(l.advance(50, at(1)), None);
        assert_eq!(l.advance(60, at(2)).as_deref(), Some("bedpost: 110/1000 voxels (11%), 2s elapsed, about 16s left"));
        // The next tenth within MIN_GAP: skipped; after it: printed.
        assert_eq!(l.advance(100, at(4)), None);
        assert!(l.advance(10, at(8)).unwrap().starts_with("bedpost: 220/1000 voxels (22%)"));
        // Within a tenth: nothing until MAX_GAP has passed since the last line.
        assert_eq!(l.advance(1, at(200)), None);
        assert!(l.advance(1, at(308)).unwrap().contains("5m08s elapsed"));
        // The end is left to the command's summary; work beyond len is not counted.
        assert_eq!(l.advance(10_000, at(400)), None);
        assert_eq!(span(7_620.0), "2h07m");
    }

    #[test]
    fn a_piece_that_is_the_whole_work_says_so_in_a_log_when_long() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut w = Waiting::new("dti", "voxels", 1694552, t0);
        // Short: nothing, not even at the end.
        assert_eq!(w.at(at(4)), None);
        assert_eq!(w.done(at(4)), None);
        // Past MIN_GAP a line, then none until MAX_GAP later, and one at the end.
        assert_eq!(w.at(at(5)).as_deref(), Some("dti: 1694552 voxels in one piece, 5s elapsed (counted when it ends)"));
        assert_eq!(w.at(at(300)), None);
        assert!(w.at(at(305)).unwrap().contains("5m05s elapsed"));
        assert_eq!(w.done(at(312)).as_deref(), Some("dti: 1694552/1694552 voxels (100%), 5m12s elapsed"));
    }

    #[test]
    fn a_whole_piece_prints_while_it_runs_and_a_part_does_not() {
        // The lines come from a second thread while `f` runs, at the waiting's own times.
        let lines = Mutex::new(Vec::new());
        let t0 = Instant::now() - MIN_GAP;
        let r = waiting_lines(Waiting::new("dti", "voxels", 10, t0), || {
            std::thread::sleep(Duration::from_millis(300));
            7
        }, |l| lines.lock().unwrap().push(l));
        assert_eq!(r, 7);
        let lines = lines.into_inner().unwrap();
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines[0].starts_with("dti: 10 voxels in one piece, 5s elapsed") && lines[1].starts_with("dti: 10/10 voxels (100%)"), "{lines:?}");
        // The bar moves by the piece either way; only a piece that is the whole work waits.
        let p = Progress::silent(10);
        assert_eq!(p.piece(4, || 7), 7);
        assert_eq!(p.position(), 4);
        p.piece(6, || ());
        assert_eq!(p.position(), 10);
    }
}
