//! Wind field: a mass-consistent 3-D wind field over terrain from station observations.
//!
//! # Model
//!
//! A staggered (MAC) Cartesian grid ([`grid`]) covers the terrain: square columns of the DEM's
//! cell size, layers of thickness Δz_k, cells below the ground solid (stair steps). The WEST
//! pipeline of the paper (Pinheiro, Schirru & Pereira, INAC 2017; Table 1) runs as separate
//! steps ([`init`]):
//!
//! 1. stability interpolation: the nearest station's Pasquill–Gifford class per column;
//! 2. vertical extrapolation: each station's wind to any height above ground (power law with
//!    the class's exponent, log law with a roughness length, or uniform);
//! 3. initialisation and 4. land addition: the grid, solid cells below the ground;
//! 5. speed interpolation: u and v at every fluid cell by inverse-distance-squared weights of
//!    the stations within the radius of influence, at the cell's own height above ground, the
//!    nearest station where none is within the radius; faces average their two cells;
//! 6. speed zero: no first-guess flux through faces touching solid cells, w0 = 0;
//! 7. transparency: T_f = 1 on faces between fluid cells and on open domain edges, 0 else;
//! 8. divergence minimisation ([`west`], [`sor`], [`multigrid`]);
//! 9. divergence removal (WEST only): w integrated up each column from the ground.
//!
//! The adjustment is Sherman's (1978) variational problem in the potential form:
//!
//! ```text
//!   u = u0 + ∂φ/∂x,  v = v0 + ∂φ/∂y,  w = w0 + α² ∂φ/∂z,
//!   ∂²φ/∂x² + ∂²φ/∂y² + α² ∂²φ/∂z² = −∇·u0,
//! ```
//!
//! with φ = 0 beyond open boundaries (sides, top) and no flux correction through solid faces
//! (ground, terrain). α = α_h/α_v (dimensionless) comes from the stability class; φ is in m²/s,
//! divergences in s⁻¹. Discretely u_f = u0_f + c_f (Gφ)_f with c_f = T_f on x and y faces and
//! α² T_f on z faces, and for any φ the residual of the (volume-weighted) system is the cell
//! divergence of the returned field: the stop test and the quality report are one number.
//!
//! The paper's "divergence minimisation" kernel is point SOR with ω = 1.25 on this problem with
//! α = 1, written in velocity form: each cell's divergence D is multiplied by (1 − ω) and handed
//! to its neighbours. `Model::West` runs exactly that kernel (red cells, i + j + k odd, first);
//! `Model::Sherman` solves to a tolerance by multigrid, multigrid-preconditioned CG or SOR
//! with the optimal ω. Stop rule: max over fluid cells of |div u| ≤ tol × max |div u0|.
//!
//! References: Sherman, J. Appl. Meteor. 17 (1978) 312–319,
//! doi:10.1175/1520-0450(1978)017<0312:AMCMFW>2.0.CO;2; the project note `notes/wind-field.md`.

pub mod grid;
pub mod ops;
pub mod params;

pub use grid::{Levels, WindGrid};
pub use params::{Model, Profile, Solver, Stability, Station, Top, WindOptions, speed_direction};

/// What a solve did: the residual history and the divergence before and after.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct SolveReport {
    /// "west", "sherman/multigrid", "sherman/mgcg", "sherman/sor".
    pub method: String,
    /// Sweeps (WEST, SOR), V-cycles (multigrid) or CG iterations done.
    pub iterations: usize,
    /// (iteration, max |div u| over fluid cells in s⁻¹) at every check.
    pub history: Vec<(usize, f64)>,
    /// max |div u0| over fluid cells (s⁻¹).
    pub max_div0_per_s: f64,
    /// max |div u| of the returned field, recomputed from its faces in f64 (s⁻¹), before any
    /// divergence removal.
    pub max_div_per_s: f64,
    /// RMS of div u over fluid cells (s⁻¹), same field.
    pub rms_div_per_s: f64,
    /// The stop threshold (s⁻¹): max(tol × max|div u0|, abs floor).
    pub threshold_per_s: f64,
    pub converged: bool,
    pub alpha: f64,
    /// ω used by WEST or SOR.
    pub omega: Option<f64>,
    /// WEST divergence removal: the largest change it made to w (m/s).
    pub removal_max_dw_m_per_s: Option<f64>,
    /// Seconds of the solve (device time on the GPU, wall time on the CPU).
    pub solve_seconds: f64,
}

/// The result: face velocities on the grid, the stability class per column, the report.
#[derive(Debug, Clone)]
pub struct WindField {
    pub grid: WindGrid,
    /// x-face velocities (m/s, positive east), `grid.n_u()` values (see [`grid`]).
    pub u: Vec<f64>,
    /// y-face velocities (m/s, positive north), `grid.n_v()`.
    pub v: Vec<f64>,
    /// z-face velocities (m/s, positive up), `grid.n_w()`.
    pub w: Vec<f64>,
    /// Stability class per column, `rows * cols`.
    pub stability: Vec<Stability>,
    /// Stations that were not used, with the reason.
    pub ignored_stations: Vec<IgnoredStation>,
    pub report: SolveReport,
}

/// A station the pipeline did not use, and why (outside the domain, below the terrain...).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct IgnoredStation {
    pub id: String,
    pub reason: String,
}
