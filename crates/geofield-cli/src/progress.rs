//! Progress of long steps: a bar or spinner (indicatif) on a terminal; plain lines on stderr,
//! flushed, when stderr is a file or a pipe (a batch job's log); nothing with `--quiet`.

use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// At most one plain line per this interval for steps that report often (a solver's iterations).
const LINE_INTERVAL: Duration = Duration::from_secs(2);

/// No plain lines during a step's first second.
const QUIET_START: Duration = Duration::from_secs(1);

/// Where progress goes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Bar,
    Lines,
    Quiet,
}

fn mode(quiet: bool) -> Mode {
    if quiet {
        Mode::Quiet
    } else if std::io::stderr().is_terminal() {
        Mode::Bar
    } else {
        Mode::Lines
    }
}

/// A bar, spinner or line printer; see the module docs.
pub struct Progress {
    pb: ProgressBar,
    mode: Mode,
    what: String,
    start: Instant,
    /// (time of the last line, last tenth printed)
    last: Mutex<(Option<Instant>, u64)>,
}

impl Progress {
    fn new(pb: ProgressBar, mode: Mode, what: &str) -> Self {
        Progress {
            pb,
            mode,
            what: what.to_string(),
            start: Instant::now(),
            last: Mutex::new((None, u64::MAX)),
        }
    }

    fn line(&self, text: &str) {
        // Short steps need no progress report.
        if self.start.elapsed() < QUIET_START {
            return;
        }
        let mut err = std::io::stderr().lock();
        let _ = writeln!(
            err,
            "{}: {text} [{:.1} s]",
            self.what,
            self.start.elapsed().as_secs_f64()
        );
        let _ = err.flush();
    }

    /// A line now, or not before [`LINE_INTERVAL`] after the last one.
    fn line_limited(&self, text: &str) {
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        if last.0.is_none_or(|t| t.elapsed() >= LINE_INTERVAL) {
            last.0 = Some(Instant::now());
            drop(last);
            self.line(text);
        }
    }

    /// The current item (a species' name, a solver's state).
    pub fn set_message(&self, msg: impl Into<String>) {
        let msg = msg.into();
        if self.mode == Mode::Lines {
            self.line_limited(&msg);
        }
        self.pb.set_message(msg);
    }

    /// One more step done: on a plain log, a line per step.
    pub fn inc(&self, n: u64) {
        self.pb.inc(n);
        if self.mode == Mode::Lines {
            let len = self.pb.length().unwrap_or(0);
            self.line(&format!("{} of {len} done", self.pb.position()));
        }
    }

    /// Position out of the length: on a plain log, a line per tenth.
    pub fn set_position(&self, pos: u64) {
        self.pb.set_position(pos);
        if self.mode == Mode::Lines {
            let len = self.pb.length().unwrap_or(0).max(1);
            let tenth = pos.min(len) * 10 / len;
            let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
            if last.1 != tenth {
                last.1 = tenth;
                drop(last);
                self.line(&format!("{}0 %", tenth));
            }
        }
    }

    /// Print around the bar.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        self.pb.suspend(f)
    }

    pub fn finish_and_clear(&self) {
        self.pb.finish_and_clear();
    }
}

/// A bar of `len` steps.
pub fn bar(len: u64, quiet: bool, what: &str) -> Progress {
    let m = mode(quiet);
    if m != Mode::Bar {
        let pb = ProgressBar::hidden();
        pb.set_length(len);
        return Progress::new(pb, m, what);
    }
    let pb = ProgressBar::new(len);
    if let Ok(style) = ProgressStyle::with_template(
        "{msg:>12} [{elapsed_precise}] {bar:30} {pos}/{len} {wide_msg}",
    ) {
        pb.set_style(style);
    }
    pb.set_message(what.to_string());
    pb.enable_steady_tick(Duration::from_millis(200));
    Progress::new(pb, m, what)
}

/// A spinner for a step of unknown length.
pub fn spinner(quiet: bool, what: &str) -> Progress {
    let m = mode(quiet);
    if m != Mode::Bar {
        return Progress::new(ProgressBar::hidden(), m, what);
    }
    let pb = ProgressBar::new_spinner();
    if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} [{elapsed_precise}]") {
        pb.set_style(style);
    }
    pb.set_message(what.to_string());
    pb.enable_steady_tick(Duration::from_millis(200));
    Progress::new(pb, m, what)
}
