//! External drift (kriging with external drift, KED; gstat `z ~ dem`, PyKrige
//! `drift_terms = ["external_Z"]`): the mean is a + b·e(x) (with [`Drift::External`]) or
//! a + b·x + c·y + d·e(x) ([`Drift::LinearExternal`]), e a secondary variable known everywhere,
//! here a raster (a DEM).
//!
//! e at a point is the raster interpolated bilinearly between the four nearest cell centres;
//! within half a cell of the raster's edge it is extrapolated flat along the edge (the nearest
//! centres' values). PyKrige samples its external drift grid at the data and prediction points
//! the same way (bilinear between its grid nodes, the nodes being our cell centres). A point
//! outside the raster, or whose four cells include a missing value, has no drift: kriging there
//! is refused up front, naming the point.
//!
//! [`Drift::External`]: super::Drift::External
//! [`Drift::LinearExternal`]: super::Drift::LinearExternal

use geofield_core::GridSpec;

use super::params::Kind;
use super::samples::SampleSet;
use crate::GeofieldError;

/// A secondary variable on a raster, for the drift.
#[derive(Clone, Debug, PartialEq)]
pub struct ExternalDrift {
    pub grid: GridSpec,
    /// One value per cell, row 0 north; NaN where missing.
    pub values: Vec<f64>,
    /// What it is (the file or the variable), for messages.
    pub name: String,
}

impl ExternalDrift {
    /// Checks the values' count against the grid.
    pub fn new(grid: GridSpec, values: Vec<f64>, name: &str) -> Result<Self, GeofieldError> {
        if values.len() != grid.n_cells() {
            return Err(GeofieldError::Invalid(format!(
                "external drift {name}: {} values for a {} x {} grid",
                values.len(),
                grid.cols,
                grid.rows
            )));
        }
        if grid.n_cells() == 0 {
            return Err(GeofieldError::Invalid(format!(
                "external drift {name}: the raster is empty"
            )));
        }
        Ok(ExternalDrift {
            grid,
            values,
            name: name.to_string(),
        })
    }

    /// e at world (x, y): bilinear between cell centres (see the module docs); `None` outside
    /// the raster or next to a missing value.
    pub fn at(&self, x: f64, y: f64) -> Option<f64> {
        let g = &self.grid;
        let cs = g.cell_size_m;
        let x_max = g.x_min_m + cs * g.cols as f64;
        let y_min = g.y_max_m - cs * g.rows as f64;
        if !(x >= g.x_min_m && x <= x_max && y >= y_min && y <= g.y_max_m) {
            return None;
        }
        // Continuous column / row indices of cell centres.
        let axis = |t: f64, n: usize| -> (usize, usize, f64) {
            let t = t.clamp(0.0, (n - 1) as f64);
            let i0 = (t.floor() as usize).min(n.saturating_sub(2));
            let i1 = (i0 + 1).min(n - 1);
            (i0, i1, t - i0 as f64)
        };
        let (c0, c1, tx) = axis((x - g.x_min_m) / cs - 0.5, g.cols);
        let (r0, r1, ty) = axis((g.y_max_m - y) / cs - 0.5, g.rows);
        let v = |r: usize, c: usize| self.values[r * g.cols + c];
        let (a, b, c, d) = (v(r0, c0), v(r0, c1), v(r1, c0), v(r1, c1));
        let e = (1.0 - ty) * ((1.0 - tx) * a + tx * b) + ty * ((1.0 - tx) * c + tx * d);
        e.is_finite().then_some(e)
    }

