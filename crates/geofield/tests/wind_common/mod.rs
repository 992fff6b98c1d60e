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

/// The largest distance (m) by which a residual left in the potential equation can move the
/// velocity, per s⁻¹ of residual: |δu| ≤ `poisson_reach_m(g)` · max |r|.
///
/// Derivation: a solver stopped at max |div u| ≤ r leaves u = u* + ∇ψ with Δψ = ρ, |ρ| ≤ r (the
/// exact field u* is divergence-free, and the solver's correction is a gradient). With the
/// free-space Green's function, |∇ψ(x)| ≤ ∫ |ρ(y)| / (4π |x − y|²) dy ≤ r · R, where R is the
/// radius of the ball with the volume of the domain (the integrand is largest near x, so the
/// integral over any region of volume V is at most the one over the ball of volume V around x).
/// The ground is a no-flux wall, whose mirror image doubles the volume; the open sides and top
/// (ψ = 0) are images of opposite sign, which can at most double the gradient next to them. So
/// |δu| ≤ 2R · r with R = (3 · 2V / 4π)^(1/3). (For the hill grid, 2R ≈ 900 m against its
/// 1200 m largest extent; residuals of both signs cancel, so fields usually differ by far less.)
pub fn poisson_reach_m(g: &WindGrid) -> f64 {
    let volume = g.plan.width_m() * g.plan.height_m() * (g.top_m() - g.z_faces_m[0]);
    2.0 * (3.0 * 2.0 * volume / (4.0 * std::f64::consts::PI)).cbrt()
}

/// The bound on the distance between two fields solved from the same first guess whose largest
/// divergences are `r_a` and `r_b` (s⁻¹): each is within [`poisson_reach_m`] · r of the exact one.
pub fn agreement_bound(g: &WindGrid, r_a: f64, r_b: f64) -> f64 {
    poisson_reach_m(g) * (r_a + r_b)
}

/// A square plan of `cols` × `cols` cells of `dx` metres centred on the origin, with the
/// Gaussian hill z = h exp(−r²/2σ²) sampled at the cell centres.
pub fn centred_gaussian(cols: usize, dx: f64, h: f64, sigma: f64) -> (GridSpec, Vec<f64>) {
    let plan = GridSpec {
        x_min_m: -0.5 * cols as f64 * dx,
        y_max_m: 0.5 * cols as f64 * dx,
        cell_size_m: dx,
        cols,
        rows: cols,
    };
    let mut terrain = Vec::with_capacity(plan.n_cells());
    for row in 0..cols {
        for col in 0..cols {
            let (x, y) = plan.cell_centre(row, col);
            terrain.push(h * (-(x * x + y * y) / (2.0 * sigma * sigma)).exp());
        }
    }
    (plan, terrain)
}
