//! Long library calls from Python, interruptible with Ctrl-C and with an optional progress bar.
//!
//! [`run_interruptible`] runs the library call on a worker thread, with the GIL released, while
//! the calling thread wakes every [`POLL`] (or as soon as the worker finishes), takes the GIL,
//! lets Python run its signal handlers (`PyErr_CheckSignals`: Ctrl-C raises KeyboardInterrupt)
//! and hands the fraction done to the progress callable. On an exception (KeyboardInterrupt, or
//! one raised by the progress callable) it sets the call's [`Cancel`] token, waits for the
//! worker to return (the library honours a cancel within one of its check intervals, a small
//! fraction of a second on the CPU) and raises the exception: no thread is left running and
//! the inputs are untouched. A panic of the worker becomes a `GeofieldRuntimeError`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::Duration;

use geofield::{Cancel, GeofieldError};
use pyo3::prelude::*;

use crate::errors;

/// How often the calling thread wakes to look for signals and draw progress.
pub const POLL: Duration = Duration::from_millis(50);

/// Where the worker posts the fraction done (0 to 1), read by the calling thread.
#[derive(Default)]
pub struct Progress(AtomicU64);

impl Progress {
    /// Post `fraction` (clamped to [0, 1]; non-finite values are ignored).
    pub fn set(&self, fraction: f64) {
        if fraction.is_finite() {
            self.0
                .store(fraction.clamp(0.0, 1.0).to_bits(), Ordering::Relaxed);
        }
    }

    fn get(&self) -> f64 {
        f64::from_bits(self.0.load(Ordering::Relaxed))
    }
}

/// Raised by the worker when it returns, even by a panic (a drop guard).
#[derive(Default)]
struct Finished {
    done: Mutex<bool>,
    wake: Condvar,
}

struct SetOnDrop<'a>(&'a Finished);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        *self.0.done.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.0.wake.notify_all();
    }
}

impl Finished {
    /// Wait up to `timeout` for the worker; whether it has finished.
    fn wait(&self, timeout: Duration) -> bool {
        let guard = self.done.lock().unwrap_or_else(PoisonError::into_inner);
        let (guard, _) = self
            .wake
            .wait_timeout_while(guard, timeout, |done| !*done)
            .unwrap_or_else(PoisonError::into_inner);
        *guard
    }
}

/// Run `work(cancel, progress)` on a worker thread with the GIL released; see the module docs.
/// `progress`, when given, is a Python callable called (on this thread, with the GIL) with the
/// fraction done whenever it changed, and with 1.0 at a successful end.
pub fn run_interruptible<T: Send>(
    py: Python<'_>,
    progress: Option<&Bound<'_, PyAny>>,
    work: impl FnOnce(&Cancel, &Progress) -> Result<T, GeofieldError> + Send,
) -> PyResult<T> {
    let cancel = Cancel::new();
    let sink = Progress::default();
    let finished = Finished::default();
    std::thread::scope(|scope| {
        let (c, s, f) = (&cancel, &sink, &finished);
        let worker = scope.spawn(move || {
            let _finished = SetOnDrop(f);
            work(c, s)
        });
        let mut shown = f64::NAN;
        let mut raised: Option<PyErr> = None;
        while !py.detach(|| finished.wait(POLL)) {
            if let Err(e) = py.check_signals() {
                raised = Some(e);
                break;
            }
            if let Some(cb) = progress {
                let now = sink.get();
                if now != shown {
                    shown = now;
                    if let Err(e) = cb.call1((now,)) {
                        raised = Some(e);
                        break;
                    }
                }
            }
        }
        if raised.is_some() {
            cancel.cancel();
        }
        let joined = py.detach(|| worker.join());
        if let Some(e) = raised {
            return Err(e);
        }
        let out = match joined {
            Ok(r) => r.map_err(errors::lib)?,
            Err(_) => {
                return Err(errors::raise(
                    errors::Class::Runtime,
                    "the computation panicked (a bug in geofield: please report it)".into(),
                ));
            }
        };
        if let Some(cb) = progress {
            cb.call1((1.0,))?;
        }
        Ok(out)
    })
}
