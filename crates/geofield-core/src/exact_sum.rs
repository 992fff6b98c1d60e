//! Sums of f64 rounded once: [`ExactSum`].
//!
//! A sum of floating-point numbers added one by one depends on the order of the additions. A
//! run split over processes adds each process's numbers first; for its result to be the one
//! process's bit for bit, the sum must not depend on the order: the exact sum, rounded once to
//! the nearest f64. [`ExactSum`] keeps the exact sum as a short list of non-overlapping f64
//! (Shewchuk's "partials", as Python's `math.fsum`): adding a number or another sum's partials is
//! exact, and [`ExactSum::value`] rounds the exact sum to nearest (ties to even).

/// The exact sum of the numbers added, as non-overlapping partials in increasing magnitude.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExactSum {
    partials: Vec<f64>,
}

impl ExactSum {
    pub fn new() -> Self {
        Self::default()
    }

    /// The exact sum of `values`.
    pub fn of(values: &[f64]) -> Self {
        let mut s = Self::new();
        for &x in values {
            s.add(x);
        }
        s
    }

    /// Add `x` exactly (finite values; a non-finite one makes [`ExactSum::value`] non-finite).
    pub fn add(&mut self, mut x: f64) {
        if !x.is_finite() {
            self.partials.clear();
            self.partials.push(x + self.partials.iter().sum::<f64>());
            return;
        }
        if self.partials.first().is_some_and(|p| !p.is_finite()) {
            self.partials[0] += x;
            return;
        }
        let mut kept = 0;
        for k in 0..self.partials.len() {
            let mut y = self.partials[k];
            if x.abs() < y.abs() {
                std::mem::swap(&mut x, &mut y);
            }
            // Two-sum: hi + lo == x + y exactly (|x| >= |y|).
            let hi = x + y;
            let lo = y - (hi - x);
            if lo != 0.0 {
                self.partials[kept] = lo;
                kept += 1;
            }
            x = hi;
        }
        self.partials.truncate(kept);
        self.partials.push(x);
    }

    /// Add another exact sum (its partials), exactly.
    pub fn merge(&mut self, other: &[f64]) {
        for &p in other {
            self.add(p);
        }
    }

    /// The partials: their exact sum is the sum so far (to send to another process and
    /// [`ExactSum::merge`] there).
    pub fn partials(&self) -> &[f64] {
        &self.partials
    }

    /// The exact sum rounded to the nearest f64 (ties to even).
    pub fn value(&self) -> f64 {
        let p = &self.partials;
        let Some(&top) = p.last() else {
            return 0.0;
        };
        if !top.is_finite() {
            return top;
        }
        // From the largest partial down, until a sum is inexact: the rest cannot change the
        // rounding except at a tie, corrected below.
        let mut n = p.len() - 1;
        let mut hi = top;
        let mut lo = 0.0;
        while n > 0 {
            let x = hi;
            n -= 1;
            let y = p[n];
            hi = x + y;
            let yr = hi - x;
            lo = y - yr;
            if lo != 0.0 {
                break;
            }
        }
        // A tie broken by the partials below: round away from the tie in their direction.
        if n > 0 && ((lo < 0.0 && p[n - 1] < 0.0) || (lo > 0.0 && p[n - 1] > 0.0)) {
            let y = lo * 2.0;
            let x = hi + y;
            let yr = x - hi;
            if y == yr {
                hi = x;
            }
        }
        hi
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The exact sum of values m·2^e (|m| < 2^30, -60 <= e < 20) as an integer count of 2^-60
    /// units (|m|·2^79 < 2^109 each, 300 of them < 2^118: no overflow of an i128), rounded to
    /// f64 by the cast (nearest, ties to even) and scaled exactly: an independent reference.
    fn reference(values: &[(i64, i32)]) -> f64 {
        let units: i128 = values.iter().map(|&(m, e)| i128::from(m) << (e + 60)).sum();
        (units as f64) * 2f64.powi(-60)
    }

    #[test]
    fn the_sum_is_exactly_rounded_and_independent_of_order() {
        let mut state = 0x9e3779b97f4a7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for case in 0..200 {
            let n = 1 + (next() % 300) as usize;
            let terms: Vec<(i64, i32)> = (0..n)
                .map(|_| {
                    let m = (next() % (1 << 31)) as i64 - (1 << 30);
                    let e = (next() % 80) as i32 - 60;
                    (m, e)
                })
                .collect();
            let values: Vec<f64> = terms
                .iter()
                .map(|&(m, e)| m as f64 * 2f64.powi(e))
                .collect();
            let want = reference(&terms);
            let s = ExactSum::of(&values);
            assert_eq!(s.value().to_bits(), want.to_bits(), "case {case}");
            // Reversed, and in two pieces merged: the same bits.
            let mut rev = values.clone();
            rev.reverse();
            assert_eq!(ExactSum::of(&rev).value().to_bits(), want.to_bits());
            let cut = n / 3;
            let mut a = ExactSum::of(&values[cut..]);
            a.merge(ExactSum::of(&values[..cut]).partials());
            assert_eq!(a.value().to_bits(), want.to_bits(), "case {case} merged");
        }
    }

    #[test]
    fn ties_and_cancellation_round_as_the_exact_sum() {
        // 1 + 2^-53 is a tie between 1 and 1 + 2^-52: to even (1); a further 2^-100 breaks it.
        let e = 2f64.powi(-53);
        assert_eq!(ExactSum::of(&[1.0, e]).value(), 1.0);
        assert_eq!(
            ExactSum::of(&[1.0, e, 2f64.powi(-100)]).value(),
            1.0 + 2f64.powi(-52)
        );
        // Sequential addition loses the small terms; the exact sum keeps them.
        let v = [1e16, 1.0, -1e16, 1.0];
        assert_eq!(ExactSum::of(&v).value(), 2.0);
        assert_eq!(ExactSum::new().value(), 0.0);
        assert!(ExactSum::of(&[1.0, f64::NAN]).value().is_nan());
        assert_eq!(ExactSum::of(&[f64::INFINITY, 1.0]).value(), f64::INFINITY);
    }
}
