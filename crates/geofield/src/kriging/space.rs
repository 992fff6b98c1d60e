//! The kriging space and the covariance evaluated in it.
//!
//! [`Frame`]: world coordinates (metres) are centred on the samples' mean in f64, then, with
//! geometric anisotropy, rotated into (major, minor) axes with the minor component divided by the
//! ratio (see [`Anisotropy`]). Every distance of the kriging is a Euclidean distance in this space,
//! h = √(Δx² + Δy²), so the variogram's range is the range along the major axis. The drift basis
//! is evaluated on (u, v) = (x, y) / s, s the largest |coordinate| of the samples, so its columns
//! are O(1) even with UTM coordinates.
//!
//! [`Covariance`]: C(h) = C₀ − γ(h) with C₀ the total sill (a bounded variogram), or, for a variogram
//! without a sill (power, linear), a pseudo-covariance B − γ(h) with B a constant larger than any
//! γ between the samples: ordinary and universal kriging do not depend on B (the weights sum to
//! one), so the predictions and variances are those of the variogram form. A distance of at most
//! ε counts as zero: C = C₀ there ([`NuggetMode::Exact`], exact at the samples) or C₀ − c₀
//! ([`NuggetMode::MeasurementError`], the nugget is noise).

use std::sync::Arc;

use geofield_core::GridSpec;

use super::drift::ExternalDrift;
use super::params::{Anisotropy, Block, NuggetMode};
use super::variogram::{Model, Variogram};
use crate::dispersal::fastmath::exp_neg;

/// Node (row, col) of a grid in kriging space: [`NodeGrid::node`] evaluates
/// x = (origin.x + col·col_step.x) + row·row_step.x (and y likewise) in that order in f64, the
/// order the CUDA kernels use (without FMA), so the CPU and the GPU place every node alike.
pub use geofield_cuda::kriging::NodeGrid;

/// World → kriging space.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Frame {
    /// The samples' mean, subtracted first.
    pub centre: (f64, f64),
    /// Row-major 2 × 2 map applied to the centred coordinates (identity when isotropic).
    pub m: [f64; 4],
    pub isotropic: bool,
    /// Drift coordinates are (x, y) / `drift_scale`.
    pub drift_scale: f64,
}

impl Frame {
    /// The frame of samples at (`xs`, `ys`) (world metres, non-empty, finite).
    pub fn new(xs: &[f64], ys: &[f64], anisotropy: Option<Anisotropy>) -> Frame {
        let n = xs.len().max(1) as f64;
        let cx = xs.iter().sum::<f64>() / n;
        let cy = ys.iter().sum::<f64>() / n;
        let (m, isotropic) = match anisotropy {
            Some(a) if !(a.ratio == 1.0 && a.azimuth_deg.rem_euclid(180.0) == 0.0) => {
                let (s, c) = a.azimuth_deg.to_radians().sin_cos();
                ([s, c, c / a.ratio, -s / a.ratio], false)
            }
            _ => ([1.0, 0.0, 0.0, 1.0], true),
        };
        let mut f = Frame {
            centre: (cx, cy),
            m,
            isotropic,
            drift_scale: 1.0,
        };
        let mut s = 0.0f64;
        for (&x, &y) in xs.iter().zip(ys) {
            let (u, v) = f.apply(x, y);
            s = s.max(u.abs()).max(v.abs());
        }
        f.drift_scale = if s > 0.0 { s } else { 1.0 };
        f
    }

    /// A world point in kriging space.
    #[inline]
    pub fn apply(&self, x: f64, y: f64) -> (f64, f64) {
        let (dx, dy) = (x - self.centre.0, y - self.centre.1);
        if self.isotropic {
            (dx, dy)
        } else {
            (
                self.m[0] * dx + self.m[1] * dy,
                self.m[2] * dx + self.m[3] * dy,
            )
        }
    }

