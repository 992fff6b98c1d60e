//! The planner of the near/far split: the candidate splits (R, blend order and start), each
//! one's coarsest lattice meeting the tolerance and its cost, the cheapest chosen in one
//! process or shared out among several.

use std::f64::consts::PI;

use geofield_core::GridSpec;

use super::*;
use crate::GeofieldError;

/// ∫ K·(1 − S_n) dA: the near kernel's integral (for the planner's estimate of the band max).
fn near_integral(k: &Kernel, b: &Blend) -> f64 {
    let steps = 4000;
    let dr = b.outer_m / steps as f64;
    (0..steps)
        .map(|i| {
            let r = (i as f64 + 0.5) * dr;
            2.0 * PI * r * k.eval(r) * b.near_factor(r * r) * dr
        })
        .sum()
}

/// What the planner needs of a species on a grid, computed once for all its candidate splits.
struct PlanSetup {
    h: f64,
    n: f64,
    reg: (f64, f64, f64, f64),
    density: f64,
    tree_density: f64,
    cells: f64,
    r_max: f64,
    l_min: f64,
    w_total: f64,
}

/// The candidate splits in the planner's order: R from the smallest worth trying up by 1.25×,
/// and for each R the blend orders 4 and 6 with the blend starting at 0.3 R and 0.5 R.
fn candidates(
    setup: &PlanSetup,
    kernel: &Kernel,
    max_radius_m: f64,
    torus: bool,
) -> Vec<(f64, usize, f64)> {
    let r_lo = (4.0 * setup.h).max(1.5 * kernel.mode_m()).max(4.0);
    let r_hi = max_radius_m.max(4.0 * r_lo).min(setup.r_max).max(r_lo);
    let mut out = Vec::new();
    let mut big_r = r_lo;
    while big_r <= r_hi * 1.0001 {
        if torus && big_r >= 0.5 * setup.l_min {
            break;
        }
        for order in [4usize, 6] {
            for frac in [0.3, 0.5] {
                out.push((big_r, order, frac));
            }
        }
        big_r *= 1.25;
    }
    out
}

/// The planner's inputs: the candidate splits and the species' setup; `None` when no split can
/// be planned (no tree carries weight).
fn setup(grid: &GridSpec, stats: &SourceStats, tolerance: f64, torus: bool) -> Option<PlanSetup> {
    let w_total = stats.w_total;
    if stats.n == 0 || w_total <= 0.0 || tolerance <= 0.0 {
        return None;
    }
    let h = grid.cell_size_m;
    let reg = stats.region;
    let area = ((reg.2 - reg.0) * (reg.3 - reg.1)).max(h * h);
    let r_max = if torus {
        0.5 * grid.width_m().hypot(grid.height_m())
    } else {
        (reg.2 - reg.0).hypot(reg.3 - reg.1)
    };
    Some(PlanSetup {
        h,
        n: stats.n as f64,
        reg,
        density: w_total / area,
        tree_density: stats.n as f64 / area,
        cells: grid.n_cells() as f64,
        r_max,
        l_min: grid.width_m().min(grid.height_m()),
        w_total,
    })
}

/// One candidate's near field cost (pair equivalents): a lower bound of its total cost.
fn near_cost(s: &PlanSetup, big_r: f64, cost: &CostModel) -> (f64, f64) {
    let near_pairs = s.cells * s.tree_density * PI * big_r * big_r * 1.3;
    (near_pairs, near_pairs * cost.near)
}

/// One candidate split: its plan on the coarsest lattice that meets the tolerance, or `None`.
#[allow(clippy::too_many_arguments)]
fn evaluate(
    s: &PlanSetup,
    grid: &GridSpec,
    kernel: &Kernel,
    tolerance: f64,
    lower: f64,
    torus: bool,
    cost: &CostModel,
    (big_r, order, frac): (f64, usize, f64),
) -> Option<(NearFarPlan, Envelope)> {
    let h = s.h;
    let blend = Blend::new(frac * big_r, big_r, order);
    let (near_pairs, _) = near_cost(s, big_r, cost);
    let env = Envelope::new(kernel, &blend, s.r_max + 4.0 * big_r);
    let l_est = lower.max(s.density * near_integral(kernel, &blend));
    let mut sp = big_r / 2.0;
    while sp >= h / 8.0 {
        let lat = Lattice::new(grid, s.reg, sp, order, torus, cost.max_nodes)?;
        let (a, shift) = bound_constants(order, lat.h_max());
        let est = a * s.density * env.window_table(shift).area_integral();
        // The torus kink's term is the same in the certificate (no safety factor: refining
        // does not reduce it).
        let kink = if torus {
            kink_bound(order, lat.h_max(), shift, s.l_min, s.w_total, &env) / l_est
        } else {
            0.0
        };
        let est_rel = est / l_est + kink;
        if (est_rel - kink) * PLAN_SAFETY + kink <= tolerance {
            let p2 = (lat.px * lat.py) as f64;
            let fft = 6.0 * p2 * p2.log2() * cost.fft;
            let spread = 2.0 * s.n * (order * order) as f64 * 0.1;
            let interp = s.cells * (order * order) as f64 * cost.interp;
            let total = near_pairs * cost.near + fft + spread + interp;
            return Some((
                NearFarPlan {
                    blend,
                    spacing_m: lat.h_max(),
                    lattice: lat,
                    bound_factor: a,
                    shift_m: shift,
                    estimate_rel: est_rel,
                    near_pairs,
                    cost: total,
                },
                env,
            ));
        }
        sp /= 2.0;
    }
    None
}

