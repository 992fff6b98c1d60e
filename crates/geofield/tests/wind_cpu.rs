//! Wind field on the CPU: invariants, solver agreement, linear theory (note §7).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use geofield::Backend;
use geofield::bench::wind::{
    cases, init,
    multigrid::{self, Problem},
    ops::{self, Coeffs},
};
use geofield::wind::{
    self, Levels, Model, Profile, Solver, Stability, Terrain, WindGrid, WindOptions,
};

mod wind_common;
use wind_common::{agreement_bound, hill, hill_grid, max_diff, plan, station, stations_for};

fn opts(model: Model, solver: Solver, tol: f64) -> WindOptions {
    WindOptions {
        model,
        solver,
        tolerance: tol,
        max_iterations: 20_000,
        ..Default::default()
    }
}

#[test]
fn single_station_gives_its_wind_with_the_profile() {
    let p = plan(6, 5, 30.0);
    let g = WindGrid::new(
        p,
        vec![0.0; p.n_cells()],
        &Levels::Uniform { nz: 6, dz_m: 5.0 },
    )
    .unwrap();
    let st = vec![station(40.0, 40.0, 4.0, 270.0)]; // from the west: u = +4
    let o = WindOptions {
        profile: Profile::Power,
        default_stability: Stability::E,
        ..Default::default()
    };
    let coeffs = Coeffs::new(&g, 1.0, o.top);
    let guess = init::first_guess(&g, &coeffs, &st, &o).unwrap();
    for k in 0..g.nz {
        let z = g.z_centre_m(k);
        let want = 4.0 * (z / 10.0).powf(0.35);
        let got = guess.u[(k * 5 + 2) * 7 + 3];
        assert!((got - want).abs() < 1e-12, "k {k}: {got} vs {want}");
        assert!(guess.v[(k * 6 + 2) * 6 + 3].abs() < 1e-12);
    }
    assert!(guess.stability.iter().all(|&s| s == Stability::E));
}

/// The log law against values: with `Profile::Log { z0 }` a station measuring S at z_r = 10 m
/// gives u(z) = S ln(z/z0) / ln(z_r/z0) at every cell centre of its column (written here from
/// the law, not from the code), for a westerly station (u only) and a southerly one (v only).
#[test]
fn single_station_gives_the_log_law() {
    let p = plan(6, 5, 30.0);
    let g = WindGrid::new(
        p,
        vec![0.0; p.n_cells()],
        &Levels::Uniform { nz: 6, dz_m: 5.0 },
    )
    .unwrap();
    for z0 in [0.03, 0.5] {
        let o = WindOptions {
            profile: Profile::Log { roughness_m: z0 },
            ..Default::default()
        };
        let coeffs = Coeffs::new(&g, 1.0, o.top);
        // From the west at 4 m/s: u = +4 at 10 m; from the south at 3 m/s: v = +3 at 10 m.
        let west = init::first_guess(&g, &coeffs, &[station(40.0, 40.0, 4.0, 270.0)], &o).unwrap();
        let south = init::first_guess(&g, &coeffs, &[station(40.0, 40.0, 3.0, 180.0)], &o).unwrap();
        for k in 0..g.nz {
            // Cell centres 2.5, 7.5, …, 27.5 m above the flat ground.
            let z = 2.5 + 5.0 * k as f64;
            assert!((g.z_centre_m(k) - z).abs() < 1e-12);
            let law = |s: f64| s * (z / z0).ln() / (10.0 / z0).ln();
            // u at an interior x face (row 2, face 3) and v at an interior y face (face 2, col 3).
            let u = west.u[(k * 5 + 2) * 7 + 3];
            let v = south.v[(k * 6 + 2) * 6 + 3];
            assert!(
                (u - law(4.0)).abs() <= 1e-12 * law(4.0).abs(),
                "z0 {z0} z {z}: u {u} vs {}",
                law(4.0)
            );
            assert!(
                (v - law(3.0)).abs() <= 1e-12 * law(3.0).abs(),
                "z0 {z0} z {z}: v {v} vs {}",
                law(3.0)
            );
            assert!(west.v[(k * 6 + 2) * 6 + 3].abs() < 1e-12);
        }
    }
}

