//! The staggered (MAC, Arakawa-C) grid over stair-step terrain.
//!
//! Index conventions (also those of the `.npz` output):
//! - cells `(k, row, col)`, `k = 0` at the bottom, row 0 at the north edge, col 0 at the west
//!   edge; flat index `(k * rows + row) * cols + col`;
//! - x faces `u[k][row][i]`, `i = 0..=cols`, face `i` is the west edge of column `i` (positive
//!   east); flat `(k * rows + row) * (cols + 1) + i`;
//! - y faces `v[k][r][col]`, `r = 0..=rows`, face `r` is the **north** edge of row `r` (positive
//!   north); flat `(k * (rows + 1) + r) * cols + col`;
//! - z faces `w[k][row][col]`, `k = 0..=nz`, face `k` is the bottom of layer `k` (positive up);
//!   flat `(k * rows + row) * cols + col`.
//!
//! Heights are elevations in metres (the DEM's datum); `z_faces_m[0]` is the domain bottom,
//! at the lowest ground elevation, so every column has at least one fluid cell above it.
//! With stair-step terrain (the default of [`WindGrid::new`]) a cell is solid when its centre
//! lies below the ground of its column. With cut cells ([`WindGrid::with_cut_cells`], see
//! [`super::cut`]) the ground is a continuous surface through the DEM, the cells and faces it
//! crosses are partly open, and a cell is solid when less than [`super::cut::THETA_SOLID`] of
//! it is above the ground.

use std::sync::Arc;

use geofield_core::GridSpec;

use super::cut::{self, CutCells, THETA_DIV_FLOOR};
use crate::GeofieldError;

/// Vertical levels: uniform layers or explicit face heights above the domain bottom.
#[derive(Debug, Clone, PartialEq)]
pub enum Levels {
    /// `nz` layers of `dz_m` each.
    Uniform { nz: usize, dz_m: f64 },
    /// Heights of the layer tops above the domain bottom, strictly increasing (m); the bottom
    /// face (0) is implied. `[10, 20, 35]` is three layers of 10, 10 and 15 m.
    Tops(Vec<f64>),
}

impl Levels {
    /// Number of layers.
    pub fn layers(&self) -> usize {
        match self {
            Levels::Uniform { nz, .. } => *nz,
            Levels::Tops(tops) => tops.len(),
        }
    }

    /// Face heights above the domain bottom: `nz + 1` values starting at 0.
    pub fn faces_above_bottom_m(&self) -> Result<Vec<f64>, GeofieldError> {
        match self {
            Levels::Uniform { nz, dz_m } => {
                if *nz == 0 {
                    return Err(invalid("nz", "0", "at least 1 layer"));
                }
                if !(dz_m.is_finite() && *dz_m > 0.0) {
                    return Err(invalid(
                        "dz_m",
                        &crate::error::shown(*dz_m),
                        "a positive layer thickness in metres",
                    ));
                }
                let top = *nz as f64 * dz_m;
                if !top.is_finite() {
                    return Err(invalid(
                        "dz_m",
                        &crate::error::shown(*dz_m),
                        &format!("a thickness whose {nz} layers reach a finite height"),
                    ));
                }
                Ok((0..=*nz).map(|k| k as f64 * dz_m).collect())
            }
            Levels::Tops(tops) => {
                if tops.is_empty() {
                    return Err(invalid("levels_m", "[]", "at least one layer top"));
                }
                let mut faces = vec![0.0];
                for (i, &t) in tops.iter().enumerate() {
                    let below = faces[faces.len() - 1];
                    if !(t.is_finite() && t > below) {
                        return Err(invalid(
                            "levels_m",
                            &format!("{t} (layer top {})", i + 1),
                            &format!(
                                "strictly increasing finite heights above the domain bottom \
                                 (the one below is {below} m)"
                            ),
                        ));
                    }
                    faces.push(t);
                }
                Ok(faces)
            }
        }
    }
}

