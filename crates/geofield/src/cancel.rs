//! Cancelling a long call from another thread.
//!
//! Every long-running entry point has a `*_with_progress` form that takes a [`Cancel`] token next
//! to its progress callback: [`dispersal::disperse_with_progress`](crate::dispersal::disperse_with_progress),
//! [`kriging::krige_with_progress`](crate::kriging::krige_with_progress),
//! [`kriging::cross_validate_with_progress`](crate::kriging::cross_validate_with_progress),
//! [`neighbors::knn_with_progress`](crate::neighbors::knn_with_progress),
//! [`Flock::step_with_progress`](crate::flock::Flock::step_with_progress) and
//! [`wind::compute_with_progress`](crate::wind::compute_with_progress). Another thread (a
//! signal handler's watcher, a GUI, the Python bindings on Ctrl-C) calls [`Cancel::cancel`];
//! the computation notices it at its next check and returns [`GeofieldError::Cancelled`],
//! leaving its inputs untouched (a [`Flock`](crate::flock::Flock) keeps the steps it finished).
//!
//! The checks sit at natural boundaries, so that a cancel is honoured within a small fraction of
//! a second on the CPU: between species and inside the per-species loops over tiles and rows
//! (dispersal), between chunks of nodes and of cross-validation folds (kriging), between chunks
//! of queries (k-NN), between steps (flocking), at every convergence check of the wind solvers
//! and between the wind pipeline's steps. A single GPU kernel launch is not interrupted: on the
//! GPU a cancel is honoured at the next launch boundary the host sees.
//!
//! The plain entry points (`disperse`, `krige`, `knn`, ...) run with a token nobody holds, so
//! they never return [`GeofieldError::Cancelled`].

use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::GeofieldError;

/// A cancellation token: cheap to clone (one shared flag), set once by [`cancel`](Self::cancel)
/// from any thread, read by the computation at its checks.
///
/// ```
/// use geofield::{Cancel, GeofieldError};
///
/// let token = Cancel::new();
/// let seen_by_worker = token.clone();
/// assert!(seen_by_worker.check().is_ok());
/// token.cancel();
/// assert!(seen_by_worker.is_cancelled());
/// assert!(matches!(seen_by_worker.check(), Err(GeofieldError::Cancelled)));
/// ```
#[derive(Clone, Debug, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    /// A token not (yet) cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// Ask the computations holding this token (or a clone of it) to stop. Idempotent.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether [`cancel`](Self::cancel) was called on this token or a clone of it.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// `Err(GeofieldError::Cancelled)` once cancelled, else `Ok(())`: for `?` at a check.
    pub fn check(&self) -> Result<(), GeofieldError> {
        if self.is_cancelled() {
            Err(GeofieldError::Cancelled)
        } else {
            Ok(())
        }
    }

    /// [`ControlFlow::Break`] once cancelled: what a solver's check callback returns.
    pub fn flow(&self) -> ControlFlow<()> {
        if self.is_cancelled() {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }
}

/// What a solver's convergence-check callback returns: `()` (always go on) or a
/// [`ControlFlow`] (`Break` stops the solve early, e.g. on a [`Cancel`]; the caller then
/// reports [`GeofieldError::Cancelled`]).
pub trait Proceed {
    /// Whether the solve should stop now.
    fn stops(self) -> bool;
}

impl Proceed for () {
    fn stops(self) -> bool {
        false
    }
}

impl Proceed for ControlFlow<()> {
    fn stops(self) -> bool {
        self.is_break()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_the_flag_and_fresh_tokens_do_not() {
        let a = Cancel::new();
        let b = a.clone();
        let other = Cancel::new();
        assert!(!b.is_cancelled() && b.flow().is_continue() && b.check().is_ok());
        a.cancel();
        assert!(b.is_cancelled() && b.flow().is_break());
        assert!(matches!(b.check(), Err(GeofieldError::Cancelled)));
        assert!(!other.is_cancelled());
        assert_eq!(GeofieldError::Cancelled.to_string(), "cancelled");
        assert!(!().stops());
    }
}
