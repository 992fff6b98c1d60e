//! Cancellation ([`geofield::Cancel`]) of every long-running entry point: a token set before
//! the call returns `Cancelled` at once; a token set during the call (from its own progress
//! callback, which makes the moment deterministic) stops it at the next check, before the work
//! that follows (the next species, band of nodes, step, solver check); a token set from another
//! thread in the middle of one big kernel is honoured within one check interval.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use geofield::dispersal::{self, DisperseOptions, Method, SpeciesStep};
use geofield::flock::{self, Flock, FlockParams, FlockState, Start};
use geofield::kriging::{self, KrigeOptions, KrigeParams, Model, Neighbourhood, SampleSet};
use geofield::kriging::{Target, Variogram};
use geofield::neighbors::{self, KnnParams};
use geofield::wind::{self, Model as WindModel, Solver, WindOptions};
use geofield::{Backend, Cancel, GeofieldError, synth};
use geofield_core::{Extent, GridSpec};

mod wind_common;
use wind_common::{hill_grid, stations_for};

fn cancelled<T: std::fmt::Debug>(r: Result<T, GeofieldError>) -> bool {
    matches!(r, Err(GeofieldError::Cancelled))
}

fn pre_cancelled() -> Cancel {
    let c = Cancel::new();
    c.cancel();
    c
}

fn stand(n: usize, extent: &Extent) -> dispersal::Stand {
    synth::forest(
        n,
        extent,
        3,
        synth::Pattern::Uniform,
        synth::DbhModel::Uniform15to60,
        &synth::SBS_SHARES,
    )
}

/// `n` samples of a smooth surface on a 1000 m square.
fn samples(n: usize) -> SampleSet {
    let xs: Vec<f64> = (0..n).map(|i| (i * 7919 % 1000) as f64 + 0.5).collect();
    let ys: Vec<f64> = (0..n).map(|i| (i * 104_729 % 997) as f64 + 0.25).collect();
    let z = xs
        .iter()
        .zip(&ys)
        .map(|(x, y)| (x / 200.0).sin() + (y / 300.0).cos())
        .collect();
    SampleSet::new(xs, ys, vec![z])
}

fn krige_params(cells: usize, neighbourhood: Neighbourhood, variance: bool) -> KrigeParams {
    let vg = Variogram::new(Model::Exponential, 1.0, 300.0, 0.0).unwrap();
    let grid = GridSpec {
        x_min_m: 0.0,
        y_max_m: 1000.0,
        cell_size_m: 1000.0 / cells as f64,
        cols: cells,
        rows: cells,
    };
    KrigeParams {
        variance,
        options: KrigeOptions {
            neighbourhood,
            ..KrigeOptions::default()
        },
        ..KrigeParams::new(vg, Target::Grid(grid))
    }
}

#[test]
fn a_token_cancelled_before_the_call_stops_every_capability() {
    let c = pre_cancelled();
    let be = Backend::Cpu;
    let extent = Extent::new(0.0, 0.0, 20.0, 20.0).unwrap();
    let grid = GridSpec::from_extent(extent, 1.0).unwrap();
    let species = synth::sbs_species();
    let trees = stand(20, &extent);
    let r = dispersal::disperse_with_progress(
        &be,
        &grid,
        &species,
        &trees,
        &DisperseOptions::default(),
        &mut |_| panic!("no species may start"),
        &c,
    );
    assert!(cancelled(r));

    let set = samples(30);
    let params = krige_params(10, Neighbourhood::Global, true);
    let progress = |_: f64| panic!("no node may be evaluated");
    assert!(cancelled(kriging::krige_with_progress(
        &be, &set, &params, &progress, &c
    )));
    assert!(cancelled(kriging::cross_validate_with_progress(
        &be, &set, &params, &progress, &c
    )));

    let pts: Vec<f64> = (0..200).map(|i| i as f64 * 0.37 % 10.0).collect();
    assert!(cancelled(neighbors::knn_with_progress(
        &be,
        &pts[..],
        None,
        2,
        &KnnParams::new(3),
        &progress,
        &c
    )));

    let world = flock::default_world_radius(32);
    let mut fl = Flock::new(
        &be,
        FlockParams::new(world),
        FlockState::init(32, Start::Dense, world, 1),
    )
    .unwrap();
    assert!(cancelled(fl.step_with_progress(3, &mut |_| {}, &c)));
    assert_eq!(fl.steps_taken(), 0);

    let g = hill_grid();
    let st = stations_for(&g);
    let r = wind::compute_with_progress(
        &be,
        g,
        &st,
        &WindOptions::default(),
        &mut |_, _| panic!("no solver check may run"),
        &c,
    );
    assert!(cancelled(r));
}