/// Most layers [`Levels::stretched`] builds.
pub const MAX_STRETCHED_LAYERS: usize = 4096;

/// The model top's default height above the highest ground, in multiples of the relief
/// (highest minus lowest ground), for [`Levels::stretched`] without a top: 3, so that the top
/// sits 4 reliefs above the lowest ground (WindNinja's default top is likewise several times
/// the relief), and at least [`MIN_DEFAULT_TOP_M`] above the highest ground.
pub const DEFAULT_TOP_RELIEFS: f64 = 3.0;
/// The smallest default model top above the highest ground (m), for flat or nearly flat DEMs.
pub const MIN_DEFAULT_TOP_M: f64 = 200.0;

impl Levels {
    /// Stretched layers: the first `dz_m` thick, each `growth` times the one below, up to the
    /// first face at or above the model top, `top_m` above the highest ground of `terrain_m`
    /// (default: [`DEFAULT_TOP_RELIEFS`] × the relief, at least [`MIN_DEFAULT_TOP_M`]). Heights
    /// count from the lowest ground (the domain bottom), so the top face is relief + `top_m`
    /// or just above (the last layer is not trimmed, to keep the growth). `growth` 1 gives
    /// uniform layers; WindNinja grows its layers by 1.3. Refused: a non-positive or
    /// non-finite `dz_m` or `top_m`, a `growth` outside [1, 2], a terrain with no finite value,
    /// and more than [`MAX_STRETCHED_LAYERS`] layers; the error names the parameter.
    ///
    /// ```
    /// use geofield::wind::Levels;
    /// // 40 m of relief, the top 100 m above the highest ground: faces 0, 2, 4.4, 7.28, …
    /// let l = Levels::stretched(2.0, 1.2, Some(100.0), &[500.0, 540.0]).unwrap();
    /// let f = l.faces_above_bottom_m().unwrap();
    /// assert!((f[2] - 4.4).abs() < 1e-12 && f[f.len() - 2] < 140.0 && f[f.len() - 1] >= 140.0);
    /// ```
    pub fn stretched(
        dz_m: f64,
        growth: f64,
        top_m: Option<f64>,
        terrain_m: &[f64],
    ) -> Result<Levels, GeofieldError> {
        if !(dz_m.is_finite() && dz_m > 0.0) {
            return Err(invalid(
                "dz_m",
                &crate::error::shown(dz_m),
                "a positive thickness of the first layer in metres",
            ));
        }
        if !(growth.is_finite() && (1.0..=2.0).contains(&growth)) {
            return Err(invalid(
                "growth",
                &crate::error::shown(growth),
                "a factor in [1, 2] between a layer's thickness and the one below (1.2: 20 % \
                 thicker each layer)",
            ));
        }
        if let Some(t) = top_m
            && !(t.is_finite() && t > 0.0)
        {
            return Err(invalid(
                "top_m",
                &crate::error::shown(t),
                "a positive height of the model top above the highest ground, in metres",
            ));
        }
        let (lo, hi) = terrain_m
            .iter()
            .filter(|h| h.is_finite())
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &z| {
                (l.min(z), h.max(z))
            });
        if lo > hi {
            return Err(GeofieldError::Invalid(
                "stretched layers need a terrain with at least one finite elevation".into(),
            ));
        }
        let relief = hi - lo;
        let above = top_m.unwrap_or((DEFAULT_TOP_RELIEFS * relief).max(MIN_DEFAULT_TOP_M));
        let top = relief + above;
        let mut tops = Vec::new();
        let (mut z, mut dz) = (0.0f64, dz_m);
        while z < top {
            if tops.len() == MAX_STRETCHED_LAYERS {
                return Err(invalid(
                    "dz_m",
                    &crate::error::shown(dz_m),
                    &format!(
                        "a first layer and growth ({growth}) that reach the model top ({top:.1} m \
                         above the lowest ground) in at most {MAX_STRETCHED_LAYERS} layers"
                    ),
                ));
            }
            z += dz;
            tops.push(z);
            dz *= growth;
        }
        Ok(Levels::Tops(tops))
    }
}

