//! The near/far split of one species' band ([`super::band`]): the near field by the cutoff's
//! gather with the blend, the far field on the lattice, the certificate, and the refinement of
//! the lattice while the certificate fails; on the CPU and on the GPU.

use std::cell::RefCell;

use geofield_core::GridSpec;
use geofield_cuda::wind::Exchange;

use rayon::prelude::*;

use super::band::Band;
use super::band_exact::rows_of;
use super::bins::build_bins;
use super::sources::Sources;
use super::{
    DisperseOptions, FarExchange, GPU_F64_REFUSED, Kernel, Precision, RowShare, SpeciesReport,
    bins, cuda, cutoff_cpu, nearfar, pieces,
};
use crate::{Backend, Cancel, GeofieldError};

/// The near/far split: the near field by the cutoff's gather with the blend, the far field on
/// the lattice, certified against tolerance × L (L the larger of `lower` and the near field's
/// maximum); the lattice is refined while the certificate fails, then the method refuses.
/// Returns the rows `share.rows` of the band (L is the whole map's, through `share.combine`).
///
/// `sources` are every tree of the species, or with `pieces` this process's piece of the stand
/// (`stats` are the whole stand's): then the near field's bins hold the trees within R of the
/// rows ([`pieces::near_bins`]) and each process spreads its piece to the lattice, the lattices
/// summed exactly over the processes ([`nearfar::Nodes::summed`]): one coarse lattice crosses,
/// not the trees, and every value is the one-process run's.
#[allow(clippy::too_many_arguments)]
pub(super) fn run_nearfar(
    backend: &Backend,
    grid: &GridSpec,
    kernel: &Kernel,
    sources: &Sources,
    stats: &nearfar::SourceStats,
    pieces: Option<&dyn Exchange>,
    opts: &DisperseOptions,
    mut plan: nearfar::NearFarPlan,
    env: &nearfar::Envelope,
    lower: f64,
    report: &mut SpeciesReport,
    cancel: &Cancel,
    share: &RowShare<'_>,
) -> Result<Band, GeofieldError> {
    let mine = share.rows.start.min(grid.rows)..share.rows.end.min(grid.rows);
    let big_r = plan.blend.outer_m;
    // The trees or the lattice, whichever crosses in fewer words (`share.far`); the same
    // choice on every process (the whole stand's count, the plan's lattice).
    let gathered;
    let (sources, pieces) = match pieces {
        Some(ex) if gathers_trees(share.far, stats.n, &plan.lattice) => {
            gathered = pieces::gather_all(sources, ex);
            (&gathered, None)
        }
        p => (sources, p),
    };
    let tb = match pieces {
        Some(ex) => {
            let (tb, pairs) = pieces::near_bins(grid, sources, big_r, &mine, ex);
            report.pairs = Some(pairs);
            tb
        }
        None => {
            let tb = build_bins(grid, sources, big_r, opts.torus);
            report.pairs = Some(tb.visited_pairs(grid, big_r, cutoff_cpu::OUT_TILE));
            tb
        }
    };
    report.radius_m = Some(big_r);
    let far = Far {
        sources,
        stats,
        pieces,
        fixed: nearfar::Fixed::new(plan.blend.order, stats.w_total),
    };
    if let Backend::Cuda(gpu) = backend {
        return nearfar_gpu(
            gpu, grid, kernel, &far, opts, plan, env, lower, &tb, report, share,
        );
    }
    let blend = Some(&plan.blend);
    let mut near = cutoff_cpu::cutoff_rows(grid, kernel, &tb, big_r, blend, cancel, mine.clone());
    cancel.check()?;
    // Every near term is ≥ 0 and ≤ the full term: the near field's maximum bounds the band's
    // maximum from below (over every process's rows).
    let near_max = near.par_iter().cloned().reduce(|| 0.0, f64::max);
    let near_max = share.combined([near_max, 0.0])?[0];
    let l = lower.max(near_max);
    let max_nodes = nearfar::MAX_LATTICE_CPU;
    loop {
        let nodes = far.nodes(&plan);
        let (f, bound) = nearfar::far_cpu(
            grid,
            kernel,
            &plan,
            env,
            &nodes,
            stats.n,
            stats.w_total,
            mine.clone(),
        );
        drop(nodes);
        cancel.check()?;
        let rel = if l > 0.0 { bound / l } else { 0.0 };
        if rel <= opts.tolerance && all_finite(f.par_iter().all(|x| x.is_finite()), share)? {
            near.par_iter_mut()
                .zip(f.par_iter())
                .for_each(|(a, b)| *a += b);
            nearfar_note(report, &plan, rel);
            return Ok(Band::from_f64(near, opts.precision));
        }
        plan = refine(grid, stats.region, plan, rel, opts, max_nodes, report)?;
    }
}

