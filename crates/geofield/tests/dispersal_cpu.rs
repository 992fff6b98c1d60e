//! CPU dispersal against the independent f64 oracle: exact, cutoff (tolerance proven), multires
//! (error in the documented range), and the degenerate cases.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::needless_range_loop
)]

mod common;

use common::*;
use geofield::Backend;
use geofield::dispersal::{self, DisperseOptions, Kernel, Method, Precision, Stand};
use geofield::synth::{self, DbhModel, Pattern};
use geofield_core::Extent;

fn run(
    grid: &geofield_core::GridSpec,
    sp: &[dispersal::Species],
    stand: &Stand,
    opts: DisperseOptions,
) -> Vec<Vec<f64>> {
    let out = dispersal::disperse(&Backend::Cpu, grid, sp, stand, &opts).unwrap();
    (0..sp.len()).map(|b| out.raster.band_f64(b)).collect()
}

fn opts(method: Method) -> DisperseOptions {
    DisperseOptions {
        method,
        ..Default::default()
    }
}

#[test]
fn exact_matches_oracle_at_several_sizes() {
    let shapes = all_shapes();
    for (cols, rows, h, n, seed) in [
        (1, 1, 1.0, 30, 1),
        (7, 5, 2.0, 1, 2),
        (40, 23, 1.5, 200, 3),
        (64, 64, 1.0, 500, 4),
    ] {
        let g = grid(
            1000.0,
            2000.0,
            1000.0 + cols as f64 * h,
            2000.0 + rows as f64 * h,
            h,
        );
        // Trees in a buffer around the grid too: those outside still contribute.
        let st = stand(
            n,
            (
                900.0,
                1900.0,
                1100.0 + cols as f64 * h,
                2100.0 + rows as f64 * h,
            ),
            seed,
            Pattern::Uniform,
            shapes.len(),
        );
        let got = run(&g, &shapes, &st, opts(Method::Exact));
        for (i, sp) in shapes.iter().enumerate() {
            let want = oracle(&g, sp, i as u32, &st, false);
            let e = max_rel_to_max(&got[i], &want);
            assert!(e < 1e-12, "{} {cols}x{rows} n={n}: {e}", sp.name);
        }
    }
}

#[test]
fn degenerate_stands() {
    let sp = vec![species(
        "w",
        Kernel::Weibull {
            d: 1e-3,
            theta: 3.0,
        },
    )];
    let g = grid(0.0, 0.0, 10.0, 8.0, 1.0);
    // No trees: all zeros for every method.
    for m in [
        Method::Exact,
        Method::Cutoff,
        Method::Multires,
        Method::Auto,
    ] {
        let out = run(&g, &sp, &Stand::default(), opts(m));
        assert!(out[0].iter().all(|&v| v == 0.0), "{m:?}");
    }
    // One tree exactly on a cell centre: the value there is STR/η (DBH/30)^β K(0).
    let st = Stand::new(vec![3.5], vec![4.5], vec![30.0], vec![0]).unwrap();
    let out = run(&g, &sp, &st, opts(Method::Exact));
    let (row, col) = g.cell_of(3.5, 4.5).unwrap();
    let want = sp[0].str_ / sp[0].kernel.eta_analytic();
    assert!((out[0][row * g.cols + col] - want).abs() < 1e-15 * want);
    // Coincident trees add up: two identical trees give twice one tree.
    let two = Stand::new(vec![3.5, 3.5], vec![4.5, 4.5], vec![30.0, 30.0], vec![0, 0]).unwrap();
    let out2 = run(&g, &sp, &two, opts(Method::Exact));
    for (a, b) in out2[0].iter().zip(&out[0]) {
        assert!((a - 2.0 * b).abs() <= 1e-15 * a.abs());
    }
    // Trees below the minimum DBH contribute nothing; at the minimum they do.
    let small = Stand::new(
        vec![3.5, 3.5],
        vec![4.5, 4.5],
        vec![14.99, 15.0],
        vec![0, 0],
    )
    .unwrap();
    let out3 = run(&g, &sp, &small, opts(Method::Exact));
    let w15 = sp[0].weight(15.0).unwrap();
    assert!((out3[0][row * g.cols + col] - w15).abs() < 1e-15);
}