fn invalid(name: &str, value: &str, expected: &str) -> GeofieldError {
    GeofieldError::InvalidParameter {
        name: name.into(),
        value: value.into(),
        expected: expected.into(),
    }
}

/// The 3-D staggered grid with its terrain and solid cells.
#[derive(Debug, Clone)]
pub struct WindGrid {
    /// The horizontal grid (same conventions as every raster: row 0 north, square cells).
    pub plan: GridSpec,
    /// Number of layers.
    pub nz: usize,
    /// Face elevations (m), `nz + 1`, increasing; `z_faces_m[0]` is the domain bottom.
    pub z_faces_m: Vec<f64>,
    /// Ground elevation per column (m), `rows * cols`, row 0 north.
    pub terrain_m: Vec<f64>,
    /// First fluid layer per column (`rows * cols`); cells below it are solid.
    pub ground_k: Vec<u32>,
    /// Cut-cell fractions of the cells and faces; `None` for stair steps (every fluid cell and
    /// open face whole).
    pub cut: Option<Arc<CutCells>>,
}

impl WindGrid {
    /// Build the grid from a DEM on `plan` and the vertical levels. The domain bottom is the
    /// lowest ground elevation; the error names the column when the terrain reaches the top.
    pub fn new(
        plan: GridSpec,
        terrain_m: Vec<f64>,
        levels: &Levels,
    ) -> Result<Self, GeofieldError> {
        if terrain_m.len() != plan.n_cells() {
            return Err(GeofieldError::Invalid(format!(
                "terrain has {} values for a {}x{} grid",
                terrain_m.len(),
                plan.rows,
                plan.cols
            )));
        }
        if let Some(i) = terrain_m.iter().position(|h| !h.is_finite()) {
            return Err(GeofieldError::Invalid(format!(
                "terrain elevation at row {}, col {} is not a number ({}); fill nodata first",
                i / plan.cols,
                i % plan.cols,
                terrain_m[i]
            )));
        }
        let above = levels.faces_above_bottom_m()?;
        let nz = above.len() - 1;
        let bottom = terrain_m.iter().copied().fold(f64::INFINITY, f64::min);
        let z_faces_m: Vec<f64> = above.iter().map(|z| bottom + z).collect();
        let centres: Vec<f64> = (0..nz)
            .map(|k| 0.5 * (z_faces_m[k] + z_faces_m[k + 1]))
            .collect();
        let mut ground_k = Vec::with_capacity(terrain_m.len());
        for (i, &h) in terrain_m.iter().enumerate() {
            let k = centres.partition_point(|&zc| zc < h);
            if k >= nz {
                let (row, col) = (i / plan.cols, i % plan.cols);
                let (x, y) = plan.cell_centre(row, col);
                return Err(GeofieldError::Invalid(format!(
                    "terrain above the model top: the ground at row {row}, col {col} \
                     (x {x:.1} m, y {y:.1} m) is {h:.1} m, and the highest cell centre is {:.1} m \
                     (bottom {bottom:.1} m + {:.1} m of layers); add layers or raise dz_m",
                    centres[nz - 1],
                    above[nz]
                )));
            }
            ground_k.push(k as u32);
        }
        Ok(Self {
            plan,
            nz,
            z_faces_m,
            terrain_m,
            ground_k,
            cut: None,
        })
    }

    /// The same grid with cut cells: the fractions of [`super::cut`] and the first fluid layer
    /// of each column from them. Unchanged if it has them already.
    pub fn with_cut_cells(mut self) -> Self {
        if self.cut.is_none() {
            let c = cut::compute(&self.terrain_m, self.rows(), self.cols(), &self.z_faces_m);
            self.ground_k.clone_from(&c.ground_k);
            self.cut = Some(Arc::new(c));
        }
        self
    }