#[test]
fn converged_field_does_not_depend_on_the_solver() {
    let g = hill_grid();
    let st = stations_for(&g);
    // Sherman's default cut cells, and its stair steps for WEST (the paper's terrain).
    let reference_of = |terrain| {
        let o = WindOptions {
            terrain: Some(terrain),
            ..opts(Model::Sherman, Solver::MgCg, 1e-10)
        };
        wind::compute(&Backend::Cpu, g.clone(), &st, &o).unwrap()
    };
    let (cut, stairs) = (reference_of(Terrain::Cut), reference_of(Terrain::Stairs));
    for (model, solver, tol) in [
        (Model::Sherman, Solver::Multigrid, 1e-8),
        (Model::Sherman, Solver::Sor, 1e-8),
        (Model::West, Solver::Sor, 1e-7),
    ] {
        let o = WindOptions {
            divergence_removal: false,
            ..opts(model, solver, tol)
        };
        let f = wind::compute(&Backend::Cpu, g.clone(), &st, &o).unwrap();
        let reference = if model == Model::West { &stairs } else { &cut };
        let d = max_diff(&f.u, &reference.u)
            .max(max_diff(&f.v, &reference.v))
            .max(max_diff(&f.w, &reference.w));
        // Each field is within poisson_reach · (its max |div|) of the exact one (wind_common).
        let bound = agreement_bound(&g, f.report.max_div_per_s, reference.report.max_div_per_s);
        eprintln!(
            "{model:?} {solver:?}: {} iterations, max diff {d:.2e} m/s (bound {bound:.2e})",
            f.report.iterations
        );
        assert!(
            d <= bound,
            "{model:?} {solver:?}: {d} m/s apart, bound {bound}"
        );
    }
}

#[test]
fn west_velocity_form_equals_sor_in_potential_form() {
    let g = hill_grid();
    let st = stations_for(&g);
    let o = WindOptions {
        model: Model::West,
        fixed_iterations: true,
        max_iterations: 37,
        divergence_removal: false,
        ..Default::default()
    };
    let f = wind::compute(&Backend::Cpu, g.clone(), &st, &o).unwrap();
    assert!(!f.report.converged);
    let coeffs = Coeffs::new(&g, 1.0, o.top);
    let guess = init::first_guess(&g, &coeffs, &st, &o).unwrap();
    let div0 = ops::divergence(&g, &guess.u, &guess.v, &guess.w);
    let problem = Problem::new(&g, &coeffs, &div0);
    let run = multigrid::solve(&problem, Solver::Sor, 1.25, 37, 0.0, 1000, |_, _| {}).unwrap();
    assert_eq!(run.iterations, 37);
    let phi = problem.to_cells(&run.phi);
    let (mut u, mut v, mut w) = (guess.u.clone(), guess.v.clone(), guess.w.clone());
    ops::apply_potential(&g, &coeffs, &phi, &mut u, &mut v, &mut w);
    let d = max_diff(&u, &f.u)
        .max(max_diff(&v, &f.v))
        .max(max_diff(&w, &f.w));
    assert!(d < 1e-11, "velocity form and potential form differ by {d}");
    // And 37 sweeps at ω = 1.25 are far from converged: the paper's mode reports it.
    assert!(f.report.max_div_per_s > 1e-4 * f.report.max_div0_per_s);
}

#[test]
fn divergence_removal_zeroes_the_divergence() {
    let g = hill_grid();
    let st = stations_for(&g);
    let o = WindOptions {
        model: Model::West,
        fixed_iterations: true,
        max_iterations: 50,
        ..Default::default()
    };
    let f = wind::compute(&Backend::Cpu, g.clone(), &st, &o).unwrap();
    let (max, _) = ops::divergence_stats(&g, &ops::divergence(&g, &f.u, &f.v, &f.w));
    assert!(max < 1e-12, "{max}");
    assert!(f.report.removal_max_dw_m_per_s.unwrap() > 0.0);
}

