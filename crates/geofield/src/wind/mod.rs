//! Wind field: a mass-consistent 3-D wind field over terrain from station observations.
//!
//! # Model
//!
//! A staggered (MAC) Cartesian grid ([`grid`]) covers the terrain: square columns of the DEM's
//! cell size, layers of thickness Δz_k. Sherman's model cuts the cells with the ground
//! ([`cut`], `Terrain::Cut`, the default): the ground is a continuous surface through the DEM,
//! cells and faces it crosses are partly open (volume fractions θ, apertures a), the operator
//! and the divergence use the open parts, the profiles are measured from the true ground and
//! outputs are sampled at the exact height above it. The WEST model keeps the paper's stair
//! steps (cells whose centre is below the ground solid). The WEST pipeline of the paper
//! (Pinheiro, Schirru & Pereira, INAC 2017; Table 1) runs as separate steps (`init.rs`):
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
//! 8. divergence minimisation (`west.rs`, `sor.rs`, `multigrid.rs`);
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
//! On `Backend::Cuda` the same sweeps and solvers run on the GPU (`cuda/`): WEST on f32
//! corrections to the first guess; Sherman's problem assembled on the device from the grid's
//! coefficients (the same operator and levels as the CPU's), an f32 V-cycle, f64 CG, residuals
//! and SOR.
//!
//! References: Sherman, J. Appl. Meteor. 17 (1978) 312–319,
//! doi:10.1175/1520-0450(1978)017<0312:AMCMFW>2.0.CO;2; the project note `notes/wind-field.md`.

pub(crate) mod cases;
pub(crate) mod cuda;
pub mod curvilinear;
pub mod cut;
pub mod diurnal;
pub mod grid;
pub mod gridded;
pub(crate) mod init;
#[cfg(feature = "io")]
pub mod io;
pub(crate) mod level;
pub(crate) mod multigrid;
pub(crate) mod ops;
mod params;
mod report;
mod sample;
pub mod solar;
pub(crate) mod sor;
pub mod split;
mod units;
pub(crate) mod west;

/// Why a solver stopped contracting (the rule of `geofield_cuda::wind::stall`).
pub use geofield_cuda::wind::stall::Stall;
pub use grid::{Levels, WindGrid};
pub use gridded::{Curvilinear, InitGrid, SourceCrs};
pub use params::{
    Model, Profile, Solver, Stability, Station, Terrain, Top, WindOptions, check_options,
    check_options_before_grid, speed_direction,
};
pub use report::{IgnoredStation, SolveReport, StopReason, WindField};
pub use sample::{
    CellFields, PointSample, Surface, at_height_agl, cell_centred, sample_point, surface,
};
pub use units::{DOMAIN_AVERAGE_ID, LengthUnit, SpeedUnit, Vegetation, domain_average};

use crate::{Backend, Cancel, GeofieldError};

/// The error for a wind field that is not finite, naming what in the inputs is extreme: the
/// fastest station and the height of the domain.
fn non_finite(what: &str, grid: &WindGrid, stations: &[Station]) -> GeofieldError {
    let fastest = stations
        .iter()
        .max_by(|a, b| a.speed_m_per_s.total_cmp(&b.speed_m_per_s));
    let top = grid.z_faces_m.last().copied().unwrap_or(f64::NAN);
    let bottom = grid.z_faces_m.first().copied().unwrap_or(f64::NAN);
    GeofieldError::NonFinite {
        what: what.into(),
        cause: format!(
            "{}; the layers span {bottom:.4e} to {top:.4e} m",
            fastest.map_or(
                "no station: the first guess came from a grid".to_string(),
                |s| format!(
                    "the fastest station, {}, reports {:.4e} m/s",
                    s.id, s.speed_m_per_s
                )
            )
        ),
    }
}