    /// The same grid with stair steps (solid below the cell centres under the ground).
    pub fn with_stair_steps(mut self) -> Self {
        if self.cut.take().is_some() {
            let nz = self.nz;
            let centres: Vec<f64> = (0..nz).map(|k| self.z_centre_m(k)).collect();
            for (g, &h) in self.ground_k.iter_mut().zip(&self.terrain_m) {
                // Below the model top: checked by `new` for the same terrain and layers.
                *g = centres.partition_point(|&zc| zc < h).min(nz - 1) as u32;
            }
        }
        self
    }

    /// The volume fraction by which the flux imbalance of cell `i` (cell order) is divided in
    /// its divergence: 1 with stair steps, max(θ, [`THETA_DIV_FLOOR`]) with cut cells.
    #[inline]
    pub fn div_fraction(&self, i: usize) -> f64 {
        match &self.cut {
            None => 1.0,
            Some(c) => c.theta[i].max(THETA_DIV_FLOOR),
        }
    }

    pub fn cols(&self) -> usize {
        self.plan.cols
    }
    pub fn rows(&self) -> usize {
        self.plan.rows
    }
    pub fn dx_m(&self) -> f64 {
        self.plan.cell_size_m
    }
    /// Number of cells, `nz * rows * cols`.
    pub fn n_cells(&self) -> usize {
        self.nz * self.plan.rows * self.plan.cols
    }
    pub fn n_u(&self) -> usize {
        self.nz * self.plan.rows * (self.plan.cols + 1)
    }
    pub fn n_v(&self) -> usize {
        self.nz * (self.plan.rows + 1) * self.plan.cols
    }
    pub fn n_w(&self) -> usize {
        (self.nz + 1) * self.plan.rows * self.plan.cols
    }
    /// Thickness of layer k (m).
    pub fn dz_m(&self, k: usize) -> f64 {
        self.z_faces_m[k + 1] - self.z_faces_m[k]
    }
    /// Centre elevation of layer k (m).
    pub fn z_centre_m(&self, k: usize) -> f64 {
        0.5 * (self.z_faces_m[k] + self.z_faces_m[k + 1])
    }
    /// Top of the model (m).
    pub fn top_m(&self) -> f64 {
        self.z_faces_m[self.nz]
    }
    /// Whether every layer is as thick as the first (to 1e-9 relative), as a regular image
    /// (VTK image data) needs.
    pub fn uniform_layers(&self) -> bool {
        (0..self.nz).all(|k| (self.dz_m(k) - self.dz_m(0)).abs() <= 1e-9 * self.dz_m(0))
    }
    pub fn cell(&self, k: usize, row: usize, col: usize) -> usize {
        (k * self.plan.rows + row) * self.plan.cols + col
    }
    pub fn is_solid(&self, k: usize, row: usize, col: usize) -> bool {
        (k as u32) < self.ground_k[row * self.plan.cols + col]
    }
    /// Solid flags (1 = below ground), `nz * rows * cols`, cell order.
    pub fn solid_mask(&self) -> Vec<u8> {
        let (rows, cols) = (self.plan.rows, self.plan.cols);
        let mut out = vec![0u8; self.n_cells()];
        for k in 0..self.nz {
            for c in 0..rows * cols {
                if (k as u32) < self.ground_k[c] {
                    out[k * rows * cols + c] = 1;
                }
            }
        }
        out
    }
    /// Number of fluid cells.
    pub fn n_fluid(&self) -> usize {
        self.ground_k.iter().map(|&g| self.nz - g as usize).sum()
    }
    /// Bytes the solver needs per cell, for memory checks (velocity faces, first guess,
    /// coefficients, potential, residual and multigrid levels, and with cut cells their
    /// fractions and the operator's coefficients, all f64).
    pub const BYTES_PER_CELL: usize = 8 * 23;