#[test]
fn multigrid_converges_in_few_cycles() {
    let g = hill_grid();
    let st = stations_for(&g);
    let mg = wind::compute(
        &Backend::Cpu,
        g.clone(),
        &st,
        &opts(Model::Sherman, Solver::Multigrid, 1e-6),
    )
    .unwrap();
    let cg = wind::compute(
        &Backend::Cpu,
        g.clone(),
        &st,
        &opts(Model::Sherman, Solver::MgCg, 1e-6),
    )
    .unwrap();
    let sor = wind::compute(
        &Backend::Cpu,
        g.clone(),
        &st,
        &opts(Model::Sherman, Solver::Sor, 1e-6),
    )
    .unwrap();
    eprintln!(
        "iterations to 1e-6: multigrid {}, mgcg {}, sor {} (omega {:?})",
        mg.report.iterations, cg.report.iterations, sor.report.iterations, sor.report.omega
    );
    assert!(mg.report.iterations <= 40, "{:?}", mg.report.history);
    assert!(cg.report.iterations <= 25, "{:?}", cg.report.history);
}

#[test]
fn colour_order_does_not_change_the_converged_field() {
    use geofield::bench::wind::west::{self, WestOperator};
    let g = hill_grid();
    let st = stations_for(&g);
    let o = WindOptions::default();
    let coeffs = Coeffs::new(&g, 1.0, o.top);
    let guess = init::first_guess(&g, &coeffs, &st, &o).unwrap();
    let div0 = ops::divergence(&g, &guess.u, &guess.v, &guess.w);
    let (d0, _) = ops::divergence_stats(&g, &div0);
    let mut fields = Vec::new();
    for first in [1, 0] {
        let mut op = WestOperator::new(&g, &coeffs, 1.25);
        op.first_parity = first;
        let (mut u, mut v, mut w) = (guess.u.clone(), guess.v.clone(), guess.w.clone());
        let run = west::run(
            &g,
            &op,
            &mut u,
            &mut v,
            &mut w,
            20_000,
            false,
            1e-8 * d0,
            10,
            |_, _| {},
        );
        assert!(run.converged);
        let (end, _) = ops::divergence_stats(&g, &ops::divergence(&g, &u, &v, &w));
        fields.push((u, v, w, run.iterations, end));
    }
    let (a, b) = (&fields[0], &fields[1]);
    let d = max_diff(&a.0, &b.0)
        .max(max_diff(&a.1, &b.1))
        .max(max_diff(&a.2, &b.2));
    eprintln!(
        "red first {} sweeps, black first {} sweeps, max diff {d:.2e} m/s",
        a.3, b.3
    );
    assert!(d > 0.0, "different orders take different paths");
    // Both stopped at max |div| ≤ 1e-8 · d0: each within poisson_reach · r of the exact field.
    let bound = agreement_bound(&g, a.4, b.4);
    assert!(d <= bound, "{d} m/s apart, bound {bound}");
}

#[test]
fn stations_interpolate_by_inverse_distance_squared_with_a_radius() {
    let p = plan(10, 1, 100.0);
    let g = WindGrid::new(
        p,
        vec![0.0; p.n_cells()],
        &Levels::Uniform { nz: 2, dz_m: 10.0 },
    )
    .unwrap();
    // Two stations at the centres of columns 0 and 9: from the west 2 m/s and from the south 4 m/s.
    let st = vec![
        station(50.0, 50.0, 2.0, 270.0),
        station(950.0, 50.0, 4.0, 180.0),
    ];
    let o = WindOptions {
        profile: Profile::Uniform,
        ..Default::default()
    };
    let coeffs = Coeffs::new(&g, 1.0, o.top);
    let guess = init::first_guess(&g, &coeffs, &st, &o).unwrap();
    // v at the north face of column 3 (row 0, face 0): the cell's own value at the edge.
    let (d1, d2) = (300.0f64, 600.0f64);
    let (w1, w2) = (1.0 / (d1 * d1), 1.0 / (d2 * d2));
    let want_v = w2 * 4.0 / (w1 + w2);
    assert!(
        (guess.v[3] - want_v).abs() < 1e-12,
        "{} vs {want_v}",
        guess.v[3]
    );
    // With a 350 m radius, column 3 sees only the first station; columns 4 and 5 (400 m from
    // one, 500 m from the other) see none and take their nearest.
    let o = WindOptions {
        radius_m: Some(350.0),
        ..o
    };
    let guess = init::first_guess(&g, &coeffs, &st, &o).unwrap();
    // (cos 270° rounds to −1.8e-16, hence the tolerance.)
    assert!(guess.v[3].abs() < 1e-12);
    assert!(guess.v[4].abs() < 1e-12);
    assert!((guess.v[5] - 4.0).abs() < 1e-12);
    assert!((guess.v[8] - 4.0).abs() < 1e-12);
}

