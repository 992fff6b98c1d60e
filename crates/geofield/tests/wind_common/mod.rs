//! Shared helpers of the wind tests: a Gaussian hill on a small plan and two stations.

#![allow(clippy::unwrap_used, dead_code)]

use geofield::wind::{Levels, Station, WindGrid};
use geofield_core::GridSpec;

pub fn plan(cols: usize, rows: usize, dx: f64) -> GridSpec {
    GridSpec {
        x_min_m: 0.0,
        y_max_m: rows as f64 * dx,
        cell_size_m: dx,
        cols,
        rows,
    }
}

/// A Gaussian hill of height `h` and width `sigma` in the middle of the plan.
pub fn hill(p: &GridSpec, h: f64, sigma: f64) -> Vec<f64> {
    let (cx, cy) = (
        p.x_min_m + 0.5 * p.width_m(),
        p.y_max_m - 0.5 * p.height_m(),
    );
    let mut t = Vec::with_capacity(p.n_cells());
    for row in 0..p.rows {
        for col in 0..p.cols {
            let (x, y) = p.cell_centre(row, col);
            let r2 = (x - cx).powi(2) + (y - cy).powi(2);
            t.push(100.0 + h * (-r2 / (2.0 * sigma * sigma)).exp());
        }
    }
    t
}

pub fn station(x: f64, y: f64, speed: f64, dir: f64) -> Station {
    Station {
        id: format!("s{x}_{y}"),
        x_m: x,
        y_m: y,
        height_agl_m: 10.0,
        speed_m_per_s: speed,
        direction_deg: dir,
        stability: None,
    }
}

pub fn hill_grid() -> WindGrid {
    let p = plan(24, 20, 50.0);
    WindGrid::new(
        p,
        hill(&p, 60.0, 180.0),
        &Levels::Uniform { nz: 16, dz_m: 10.0 },
    )
    .unwrap()
}

pub fn stations_for(g: &WindGrid) -> Vec<Station> {
    let w = g.plan.width_m();
    vec![
        station(0.2 * w, 0.3 * w, 5.0, 250.0),
        station(0.8 * w, 0.6 * w, 6.0, 280.0),
    ]
}

pub fn max_diff(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max)
}
