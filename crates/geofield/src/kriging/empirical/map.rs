//! Variogram maps (gstat `variogram(..., map = TRUE, cutoff, width)`, GSLIB `varmap`): γ̂ over a
//! grid of separation vectors instead of distance bins, to see anisotropy before fitting one.
//!
//! The grid has square cells of side `width` centred on the separations (kx·w, ky·w),
//! kx, ky = −n..=n with n = round(cutoff / width): (2n + 1)² cells, the centre cell at zero
//! separation. Every ordered pair (i, j), i ≠ j, with separation (xⱼ − xᵢ, yⱼ − yᵢ) falls in the
//! cell nearest to it (ties away from zero), so a pair counts in a cell and in its mirror image
//! and the map is symmetric through the centre: γ̂(−h) = γ̂(h), and `pairs` counts ordered pairs
//! (an unordered pair counts twice in the centre cell). γ̂ per cell is the variogram's estimator
//! ([`Estimator`]; NaN where a cell has no pair). Rows run north first (row 0 at ky = +n), as
//! a raster; columns west first.

use geofield_core::{Extent, GridSpec, Raster, RasterData};

use super::{Acc, Estimator, check_samples, pair_sums};
use crate::GeofieldError;

/// The most cells on each side of the centre: 2·500 + 1 = 1001 cells a side.
pub const MAX_MAP_LAGS: usize = 500;

/// A variogram map (see the module docs).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct VariogramMap {
    /// Cells on each side of the centre.
    pub lags: usize,
    /// Cell side, in the coordinates' units.
    pub width: f64,
    /// γ̂ per cell, (2·lags + 1)² values, row 0 north (dy = +lags·width), column 0 west.
    pub gamma: Vec<f64>,
    /// Ordered pairs per cell.
    pub pairs: Vec<u64>,
}

impl VariogramMap {
    /// Cells per side: 2·lags + 1.
    pub fn side(&self) -> usize {
        2 * self.lags + 1
    }

    /// The map as a two-band raster (`gamma`, `pairs`) whose "world" coordinates are the
    /// separations: cell (row, col) covers (dx, dy) ± width/2 (no CRS: it is not a place).
    pub fn to_raster(&self) -> Result<Raster, GeofieldError> {
        let half = (self.lags as f64 + 0.5) * self.width;
        let grid = GridSpec::from_extent(Extent::new(-half, -half, half, half)?, self.width)?;
        let mut data = self.gamma.clone();
        data.extend(self.pairs.iter().map(|&p| p as f64));
        Ok(Raster::new(
            grid,
            vec!["gamma".into(), "pairs".into()],
            RasterData::F64(data),
        )?)
    }

    /// The separation (dx, dy) at the centre of cell (row, col).
    pub fn separation(&self, row: usize, col: usize) -> (f64, f64) {
        let n = self.lags as f64;
        ((col as f64 - n) * self.width, (n - row as f64) * self.width)
    }
}

