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
    /// spinner with the time on a terminal, and in a log [`waiting_lines`].
    pub fn piece<T>(&self, n: u64, f: impl FnOnce() -> T) -> T {
        let whole = n > 0 && self.bar.position() == 0 && self.bar.length() == Some(n);
        let [what, unit] = &self.names;
        let r = match &self.log {
            Some(_) if whole => waiting_lines(what, unit, n, Instant::now(), f, |line| eprintln!("{line}")),
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

/// `f`, `len` units of `what` in one piece, with [`Waiting`]'s lines handed to `out` from a
/// second thread while it runs (and the last when it ends). Nothing counts within the piece, so
/// no tenths and no time left: short pieces print nothing (the command's summary follows); one
/// that runs MIN_GAP gets a line then, another each MAX_GAP, and one when it ends (so a log does
/// not stay on "running" while the command writes its outputs).
fn waiting_lines<T>(what: &str, unit: &str, len: u64, start: Instant, f: impl FnOnce() -> T, out: impl Fn(String) + Send) -> T {
    let mut w = Waiting::new(start, MIN_GAP, MAX_GAP);
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    std::thread::scope(|s| {
        s.spawn(move || {
            while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(w.next().saturating_duration_since(Instant::now())) {
                if let Some(elapsed) = w.due(Instant::now()) {
                    out(format!("{what}: {len} {unit} in one piece, {elapsed} elapsed (counted when it ends)"));
                }
            }
            if w.said() {
                out(format!("{what}: {len}/{len} {unit} (100%), {} elapsed", span(start.elapsed().as_secs_f64())));
            }
        });
        let r = f();
        drop(tx);
        r
    })
}

/// When a log line is due for work that nothing counts, by the clock alone: the first `first`
/// after `start`, then one in each `every` after that (counted from `start`), never two within
/// MIN_GAP. A piece that is the whole work ([`Progress::piece`]: MIN_GAP, then MAX_GAP) and fim's
/// solves that count no voxels (at once, then one a minute).
pub(crate) struct Waiting {
    start: Instant,
    first: Duration,
    every: Duration,
    /// The tick of the last line: 0 before any, then 1 from `first` on, 2 from `first + every` ...
    tick: u64,
    last: Option<Instant>,
}

impl Waiting {
    pub(crate) fn new(start: Instant, first: Duration, every: Duration) -> Waiting {
        Waiting { start, first, every, tick: 0, last: None }
    }

    fn tick(&self, now: Instant) -> u64 {
        match now.saturating_duration_since(self.start).checked_sub(self.first) {
            Some(t) => 1 + (t.as_nanos() / self.every.as_nanos().max(1)) as u64,
            None => 0,
        }
    }

    /// When the next line is due.
    fn next(&self) -> Instant {
        self.start + self.first + self.every * self.tick as u32
    }

    /// The time elapsed, as a log writes it, if a line is due at `now` (it then counts as written).
    pub(crate) fn due(&mut self, now: Instant) -> Option<String> {
        let tick = self.tick(now);
        if tick <= self.tick || self.last.is_some_and(|t| now.duration_since(t) < MIN_GAP) {
            return None;
        }
        self.tick = tick;
        self.last = Some(now);
        Some(span(now.duration_since(self.start).as_secs_f64()))
    }

    /// Whether a line has been written.
    fn said(&self) -> bool {
        self.last.is_some()
    }
}

/// When a log line is due: at each new tenth of the work (the first at once, later ones
/// MIN_GAP apart), and after MAX_GAP without one. Shared by [`Log`] and fim's node solve's lines.
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
        let mut w = Waiting::new(t0, MIN_GAP, MAX_GAP);
        // Short: nothing, and nothing said.
        assert_eq!(w.due(at(4)), None);
        assert!(!w.said());
        // Past MIN_GAP a line, then none until MAX_GAP later.
        assert_eq!(w.next(), at(5));
        assert_eq!(w.due(at(5)).as_deref(), Some("5s"));
        assert_eq!(w.next(), at(305));
        assert_eq!(w.due(at(300)), None);
        assert_eq!(w.due(at(305)).as_deref(), Some("5m05s"));
        assert!(w.said());
    }

    #[test]
    fn a_whole_piece_prints_while_it_runs_and_a_part_does_not() {
        // The lines come from a second thread while `f` runs, at the waiting's own times.
        let lines = Mutex::new(Vec::new());
        let t0 = Instant::now() - MIN_GAP;
        let r = waiting_lines("dti", "voxels", 10, t0, || {
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
