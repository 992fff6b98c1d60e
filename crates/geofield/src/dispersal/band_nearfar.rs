//! The near/far split of one species' band ([`super::band`]): the near field by the cutoff's
//! gather with the blend, the far field on the lattice, the certificate, and the refinement of
//! the lattice while the certificate fails; on the CPU and on the GPU.

use geofield_core::GridSpec;

use rayon::prelude::*;

use super::band::Band;
use super::band_exact::rows_of;
use super::bins::build_bins;
use super::sources::Sources;
use super::{
    DisperseOptions, GPU_F64_REFUSED, Kernel, Precision, RowShare, SpeciesReport, bins, cuda,
    cutoff_cpu, nearfar,
};
use crate::{Backend, Cancel, GeofieldError};

/// The near/far split: the near field by the cutoff's gather with the blend, the far field on
/// the lattice, certified against tolerance × L (L the larger of `lower` and the near field's
/// maximum); the lattice is refined while the certificate fails, then the method refuses.
/// Returns the rows `share.rows` of the band (L is the whole map's, through `share.combine`).
#[allow(clippy::too_many_arguments)]
pub(super) fn run_nearfar(
    backend: &Backend,
    grid: &GridSpec,
    kernel: &Kernel,
    sources: &Sources,
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
    let tb = build_bins(grid, sources, big_r, opts.torus);
    report.pairs = Some(tb.visited_pairs(grid, big_r, cutoff_cpu::OUT_TILE));
    report.radius_m = Some(big_r);
    if let Backend::Cuda(gpu) = backend {
        return nearfar_gpu(
            gpu, grid, kernel, sources, opts, plan, env, lower, &tb, report, share,
        )
        .map(|b| rows_of(b, grid.cols, &mine));
    }
    let blend = Some(&plan.blend);
    let mut near = cutoff_cpu::cutoff_rows(grid, kernel, &tb, big_r, blend, cancel, mine.clone());
    cancel.check()?;
    // Every near term is ≥ 0 and ≤ the full term: the near field's maximum bounds the band's
    // maximum from below (over every process's rows).
    let near_max = near.par_iter().cloned().reduce(|| 0.0, f64::max);
    let near_max = share.combined([near_max, 0.0])?[0];
    let l = lower.max(near_max);
    let region = region_of(grid, sources);
    let max_nodes = nearfar::MAX_LATTICE_CPU;
    loop {
        let (far, bound) = nearfar::far_cpu(grid, kernel, sources, &plan, env);
        cancel.check()?;
        let rel = if l > 0.0 { bound / l } else { 0.0 };
        if rel <= opts.tolerance && far.iter().all(|x| x.is_finite()) {
            near.par_iter_mut()
                .zip(far[mine.start * grid.cols..mine.end * grid.cols].par_iter())
                .for_each(|(a, b)| *a += b);
            nearfar_note(report, &plan, rel);
            return Ok(Band::from_f64(near, opts.precision));
        }
        plan = refine(grid, region, plan, rel, opts, max_nodes, report)?;
    }
}

/// The region the far field covers: the trees and the grid.
fn region_of(grid: &GridSpec, sources: &Sources) -> (f64, f64, f64, f64) {
    (
        0.0f64.min(sources.u.iter().cloned().fold(f64::INFINITY, f64::min)),
        0.0f64.min(sources.v.iter().cloned().fold(f64::INFINITY, f64::min)),
        grid.width_m()
            .max(sources.u.iter().cloned().fold(f64::NEG_INFINITY, f64::max)),
        grid.height_m()
            .max(sources.v.iter().cloned().fold(f64::NEG_INFINITY, f64::max)),
    )
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
/// host from the device's maxima; refined (near and far recomputed) while it fails.
#[allow(clippy::too_many_arguments)]
fn nearfar_gpu(
    gpu: &geofield_cuda::Gpu,
    grid: &GridSpec,
    kernel: &Kernel,
    sources: &Sources,
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
    let region = region_of(grid, sources);
    let w_total = sources.total_weight();
    let (g_sup, e_sup) = env.sups();
    let mut kernel_ms = 0.0;
    let mut first = true;
    loop {
        let r = cuda::nearfar(gpu, grid, kernel, tb, &plan, env, sources)?;
        if std::mem::take(&mut first) {
            // Every process computed the whole near field: the combining only keeps the
            // processes in step with the CPU's (the maximum is already the map's).
            share.combined([r.near_max, 0.0])?;
        }
        kernel_ms += r.near_ms as f64 + r.far_ms as f64;
        report.kernel_ms = Some(kernel_ms);
        // The near field is summed in f32 (≤ 2e-6 relative to f64): L is taken below it.
        let l = lower.max(r.near_max * (1.0 - 1e-5));
        let lat = plan.lattice;
        let bound = nearfar::certified(
            &plan,
            grid,
            w_total,
            r.bound_conv_max,
            g_sup,
            e_sup,
            lat.px * lat.py,
            env,
        );
        let rel = if l > 0.0 { bound / l } else { 0.0 };
        if rel <= opts.tolerance && r.out.iter().all(|x| x.is_finite()) {
            nearfar_note(report, &plan, rel);
            return Ok(Band::F32(r.out));
        }
        plan = refine(
            grid,
            region,
            plan,
            rel,
            opts,
            nearfar::MAX_LATTICE_GPU,
            report,
        )?;
    }
}
