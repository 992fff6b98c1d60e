//! Ripley's K function of a 2-D point pattern in a rectangular window, with the edge
//! corrections of spatstat's `Kest` (the reference for ecologists' stem-map statistics).
//!
//! For n points in a window W of area a, every ordered pair (i, j ≠ i) at distance d_ij ≤ r
//! counts towards
//!
//! - **none** (`un`): K(r) = a / (n(n−1)) · Σ 1(d_ij ≤ r), biased low near the edges;
//! - **translate** (Ohser 1983, spatstat `trans`): each pair weighted by
//!   e_ij = a / |W ∩ (W + x_j − x_i)| = w·h / ((w − |Δx|)(h − |Δy|)); NaN for r ≥ the shorter
//!   side;
//! - **isotropic** (Ripley 1977, spatstat `iso`): each pair weighted by the inverse of the
//!   fraction of the circle about x_i through x_j that lies inside W; NaN for r ≥ half the
//!   diagonal;
//! - **border** (reduced sample, spatstat `border`): only points at least r from the boundary
//!   are centres, K(r) = Σ_i 1(b_i ≥ r) #{j ≠ i: d_ij ≤ r} / (λ · #{i: b_i ≥ r}), λ = n/a; NaN
//!   where no point is that deep inside.
//!
//! Weights are capped at 100 (spatstat's `maxedgewt`). Distances are Euclidean in f64 and a pair
//! is within r when d² ≤ r·r (inclusive, as [`super::ball`]). Weighted sums are exact in fixed
//! point (as [`super::ball::count_pairs_weighted`]), so the result is independent of the
//! threads. Under complete spatial randomness K(r) = πr² (`theo`); L(r) = √(K/π) ([`l_of`]).
//!
//! The fraction of a circle inside the rectangle: the arc beyond each edge's line at distance
//! e < d spans 2·acos(e/d), centred on that edge's normal; two adjacent edges' arcs overlap,
//! by α₁ + α₂ − π/2, exactly when the corner between them lies inside the circle, and opposite
//! edges' arcs cannot overlap (each spans at most π). So the part outside is
//! 2Σα_k − Σ_corners max(0, α_a + α_b − π/2).

use rayon::prelude::*;

use super::Coord;
use super::ball::cells::CellList;
use super::ball::{Metric, stored_points, value};
use crate::dispersal::nearfar::Fixed;
use crate::{Backend, GeofieldError};

/// spatstat's default cap on an edge-correction weight (`maxedgewt`).
pub const MAX_EDGE_WEIGHT: f64 = 100.0;

/// spatstat's default number of radii (`r` from 0 to `rmax` in 513 steps).
pub const DEFAULT_RADII: usize = 513;

/// A rectangular observation window [x0, x1] × [y0, y1].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Window {
    pub x0: f64,
    pub y0: f64,
    pub x1: f64,
    pub y1: f64,
}

impl Window {
    /// Check the rectangle is finite with positive width and height.
    pub fn validate(&self) -> Result<(), GeofieldError> {
        let ok = [self.x0, self.y0, self.x1, self.y1]
            .iter()
            .all(|v| v.is_finite())
            && self.x1 > self.x0
            && self.y1 > self.y0;
        if ok {
            Ok(())
        } else {
            Err(GeofieldError::InvalidParameter {
                name: "window".into(),
                value: format!("{},{},{},{}", self.x0, self.y0, self.x1, self.y1),
                expected: "x0,y0,x1,y1 finite with x1 > x0 and y1 > y0".into(),
            })
        }
    }

    pub fn width(&self) -> f64 {
        self.x1 - self.x0
    }

    pub fn height(&self) -> f64 {
        self.y1 - self.y0
    }

    pub fn area(&self) -> f64 {
        self.width() * self.height()
    }

    /// The bounding box of flat (x, y) points (None without a positive width and height).
    pub fn around<T: Coord>(points: &[T]) -> Option<Window> {
        let mut w = Window {
            x0: f64::INFINITY,
            y0: f64::INFINITY,
            x1: f64::NEG_INFINITY,
            y1: f64::NEG_INFINITY,
        };
        for p in points.chunks_exact(2) {
            let (x, y) = (p[0].to_f64(), p[1].to_f64());
            w.x0 = w.x0.min(x);
            w.x1 = w.x1.max(x);
            w.y0 = w.y0.min(y);
            w.y1 = w.y1.max(y);
        }
        w.validate().ok().map(|_| w)
    }
}