#[test]
fn dispersal_cancelled_after_a_species_starts_no_other() {
    let extent = Extent::new(0.0, 0.0, 40.0, 40.0).unwrap();
    let grid = GridSpec::from_extent(extent, 1.0).unwrap();
    let species = synth::sbs_species();
    assert!(species.len() >= 2);
    let trees = stand(200, &extent);
    for method in [Method::Exact, Method::Cutoff, Method::Multires] {
        let c = Cancel::new();
        let mut started = 0;
        let r = dispersal::disperse_with_progress(
            &Backend::Cpu,
            &grid,
            &species,
            &trees,
            &DisperseOptions {
                method,
                ..DisperseOptions::default()
            },
            &mut |s| {
                if let SpeciesStep::Start { .. } = s {
                    started += 1;
                    c.cancel();
                }
            },
            &c,
        );
        assert!(cancelled(r), "{method:?}");
        assert_eq!(started, 1, "{method:?}");
    }
}

#[test]
fn kriging_cancelled_after_the_first_band_evaluates_no_other() {
    // 300 × 300 nodes: two bands of at most 65 536 nodes, global and local.
    for nb in [
        Neighbourhood::Global,
        Neighbourhood::Local { k: 8, radius: None },
    ] {
        let set = samples(60);
        let params = krige_params(300, nb, false);
        let c = Cancel::new();
        let calls = AtomicUsize::new(0);
        let progress = |f: f64| {
            assert!(f < 1.0, "the first band is not the whole grid");
            calls.fetch_add(1, Ordering::Relaxed);
            c.cancel();
        };
        let r = kriging::krige_with_progress(&Backend::Cpu, &set, &params, &progress, &c);
        assert!(cancelled(r), "{nb:?}");
        assert_eq!(calls.load(Ordering::Relaxed), 1, "{nb:?}");
    }
    // Points: the same bands.
    let set = samples(60);
    let xs: Vec<f64> = (0..100_000).map(|i| (i % 1000) as f64).collect();
    let ys: Vec<f64> = (0..100_000).map(|i| (i / 100) as f64).collect();
    let params = KrigeParams::new(
        Variogram::new(Model::Exponential, 1.0, 300.0, 0.0).unwrap(),
        Target::Points { xs, ys },
    );
    let c = Cancel::new();
    let calls = AtomicUsize::new(0);
    let progress = |_: f64| {
        calls.fetch_add(1, Ordering::Relaxed);
        c.cancel();
    };
    let r = kriging::krige_with_progress(&Backend::Cpu, &set, &params, &progress, &c);
    assert!(cancelled(r));
    assert_eq!(calls.load(Ordering::Relaxed), 1);
}

#[test]
fn cross_validation_reports_its_folds_and_stops_when_cancelled() {
    let set = samples(3000);
    let params = krige_params(10, Neighbourhood::Local { k: 8, radius: None }, false);
    let last = Mutex::new(0.0f64);
    let full = kriging::cross_validate_with_progress(
        &Backend::Cpu,
        &set,
        &params,
        &|f| {
            let mut l = last.lock().unwrap();
            *l = l.max(f);
        },
        &Cancel::new(),
    )
    .unwrap();
    // Every fold counted once: the fraction ends at exactly 1.
    assert_eq!(*last.lock().unwrap(), 1.0);
    assert_eq!(
        full,
        kriging::cross_validate(&Backend::Cpu, &set, &params).unwrap()
    );
    let c = Cancel::new();
    let r =
        kriging::cross_validate_with_progress(&Backend::Cpu, &set, &params, &|_| c.cancel(), &c);
    assert!(cancelled(r));
}

#[test]
fn knn_cancelled_from_its_progress_stops() {
    // 100 000 2-D points, stored (every point a query) and separate queries, on each index.
    let n = 100_000;
    let pts: Vec<f64> = (0..2 * n)
        .map(|i| ((i as u64 * 2_654_435_761) % 1_000_003) as f64 * 1e-3)
        .collect();
    let queries: Vec<f64> = pts.iter().map(|v| v + 0.5).collect();
    for index in [
        neighbors::IndexKind::Uniform { cell_size: None },
        neighbors::IndexKind::Dynamic { max_per_leaf: 32 },
    ] {
        for q in [None, Some(&queries[..])] {
            let c = Cancel::new();
            let r = neighbors::knn_with_progress(
                &Backend::Cpu,
                &pts[..],
                q,
                2,
                &KnnParams::new(4).with_index(index),
                &|_| c.cancel(),
                &c,
            );
            assert!(cancelled(r), "{index:?} queries: {}", q.is_some());
        }
    }
    // Uncancelled with progress: the same rows as the plain call.
    let params = KnnParams::new(4);
    let a = neighbors::knn_with_progress(
        &Backend::Cpu,
        &pts[..],
        None,
        2,
        &params,
        &|_| {},
        &Cancel::new(),
    )
    .unwrap();
    assert_eq!(
        a,
        neighbors::knn(&Backend::Cpu, &pts[..], None, 2, &params).unwrap()
    );
}

