//! Every dispersal method on every backend against the CPU library, and the exact and cutoff
//! sums also against the f64 oracle of `common.rs` written from the model's definition.
//!
//! Each test body runs on the CPU and, with a GPU, on CUDA (`backends::for_each_backend`: the
//! CUDA run skips with a notice without a GPU, fails with GEOFIELD_REQUIRE_GPU=1).
//!
//! Tolerances: the device sums in f32 with hardware transcendental approximations (a few ulps
//! each, three chained for a general θ): per cell ≤ 1e-5 relative, and ≤ 2e-6 of the band's
//! maximum (the kernels' accuracy contract, `geofield_cuda::dispersal`); on the CPU the
//! backend's result is the oracle's own and must agree exactly.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::needless_range_loop
)]

mod common;

use common::*;
use geofield::Backend;
use geofield::dispersal::{self, DisperseOptions, Method, Precision};
use geofield::synth::{self, DbhModel, Pattern};
use geofield_core::Extent;

mod backends;
use backends::for_each_backend;

fn both(
    be: &Backend,
    g: &geofield_core::GridSpec,
    sp: &[dispersal::Species],
    st: &dispersal::Stand,
    o: DisperseOptions,
) -> (dispersal::Dispersal, dispersal::Dispersal) {
    let c = dispersal::disperse(&Backend::Cpu, g, sp, st, &o).unwrap();
    // The GPU computes in f32 and refuses F64 (tests/dispersal_gpu_f64.rs): the CPU's F64 map
    // is then the oracle of its F32 one.
    let ob = if be.is_cuda() {
        DisperseOptions {
            precision: Precision::F32,
            ..o
        }
    } else {
        o
    };
    let d = dispersal::disperse(be, g, sp, st, &ob).unwrap();
    (c, d)
}

#[test]
fn exact_matches_cpu_every_shape() {
    for_each_backend(|gpu| {
        let shapes = all_shapes();
        for (cols, rows, n, seed, torus) in [
            (1, 1, 20, 1, false),
            (37, 29, 0, 2, false),
            (150, 97, 800, 3, false),
            (120, 90, 600, 4, true),
        ] {
            let g = grid(
                5000.0,
                8000.0,
                5000.0 + cols as f64,
                8000.0 + rows as f64,
                1.0,
            );
            let st = stand(
                n,
                (4950.0, 7950.0, 5050.0 + cols as f64, 8050.0 + rows as f64),
                seed,
                Pattern::Uniform,
                shapes.len(),
            );
            for precision in [Precision::F64, Precision::F32] {
                let o = DisperseOptions {
                    method: Method::Exact,
                    precision,
                    torus,
                    ..Default::default()
                };
                let (c, d) = both(gpu, &g, &shapes, &st, o);
                for (i, sp) in shapes.iter().enumerate() {
                    let m = dispersal::compare(&d.raster.band_f64(i), &c.raster.band_f64(i));
                    eprintln!(
                        "exact {} {cols}x{rows} n={n} torus={torus} {precision:?}: {m:?}",
                        sp.name
                    );
                    assert!(m.max_abs_over_max <= 2e-6, "{}: {m:?}", sp.name);
                    assert!(m.max_rel <= 1e-5, "{}: {m:?}", sp.name);
                    // Against the definition: the CPU's f64 sum is within 1e-12 of the oracle
                    // (`dispersal_cpu.rs`), so the backend is within its contract plus that.
                    let want = oracle(&g, sp, i as u32, &st, torus);
                    let e = max_rel_to_max(&d.raster.band_f64(i), &want);
                    assert!(e <= 2e-6 + 1e-12, "{} vs the oracle: {e}", sp.name);
                }
            }
        }
    });
}