/// An edge correction of [`ripley_k`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Correction {
    None,
    Border,
    Translate,
    Isotropic,
}

impl Correction {
    /// spatstat's column name for the estimate.
    pub fn name(self) -> &'static str {
        match self {
            Correction::None => "un",
            Correction::Border => "border",
            Correction::Translate => "trans",
            Correction::Isotropic => "iso",
        }
    }
}

/// K(r) per correction asked for (None where not asked for), NaN where undefined.
#[derive(Debug, Clone, PartialEq)]
pub struct KFunction {
    pub r: Vec<f64>,
    /// πr², the value under complete spatial randomness.
    pub theo: Vec<f64>,
    pub none: Option<Vec<f64>>,
    pub border: Option<Vec<f64>>,
    pub translate: Option<Vec<f64>>,
    pub isotropic: Option<Vec<f64>>,
    /// Number of points and the window's area (λ = n / area).
    pub n: usize,
    pub area: f64,
}

impl KFunction {
    /// The estimates asked for, in the order none, border, translate, isotropic, each with
    /// its spatstat name.
    pub fn columns(&self) -> Vec<(Correction, &[f64])> {
        [
            (Correction::None, &self.none),
            (Correction::Border, &self.border),
            (Correction::Translate, &self.translate),
            (Correction::Isotropic, &self.isotropic),
        ]
        .into_iter()
        .filter_map(|(c, v)| v.as_deref().map(|v| (c, v)))
        .collect()
    }
}

/// Besag's L(r) = √(K(r)/π) (NaN stays NaN).
pub fn l_of(k: &[f64]) -> Vec<f64> {
    k.iter()
        .map(|&v| (v / std::f64::consts::PI).max(0.0).sqrt())
        .map(|l| if l.is_nan() { f64::NAN } else { l })
        .collect()
}

/// spatstat's default radii: 0 to min(shorter side / 4, √(1000 / (πλ))) in [`DEFAULT_RADII`]
/// steps (λ = n / area).
pub fn default_radii(n: usize, window: &Window) -> Vec<f64> {
    let lambda = n as f64 / window.area();
    let shorter = window.width().min(window.height());
    let rmax = (shorter / 4.0).min((1000.0 / (std::f64::consts::PI * lambda)).sqrt());
    (0..DEFAULT_RADII)
        .map(|i| rmax * i as f64 / (DEFAULT_RADII - 1) as f64)
        .collect()
}

/// The translation weight of the pair offset (dx, dy) in `w` (capped).
#[inline]
pub fn translate_weight(w: &Window, dx: f64, dy: f64) -> f64 {
    let inside = (w.width() - dx.abs()) * (w.height() - dy.abs());
    if inside > 0.0 {
        (w.area() / inside).min(MAX_EDGE_WEIGHT)
    } else {
        MAX_EDGE_WEIGHT
    }
}

/// Ripley's isotropic weight of a circle of radius d about (x, y) in `w` (capped): the inverse
/// of the fraction of the circle inside the window (module docs).
#[inline]
pub fn isotropic_weight(w: &Window, x: f64, y: f64, d: f64) -> f64 {
    if d <= 0.0 {
        return 1.0;
    }
    use std::f64::consts::{FRAC_PI_2, PI};
    // Distances to the edges in order around the circle: right, top, left, bottom.
    let e = [w.x1 - x, w.y1 - y, x - w.x0, y - w.y0];
    let alpha = e.map(|e| if e < d { (e.max(0.0) / d).acos() } else { 0.0 });
    let mut outside = 2.0 * (alpha[0] + alpha[1] + alpha[2] + alpha[3]);
    for k in 0..4 {
        outside -= (alpha[k] + alpha[(k + 1) % 4] - FRAC_PI_2).max(0.0);
    }
    let frac = 1.0 - outside / (2.0 * PI);
    if frac > 0.0 {
        (1.0 / frac).min(MAX_EDGE_WEIGHT)
    } else {
        MAX_EDGE_WEIGHT
    }
}

/// A point's distance to the window's boundary.
#[inline]
fn depth_of(w: &Window, q: &[f64; 2]) -> f64 {
    (q[0] - w.x0)
        .min(w.x1 - q[0])
        .min(q[1] - w.y0)
        .min(w.y1 - q[1])
}

/// Per-task sums: plain counts per radius, the border correction's difference array, the
/// weighted sums in fixed point.
#[derive(Clone)]
struct Sums {
    none: Vec<u64>,
    border: Vec<i64>,
    trans: Vec<i128>,
    iso: Vec<i128>,
}