    /// The grid's cell centres in kriging space.
    pub fn node_grid(&self, grid: &GridSpec) -> NodeGrid {
        let cs = grid.cell_size_m;
        let dx0 = grid.x_min_m + 0.5 * cs - self.centre.0;
        let dy0 = grid.y_max_m - 0.5 * cs - self.centre.1;
        let [a, b, c, d] = self.m;
        let (origin, col_step, row_step) = if self.isotropic {
            ([dx0, dy0], [cs, 0.0], [0.0, -cs])
        } else {
            (
                [a * dx0 + b * dy0, c * dx0 + d * dy0],
                [a * cs, c * cs],
                [-b * cs, -d * cs],
            )
        };
        NodeGrid {
            origin,
            col_step,
            row_step,
            rows: grid.rows,
            cols: grid.cols,
            row0: 0,
        }
    }

    /// The first `p` drift terms (1, u, v, u², uv, v²) at kriging-space (x, y).
    #[inline]
    pub fn drift(&self, x: f64, y: f64, p: usize, out: &mut [f64]) {
        drift_basis(x / self.drift_scale, y / self.drift_scale, p, out);
    }
}

/// The first `p` of (1, u, v, u², uv, v²).
#[inline]
pub fn drift_basis(u: f64, v: f64, p: usize, out: &mut [f64]) {
    let all = [1.0, u, v, u * u, u * v, v * v];
    out[..p].copy_from_slice(&all[..p]);
}

/// The covariance used by the kriging systems (see the module docs).
#[derive(Clone, Debug, PartialEq)]
pub struct Covariance {
    pub variogram: Variogram,
    /// C(0): the total sill, or the pseudo-covariance constant B.
    pub c0: f64,
    /// Distances at most this count as zero.
    pub eps: f64,
    /// C at a distance ≤ ε off the diagonal: C₀ (exact) or C₀ − nugget.
    pub c_coincident: f64,
    /// The variogram has no sill (pseudo-covariance).
    pub pseudo: bool,
}

impl Covariance {
    /// `max_gamma`: the largest γ the kriging will meet (only used without a sill).
    pub fn new(variogram: &Variogram, eps: f64, nugget: NuggetMode, max_gamma: f64) -> Self {
        let pseudo = !variogram.is_bounded();
        let c0 = if pseudo {
            // Comfortably above every γ between samples; the result does not depend on it.
            2.0 * max_gamma.max(variogram.nugget).max(f64::MIN_POSITIVE) + variogram.nugget
        } else {
            variogram.sill()
        };
        let c_coincident = match nugget {
            NuggetMode::Exact => c0,
            NuggetMode::MeasurementError => c0 - variogram.nugget,
        };
        Covariance {
            variogram: variogram.clone(),
            c0,
            eps,
            c_coincident,
            pseudo,
        }
    }

    /// C(h) off the diagonal.
    #[inline]
    pub fn at(&self, h: f64) -> f64 {
        if h <= self.eps {
            self.c_coincident
        } else {
            self.c0 - self.variogram.gamma(h)
        }
    }

    /// C between distinct samples i ≠ j of the system matrix (the diagonal is [`Self::c0`]).
    #[inline]
    pub fn between_samples(&self, h: f64) -> f64 {
        if h <= self.eps {
            self.c0
        } else {
            self.c0 - self.variogram.gamma(h)
        }
    }

    /// `out[j]` = C(|(nx[j], ny[j]) − (x, y)|) for every j; `d` is scratch of the same length.
    /// Written as plain loops per model so that they vectorise.
    pub fn row(&self, x: f64, y: f64, nx: &[f64], ny: &[f64], d: &mut [f64], out: &mut [f64]) {
        let m = nx.len();
        let (nx, ny, d, out) = (&nx[..m], &ny[..m], &mut d[..m], &mut out[..m]);
        for j in 0..m {
            let dx = nx[j] - x;
            let dy = ny[j] - y;
            d[j] = (dx * dx + dy * dy).sqrt();
        }
        self.from_distances(d, out);
    }

