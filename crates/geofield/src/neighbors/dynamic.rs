//! Dynamic grid: a recursive partition of the points into leaves of at most `max_per_leaf`.
//!
//! The paper's dynamic grid (Breitbart 2009, §V-B) splits a cell on one axis until every leaf
//! holds at most `max` agents, and stores each leaf's box and its contiguous run of agents. We
//! keep that layout (points permuted so each leaf is contiguous, an exact bounding box per node)
//! with two changes: the split is at the median on the axis of largest extent (the paper splits
//! at the centroid), which bounds the depth by ⌈log2(N/max)⌉ even with clusters and duplicates;
//! and the inner nodes are kept as a binary hierarchy, so the search prunes whole subtrees.
//!
//! # Build, O(N log(N/max))
//!
//! Recursion with `select_nth_unstable_by` on (coordinate, index), subtrees built in parallel
//! (rayon::join) into a preorder node array whose layout depends only on N and `max_per_leaf`;
//! each node's box is the exact min/max of its points' coordinates in `T`.
//!
//! # Query
//!
//! Depth-first with an explicit stack, nearer child first. A node is skipped when its box lower
//! bound (computed in `T`, never above any inner point's computed squared distance) is strictly
//! above the current bound (k-th best squared distance when k are held, else r²), so
//! equal-distance, lower-index points are never lost. Expected O(log N + k + max) per query on
//! well-spread data.

use super::Coord;
use super::kbest::{KBest, box_dist2};

const LEAF: u32 = u32::MAX;

struct Node<T: Coord, const D: usize> {
    lo: [T; D],
    hi: [T; D],
    start: u32,
    end: u32,
    /// Index of the left child, or [`LEAF`].
    child: u32,
    /// Index of the right child (unused in a leaf).
    right: u32,
}

/// A median-split hierarchy with leaves of at most `max_per_leaf` points (see the module docs).
pub struct DynamicGrid<T: Coord, const D: usize> {
    nodes: Vec<Node<T, D>>,
    pts: Vec<[T; D]>,
    ids: Vec<u32>,
}

impl<T: Coord, const D: usize> DynamicGrid<T, D> {
    /// Build over the points; `max_per_leaf` ≥ 1 (validated by the caller, clamped here).
    pub fn build(points: &[[T; D]], max_per_leaf: usize) -> Self {
        let leaf = max_per_leaf.max(1);
        let mut items: Vec<([T; D], u32)> = points
            .iter()
            .enumerate()
            .map(|(i, p)| (*p, i as u32))
            .collect();
        let count = if items.is_empty() {
            0
        } else {
            subtree_nodes(items.len(), leaf)
        };
        let mut nodes: Vec<Node<T, D>> = (0..count)
            .map(|_| Node {
                lo: [T::ZERO; D],
                hi: [T::ZERO; D],
                start: 0,
                end: 0,
                child: LEAF,
                right: LEAF,
            })
            .collect();
        build_rec(&mut nodes, 0, &mut items, 0, leaf);
        let pts = items.iter().map(|(p, _)| *p).collect();
        let ids = items.iter().map(|(_, i)| *i).collect();
        DynamicGrid { nodes, pts, ids }
    }

    /// Replace every stored point index i by `labels[i]` (the ids results are keyed and
    /// tie-broken by), e.g. stable agent ids of points given in a storage order.
    pub fn relabel(&mut self, labels: &[u32]) {
        for id in &mut self.ids {
            *id = labels[*id as usize];
        }
    }

    /// Number of leaves.
    pub fn leaves(&self) -> usize {
        self.nodes.iter().filter(|n| n.child == LEAF).count()
    }
}

/// Nodes in the subtree over `n` points (the split sizes depend on n only).
fn subtree_nodes(n: usize, leaf: usize) -> usize {
    if n <= leaf {
        1
    } else {
        1 + subtree_nodes(n / 2, leaf) + subtree_nodes(n - n / 2, leaf)
    }
}

/// Below this many points a subtree is built on the current thread.
const PARALLEL_MIN: usize = 8192;