impl Sums {
    fn new(nr: usize) -> Self {
        Sums {
            none: vec![0; nr],
            border: vec![0; nr + 1],
            trans: vec![0; nr],
            iso: vec![0; nr],
        }
    }

    fn add(mut self, o: Sums) -> Sums {
        for (a, b) in self.none.iter_mut().zip(o.none) {
            *a += b;
        }
        for (a, b) in self.border.iter_mut().zip(o.border) {
            *a += b;
        }
        for (a, b) in self.trans.iter_mut().zip(o.trans) {
            *a += b;
        }
        for (a, b) in self.iso.iter_mut().zip(o.iso) {
            *a += b;
        }
        self
    }
}

/// The sums of [`ripley_k`] on the CPU's threads (per pair as the module docs say).
#[allow(clippy::too_many_arguments)]
fn cpu_sums(
    list: &CellList<2>,
    pts: &[[f64; 2]],
    window: &Window,
    radii: &[f64],
    t: &[f64],
    fixed: &Fixed,
    do_trans: bool,
    do_iso: bool,
) -> Sums {
    let (n, nr) = (pts.len(), radii.len());
    let (r_max, t_max) = (radii[nr - 1], t[nr - 1]);
    (0..n)
        .into_par_iter()
        .with_min_len(64)
        .fold(
            || Sums::new(nr),
            |mut s, i| {
                let q = &pts[i];
                // Radii 0..deep have r ≤ b: point i is a border centre for them.
                let b = depth_of(window, q);
                let deep = radii.partition_point(|&r| r <= b);
                list.visit(q, r_max, |ps, ids| {
                    for (p, &j) in ps.iter().zip(ids) {
                        if j as usize == i {
                            continue;
                        }
                        let v = value(Metric::Euclidean, &[0.0, 0.0], q, p);
                        if v > t_max {
                            continue;
                        }
                        let m = t.partition_point(|&x| x < v);
                        s.none[m] += 1;
                        if m < deep {
                            s.border[m] += 1;
                            s.border[deep] -= 1;
                        }
                        if do_trans {
                            let w = translate_weight(window, p[0] - q[0], p[1] - q[1]);
                            s.trans[m] += fixed.to_int(w);
                        }
                        if do_iso {
                            let w = isotropic_weight(window, q[0], q[1], v.sqrt());
                            s.iso[m] += fixed.to_int(w);
                        }
                    }
                });
                s
            },
        )
        .reduce(|| Sums::new(nr), Sums::add)
}

/// Every point lies in the window, or an error naming the first that does not.
pub(crate) fn check_inside(pts: &[[f64; 2]], window: &Window) -> Result<(), GeofieldError> {
    if let Some(i) = pts.iter().position(|p| {
        !(p[0] >= window.x0 && p[0] <= window.x1 && p[1] >= window.y0 && p[1] <= window.y1)
    }) {
        return Err(GeofieldError::Invalid(format!(
            "point {i} ({}, {}) is outside the window [{}, {}] x [{}, {}]",
            pts[i][0], pts[i][1], window.x0, window.x1, window.y0, window.y1
        )));
    }
    Ok(())
}

/// Check the radii of [`ripley_k`]: at least one, finite, ≥ 0, non-decreasing.
pub(crate) fn check_radii(radii: &[f64]) -> Result<(), GeofieldError> {
    if radii.is_empty() {
        return Err(GeofieldError::Invalid("no radii given".into()));
    }
    if let Some(r) = radii.iter().find(|r| !(r.is_finite() && **r >= 0.0)) {
        return Err(GeofieldError::InvalidParameter {
            name: "r".into(),
            value: format!("{r}"),
            expected: "finite radii >= 0".into(),
        });
    }
    if radii.windows(2).any(|w| w[1] < w[0]) {
        return Err(GeofieldError::Invalid(
            "the radii must be non-decreasing".into(),
        ));
    }
    Ok(())
}

