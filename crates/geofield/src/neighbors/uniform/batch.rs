//! The all-points batch query of a [`UniformGrid`] (module docs of `uniform`: cell by cell,
//! blocks of cells gathered once per cell).

use super::*;

/// Stored points per rayon task in [`UniformGrid`]'s batch search (at least).
const TASK_ROWS: usize = 512;

/// Up to this many candidates, [`select`] ranks them by counting (O(f²), branch-free);
/// above, it inserts them into a sorted buffer.
const RANK_MAX: usize = 32;

/// The points of the block of cells within Chebyshev distance `reach` of one cell, gathered
/// once for all the cell's queries (structure of arrays), with the bounds that the exact
/// stopping rule compares against.
struct Level<T: Coord, const D: usize> {
    /// Block radius in cells; 0 while not gathered for the current cell.
    reach: usize,
    xs: [Vec<T>; D],
    ids: Vec<u32>,
    /// Position of the cell's first point among the candidates.
    home_at: usize,
    /// Per axis: every point below the block has coordinate ≤ `below`, every point above it
    /// coordinate ≥ `above` (−∞ / +∞ where the block reaches the grid's edge).
    below: [T; D],
    above: [T; D],
    /// Squared distances of the current query to the candidates.
    d2: Vec<T>,
}

impl<T: Coord, const D: usize> Level<T, D> {
    fn new() -> Self {
        Level {
            reach: 0,
            xs: std::array::from_fn(|_| Vec::new()),
            ids: Vec::new(),
            home_at: 0,
            below: [T::NEG_INFINITY; D],
            above: [T::INFINITY; D],
            d2: Vec::new(),
        }
    }

    /// Squared distances from `q` to every candidate, in `T` exactly as [`super::kbest::dist2`]
    /// (axes summed in order from zero); the query itself (candidate `me`) and the padding get
    /// NaN, which never compares true.
    #[inline]
    fn distances(&mut self, q: &[T; D], me: Option<usize>) {
        let m = self.d2.len();
        let xs: [&[T]; D] = std::array::from_fn(|a| &self.xs[a][..m]);
        for (j, o) in self.d2.chunks_exact_mut(4).enumerate() {
            for (l, v) in o.iter_mut().enumerate() {
                let mut s = T::ZERO;
                for a in 0..D {
                    let d = xs[a][4 * j + l] - q[a];
                    s = s + d * d;
                }
                *v = s;
            }
        }
        if let Some(v) = me.and_then(|j| self.d2.get_mut(j)) {
            *v = T::from_f64(f64::NAN);
        }
    }

    /// Lower bound on the computed squared distance from `q` to every point outside the block
    /// (as [`UniformGrid::outside_bound`]).
    #[inline]
    fn outside(&self, q: &[T; D]) -> T {
        let mut lb = T::INFINITY;
        for ((&qa, &below), &above) in q.iter().zip(&self.below).zip(&self.above) {
            let lo = if qa > below { qa - below } else { T::ZERO };
            let hi = if above > qa { above - qa } else { T::ZERO };
            let g = if lo < hi { lo } else { hi };
            let g2 = g * g;
            if g2 < lb {
                lb = g2;
            }
        }
        lb
    }
}

/// Per-thread scratch of the batch search.
struct Scratch<T: Coord, const D: usize> {
    near: Level<T, D>,
    far: Level<T, D>,
    /// Filtered candidates (padded for the counting loop).
    fd: Vec<T>,
    fi: Vec<u32>,
    /// One query's result, ascending (slot `K_MAX` takes discarded writes).
    sel_d: [T; K_MAX + 1],
    sel_i: [u32; K_MAX + 1],
}

/// Candidates with d² < `ob` and d² ≤ `r2` (NaN never qualifies), in order, into `fd` / `fi`
/// (at least 4 longer than `d2`), followed by +∞ up to a multiple of 4; returns their number.
#[inline]
fn filter<T: Coord>(d2: &[T], ids: &[u32], ob: T, r2: T, fd: &mut [T], fi: &mut [u32]) -> usize {
    let mut f = 0;
    if r2 < ob {
        for (&d, &i) in d2.iter().zip(ids) {
            fd[f] = d;
            fi[f] = i;
            f += usize::from(d <= r2);
        }
    } else {
        for (&d, &i) in d2.iter().zip(ids) {
            fd[f] = d;
            fi[f] = i;
            f += usize::from(d < ob);
        }
    }
    for v in &mut fd[f..f.div_ceil(4) * 4] {
        *v = T::INFINITY;
    }
    f
}