/// The cheapest of the candidates `k ≡ part (mod parts)`, skipping those whose near field
/// alone costs at least the best so far or `beat`: its index and plan.
#[allow(clippy::too_many_arguments)]
fn best_of(
    grid: &GridSpec,
    kernel: &Kernel,
    stats: &SourceStats,
    tolerance: f64,
    lower: f64,
    max_radius_m: f64,
    torus: bool,
    cost: &CostModel,
    beat: f64,
    (part, parts): (usize, usize),
) -> Option<(usize, NearFarPlan, Envelope)> {
    let s = setup(grid, stats, tolerance, torus)?;
    let mut best: Option<(usize, NearFarPlan, Envelope)> = None;
    for (k, c) in candidates(&s, kernel, max_radius_m, torus)
        .into_iter()
        .enumerate()
    {
        if k % parts.max(1) != part {
            continue;
        }
        // The near/far split only pays where the near field is cheaper than the best so far
        // (and than what it must beat).
        let to_beat = best.as_ref().map_or(beat, |b| b.1.cost.min(beat));
        if near_cost(&s, c.0, cost).1 >= to_beat {
            continue;
        }
        if let Some((p, env)) = evaluate(&s, grid, kernel, tolerance, lower, torus, cost, c)
            && best.as_ref().is_none_or(|b| p.cost < b.1.cost)
        {
            best = Some((k, p, env));
        }
    }
    best
}

#[allow(clippy::too_many_arguments)]
/// Choose a plan for `tolerance` (relative to the band maximum); `lower` is a rigorous lower bound
/// on the band maximum (single-tree), `max_radius_m` the largest R worth trying (the cutoff's).
/// Splits whose near field alone costs `beat` or more are not evaluated (`auto` passes the
/// cost of the cutoff or exact sum it would run instead; `f64::INFINITY`: every split). The
/// plan is the first cheapest candidate.
pub fn plan(
    grid: &GridSpec,
    kernel: &Kernel,
    sources: &Sources,
    tolerance: f64,
    lower: f64,
    max_radius_m: f64,
    torus: bool,
    cost: &CostModel,
    beat: f64,
) -> Option<(NearFarPlan, Envelope)> {
    let stats = SourceStats::of(grid, sources);
    let args = (
        grid,
        kernel,
        &stats,
        tolerance,
        lower,
        max_radius_m,
        torus,
        cost,
        beat,
    );
    best_of(
        args.0,
        args.1,
        args.2,
        args.3,
        args.4,
        args.5,
        args.6,
        args.7,
        args.8,
        (0, 1),
    )
    .map(|(_, p, e)| (p, e))
}

/// `[max, sum]` over the processes of each process's two values (see [`plan_shared`]).
pub(crate) type Agree<'a> = dyn Fn([f64; 2]) -> Result<[f64; 2], GeofieldError> + 'a;

/// [`plan`] with its candidates shared among `parts` processes (MPI ranks): each evaluates
/// every `parts`-th, and `combine` (the maximum over the processes of each value, as
/// [`super::RowShare::combine`]) finds the cheapest and, among equally cheap ones, the first;
/// every process then rebuilds that one. The same plan as [`plan`] (which it is without
/// `combine` or with one part): a candidate the sequential planner skips costs no less than
/// the one it keeps.
#[allow(clippy::too_many_arguments)]
pub(crate) fn plan_shared(
    grid: &GridSpec,
    kernel: &Kernel,
    stats: &SourceStats,
    tolerance: f64,
    lower: f64,
    max_radius_m: f64,
    torus: bool,
    cost: &CostModel,
    beat: f64,
    (part, parts): (usize, usize),
    combine: Option<&Agree<'_>>,
) -> Result<Option<(NearFarPlan, Envelope)>, GeofieldError> {
    let Some(combine) = combine.filter(|_| parts > 1) else {
        return Ok(best_of(
            grid,
            kernel,
            stats,
            tolerance,
            lower,
            max_radius_m,
            torus,
            cost,
            beat,
            (0, 1),
        )
        .map(|(_, p, e)| (p, e)));
    };
    let mine = best_of(
        grid,
        kernel,
        stats,
        tolerance,
        lower,
        max_radius_m,
        torus,
        cost,
        beat,
        (part, parts),
    );
    let my_cost = mine.as_ref().map_or(f64::INFINITY, |b| b.1.cost);
    let cheapest = -combine([-my_cost, 0.0])?[0];
    let my_index = match &mine {
        Some((k, p, _)) if p.cost == cheapest => -(*k as f64),
        _ => f64::NEG_INFINITY,
    };
    let first = -combine([my_index, 0.0])?[0];
    if !cheapest.is_finite() || !first.is_finite() {
        return Ok(None);
    }
    let k = first as usize;
    if let Some((mk, p, e)) = mine
        && mk == k
    {
        return Ok(Some((p, e)));
    }
    let Some(s) = setup(grid, stats, tolerance, torus) else {
        return Ok(None);
    };
    let c = candidates(&s, kernel, max_radius_m, torus).get(k).copied();
    Ok(c.and_then(|c| evaluate(&s, grid, kernel, tolerance, lower, torus, cost, c)))
}
