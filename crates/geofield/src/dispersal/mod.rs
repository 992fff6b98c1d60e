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
//!   a-priori bound (`radius.rs`): the neglected part is ≤ tolerance × band maximum at every
//!   cell. Trees binned by tile; a tiled gather. O(cells × density × πR²).
//! - [`Method::NearFar`]: for any kernel (the fat-tailed lognormal and 2Dt too): the exact sum
//!   within a radius R with a smooth blend, plus the far field on a lattice by FFT (Lagrange
//!   spreading and interpolation), with a per-cell bound certified after the run: the error is
//!   ≤ tolerance × band maximum at every cell, or the lattice is refined, or the method refuses
//!   (`nearfar.rs`).
//! - [`Method::Auto`]: the cheapest of exact, cutoff and near/far by a cost model, and why.
//!
//! Reference: Fan, Ji, Guan, Tang (2012), "A GPU-based multi-resolution algorithm for simulation
//! of seed dispersal", J Zhejiang Univ-Sci C 13(11):816-827, doi:10.1631/jzus.C1200147.

pub(crate) mod band;
mod band_exact;
mod band_nearfar;
pub(crate) mod bins;
mod cuda;
pub(crate) mod cutoff_cpu;
pub(crate) mod exact_cpu;
#[cfg(feature = "io")]
pub mod io;
// Guards on float fields read better than float literal patterns.
#[allow(clippy::redundant_guards)]
pub(crate) mod fastmath;
pub(crate) mod jet;
mod metrics;
pub(crate) mod multires_cpu;
pub mod nearfar;
mod params;
mod pieces;
pub(crate) mod pyramid;
pub(crate) mod radius;
pub(crate) mod reference;
pub(crate) mod sources;
mod strips;

use geofield_core::{GridSpec, Raster, RasterData};

use crate::{Backend, Cancel, GeofieldError};

pub use band::STRIP_ALIGN;
use band::disperse_species;
pub use metrics::{ErrorMetrics, compare};
pub use params::{Eta, Kernel, Species};
use radius::cutoff_radius;
use sources::Sources;
pub use sources::Stand;
pub use strips::{Combine, FarExchange, RowShare, Strip, disperse_rows, disperse_strips};

/// How to evaluate the sum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    Exact,
    Multires,
    Cutoff,
    /// Exact within a radius, a lattice far field beyond, with a certified bound (`nearfar.rs`).
    #[serde(rename = "nearfar")]
    NearFar,
    Auto,
}

impl Method {
    pub fn name(&self) -> &'static str {
        match self {
            Method::Exact => "exact",
            Method::Multires => "multires",
            Method::Cutoff => "cutoff",
            Method::NearFar => "nearfar",
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
    /// Of `seconds`: preparing the method (the cutoff bound, the binning, the cost model) and
    /// running it (the CPU sum, or the GPU's uploads, kernel and download: the copies are
    /// `compute_s` − `kernel_ms`); the rest is the band's statistics.
    pub prepare_s: f64,
    pub compute_s: f64,
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
    /// One band per species, named after it, in the output precision (units
    /// `seeds m-2 yr-1`).
    pub raster: Raster,
    pub reports: Vec<SpeciesReport>,
}

impl Dispersal {
    /// The maps as a raster, one band per species.
    pub fn into_raster(self) -> Raster {
        self.raster
    }

