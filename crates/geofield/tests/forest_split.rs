//! A forest stand split by rows over parts (threads here; MPI ranks in the CLI's tests) against
//! the one-process run: the same stand, census and seed counts to the bit every year, for 2, 3
//! and 4 parts (one of them without rows), on an open plot and on a torus; a part failing ends
//! every part with its error; per-seed mode refused on every part; on the GPU, each part's
//! band of the maps on the GPU against the CPU within the maps' rounding.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use geofield::dispersal::{DisperseOptions, Eta, Kernel, Method, Precision, Species, Stand};
use geofield::forest::params::{ForestParams, ForestSpecies};
use geofield::forest::rain::Rain;
use geofield::forest::seed_counts::SeedDistribution;
use geofield::forest::simulate::{self, DispersalMode, SimulateOptions, SpeciesYear};
use geofield::forest::split::{LocalParts, band_rows, simulate_split};
use geofield::forest::trees::Trees;
use geofield::{Backend, Cancel, GeofieldError};
use geofield_core::{Extent, GridSpec};

mod backends;

/// 96 m × 560 m of 1 m cells: bands of 256 rows give parts of 256, 256 and 48 rows.
fn grid() -> GridSpec {
    GridSpec::from_extent(Extent::new(0.0, 0.0, 96.0, 560.0).unwrap(), 1.0).unwrap()
}

/// A Weibull canopy kernel with a lognormal gap kernel of lower STR (landing covers and their
/// survival), and a 2Dt with negative-binomial counts and non-spatial rain.
fn params(torus: bool) -> ForestParams {
    let sp = |name: &str, kernel, str_| {
        Species::new(name.into(), kernel, str_, 2.0, Eta::Analytic, 15.0, None).unwrap()
    };
    let mut f = ForestSpecies::with_defaults(sp(
        "fir",
        Kernel::Weibull {
            d: 1.32e-3,
            theta: 3.0,
        },
        300.0,
    ));
    f.gap = Some(sp("fir", Kernel::Lognormal { x0: 4.0, xb: 0.7 }, 150.0));
    f.establishment = 0.2;
    let mut a = ForestSpecies::with_defaults(sp("aspen", Kernel::TwoDt { u: 30.0, p: 1.5 }, 200.0));
    a.seed_distribution = SeedDistribution::NegativeBinomial { clumping: 3.0 };
    a.establishment = 0.1;
    a.rain = Some(Rain {
        intercept: 0.01,
        slope: 0.002,
    });
    ForestParams {
        species: vec![f, a],
        max_gap_density: 1,
        gap_cell_m: 8.0,
        torus,
    }
    .validated()
    .unwrap()
}

fn stand(g: &GridSpec, n: usize) -> Trees {
    let mut s =
        geofield::forest::rng::Stream::new(5, 0, 0, 0, geofield::forest::rng::Purpose::Growth);
    let (mut x, mut y, mut dbh, mut sp) = (vec![], vec![], vec![], vec![]);
    for i in 0..n {
        x.push(g.width_m() * s.uniform());
        y.push(g.height_m() * s.uniform());
        dbh.push(5.0 + 45.0 * s.uniform());
        sp.push((i % 3 == 0) as u32);
    }
    Trees::from_stand(&Stand::new(x, y, dbh, sp).unwrap(), 2).unwrap()
}

fn options(method: Method, precision: Precision) -> SimulateOptions {
    SimulateOptions {
        years: 3,
        seed: 11,
        mode: DispersalMode::Expected,
        dispersal: DisperseOptions {
            method,
            precision,
            ..Default::default()
        },
        suitability: None,
    }
}

/// Every year's census, every year's seeds per cell (whole grid), the final stand.
type Run = (Vec<Vec<SpeciesYear>>, Vec<Vec<Vec<u32>>>, Trees);

fn whole(be: &Backend, p: &ForestParams, o: &SimulateOptions) -> Run {
    let g = grid();
    let (mut years, mut seeds) = (Vec::new(), Vec::new());
    let (t, _) = simulate::simulate(be, &g, p, stand(&g, 500), o, &Cancel::new(), &mut |y| {
        years.push(y.species.clone());
        seeds.push(y.seeds()?.to_vec());
        Ok(())
    })
    .unwrap();
    (years, seeds, t)
}