    /// e at every point, or an error naming the first point without one (`what` says which
    /// points: "sample", "node").
    pub fn check_points(
        &self,
        xs: &[f64],
        ys: &[f64],
        what: &dyn Fn(usize) -> String,
    ) -> Result<(), GeofieldError> {
        for (i, (&x, &y)) in xs.iter().zip(ys).enumerate() {
            if self.at(x, y).is_none() {
                return Err(GeofieldError::Invalid(format!(
                    "{} at ({x}, {y}) has no external drift value: it lies outside the drift \
                     raster {} (x {} to {}, y {} to {}) or next to a missing value",
                    what(i),
                    self.name,
                    self.grid.x_min_m,
                    self.grid.x_min_m + self.grid.cell_size_m * self.grid.cols as f64,
                    self.grid.y_max_m - self.grid.cell_size_m * self.grid.rows as f64,
                    self.grid.y_max_m
                )));
            }
        }
        Ok(())
    }
}

/// The residuals of every surface of `set` from its ordinary-least-squares fit on the drift of
/// `kind` (the polynomial terms in centred, scaled coordinates, and e from `external` for an
/// external drift), over the samples where the surface is present (NaN elsewhere): the values
/// whose variogram gstat bins for `variogram(z ~ x + y)` or `variogram(z ~ dem)`. Ordinary and
/// simple kriging: the values less their mean.
pub fn drift_residuals(
    set: &SampleSet,
    kind: Kind,
    external: Option<&ExternalDrift>,
) -> Result<SampleSet, GeofieldError> {
    let (poly, ext) = match kind {
        Kind::Universal { drift } => (drift.polynomial_terms(), drift.is_external()),
        _ => (1, false),
    };
    let e = match (ext, external) {
        (true, Some(e)) => Some(e),
        (true, None) => {
            return Err(GeofieldError::Invalid(
                "an external drift needs the drift variable (a raster)".into(),
            ));
        }
        (false, _) => None,
    };
    if let Some(e) = e {
        e.check_points(&set.xs, &set.ys, &|i| set.describe(i))?;
    }
    let n = set.len().max(1) as f64;
    let (cx, cy) = (
        set.xs.iter().sum::<f64>() / n,
        set.ys.iter().sum::<f64>() / n,
    );
    let scale = set
        .xs
        .iter()
        .zip(&set.ys)
        .fold(0.0f64, |m, (&x, &y)| {
            m.max((x - cx).abs()).max((y - cy).abs())
        })
        .max(f64::MIN_POSITIVE);
    let p = poly + usize::from(ext);
    let basis = |i: usize| -> [f64; 7] {
        let mut f = [0.0; 7];
        super::space::drift_basis(
            (set.xs[i] - cx) / scale,
            (set.ys[i] - cy) / scale,
            poly,
            &mut f,
        );
        if let Some(e) = e {
            f[poly] = e.at(set.xs[i], set.ys[i]).unwrap_or(f64::NAN);
        }
        f
    };
    let mut out = set.clone();
    for (h, s) in set.surfaces.iter().enumerate() {
        let rows: Vec<usize> = (0..set.len()).filter(|&i| !s.values[i].is_nan()).collect();
        // Normal equations (FᵀF) c = Fᵀz.
        let mut g = vec![0.0; p * (p + 1)];
        for &i in &rows {
            let f = basis(i);
            for a in 0..p {
                for b in 0..p {
                    g[a * (p + 1) + b] += f[a] * f[b];
                }
                g[a * (p + 1) + p] += f[a] * s.values[i];
            }
        }
        let c = super::nested::solve_augmented(&mut g, p).ok_or_else(|| {
            GeofieldError::Invalid(format!(
                "{}: the drift ({} terms) cannot be fitted to its {} samples (too few, or the \
                 drift's terms are dependent over them)",
                s.name,
                p,
                rows.len()
            ))
        })?;
        for &i in &rows {
            let f = basis(i);
            out.surfaces[h].values[i] = s.values[i] - (0..p).map(|a| c[a] * f[a]).sum::<f64>();
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use geofield_core::Extent;

    fn plane() -> Result<ExternalDrift, GeofieldError> {
        // 4 x 3 cells of 10 m from (0, 0); value 2x + 3y + 1 at each cell centre.
        let grid = GridSpec::from_extent(Extent::new(0.0, 0.0, 40.0, 30.0)?, 10.0)?;
        let mut v = vec![];
        for r in 0..3 {
            for c in 0..4 {
                let (x, y) = (5.0 + 10.0 * c as f64, 25.0 - 10.0 * r as f64);
                v.push(2.0 * x + 3.0 * y + 1.0);
            }
        }
        ExternalDrift::new(grid, v, "plane")
    }

    // Bilinear interpolation reproduces a plane exactly between the centres; it is flat beyond
    // the outer centres; outside the raster there is no value.
    #[test]
    fn bilinear_between_centres_flat_at_the_edges() -> Result<(), GeofieldError> {
        let d = plane()?;
        for (x, y) in [(5.0, 5.0), (12.3, 17.9), (35.0, 25.0), (20.0, 15.0)] {
            let e = d.at(x, y).ok_or(GeofieldError::Invalid("none".into()))?;
            assert!((e - (2.0 * x + 3.0 * y + 1.0)).abs() < 1e-12, "({x}, {y})");
        }
        // In the outer half-cell: the edge centre's value along that axis.
        let e = d
            .at(1.0, 15.0)
            .ok_or(GeofieldError::Invalid("none".into()))?;
        assert!((e - (2.0 * 5.0 + 3.0 * 15.0 + 1.0)).abs() < 1e-12);
        assert!(d.at(-0.1, 15.0).is_none() && d.at(20.0, 30.1).is_none());
        assert!(
            d.check_points(&[5.0, 50.0], &[5.0, 5.0], &|i| format!("sample {i}"))
                .is_err()
        );
        Ok(())
    }

    // Values that are exactly the drift leave residuals of zero (to rounding); noisy values
    // leave residuals orthogonal to every drift column (the normal equations).
    #[test]
    fn residuals_are_orthogonal_to_the_drift() -> Result<(), GeofieldError> {
        use crate::kriging::Drift;
        let d = plane()?;
        let (mut xs, mut ys) = (vec![], vec![]);
        for k in 0..20u32 {
            xs.push(2.0 + f64::from((k * 7) % 36));
            ys.push(3.0 + f64::from((k * 11) % 25));
        }
        let exact: Vec<f64> = xs
            .iter()
            .zip(&ys)
            .map(|(&x, &y)| 4.0 - 0.5 * d.at(x, y).unwrap_or(f64::NAN))
            .collect();
        let noisy: Vec<f64> = exact
            .iter()
            .enumerate()
            .map(|(k, v)| v + (k as f64 * 1.7).sin())
            .collect();
        let set = SampleSet::new(xs.clone(), ys.clone(), vec![exact, noisy]);
        let kind = Kind::Universal {
            drift: Drift::External,
        };
        let r = drift_residuals(&set, kind, Some(&d))?;
        // |values| ~ 100: rounding of the normal equations leaves ~1e-12.
        assert!(r.surfaces[0].values.iter().all(|v| v.abs() < 1e-9));
        let res = &r.surfaces[1].values;
        let dot_one: f64 = res.iter().sum();
        let dot_e: f64 = res
            .iter()
            .zip(xs.iter().zip(&ys))
            .map(|(r, (&x, &y))| r * d.at(x, y).unwrap_or(f64::NAN))
            .sum();
        assert!(
            dot_one.abs() < 1e-9 && dot_e.abs() < 1e-7,
            "{dot_one} {dot_e}"
        );
        assert!(drift_residuals(&set, kind, None).is_err());
        Ok(())
    }

    #[test]
    fn missing_values_leave_no_drift() -> Result<(), GeofieldError> {
        let mut d = plane()?;
        d.values[5] = f64::NAN; // row 1, col 1: centre (15, 15)
        assert!(d.at(12.0, 12.0).is_none());
        assert!(d.at(35.0, 5.0).is_some());
        assert!(ExternalDrift::new(d.grid, vec![1.0; 3], "short").is_err());
        Ok(())
    }
}