#[test]
fn torus_matches_minimum_image_oracle() {
    let shapes = all_shapes();
    let g = grid(0.0, 0.0, 60.0, 45.0, 1.5);
    let st = stand(
        150,
        (0.0, 0.0, 60.0, 45.0),
        11,
        Pattern::Uniform,
        shapes.len(),
    );
    // A tree outside the rectangle wraps in.
    let mut st2 = st.clone();
    st2.x_m.push(-7.0);
    st2.y_m.push(50.0);
    st2.dbh_cm.push(40.0);
    st2.species.push(0);
    let o = DisperseOptions {
        torus: true,
        ..opts(Method::Exact)
    };
    let got = run(&g, &shapes, &st2, o);
    for (i, sp) in shapes.iter().enumerate() {
        let want = oracle(&g, sp, i as u32, &st2, true);
        assert!(max_rel_to_max(&got[i], &want) < 1e-12, "{}", sp.name);
    }
    // Cutoff on the torus (periodic images) meets the tolerance against the same oracle.
    let o = DisperseOptions {
        torus: true,
        tolerance: 1e-6,
        ..opts(Method::Cutoff)
    };
    let sp = vec![species(
        "w",
        Kernel::Weibull {
            d: 5e-3,
            theta: 3.0,
        },
    )];
    let g = grid(0.0, 0.0, 120.0, 100.0, 1.0);
    let st = stand(300, (0.0, 0.0, 120.0, 100.0), 12, Pattern::Uniform, 1);
    let out = dispersal::disperse(&Backend::Cpu, &g, &sp, &st, &o).unwrap();
    let r = out.reports[0].radius_m.unwrap();
    assert!(r < 50.0, "expected a truncating radius, got {r}");
    let want = oracle(&g, &sp[0], 0, &st, true);
    let e = max_rel_to_max(&out.raster.band_f64(0), &want);
    assert!(e <= 1e-6, "torus cutoff error {e}");
}

#[test]
fn cutoff_meets_tolerance_for_every_shape_and_pattern() {
    let shapes = all_shapes();
    for pattern in [Pattern::Uniform, Pattern::Clustered] {
        for (seed, tol) in [(21u64, 1e-6), (22, 1e-4)] {
            let g = grid(0.0, 0.0, 160.0, 120.0, 1.0);
            let st = stand(
                900,
                (-40.0, -40.0, 200.0, 160.0),
                seed,
                pattern,
                shapes.len(),
            );
            let o = DisperseOptions {
                tolerance: tol,
                ..opts(Method::Cutoff)
            };
            let out = dispersal::disperse(&Backend::Cpu, &g, &shapes, &st, &o).unwrap();
            for (i, sp) in shapes.iter().enumerate() {
                let rep = &out.reports[i];
                assert_eq!(rep.method, Method::Cutoff);
                let want = oracle(&g, sp, i as u32, &st, false);
                let got = out.raster.band_f64(i);
                let e = max_rel_to_max(&got, &want);
                assert!(
                    e <= tol,
                    "{} {pattern:?} tol {tol}: error {e} (R = {:?})",
                    sp.name,
                    rep.radius_m
                );
                assert!(rep.bound_rel.unwrap() <= tol * (1.0 + 1e-9));
                // The cutoff never exceeds the exact value (it drops non-negative terms).
                assert!(
                    got.iter()
                        .zip(&want)
                        .all(|(a, b)| *a <= b * (1.0 + 1e-12) + 1e-300)
                );
            }
        }
    }
}

