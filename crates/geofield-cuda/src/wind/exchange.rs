//! What a run split by rows over several parts (MPI ranks, or threads of one process) needs
//! from the parts that hold the other bands: one copy of the contract for the CPU wind split
//! (geofield's `wind::split`), the device split ([`super::GpuSherman::assemble_band`]) and the
//! forest stand split (geofield's `forest::split`).

use std::sync::{Condvar, Mutex};

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
    /// `to[q]` sent to part q, for every q (`to` has [`Exchange::parts`] entries, any lengths):
    /// returns what each part sent to this one, in part order. The default passes everything
    /// through [`Exchange::all_gather`] (every part receives every message); implementations
    /// send each message to its part only.
    fn all_to_all(&self, to: Vec<Vec<f64>>) -> Vec<Vec<f64>> {
        let n = self.parts();
        let lens: Vec<f64> = (0..n)
            .map(|q| to.get(q).map_or(0, Vec::len) as f64)
            .collect();
        let all_lens = self.all_gather(&lens);
        let flat: Vec<f64> = to.into_iter().take(n).flatten().collect();
        let all = self.all_gather(&flat);
        let mut at = 0usize;
        let mut got = Vec::with_capacity(n);
        for p in 0..n {
            for q in 0..n {
                let len = all_lens.get(p * n + q).map_or(0, |&l| l as usize);
                if q == self.part() {
                    got.push(all.get(at..at + len).map_or_else(Vec::new, <[f64]>::to_vec));
                }
                at += len;
            }
        }
        got
    }
    /// Every part's `mine` (the same length on every part) added element by element in 128-bit
    /// two's-complement integers (wrapping): integer sums are associative, so every part gets
    /// the same values whatever the order. The default scatters the adding (part q adds the
    /// q-th slice of every part's values, received through [`Exchange::all_to_all`]) and
    /// gathers the slices: each part sends and receives about one copy of the array, whatever
    /// the number of parts.
    fn sum_i128(&self, mine: Vec<i128>) -> Vec<i128> {
        let n = self.parts();
        if n <= 1 {
            return mine;
        }
        let len = mine.len();
        let cut = |q: usize| len * q / n;
        // Each value as two f64 bit patterns (moved, never computed on): low, then high half.
        let encode = |v: &[i128]| -> Vec<f64> {
            v.iter()
                .flat_map(|&x| {
                    [
                        f64::from_bits(x as u128 as u64),
                        f64::from_bits((x as u128 >> 64) as u64),
                    ]
                })
                .collect()
        };
        let decode = |v: &[f64]| -> Vec<i128> {
            v.chunks_exact(2)
                .map(|p| (u128::from(p[0].to_bits()) | (u128::from(p[1].to_bits()) << 64)) as i128)
                .collect()
        };
        let to: Vec<Vec<f64>> = (0..n).map(|q| encode(&mine[cut(q)..cut(q + 1)])).collect();
        drop(mine);
        let me = self.part();
        let mut acc = vec![0i128; cut(me + 1) - cut(me)];
        for got in self.all_to_all(to) {
            for (a, x) in acc.iter_mut().zip(decode(&got)) {
                *a = a.wrapping_add(x);
            }
        }
        decode(&self.all_gather(&encode(&acc)))
    }
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
    /// This part failed alone, at a point where the others may be waiting for it in a
    /// collective call it will not make (a device fault in the middle of a solve): end every
    /// part now, with `message` naming the cause. MPI ranks abort the job (exit code 2, the
    /// message on this rank's error stream first); threads of one process ([`LocalParts`])
    /// cannot be stopped from outside, so the others panic with the message at their next
    /// exchange. The default (one part) does nothing: the error returns as usual.
    fn abandon(&self, message: &str) {
        let _ = message;
    }
}

