//! GPU rows of `geofield bench wind`: the paper's fixed-count WEST runs with both thread
//! mappings (the paper's GPU1 "parity test" and GPU2 "relocation of idle threads", ours as the
//! compact mapping on the contiguous axis), and every Sherman solver to the tolerance. Device
//! time from CUDA events after a warm-up; the share of memory bandwidth from each kernel's
//! nominal bytes per cell update over the device's peak.

use anyhow::Result;
use geofield::Backend;
use geofield::bench::wind::cuda::{WestVariant as SweepVariant, time_sherman, time_west};
use geofield::bench::wind::sor;
use geofield::wind::Solver;

use super::Stats;
use super::wind::{BenchArgs, Case, Row, print_row};

pub fn rows(
    be: &Backend,
    c: &Case,
    a: &BenchArgs,
    threshold: f64,
    rows: &mut Vec<Row>,
) -> Result<()> {
    let Backend::Cuda(gpu) = be else {
        return Ok(());
    };
    let label = be.label();
    let faces = (&c.u0.0[..], &c.u0.1[..], &c.u0.2[..]);
    if !c.name.starts_with("512x512x128") && !c.cut {
        for &n in &a.iterations {
            for (variant, name) in [
                (SweepVariant::Compact, "west fixed, compact (GPU2)"),
                (SweepVariant::Parity, "west fixed, parity (GPU1)"),
            ] {
                let t = time_west(gpu, &c.grid, &c.coeffs, faces, 1.25, n, variant, a.repeats)?;
                let mut r = Row {
                    case: c.name.clone(),
                    cells: c.grid.n_cells(),
                    fluid_cells: c.grid.n_fluid(),
                    method: name.into(),
                    backend: label.clone(),
                    iterations: n,
                    per_iteration_ms: 1e3 * t.median_s / n as f64,
                    cell_updates_per_s: t.cell_updates_per_s,
                    seconds: Stats::of(t.seconds.clone()),
                    divergence_ratio: f64::NAN,
                    converged: false,
                    bandwidth_share: Some(t.bandwidth_share),
                };
                r.seconds.median = t.median_s;
                print_row(&r);
                rows.push(r);
            }
        }
    }
    let omega = sor::optimal_omega(&c.grid, 1.0);
    for (solver, name) in [
        (Solver::Multigrid, "multigrid"),
        (Solver::MgCg, "mgcg"),
        (Solver::Sor, "sor (optimal omega)"),
    ] {
        let t = time_sherman(
            gpu, &c.grid, &c.coeffs, &c.div0, solver, omega, 20_000, threshold, 10, a.repeats,
        )?;
        let r = Row {
            case: c.name.clone(),
            cells: c.grid.n_cells(),
            fluid_cells: c.grid.n_fluid(),
            method: name.into(),
            backend: label.clone(),
            iterations: t.iterations,
            per_iteration_ms: 1e3 * t.median_s / t.iterations.max(1) as f64,
            cell_updates_per_s: c.grid.n_cells() as f64 * t.iterations as f64 / t.median_s,
            seconds: Stats::of(t.seconds.clone()),
            divergence_ratio: t.final_div_per_s / c.max_div0,
            converged: t.converged,
            bandwidth_share: Some(t.bandwidth_share),
        };
        print_row(&r);
        rows.push(r);
    }
    Ok(())
}