#[test]
fn cutoff_matches_cpu_and_meets_tolerance() {
    for_each_backend(|gpu| {
        let shapes = all_shapes();
        for pattern in [Pattern::Uniform, Pattern::Clustered] {
            let g = grid(0.0, 0.0, 250.0, 170.0, 1.0);
            let st = stand(
                2500,
                (-60.0, -60.0, 310.0, 230.0),
                41,
                pattern,
                shapes.len(),
            );
            let o = DisperseOptions {
                method: Method::Cutoff,
                tolerance: 1e-5,
                ..Default::default()
            };
            let (c, d) = both(gpu, &g, &shapes, &st, o);
            for (i, sp) in shapes.iter().enumerate() {
                let m = dispersal::compare(&d.raster.band_f64(i), &c.raster.band_f64(i));
                eprintln!(
                    "cutoff {} {pattern:?}: R = {:?}: {m:?}",
                    sp.name, c.reports[i].radius_m
                );
                assert!(m.max_abs_over_max <= 2e-6, "{}: {m:?}", sp.name);
                let want = oracle(&g, sp, i as u32, &st, false);
                let e = max_rel_to_max(&d.raster.band_f64(i), &want);
                assert!(e <= 1e-5 + 2e-6, "{}: gpu cutoff vs oracle {e}", sp.name);
            }
        }
        // Torus through periodic images.
        let sp = synth::sbs_species();
        let e = Extent::new(0.0, 0.0, 300.0, 300.0).unwrap();
        let g = geofield_core::GridSpec::from_extent(e, 1.0).unwrap();
        let st = synth::forest(
            2700,
            &e,
            43,
            Pattern::Uniform,
            DbhModel::Realistic,
            &synth::SBS_SHARES,
        );
        let o = DisperseOptions {
            method: Method::Cutoff,
            torus: true,
            ..Default::default()
        };
        let (c, d) = both(gpu, &g, &sp, &st, o);
        for i in 0..sp.len() {
            let m = dispersal::compare(&d.raster.band_f64(i), &c.raster.band_f64(i));
            assert!(m.max_abs_over_max <= 2e-6, "torus {}: {m:?}", sp[i].name);
        }
    });
}

#[test]
fn multires_matches_cpu() {
    for_each_backend(|gpu| {
        let sp = synth::sbs_species();
        let e = Extent::new(0.0, 0.0, 200.0, 150.0).unwrap();
        let g = geofield_core::GridSpec::from_extent(e, 1.0).unwrap();
        let mut st = synth::forest(
            900,
            &e,
            51,
            Pattern::Uniform,
            DbhModel::Uniform15to60,
            &synth::SBS_SHARES,
        );
        // Trees outside the plot are summed exactly on both backends.
        st.x_m.push(-20.0);
        st.y_m.push(75.0);
        st.dbh_cm.push(45.0);
        st.species.push(1);
        for variant_b in [false, true] {
            let o = DisperseOptions {
                method: Method::Multires,
                multires_variant_b: variant_b,
                ..Default::default()
            };
            let (c, d) = both(gpu, &g, &sp, &st, o);
            for i in 0..sp.len() {
                let m = dispersal::compare(&d.raster.band_f64(i), &c.raster.band_f64(i));
                eprintln!("multires {} b={variant_b}: {m:?}", sp[i].name);
                assert!(m.max_abs_over_max <= 1e-5, "{}: {m:?}", sp[i].name);
            }
        }
    });
}

#[test]
fn results_are_deterministic() {
    for_each_backend(|gpu| {
        let sp = synth::sbs_species();
        let e = Extent::new(0.0, 0.0, 128.0, 128.0).unwrap();
        let g = geofield_core::GridSpec::from_extent(e, 1.0).unwrap();
        let st = synth::forest(
            500,
            &e,
            61,
            Pattern::Clustered,
            DbhModel::Realistic,
            &synth::SBS_SHARES,
        );
        for method in [Method::Exact, Method::Cutoff, Method::Multires] {
            let o = DisperseOptions {
                method,
                precision: dispersal::reference_precision(gpu),
                ..Default::default()
            };
            let a = dispersal::disperse(gpu, &g, &sp, &st, &o).unwrap();
            let b = dispersal::disperse(gpu, &g, &sp, &st, &o).unwrap();
            assert_eq!(
                a.raster.data, b.raster.data,
                "{method:?} not bitwise reproducible"
            );
        }
    });
}