/// Whether a split over pieces gathers every tree rather than summing the lattices: 3 words a
/// tree received against 8 a node (two lattices of two words, sent and received).
fn gathers_trees(far: FarExchange, n_trees: usize, lat: &nearfar::Lattice) -> bool {
    match far {
        FarExchange::Trees => true,
        FarExchange::Lattice => false,
        FarExchange::Auto => 3.0 * n_trees as f64 <= 8.0 * (lat.nx as f64 * lat.ny as f64),
    }
}

/// What the far field spreads: the trees (all, or this process's piece with `pieces`), the
/// whole stand's count and Σw, and the fixed-point scale of the node weights.
struct Far<'a> {
    sources: &'a Sources,
    stats: &'a nearfar::SourceStats,
    pieces: Option<&'a dyn Exchange>,
    fixed: nearfar::Fixed,
}

impl Far<'_> {
    /// The whole stand's node weights on `plan`'s lattice (every process's piece summed).
    fn nodes(&self, plan: &nearfar::NearFarPlan) -> nearfar::Nodes {
        let nodes = nearfar::Nodes::of(&plan.lattice, plan.blend.order, self.sources, self.fixed);
        match self.pieces {
            Some(ex) => nodes.summed(ex),
            None => nodes,
        }
    }
}

/// Whether every process's rows are finite (`mine`: this process's): the processes take the
/// same branch.
fn all_finite(mine: bool, share: &RowShare<'_>) -> Result<bool, GeofieldError> {
    Ok(share.combined([f64::from(u8::from(!mine)), 0.0])?[0] == 0.0)
}

/// The plan on a lattice of half the spacing, or the refusal when none fits.
fn refine(
    grid: &GridSpec,
    region: (f64, f64, f64, f64),
    plan: nearfar::NearFarPlan,
    rel: f64,
    opts: &DisperseOptions,
    max_nodes: usize,
    report: &mut SpeciesReport,
) -> Result<nearfar::NearFarPlan, GeofieldError> {
    let finer = nearfar::Lattice::new(
        grid,
        region,
        plan.spacing_m / 2.0,
        plan.blend.order,
        opts.torus,
        max_nodes,
    );
    match finer {
        Some(lat) => {
            report.warnings.push(format!(
                "near/far: bound {rel:.2e} > tolerance at H = {:.3} m; refined to H = {:.3} m",
                plan.spacing_m,
                lat.h_max()
            ));
            Ok(nearfar::NearFarPlan::with_lattice(&plan, lat))
        }
        None => Err(nearfar::refusal(rel, opts.tolerance, &plan)),
    }
}

fn nearfar_note(report: &mut SpeciesReport, plan: &nearfar::NearFarPlan, rel: f64) {
    report.bound_rel = Some(rel);
    report.note = Some(format!(
        "{}near/far: exact within R = {:.1} m (blend from {:.1} m, order {}), far field on a {} x {} lattice of H = {:.3} m; certified bound {:.2e} of the band maximum",
        report
            .note
            .as_deref()
            .map(|n| format!("{n}; "))
            .unwrap_or_default(),
        plan.blend.outer_m,
        plan.blend.inner_m,
        plan.blend.order,
        plan.lattice.nx,
        plan.lattice.ny,
        plan.spacing_m,
        rel
    ));
}