#[test]
fn cutoff_truncates_for_light_tails() {
    // On a large plot the light-tailed radius is well inside the plot: the test above is not
    // passing merely because R covers everything.
    let sp = synth::sbs_species();
    let g = grid(0.0, 0.0, 400.0, 300.0, 1.0);
    let st = synth::forest(
        3600,
        &Extent::new(0.0, 0.0, 400.0, 300.0).unwrap(),
        5,
        Pattern::Uniform,
        DbhModel::Uniform15to60,
        &synth::SBS_SHARES,
    );
    let o = DisperseOptions {
        tolerance: 1e-6,
        ..opts(Method::Cutoff)
    };
    let out = dispersal::disperse(&Backend::Cpu, &g, &sp, &st, &o).unwrap();
    for (i, rep) in out.reports.iter().enumerate() {
        let r = rep.radius_m.unwrap();
        assert!(r > 30.0 && r < 120.0, "{}: R = {r}", rep.name);
        // The breakdown's parts are measured within the species' time, one after the other.
        assert!(rep.prepare_s > 0.0 && rep.compute_s > 0.0, "{rep:?}");
        assert!(rep.prepare_s + rep.compute_s <= rep.seconds, "{rep:?}");
        let exact = geofield::bench::dispersal::exact(
            &g,
            &sp[i].kernel,
            &geofield::bench::dispersal::Sources::for_species(&st, i as u32, &sp[i], &g, false),
            false,
        );
        let m = dispersal::compare(&out.raster.band_f64(i), &exact);
        assert!(m.max_abs_over_max <= 1e-6, "{}: {m:?}", rep.name);
    }
}

#[test]
fn auto_picks_a_method_and_meets_tolerance() {
    let sp = synth::sbs_species();
    let g = grid(0.0, 0.0, 300.0, 300.0, 1.0);
    let st = synth::forest(
        2700,
        &Extent::new(0.0, 0.0, 300.0, 300.0).unwrap(),
        9,
        Pattern::Uniform,
        DbhModel::Realistic,
        &synth::SBS_SHARES,
    );
    let out = dispersal::disperse(&Backend::Cpu, &g, &sp, &st, &opts(Method::Auto)).unwrap();
    for (i, rep) in out.reports.iter().enumerate() {
        assert_ne!(rep.method, Method::Auto);
        assert!(
            rep.note.as_deref().unwrap_or("").starts_with("auto:"),
            "{rep:?}"
        );
        let want = oracle(&g, &sp[i], i as u32, &st, false);
        assert!(max_rel_to_max(&out.raster.band_f64(i), &want) <= 1e-6);
    }
    // A tiny plot with few trees: exact is cheaper.
    let g = grid(0.0, 0.0, 4.0, 4.0, 1.0);
    let st = Stand::new(vec![1.0], vec![1.0], vec![30.0], vec![0]).unwrap();
    let out = dispersal::disperse(&Backend::Cpu, &g, &sp[..1], &st, &opts(Method::Auto)).unwrap();
    assert_eq!(out.reports[0].method, Method::Exact);
}

#[test]
fn multires_error_is_in_the_documented_range() {
    // An SBS-like 4-species stand on a 1 m grid: 256 m x 256 m at 300 stems/ha. The method has
    // no a-priori bound, so the reference is the paper's own published accuracy (Fan et al.
    // 2012: 0-4.1 % per-cell error, mean 1.72 %, against the exact sum): the port must be at
    // least as accurate (variant A, rho_q = rho 2^(q-1)). The total seed mass then cannot be off
    // by more than the largest per-cell relative error (|sum a - sum e| <= max|a/e - 1| sum e;
    // cells below 1e-6 of the maximum, left out of max_rel, add at most 1e-6 relative).
    // Variant B (rho at every level) lumps whole quadrants: it must be far outside the paper's
    // range, or the two readings would not be told apart.
    let sp = synth::sbs_species();
    let e = Extent::new(0.0, 0.0, 256.0, 256.0).unwrap();
    let g = geofield_core::GridSpec::from_extent(e, 1.0).unwrap();
    let st = synth::forest(
        1966,
        &e,
        31,
        Pattern::Uniform,
        DbhModel::Uniform15to60,
        &synth::SBS_SHARES,
    );
    let exact = dispersal::disperse(&Backend::Cpu, &g, &sp, &st, &opts(Method::Exact)).unwrap();
    let a = dispersal::disperse(&Backend::Cpu, &g, &sp, &st, &opts(Method::Multires)).unwrap();
    let b = dispersal::disperse(
        &Backend::Cpu,
        &g,
        &sp,
        &st,
        &DisperseOptions {
            multires_variant_b: true,
            ..opts(Method::Multires)
        },
    )
    .unwrap();
    let mut worst_a = 0.0f64;
    for i in 0..sp.len() {
        let ma = dispersal::compare(&a.raster.band_f64(i), &exact.raster.band_f64(i));
        let mb = dispersal::compare(&b.raster.band_f64(i), &exact.raster.band_f64(i));
        eprintln!(
            "multires A {}: {ma:?}\nmultires B {}: {mb:?}",
            sp[i].name, sp[i].name
        );
        const PAPER_MAX_REL: f64 = 0.041;
        const PAPER_MEAN_REL: f64 = 0.0172;
        assert!(
            ma.mean_rel <= PAPER_MEAN_REL
                && ma.max_rel <= PAPER_MAX_REL
                && ma.mass_rel.abs() <= ma.max_rel + 1e-6,
            "{}: {ma:?}",
            sp[i].name
        );
        assert!(
            mb.mean_rel > PAPER_MAX_REL,
            "variant B should be grossly wrong here: {mb:?}"
        );
        worst_a = worst_a.max(ma.max_rel);
        assert_eq!(a.reports[i].rho_m, sp[i].multires_threshold_m);
    }
    // Clustered nodes are used: the port is not secretly the exact sum (which, in f64 over a few
    // thousand terms, would agree with the exact method to ~1e-13).
    assert!(worst_a > 1e-9, "{worst_a}");
}