/// Near/far on every backend against the f64 oracle, fat-tailed kernels with trees far beyond
/// the split, open plot and torus: error ≤ the certified bound (≤ tolerance) plus, on the GPU,
/// its f32 near-field contract (2e-6 of the band maximum).
#[test]
fn nearfar_matches_the_oracle_on_every_backend() {
    for_each_backend(|gpu| {
        let shapes = vec![
            species(
                "lognormal",
                dispersal::Kernel::Lognormal { x0: 15.0, xb: 0.6 },
            ),
            species("2dt", dispersal::Kernel::TwoDt { u: 600.0, p: 1.0 }),
        ];
        let g = grid(0.0, 0.0, 200.0, 150.0, 1.0);
        let st = stand(
            2000,
            (-200.0, -150.0, 400.0, 300.0),
            17,
            Pattern::Clustered,
            2,
        );
        let tol = 1e-5;
        let slack = if gpu.is_cuda() { 2e-6 } else { 1e-12 };
        for torus in [false, true] {
            // The torus needs a period the kernels fit in (K(L/2) ≤ 1e-8: the minimum image is
            // then the periodic sum): a 400 m square and shorter tails.
            let (g, st, shapes) = if torus {
                (
                    grid(0.0, 0.0, 400.0, 400.0, 1.0),
                    stand(1500, (0.0, 0.0, 400.0, 400.0), 18, Pattern::Uniform, 2),
                    vec![
                        species(
                            "lognormal",
                            dispersal::Kernel::Lognormal { x0: 8.0, xb: 0.5 },
                        ),
                        species("2dt", dispersal::Kernel::TwoDt { u: 100.0, p: 2.0 }),
                    ],
                )
            } else {
                (g, st.clone(), shapes.clone())
            };
            let o = DisperseOptions {
                method: Method::NearFar,
                tolerance: tol,
                torus,
                precision: if gpu.is_cuda() {
                    Precision::F32
                } else {
                    Precision::F64
                },
                multires_variant_b: false,
            };
            let d = dispersal::disperse(gpu, &g, &shapes, &st, &o).unwrap();
            for (i, sp) in shapes.iter().enumerate() {
                let rep = &d.reports[i];
                assert_eq!(rep.method, Method::NearFar, "{}: {:?}", sp.name, rep.note);
                let bound = rep.bound_rel.unwrap();
                assert!(bound <= tol);
                let exact = oracle(&g, sp, i as u32, &st, torus);
                let e = max_rel_to_max(&d.raster.band_f64(i), &exact);
                assert!(
                    e <= bound + slack,
                    "{} torus {torus}: {e:e} > {bound:e}",
                    sp.name
                );
            }
        }
    });
}

/// Strips of rows (`disperse_strips`) carry exactly the whole map's values on every backend,
/// in order, whole rows from multiples of `STRIP_ALIGN`; the cutoff computes strip by strip,
/// the other methods hand their map on as one strip. The reports' sums and maxima are the
/// whole run's too (row partial sums added in row order), the torus included.
#[test]
fn strips_of_rows_carry_the_whole_maps_values() {
    for_each_backend(|be| {
        let sp = synth::sbs_species();
        // 700 x 600 cells: neither a multiple of the 256-row strips nor of the tiles.
        let e = Extent::new(0.0, 0.0, 700.0, 600.0).unwrap();
        let g = geofield_core::GridSpec::from_extent(e, 1.0).unwrap();
        let st = synth::forest(
            3000,
            &e,
            17,
            Pattern::Clustered,
            DbhModel::Realistic,
            &synth::SBS_SHARES,
        );
        for (method, torus) in [
            (Method::Cutoff, false),
            (Method::Cutoff, true),
            (Method::Exact, false),
        ] {
            let o = DisperseOptions {
                method,
                torus,
                precision: dispersal::reference_precision(be),
                ..Default::default()
            };
            let whole = dispersal::disperse(be, &g, &sp, &st, &o).unwrap();
            let mut strips: Vec<dispersal::Strip> = Vec::new();
            let never = geofield::Cancel::new();
            let reports = dispersal::disperse_strips(
                be,
                &g,
                &sp,
                &st,
                &o,
                200,
                &mut |_| {},
                &never,
                &mut |s| {
                    strips.push(s);
                    Ok(())
                },
            )
            .unwrap();
            for b in 0..sp.len() {
                let mine: Vec<&dispersal::Strip> = strips.iter().filter(|s| s.band == b).collect();
                let want = if method == Method::Cutoff { 3 } else { 1 };
                assert_eq!(mine.len(), want, "{method:?} band {b}: strips");
                let mut next = 0;
                let mut values = Vec::new();
                for s in mine {
                    assert_eq!(s.row0, next, "{method:?} band {b}: strips out of order");
                    assert_eq!(s.row0 % dispersal::STRIP_ALIGN, 0);
                    let n = match &s.data {
                        geofield_core::RasterData::F32(v) => {
                            values.extend(v.iter().map(|&x| f64::from(x)));
                            v.len()
                        }
                        geofield_core::RasterData::F64(v) => {
                            values.extend_from_slice(v);
                            v.len()
                        }
                    };
                    assert_eq!(n % g.cols, 0, "whole rows");
                    next += n / g.cols;
                }
                assert_eq!(next, g.rows);
                let w = whole.raster.band_f64(b);
                assert!(
                    values
                        .iter()
                        .zip(&w)
                        .all(|(a, b)| a.to_bits() == b.to_bits()),
                    "{method:?} torus {torus} band {b}: strips differ from the whole map"
                );
                assert_eq!(
                    reports[b].seeds_on_grid.to_bits(),
                    whole.reports[b].seeds_on_grid.to_bits()
                );
                assert_eq!(
                    reports[b].max_density_per_m2,
                    whole.reports[b].max_density_per_m2
                );
            }
        }
    });
}