/// The error of a tolerance-driven solve that did not converge: what happened (iteration cap,
/// stagnation, divergence), the residual's first and last values, the divergence reached.
fn not_converged(report: &SolveReport, opts: &WindOptions, max_div0: f64) -> GeofieldError {
    let advice = match (report.stop, opts.model, opts.solver) {
        (StopReason::IterationCap, Model::West, _) => {
            "; raise max_iterations, or use the Sherman model (solved to the tolerance by multigrid)"
        }
        (StopReason::IterationCap, _, Solver::Sor) => {
            "; raise max_iterations, or use the MG-CG solver"
        }
        (StopReason::IterationCap, _, _) => "; raise max_iterations",
        (_, _, Solver::Multigrid) => {
            "; try the MG-CG solver, a looser tolerance, or check the terrain and layers"
        }
        _ => "; try a looser tolerance, or check the terrain and layers",
    };
    GeofieldError::Invalid(format!(
        "the {} solve did not converge: it {} after {} iterations (max |div| of the solver's \
         residual {:.3e} at the start, {:.3e} at the end); max |div u| = {:.3e} s⁻¹, above the \
         threshold {:.3e} s⁻¹ (tolerance {:.1e} × max |div u0| = {:.3e} s⁻¹){advice}",
        report.method,
        report.stop.describe(),
        report.iterations,
        report.first_residual_per_s,
        report.last_residual_per_s,
        report.max_div_per_s,
        report.threshold_per_s,
        opts.tolerance,
        max_div0,
    ))
}

/// Prepares `backend` for a wind solve: on a GPU, loads (compiling on first use) the wind
/// kernels. Meant for the thread that opens the backend while the host reads the inputs;
/// an error here is left for the solve to report.
pub fn warm_up(backend: &Backend) {
    if let Backend::Cuda(gpu) = backend {
        let _ = geofield_cuda::wind::warm_up(gpu);
    }
}

/// The whole pipeline: first guess from the stations, then the adjustment, on `backend`.
/// An error when no station is usable, or when a tolerance-driven solve does not converge
/// (the message says whether it reached `max_iterations`, stagnated or diverged, and carries
/// the residual reached); a solve that stops contracting stops within a few checks.
///
/// ```
/// use geofield::Backend;
/// use geofield::wind::{self, Levels, Station, WindGrid, WindOptions};
/// use geofield_core::GridSpec;
///
/// // Flat ground, 8 x 8 columns of 30 m, 6 layers of 10 m, one station with a west wind.
/// let plan = GridSpec { x_min_m: 0.0, y_max_m: 240.0, cell_size_m: 30.0, cols: 8, rows: 8 };
/// let grid = WindGrid::new(plan, vec![100.0; 64], &Levels::Uniform { nz: 6, dz_m: 10.0 })?;
/// let st = Station { id: "a".into(), x_m: 120.0, y_m: 120.0, height_agl_m: 10.0,
///     speed_m_per_s: 5.0, direction_deg: 270.0, stability: None };
/// let field = wind::compute(&Backend::Cpu, grid, &[st], &WindOptions::default())?;
/// assert!(field.report.converged);
/// // Over flat ground the west wind blows east (u > 0) with no vertical component.
/// assert!(field.u.iter().all(|&u| u >= 0.0) && field.w.iter().all(|&w| w.abs() < 1e-9));
/// # Ok::<(), geofield::GeofieldError>(())
/// ```
pub fn compute(
    backend: &Backend,
    grid: WindGrid,
    stations: &[Station],
    opts: &WindOptions,
) -> Result<WindField, GeofieldError> {
    compute_with_progress(
        backend,
        grid,
        stations,
        opts,
        &mut |_, _| {},
        &Cancel::new(),
    )
}

/// [`compute`] with a callback `progress(iteration, max |div u|)` at every convergence check,
/// stopping with [`GeofieldError::Cancelled`] soon after `cancel` is set (see
/// [`crate::cancel`]): at the solver's next convergence check (every V-cycle, every MG-CG
/// iteration, every `check_every` SOR or WEST sweeps) or between the pipeline's steps. On the
/// GPU the solve itself runs to its end.
///
/// ```
/// use geofield::wind::{self, Levels, Station, WindGrid, WindOptions};
/// use geofield::{Backend, Cancel, GeofieldError};
/// use geofield_core::GridSpec;
///
/// let plan = GridSpec { x_min_m: 0.0, y_max_m: 240.0, cell_size_m: 30.0, cols: 8, rows: 8 };
/// let grid = WindGrid::new(plan, vec![100.0; 64], &Levels::Uniform { nz: 6, dz_m: 10.0 })?;
/// let st = Station { id: "a".into(), x_m: 120.0, y_m: 120.0, height_agl_m: 10.0,
///     speed_m_per_s: 5.0, direction_deg: 250.0, stability: None };
/// let cancel = Cancel::new();
/// cancel.cancel();
/// let r = wind::compute_with_progress(&Backend::Cpu, grid, &[st], &WindOptions::default(),
///     &mut |_, _| {}, &cancel);
/// assert!(matches!(r, Err(GeofieldError::Cancelled)));
/// # Ok::<(), geofield::GeofieldError>(())
/// ```
pub fn compute_with_progress(
    backend: &Backend,
    grid: WindGrid,
    stations: &[Station],
    opts: &WindOptions,
    progress: &mut dyn FnMut(usize, f64),
    cancel: &Cancel,
) -> Result<WindField, GeofieldError> {
    compute_deferred(
        || Ok(backend.clone()),
        grid,
        stations,
        opts,
        progress,
        cancel,
    )
    .map(|(f, _)| f)
}