#[test]
fn precision_f32_output_is_close_to_f64() {
    let sp = vec![species(
        "w",
        Kernel::Weibull {
            d: 3.8e-5,
            theta: 3.0,
        },
    )];
    let g = grid(0.0, 0.0, 50.0, 40.0, 1.0);
    let st = stand(100, (0.0, 0.0, 50.0, 40.0), 3, Pattern::Uniform, 1);
    let a = dispersal::disperse(&Backend::Cpu, &g, &sp, &st, &opts(Method::Exact)).unwrap();
    let b = dispersal::disperse(
        &Backend::Cpu,
        &g,
        &sp,
        &st,
        &DisperseOptions {
            precision: Precision::F32,
            ..opts(Method::Exact)
        },
    )
    .unwrap();
    assert!(matches!(b.raster.data, geofield_core::RasterData::F32(_)));
    assert!(max_rel_to_max(&b.raster.band_f64(0), &a.raster.band_f64(0)) < 1e-7);
}

#[test]
fn torus_warnings_and_unsupported_combinations() {
    // A 60 m torus is small for aspen (K(30 m) = 0.36): the report warns.
    let sp = synth::sbs_species();
    let g = grid(0.0, 0.0, 60.0, 60.0, 1.0);
    let st = stand(40, (0.0, 0.0, 60.0, 60.0), 71, Pattern::Uniform, 4);
    let o = DisperseOptions {
        torus: true,
        ..opts(Method::Exact)
    };
    let out = dispersal::disperse(&Backend::Cpu, &g, &sp, &st, &o).unwrap();
    assert!(
        out.reports[1].warnings.iter().any(|w| w.contains("torus")),
        "{:?}",
        out.reports[1]
    );
    // On a 1 km torus the fir kernel is negligible at L/2: no warning.
    let g = grid(0.0, 0.0, 1000.0, 1000.0, 10.0);
    let out = dispersal::disperse(&Backend::Cpu, &g, &sp[..1], &Stand::default(), &o).unwrap();
    assert!(out.reports[0].warnings.is_empty());
    // The paper's method is open-plot only.
    let o = DisperseOptions {
        torus: true,
        ..opts(Method::Multires)
    };
    let e = dispersal::disperse(&Backend::Cpu, &g, &sp, &Stand::default(), &o)
        .unwrap_err()
        .to_string();
    assert!(e.contains("multires") && e.contains("torus"), "{e}");
    // Cutoff on a torus smaller than 2R sums the minimum image whole and says so.
    let g = grid(0.0, 0.0, 60.0, 60.0, 1.0);
    let o = DisperseOptions {
        torus: true,
        ..opts(Method::Cutoff)
    };
    let out = dispersal::disperse(&Backend::Cpu, &g, &sp, &st, &o).unwrap();
    assert!(
        out.reports[1]
            .note
            .as_deref()
            .unwrap_or("")
            .contains("whole"),
        "{:?}",
        out.reports[1]
    );
    let want = oracle(&g, &sp[1], 1, &st, true);
    assert!(max_rel_to_max(&out.raster.band_f64(1), &want) < 1e-12);
}
