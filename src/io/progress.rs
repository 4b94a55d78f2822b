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
}

impl Progress {
    pub fn hidden() -> Progress {
        Progress { bar: ProgressBar::hidden(), log: None }
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
        if std::io::stderr().is_terminal() {
            let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr()).with_elapsed(start.elapsed());
            if let Ok(style) = ProgressStyle::with_template(template) {
                bar.set_style(style);
            }
            return Progress { bar, log: None };
        }
        Progress { bar: ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::hidden()), log: Some(Mutex::new(Log::new(what, unit, len, start))) }
    }

    /// `len` units counted and never shown: for tests of how far a run moves its bar.
    #[cfg(test)]
    pub(crate) fn silent(len: u64) -> Progress {
        Progress { bar: ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::hidden()), log: None }
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
}