/// Fill `nodes` (this subtree, preorder; `nodes[0]` is `base`) over `items` (this subtree's
/// points, which start at `start` in the whole array).
fn build_rec<T: Coord, const D: usize>(
    nodes: &mut [Node<T, D>],
    base: usize,
    items: &mut [([T; D], u32)],
    start: usize,
    leaf: usize,
) {
    let Some(first) = items.first() else {
        return;
    };
    let mut lo = first.0;
    let mut hi = first.0;
    for (p, _) in items.iter() {
        for a in 0..D {
            if p[a] < lo[a] {
                lo[a] = p[a];
            }
            if p[a] > hi[a] {
                hi[a] = p[a];
            }
        }
    }
    let n = items.len();
    let (head, rest) = nodes.split_at_mut(1);
    let me = &mut head[0];
    me.lo = lo;
    me.hi = hi;
    me.start = start as u32;
    me.end = (start + n) as u32;
    if n <= leaf {
        me.child = LEAF;
        return;
    }
    let mut axis = 0;
    let mut widest = f64::NEG_INFINITY;
    for a in 0..D {
        let e = hi[a].to_f64() - lo[a].to_f64();
        if e > widest {
            widest = e;
            axis = a;
        }
    }
    let mid = n / 2;
    items.select_nth_unstable_by(mid, |x, y| {
        x.0[axis]
            .partial_cmp(&y.0[axis])
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(x.1.cmp(&y.1))
    });
    let nl = subtree_nodes(mid, leaf);
    me.child = (base + 1) as u32;
    me.right = (base + 1 + nl) as u32;
    let (ln, rn) = rest.split_at_mut(nl);
    let (li, ri) = items.split_at_mut(mid);
    if n >= PARALLEL_MIN {
        rayon::join(
            || build_rec(ln, base + 1, li, start, leaf),
            || build_rec(rn, base + 1 + nl, ri, start + mid, leaf),
        );
    } else {
        build_rec(ln, base + 1, li, start, leaf);
        build_rec(rn, base + 1 + nl, ri, start + mid, leaf);
    }
}

impl<T: Coord, const D: usize> super::Search<T, D> for DynamicGrid<T, D> {
    fn storage_order(&self) -> Option<&[u32]> {
        Some(&self.ids)
    }

    fn search(&self, q: &[T; D], skip: Option<u32>, r2: T, best: &mut KBest<T>) {
        let Some(root) = self.nodes.first() else {
            return;
        };
        let mut stack: Vec<(u32, T)> = Vec::with_capacity(64);
        stack.push((0, box_dist2(q, &root.lo, &root.hi)));
        while let Some((ni, lb)) = stack.pop() {
            if lb > best.bound(r2) {
                continue;
            }
            let node = &self.nodes[ni as usize];
            if node.child == LEAF {
                let (s, e) = (node.start as usize, node.end as usize);
                best.scan(q, &self.pts[s..e], &self.ids[s..e], skip, r2);
                continue;
            }
            let (l, r) = (node.child, node.right);
            let (a, b) = (&self.nodes[l as usize], &self.nodes[r as usize]);
            let la = box_dist2(q, &a.lo, &a.hi);
            let lb2 = box_dist2(q, &b.lo, &b.hi);
            // Push the farther child first so the nearer one is searched first.
            if la <= lb2 {
                stack.push((r, lb2));
                stack.push((l, la));
            } else {
                stack.push((l, la));
                stack.push((r, lb2));
            }
        }
    }

    fn within(&self, q: &[T; D], skip: Option<u32>, r2: T, out: &mut Vec<(T, u32)>) {
        if self.nodes.is_empty() {
            return;
        }
        let mut stack: Vec<u32> = Vec::with_capacity(64);
        stack.push(0);
        while let Some(ni) = stack.pop() {
            let node = &self.nodes[ni as usize];
            if box_dist2(q, &node.lo, &node.hi) > r2 {
                continue;
            }
            if node.child == LEAF {
                let (s, e) = (node.start as usize, node.end as usize);
                super::kbest::scan_within(q, &self.pts[s..e], &self.ids[s..e], skip, r2, out);
            } else {
                stack.push(node.right);
                stack.push(node.child);
            }
        }
    }
}