    /// The methods that ran, `/`-separated where species differ (`cutoff`, `exact/cutoff`).
    pub fn method_label(&self) -> String {
        method_label(&self.reports)
    }
}

/// The methods that ran by species' reports, `/`-separated where species differ (`cutoff`,
/// `exact/cutoff`).
pub fn method_label(reports: &[SpeciesReport]) -> String {
    let mut m: Vec<&str> = reports.iter().map(|r| r.method.name()).collect();
    m.dedup();
    m.join("/")
}

/// A step of [`disperse_with_progress`] or [`compare_exact`], for a progress display.
#[derive(Debug, Clone, Copy)]
pub enum SpeciesStep<'a> {
    /// The species at `index` starts.
    Start { index: usize, species: &'a Species },
    /// The species at `index` is done; its report carries its warnings.
    Done {
        index: usize,
        report: &'a SpeciesReport,
    },
}

/// Bytes per cell and band that [`disperse`] holds in host memory: an f64 working copy and the
/// value in the output precision.
pub fn bytes_per_cell(precision: Precision) -> usize {
    8 + match precision {
        Precision::F32 => 4,
        Precision::F64 => 8,
    }
}

/// Refuse, before anything is allocated, maps of `n_species` bands on `grid` that would not fit
/// in the machine's available memory (`MemAvailable`; no check where it cannot be read):
/// [`bytes_per_cell`] per cell and band. The error is [`geofield_core::CoreError::TooLarge`]
/// with the sizes.
pub fn check_memory(
    grid: &GridSpec,
    n_species: usize,
    precision: Precision,
) -> Result<(), GeofieldError> {
    if let Some(available) = geofield_core::available_memory_bytes() {
        grid.check_memory(
            n_species.max(1),
            bytes_per_cell(precision),
            u128::from(available),
        )?;
    }
    Ok(())
}

/// Refuse a grid whose maps would not fit in the GPU's memory: one species at a time, its f64
/// output plus as much again for partial sums. Nothing to check on the CPU. The error is
/// [`geofield_core::CoreError::TooLarge`] with the sizes.
pub fn check_device_memory(backend: &Backend, grid: &GridSpec) -> Result<(), GeofieldError> {
    check_device_memory_rows(backend, grid, grid.rows)
}

/// [`check_device_memory`] for `rows` of the grid: a process of a run split by rows whose
/// method computes only its rows on the GPU (the cutoff, and `auto`, which picks it on large
/// grids; where `auto` picks a whole-map method instead, the device's allocation fails with
/// an error naming it).
pub fn check_device_memory_rows(
    backend: &Backend,
    grid: &GridSpec,
    rows: usize,
) -> Result<(), GeofieldError> {
    if let Backend::Cuda(g) = backend {
        let band = GridSpec {
            rows: rows.clamp(1, grid.rows.max(1)),
            ..*grid
        };
        band.check_memory(2, 8, u128::from(g.info().total_memory_bytes))?;
    }
    Ok(())
}

/// The rows of the maps a process computes on its device, for [`check_device_memory_rows`]:
/// its share for the methods that compute by rows there, else the whole grid.
pub fn device_rows(method: Method, grid: &GridSpec, share: &std::ops::Range<usize>) -> usize {
    match method {
        Method::Cutoff | Method::Auto => share.len(),
        _ => grid.rows,
    }
}

/// Compute the seed density of every species on `grid`.
///
/// Grids whose maps would not fit in memory are refused before anything is allocated
/// ([`check_memory`], and on the GPU [`check_device_memory`]). On the GPU only
/// [`Precision::F32`] is computed ([`GPU_F64_REFUSED`]); [`reference_precision`] gives the
/// precision of an exact reference on a backend.
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
/// let opts = DisperseOptions::default();
/// let out = dispersal::disperse(&Backend::Cpu, &grid, &species, &stand, &opts)?;
/// assert_eq!(out.raster.n_bands(), species.len());
/// assert!(out.reports.iter().all(|r| r.max_density_per_m2 >= 0.0));
/// // The errors of the chosen method against the exact sum, band by band.
/// let errors = dispersal::compare_exact(&Backend::Cpu, &grid, &species, &stand, &out, &opts,
///     &mut |_| {})?;
/// assert!(errors.iter().all(|e| e.max_abs_over_max <= 1e-6));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn disperse(
    backend: &Backend,
    grid: &GridSpec,
    species: &[Species],
    stand: &Stand,
    opts: &DisperseOptions,
) -> Result<Dispersal, GeofieldError> {
    disperse_with_progress(
        backend,
        grid,
        species,
        stand,
        opts,
        &mut |_| {},
        &Cancel::new(),
    )
}

