//! The far field's node weights in fixed point: every tree's stencil terms w·l_i·l_j rounded
//! once to whole multiples of 2^−F and summed in 128-bit integers.
//!
//! Integer sums are associative, so the node weights are the same bits whatever order the trees
//! come in and however they are divided: over threads, over the GPU's atomic additions, and over
//! processes that each spread their piece of the stand and add the lattices
//! ([`Exchange::sum_i128`]). That is what lets a run split over processes reduce one coarse
//! lattice instead of gathering every tree, and still write one process's map bit for bit.
//!
//! F is chosen from the whole stand's Σw: every tree's n × n stencil weights sum to at most Λ²
//! in absolute value (Λ the Lebesgue constant, [`lagrange_constants`]) and the weights are
//! non-negative, so every node's sum is at most Λ²·Σw, which F scales to at most 2^124 (the
//! i128 range is 2^127). Each term's rounding errs by at most half a unit, 2^−F−1: the node
//! sums err by at most (number of terms)·2^−F−1 in all, about 2^−125·Λ²Σw per term, far below
//! the f64 rounding the certificate already charges; the certificate adds it anyway
//! ([`Fixed::error`]).

use geofield_cuda::wind::Exchange;

use super::super::sources::Sources;
use super::{Lattice, lagrange_constants, stencil};

/// The fixed-point scale 2^F of the node weights.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fixed {
    /// 2^F.
    pub scale: f64,
    /// 2^−F.
    pub unit: f64,
}

/// 2^e for e within the normal range.
fn pow2(e: i32) -> f64 {
    f64::from_bits(((1023 + e) as u64) << 52)
}

impl Fixed {
    /// The scale for `order`-point stencils and the whole stand's Σw (`w_total`, weights ≥ 0):
    /// every node sum within 2^124 (a margin of 8 below the i128 range, for the roundings).
    pub fn new(order: usize, w_total: f64) -> Self {
        let (_, lam) = lagrange_constants(order);
        Self::for_bound(lam * lam * w_total)
    }

    /// The scale for sums of at most `most` in absolute value: within 2^124 (a margin of 8
    /// below the i128 range, for the roundings).
    pub fn for_bound(most: f64) -> Self {
        let f = if most > 0.0 && most.is_finite() {
            124 - most.log2().ceil() as i32
        } else {
            0
        };
        // Within the normal range of 2^±F (weights of 2^±900 are no stand's).
        let f = f.clamp(-1000, 1000);
        Self {
            scale: pow2(f),
            unit: pow2(-f),
        }
    }
    /// `c` in units of 2^−F, rounded to the nearest (ties to even).
    #[inline]
    pub fn to_int(&self, c: f64) -> i128 {
        (c * self.scale).round_ties_even() as i128
    }
    /// A sum of units as f64 (rounded once, to the nearest).
    #[inline]
    pub fn to_f64(&self, x: i128) -> f64 {
        x as f64 * self.unit
    }
    /// The largest total error of `terms` roundings (absolute): half a unit each.
    pub fn error(&self, terms: f64) -> f64 {
        0.5 * self.unit * terms
    }
}

/// The lattice's node weights in units of 2^−F: `spread[j·nx + i]` the trees' Lagrange-spread
/// weights (the far field's sources), `nearest` each tree's weight at its nearest node (the
/// bound's), both nx × ny (the nodes themselves; the FFT's zero padding is added after).
#[derive(Debug, Clone, PartialEq)]
pub struct Nodes {
    pub spread: Vec<i128>,
    pub nearest: Vec<i128>,
    pub fixed: Fixed,
}

impl Nodes {
    /// The node weights of `sources` (any piece of the stand: the scale is the whole stand's,
    /// `fixed`).
    pub fn of(lat: &Lattice, order: usize, sources: &Sources, fixed: Fixed) -> Self {
        let n = order;
        let cells = lat.nx * lat.ny;
        let mut spread = vec![0i128; cells];
        let mut nearest = vec![0i128; cells];
        for k in 0..sources.len() {
            let (a, b) = lat.coords(sources.u[k], sources.v[k]);
            let w = sources.w[k];
            let (bx, lx) = stencil(n, a);
            let (by, ly) = stencil(n, b);
            for (j, &lyj) in ly.iter().enumerate().take(n) {
                let row = lat.wrap(by + j as i64, lat.ny) * lat.nx;
                for (i, &lxi) in lx.iter().enumerate().take(n) {
                    let at = row + lat.wrap(bx + i as i64, lat.nx);
                    spread[at] = spread[at].wrapping_add(fixed.to_int(w * lxi * lyj));
                }
            }
            let (ix, iy) = (
                lat.wrap(a.round() as i64, lat.nx),
                lat.wrap(b.round() as i64, lat.ny),
            );
            let at = iy * lat.nx + ix;
            nearest[at] = nearest[at].wrapping_add(fixed.to_int(w));
        }
        Self {
            spread,
            nearest,
            fixed,
        }
    }

