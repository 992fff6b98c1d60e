//! What a run split by rows over several parts (MPI ranks, or threads of one process) needs
//! from the parts that hold the other bands: one copy of the contract for the CPU wind split
//! (geofield's `wind::split`), the device split ([`super::GpuSherman::assemble_band`]) and the
//! forest stand split (geofield's `forest::split`).

use std::sync::{Barrier, Mutex};

/// Collective calls between the parts of a split solve: every part calls every method in the
/// same order.
pub trait Exchange: Sync {
    /// This part's index (0: the northern band).
    fn part(&self) -> usize;
    /// How many parts.
    fn parts(&self) -> usize;
    /// Sends `first` (this band's first row) to the part above and `last` to the part below;
    /// returns the last row of the part above and the first row of the part below (`None` at
    /// the domain's edges). Rows have equal lengths on neighbouring parts.
    fn halo(&self, first: &[f64], last: &[f64]) -> (Option<Vec<f64>>, Option<Vec<f64>>);
    /// Every part's `mine` concatenated in part order, on every part.
    fn all_gather(&self, mine: &[f64]) -> Vec<f64>;
    /// The largest `x` over the parts, on every part (NaN wins, so that a part that blew up
    /// stops every part).
    fn max(&self, x: f64) -> f64;
    /// The sum of `x` over the parts, added in part order: the same bits on every part.
    fn sum(&self, x: f64) -> f64 {
        self.all_gather(&[x]).iter().sum()
    }
    /// `Ok` on every part when every part's `mine` is `Ok`; otherwise the error of the lowest
    /// failing part on every part, naming it. A part that fails mid-run calls this once with its
    /// error, at whatever collective point the others are: an implementation whose every other
    /// collective call starts with an agreement (as the forest split's calls do) then ends every
    /// part cleanly.
    fn agree(&self, mine: Result<(), String>) -> Result<(), String> {
        let flags = self.all_gather(&[f64::from(u8::from(mine.is_err()))]);
        match flags.iter().position(|&f| f > 0.0) {
            None => Ok(()),
            Some(p) if p == self.part() => mine.map_err(|m| format!("part {p}: {m}")),
            Some(p) => Err(format!("part {p} failed")),
        }
    }
}

/// The parts of a split solve as threads of this process, exchanging through shared slots:
/// what MPI ranks do, for tests and for driving several GPUs from one process. Give part `p`
/// to the thread that runs it: `LocalParts::new(n)` then `parts.part(p)`.
pub struct LocalParts {
    n: usize,
    barrier: Barrier,
    slots: Mutex<Vec<Vec<f64>>>,
    rows: Mutex<Vec<[Vec<f64>; 2]>>,
    errors: Mutex<Vec<Option<String>>>,
}

/// One thread's view of [`LocalParts`].
pub struct LocalPart<'a> {
    p: usize,
    all: &'a LocalParts,
}

impl LocalParts {
    /// `n` ≥ 1 parts.
    pub fn new(n: usize) -> Self {
        let n = n.max(1);
        Self {
            n,
            barrier: Barrier::new(n),
            slots: Mutex::new(vec![Vec::new(); n]),
            rows: Mutex::new(vec![[Vec::new(), Vec::new()]; n]),
            errors: Mutex::new(vec![None; n]),
        }
    }

    /// Part `p` (< n).
    pub fn part(&self, p: usize) -> LocalPart<'_> {
        assert!(p < self.n, "part {p} of {}", self.n);
        LocalPart { p, all: self }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // The slots hold plain copies: a panicking part cannot leave them inconsistent.
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Exchange for LocalPart<'_> {
    fn part(&self) -> usize {
        self.p
    }

    fn parts(&self) -> usize {
        self.all.n
    }

    fn halo(&self, first: &[f64], last: &[f64]) -> (Option<Vec<f64>>, Option<Vec<f64>>) {
        lock(&self.all.rows)[self.p] = [first.to_vec(), last.to_vec()];
        self.all.barrier.wait();
        let got = {
            let rows = lock(&self.all.rows);
            (
                (self.p > 0).then(|| rows[self.p - 1][1].clone()),
                (self.p + 1 < self.all.n).then(|| rows[self.p + 1][0].clone()),
            )
        };
        self.all.barrier.wait();
        got
    }

    fn all_gather(&self, mine: &[f64]) -> Vec<f64> {
        lock(&self.all.slots)[self.p] = mine.to_vec();
        self.all.barrier.wait();
        let all = lock(&self.all.slots).concat();
        self.all.barrier.wait();
        all
    }

    fn agree(&self, mine: Result<(), String>) -> Result<(), String> {
        lock(&self.all.errors)[self.p] = mine.err();
        self.all.barrier.wait();
        let first = lock(&self.all.errors)
            .iter()
            .enumerate()
            .find_map(|(p, e)| e.as_ref().map(|m| format!("part {p}: {m}")));
        self.all.barrier.wait();
        first.map_or(Ok(()), Err)
    }

    fn max(&self, x: f64) -> f64 {
        self.all_gather(&[x])
            .into_iter()
            .fold(
                f64::NEG_INFINITY,
                |a, b| if a > b || a.is_nan() { a } else { b },
            )
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn local_parts_exchange_rows_and_reduce() {
        let all = LocalParts::new(3);
        let got: Vec<_> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..3)
                .map(|p| {
                    let all = &all;
                    s.spawn(move || {
                        let me = all.part(p);
                        let x = p as f64;
                        let halo = me.halo(&[x, 10.0 + x], &[20.0 + x]);
                        let nan = if p == 1 { f64::NAN } else { x };
                        let fine = me.agree(Ok(()));
                        let bad = me.agree(if p == 0 {
                            Ok(())
                        } else {
                            Err(format!("no {p}"))
                        });
                        (
                            halo,
                            me.all_gather(&[x]),
                            me.max(x),
                            me.max(nan),
                            me.sum(x),
                            fine,
                            bad,
                        )
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(got[0].0, (None, Some(vec![1.0, 11.0])));
        assert_eq!(got[1].0, (Some(vec![20.0]), Some(vec![2.0, 12.0])));
        assert_eq!(got[2].0, (Some(vec![21.0]), None));
        for g in &got {
            assert_eq!(g.1, vec![0.0, 1.0, 2.0]);
            assert_eq!(g.2, 2.0);
            assert!(g.3.is_nan());
            assert_eq!(g.4, 3.0);
            assert_eq!(g.5, Ok(()));
            // The lowest failing part's error, naming it, on every part.
            assert_eq!(g.6, Err("part 1: no 1".to_string()));
        }
    }
}
