//! 3-D kriging: values at (x, y, z) samples (boreholes, soundings, probes) kriged onto a 3-D
//! grid or at points, with the kriging variance and a 3-D geometric anisotropy
//! ([`Anisotropy3`]: gstat's/GSLIB's, GSTools' and PyKrige's conventions).
//!
//! The kriging is [`super`]'s, in three dimensions: distances |M (p − q)| after the anisotropy
//! map, the variogram's [`super::Covariance`] with the same exactness rule ([`NuggetMode`]), a
//! known mean (simple), an unknown constant (ordinary) or an unknown linear drift in x, y, z
//! (universal, PyKrige's `regional_linear`). Global kriging factors the covariance of every
//! sample once (Cholesky, f64) and evaluates nodes in tiles: the prediction by dual kriging
//! (Σ αᵢ C(xᵢ, x₀) + f(x₀)·β), the variance from the factor,
//! σ² = C(0) − |L⁻¹c|² + |R⁻¹(f − Gᵀ L⁻¹c)|² (G = L⁻¹F, GᵀG = RRᵀ), the same formulas as the 2-D
//! global path. Local kriging takes the k nearest samples of each node (the exact k-NN of
//! [`crate::neighbors`], on the backend) within an optional radius and solves that system.
//! Samples at identical coordinates are merged (values averaged) first.
//!
//! Node order of a grid target: x fastest, then y, then z (index `(k·ny + j)·nx + i`), PyKrige's
//! `(nz, ny, nx)` array order.

mod aniso;
mod empirical;
mod solve;
#[cfg(test)]
mod tests;

use std::time::Instant;

pub use aniso::Anisotropy3;
pub use empirical::{drift_residuals3, empirical3};

use super::params::{Drift, Kind, NuggetMode};
use super::variogram::Variogram;
use crate::{Backend, GeofieldError};

/// Scattered 3-D samples of one variable.
#[derive(Clone, Debug, PartialEq)]
pub struct Samples3 {
    pub xs: Vec<f64>,
    pub ys: Vec<f64>,
    pub zs: Vec<f64>,
    pub values: Vec<f64>,
}

impl Samples3 {
    pub fn len(&self) -> usize {
        self.xs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.xs.is_empty()
    }

    /// Equal lengths, at least one sample, every coordinate and value finite (the error names
    /// the first sample that is not, counting from 0).
    pub fn validate(&self) -> Result<(), GeofieldError> {
        let n = self.xs.len();
        if self.ys.len() != n || self.zs.len() != n || self.values.len() != n {
            return Err(GeofieldError::Invalid(format!(
                "{} x, {} y, {} z and {} values: the lengths differ",
                n,
                self.ys.len(),
                self.zs.len(),
                self.values.len()
            )));
        }
        if n == 0 {
            return Err(GeofieldError::Invalid("no samples".into()));
        }
        for i in 0..n {
            let (x, y, z, v) = (self.xs[i], self.ys[i], self.zs[i], self.values[i]);
            if !(x.is_finite() && y.is_finite() && z.is_finite() && v.is_finite()) {
                return Err(GeofieldError::Invalid(format!(
                    "sample {i} has a non-finite coordinate or value ({x}, {y}, {z}: {v})"
                )));
            }
        }
        Ok(())
    }
}

/// The node coordinates along each axis of a 3-D grid (each strictly monotone, finite); the
/// nodes are every (x[i], y[j], z[k]).
#[derive(Clone, Debug, PartialEq)]
pub struct Axes3 {
    pub x: Vec<f64>,
    pub y: Vec<f64>,
    pub z: Vec<f64>,
}

impl Axes3 {
    /// Cell centres of `n` cells of `step` from `lo` along an axis.
    pub fn centres(lo: f64, step: f64, n: usize) -> Vec<f64> {
        (0..n).map(|i| lo + (i as f64 + 0.5) * step).collect()
    }

    /// Nodes: nx · ny · nz (`None` on overflow).
    pub fn nodes(&self) -> Option<usize> {
        self.x
            .len()
            .checked_mul(self.y.len())
            .and_then(|n| n.checked_mul(self.z.len()))
    }

    /// (start, step) of an axis whose nodes are equally spaced (to 1e-9 relative), else `None`.
    pub fn uniform(axis: &[f64]) -> Option<(f64, f64)> {
        let n = axis.len();
        if n == 1 {
            return Some((axis[0], 1.0));
        }
        let step = (axis[n - 1] - axis[0]) / (n - 1) as f64;
        let ok = step != 0.0
            && axis
                .windows(2)
                .all(|w| ((w[1] - w[0]) - step).abs() <= 1e-9 * step.abs());
        ok.then_some((axis[0], step))
    }

