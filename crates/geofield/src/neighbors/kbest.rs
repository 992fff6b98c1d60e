//! The per-query result buffer and the two distance functions every index shares.
//!
//! All indexes compute squared distances with [`dist2`] and box lower bounds with [`box_dist2`],
//! in the input precision `T`, so that their candidate sets and keys agree bit for bit.

use super::Coord;

/// Largest supported k.
pub const K_MAX: usize = 64;

/// Squared Euclidean distance from `q` to `p`, summed over the axes in order 0, 1, 2 in `T`.
#[inline]
pub fn dist2<T: Coord, const D: usize>(q: &[T; D], p: &[T; D]) -> T {
    let mut s = T::ZERO;
    for a in 0..D {
        let d = p[a] - q[a];
        s = s + d * d;
    }
    s
}

/// A lower bound on [`dist2`]`(q, p)` for every `p` in the box `[lo, hi]`, exact in `T`.
///
/// Rounding is monotone, so for `p_a >= lo_a > q_a` the computed `p_a - q_a` is at least the
/// computed `lo_a - q_a`; squares and sums of non-negative terms keep the order. The bound
/// therefore never exceeds the computed distance of any point inside the box.
#[inline]
pub fn box_dist2<T: Coord, const D: usize>(q: &[T; D], lo: &[T; D], hi: &[T; D]) -> T {
    let mut s = T::ZERO;
    for a in 0..D {
        let g = if q[a] < lo[a] {
            lo[a] - q[a]
        } else if q[a] > hi[a] {
            q[a] - hi[a]
        } else {
            T::ZERO
        };
        s = s + g * g;
    }
    s
}

/// The k best (squared distance, index) keys seen so far, kept sorted ascending.
pub struct KBest<T: Coord> {
    k: usize,
    len: usize,
    d2: [T; K_MAX],
    idx: [u32; K_MAX],
}

impl<T: Coord> KBest<T> {
    /// `k` is clamped to `1..=K_MAX` (callers validate it before).
    pub fn new(k: usize) -> Self {
        KBest {
            k: k.clamp(1, K_MAX),
            len: 0,
            d2: [T::ZERO; K_MAX],
            idx: [0; K_MAX],
        }
    }

    /// The held keys, ascending.
    pub fn items(&self) -> impl Iterator<Item = (T, u32)> + '_ {
        self.d2[..self.len]
            .iter()
            .copied()
            .zip(self.idx[..self.len].iter().copied())
    }

    /// The held keys, ascending, as (squared distances, indices).
    #[inline]
    pub fn keys(&self) -> (&[T], &[u32]) {
        (&self.d2[..self.len], &self.idx[..self.len])
    }

    /// Candidates with a squared distance above this value can never enter the buffer; a box
    /// whose lower bound is above it can be skipped (strictly above: an equal distance with a
    /// lower index would still enter).
    #[inline]
    pub fn bound(&self, r2: T) -> T {
        if self.len == self.k {
            let w = self.d2[self.k - 1];
            if w < r2 { w } else { r2 }
        } else {
            r2
        }
    }

    /// Offer a candidate; the caller has checked `d <= r2`.
    #[inline]
    pub fn push(&mut self, d: T, i: u32) {
        let mut pos = if self.len == self.k {
            let w = self.k - 1;
            let better = d < self.d2[w] || (d == self.d2[w] && i < self.idx[w]);
            if !better {
                return;
            }
            w
        } else {
            self.len += 1;
            self.len - 1
        };
        while pos > 0 {
            let (pd, pi) = (self.d2[pos - 1], self.idx[pos - 1]);
            if d < pd || (d == pd && i < pi) {
                self.d2[pos] = pd;
                self.idx[pos] = pi;
                pos -= 1;
            } else {
                break;
            }
        }
        self.d2[pos] = d;
        self.idx[pos] = i;
    }

    /// Offer every point of a contiguous run (positions and original indices), skipping `skip`.
    #[inline]
    pub fn scan<const D: usize>(
        &mut self,
        q: &[T; D],
        pts: &[[T; D]],
        ids: &[u32],
        skip: Option<u32>,
        r2: T,
    ) {
        let mut bound = self.bound(r2);
        for (p, &i) in pts.iter().zip(ids) {
            let d = dist2(q, p);
            if d <= bound && Some(i) != skip {
                self.push(d, i);
                bound = self.bound(r2);
            }
        }
    }
}

/// Append every point of a run with d² ≤ `r2` (and index ≠ `skip`) to `out` as (d², index).
#[inline]
pub fn scan_within<T: Coord, const D: usize>(
    q: &[T; D],
    pts: &[[T; D]],
    ids: &[u32],
    skip: Option<u32>,
    r2: T,
    out: &mut Vec<(T, u32)>,
) {
    for (p, &i) in pts.iter().zip(ids) {
        let d = dist2(q, p);
        if d <= r2 && Some(i) != skip {
            out.push((d, i));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_k_smallest_keys_with_index_ties() {
        let mut b = KBest::<f64>::new(3);
        for (d, i) in [(4.0, 9), (1.0, 5), (1.0, 2), (4.0, 1), (0.5, 7), (1.0, 3)] {
            b.push(d, i);
        }
        let got: Vec<(f64, u32)> = b.items().collect();
        assert_eq!(got, vec![(0.5, 7), (1.0, 2), (1.0, 3)]);
        assert_eq!(b.bound(f64::INFINITY), 1.0);
        assert_eq!(b.bound(0.25), 0.25);
    }

    #[test]
    fn box_bound_never_exceeds_point_distance() {
        let q = [0.1f32, -3.7];
        let lo = [1.3f32, -2.2];
        let hi = [2.9f32, 5.0];
        for p in [[1.3f32, -2.2], [2.0, 0.0], [2.9, 5.0], [1.3, 1.0]] {
            assert!(box_dist2(&q, &lo, &hi) <= dist2(&q, &p));
        }
    }
}
