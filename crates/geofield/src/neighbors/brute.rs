//! Brute force: every query against every point.
//!
//! Each query scans all N points in index order and keeps the k best keys in a fixed-size
//! sorted insertion buffer ([`KBest`], k ≤ 64). O(Q·N·(D + log k)) time, O(1) extra memory per
//! query; rayon runs over the queries. This is the oracle the other indexes are tested against.

use super::Coord;
use super::kbest::KBest;

/// The "index" of brute force: the points and their original indices.
pub struct Brute<'a, T: Coord, const D: usize> {
    pts: &'a [[T; D]],
    ids: Vec<u32>,
}

impl<'a, T: Coord, const D: usize> Brute<'a, T, D> {
    /// Wrap the points; their indices are their positions (the caller checked N ≤ u32::MAX).
    pub fn new(pts: &'a [[T; D]]) -> Self {
        let ids = (0..pts.len()).map(|i| i as u32).collect();
        Brute { pts, ids }
    }

    /// Replace every stored point index i by `labels[i]` (the ids results are keyed and
    /// tie-broken by), e.g. stable agent ids of points given in a storage order.
    pub fn relabel(&mut self, labels: &[u32]) {
        for id in &mut self.ids {
            *id = labels[*id as usize];
        }
    }
}

impl<T: Coord, const D: usize> super::Search<T, D> for Brute<'_, T, D> {
    fn search(&self, q: &[T; D], skip: Option<u32>, r2: T, best: &mut KBest<T>) {
        best.scan(q, self.pts, &self.ids, skip, r2);
    }

    fn within(&self, q: &[T; D], skip: Option<u32>, r2: T, out: &mut Vec<(T, u32)>) {
        super::kbest::scan_within(q, self.pts, &self.ids, skip, r2, out);
    }
}
