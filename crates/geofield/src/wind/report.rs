//! What a solve returns: the field ([`WindField`]) and its report ([`SolveReport`], how it
//! ended: [`StopReason`]), and the stations it left out ([`IgnoredStation`]).

use super::{Profile, Stability, WindGrid};

/// How a solve ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// max |div u| reached the threshold.
    #[default]
    Converged,
    /// The iteration cap came first (`max_iterations`), the residual still falling.
    IterationCap,
    /// The residual stopped falling (V-cycles or CG iterations: less than 2× over the last 3;
    /// SOR: less than 1 % over 1000 sweeps), e.g. at the rounding level.
    Stagnated,
    /// The residual grew above its best (or is not finite): the solver does not contract on
    /// this problem.
    Diverged,
    /// The paper's WEST mode: exactly `max_iterations` sweeps, converged or not.
    FixedIterations,
}

impl StopReason {
    /// In words, for messages: "converged", "reached the iteration cap", "stagnated", ….
    pub fn describe(self) -> &'static str {
        match self {
            StopReason::Converged => "converged",
            StopReason::IterationCap => "reached the iteration cap",
            StopReason::Stagnated => "stagnated (stopped reducing max |div u|)",
            StopReason::Diverged => "diverged (max |div u| grew)",
            StopReason::FixedIterations => "ran the fixed number of sweeps",
        }
    }
}

/// What a solve did: the residual history and the divergence before and after.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct SolveReport {
    /// "west", "sherman/multigrid", "sherman/mgcg", "sherman/sor".
    pub method: String,
    /// The terrain representation: "cut" (cut cells) or "stairs" (stair steps).
    pub terrain: String,
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
    /// The stop threshold (s⁻¹): max(tol × max|div u0|, the absolute floor, a rounding floor
    /// of 1000 ulps of max|u0| over the smallest spacing); WEST on CUDA (f32) also at least
    /// 4 f32 ulps of max|div u0| (`cuda::F32_FLOOR_ULPS`).
    pub threshold_per_s: f64,
    pub converged: bool,
    /// How the solve ended (what happened when it did not converge).
    pub stop: StopReason,
    /// The solver's residual max |div| at its first check (the first guess's, s⁻¹).
    pub first_residual_per_s: f64,
    /// The solver's residual max |div| at its last check (s⁻¹).
    pub last_residual_per_s: f64,
    pub alpha: f64,
    /// ω used by WEST or SOR.
    pub omega: Option<f64>,
    /// WEST divergence removal: the largest change it made to w (m/s).
    pub removal_max_dw_m_per_s: Option<f64>,
    /// Seconds of the solve (device time on the GPU, wall time on the CPU).
    pub solve_seconds: f64,
    /// The processes the solve was split over ([`super::compute_split`]); `None`: one.
    pub split_parts: Option<usize>,
    /// Wall seconds of each step of the pipeline on the host: "coefficients", "first guess",
    /// "waiting for the backend" (a GPU opened in the background), "setup" (operator and
    /// multigrid levels, CPU only), "solve" (including uploads, the GPU's assembly of the
    /// problem and downloads), "velocities", "check", "removal".
    pub step_seconds: Vec<(String, f64)>,
    /// The diurnal model's inputs seen in the first guess (sun, heat flux, Monin–Obukhov
    /// length), when it ran ([`super::diurnal`]).
    pub diurnal: Option<super::diurnal::DiurnalSummary>,
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
    /// The vertical profile of the first guess, which sampling below the first cut-cell sample
    /// follows ([`at_height_agl`]).
    pub profile: Profile,
    /// The lowest height above ground the profiles use (m).
    pub min_height_agl_m: f64,
    /// The log profile's displacement height (m; 0 without vegetation).
    pub displacement_m: f64,
}

/// A station the pipeline did not use, and why (outside the domain, below the terrain...).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct IgnoredStation {
    pub id: String,
    pub reason: String,
}