#[test]
fn stations_outside_are_ignored_and_none_usable_is_an_error() {
    let g = hill_grid();
    let mut st = stations_for(&g);
    st.push(station(-10.0, 50.0, 3.0, 90.0));
    let f = wind::compute(&Backend::Cpu, g.clone(), &st, &WindOptions::default()).unwrap();
    assert_eq!(f.ignored_stations.len(), 1);
    assert!(f.ignored_stations[0].reason.contains("outside the domain"));
    let e = wind::compute(&Backend::Cpu, g.clone(), &st[2..], &WindOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("no usable station"), "{e}");
}

#[test]
fn zero_wind_gives_a_zero_field() {
    let g = hill_grid();
    let st = vec![station(300.0, 300.0, 0.0, 0.0)];
    for model in [Model::Sherman, Model::West] {
        let f = wind::compute(
            &Backend::Cpu,
            g.clone(),
            &st,
            &opts(model, Solver::MgCg, 1e-6),
        )
        .unwrap();
        assert!(f.u.iter().chain(&f.v).chain(&f.w).all(|&x| x == 0.0));
        assert!(f.report.converged);
    }
}

#[test]
fn stretched_levels_and_a_lid_converge_and_keep_the_invariants() {
    let p = plan(20, 16, 40.0);
    let t = hill(&p, 35.0, 150.0);
    let tops: Vec<f64> = (1..=14)
        .map(|k| 4.0 * (1.25f64.powi(k) - 1.0) / 0.25)
        .collect();
    let g = WindGrid::new(p, t, &Levels::Tops(tops)).unwrap();
    let st = stations_for(&g);
    for top in [wind::Top::Open, wind::Top::Lid] {
        for solver in [Solver::Multigrid, Solver::MgCg, Solver::Sor] {
            let o = WindOptions {
                top,
                ..opts(Model::Sherman, solver, 1e-7)
            };
            let f = wind::compute(&Backend::Cpu, g.clone(), &st, &o).unwrap();
            assert!(f.report.converged, "{top:?} {solver:?}");
            if top == wind::Top::Lid {
                let plane = g.rows() * g.cols();
                assert!(f.w[g.nz * plane..].iter().all(|&w| w == 0.0));
            }
        }
    }
}

/// On a deep grid (128 layers of 10 m over 128 × 128 columns of 100 m) each V-cycle after the
/// first reduces max |div| by at least 6×. With coarse boundary faces that halved the
/// conductance like interior faces (φ = 0 drifting outward level by level) the factor here was
/// 0.23 (0.4 on 512² columns); keeping φ = 0 half a finest column outside gives ≤ 0.1.
#[test]
fn multigrid_contracts_fast_on_a_deep_grid() {
    let (g, st) = cases::hill_grid(128, 128, 10.0).unwrap();
    let coeffs = Coeffs::new(&g, 1.0, wind::Top::Open);
    let guess = init::first_guess(&g, &coeffs, &st, &WindOptions::default()).unwrap();
    let div0 = ops::divergence(&g, &guess.u, &guess.v, &guess.w);
    let p = Problem::new(&g, &coeffs, &div0);
    let d0 = p.max_div(&p.b);
    let run = multigrid::solve(&p, Solver::Multigrid, 1.0, 30, 1e-9 * d0, 1, |_, _| {}).unwrap();
    assert!(run.converged, "{:?}", run.history);
    let factors: Vec<f64> = run.history.windows(2).map(|w| w[1].1 / w[0].1).collect();
    eprintln!("per-cycle factors {factors:.3?}");
    let worst = factors[1..].iter().cloned().fold(0.0, f64::max);
    assert!(worst <= 1.0 / 6.0, "factors {factors:?}");
}

