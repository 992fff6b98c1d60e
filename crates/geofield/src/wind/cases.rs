//! Built-in cases: the benchmark's grid family on a Gaussian hill.
//!
//! R1 … R64: a 12.8 km square refined horizontally 2× per axis per step, R1 = 64 × 64 columns
//! (Δx = 200 m) to R64 = 512 × 512 (Δx = 25 m); `nz` layers of 10 m (32 for the family, 8.4 M
//! cells at R64). The hill is 120 m high with σ = 0.12 × the width (note §2's study) on a
//! 100 m plain; two stations at 10 m: 5 m/s from 270° (class D) and 6 m/s from 250°.
//! The paper's own R1–R64 sizes are not published (note §9); this family is ours.

use geofield_core::GridSpec;

use super::grid::{Levels, WindGrid};
use super::params::{Stability, Station};
use crate::GeofieldError;

/// Width of the benchmark domain (m).
pub const HILL_DOMAIN_M: f64 = 12_800.0;

/// The R`r` case (`r` = 1, 4, 16, 64, … a power of 4) with `nz` layers of `dz_m`.
pub fn hill_case(
    r: usize,
    nz: usize,
    dz_m: f64,
) -> Result<(WindGrid, Vec<Station>), GeofieldError> {
    let side = (r as f64).sqrt();
    if r == 0 || side.fract() != 0.0 {
        return Err(GeofieldError::Invalid(format!(
            "refinement R{r} is not a square (1, 4, 16, 64, …)"
        )));
    }
    let cols = 64 * side as usize;
    hill_grid(cols, nz, dz_m)
}

/// A `cols × cols` plan over the benchmark domain with the hill and its stations.
pub fn hill_grid(
    cols: usize,
    nz: usize,
    dz_m: f64,
) -> Result<(WindGrid, Vec<Station>), GeofieldError> {
    let cell = HILL_DOMAIN_M / cols as f64;
    let plan = GridSpec {
        x_min_m: 500_000.0,
        y_max_m: 4_200_000.0,
        cell_size_m: cell,
        cols,
        rows: cols,
    };
    let (cx, cy) = (
        plan.x_min_m + 0.5 * HILL_DOMAIN_M,
        plan.y_max_m - 0.5 * HILL_DOMAIN_M,
    );
    let sigma = 0.12 * HILL_DOMAIN_M;
    let mut terrain = Vec::with_capacity(plan.n_cells());
    for row in 0..plan.rows {
        for col in 0..plan.cols {
            let (x, y) = plan.cell_centre(row, col);
            let r2 = (x - cx).powi(2) + (y - cy).powi(2);
            terrain.push(100.0 + 120.0 * (-r2 / (2.0 * sigma * sigma)).exp());
        }
    }
    let grid = WindGrid::new(plan, terrain, &Levels::Uniform { nz, dz_m })?;
    let st = |id: &str, fx: f64, fy: f64, speed: f64, dir: f64, class| Station {
        id: id.into(),
        x_m: plan.x_min_m + fx * HILL_DOMAIN_M,
        y_m: plan.y_max_m - fy * HILL_DOMAIN_M,
        height_agl_m: 10.0,
        speed_m_per_s: speed,
        direction_deg: dir,
        stability: class,
    };
    let stations = vec![
        st("west", 0.15, 0.5, 5.0, 270.0, Some(Stability::D)),
        st("east", 0.8, 0.4, 6.0, 250.0, None),
    ];
    Ok((grid, stations))
}
