//! Queries of a [`UniformGrid`]: the shell search and the `Search` impl.

use super::super::{Search, kbest};
use super::*;

impl<T: Coord, const D: usize> UniformGrid<T, D> {
    /// Shells `s_first, s_first + 1, …` around `c0` with the exact stopping rule; every point
    /// at Chebyshev cell distance below `s_first` must already have been offered to `best`.
    pub(super) fn shells_from(
        &self,
        q: &[T; D],
        c0: &[usize; D],
        s_first: usize,
        skip: Option<u32>,
        r2: T,
        best: &mut KBest<T>,
    ) {
        let mut smax = 0;
        for (&c, &n) in c0.iter().zip(&self.dims) {
            smax = smax.max(c).max(n - 1 - c);
        }
        let mut cell = [0usize; D];
        for s in s_first..=smax {
            if s > 0 && self.outside_bound(q, c0, s - 1) > best.bound(r2) {
                break;
            }
            self.visit_shell(D - 1, &mut cell, false, c0, s, T::ZERO, q, skip, r2, best);
        }
    }

    pub(super) fn home(&self, q: &[T; D]) -> [usize; D] {
        let mut c = [0usize; D];
        for a in 0..D {
            let f = ((q[a].to_f64() * self.scale - self.origin[a]) / self.cell).floor();
            let last = self.dims[a] - 1;
            c[a] = if f >= 0.0 { (f as usize).min(last) } else { 0 };
        }
        c
    }

    /// Lower bound on the squared distance of every point outside the block of cells at
    /// Chebyshev distance ≤ t from c0 (infinite when the block covers the grid).
    pub(super) fn outside_bound(&self, q: &[T; D], c0: &[usize; D], t: usize) -> T {
        let mut lb = T::INFINITY;
        for a in 0..D {
            if c0[a] > t {
                let m = self.pre_max[a][c0[a] - t - 1];
                let g = if q[a] > m { q[a] - m } else { T::ZERO };
                let g2 = g * g;
                if g2 < lb {
                    lb = g2;
                }
            }
            let up = c0[a] + t + 1;
            if up < self.dims[a] {
                let m = self.suf_min[a][up];
                let g = if m > q[a] { m - q[a] } else { T::ZERO };
                let g2 = g * g;
                if g2 < lb {
                    lb = g2;
                }
            }
        }
        lb
    }

    /// Scan the contiguous run of cells `x0..=x1` on axis 0 (the fastest axis) whose other
    /// coordinates are `cell[1..]`, unless its slab box is beyond the current bound. `partial`
    /// is the box's squared gap on axes 1.. (already checked against the bound).
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub(super) fn visit_strip(
        &self,
        q: &[T; D],
        cell: &[usize; D],
        x0: usize,
        x1: usize,
        partial: T,
        sk: Option<u32>,
        r2: T,
        best: &mut KBest<T>,
    ) {
        let mut base = 0usize;
        for a in (1..D).rev() {
            base = base * self.dims[a] + cell[a];
        }
        base *= self.dims[0];
        let (s, e) = (
            self.starts[base + x0] as usize,
            self.starts[base + x1 + 1] as usize,
        );
        if s == e {
            return;
        }
        let mut lo = self.slab_lo[0][x0];
        let mut hi = self.slab_hi[0][x0];
        for x in x0 + 1..=x1 {
            if self.slab_lo[0][x] < lo {
                lo = self.slab_lo[0][x];
            }
            if self.slab_hi[0][x] > hi {
                hi = self.slab_hi[0][x];
            }
        }
        let g = if q[0] < lo {
            lo - q[0]
        } else if q[0] > hi {
            q[0] - hi
        } else {
            T::ZERO
        };
        if loose(partial + g * g) > best.bound(r2) {
            return;
        }
        best.scan(q, &self.pts[s..e], &self.ids[s..e], sk, r2);
    }