    /// `out[j]` = C(`d[j]`) for every j (distances in kriging space, any dimension), with the
    /// exactness rule; the loops of [`Self::row`].
    pub fn from_distances(&self, d: &[f64], out: &mut [f64]) {
        let m = d.len();
        let (d, out) = (&d[..m], &mut out[..m]);
        let base = self.c0 - self.variogram.nugget;
        out.fill(base);
        for s in &self.variogram.structures {
            let c = s.sill;
            match s.model {
                Model::Exponential => {
                    let k = -3.0 / s.range;
                    for j in 0..m {
                        out[j] -= c - c * exp_neg(d[j] * k);
                    }
                }
                Model::Gaussian => {
                    let ia = 1.0 / s.range;
                    for j in 0..m {
                        let r = d[j] * ia;
                        out[j] -= c - c * exp_neg(-3.0 * r * r);
                    }
                }
                Model::Spherical => {
                    let ia = 1.0 / s.range;
                    for j in 0..m {
                        let r = (d[j] * ia).min(1.0);
                        out[j] -= c * (r * (1.5 - 0.5 * r * r));
                    }
                }
                Model::Cubic => {
                    let ia = 1.0 / s.range;
                    for j in 0..m {
                        let r = (d[j] * ia).min(1.0);
                        let r2 = r * r;
                        out[j] -= c * (r2 * (7.0 - r * (8.75 - r2 * (3.5 - 0.75 * r2))));
                    }
                }
                _ => {
                    for j in 0..m {
                        out[j] -= s.gamma(d[j]);
                    }
                }
            }
        }
        let (eps, cc) = (self.eps, self.c_coincident);
        for j in 0..m {
            out[j] = if d[j] <= eps { cc } else { out[j] };
        }
    }
}

/// A tolerance for "the same location": `scale` (a length) times 1e-12.
pub fn eps_for(diagonal: f64) -> f64 {
    1e-12 * diagonal
}

/// The support of the predictions: points, or a block's discretisation in kriging space (see
/// [`Block`]); and the drift basis, with the external variable when there is one (see
/// [`super::drift`]). The point support's covariances, drift and C(0) are the plain ones, bit
/// for bit.
#[derive(Clone, Debug, PartialEq)]
pub struct Support {
    /// Kriging-space offsets of the discretisation points (empty: point support), and their
    /// weights.
    off: Vec<(f64, f64)>,
    w: Vec<f64>,
    /// C̄(B, B) (unused for points).
    cbb: f64,
    /// The external drift variable, and the map from kriging space back to the world
    /// (centre, row-major 2 × 2 inverse of [`Frame::m`]).
    ext: Option<WorldMap>,
}

/// The external drift variable with the map from kriging space back to world coordinates.
type WorldMap = (Arc<ExternalDrift>, (f64, f64), [f64; 4]);

impl Support {
    /// Point support, or the block's points mapped by `frame`'s rotation and scaling, with
    /// C̄(B, B) from `cov` (a point with itself: C(0) as the exactness rule has it); `external`
    /// the drift variable of an external drift.
    pub fn new(
        frame: &Frame,
        cov: &Covariance,
        block: Option<&Block>,
        external: Option<&Arc<ExternalDrift>>,
    ) -> Support {
        let [a, b, c, d] = frame.m;
        let det = a * d - b * c;
        let ext = external.map(|e| {
            (
                Arc::clone(e),
                frame.centre,
                [d / det, -b / det, -c / det, a / det],
            )
        });
        let Some(blk) = block else {
            return Support {
                off: vec![],
                w: vec![],
                cbb: cov.c0,
                ext,
            };
        };
        let pts = blk.points();
        let w: Vec<f64> = pts.iter().map(|p| p.2).collect();
        let off: Vec<(f64, f64)> = pts
            .into_iter()
            .map(|(x, y, _)| {
                if frame.isotropic {
                    (x, y)
                } else {
                    (a * x + b * y, c * x + d * y)
                }
            })
            .collect();
        // C̄(B, B) without the nugget (see [`Block`]).
        let mut cbb = 0.0;
        for (&(xa, ya), &wa) in off.iter().zip(&w) {
            for (&(xb, yb), &wb) in off.iter().zip(&w) {
                let h = (xa - xb).hypot(ya - yb);
                let c = if h == 0.0 {
                    cov.c0 - cov.variogram.nugget
                } else {
                    cov.at(h)
                };
                cbb += wa * wb * c;
            }
        }
        Support { off, w, cbb, ext }
    }