/// Ripley's K of the 2-D `points` (flat x, y) in `window` at the non-decreasing radii ≥ 0,
/// with the `corrections` asked for (module docs). Every point must lie in the window.
///
/// ```
/// use geofield::Backend;
/// use geofield::neighbors::ripley::{self, Correction, Window};
///
/// // A 3 × 3 lattice of spacing 1 in [0, 2] × [0, 2]: 12 neighbours at distance 1, 24
/// // ordered pairs; K(1) = area / (n(n − 1)) · 24.
/// let pts: Vec<f64> = (0..9).flat_map(|i| [(i % 3) as f64, (i / 3) as f64]).collect();
/// let w = Window { x0: 0.0, y0: 0.0, x1: 2.0, y1: 2.0 };
/// let k = ripley::ripley_k(&Backend::Cpu, &pts, &w, &[0.5, 1.0], &[Correction::None])?;
/// assert_eq!(k.none.unwrap(), vec![0.0, 4.0 / 72.0 * 24.0]);
/// # Ok::<(), geofield::GeofieldError>(())
/// ```
pub fn ripley_k<T: Coord>(
    backend: &Backend,
    points: &[T],
    window: &Window,
    radii: &[f64],
    corrections: &[Correction],
) -> Result<KFunction, GeofieldError> {
    window.validate()?;
    if !points.len().is_multiple_of(2) {
        return Err(GeofieldError::Invalid(format!(
            "points has {} values, not a multiple of 2 (x, y)",
            points.len()
        )));
    }
    check_radii(radii)?;
    let pts = stored_points::<T, 2>(points, &[0.0, 0.0], "point")?;
    let n = pts.len();
    if n < 2 {
        return Err(GeofieldError::Invalid(format!(
            "K needs at least 2 points, got {n}"
        )));
    }
    check_inside(&pts, window)?;
    let nr = radii.len();
    let r_max = radii[nr - 1];
    let t: Vec<f64> = radii
        .iter()
        .map(|&r| Metric::Euclidean.threshold(r))
        .collect();
    let t_max = t[nr - 1];
    let fixed = Fixed::for_bound(MAX_EDGE_WEIGHT * n as f64 * (n - 1) as f64);
    let want = |c| corrections.contains(&c);
    let (do_trans, do_iso) = (want(Correction::Translate), want(Correction::Isotropic));
    let list = CellList::build(&pts, [0.0, 0.0], r_max)?;
    let sums = if let Backend::Cuda(g) = backend {
        let flat = super::ball::gpu::Flat::of(&list)?;
        let q: Vec<f64> = pts.iter().flatten().copied().collect();
        let reach = geofield_cuda::neighbors::ball::Reach {
            metric: 0,
            r: r_max,
            thr: t_max,
        };
        let flags = u32::from(do_trans) | (u32::from(do_iso) << 1);
        let s = geofield_cuda::neighbors::ball::ball_ripley(
            g,
            &flat.cells(&list),
            &q,
            reach,
            &t,
            radii,
            [window.x0, window.y0, window.x1, window.y1],
            flags,
            fixed.scale,
        )?;
        Sums {
            none: s.none,
            border: s.border,
            trans: s.trans,
            iso: s.iso,
        }
    } else {
        cpu_sums(&list, &pts, window, radii, &t, &fixed, do_trans, do_iso)
    };
    let area = window.area();
    let pair_scale = area / (n as f64 * (n - 1) as f64);
    let running = |v: &[i128]| -> Vec<f64> {
        let mut acc = 0i128;
        v.iter()
            .map(|&x| {
                acc += x;
                fixed.to_f64(acc) * pair_scale
            })
            .collect()
    };
    let none = want(Correction::None).then(|| {
        let mut acc = 0u64;
        sums.none
            .iter()
            .map(|&c| {
                acc += c;
                acc as f64 * pair_scale
            })
            .collect()
    });
    let border = want(Correction::Border).then(|| {
        let lambda = n as f64 / area;
        let mut depth: Vec<f64> = pts.par_iter().map(|q| depth_of(window, q)).collect();
        depth.par_sort_unstable_by(f64::total_cmp);
        let mut num = 0i64;
        (0..nr)
            .map(|k| {
                num += sums.border[k];
                let centres = n - depth.partition_point(|&b| b < radii[k]);
                if centres == 0 {
                    f64::NAN
                } else {
                    num as f64 / (lambda * centres as f64)
                }
            })
            .collect()
    });
    let shorter = window.width().min(window.height());
    let half_diag = 0.5 * window.width().hypot(window.height());
    let cut = |v: Vec<f64>, limit: f64| -> Vec<f64> {
        v.into_iter()
            .zip(radii)
            .map(|(k, &r)| if r >= limit { f64::NAN } else { k })
            .collect()
    };
    Ok(KFunction {
        r: radii.to_vec(),
        theo: radii.iter().map(|r| std::f64::consts::PI * r * r).collect(),
        none,
        border,
        translate: do_trans.then(|| cut(running(&sums.trans), shorter)),
        isotropic: do_iso.then(|| cut(running(&sums.iso), half_diag)),
        n,
        area,
    })
}
