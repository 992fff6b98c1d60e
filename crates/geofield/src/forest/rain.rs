//! Non-spatial seed rain: SORTIE-ND's `NonSpatialDisperse`.
//!
//! Seeds arriving from outside the stand, spread evenly over the plot. Per species and year the
//! density is
//!
//! ```text
//! λ = intercept + slope × BA      (seeds per m²; BA: the plot's basal area of the species'
//!                                  reproductive trees, m² per hectare)
//! ```
//!
//! (`di_nonSpatialInterceptOfLambda`, `di_nonSpatialSlopeOfLambda`), and each cell's expected
//! count is λ times its area, which [`super::seed_counts`] turns into a count. With the
//! deterministic method and λ × area a whole number, every cell gets exactly that.

use geofield_core::GridSpec;

use crate::dispersal::{Species, Stand};

/// Basal area (m² per hectare of the grid's extent) of the reproductive trees of species
/// `index` standing on the grid: Σ π (DBH/200)² over trees with DBH ≥ the species' minimum.
pub fn basal_area_m2_per_ha(grid: &GridSpec, sp: &Species, index: u32, stand: &Stand) -> f64 {
    basal_area_of(
        grid,
        sp.min_dbh_cm,
        index,
        (&stand.x_m, &stand.y_m, &stand.dbh_cm, &stand.species),
    )
}

/// [`basal_area_m2_per_ha`] of trees given as columns (x, y, DBH, species index).
pub fn basal_area_of(
    grid: &GridSpec,
    min_dbh_cm: f64,
    index: u32,
    (x, y, dbh, species): (&[f64], &[f64], &[f64], &[u32]),
) -> f64 {
    let (x0, y1) = (grid.x_min_m, grid.y_max_m);
    let (x1, y0) = (x0 + grid.width_m(), y1 - grid.height_m());
    let m2: f64 = (0..x.len())
        .filter(|&i| {
            species[i] == index
                && dbh[i] >= min_dbh_cm
                && (x0..x1).contains(&x[i])
                && (y0..y1).contains(&y[i])
        })
        .map(|i| std::f64::consts::PI * (dbh[i] / 200.0).powi(2))
        .sum();
    let ha = grid.width_m() * grid.height_m() / 1e4;
    if ha > 0.0 { m2 / ha } else { 0.0 }
}

/// The rain's parameters of a species.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Rain {
    /// Seeds per m² per year with no basal area.
    pub intercept: f64,
    /// Seeds per m² per year per m²/ha of basal area.
    pub slope: f64,
}

impl Rain {
    /// Seeds per m² this year for a basal area of `ba` m²/ha (at least 0).
    pub fn density(&self, ba: f64) -> f64 {
        (self.intercept + self.slope * ba).max(0.0)
    }

    /// The expected seeds of every cell (row-major), all equal.
    pub fn expected(&self, grid: &GridSpec, ba: f64) -> Vec<f64> {
        let per_cell = self.density(ba) * grid.cell_size_m * grid.cell_size_m;
        vec![per_cell; grid.n_cells()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dispersal::{Eta, Kernel};
    use crate::forest::seed_counts::{SeedDistribution, counts};

    #[test]
    fn rain_is_intercept_plus_slope_times_basal_area_exactly() {
        // A 100 m x 50 m plot (0.5 ha) at 2 m cells; four reproductive trees of DBH 40 cm
        // (π 0.04 m² each: 0.16π m² = 0.32π m²/ha), one too small, one of another species,
        // one off the plot.
        let g = GridSpec::from_extent(
            geofield_core::Extent::new(0.0, 0.0, 100.0, 50.0).unwrap(),
            2.0,
        )
        .unwrap();
        let sp = Species::new(
            "fir".into(),
            Kernel::Weibull {
                d: 1e-4,
                theta: 3.0,
            },
            100.0,
            2.0,
            Eta::Analytic,
            15.0,
            None,
        )
        .unwrap();
        let stand = Stand::new(
            vec![10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 150.0],
            vec![10.0, 20.0, 30.0, 40.0, 45.0, 5.0, 10.0],
            vec![40.0, 40.0, 40.0, 40.0, 10.0, 40.0, 40.0],
            vec![0, 0, 0, 0, 0, 1, 0],
        )
        .unwrap();
        let ba = basal_area_m2_per_ha(&g, &sp, 0, &stand);
        assert!((ba - 0.32 * std::f64::consts::PI).abs() < 1e-12, "{ba}");
        // λ = 0.25 + (1/(0.32π)) × BA = 1.25 seeds per m²: 5 seeds per 4 m² cell, exactly.
        let rain = Rain {
            intercept: 0.25,
            slope: 1.0 / (0.32 * std::f64::consts::PI),
        };
        assert!((rain.density(ba) - 1.25).abs() < 1e-12);
        let c = counts(
            SeedDistribution::Deterministic,
            &rain.expected(&g, ba),
            1,
            0,
            0,
        );
        assert_eq!(c.len(), 50 * 25);
        assert!(c.iter().all(|&n| n == 5), "{:?}", &c[..10]);
        // A negative slope can't make the rain negative.
        let dry = Rain {
            intercept: 0.1,
            slope: -1.0,
        };
        assert_eq!(dry.density(ba), 0.0);
    }
}
