//! One species' band: the method `auto` picks, the dispatch to the CPU or GPU kernels of the
//! method, and the species' report.

use std::time::Instant;

use geofield_core::{GridSpec, RasterData};
use rayon::prelude::*;

use super::RowShare;
use super::band_exact::{rows_of, run_exact};
use super::band_nearfar::run_nearfar;
use super::bins::build_bins_in;
use super::sources::Sources;
use super::{
    DisperseOptions, GPU_F64_REFUSED, Method, Precision, Species, SpeciesReport, bins, cuda,
    cutoff_cpu, exact_cpu, multires_cpu, nearfar, pieces, pyramid, radius,
};
use crate::{Backend, Cancel, GeofieldError};

/// One species' map in the output precision.
#[derive(Debug, Clone, PartialEq)]
pub enum Band {
    F32(Vec<f32>),
    F64(Vec<f64>),
}

impl Band {
    pub fn len(&self) -> usize {
        match self {
            Band::F32(v) => v.len(),
            Band::F64(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn to_f64(&self) -> Vec<f64> {
        match self {
            Band::F32(v) => v.iter().map(|&x| x as f64).collect(),
            Band::F64(v) => v.clone(),
        }
    }
    /// The values in precision `p` (f32 stays f32 for F32; no widening unless F64 is asked).
    pub fn into_data(self, p: Precision) -> RasterData {
        match (self, p) {
            (Band::F32(v), Precision::F32) => RasterData::F32(v),
            (Band::F64(v), Precision::F64) => RasterData::F64(v),
            (Band::F32(v), Precision::F64) => {
                RasterData::F64(v.into_iter().map(f64::from).collect())
            }
            (Band::F64(v), Precision::F32) => {
                RasterData::F32(v.into_iter().map(|x| x as f32).collect())
            }
        }
    }
    pub(super) fn from_f64(v: Vec<f64>, p: Precision) -> Self {
        match p {
            Precision::F64 => Band::F64(v),
            Precision::F32 => Band::F32(v.into_iter().map(|x| x as f32).collect()),
        }
    }
    /// (Σ, max) of rows of `cols` values added to `acc`: each row's partial sum in parallel,
    /// the rows added in order, so the result depends neither on the thread count nor on how
    /// the map was cut into strips of rows.
    fn add_sum_and_max(&self, cols: usize, acc: &mut (f64, f64)) {
        fn of<T: Copy + Sync + Into<f64>>(v: &[T], cols: usize, acc: &mut (f64, f64)) {
            let parts: Vec<(f64, f64)> = v
                .par_chunks(cols.max(1))
                .map(|c| {
                    c.iter().fold((0.0, 0.0f64), |(s, m), &x| {
                        let x: f64 = x.into();
                        (s + x, m.max(x))
                    })
                })
                .collect();
            for (ps, pm) in parts {
                *acc = (acc.0 + ps, acc.1.max(pm));
            }
        }
        match self {
            Band::F32(v) => of(v, cols, acc),
            Band::F64(v) => of(v, cols, acc),
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
    let mut whole = None;
    let report = disperse_species_strips(
        backend,
        grid,
        sp,
        sources,
        opts,
        cancel,
        usize::MAX,
        &RowShare::whole(grid),
        &mut |_, b| {
            whole = Some(b);
            Ok(())
        },
    )?;
    let band = whole.unwrap_or_else(|| Band::from_f64(Vec::new(), opts.precision));
    Ok((band, report))
}

/// Rows a strip of [`disperse_species_strips`] starts at a multiple of: a GeoTIFF tile's
/// height, and a multiple of the CPU's and the GPU's output tiles, so that strips change no
/// value.
pub const STRIP_ALIGN: usize = 256;
const _: () = assert!(
    STRIP_ALIGN.is_multiple_of(cutoff_cpu::ROW_ALIGN)
        && STRIP_ALIGN.is_multiple_of(geofield_cuda::dispersal::CutoffStrips::ROW_ALIGN as usize)
);

/// One species on `grid`, handed to `emit` as strips of rows in order: `emit(row0, band)` with
/// `band` holding whole rows from `row0`. The cutoff method computes strip by strip
/// (`strip_rows`, rounded up to a multiple of [`STRIP_ALIGN`]), so that the caller compresses
/// or writes a strip while the next one computes; the other methods compute the whole map and
/// hand it out as one strip. Every cell has the value of the whole-map run. The report's
/// compute time leaves out the time spent in `emit`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn disperse_species_strips(
    backend: &Backend,
    grid: &GridSpec,
    sp: &Species,
    sources: &Sources,
    opts: &DisperseOptions,
    cancel: &Cancel,
    strip_rows: usize,
    share: &RowShare<'_>,
    emit: &mut dyn FnMut(usize, Band) -> Result<(), GeofieldError>,
) -> Result<SpeciesReport, GeofieldError> {
    let mine = share.rows.start.min(grid.rows)..share.rows.end.min(grid.rows);
    if !mine.start.is_multiple_of(STRIP_ALIGN) {
        return Err(GeofieldError::Invalid(format!(
            "a share of rows must start at a multiple of {STRIP_ALIGN}, not {}",
            mine.start
        )));
    }
    let whole = mine == (0..grid.rows);
    cancel.check()?;
    let start = Instant::now();
    if backend.is_cuda() && opts.precision == Precision::F64 {
        return Err(GeofieldError::Invalid(GPU_F64_REFUSED.into()));
    }
    // The trees held in pieces (`share.trees`): the methods whose every cell sees every tree,
    // and the torus (whose periodic images a piece does not know), gather them all now; the
    // cutoff, near/far and `auto` combine what they need of the whole stand and gather below.
    let mut pieces = share.trees.filter(|ex| ex.parts() > 1);
    let gathered;
    let mut sources = sources;
    if let Some(ex) = pieces
        && (opts.torus || !matches!(opts.method, Method::Cutoff | Method::Auto | Method::NearFar))
    {
        gathered = pieces::gather_all(sources, ex);
        sources = &gathered;
        pieces = None;
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
    // The whole stand's count, Σw and extent (combined over the pieces).
    let mut whole_stand = None;
    if matches!(method, Method::Cutoff | Method::Auto | Method::NearFar) {
        let (st, lower) = match pieces {
            Some(ex) => pieces::combined(grid, &kernel, sources, ex),
            None => (
                nearfar::SourceStats::of(grid, sources),
                radius::max_lower_bound(grid, &kernel, sources),
            ),
        };
        let b = radius::bound_from(&kernel, st.w_total, lower, opts.tolerance);
        report.trees_contributing = st.n;
        whole_stand = Some(st);
        bound = Some(b);
        report.radius_m = Some(b.radius_m);
        report.bound_rel = Some(b.bound_rel);
    }
    let n_trees = report.trees_contributing as f64;
    // Cutoff with a radius that reaches across the torus: the minimum-image sum is summed whole.
    let torus_whole = opts.torus && bound.is_some_and(|b| b.radius_m >= lx.min(ly) / 2.0);
    let mut bins = None;
    let mut frame = None;
    if let (Some(b), false) = (bound, torus_whole)
        && matches!(method, Method::Cutoff | Method::Auto)
    {
        frame = pieces.map(|ex| pieces::frame(grid, sources, b.radius_m, ex));
        // A piece's trees are counted in the whole stand's tiles (the pairs below, the halo's
        // tiles); its rows' trees are binned once received.
        let tb = match frame {
            Some(f) => bins::Bins::count_in(
                sources,
                grid,
                b.radius_m,
                bins::tile_size_for(b.radius_m, grid.cell_size_m),
                Some(f),
            ),
            None => build_bins_in(grid, sources, b.radius_m, opts.torus, None),
        };
        let pairs = tb.visited_pairs(grid, b.radius_m, cutoff_cpu::OUT_TILE);
        // Whole numbers below 2^53: the pieces' sum is the whole stand's in any order.
        report.pairs = Some(pieces.map_or(pairs, |ex| ex.sum(pairs)));
        bins = Some(tb);
    }
    let mut nf = None;
    let cost = if backend.is_cuda() {
        nearfar::CostModel::GPU
    } else {
        nearfar::CostModel::CPU
    };
    // `auto` plans a near/far split only where the cutoff or the exact sum costs more than the
    // planning: small maps go straight to them.
    let cheap = report
        .pairs
        .filter(|_| bins.is_some())
        .unwrap_or(f64::INFINITY)
        .min(cells * n_trees)
        <= cost.plan;
    // `auto` runs a split only where it beats the cutoff and the exact sum: splits whose near
    // field alone costs more are not planned.
    let beat = match method {
        Method::Auto => report
            .pairs
            .filter(|_| bins.is_some())
            .unwrap_or(f64::INFINITY)
            .min(cells * n_trees),
        _ => f64::INFINITY,
    };
    if let (Some(b), Some(st)) = (bound, &whole_stand)
        && (method == Method::NearFar || (method == Method::Auto && !cheap))
    {
        // Several processes (`share.combine`): each evaluates its share of the candidates.
        let combine = share.combine.map(|c| move |v: [f64; 2]| c(Ok(v)));
        nf = nearfar::plan_shared(
            grid,
            &kernel,
            st,
            opts.tolerance,
            b.max_lower_bound,
            b.radius_m,
            opts.torus,
            &cost,
            beat,
            (share.part, share.parts),
            combine.as_ref().map(|c| c as &nearfar::Agree<'_>),
        )?;
        if nf.is_none() && method == Method::NearFar && st.w_total > 0.0 {
            return Err(GeofieldError::Unsupported(format!(
                "near/far: no split of this kernel meets the tolerance {:.1e} within the lattice \
                 size limit; use the cutoff or exact method",
                opts.tolerance
            )));
        }
    }
    if method == Method::Auto {
        let exact_pairs = cells * n_trees;
        let cutoff_pairs = match (&bins, report.pairs) {
            (Some(_), Some(p)) => p,
            _ => f64::INFINITY,
        };
        let nf_cost = nf.as_ref().map_or(f64::INFINITY, |(p, _)| p.cost);
        if nf_cost < cutoff_pairs.min(exact_pairs) {
            method = Method::NearFar;
            report.note = Some(format!(
                "auto: near/far costs {:.2e} pair-equivalents vs {:.2e} pairs for the cutoff (R = {:.1} m) and {:.2e} for exact",
                nf_cost,
                cutoff_pairs,
                report.radius_m.unwrap_or(f64::INFINITY),
                exact_pairs
            ));
        } else if cutoff_pairs < exact_pairs {
            method = Method::Cutoff;
            report.note = Some(format!(
                "auto: cutoff at R = {:.1} m visits {:.2e} pairs vs {:.2e} for exact{}",
                report.radius_m.unwrap_or(0.0),
                cutoff_pairs,
                exact_pairs,
                if nf_cost.is_finite() {
                    format!(" and {nf_cost:.2e} for near/far")
                } else {
                    String::new()
                }
            ));
        } else {
            method = Method::Exact;
            report.note = Some(format!(
                "auto: exact ({:.2e} pairs) is cheaper than a cutoff at R = {:.1} m{}",
                exact_pairs,
                report.radius_m.unwrap_or(f64::INFINITY),
                if nf_cost.is_finite() {
                    format!(" and near/far ({nf_cost:.2e})")
                } else {
                    String::new()
                }
            ));
            report.radius_m = None;
            report.bound_rel = None;
        }
    }
    report.method = method;
    // The trees held in pieces, gathered as the method needs them: the cutoff, those its rows'
    // bins visit; near/far, its own (its near field's halo and lattice below); the others, all.
    let received;
    if let Some(ex) = pieces {
        match (&bins, bound) {
            (Some(tb), Some(b)) if method == Method::Cutoff => {
                received = pieces::halo(grid, sources, tb, b.radius_m, &mine, ex);
                bins = Some(build_bins_in(grid, &received, b.radius_m, false, frame));
                sources = &received;
            }
            _ if method == Method::NearFar && nf.is_some() => bins = None,
            _ => {
                received = pieces::gather_all(sources, ex);
                bins = None;
                sources = &received;
            }
        }
    }
    cancel.check()?;
    let computing = Instant::now();
    report.prepare_s = (computing - start).as_secs_f64();
    let strip = strip_rows
        .max(1)
        .div_ceil(STRIP_ALIGN)
        .saturating_mul(STRIP_ALIGN);
    let mut stats = (0.0f64, 0.0f64);
    let mut emit_s = 0.0;
    let mut hand_on = |row0: usize, band: Band, stats: &mut (f64, f64)| {
        band.add_sum_and_max(grid.cols, stats);
        let t = Instant::now();
        let r = emit(row0, band);
        emit_s += t.elapsed().as_secs_f64();
        r
    };
    let band = if method == Method::Cutoff && bins.is_some() && (strip < grid.rows || !whole) {
        {
            let (tb, r) = (bins.as_ref(), report.radius_m.unwrap_or(0.0));
            let Some(tb) = tb else {
                return Err(GeofieldError::Invalid("cutoff without bins".into()));
            };
            match backend {
                Backend::Cpu => {
                    for row0 in mine.clone().step_by(strip) {
                        let rows = row0..row0.saturating_add(strip).min(mine.end);
                        let v = cutoff_cpu::cutoff_rows(grid, &kernel, tb, r, None, cancel, rows);
                        cancel.check()?;
                        hand_on(row0, Band::from_f64(v, opts.precision), &mut stats)?;
                    }
                }
                Backend::Cuda(gpu) => {
                    let mut ms = 0.0;
                    match cuda::cutoff_strips(gpu, grid, &kernel, tb, r, opts.precision)? {
                        Some(mut strips) => {
                            for row0 in mine.clone().step_by(strip) {
                                let n = strip.min(mine.end - row0);
                                let (b, k) = cuda::strip_rows(&mut strips, row0, n)?;
                                ms += k;
                                hand_on(row0, b, &mut stats)?;
                            }
                        }
                        None => hand_on(
                            mine.start,
                            Band::from_f64(vec![0.0; mine.len() * grid.cols], opts.precision),
                            &mut stats,
                        )?,
                    }
                    report.kernel_ms = Some(ms);
                }
            }
        }
        None
    } else {
        Some(match method {
            Method::Exact | Method::Auto => {
                report.pairs = Some(cells * sources.len() as f64);
                run_exact(
                    backend,
                    grid,
                    &kernel,
                    sources,
                    opts,
                    &mut report,
                    cancel,
                    &mine,
                )?
            }
            Method::NearFar => match (nf.take(), &whole_stand) {
                (Some((plan, env)), Some(st)) => {
                    let low = bound.map_or(0.0, |b| b.max_lower_bound);
                    match run_nearfar(
                        backend,
                        grid,
                        &kernel,
                        sources,
                        st,
                        pieces,
                        opts,
                        plan,
                        &env,
                        low,
                        &mut report,
                        cancel,
                        share,
                    ) {
                        Ok(b) => b,
                        // `auto` falls back to the exact sum when the certificate fails.
                        Err(GeofieldError::Unsupported(why)) if opts.method == Method::Auto => {
                            report.warnings.push(why);
                            // Every process refused alike (the certificate's values are the
                            // whole stand's): the pieces are gathered for the exact sum.
                            let all;
                            let sources = match pieces {
                                Some(ex) => {
                                    all = pieces::gather_all(sources, ex);
                                    &all
                                }
                                None => sources,
                            };
                            report.method = Method::Exact;
                            report.radius_m = None;
                            report.bound_rel = None;
                            report.pairs = Some(cells * sources.len() as f64);
                            run_exact(
                                backend,
                                grid,
                                &kernel,
                                sources,
                                opts,
                                &mut report,
                                cancel,
                                &mine,
                            )?
                        }
                        Err(e) => return Err(e),
                    }
                }
                // No tree carries weight: the band is zero.
                _ => Band::from_f64(vec![0.0; mine.len() * grid.cols], opts.precision),
            },
            Method::Cutoff => match &bins {
                Some(tb) => {
                    let r = report.radius_m.unwrap_or(0.0);
                    match backend {
                        Backend::Cpu => Band::from_f64(
                            cutoff_cpu::cutoff_rows(
                                grid,
                                &kernel,
                                tb,
                                r,
                                None,
                                cancel,
                                mine.clone(),
                            ),
                            opts.precision,
                        ),
                        Backend::Cuda(gpu) => {
                            let (b, ms) = cuda::cutoff(gpu, grid, &kernel, tb, r, opts.precision)?;
                            report.kernel_ms = Some(ms);
                            rows_of(b, grid.cols, &mine)
                        }
                    }
                }
                None => {
                    report.note = Some("cutoff radius reaches across the torus: the minimum-image sum is evaluated whole (no truncation)".into());
                    report.pairs = Some(cells * sources.len() as f64);
                    run_exact(
                        backend,
                        grid,
                        &kernel,
                        sources,
                        opts,
                        &mut report,
                        cancel,
                        &mine,
                    )?
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
                    Backend::Cpu => {
                        multires_cpu::multires_rows(grid, &kernel, &pyr, &rhos, cancel, &mine)
                    }
                    Backend::Cuda(gpu) => {
                        let (v, ms) = cuda::multires(gpu, grid, &kernel, &pyr, &rhos)?;
                        report.kernel_ms = Some(ms);
                        v[mine.start * grid.cols..mine.end * grid.cols].to_vec()
                    }
                };
                cancel.check()?;
                if !outside.is_empty() {
                    // The paper's pyramid covers the plot only: trees outside it are summed exactly.
                    let extra = match backend {
                        Backend::Cpu => {
                            let mut e = vec![0.0; mine.len() * grid.cols];
                            exact_cpu::exact_rows_until(
                                grid, &kernel, &outside, false, mine.start, &mut e, cancel,
                            );
                            e
                        }
                        Backend::Cuda(gpu) => {
                            let e =
                                cuda::exact(gpu, grid, &kernel, &outside, false, Precision::F64)?
                                    .0
                                    .to_f64();
                            e[mine.start * grid.cols..mine.end * grid.cols].to_vec()
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
        })
    };
    // The CPU kernels left the cells they skipped at zero: no partial band leaves here.
    cancel.check()?;
    if let Some(band) = band
        && !mine.is_empty()
    {
        hand_on(mine.start, band, &mut stats)?;
    }
    report.compute_s = computing.elapsed().as_secs_f64() - emit_s;
    let (sum, max) = stats;
    report.seeds_on_grid = sum * grid.cell_size_m * grid.cell_size_m;
    report.max_density_per_m2 = max;
    report.seconds = start.elapsed().as_secs_f64() - emit_s;
    Ok(report)
}