#[test]
fn flock_cancelled_between_steps_keeps_the_steps_it_finished() {
    let world = flock::default_world_radius(64);
    let make = || {
        Flock::new(
            &Backend::Cpu,
            FlockParams::new(world),
            FlockState::init(64, Start::Dense, world, 5),
        )
        .unwrap()
    };
    let mut fl = make();
    let c = Cancel::new();
    let r = fl.step_with_progress(
        10,
        &mut |done| {
            if done == 3 {
                c.cancel()
            }
        },
        &c,
    );
    assert!(cancelled(r));
    assert_eq!(fl.steps_taken(), 3);
    // The state is that of 3 plain steps.
    let mut plain = make();
    plain.step(3).unwrap();
    assert_eq!(fl.state().unwrap(), plain.state().unwrap());
}

#[test]
fn wind_solvers_stop_at_the_check_after_a_cancel() {
    for (model, solver) in [
        (WindModel::Sherman, Solver::Multigrid),
        (WindModel::Sherman, Solver::MgCg),
        (WindModel::Sherman, Solver::Sor),
        (WindModel::West, Solver::Multigrid),
    ] {
        let g = hill_grid();
        let st = stations_for(&g);
        let opts = WindOptions {
            model,
            solver,
            tolerance: 1e-9,
            check_every: 1,
            max_iterations: 100_000,
            ..WindOptions::default()
        };
        let c = Cancel::new();
        let mut checks = 0;
        let r = wind::compute_with_progress(
            &Backend::Cpu,
            g,
            &st,
            &opts,
            &mut |_, _| {
                checks += 1;
                if checks == 2 {
                    c.cancel();
                }
            },
            &c,
        );
        assert!(cancelled(r), "{model:?} {solver:?}");
        // A 1e-9 reduction takes more than 2 checks of any solver; the solve stopped at the
        // check where the token was seen.
        assert_eq!(checks, 2, "{model:?} {solver:?}");
    }
    // An uncancelled run with a token gives the plain run's field.
    let g = hill_grid();
    let st = stations_for(&g);
    let opts = WindOptions::default();
    let a = wind::compute_with_progress(
        &Backend::Cpu,
        g.clone(),
        &st,
        &opts,
        &mut |_, _| {},
        &Cancel::new(),
    )
    .unwrap();
    let b = wind::compute(&Backend::Cpu, g, &st, &opts).unwrap();
    assert_eq!((a.u, a.v, a.w), (b.u, b.v, b.w));
}

/// Run `work` on a thread, cancel it after `after`, and return how long it took to return
/// from the cancel (and whether it returned `Cancelled`).
fn latency(
    after: Duration,
    work: impl FnOnce(&Cancel) -> Result<(), GeofieldError> + Send,
) -> (Duration, bool) {
    let c = Cancel::new();
    std::thread::scope(|s| {
        let h = s.spawn(|| cancelled(work(&c)));
        std::thread::sleep(after);
        let t = Instant::now();
        c.cancel();
        let was = h.join().unwrap();
        (t.elapsed(), was)
    })
}

/// A cancel reaches the inner loops of the big kernels: a job of many seconds returns within
/// one check interval. The intervals: 64 cells × 3000 trees (exact dispersal, ~1 ms), a tile of
/// 256 nodes × 1000² flops for the global kriging variance (~0.1 s on one slow core). The bound,
/// 1.5 s, is that plus a loaded 2-core machine's scheduling, and far below the uncancelled
/// run times (≥ 10 s), so a missing inner check fails.
#[test]
fn a_cancel_from_another_thread_interrupts_one_big_kernel() {
    let bound = Duration::from_millis(1500);
    let extent = Extent::new(0.0, 0.0, 1000.0, 1000.0).unwrap();
    let grid = GridSpec::from_extent(extent, 0.5).unwrap();
    let species = &synth::sbs_species()[..1];
    let trees = stand(3000, &extent);
    let opts = DisperseOptions {
        method: Method::Exact,
        ..DisperseOptions::default()
    };
    let (t, was) = latency(Duration::from_millis(300), |c| {
        dispersal::disperse_with_progress(
            &Backend::Cpu,
            &grid,
            species,
            &trees,
            &opts,
            &mut |_| {},
            c,
        )
        .map(drop)
    });
    eprintln!("dispersal: cancelled {t:?} after the token was set");
    assert!(was && t < bound, "dispersal: {t:?}");

    let set = samples(1000);
    let params = krige_params(1000, Neighbourhood::Global, true);
    let (t, was) = latency(Duration::from_millis(800), |c| {
        kriging::krige_with_progress(&Backend::Cpu, &set, &params, &|_| {}, c).map(drop)
    });
    eprintln!("kriging: cancelled {t:?} after the token was set");
    assert!(was && t < bound, "kriging: {t:?}");
}