/// A solve that stops contracting stops within a few checks and says why (issue 15): at the
/// rounding level (threshold 0) every solver stagnates long before its cap, and a broken
/// hierarchy (the coarse operators 10× too weak, so each coarse correction overshoots 10×)
/// diverges within a few V-cycles instead of running to the cap.
#[test]
fn stalled_solves_stop_early_with_the_reason() {
    let g = hill_grid();
    let st = stations_for(&g);
    let coeffs = Coeffs::new(&g, 1.0, wind::Top::Open);
    let guess = init::first_guess(&g, &coeffs, &st, &WindOptions::default()).unwrap();
    let div0 = ops::divergence(&g, &guess.u, &guess.v, &guess.w);
    let p = Problem::new(&g, &coeffs, &div0);
    let omega = geofield::bench::wind::sor::optimal_omega(&g, 1.0);
    // Caps far beyond what reaching the rounding level takes (MG ~10 cycles, SOR ~ 500 sweeps
    // on this 24 × 20 × 16 grid); the stall rule's windows: 3 checks, SOR 1000 sweeps. MG-CG's
    // recurrence residual keeps falling below the rounding level until p·Ap vanishes (~90
    // iterations here), which stops it as stagnated too.
    for (solver, cap, most) in [
        (Solver::Multigrid, 500, 40),
        (Solver::MgCg, 500, 150),
        (Solver::Sor, 50_000, 6000),
    ] {
        let run = multigrid::solve(&p, solver, omega, cap, 0.0, 10, |_, _| {}).unwrap();
        eprintln!("{solver:?}: {} iterations, {:?}", run.iterations, run.stall);
        assert!(!run.converged);
        assert_eq!(run.stall, Some(wind::Stall::Stagnated), "{solver:?}");
        assert!(run.iterations <= most, "{solver:?}: {}", run.iterations);
    }
    let mut broken = p.clone();
    for l in broken.levels.iter_mut().skip(1) {
        for a in [&mut l.kx, &mut l.ky, &mut l.kz, &mut l.diag] {
            a.iter_mut().for_each(|x| *x *= 0.1);
        }
    }
    let d0 = broken.max_div(&broken.b);
    let run = multigrid::solve(
        &broken,
        Solver::Multigrid,
        1.0,
        500,
        1e-6 * d0,
        1,
        |_, _| {},
    )
    .unwrap();
    eprintln!("broken hierarchy: {:?}", run.history);
    assert_eq!(run.stall, Some(wind::Stall::Diverged));
    assert!(run.iterations <= 10, "{}", run.iterations);
}

/// The pipeline's error names what happened and the residuals; the report of a converged solve
/// carries its first and last residual.
#[test]
fn the_report_says_how_the_solve_ended() {
    let g = hill_grid();
    let st = stations_for(&g);
    let f = wind::compute(&Backend::Cpu, g.clone(), &st, &WindOptions::default()).unwrap();
    let r = &f.report;
    assert_eq!(r.stop, wind::StopReason::Converged);
    assert_eq!(r.first_residual_per_s, r.history[0].1);
    assert_eq!(r.last_residual_per_s, r.history[r.history.len() - 1].1);
    assert!(r.last_residual_per_s <= r.threshold_per_s);
    let o = WindOptions {
        max_iterations: 1,
        ..WindOptions::default()
    };
    let e = wind::compute(&Backend::Cpu, g, &st, &o)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("reached the iteration cap") && e.contains("at the start"),
        "{e}"
    );
}
