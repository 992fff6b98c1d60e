//! Seed dispersal: expected seed density maps from a stem map.
//!
//! # Model
//!
//! For each species s and cell centre c (Fan et al. 2012, Eq. 1-2, generalised as in SORTIE-ND):
//!
//! ```text
//! R_s(c) = Σ_k (STR_s / η_s) (DBH_k / 30)^β_s K_s(d(k, c))     [seeds m⁻² (yr⁻¹)]
//! ```
//!
//! over the trees k of species s with DBH_k ≥ DBH_min,s (cm), d the distance in metres from the
//! tree to the cell centre. K is the Weibull/exponential-power kernel exp(−D d^θ), the lognormal
//! exp(−½ (ln(d/X0)/Xb)²) or the 2Dt (1 + d²/u)^−(p+1); η is a number (1 reproduces the paper) or
//! the analytic integral of K over the plane ([`Kernel::eta_analytic`]). Open plot by default
//! (trees outside the grid still contribute); on a torus distances use the minimum image.
//!
//! # Methods
//!
//! - [`Method::Exact`]: every tree to every cell, O(cells × trees).
//! - [`Method::Multires`]: a faithful port of the paper's quadtree method (unweighted node
//!   centres, per-species opening distance ρ); no a-priori bound: on the paper's cases its
//!   largest relative error against the exact sum is 5e-4 to 3e-3 and its mean 2e-4 to 3e-4
//!   (docs/benchmarks.md, `geofield bench dispersal`).
//! - [`Method::Cutoff`]: the sum over trees within a radius R chosen from the tolerance with an
//!   a-priori bound (see [`radius`]): the neglected part is ≤ tolerance × band maximum at every
//!   cell. Trees binned by tile; a tiled gather. O(cells × density × πR²).
//! - [`Method::Auto`]: the cheaper of exact and cutoff by a pair-count cost model.
//!
//! Reference: Fan, Ji, Guan, Tang (2012), "A GPU-based multi-resolution algorithm for simulation
//! of seed dispersal", J Zhejiang Univ-Sci C 13(11):816-827, doi:10.1631/jzus.C1200147.

pub mod bins;
mod cuda;
pub mod cutoff_cpu;
pub mod exact_cpu;
#[cfg(feature = "io")]
pub mod io;
// Guards on float fields read better than float literal patterns.
#[allow(clippy::redundant_guards)]
pub(crate) mod fastmath;
pub mod metrics;
pub mod multires_cpu;
pub mod params;
pub mod pyramid;
pub mod radius;
pub mod reference;
pub mod sources;

use std::time::Instant;

use geofield_core::{GridSpec, Raster, RasterData};

use crate::{Backend, GeofieldError};

pub use metrics::{ErrorMetrics, compare};
pub use params::{Eta, Kernel, Species};
pub use radius::{CutoffBound, cutoff_radius};
pub use sources::{Sources, Stand};

/// How to evaluate the sum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    Exact,
    Multires,
    Cutoff,
    Auto,
}

impl Method {
    pub fn name(&self) -> &'static str {
        match self {
            Method::Exact => "exact",
            Method::Multires => "multires",
            Method::Cutoff => "cutoff",
            Method::Auto => "auto",
        }
    }
}

/// Precision of the output (and of the GPU's accumulation target).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    F32,
    F64,
}

/// Why [`Precision::F64`] is refused on the GPU: its kernels compute in f32, so an f64 map
/// from them would claim digits it does not have.
pub const GPU_F64_REFUSED: &str = "precision F64 is not available on the GPU: its dispersal \
     kernels compute distances and kernel values in f32 (compensated sums, ~1e-6 relative to \
     the f64 exact sum); use precision F32 on the GPU, or the CPU backend for f64";

/// The precision of an exact reference on `backend`: f64 on the CPU, f32 on the GPU (the only
/// one its kernels compute in).
pub fn reference_precision(backend: &Backend) -> Precision {
    if backend.is_cuda() {
        Precision::F32
    } else {
        Precision::F64
    }
}