/// The variogram map of `values` at (`xs`, `ys`) out to `cutoff` in cells of `width`.
pub fn variogram_map(
    xs: &[f64],
    ys: &[f64],
    values: &[f64],
    cutoff: f64,
    width: f64,
    estimator: Estimator,
) -> Result<VariogramMap, GeofieldError> {
    check_samples(xs, ys, values)?;
    if !(width.is_finite() && width > 0.0) {
        return Err(GeofieldError::Invalid(format!(
            "map cell width {width} must be finite and > 0"
        )));
    }
    if !(cutoff.is_finite() && cutoff >= width) {
        return Err(GeofieldError::Invalid(format!(
            "map cutoff {cutoff} must be finite and at least the cell width {width}"
        )));
    }
    let ratio = (cutoff / width).round();
    if ratio > MAX_MAP_LAGS as f64 {
        return Err(GeofieldError::Invalid(format!(
            "map cutoff {cutoff} / width {width} = {ratio} cells a side: at most {MAX_MAP_LAGS} \
             (use a wider cell)"
        )));
    }
    let n = ratio as usize;
    let side = 2 * n + 1;
    let cells = side * side;
    let copies = rayon::current_num_threads() as u128 + 2;
    geofield_core::check_memory(
        || format!("the variogram map's {side} x {side} cells"),
        cells as u128 * copies * std::mem::size_of::<Acc>() as u128,
    )?;
    let nf = n as f64;
    let accs = pair_sums(xs, ys, values, cells, |dx, dy| {
        let (kx, ky) = ((dx / width).round(), (dy / width).round());
        if kx.abs() > nf || ky.abs() > nf {
            return None;
        }
        // Row north first: ky = +n is row 0.
        Some((nf - ky) as usize * side + (kx + nf) as usize)
    });
    // The mirror of cell c is cells − 1 − c: each unordered pair also separates (−dx, −dy).
    let (gamma, pairs) = (0..cells)
        .map(|c| {
            let mut a = accs[c];
            a.add(&accs[cells - 1 - c]);
            (a.gamma(estimator), a.n)
        })
        .unzip();
    Ok(VariogramMap {
        lags: n,
        width,
        gamma,
        pairs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn points() -> (Vec<f64>, Vec<f64>) {
        let mut xs = vec![];
        let mut ys = vec![];
        for k in 0..60u32 {
            let t = f64::from(k);
            xs.push((t * 37.77).rem_euclid(100.0));
            ys.push((t * 61.31 + 7.0).rem_euclid(100.0));
        }
        (xs, ys)
    }

    // Brute force over ordered pairs in f64 with its own cell rule: the same pairs per cell and
    // γ̂ to rounding (sums of < 3600 terms of O(1): 1e-12 relative).
    #[test]
    fn map_equals_brute_force_over_ordered_pairs() -> Result<(), GeofieldError> {
        let (xs, ys) = points();
        let vs: Vec<f64> = xs
            .iter()
            .zip(&ys)
            .map(|(x, y)| (x / 17.0).sin() + 0.01 * y)
            .collect();
        let m = variogram_map(&xs, &ys, &vs, 40.0, 10.0, Estimator::Matheron)?;
        assert_eq!((m.lags, m.side()), (4, 9));
        let mut sum = vec![0.0; 81];
        let mut cnt = vec![0u64; 81];
        for i in 0..xs.len() {
            for j in 0..xs.len() {
                if i == j {
                    continue;
                }
                let (dx, dy) = (xs[j] - xs[i], ys[j] - ys[i]);
                let (kx, ky) = ((dx / 10.0).round() as i64, (dy / 10.0).round() as i64);
                if kx.abs() <= 4 && ky.abs() <= 4 {
                    let c = ((4 - ky) * 9 + kx + 4) as usize;
                    sum[c] += 0.5 * (vs[i] - vs[j]).powi(2);
                    cnt[c] += 1;
                }
            }
        }
        for c in 0..81 {
            assert_eq!(m.pairs[c], cnt[c], "cell {c}");
            if cnt[c] == 0 {
                assert!(m.gamma[c].is_nan());
            } else {
                let want = sum[c] / cnt[c] as f64;
                assert!(
                    (m.gamma[c] - want).abs() <= 1e-12 * want.max(1e-300),
                    "cell {c}"
                );
            }
        }
        // Symmetric through the centre.
        for c in 0..81 {
            assert_eq!(m.pairs[c], m.pairs[80 - c]);
        }
        Ok(())
    }

    // A field that varies only east-west, on a lattice: pairs along the north-south axis have
    // equal values (γ̂ = 0 exactly) and pairs along the east-west axis do not (γ̂ > 0): the map
    // shows the anisotropy; and the raster covers the separations, cell centres on k·w.
    #[test]
    fn map_sees_a_field_constant_along_y() -> Result<(), GeofieldError> {
        let (mut xs, mut ys, mut vs) = (vec![], vec![], vec![]);
        for i in 0..10 {
            for j in 0..10 {
                xs.push(10.0 * f64::from(i));
                ys.push(10.0 * f64::from(j));
                vs.push(f64::from(i).powi(2));
            }
        }
        let m = variogram_map(&xs, &ys, &vs, 30.0, 10.0, Estimator::Matheron)?;
        let (r0, c0) = (m.lags, m.lags);
        for k in 1..=m.lags {
            assert_eq!(m.gamma[(r0 - k) * m.side() + c0], 0.0, "north {k}");
            assert!(m.gamma[r0 * m.side() + c0 + k] > 0.0, "east {k}");
            assert_eq!(m.separation(r0 - k, c0), (0.0, 10.0 * k as f64));
        }
        let r = m.to_raster()?;
        assert_eq!((r.grid.rows, r.grid.cols, r.n_bands()), (7, 7, 2));
        assert!((r.grid.x_min_m + 35.0).abs() < 1e-12 && (r.grid.y_max_m - 35.0).abs() < 1e-12);
        assert_eq!(
            r.band_f64(1)[r0 * 7 + c0 + 1],
            m.pairs[r0 * 7 + c0 + 1] as f64
        );
        Ok(())
    }

    #[test]
    fn bad_map_requests_are_refused() {
        let (xs, ys) = points();
        let vs = vec![1.0; xs.len()];
        let m = Estimator::Matheron;
        assert!(variogram_map(&xs, &ys, &vs, 10.0, 0.0, m).is_err());
        assert!(variogram_map(&xs, &ys, &vs, 5.0, 10.0, m).is_err());
        assert!(variogram_map(&xs, &ys, &vs, 1e6, 1.0, m).is_err());
        assert!(variogram_map(&xs, &ys, &vs, f64::NAN, 1.0, m).is_err());
        assert!(variogram_map(&xs[..1], &ys[..1], &vs[..1], 10.0, 1.0, m).is_err());
    }
}