    pub fn validate(&self) -> Result<(), GeofieldError> {
        for (name, a) in [("x", &self.x), ("y", &self.y), ("z", &self.z)] {
            if a.is_empty() {
                return Err(GeofieldError::Invalid(format!(
                    "the grid's {name} axis is empty"
                )));
            }
            if let Some(v) = a.iter().find(|v| !v.is_finite()) {
                return Err(GeofieldError::Invalid(format!(
                    "the grid's {name} axis has a non-finite coordinate ({v})"
                )));
            }
            let up = a.windows(2).all(|w| w[1] > w[0]);
            let down = a.windows(2).all(|w| w[1] < w[0]);
            if !(up || down) {
                return Err(GeofieldError::Invalid(format!(
                    "the grid's {name} axis is not strictly increasing or decreasing"
                )));
            }
        }
        if self.nodes().is_none() {
            return Err(GeofieldError::Invalid("the grid has too many nodes".into()));
        }
        Ok(())
    }
}

/// Where to krige.
#[derive(Clone, Debug, PartialEq)]
pub enum Target3 {
    Grid(Axes3),
    Points {
        xs: Vec<f64>,
        ys: Vec<f64>,
        zs: Vec<f64>,
    },
}

impl Target3 {
    /// Number of nodes.
    pub fn len(&self) -> usize {
        match self {
            Target3::Grid(a) => a.nodes().unwrap_or(usize::MAX),
            Target3::Points { xs, .. } => xs.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Node `t` (world coordinates).
    #[inline]
    pub fn node(&self, t: usize) -> [f64; 3] {
        match self {
            Target3::Grid(a) => {
                let (nx, ny) = (a.x.len(), a.y.len());
                [a.x[t % nx], a.y[(t / nx) % ny], a.z[t / (nx * ny)]]
            }
            Target3::Points { xs, ys, zs } => [xs[t], ys[t], zs[t]],
        }
    }

    fn validate(&self) -> Result<(), GeofieldError> {
        match self {
            Target3::Grid(a) => a.validate(),
            Target3::Points { xs, ys, zs } => {
                if ys.len() != xs.len() || zs.len() != xs.len() {
                    return Err(GeofieldError::Invalid(format!(
                        "{} x, {} y and {} z point coordinates: the lengths differ",
                        xs.len(),
                        ys.len(),
                        zs.len()
                    )));
                }
                for i in 0..xs.len() {
                    if !(xs[i].is_finite() && ys[i].is_finite() && zs[i].is_finite()) {
                        return Err(GeofieldError::Invalid(format!(
                            "point {i} has a non-finite coordinate ({}, {}, {})",
                            xs[i], ys[i], zs[i]
                        )));
                    }
                }
                Ok(())
            }
        }
    }
}

/// The parameters of [`krige3d`].
#[derive(Clone, Debug, PartialEq)]
pub struct Krige3Params {
    pub variogram: Variogram,
    /// Simple, ordinary or universal with [`Drift::Linear`] (1, x, y, z).
    pub kind: Kind,
    pub anisotropy: Anisotropy3,
    /// Local kriging from the k nearest samples (1..=64); `None`: global.
    pub neighbors: Option<usize>,
    /// With `neighbors`: only samples within this anisotropy-corrected distance; a node with
    /// fewer than the kind needs gets NaN (counted in [`Kriged3::missing`]).
    pub radius: Option<f64>,
    pub nugget: NuggetMode,
    pub variance: bool,
    pub target: Target3,
}

impl Krige3Params {
    pub fn new(variogram: Variogram, target: Target3) -> Self {
        Krige3Params {
            variogram,
            kind: Kind::Ordinary,
            anisotropy: Anisotropy3::isotropic(),
            neighbors: None,
            radius: None,
            nugget: NuggetMode::Exact,
            variance: true,
            target,
        }
    }

    /// Drift terms of the system: 0 (simple), 1 (ordinary), 4 (linear: 1, x, y, z).
    pub(crate) fn drift_terms(&self) -> usize {
        match self.kind {
            Kind::Simple { .. } => 0,
            Kind::Ordinary => 1,
            _ => 4,
        }
    }

    pub fn validate(&self) -> Result<(), GeofieldError> {
        self.variogram.validate()?;
        self.anisotropy.validate()?;
        self.target.validate()?;
        match self.kind {
            Kind::Simple { mean } if !mean.is_finite() => {
                return Err(GeofieldError::InvalidParameter {
                    name: "mean".into(),
                    value: mean.to_string(),
                    expected: "a finite mean".into(),
                });
            }
            Kind::Universal { drift } if drift != Drift::Linear => {
                return Err(GeofieldError::Unsupported(format!(
                    "3-D universal kriging with a {drift:?} drift: the drift in 3-D is linear \
                     (1, x, y, z)"
                )));
            }
            _ => {}
        }
        if !self.variogram.is_bounded() && matches!(self.kind, Kind::Simple { .. }) {
            return Err(GeofieldError::Invalid(
                "simple kriging needs a variogram with a sill; power and linear have none".into(),
            ));
        }
        if let Some(k) = self.neighbors
            && !(1..=crate::neighbors::K_MAX).contains(&k)
        {
            return Err(GeofieldError::InvalidParameter {
                name: "neighbors".into(),
                value: k.to_string(),
                expected: format!("1..={}", crate::neighbors::K_MAX),
            });
        }
        if let Some(r) = self.radius
            && !(r.is_finite() && r > 0.0)
        {
            return Err(GeofieldError::InvalidParameter {
                name: "radius".into(),
                value: r.to_string(),
                expected: "a finite distance > 0".into(),
            });
        }
        Ok(())
    }
}

/// The result of [`krige3d`], in the target's node order.
#[derive(Clone, Debug, PartialEq)]
pub struct Kriged3 {
    pub values: Vec<f64>,
    pub variance: Option<Vec<f64>>,
    /// Distinct sample locations kriged from (after merging).
    pub locations: usize,
    /// Samples merged into another at the same coordinates.
    pub merged: usize,
    /// Nodes left NaN (local kriging with a radius and too few samples within it).
    pub missing: usize,
    /// What evaluated it ("CPU, global (n samples)", ...).
    pub evaluated: String,
    pub seconds: f64,
}

/// 3-D kriging of `samples` at `params.target` (see the module docs). Global kriging is refused
/// up front when its matrices would not fit in memory; the result is checked finite (but for the
/// nodes reported missing).
pub fn krige3d(
    backend: &Backend,
    samples: &Samples3,
    params: &Krige3Params,
) -> Result<Kriged3, GeofieldError> {
    let t0 = Instant::now();
    samples.validate()?;
    params.validate()?;
    let nodes = params.target.len();
    let per_node = if params.variance { 16 } else { 8 };
    geofield_core::check_memory(
        || format!("{nodes} nodes of 3-D kriging output"),
        nodes as u128 * per_node,
    )?;
    let merged = solve::merge(samples);
    let mut k = match params.neighbors {
        None => solve::global(backend, &merged, params)?,
        Some(k) => solve::local(backend, &merged, params, k)?,
    };
    k.merged = samples.len() - merged.values.len();
    k.locations = merged.values.len();
    for (t, v) in k.values.iter().enumerate() {
        let var_bad = k.variance.as_ref().is_some_and(|s| !s[t].is_finite());
        if (!v.is_finite() || var_bad) && !(v.is_nan() && params.radius.is_some()) {
            return Err(GeofieldError::NonFinite {
                what: format!("3-D kriging at node {t}"),
                cause: "the variogram and samples give a singular or overflowing system".into(),
            });
        }
    }
    k.missing = k.values.iter().filter(|v| v.is_nan()).count();
    k.seconds = t0.elapsed().as_secs_f64();
    Ok(k)
}

/// 3-D universal kriging of `samples` with the given drift variables `drift` (values at the
/// samples in their order and at `params.target`'s nodes, see [`super::given`]): `params.kind`
/// ordinary (a constant plus the given variables) or universal (plus 1, x, y, z); global only,
/// evaluated on the GPU on a CUDA backend ([`super::given::krige_on`]). Samples at the same
/// place are refused.
pub fn krige3d_given(
    backend: &Backend,
    samples: &Samples3,
    params: &Krige3Params,
    drift: &super::given::GivenDrift,
) -> Result<Kriged3, GeofieldError> {
    use super::given::{Basis, System, krige_on, poly_of};
    let t0 = Instant::now();
    samples.validate()?;
    params.validate()?;
    let poly = poly_of(params.kind)?;
    if params.neighbors.is_some() {
        return Err(GeofieldError::Unsupported(
            "a given drift with local kriging (neighbors): it is global only".into(),
        ));
    }
    let nn = params.target.len();
    geofield_core::check_memory(
        || format!("{nn} nodes of 3-D kriging output"),
        nn as u128 * 16,
    )?;
    drift.check_counts(samples.len(), nn)?;
    let n = samples.len() as f64;
    let c = [&samples.xs, &samples.ys, &samples.zs].map(|v| v.iter().sum::<f64>() / n);
    let map = |p: [f64; 3]| {
        params
            .anisotropy
            .apply([p[0] - c[0], p[1] - c[1], p[2] - c[2]])
    };
    let pts: Vec<[f64; 3]> = (0..samples.len())
        .map(|i| map([samples.xs[i], samples.ys[i], samples.zs[i]]))
        .collect();
    let nodes: Vec<[f64; 3]> = (0..nn).map(|t| map(params.target.node(t))).collect();
    let basis = Basis::new(poly, 3, &pts, drift);
    let d = |a: &[f64; 3], b: &[f64; 3]| {
        ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2) + (a[2] - b[2]).powi(2)).sqrt()
    };
    let diag = pts
        .iter()
        .flat_map(|a| pts.iter().map(move |b| d(a, b)))
        .fold(0.0f64, f64::max);
    let v = &params.variogram;
    let cov =
        super::space::Covariance::new(v, super::space::eps_for(diag), params.nugget, v.gamma(diag));
    let sys = System {
        cov: &cov,
        pts: &pts,
        basis: &basis,
        given: drift,
        describe: &|i| format!("sample {i}"),
    };
    let ((mut p, var), evaluated) = krige_on(
        backend,
        &sys,
        &[&samples.values],
        &nodes,
        params.variance,
        3,
    )?;
    Ok(Kriged3 {
        values: p.pop().unwrap_or_default(),
        variance: var,
        locations: samples.len(),
        merged: 0,
        missing: 0,
        evaluated,
        seconds: t0.elapsed().as_secs_f64(),
    })
}