    /// Every process's node weights added (each process passes its piece's): the whole stand's,
    /// on every process, the same bits as one process spreading every tree.
    pub fn summed(self, ex: &dyn Exchange) -> Self {
        let cells = self.spread.len();
        let mut both = self.spread;
        both.extend_from_slice(&self.nearest);
        drop(self.nearest);
        let mut all = ex.sum_i128(both);
        let nearest = all.split_off(cells.min(all.len()));
        Self {
            spread: all,
            nearest,
            fixed: self.fixed,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// The node weights as f64 (each rounded once from its exact sum).
    fn values(v: &[i128], fixed: Fixed) -> Vec<f64> {
        v.iter().map(|&x| fixed.to_f64(x)).collect()
    }

    fn trees(n: usize, seed: u64) -> Sources {
        let mut s =
            crate::forest::rng::Stream::new(seed, 0, 0, 0, crate::forest::rng::Purpose::Growth);
        let mut t = Sources::default();
        for _ in 0..n {
            t.u.push(-20.0 + 140.0 * s.uniform());
            t.v.push(-20.0 + 90.0 * s.uniform());
            // Weights over nine decades.
            t.w.push(10f64.powf(-4.0 + 9.0 * s.uniform()));
        }
        t
    }

    fn lattice() -> Lattice {
        let grid = geofield_core::GridSpec::from_extent(
            geofield_core::Extent::new(0.0, 0.0, 100.0, 50.0).unwrap(),
            1.0,
        )
        .unwrap();
        Lattice::new(&grid, (-20.0, -20.0, 120.0, 70.0), 3.7, 6, false, 1 << 20).unwrap()
    }

    /// The fixed-point node weights against the same sums in f64 (the oracle: each node's terms
    /// summed in f64, whose error is ≤ (terms − 1)·ε·Σ|terms|): they agree to the two roundings'
    /// bounds, and the whole lattice's total is Σw (the Lagrange weights of each tree sum to
    /// one, up to their own rounding).
    #[test]
    fn fixed_point_nodes_are_the_f64_sums() {
        let lat = lattice();
        let t = trees(5000, 11);
        let w_total = t.total_weight();
        let fixed = Fixed::new(6, w_total);
        let nodes = Nodes::of(&lat, 6, &t, fixed);
        let nodes_n = lat.nx * lat.ny;
        let mut f64_sum = vec![0.0f64; nodes_n];
        let mut abs_sum = vec![0.0f64; nodes_n];
        let mut terms = vec![0usize; nodes_n];
        for k in 0..t.len() {
            let (a, b) = lat.coords(t.u[k], t.v[k]);
            let (bx, lx) = stencil(6, a);
            let (by, ly) = stencil(6, b);
            for (j, &lyj) in ly.iter().enumerate().take(6) {
                for (i, &lxi) in lx.iter().enumerate().take(6) {
                    let at = (by as usize + j) * lat.nx + bx as usize + i;
                    let c = t.w[k] * lxi * lyj;
                    f64_sum[at] += c;
                    abs_sum[at] += c.abs();
                    terms[at] += 1;
                }
            }
        }
        let got = values(&nodes.spread, fixed);
        let mut total = 0.0;
        for at in 0..got.len() {
            let allowed = terms[at] as f64 * f64::EPSILON * abs_sum[at]
                + fixed.error(terms[at] as f64)
                + f64::EPSILON * got[at].abs();
            assert!(
                (got[at] - f64_sum[at]).abs() <= allowed,
                "node {at}: {} vs {} (allowed {allowed:e})",
                got[at],
                f64_sum[at]
            );
            total += got[at];
        }
        assert!(
            (total - w_total).abs() <= 1e-12 * w_total,
            "{total} vs {w_total}"
        );
        let nearest: f64 = values(&nodes.nearest, fixed).iter().sum();
        assert!((nearest - w_total).abs() <= 1e-12 * w_total);
    }

    /// The trees in any order and in any pieces give the same bits: pieces spread alone and
    /// summed (two and three parts, one empty) are the whole stand's nodes.
    #[test]
    fn pieces_summed_are_the_whole_stands_nodes() {
        let lat = lattice();
        let t = trees(3000, 5);
        let fixed = Fixed::new(6, t.total_weight());
        let whole = Nodes::of(&lat, 6, &t, fixed);
        let mut rev = t.clone();
        rev.u.reverse();
        rev.v.reverse();
        rev.w.reverse();
        assert_eq!(Nodes::of(&lat, 6, &rev, fixed), whole);
        for cuts in [vec![0, 1234, 3000], vec![0, 700, 700, 3000]] {
            let parts = cuts.len() - 1;
            let all = geofield_cuda::wind::LocalParts::new(parts);
            let got: Vec<Nodes> = std::thread::scope(|s| {
                let hs: Vec<_> = (0..parts)
                    .map(|p| {
                        let (all, lat, t, cuts) = (&all, &lat, &t, &cuts);
                        s.spawn(move || {
                            let r = cuts[p]..cuts[p + 1];
                            let piece = Sources {
                                u: t.u[r.clone()].to_vec(),
                                v: t.v[r.clone()].to_vec(),
                                w: t.w[r].to_vec(),
                            };
                            Nodes::of(lat, 6, &piece, fixed).summed(&all.part(p))
                        })
                    })
                    .collect();
                hs.into_iter().map(|h| h.join().unwrap()).collect()
            });
            for g in got {
                assert!(g == whole, "cuts {cuts:?}: a part's summed nodes differ");
            }
        }
    }

    /// The scale keeps the largest possible node sum (Λ²Σw) within 2^124 and uses the range:
    /// above 2^122.
    #[test]
    fn the_scale_fits_the_largest_node_in_i128() {
        for w_total in [1e-30, 0.37, 1.0, 4096.0, 7.3e11, 1e40] {
            for order in [4, 6] {
                let f = Fixed::new(order, w_total);
                let (_, lam) = lagrange_constants(order);
                let top = lam * lam * w_total * f.scale;
                assert!(
                    top <= 2f64.powi(124) && top > 2f64.powi(122),
                    "{w_total} {order}: {top:e}"
                );
                assert_eq!(f.scale * f.unit, 1.0);
            }
        }
        assert_eq!(Fixed::new(6, 0.0).scale, 1.0);
    }
}