/// The parts of a split solve as threads of this process, exchanging through shared slots:
/// what MPI ranks do, for tests and for driving several GPUs from one process. Give part `p`
/// to the thread that runs it: `LocalParts::new(n)` then `parts.part(p)`.
pub struct LocalParts {
    n: usize,
    barrier: Gate,
    slots: Mutex<Vec<Vec<f64>>>,
    rows: Mutex<Vec<[Vec<f64>; 2]>>,
    errors: Mutex<Vec<Option<String>>>,
    /// `mail[p][q]`: what part p sends to part q ([`Exchange::all_to_all`]).
    mail: Mutex<Vec<Vec<Vec<f64>>>>,
}

/// A barrier that a part can break ([`Exchange::abandon`]): the threads waiting at it, and any
/// that come later, panic with the abandoning part's message.
struct Gate {
    n: usize,
    state: Mutex<(usize, u64, Option<String>)>,
    cv: Condvar,
}

impl Gate {
    fn new(n: usize) -> Self {
        Self {
            n,
            state: Mutex::new((0, 0, None)),
            cv: Condvar::new(),
        }
    }

    // The one way to end a thread blocked here on another's failure (threads cannot be
    // stopped from outside, and the exchange's calls return plain values): `LocalParts` serves
    // tests and one-process drivers, not a user's MPI run, whose ranks abort instead.
    #[allow(clippy::panic)]
    fn wait(&self) {
        let mut st = lock(&self.state);
        let broken = |m: &Option<String>| {
            if let Some(m) = m {
                panic!("another part abandoned the split run: {m}");
            }
        };
        broken(&st.2);
        st.0 += 1;
        if st.0 == self.n {
            st.0 = 0;
            st.1 += 1;
            self.cv.notify_all();
            return;
        }
        let generation = st.1;
        while st.1 == generation && st.2.is_none() {
            st = self.cv.wait(st).unwrap_or_else(|p| p.into_inner());
        }
        if st.1 == generation {
            broken(&st.2);
        }
    }

    fn abandon(&self, message: &str) {
        lock(&self.state).2 = Some(message.to_string());
        self.cv.notify_all();
    }
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
            barrier: Gate::new(n),
            slots: Mutex::new(vec![Vec::new(); n]),
            rows: Mutex::new(vec![[Vec::new(), Vec::new()]; n]),
            errors: Mutex::new(vec![None; n]),
            mail: Mutex::new(vec![Vec::new(); n]),
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

    fn all_to_all(&self, mut to: Vec<Vec<f64>>) -> Vec<Vec<f64>> {
        to.resize(self.all.n, Vec::new());
        lock(&self.all.mail)[self.p] = to;
        self.all.barrier.wait();
        let got = lock(&self.all.mail)
            .iter()
            .map(|from| from[self.p].clone())
            .collect();
        self.all.barrier.wait();
        got
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

    fn abandon(&self, message: &str) {
        self.all
            .barrier
            .abandon(&format!("part {}: {message}", self.p));
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

    /// The default `all_to_all` (through `all_gather`), for an exchange that does not have its
    /// own.
    struct ByGather<'a>(LocalPart<'a>);
    impl Exchange for ByGather<'_> {
        fn part(&self) -> usize {
            self.0.part()
        }
        fn parts(&self) -> usize {
            self.0.parts()
        }
        fn halo(&self, first: &[f64], last: &[f64]) -> (Option<Vec<f64>>, Option<Vec<f64>>) {
            self.0.halo(first, last)
        }
        fn all_gather(&self, mine: &[f64]) -> Vec<f64> {
            self.0.all_gather(mine)
        }
        fn max(&self, x: f64) -> f64 {
            self.0.max(x)
        }
    }