/// [`compute_with_progress`] with the backend opened while the first guess and the solver's
/// setup run on the CPU: `backend` (for example, joining a thread that opens the GPU) is
/// called once, just before the solve, and the backend it returns is handed back. Opening a
/// CUDA context takes a few tenths of a second, which this hides behind the host steps.
/// `progress` and `cancel` as in [`compute_with_progress`].
pub fn compute_deferred(
    open_backend: impl FnOnce() -> Result<Backend, GeofieldError>,
    grid: WindGrid,
    stations: &[Station],
    opts: &WindOptions,
    progress: &mut dyn FnMut(usize, f64),
    cancel: &Cancel,
) -> Result<(WindField, Backend), GeofieldError> {
    compute_inner(open_backend, grid, stations, opts, progress, cancel, None)
}

/// [`compute_with_progress`] on `backend` with the Sherman solve split by rows over the
/// processes that `parts` connects ([`split`]: each part holds a band of rows on every fine
/// level and exchanges one halo row with its neighbours in every smoothing sweep, residual and
/// operator application; the small coarse levels are gathered). Every part calls this with the
/// same inputs and gets the whole field. On `Backend::Cuda` each part's band lives on its own
/// GPU: a domain larger than one GPU's memory. The multigrid solver
/// gives the one-process field of the same backend bit for bit; MG-CG differs by rounding,
/// within the tolerance. WEST and SOR are refused.
pub fn compute_split(
    backend: &Backend,
    grid: WindGrid,
    stations: &[Station],
    opts: &WindOptions,
    parts: &dyn split::Exchange,
    progress: &mut dyn FnMut(usize, f64),
    cancel: &Cancel,
) -> Result<WindField, GeofieldError> {
    check_split(opts)?;
    compute_inner(
        || Ok(backend.clone()),
        grid,
        stations,
        opts,
        progress,
        cancel,
        Some(parts),
    )
    .map(|(f, _)| f)
}

/// Whether `opts` can run split ([`compute_split`]): Sherman's model with the multigrid or
/// MG-CG solver.
pub fn check_split(opts: &WindOptions) -> Result<(), GeofieldError> {
    if opts.model != Model::Sherman || opts.solver == Solver::Sor {
        return Err(GeofieldError::Unsupported(
            "the split wind solve runs Sherman's model with the multigrid or MG-CG solver \
             (not WEST, not SOR)"
                .into(),
        ));
    }
    Ok(())
}