    /// Visit the cells of shell `s` around `c0` (Chebyshev distance exactly s), axis `a`
    /// downwards; axis 0 is scanned as contiguous strips. `partial` is the squared gap of the
    /// slab box on the axes above `a` (summed from the highest axis down, a lower bound on the
    /// distance of every point in the sub-block; sub-blocks beyond the bound are skipped).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn visit_shell(
        &self,
        a: usize,
        cell: &mut [usize; D],
        on_shell: bool,
        c0: &[usize; D],
        s: usize,
        partial: T,
        q: &[T; D],
        sk: Option<u32>,
        r2: T,
        best: &mut KBest<T>,
    ) {
        let lo = c0[a].saturating_sub(s);
        let hi = (c0[a] + s).min(self.dims[a] - 1);
        if a == 0 {
            if on_shell {
                self.visit_strip(q, cell, lo, hi, partial, sk, r2, best);
            } else {
                if c0[0] >= s {
                    self.visit_strip(q, cell, c0[0] - s, c0[0] - s, partial, sk, r2, best);
                }
                if s > 0 && c0[0] + s < self.dims[0] {
                    self.visit_strip(q, cell, c0[0] + s, c0[0] + s, partial, sk, r2, best);
                }
            }
            return;
        }
        for c in lo..=hi {
            let (sl, sh) = (self.slab_lo[a][c], self.slab_hi[a][c]);
            if sl > sh {
                continue; // an empty slab
            }
            let g = if q[a] < sl {
                sl - q[a]
            } else if q[a] > sh {
                q[a] - sh
            } else {
                T::ZERO
            };
            let p = partial + g * g;
            if loose(p) > best.bound(r2) {
                continue;
            }
            cell[a] = c;
            let on = on_shell || c + s == c0[a] || c == c0[a] + s;
            self.visit_shell(a - 1, cell, on, c0, s, p, q, sk, r2, best);
        }
    }
}

/// The partial box bounds sum the axes from the highest down, while d² sums them from axis 0
/// up; the two orders can round apart by a few ulps, so a bound is shrunk by 2⁻²⁰ (relative)
/// before it may prune: still a valid lower bound on every inner point's computed d².
#[inline]
fn loose<T: Coord>(p: T) -> T {
    p - p * T::from_f64(1.0 / 1_048_576.0)
}

impl<T: Coord, const D: usize> Search<T, D> for UniformGrid<T, D> {
    fn storage_order(&self) -> Option<&[u32]> {
        Some(&self.ids)
    }

    fn within(&self, q: &[T; D], skip: Option<u32>, r2: T, out: &mut Vec<(T, u32)>) {
        if self.pts.is_empty() {
            return;
        }
        // The block of cells within one cell of the box [q − r, q + r]: the margin covers
        // rounding in the binning and in d²; each cell is then pruned by its exact slab box.
        let r = r2.to_f64().max(0.0).sqrt();
        let mut lo = [0usize; D];
        let mut hi = [0usize; D];
        for a in 0..D {
            let last = self.dims[a] - 1;
            let f = |x: f64| {
                let c = ((x * self.scale - self.origin[a]) / self.cell).floor();
                if c >= 0.0 { (c as usize).min(last) } else { 0 }
            };
            lo[a] = f(q[a].to_f64() - r).saturating_sub(1);
            hi[a] = (f(q[a].to_f64() + r) + 1).min(last);
        }
        let mut cell = lo;
        loop {
            let mut id = 0usize;
            for a in (0..D).rev() {
                id = id * self.dims[a] + cell[a];
            }
            let (s, e) = (self.starts[id] as usize, self.starts[id + 1] as usize);
            if s < e {
                let blo: [T; D] = std::array::from_fn(|a| self.slab_lo[a][cell[a]]);
                let bhi: [T; D] = std::array::from_fn(|a| self.slab_hi[a][cell[a]]);
                if box_dist2(q, &blo, &bhi) <= r2 {
                    kbest::scan_within(q, &self.pts[s..e], &self.ids[s..e], skip, r2, out);
                }
            }
            let mut a = 0;
            loop {
                if cell[a] < hi[a] {
                    cell[a] += 1;
                    break;
                }
                cell[a] = lo[a];
                a += 1;
                if a == D {
                    return;
                }
            }
        }
    }

    fn search(&self, q: &[T; D], skip: Option<u32>, r2: T, best: &mut KBest<T>) {
        if self.pts.is_empty() {
            return;
        }
        let c0 = self.home(q);
        self.shells_from(q, &c0, 0, skip, r2, best);
    }

    fn search_stored(&self, k: usize, exclude_self: bool, r2: T, sink: &RowSink<'_>) -> bool {
        self.search_all(k, exclude_self, r2, sink)
    }
}