/// Options of [`disperse`].
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct DisperseOptions {
    pub method: Method,
    /// Cutoff tolerance: neglected contribution ≤ tolerance × band maximum.
    pub tolerance: f64,
    /// Output precision. On the GPU only [`Precision::F32`]: its kernels compute in f32, and
    /// [`Precision::F64`] is refused there ([`GPU_F64_REFUSED`]) rather than written as f64.
    pub precision: Precision,
    pub torus: bool,
    /// Multi-resolution variant B (ρ_q = ρ at every level) instead of A (ρ·2^(q−1)).
    pub multires_variant_b: bool,
}

impl Default for DisperseOptions {
    fn default() -> Self {
        Self {
            method: Method::Auto,
            tolerance: 1e-6,
            precision: Precision::F64,
            torus: false,
            multires_variant_b: false,
        }
    }
}

/// One species' map in the output precision.
#[derive(Debug, Clone, PartialEq)]
pub enum Band {
    F32(Vec<f32>),
    F64(Vec<f64>),
}

impl Band {
    pub fn to_f64(&self) -> Vec<f64> {
        match self {
            Band::F32(v) => v.iter().map(|&x| x as f64).collect(),
            Band::F64(v) => v.clone(),
        }
    }
    fn from_f64(v: Vec<f64>, p: Precision) -> Self {
        match p {
            Precision::F64 => Band::F64(v),
            Precision::F32 => Band::F32(v.into_iter().map(|x| x as f32).collect()),
        }
    }
    fn sum_and_max(&self) -> (f64, f64) {
        let f = |it: &mut dyn Iterator<Item = f64>| {
            it.fold((0.0, 0.0f64), |(s, m), x| (s + x, m.max(x)))
        };
        match self {
            Band::F32(v) => f(&mut v.iter().map(|&x| x as f64)),
            Band::F64(v) => f(&mut v.iter().copied()),
        }
    }
}

/// What happened for one species.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SpeciesReport {
    pub name: String,
    /// Trees with DBH ≥ the species minimum (after periodic images: before).
    pub trees_contributing: usize,
    /// The method that ran (never `auto`).
    pub method: Method,
    /// Why `auto` chose it, or a note on the method.
    pub note: Option<String>,
    /// Cutoff radius and its guaranteed relative bound.
    pub radius_m: Option<f64>,
    pub bound_rel: Option<f64>,
    /// Multi-resolution opening distance ρ.
    pub rho_m: Option<f64>,
    pub seconds: f64,
    /// GPU kernel time by device events.
    pub kernel_ms: Option<f64>,
    /// Tree-cell pairs evaluated (visited, for the cutoff).
    pub pairs: Option<f64>,
    /// Σ_c R(c)·h²: seeds landing on the grid.
    pub seeds_on_grid: f64,
    pub max_density_per_m2: f64,
    pub warnings: Vec<String>,
}

/// The maps (one band per species, in species order) and per-species reports.
#[derive(Debug, Clone)]
pub struct Dispersal {
    pub raster: Raster,
    pub reports: Vec<SpeciesReport>,
}

/// Compute the seed density of every species on `grid`.
///
/// ```
/// use geofield::dispersal::{self, DisperseOptions};
/// use geofield::{Backend, synth};
/// use geofield_core::{Extent, GridSpec};
///
/// let extent = Extent::new(0.0, 0.0, 40.0, 30.0)?;
/// let grid = GridSpec::from_extent(extent, 1.0)?;
/// let species = synth::sbs_species();
/// let stand = synth::forest(50, &extent, 1, synth::Pattern::Uniform,
///     synth::DbhModel::Uniform15to60, &synth::SBS_SHARES);
/// let out = dispersal::disperse(&Backend::Cpu, &grid, &species, &stand,
///     &DisperseOptions::default())?;
/// assert_eq!(out.raster.n_bands(), species.len());
/// assert!(out.reports.iter().all(|r| r.max_density_per_m2 >= 0.0));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn disperse(
    backend: &Backend,
    grid: &GridSpec,
    species: &[Species],
    stand: &Stand,
    opts: &DisperseOptions,
) -> Result<Dispersal, GeofieldError> {
    let mut bands = Vec::with_capacity(species.len());
    let mut reports = Vec::with_capacity(species.len());
    for (i, sp) in species.iter().enumerate() {
        let sources = Sources::for_species(stand, i as u32, sp, grid, opts.torus);
        let (band, report) = disperse_species(backend, grid, sp, &sources, opts)?;
        bands.push(band);
        reports.push(report);
    }
    let names = species.iter().map(|s| s.name.clone()).collect();
    Ok(Dispersal {
        raster: bands_to_raster(grid, names, bands, opts.precision)?,
        reports,
    })
}