/// [`disperse`], calling `progress` as each species starts and ends, and stopping with
/// [`GeofieldError::Cancelled`] soon after `cancel` is set (see [`crate::cancel`]).
///
/// ```
/// use geofield::dispersal::{self, DisperseOptions};
/// use geofield::{Backend, Cancel, GeofieldError, synth};
/// use geofield_core::{Extent, GridSpec};
///
/// let extent = Extent::new(0.0, 0.0, 40.0, 30.0)?;
/// let grid = GridSpec::from_extent(extent, 1.0)?;
/// let species = synth::sbs_species();
/// let stand = synth::forest(50, &extent, 1, synth::Pattern::Uniform,
///     synth::DbhModel::Uniform15to60, &synth::SBS_SHARES);
/// let cancel = Cancel::new();
/// let mut done = 0;
/// let out = dispersal::disperse_with_progress(&Backend::Cpu, &grid, &species, &stand,
///     &DisperseOptions::default(), &mut |step| {
///         if let dispersal::SpeciesStep::Done { .. } = step { done += 1 }
///     }, &cancel)?;
/// assert_eq!(done, species.len());
/// cancel.cancel();
/// let again = dispersal::disperse_with_progress(&Backend::Cpu, &grid, &species, &stand,
///     &DisperseOptions::default(), &mut |_| {}, &cancel);
/// assert!(matches!(again, Err(GeofieldError::Cancelled)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn disperse_with_progress(
    backend: &Backend,
    grid: &GridSpec,
    species: &[Species],
    stand: &Stand,
    opts: &DisperseOptions,
    progress: &mut dyn FnMut(SpeciesStep<'_>),
    cancel: &Cancel,
) -> Result<Dispersal, GeofieldError> {
    let mut bands = Vec::with_capacity(species.len());
    let reports = disperse_each(
        backend,
        grid,
        species,
        stand,
        opts,
        progress,
        cancel,
        &mut |_, band| {
            bands.push(band);
            Ok(())
        },
    )?;
    let names = species.iter().map(|s| s.name.clone()).collect();
    Ok(Dispersal {
        raster: stack_bands(grid, names, bands)?,
        reports,
    })
}