/// [`run_nearfar`] on the GPU: near and far fields on the device (cuFFT), the certificate on the
/// host from the device's maxima; refined (near and far recomputed) while it fails. With pieces,
/// the device's lattice sums cross the processes on the host between the spreading and the
/// FFTs, after an agreeing point (a process whose device failed before it tells the others
/// there).
#[allow(clippy::too_many_arguments)]
fn nearfar_gpu(
    gpu: &geofield_cuda::Gpu,
    grid: &GridSpec,
    kernel: &Kernel,
    far: &Far<'_>,
    opts: &DisperseOptions,
    mut plan: nearfar::NearFarPlan,
    env: &nearfar::Envelope,
    lower: f64,
    tb: &bins::Bins,
    report: &mut SpeciesReport,
    share: &RowShare<'_>,
) -> Result<Band, GeofieldError> {
    if opts.precision != Precision::F32 {
        return Err(GeofieldError::Invalid(GPU_F64_REFUSED.into()));
    }
    let mine = share.rows.start.min(grid.rows)..share.rows.end.min(grid.rows);
    let (g_sup, e_sup) = env.sups();
    let failed: RefCell<Option<GeofieldError>> = RefCell::new(None);
    let reduce = |sums: Vec<u64>| -> Option<Vec<u64>> {
        if let Err(e) = share.combined([0.0, 0.0]) {
            *failed.borrow_mut() = Some(e);
            return None;
        }
        let ex = far.pieces?;
        let mine: Vec<i128> = sums
            .chunks_exact(2)
            .map(|p| (u128::from(p[0]) | (u128::from(p[1]) << 64)) as i128)
            .collect();
        drop(sums);
        Some(
            ex.sum_i128(mine)
                .into_iter()
                .flat_map(|x| [x as u128 as u64, (x as u128 >> 64) as u64])
                .collect(),
        )
    };
    let nodes = geofield_cuda::dispersal::FarNodes {
        scale: far.fixed.scale,
        unit: far.fixed.unit,
        reduce: far
            .pieces
            .map(|_| &reduce as &dyn Fn(Vec<u64>) -> Option<Vec<u64>>),
    };
    let mut kernel_ms = 0.0;
    let mut near_max = None;
    loop {
        let r = match cuda::nearfar(gpu, grid, kernel, tb, &plan, env, far.sources, &nodes) {
            Ok(r) => r,
            Err(e) => return Err(failed.borrow_mut().take().unwrap_or(e)),
        };
        // The near field's maximum over the whole map: each process's device sums the trees its
        // rows need (with pieces, fewer elsewhere: every term is ≥ 0, so no process's maximum
        // exceeds the map's); the largest over the processes is the map's.
        let nm = match near_max {
            Some(m) => m,
            None => *near_max.insert(share.combined([r.near_max, 0.0])?[0]),
        };
        kernel_ms += r.near_ms as f64 + r.far_ms as f64;
        report.kernel_ms = Some(kernel_ms);
        // The near field is summed in f32 (≤ 2e-6 relative to f64): L is taken below it.
        let l = lower.max(nm * (1.0 - 1e-5));
        let lat = plan.lattice;
        let bound = nearfar::certified(
            &plan,
            grid,
            far.stats.w_total,
            r.bound_conv_max,
            g_sup,
            e_sup,
            lat.px * lat.py,
            env,
        ) + nearfar::fixed_point_bound(&plan, far.fixed, far.stats.n, g_sup, e_sup);
        let rel = if l > 0.0 { bound / l } else { 0.0 };
        let rows = mine.start * grid.cols..mine.end * grid.cols;
        let finite = r.out[rows].iter().all(|x| x.is_finite());
        if rel <= opts.tolerance && all_finite(finite, share)? {
            nearfar_note(report, &plan, rel);
            return Ok(rows_of(Band::F32(r.out), grid.cols, &mine));
        }
        plan = refine(
            grid,
            far.stats.region,
            plan,
            rel,
            opts,
            nearfar::MAX_LATTICE_GPU,
            report,
        )?;
    }
}