fn compute_inner(
    open_backend: impl FnOnce() -> Result<Backend, GeofieldError>,
    grid: WindGrid,
    stations: &[Station],
    opts: &WindOptions,
    progress: &mut dyn FnMut(usize, f64),
    cancel: &Cancel,
    parts: Option<&dyn split::Exchange>,
) -> Result<(WindField, Backend), GeofieldError> {
    check_options(opts)?;
    cancel.check()?;
    let alpha_fixed = match opts.model {
        Model::West => Some(opts.alpha.unwrap_or(1.0)),
        Model::Sherman => opts.alpha,
    };
    let mut clock = std::time::Instant::now();
    let mut steps: Vec<(String, f64)> = Vec::new();
    let mut lap = |name: &str, steps: &mut Vec<(String, f64)>| {
        steps.push((name.to_string(), clock.elapsed().as_secs_f64()));
        clock = std::time::Instant::now();
    };
    let grid = match (opts.model, opts.terrain) {
        (Model::Sherman, None | Some(Terrain::Cut)) => grid.with_cut_cells(),
        _ => grid.with_stair_steps(),
    };
    if grid.cut.is_some() {
        lap("cut cells", &mut steps);
    }
    let mut coeffs = ops::Coeffs::new(&grid, 1.0, opts.top);
    lap("coefficients", &mut steps);
    cancel.check()?;
    let guess = init::first_guess(&grid, &coeffs, stations, opts)?;
    lap("first guess", &mut steps);
    cancel.check()?;
    let alpha = alpha_fixed.unwrap_or_else(|| guess.domain_class.alpha());
    if alpha != 1.0 {
        let a2 = alpha * alpha;
        coeffs.cw.iter_mut().for_each(|c| *c *= a2);
        coeffs.alpha = alpha;
    }
    let (mut u, mut v, mut w) = (guess.u, guess.v, guess.w);
    let div0 = ops::divergence(&grid, &u, &v, &w);
    let (max_div0, _) = ops::divergence_stats(&grid, &div0);
    if !max_div0.is_finite() || u.iter().chain(&v).any(|x| !x.is_finite()) {
        return Err(non_finite("first-guess wind field", &grid, stations));
    }
    // Rounding floor: divergences below ~1000 ulps of the largest first-guess flux per cell
    // width are rounding noise (a uniform flow's face averages give ~1e-17 s⁻¹), not signal.
    let u_max = u.iter().chain(&v).map(|x| x.abs()).fold(0.0f64, f64::max);
    let d_min = (0..grid.nz)
        .map(|k| grid.dz_m(k))
        .fold(grid.dx_m(), f64::min);
    let rounding_floor = 1e3 * f64::EPSILON * u_max / d_min;
    let threshold = (opts.tolerance * max_div0)
        .max(opts.abs_tolerance_per_s)
        .max(rounding_floor);
    let mut report = SolveReport {
        terrain: if grid.cut.is_some() { "cut" } else { "stairs" }.into(),
        max_div0_per_s: max_div0,
        threshold_per_s: threshold,
        alpha,
        diurnal: guess.diurnal.clone(),
        ..Default::default()
    };
    lap("divergence", &mut steps);
    cancel.check()?;
    let started;
    let mut stall = None;
    let fixed = opts.model == Model::West && opts.fixed_iterations;
    let backend = match opts.model {
        Model::West => {
            let backend = open_backend()?;
            lap("waiting for the backend", &mut steps);
            started = std::time::Instant::now();
            let omega = opts.omega.unwrap_or(1.25);
            report.method = "west".into();
            report.omega = Some(omega);
            let run = match &backend {
                Backend::Cpu => {
                    let op = west::WestOperator::new(&grid, &coeffs, omega);
                    west::run(
                        &grid,
                        &op,
                        &mut u,
                        &mut v,
                        &mut w,
                        opts.max_iterations,
                        fixed,
                        threshold,
                        opts.check_every,
                        |it, d| {
                            progress(it, d);
                            cancel.flow()
                        },
                    )
                }
                Backend::Cuda(gpu) => cuda::west(
                    gpu,
                    &grid,
                    &coeffs,
                    omega,
                    (&mut u, &mut v, &mut w),
                    opts,
                    threshold,
                    &mut report,
                    &mut *progress,
                )?,
            };
            cancel.check()?;
            report.iterations = run.iterations;
            report.history = run.history;
            backend
        }
        Model::Sherman => {
            let omega = opts
                .omega
                .unwrap_or_else(|| sor::optimal_omega(&grid, alpha));
            report.method = match opts.solver {
                Solver::Multigrid => "sherman/multigrid",
                Solver::MgCg => "sherman/mgcg",
                Solver::Sor => "sherman/sor",
            }
            .into();
            if opts.solver == Solver::Sor {
                report.omega = Some(omega);
            }
            // The GPU assembles the problem itself; only the CPU builds it here.
            let backend = open_backend()?;
            lap("waiting for the backend", &mut steps);
            let (run, phi) = match (&backend, parts) {
                (Backend::Cpu, Some(parts)) => {
                    report.split_parts = Some(parts.parts());
                    lap("setup", &mut steps);
                    started = std::time::Instant::now();
                    let mut run = split::solve(
                        &grid,
                        &coeffs,
                        &div0,
                        opts.solver,
                        opts.max_iterations,
                        threshold,
                        parts,
                        |it, d| {
                            progress(it, d);
                            cancel.is_cancelled()
                        },
                    )?;
                    cancel.check()?;
                    let phi = std::mem::take(&mut run.phi);
                    (run, phi)
                }
                (Backend::Cpu, None) => {
                    let problem = multigrid::Problem::new(&grid, &coeffs, &div0);
                    lap("setup", &mut steps);
                    cancel.check()?;
                    started = std::time::Instant::now();
                    let mut run = multigrid::solve(
                        &problem,
                        opts.solver,
                        omega,
                        opts.max_iterations,
                        threshold,
                        opts.check_every,
                        |it, d| {
                            progress(it, d);
                            cancel.flow()
                        },
                    )?;
                    cancel.check()?;
                    let phi = problem.to_cells(&std::mem::take(&mut run.phi));
                    (run, phi)
                }
                (Backend::Cuda(gpu), Some(parts)) => {
                    started = std::time::Instant::now();
                    let mut run = cuda::sherman_split(
                        gpu,
                        &grid,
                        &coeffs,
                        &div0,
                        opts.solver,
                        opts,
                        threshold,
                        &mut report,
                        &mut *progress,
                        parts,
                    )?;
                    let phi = std::mem::take(&mut run.phi);
                    (run, phi)
                }
                (Backend::Cuda(gpu), None) => {
                    started = std::time::Instant::now();
                    let mut run = cuda::sherman(
                        gpu,
                        &grid,
                        &coeffs,
                        &div0,
                        opts.solver,
                        omega,
                        opts,
                        threshold,
                        &mut report,
                        &mut *progress,
                    )?;
                    let phi = std::mem::take(&mut run.phi);
                    (run, phi)
                }
            };
            lap("solve", &mut steps);
            cancel.check()?;
            ops::apply_potential(&grid, &coeffs, &phi, &mut u, &mut v, &mut w);
            lap("velocities", &mut steps);
            report.iterations = run.iterations;
            report.history = run.history;
            stall = run.stall;
            backend
        }
    };
    if report.solve_seconds == 0.0 {
        report.solve_seconds = started.elapsed().as_secs_f64();
    }
    if opts.model == Model::West {
        lap("solve", &mut steps);
    }
    cancel.check()?;
    let (max_div, rms_div) = ops::divergence_stats(&grid, &ops::divergence(&grid, &u, &v, &w));
    lap("check", &mut steps);
    report.max_div_per_s = max_div;
    report.rms_div_per_s = rms_div;
    report.first_residual_per_s = report.history.first().map_or(f64::NAN, |h| h.1);
    report.last_residual_per_s = report.history.last().map_or(f64::NAN, |h| h.1);
    // The backend may have raised the threshold (f32 WEST on the GPU: its rounding floor).
    let threshold = report.threshold_per_s;
    report.converged = max_div <= threshold;
    report.stop = match (report.converged, stall) {
        (true, _) => StopReason::Converged,
        (false, Some(geofield_cuda::wind::stall::Stall::Diverged)) => StopReason::Diverged,
        (false, Some(geofield_cuda::wind::stall::Stall::Stagnated)) => StopReason::Stagnated,
        (false, None) if fixed => StopReason::FixedIterations,
        (false, None) => StopReason::IterationCap,
    };
    let finite = max_div.is_finite() && u.iter().chain(&v).chain(&w).all(|x| x.is_finite());
    if !report.converged && !fixed && (finite || stall.is_some()) {
        return Err(not_converged(&report, opts, max_div0));
    }
    if !finite {
        return Err(non_finite("solved wind field", &grid, stations));
    }
    // Removal integrates whatever divergence is left; below the rounding floor that is noise,
    // and a field that is already divergence-free is returned unchanged.
    if opts.model == Model::West && opts.divergence_removal && max_div > rounding_floor {
        report.removal_max_dw_m_per_s = Some(ops::remove_divergence(&grid, &u, &v, &mut w));
        lap("removal", &mut steps);
    }
    // The backend's own breakdown (GPU preparation, solve) follows the pipeline's steps.
    steps.append(&mut report.step_seconds);
    report.step_seconds = steps;
    Ok((
        WindField {
            grid,
            u,
            v,
            w,
            stability: guess.stability,
            profile: opts.profile,
            min_height_agl_m: opts.min_height_agl_m,
            displacement_m: opts.displacement_m,
            ignored_stations: guess.ignored,
            report,
        },
        backend,
    ))
}