/// Stack per-species bands (in species order) into one raster in `precision`.
pub fn bands_to_raster(
    grid: &GridSpec,
    names: Vec<String>,
    bands: Vec<Band>,
    precision: Precision,
) -> Result<Raster, GeofieldError> {
    let data = match precision {
        Precision::F64 => RasterData::F64(bands.iter().flat_map(|b| b.to_f64()).collect()),
        Precision::F32 => RasterData::F32(
            bands
                .into_iter()
                .flat_map(|b| match b {
                    Band::F32(v) => v,
                    Band::F64(v) => v.into_iter().map(|x| x as f32).collect(),
                })
                .collect(),
        ),
    };
    Ok(Raster::new(*grid, names, data)?)
}

/// One species on `grid` from its prepared sources.
pub fn disperse_species(
    backend: &Backend,
    grid: &GridSpec,
    sp: &Species,
    sources: &Sources,
    opts: &DisperseOptions,
) -> Result<(Band, SpeciesReport), GeofieldError> {
    let start = Instant::now();
    if backend.is_cuda() && opts.precision == Precision::F64 {
        return Err(GeofieldError::Invalid(GPU_F64_REFUSED.into()));
    }
    let kernel = sp.kernel;
    let cells = grid.n_cells() as f64;
    let mut report = SpeciesReport {
        name: sp.name.clone(),
        trees_contributing: sources.len(),
        method: opts.method,
        note: None,
        radius_m: None,
        bound_rel: None,
        rho_m: None,
        seconds: 0.0,
        kernel_ms: None,
        pairs: None,
        seeds_on_grid: 0.0,
        max_density_per_m2: 0.0,
        warnings: Vec::new(),
    };
    let (lx, ly) = (grid.width_m(), grid.height_m());
    if opts.torus {
        let ratio = kernel.eval(lx.min(ly) / 2.0) / kernel.peak();
        if ratio > 1e-6 {
            report.warnings.push(format!(
                "torus of {:.0} m x {:.0} m is small for this kernel: K(L/2)/K(peak) = {ratio:.1e} > 1e-6, so the minimum image differs from the periodic sum",
                lx, ly
            ));
        }
    }
    let mut method = opts.method;
    let mut bound = None;
    if matches!(method, Method::Cutoff | Method::Auto) {
        let b = cutoff_radius(grid, &kernel, sources, opts.tolerance);
        bound = Some(b);
        report.radius_m = Some(b.radius_m);
        report.bound_rel = Some(b.bound_rel);
    }
    // Cutoff with a radius that reaches across the torus: the minimum-image sum is summed whole.
    let torus_whole = opts.torus && bound.is_some_and(|b| b.radius_m >= lx.min(ly) / 2.0);
    let mut bins = None;
    if let (Some(b), false) = (bound, torus_whole)
        && matches!(method, Method::Cutoff | Method::Auto)
    {
        {
            let src = if opts.torus {
                sources.with_periodic_images(lx, ly, b.radius_m)
            } else {
                sources.clone()
            };
            let tb = bins::Bins::build(
                &src,
                grid,
                b.radius_m,
                bins::tile_size_for(b.radius_m, grid.cell_size_m),
            );
            report.pairs = Some(tb.visited_pairs(grid, b.radius_m, cutoff_cpu::OUT_TILE));
            bins = Some(tb);
        }
    }
    if method == Method::Auto {
        let exact_pairs = cells * sources.len() as f64;
        match (&bins, report.pairs) {
            (Some(_), Some(p)) if p < exact_pairs => {
                method = Method::Cutoff;
                report.note = Some(format!(
                    "auto: cutoff at R = {:.1} m visits {:.2e} pairs vs {:.2e} for exact",
                    report.radius_m.unwrap_or(0.0),
                    p,
                    exact_pairs
                ));
            }
            _ => {
                method = Method::Exact;
                report.note = Some(format!(
                    "auto: exact ({:.2e} pairs) is cheaper than a cutoff at R = {:.1} m",
                    exact_pairs,
                    report.radius_m.unwrap_or(f64::INFINITY)
                ));
                report.radius_m = None;
                report.bound_rel = None;
            }
        }
    }
    report.method = method;
    let band = match method {
        Method::Exact | Method::Auto => {
            report.pairs = Some(cells * sources.len() as f64);
            run_exact(backend, grid, &kernel, sources, opts, &mut report)?
        }
        Method::Cutoff => match &bins {
            Some(tb) => {
                let r = report.radius_m.unwrap_or(0.0);
                match backend {
                    Backend::Cpu => {
                        Band::from_f64(cutoff_cpu::cutoff(grid, &kernel, tb, r), opts.precision)
                    }
                    Backend::Cuda(gpu) => {
                        let (b, ms) = cuda::cutoff(gpu, grid, &kernel, tb, r, opts.precision)?;
                        report.kernel_ms = Some(ms);
                        b
                    }
                }
            }
            None => {
                report.note = Some("cutoff radius reaches across the torus: the minimum-image sum is evaluated whole (no truncation)".into());
                report.pairs = Some(cells * sources.len() as f64);
                run_exact(backend, grid, &kernel, sources, opts, &mut report)?
            }
        },
        Method::Multires => {
            if opts.torus {
                return Err(GeofieldError::Unsupported(
                    "the multires method is the paper's open-plot method; use exact or cutoff on a torus".into(),
                ));
            }
            let rho = sp.multires_threshold();
            report.rho_m = Some(rho);
            let (inside, outside) = sources.split_inside(grid);
            let pyr = pyramid::Pyramid::build(grid, &inside)?;
            let rhos = pyramid::opening_distances(pyr.levels, rho, opts.multires_variant_b);
            let mut v = match backend {
                Backend::Cpu => multires_cpu::multires(grid, &kernel, &pyr, &rhos),
                Backend::Cuda(gpu) => {
                    let (v, ms) = cuda::multires(gpu, grid, &kernel, &pyr, &rhos)?;
                    report.kernel_ms = Some(ms);
                    v
                }
            };
            if !outside.is_empty() {
                // The paper's pyramid covers the plot only: trees outside it are summed exactly.
                let extra = match backend {
                    Backend::Cpu => exact_cpu::exact(grid, &kernel, &outside, false),
                    Backend::Cuda(gpu) => {
                        cuda::exact(gpu, grid, &kernel, &outside, false, Precision::F64)?
                            .0
                            .to_f64()
                    }
                };
                v.iter_mut().zip(extra).for_each(|(a, b)| *a += b);
                report.note = Some(format!(
                    "{} trees outside the grid summed exactly",
                    outside.len()
                ));
            }
            Band::from_f64(v, opts.precision)
        }
    };
    let (sum, max) = band.sum_and_max();
    report.seeds_on_grid = sum * grid.cell_size_m * grid.cell_size_m;
    report.max_density_per_m2 = max;
    report.seconds = start.elapsed().as_secs_f64();
    Ok((band, report))
}

fn run_exact(
    backend: &Backend,
    grid: &GridSpec,
    kernel: &Kernel,
    sources: &Sources,
    opts: &DisperseOptions,
    report: &mut SpeciesReport,
) -> Result<Band, GeofieldError> {
    Ok(match backend {
        Backend::Cpu => Band::from_f64(
            exact_cpu::exact(grid, kernel, sources, opts.torus),
            opts.precision,
        ),
        Backend::Cuda(gpu) => {
            let (b, ms) = cuda::exact(gpu, grid, kernel, sources, opts.torus, opts.precision)?;
            report.kernel_ms = Some(ms);
            b
        }
    })
}
