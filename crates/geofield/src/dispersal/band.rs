//! One species' band: the method `auto` picks, the dispatch to the CPU or GPU kernels of the
//! method, and the species' report.

use std::time::Instant;

use geofield_core::GridSpec;
use rayon::prelude::*;

use super::sources::Sources;
use super::{
    DisperseOptions, GPU_F64_REFUSED, Kernel, Method, Precision, Species, SpeciesReport, bins,
    cuda, cutoff_cpu, cutoff_radius, exact_cpu, multires_cpu, pyramid,
};
use crate::{Backend, Cancel, GeofieldError};

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
    /// (Σ, max) of the band: partial sums over fixed chunks in parallel, added in chunk order,
    /// so the result does not depend on the thread count.
    fn sum_and_max(&self) -> (f64, f64) {
        const CHUNK: usize = 1 << 16;
        fn of<T: Copy + Sync + Into<f64>>(v: &[T]) -> (f64, f64) {
            let parts: Vec<(f64, f64)> = v
                .par_chunks(CHUNK)
                .map(|c| {
                    c.iter().fold((0.0, 0.0f64), |(s, m), &x| {
                        let x: f64 = x.into();
                        (s + x, m.max(x))
                    })
                })
                .collect();
            parts
                .into_iter()
                .fold((0.0, 0.0f64), |(s, m), (ps, pm)| (s + ps, m.max(pm)))
        }
        match self {
            Band::F32(v) => of(v),
            Band::F64(v) => of(v),
        }
    }
}

/// One species on `grid` from its prepared sources.
pub fn disperse_species(
    backend: &Backend,
    grid: &GridSpec,
    sp: &Species,
    sources: &Sources,
    opts: &DisperseOptions,
) -> Result<(Band, SpeciesReport), GeofieldError> {
    disperse_species_until(backend, grid, sp, sources, opts, &Cancel::new())
}

/// [`disperse_species`] that returns [`GeofieldError::Cancelled`] soon after `cancel` is set (the
/// CPU kernels skip the tiles and rows not started; a GPU launch runs to its end).
pub(crate) fn disperse_species_until(
    backend: &Backend,
    grid: &GridSpec,
    sp: &Species,
    sources: &Sources,
    opts: &DisperseOptions,
    cancel: &Cancel,
) -> Result<(Band, SpeciesReport), GeofieldError> {
    cancel.check()?;
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
        prepare_s: 0.0,
        compute_s: 0.0,
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
            let images;
            let src = if opts.torus {
                images = sources.with_periodic_images(lx, ly, b.radius_m);
                &images
            } else {
                sources
            };
            let tb = bins::Bins::build(
                src,
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
    cancel.check()?;
    let computing = Instant::now();
    report.prepare_s = (computing - start).as_secs_f64();
    let band = match method {
        Method::Exact | Method::Auto => {
            report.pairs = Some(cells * sources.len() as f64);
            run_exact(backend, grid, &kernel, sources, opts, &mut report, cancel)?
        }
        Method::Cutoff => match &bins {
            Some(tb) => {
                let r = report.radius_m.unwrap_or(0.0);
                match backend {
                    Backend::Cpu => Band::from_f64(
                        cutoff_cpu::cutoff(grid, &kernel, tb, r, cancel),
                        opts.precision,
                    ),
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
                run_exact(backend, grid, &kernel, sources, opts, &mut report, cancel)?
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
                Backend::Cpu => multires_cpu::multires(grid, &kernel, &pyr, &rhos, cancel),
                Backend::Cuda(gpu) => {
                    let (v, ms) = cuda::multires(gpu, grid, &kernel, &pyr, &rhos)?;
                    report.kernel_ms = Some(ms);
                    v
                }
            };
            cancel.check()?;
            if !outside.is_empty() {
                // The paper's pyramid covers the plot only: trees outside it are summed exactly.
                let extra = match backend {
                    Backend::Cpu => exact_cpu::exact_until(grid, &kernel, &outside, false, cancel),
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
    // The CPU kernels left the cells they skipped at zero: no partial band leaves here.
    cancel.check()?;
    report.compute_s = computing.elapsed().as_secs_f64();
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
    cancel: &Cancel,
) -> Result<Band, GeofieldError> {
    Ok(match backend {
        Backend::Cpu => Band::from_f64(
            exact_cpu::exact_until(grid, kernel, sources, opts.torus, cancel),
            opts.precision,
        ),
        Backend::Cuda(gpu) => {
            let (b, ms) = cuda::exact(gpu, grid, kernel, sources, opts.torus, opts.precision)?;
            report.kernel_ms = Some(ms);
            b
        }
    })
}