/// The up to k smallest keys (d², id) of the `f` filtered candidates (all finite, distinct
/// ids; +∞ padding after them), ascending, into `sel_d` / `sel_i`; returns how many.
#[inline]
fn select<T: Coord>(
    fd: &[T],
    fi: &[u32],
    f: usize,
    k: usize,
    sel_d: &mut [T; K_MAX + 1],
    sel_i: &mut [u32; K_MAX + 1],
) -> usize {
    if f > RANK_MAX {
        let mut best = KBest::new(k);
        for (&d, &i) in fd[..f].iter().zip(&fi[..f]) {
            if d <= best.bound(T::INFINITY) {
                best.push(d, i);
            }
        }
        let (d, ix) = best.keys();
        sel_d[..d.len()].copy_from_slice(d);
        sel_i[..ix.len()].copy_from_slice(ix);
        return d.len();
    }
    // A key's place is the number of smaller keys; the padding never counts.
    let padded = f.div_ceil(4) * 4;
    let (pd, pi) = (&fd[..padded], &fi[..padded]);
    for (&dj, &ij) in fd[..f].iter().zip(&fi[..f]) {
        let mut lt = 0usize;
        let mut eq = 0usize;
        for c in pd.chunks_exact(4) {
            for &di in c {
                lt += usize::from(di < dj);
                eq += usize::from(di == dj);
            }
        }
        if eq > 1 {
            // Equal distances (dj itself counts once): order them by index.
            for (&di, &ii) in pd.iter().zip(pi) {
                lt += usize::from(di == dj && ii < ij);
            }
        }
        let slot = lt.min(K_MAX);
        sel_d[slot] = dj;
        sel_i[slot] = ij;
    }
    f.min(k)
}

impl<T: Coord, const D: usize> UniformGrid<T, D> {
    /// Every stored point as a query (`Search::search_stored`): runs of whole cells on rayon.
    pub(super) fn search_all(
        &self,
        k: usize,
        exclude_self: bool,
        r2: T,
        sink: &RowSink<'_>,
    ) -> bool {
        // Tasks: runs of whole cells holding at least TASK_ROWS points each.
        let ncells = self.starts.len() - 1;
        let mut tasks = Vec::new();
        let mut c0 = 0;
        while c0 < ncells {
            let s0 = self.starts[c0];
            let mut c1 = c0 + 1;
            while c1 < ncells && ((self.starts[c1] - s0) as usize) < TASK_ROWS {
                c1 += 1;
            }
            tasks.push((c0, c1));
            c0 = c1;
        }
        tasks.into_par_iter().for_each(|(c0, c1)| {
            let mut sc = Scratch {
                near: Level::new(),
                far: Level::new(),
                fd: Vec::new(),
                fi: Vec::new(),
                sel_d: [T::ZERO; K_MAX + 1],
                sel_i: [0; K_MAX + 1],
            };
            for c in c0..c1 {
                if sink.stopped() {
                    return;
                }
                self.answer_cell(c, k, exclude_self, r2, &mut sc, sink);
            }
            sink.tick((self.starts[c1] - self.starts[c0]) as usize);
        });
        true
    }