    /// A point support with the polynomial drift (the kernels' own case).
    pub fn is_plain(&self) -> bool {
        self.off.is_empty() && self.ext.is_none()
    }

    /// The block's points in kriging space as (dx, dy, w) triples (empty for points).
    pub fn block_triples(&self) -> Vec<f64> {
        self.off
            .iter()
            .zip(&self.w)
            .flat_map(|(&(x, y), &w)| [x, y, w])
            .collect()
    }

    /// The first `p` drift terms at kriging-space (x, y), a point: the polynomial ones, then,
    /// with an external drift, e at the point (NaN where it has none: the callers check the
    /// samples and nodes first).
    #[inline]
    pub fn point_drift(&self, frame: &Frame, x: f64, y: f64, p: usize, out: &mut [f64]) {
        match &self.ext {
            Some((e, (cx, cy), inv)) if p >= 2 => {
                frame.drift(x, y, p - 1, out);
                let (wx, wy) = if frame.isotropic {
                    (x + cx, y + cy)
                } else {
                    (inv[0] * x + inv[1] * y + cx, inv[2] * x + inv[3] * y + cy)
                };
                out[p - 1] = e.at(wx, wy).unwrap_or(f64::NAN);
            }
            _ => frame.drift(x, y, p, out),
        }
    }

    /// C(0) of a prediction: the total sill (points) or C̄(B, B).
    #[inline]
    pub fn c0(&self, cov: &Covariance) -> f64 {
        if self.off.is_empty() {
            cov.c0
        } else {
            self.cbb
        }
    }

    /// `out[j]` = the covariance between the point (x, y) and the prediction at target j
    /// (`tx[j]`, `ty[j]`): [`Covariance::row`] for points, its weighted mean over the block's
    /// points for a block (the discretisation is symmetric about the centre, so shifting the point by
    /// −offset is shifting the target by +offset). `d`, `tmp`: scratch of the same length.
    #[allow(clippy::too_many_arguments)]
    pub fn row(
        &self,
        cov: &Covariance,
        x: f64,
        y: f64,
        tx: &[f64],
        ty: &[f64],
        d: &mut [f64],
        tmp: &mut [f64],
        out: &mut [f64],
    ) {
        if self.off.is_empty() {
            cov.row(x, y, tx, ty, d, out);
            return;
        }
        let m = tx.len();
        out[..m].fill(0.0);
        for (&(ox, oy), &w) in self.off.iter().zip(&self.w) {
            cov.row(x - ox, y - oy, tx, ty, d, tmp);
            for j in 0..m {
                out[j] += w * tmp[j];
            }
        }
    }

    /// The first `p` drift terms of the prediction at kriging-space (x, y): the point's, or
    /// their weighted mean over the block's points.
    #[inline]
    pub fn drift(&self, frame: &Frame, x: f64, y: f64, p: usize, out: &mut [f64]) {
        if self.off.is_empty() {
            self.point_drift(frame, x, y, p, out);
            return;
        }
        let mut f = [0.0; 6];
        out[..p].fill(0.0);
        for (&(ox, oy), &w) in self.off.iter().zip(&self.w) {
            self.point_drift(frame, x + ox, y + oy, p, &mut f);
            for q in 0..p {
                out[q] += w * f[q];
            }
        }
    }
}
