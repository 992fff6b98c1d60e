//! When a solve has stopped contracting: one rule for geofield's CPU solvers
//! (`wind/multigrid.rs`) and the device's ([`super::GpuSherman::solve`]), applied after every
//! convergence check to the history of max |div| (starting with the first guess's).
//!
//! Over the last `window` checks the best residual must fall below `factor` × the best one
//! before them. When it does not, the solve stops: *diverged* if the latest residual is above
//! that earlier best and rose over the window (or is not finite), *stagnated* otherwise. A non-finite residual stops at
//! once. V-cycles and MG-CG iterations reduce max |div| 5–20× each on every grid the tests and
//! benches use, so 3 checks without a 2× gain mean a broken cycle (a 257² DEM whose residual
//! grew from 5.8e-3 to 7.3e7 over 100 V-cycles now stops within 3 of its best). SOR's max |div|
//! can rise for tens of sweeps before it falls and contracts by 1 − O(1/n) per sweep, so its
//! window spans [`SOR_WINDOW_SWEEPS`] sweeps and it need only gain 1 %.

/// Why a solve that had not converged stopped before its iteration cap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stall {
    /// The residual stopped falling (rounding level, or a cycle that no longer contracts).
    Stagnated,
    /// The residual grew above its best, or is not finite.
    Diverged,
}

/// Sweeps SOR may run without a new best residual (1 % below the previous one).
pub const SOR_WINDOW_SWEEPS: usize = 1000;

/// The window and the gain a solver must make over it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StallRule {
    /// Checks in the window.
    pub window: usize,
    /// The best residual in the window must be below `factor` × the best before it.
    pub factor: f64,
}

impl StallRule {
    /// Multigrid V-cycles and MG-CG iterations (a check after each): 3 checks, a 2× gain.
    pub const CYCLES: Self = Self {
        window: 3,
        factor: 0.5,
    };

    /// SOR checked every `check_every` sweeps: [`SOR_WINDOW_SWEEPS`] sweeps (at least 3 checks),
    /// a 1 % gain.
    pub fn sweeps(check_every: usize) -> Self {
        Self {
            window: SOR_WINDOW_SWEEPS.div_ceil(check_every.max(1)).max(3),
            factor: 0.99,
        }
    }

    /// The verdict on `history` ((iteration, max |div|) at every check, the first guess's
    /// first): `None` while the solve may go on.
    pub fn check(&self, history: &[(usize, f64)]) -> Option<Stall> {
        let last = history.last()?.1;
        if !last.is_finite() {
            return Some(Stall::Diverged);
        }
        if history.len() <= self.window {
            return None;
        }
        let (before, recent) = history.split_at(history.len() - self.window);
        let best = |h: &[(usize, f64)]| h.iter().map(|x| x.1).fold(f64::INFINITY, f64::min);
        let (best_before, best_recent) = (best(before), best(recent));
        if best_recent < self.factor * best_before {
            None
        } else if last > best_before && last > recent[0].1 {
            Some(Stall::Diverged)
        } else {
            Some(Stall::Stagnated)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(v: &[f64]) -> Vec<(usize, f64)> {
        v.iter().copied().enumerate().collect()
    }

    #[test]
    fn contracting_solves_go_on() {
        let r = StallRule::CYCLES;
        assert_eq!(r.check(&h(&[1.0, 0.1, 0.01, 0.001, 1e-4])), None);
        // Fewer checks than the window: no verdict yet.
        assert_eq!(r.check(&h(&[1.0, 2.0, 3.0])), None);
        // One slow cycle among fast ones is not a stall.
        assert_eq!(r.check(&h(&[1.0, 0.1, 0.09, 0.08, 0.01])), None);
    }

    #[test]
    fn growth_and_plateaus_stop() {
        let r = StallRule::CYCLES;
        // The 257² DEM: falling, then growing.
        let grow = h(&[1.0, 0.1, 0.01, 5.8e-3, 8e-3, 1.2e-2, 2e-2]);
        assert_eq!(r.check(&grow), Some(Stall::Diverged));
        let flat = h(&[1.0, 0.1, 1e-9, 9e-10, 8e-10, 7e-10]);
        assert_eq!(r.check(&flat), Some(Stall::Stagnated));
        assert_eq!(r.check(&h(&[1.0, f64::NAN])), Some(Stall::Diverged));
        assert_eq!(r.check(&h(&[1.0, f64::INFINITY])), Some(Stall::Diverged));
    }

    #[test]
    fn sor_has_a_long_window() {
        let r = StallRule::sweeps(10);
        assert_eq!(r.window, 100);
        // 99 checks of a falling residual after a transient rise: no verdict.
        let mut v = vec![1.0, 3.0];
        v.extend((0..99).map(|i| 2.0 * 0.98f64.powi(i)));
        assert_eq!(r.check(&h(&v)), None);
        // Falling too slowly to regain the first residual in 1000 sweeps: stagnated.
        let mut v = vec![1.0, 3.0];
        v.extend((0..99).map(|i| 2.0 * 0.995f64.powi(i)));
        assert_eq!(r.check(&h(&v)), Some(Stall::Stagnated));
        assert_eq!(StallRule::sweeps(0).window, 1000);
    }
}