/// [`disperse_with_progress`], handing each species' band to `sink` as soon as it is computed
/// (band `index`, in species order, in the output precision: f32 stays f32) instead of keeping
/// the maps: a caller can write or compress each band while the next species computes, and
/// hold no more maps than it wants. `sink` is called before the species' `Done` step; an error
/// from it stops the run and is returned. Returns the per-species reports.
#[allow(clippy::too_many_arguments)]
pub fn disperse_each(
    backend: &Backend,
    grid: &GridSpec,
    species: &[Species],
    stand: &Stand,
    opts: &DisperseOptions,
    progress: &mut dyn FnMut(SpeciesStep<'_>),
    cancel: &Cancel,
    sink: &mut dyn FnMut(usize, RasterData) -> Result<(), GeofieldError>,
) -> Result<Vec<SpeciesReport>, GeofieldError> {
    // Without a strip height, each species' map comes as one strip.
    disperse_strips(
        backend,
        grid,
        species,
        stand,
        opts,
        usize::MAX,
        progress,
        cancel,
        &mut |s: Strip| sink(s.band, s.data),
    )
}

/// Species `sp`'s map of `stand` by the cutoff method on the GPU, in f32, written straight into
/// the device buffer `dst` (at least one value per cell) for a caller that keeps the map there
/// (the forest's yearly loop): the values [`disperse_each`] would hand back with the same options
/// and `Method::Cutoff`, without the copy. Returns false, having done nothing, where the cutoff
/// would not run as a cutoff (its radius reaches across a torus: the caller computes the map
/// the usual way).
pub(crate) fn cutoff_into_device(
    gpu: &geofield_cuda::Gpu,
    grid: &GridSpec,
    sp: &Species,
    stand: &Stand,
    opts: &DisperseOptions,
    dst: &mut geofield_cuda::CudaSlice<f32>,
) -> Result<bool, GeofieldError> {
    let sources = Sources::for_species(stand, 0, sp, grid, opts.torus);
    let b = cutoff_radius(grid, &sp.kernel, &sources, opts.tolerance);
    if opts.torus && b.radius_m >= grid.width_m().min(grid.height_m()) / 2.0 {
        return Ok(false);
    }
    let bins = bins::build_bins(grid, &sources, b.radius_m, opts.torus);
    cuda::cutoff_into(gpu, grid, &sp.kernel, &bins, b.radius_m, dst)?;
    Ok(true)
}

/// The errors of each band of `result` (from [`disperse`] with the same inputs and `opts`)
/// against the exact method run on `backend` in its [`reference_precision`], one species at a
/// time; `progress` is called as each exact run starts and ends.
pub fn compare_exact(
    backend: &Backend,
    grid: &GridSpec,
    species: &[Species],
    stand: &Stand,
    result: &Dispersal,
    opts: &DisperseOptions,
    progress: &mut dyn FnMut(SpeciesStep<'_>),
) -> Result<Vec<ErrorMetrics>, GeofieldError> {
    if result.raster.grid != *grid || result.raster.n_bands() != species.len() {
        return Err(GeofieldError::Invalid(format!(
            "the result to compare has {} band(s) of {} x {} cells; the inputs give {} species on {} x {} cells",
            result.raster.n_bands(),
            result.raster.grid.cols,
            result.raster.grid.rows,
            species.len(),
            grid.cols,
            grid.rows
        )));
    }
    let exact_opts = DisperseOptions {
        method: Method::Exact,
        precision: reference_precision(backend),
        ..*opts
    };
    let mut errors = Vec::with_capacity(species.len());
    for (index, sp) in species.iter().enumerate() {
        progress(SpeciesStep::Start { index, species: sp });
        let sources = Sources::for_species(stand, index as u32, sp, grid, opts.torus);
        let (exact, report) = disperse_species(backend, grid, sp, &sources, &exact_opts)?;
        progress(SpeciesStep::Done {
            index,
            report: &report,
        });
        errors.push(compare(&result.raster.band_f64(index), &exact.to_f64()));
    }
    Ok(errors)
}

/// Stack bands (one per name, in order, each one grid's cells in one precision, as
/// [`disperse_each`] hands them out) into one raster.
pub fn stack_bands(
    grid: &GridSpec,
    names: Vec<String>,
    bands: Vec<RasterData>,
) -> Result<Raster, GeofieldError> {
    // Bands appended to the first band's buffer (grown once, in place where the allocator
    // can): no per-element pass over maps of hundreds of MB.
    let total = grid.n_cells() * bands.len();
    let mut iter = bands.into_iter();
    let data = match iter.next() {
        None => RasterData::F32(Vec::new()),
        Some(RasterData::F32(mut out)) => {
            out.reserve_exact(total.saturating_sub(out.len()));
            for b in iter {
                match b {
                    RasterData::F32(v) => out.extend_from_slice(&v),
                    RasterData::F64(v) => out.extend(v.iter().map(|&x| x as f32)),
                }
            }
            RasterData::F32(out)
        }
        Some(RasterData::F64(mut out)) => {
            out.reserve_exact(total.saturating_sub(out.len()));
            for b in iter {
                match b {
                    RasterData::F64(v) => out.extend_from_slice(&v),
                    RasterData::F32(v) => out.extend(v.iter().map(|&x| f64::from(x))),
                }
            }
            RasterData::F64(out)
        }
    };
    Ok(Raster::new(*grid, names, data)?)
}

/// The relative error of each band of `approx` against the same band of `reference`, as f32:
/// |a − r| / r where r ≥ 1e-6 × the band's maximum (and r > 0), else 0. For maps of a method's
/// error (the multires error map).
pub fn relative_error_raster(approx: &Raster, reference: &Raster) -> Result<Raster, GeofieldError> {
    if approx.grid != reference.grid || approx.n_bands() != reference.n_bands() {
        return Err(GeofieldError::Invalid(format!(
            "relative error of rasters of different shapes: {} band(s) of {} x {} cells vs {} of {} x {}",
            approx.n_bands(),
            approx.grid.cols,
            approx.grid.rows,
            reference.n_bands(),
            reference.grid.cols,
            reference.grid.rows
        )));
    }
    let mut v = Vec::with_capacity(approx.data.len());
    for band in 0..approx.n_bands() {
        let (x, y) = (approx.band_f64(band), reference.band_f64(band));
        let m = y.iter().cloned().fold(0.0f64, f64::max);
        v.extend(x.iter().zip(&y).map(|(p, q)| {
            if *q >= 1e-6 * m && *q > 0.0 {
                ((p - q).abs() / q) as f32
            } else {
                0.0
            }
        }));
    }
    Ok(Raster::new(
        approx.grid,
        approx.band_names.clone(),
        RasterData::F32(v),
    )?)
}