    /// Refuse, before anything is allocated, a grid of `cols x rows x nz` cells whose solver
    /// ([`Self::BYTES_PER_CELL`]) and `extra_bytes_per_cell` (the caller's own copies, e.g. for
    /// outputs) would need more than the available memory; the error gives the size.
    pub fn check_memory(
        cols: usize,
        rows: usize,
        nz: usize,
        extra_bytes_per_cell: usize,
    ) -> Result<(), geofield_core::CoreError> {
        let cells = cols as u128 * rows as u128 * nz as u128;
        geofield_core::check_memory(
            || format!("a wind grid of {cols} x {rows} columns x {nz} layers = {cells} cells"),
            cells * (Self::BYTES_PER_CELL + extra_bytes_per_cell) as u128,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(cols: usize, rows: usize) -> GridSpec {
        GridSpec {
            x_min_m: 0.0,
            y_max_m: rows as f64 * 10.0,
            cell_size_m: 10.0,
            cols,
            rows,
        }
    }

    #[test]
    fn stair_steps_follow_cell_centres() {
        // Bottom at 100 m; layers of 10 m: centres 105, 115, 125, 135.
        let g = WindGrid::new(
            plan(3, 1),
            vec![100.0, 115.0, 115.1],
            &Levels::Uniform { nz: 4, dz_m: 10.0 },
        )
        .unwrap();
        assert_eq!(g.ground_k, vec![0, 1, 2]);
        assert!(g.is_solid(0, 0, 1) && !g.is_solid(1, 0, 1));
        assert_eq!(g.n_fluid(), 4 + 3 + 2);
        assert_eq!(g.solid_mask().iter().filter(|&&s| s == 1).count(), 3);
    }

    #[test]
    fn terrain_above_top_is_an_error_naming_the_column() {
        let e = WindGrid::new(
            plan(2, 2),
            vec![0.0, 0.0, 0.0, 500.0],
            &Levels::Uniform { nz: 4, dz_m: 10.0 },
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("row 1, col 1") && e.contains("model top"), "{e}");
    }

    #[test]
    fn stretched_layers_grow_to_the_top() {
        // Relief 100 m, top 50 m above it: faces 0, 10, 22, 36.4, … up to ≥ 150 m.
        let t = [200.0, 300.0, 250.0];
        let f = Levels::stretched(10.0, 1.2, Some(50.0), &t)
            .unwrap()
            .faces_above_bottom_m()
            .unwrap();
        assert_eq!(f[0], 0.0);
        for k in 1..f.len() - 1 {
            let ratio = (f[k + 1] - f[k]) / (f[k] - f[k - 1]);
            assert!((ratio - 1.2).abs() < 1e-12, "{f:?}");
        }
        assert!(f[f.len() - 2] < 150.0 && f[f.len() - 1] >= 150.0, "{f:?}");
        // Default top: 3 reliefs above the highest ground, at least 200 m.
        let f = Levels::stretched(10.0, 1.0, None, &t).unwrap();
        assert_eq!(f.layers(), 40);
        let f = Levels::stretched(10.0, 1.0, None, &[5.0, 5.0]).unwrap();
        assert_eq!(f.layers(), 20);
        // Nonsense is refused, naming the parameter.
        for (dz, g, top, name) in [
            (0.0, 1.2, None, "dz_m"),
            (2.0, 0.9, None, "growth"),
            (2.0, f64::NAN, None, "growth"),
            (2.0, 1.2, Some(-5.0), "top_m"),
            (1e-6, 1.0, Some(1e3), "dz_m"),
        ] {
            let e = Levels::stretched(dz, g, top, &t).unwrap_err().to_string();
            assert!(e.starts_with(name), "{e}");
        }
    }

    #[test]
    fn explicit_levels_must_increase() {
        assert!(
            Levels::Tops(vec![10.0, 5.0])
                .faces_above_bottom_m()
                .is_err()
        );
        assert_eq!(
            Levels::Tops(vec![10.0, 25.0])
                .faces_above_bottom_m()
                .unwrap(),
            vec![0.0, 10.0, 25.0]
        );
    }
}