/// Each part's run (threads sharing `LocalParts`), `fail` making part `p`'s observer fail in
/// year `y`.
fn split(
    be: &Backend,
    p: &ForestParams,
    o: &SimulateOptions,
    parts: usize,
    fail: Option<(usize, u32)>,
) -> Vec<Result<Run, GeofieldError>> {
    let g = grid();
    let all = LocalParts::new(parts);
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..parts)
            .map(|k| {
                let (all, g) = (&all, &g);
                s.spawn(move || {
                    let (mut years, mut seeds) = (Vec::new(), Vec::new());
                    let part = all.part(k);
                    let t = simulate_split(
                        be,
                        g,
                        p,
                        stand(g, 500),
                        o,
                        &part,
                        true,
                        &Cancel::new(),
                        &mut |y| {
                            if fail == Some((k, y.year)) {
                                return Err(GeofieldError::Invalid("the observer broke".into()));
                            }
                            years.push(y.species.clone());
                            seeds.push(y.seeds()?.to_vec());
                            Ok(())
                        },
                    )?;
                    Ok((years, seeds, t.0))
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

#[test]
fn bands_are_whole_units_and_cover_the_grid() {
    for (rows, parts) in [(560, 2), (560, 3), (560, 4), (1000, 3), (256, 2), (1, 1)] {
        let bands: Vec<_> = (0..parts).map(|p| band_rows(rows, p, parts)).collect();
        assert_eq!(bands[0].start, 0);
        assert_eq!(bands[parts - 1].end, rows);
        for w in bands.windows(2) {
            assert_eq!(w[0].end, w[1].start);
        }
        for b in &bands {
            assert!(
                b.start % 256 == 0 || b.is_empty() && b.start == rows,
                "{b:?}"
            );
        }
    }
    assert_eq!(band_rows(560, 3, 4), 512..560);
    assert!(band_rows(560, 0, 4).is_empty());
}

/// Open plot, the cutoff in f64: every part's census, seeds and final stand are the
/// one-process run's, bit for bit, for 2, 3 and 4 parts (with 4, part 0 has no rows).
#[test]
fn a_split_stand_is_the_whole_stand_bit_for_bit() {
    let p = params(false);
    let o = options(Method::Cutoff, Precision::F64);
    let reference = whole(&Backend::Cpu, &p, &o);
    let recruits: u64 = reference.0.iter().flatten().map(|s| s.recruits).sum();
    assert!(recruits > 100, "{recruits} recruits: too few to test");
    assert!(reference.0.iter().flatten().any(|s| s.seeds > 0));
    for parts in [2, 3, 4] {
        for (k, r) in split(&Backend::Cpu, &p, &o, parts, None)
            .into_iter()
            .enumerate()
        {
            let r = r.unwrap();
            assert!(
                r == reference,
                "{parts} parts: part {k} differs from one process"
            );
        }
    }
}

/// On a torus (periodic images of the parents in every band's stand), `auto` in f32: the same
/// to the bit with 2 parts.
#[test]
fn a_split_stand_on_a_torus_is_the_whole_stand() {
    let p = params(true);
    let o = options(Method::Auto, Precision::F32);
    let reference = whole(&Backend::Cpu, &p, &o);
    for r in split(&Backend::Cpu, &p, &o, 2, None) {
        assert!(r.unwrap() == reference);
    }
}

/// A part whose observer fails in year 2 ends every part with its error (no part waits); per
/// seed mode is refused on every part before the work.
#[test]
fn a_failing_part_ends_every_part() {
    let p = params(false);
    let o = options(Method::Cutoff, Precision::F64);
    for r in split(&Backend::Cpu, &p, &o, 3, Some((1, 2))) {
        let e = r.expect_err("every part fails").to_string();
        assert!(
            e.contains("part 1") && e.contains("the observer broke"),
            "{e}"
        );
    }
    let mut per_seed = o.clone();
    per_seed.mode = DispersalMode::PerSeed;
    for r in split(&Backend::Cpu, &p, &per_seed, 2, None) {
        let e = r.expect_err("refused").to_string();
        assert!(e.contains("per-seed dispersal is not split"), "{e}");
    }
}

/// Each part's band of the maps on the backend (the GPU's cutoff in f32) against the CPU's
/// whole run, year 1: the maps agree to ~1e-5 per cell (the dispersal kernels' contract), so
/// a cell's count changes only where that moves a draw across a step of the counts' law
/// (probability ≲ 1e-5 per cell: ~0.5 of these 53,760 cells expected); at most 5 cells may
/// differ, by a seed or two, and the recruits by as much.
#[test]
fn a_split_stand_on_every_backend_matches_the_cpu() {
    let p = params(false);
    let mut o = options(Method::Cutoff, Precision::F32);
    o.years = 1;
    let (cpu_years, cpu_seeds, _) = whole(&Backend::Cpu, &p, &o);
    backends::for_each_backend(|be| {
        for r in split(be, &p, &o, 2, None) {
            let (years, seeds, _) = r.unwrap();
            let pairs = seeds[1].iter().flatten().zip(cpu_seeds[1].iter().flatten());
            let (differ, worst) = pairs.fold((0, 0), |(n, w), (a, b)| {
                (n + usize::from(a != b), w.max(a.abs_diff(*b)))
            });
            if be.is_cuda() {
                assert!(
                    differ <= 5 && worst <= 2,
                    "{differ} cells differ, by {worst}"
                );
                for (a, b) in years[1].iter().zip(&cpu_years[1]) {
                    assert!(a.recruits.abs_diff(b.recruits) <= 5, "{a:?} vs {b:?}");
                }
            } else {
                assert_eq!((differ, &years), (0, &cpu_years));
            }
        }
    });
}