    /// Gather into `lv` the points of the cells within Chebyshev distance `reach` of `cc`
    /// (whose first point is stored at `s0`): one contiguous run along axis 0 per combination
    /// of the other axes.
    fn gather(&self, cc: &[usize; D], s0: usize, reach: usize, lv: &mut Level<T, D>) {
        for v in &mut lv.xs {
            v.clear();
        }
        lv.ids.clear();
        lv.reach = reach;
        let mut lo = [0usize; D];
        let mut hi = [0usize; D];
        for a in 0..D {
            lo[a] = cc[a].saturating_sub(reach);
            hi[a] = (cc[a] + reach).min(self.dims[a] - 1);
            lv.below[a] = if cc[a] > reach {
                self.pre_max[a][cc[a] - reach - 1]
            } else {
                T::NEG_INFINITY
            };
            lv.above[a] = if cc[a] + reach + 1 < self.dims[a] {
                self.suf_min[a][cc[a] + reach + 1]
            } else {
                T::INFINITY
            };
        }
        let mut cur = lo;
        loop {
            let mut base = 0usize;
            for a in (1..D).rev() {
                base = base * self.dims[a] + cur[a];
            }
            base *= self.dims[0];
            let (s, e) = (
                self.starts[base + lo[0]] as usize,
                self.starts[base + hi[0] + 1] as usize,
            );
            if (s..e).contains(&s0) {
                lv.home_at = lv.ids.len() + (s0 - s);
            }
            for (a, v) in lv.xs.iter_mut().enumerate() {
                v.extend(self.pts[s..e].iter().map(|p| p[a]));
            }
            lv.ids.extend_from_slice(&self.ids[s..e]);
            let mut a = 1;
            while a < D {
                if cur[a] < hi[a] {
                    cur[a] += 1;
                    break;
                }
                cur[a] = lo[a];
                a += 1;
            }
            if a >= D {
                break;
            }
        }
        // Pad to whole groups of 4 with NaN coordinates (NaN distances are never taken).
        let m = lv.ids.len().div_ceil(4) * 4;
        let nan = T::from_f64(f64::NAN);
        for v in &mut lv.xs {
            v.resize(m, nan);
        }
        lv.ids.resize(m, u32::MAX);
        lv.d2.clear();
        lv.d2.resize(m, T::ZERO);
    }

    /// Answer the stored points of cell `c` into `sink`. The block of cells within one cell is
    /// gathered once and scanned for every query of the cell; a query is done when at least k
    /// candidates (or every candidate within the radius) lie strictly below the lower bound on
    /// every point outside the block: the k smallest keys are then among them. Otherwise the
    /// block within two cells is tried the same way, and last the shell-by-shell search.
    #[allow(clippy::too_many_arguments)]
    fn answer_cell(
        &self,
        c: usize,
        k: usize,
        exclude_self: bool,
        r2: T,
        sc: &mut Scratch<T, D>,
        sink: &RowSink<'_>,
    ) {
        let (s0, s1) = (self.starts[c] as usize, self.starts[c + 1] as usize);
        if s0 == s1 {
            return;
        }
        let mut cc = [0usize; D];
        let mut rest = c;
        for (x, &n) in cc.iter_mut().zip(&self.dims) {
            *x = rest % n;
            rest /= n;
        }
        self.gather(&cc, s0, 1, &mut sc.near);
        sc.far.reach = 0;
        for s in s0..s1 {
            let q = &self.pts[s];
            let mut done = false;
            for level in 0..2 {
                let lv = if level == 0 {
                    &mut sc.near
                } else {
                    if sc.far.reach == 0 {
                        self.gather(&cc, s0, 2, &mut sc.far);
                    }
                    &mut sc.far
                };
                let me = exclude_self.then_some(lv.home_at + (s - s0));
                lv.distances(q, me);
                let ob = lv.outside(q);
                if sc.fd.len() < lv.d2.len() + 4 {
                    sc.fd.resize(lv.d2.len() + 4, T::INFINITY);
                    sc.fi.resize(lv.d2.len() + 4, u32::MAX);
                }
                let f = filter(&lv.d2, &lv.ids, ob, r2, &mut sc.fd, &mut sc.fi);
                if f >= k || r2 < ob {
                    let m = select(&sc.fd, &sc.fi, f, k, &mut sc.sel_d, &mut sc.sel_i);
                    sink.put(s, &sc.sel_d[..m], &sc.sel_i[..m]);
                    done = true;
                    break;
                }
            }
            if done {
                continue;
            }
            // Rare: the k-th key may lie beyond two cells; go on shell by shell.
            let mut best = KBest::new(k);
            for (&d, &i) in sc.far.d2.iter().zip(&sc.far.ids) {
                if d <= best.bound(r2) {
                    best.push(d, i);
                }
            }
            let skip = exclude_self.then_some(self.ids[s]);
            self.shells_from(q, &cc, 3, skip, r2, &mut best);
            let (d, ix) = best.keys();
            sink.put(s, d, ix);
        }
    }
}