    #[test]
    fn all_to_all_delivers_each_message_to_its_part_in_part_order() {
        // Part p sends q + 1 copies of 10p + q to part q: part q gets, from each p in order,
        // q + 1 copies of 10p + q (none from the parts that send nothing to it).
        let all = LocalParts::new(3);
        let got: Vec<_> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..3)
                .map(|p| {
                    let all = &all;
                    s.spawn(move || {
                        let msgs = |p: usize| -> Vec<Vec<f64>> {
                            (0..3)
                                .map(|q| {
                                    let n = if p == 1 && q == 0 { 0 } else { q + 1 };
                                    vec![(10 * p + q) as f64; n]
                                })
                                .collect()
                        };
                        let me = all.part(p);
                        let a = me.all_to_all(msgs(p));
                        let b = ByGather(all.part(p)).all_to_all(msgs(p));
                        (a, b)
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for (q, (a, b)) in got.iter().enumerate() {
            let want: Vec<Vec<f64>> = (0..3)
                .map(|p| {
                    let n = if p == 1 && q == 0 { 0 } else { q + 1 };
                    vec![(10 * p + q) as f64; n]
                })
                .collect();
            assert_eq!(a, &want, "part {q}");
            assert_eq!(b, &want, "part {q}, through all_gather");
        }
    }

    /// `sum_i128` adds every part's arrays exactly (values whose halves are NaN and infinity
    /// bit patterns, sums that wrap past i128::MAX and back, lengths that the parts do not
    /// divide, an empty array), on LocalParts and through `all_gather` alone.
    #[test]
    fn sum_i128_adds_every_parts_values_exactly() {
        for (parts, len) in [(2, 7), (3, 10), (3, 2), (4, 0)] {
            let values = |p: usize| -> Vec<i128> {
                (0..len)
                    .map(|i| match (i + p) % 4 {
                        0 => i128::MAX - p as i128,
                        1 => -((0x7ff8_0000_0000_0001u128 << 64) as i128) / 3 + i as i128,
                        2 => (0x7ff0_0000_0000_0000u128 | (1u128 << 100)) as i128,
                        _ => -(i as i128) * 1_000_000_007,
                    })
                    .collect()
            };
            let want: Vec<i128> = (0..len)
                .map(|i| (0..parts).fold(0i128, |a, p| a.wrapping_add(values(p)[i])))
                .collect();
            let all = LocalParts::new(parts);
            let got: Vec<_> = std::thread::scope(|s| {
                let hs: Vec<_> = (0..parts)
                    .map(|p| {
                        let (all, v) = (&all, values(p));
                        s.spawn(move || {
                            let a = all.part(p).sum_i128(v.clone());
                            let b = ByGather(all.part(p)).sum_i128(v);
                            (a, b)
                        })
                    })
                    .collect();
                hs.into_iter().map(|h| h.join().unwrap()).collect()
            });
            for (p, (a, b)) in got.iter().enumerate() {
                assert_eq!(a, &want, "{parts} parts, part {p}");
                assert_eq!(b, &want, "{parts} parts, part {p}, through all_gather");
            }
        }
    }

    /// A part that abandons the run (instead of joining an exchange) ends the others waiting
    /// there, and those that come later, with its message; none waits forever.
    #[test]
    fn an_abandoning_part_ends_the_waiting_parts() {
        let all = LocalParts::new(3);
        let got: Vec<Result<(), String>> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..3)
                .map(|p| {
                    let all = &all;
                    s.spawn(move || {
                        let me = all.part(p);
                        if p == 2 {
                            std::thread::sleep(std::time::Duration::from_millis(50));
                            me.abandon("a device fault");
                        } else {
                            me.all_gather(&[1.0]);
                        }
                    })
                })
                .collect();
            hs.into_iter()
                .map(|h| {
                    h.join()
                        .map_err(|e| e.downcast_ref::<String>().cloned().unwrap_or_default())
                })
                .collect()
        });
        assert_eq!(got[2], Ok(()));
        for g in &got[..2] {
            let m = g.clone().unwrap_err();
            assert!(m.contains("part 2: a device fault"), "{m}");
        }
        // A part coming to an exchange after the abandon does not wait either.
        let late = std::thread::scope(|s| s.spawn(|| all.part(0).max(1.0)).join());
        assert!(late.is_err());
    }
}
