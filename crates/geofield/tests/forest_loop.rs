//! The forest's yearly loop: determinism over thread counts, per-seed against expected mode
//! through the whole year (gap and canopy kernels, survival, establishment), exact seed rain,
//! and the bookkeeping of stages and recruits.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use geofield::dispersal::{DisperseOptions, Eta, Kernel, Method, Precision, Species, Stand};
use geofield::forest::params::{ForestParams, ForestSpecies, Growth, Mortality};
use geofield::forest::rain::Rain;
use geofield::forest::seed_counts::SeedDistribution;
use geofield::forest::simulate::{self, DispersalMode, SimulateOptions, SpeciesYear};
use geofield::forest::trees::Trees;
use geofield::{Backend, Cancel};
use geofield_core::{Extent, GridSpec};

mod backends;

fn grid(w: f64, h: f64) -> GridSpec {
    GridSpec::from_extent(Extent::new(0.0, 0.0, w, h).unwrap(), 1.0).unwrap()
}

/// Two species: a Weibull canopy kernel with a lognormal gap kernel of lower STR, and a 2Dt
/// without gap parameters; Poisson and negative-binomial counts.
fn params(torus: bool) -> ForestParams {
    let fir = Species::new(
        "fir".into(),
        Kernel::Weibull {
            d: 1.32e-3,
            theta: 3.0,
        },
        300.0,
        2.0,
        Eta::Analytic,
        15.0,
        None,
    )
    .unwrap();
    let mut f = ForestSpecies::with_defaults(fir.clone());
    f.gap = Some(
        Species::new(
            "fir".into(),
            Kernel::Lognormal { x0: 4.0, xb: 0.7 },
            150.0,
            2.0,
            Eta::Analytic,
            15.0,
            None,
        )
        .unwrap(),
    );
    f.establishment = 0.2;
    let aspen = Species::new(
        "aspen".into(),
        Kernel::TwoDt { u: 30.0, p: 1.5 },
        200.0,
        2.0,
        Eta::Analytic,
        10.0,
        None,
    )
    .unwrap();
    let mut a = ForestSpecies::with_defaults(aspen);
    a.seed_distribution = SeedDistribution::NegativeBinomial { clumping: 3.0 };
    a.establishment = 0.1;
    ForestParams {
        species: vec![f, a],
        max_gap_density: 1,
        gap_cell_m: 8.0,
        torus,
    }
    .validated()
    .unwrap()
}

fn stand(n: usize, w: f64, h: f64) -> Stand {
    let mut s =
        geofield::forest::rng::Stream::new(5, 0, 0, 0, geofield::forest::rng::Purpose::Growth);
    let (mut x, mut y, mut dbh, mut sp) = (vec![], vec![], vec![], vec![]);
    for i in 0..n {
        x.push(w * s.uniform());
        y.push(h * s.uniform());
        dbh.push(5.0 + 45.0 * s.uniform());
        sp.push((i % 3 == 0) as u32);
    }
    Stand::new(x, y, dbh, sp).unwrap()
}

fn options(years: u32, seed: u64, mode: DispersalMode) -> SimulateOptions {
    SimulateOptions {
        years,
        seed,
        mode,
        dispersal: DisperseOptions {
            method: Method::Exact,
            precision: Precision::F64,
            ..Default::default()
        },
        suitability: None,
    }
}

/// Every year's numbers and the final trees of a run on `be`.
fn run_on(
    be: &Backend,
    g: &GridSpec,
    p: &ForestParams,
    st: &Stand,
    o: &SimulateOptions,
) -> (Vec<Vec<SpeciesYear>>, Vec<Vec<u32>>, Trees) {
    let mut years = Vec::new();
    let mut seeds = Vec::new();
    let (t, _) = simulate::simulate(
        be,
        g,
        p,
        Trees::from_stand(st, p.species.len()).unwrap(),
        o,
        &Cancel::new(),
        &mut |y| {
            years.push(y.species.clone());
            seeds.extend(y.seeds()?.iter().cloned());
            Ok(())
        },
    )
    .unwrap();
    (years, seeds, t)
}

/// Year 1 of expected mode (f32 maps) on every backend against the CPU's. The CPU agrees with
/// itself exactly. On the GPU the maps agree with the CPU's to ~1e-5 per cell (the dispersal
/// kernels' contract), and a cell's count changes only where that moves a draw across a
/// boundary of the counts' law, with probability about |Δλ| × the law's density (≲ 1e-5 per
/// cell here); so at most 3 cells of the 6144 may differ by a seed or so, and the recruits'
/// totals by at most that.
#[test]
fn expected_mode_on_every_backend_matches_the_cpu() {
    let g = grid(64.0, 48.0);
    let p = params(false);
    let st = stand(60, 64.0, 48.0);
    let mut o = options(1, 21, DispersalMode::Expected);
    o.dispersal.precision = Precision::F32;
    o.dispersal.method = Method::Cutoff;
    let (cpu_years, cpu_seeds, _) = run_on(&Backend::Cpu, &g, &p, &st, &o);
    backends::for_each_backend(|be| {
        let (years, seeds, _) = run_on(be, &g, &p, &st, &o);
        let differ: usize = seeds
            .iter()
            .zip(&cpu_seeds)
            .map(|(a, b)| a.iter().zip(b).filter(|(x, y)| x != y).count())
            .sum();
        let worst = seeds
            .iter()
            .zip(&cpu_seeds)
            .flat_map(|(a, b)| a.iter().zip(b).map(|(x, y)| x.abs_diff(*y)))
            .max()
            .unwrap_or(0);
        if be.is_cuda() {
            assert!(
                differ <= 3 && worst <= 2,
                "{differ} cells differ, by up to {worst}"
            );
            for (a, b) in years[1].iter().zip(&cpu_years[1]) {
                assert!(a.recruits.abs_diff(b.recruits) <= 3, "{a:?} vs {b:?}");
            }
        } else {
            assert_eq!((differ, &years), (0, &cpu_years));
        }
    });
}

/// The whole year on the GPU (stand kept on the device) against the CPU loop, bit for bit, where
/// the maps play no part: six species that only rain (STR 0: no parent sheds seeds; intercepts
/// only, so each cell's λ is the same double on both sides), one per seed law and λ from 0.3 to
/// 600 seeds per cell (Poisson by inversion and by PTRS, binomials split above 256 trials, gamma
/// below and above shape 1, normals by Box–Muller), a suitability layer with NaN and values
/// outside [0, 1], density-dependent mortality and both growth laws, five years. Every count of
/// every year, every seed map and every final tree (position, DBH, species, id and order) must
/// be the CPU's: the same draws by the same correctly rounded operations. Basal areas are summed
/// in another order on the device, so they agree to 1e-12 relative (each of the ≤ 1e5 terms is
/// rounded once: ≲ 1e5 × 1.1e-16).
#[test]
fn a_year_on_the_device_is_the_cpus_bit_for_bit() {
    let g = grid(40.0, 30.0);
    let laws = [
        (SeedDistribution::Deterministic, 0.3),
        (SeedDistribution::Poisson, 4.0),
        (SeedDistribution::Poisson, 600.0),
        (SeedDistribution::NegativeBinomial { clumping: 0.5 }, 20.0),
        (SeedDistribution::Normal { sd: 3.0 }, 8.0),
        (SeedDistribution::Lognormal { sigma: 0.8 }, 5.0),
    ];
    let species = laws
        .iter()
        .enumerate()
        .map(|(i, &(law, intercept))| {
            let sp = Species::new(
                format!("s{i}"),
                Kernel::Weibull {
                    d: 1e-3,
                    theta: 2.0,
                },
                0.0,
                2.0,
                Eta::Analytic,
                10.0,
                None,
            )
            .unwrap();
            let mut f = ForestSpecies::with_defaults(sp);
            f.seed_distribution = law;
            f.rain = Some(Rain {
                intercept,
                slope: 0.0,
            });
            f.establishment = 0.01;
            f.growth = [
                Growth::ConstantRadial {
                    radial_mm_per_yr: 2.0,
                },
                Growth::SizeDependent {
                    max_cm_per_yr: 0.8,
                    peak_dbh_cm: 20.0,
                    min_cm_per_yr: 0.1,
                },
                Growth::SizeDependent {
                    max_cm_per_yr: 0.6,
                    peak_dbh_cm: 40.0,
                    min_cm_per_yr: 0.05,
                },
            ];
            f.mortality = [
                Mortality {
                    annual: 0.2,
                    per_neighbour: 0.0005,
                },
                Mortality {
                    annual: 0.05,
                    per_neighbour: 0.0001,
                },
                Mortality {
                    annual: 0.01,
                    per_neighbour: 0.0,
                },
            ];
            f
        })
        .collect();
    let p = ForestParams {
        species,
        max_gap_density: 0,
        gap_cell_m: 8.0,
        torus: false,
    }
    .validated()
    .unwrap();
    let mut st = stand(60, 40.0, 30.0);
    st.species = (0..60).map(|i| i % 6).collect();
    let mut o = options(5, 77, DispersalMode::Expected);
    o.dispersal.precision = Precision::F32;
    let mut s =
        geofield::forest::rng::Stream::new(9, 0, 0, 0, geofield::forest::rng::Purpose::Growth);
    o.suitability = Some(
        (0..g.n_cells())
            .map(|i| match i % 50 {
                0 => f32::NAN,
                1 => 1.5,
                2 => -0.5,
                _ => s.uniform() as f32,
            })
            .collect(),
    );
    let (cpu_years, cpu_seeds, cpu_trees) = run_on(&Backend::Cpu, &g, &p, &st, &o);
    assert!(cpu_trees.len() > 1000, "{} trees", cpu_trees.len());
    backends::for_each_backend(|be| {
        let (years, seeds, trees) = run_on(be, &g, &p, &st, &o);
        assert!(seeds == cpu_seeds, "seed maps differ");
        assert_eq!(trees, cpu_trees);
        for (a, b) in years.iter().flatten().zip(cpu_years.iter().flatten()) {
            let ba = a.basal_area_m2_per_ha;
            assert!(
                (ba - b.basal_area_m2_per_ha).abs() <= 1e-12 * b.basal_area_m2_per_ha,
                "{a:?} vs {b:?}"
            );
            let same = SpeciesYear {
                basal_area_m2_per_ha: b.basal_area_m2_per_ha,
                ..*a
            };
            assert_eq!(same, *b);
        }
        assert_eq!(years.len(), cpu_years.len());
    });
}

/// Per-seed mode on every backend: the GPU places every seed in the CPU's cell (same draws,
/// the same floating-point operations), and everything after is the CPU library's, so every
/// count of every year, every seed map and every final tree is the CPU's, bit for bit (gap and
/// canopy kernels, torus).
#[test]
fn per_seed_mode_is_the_same_on_every_backend() {
    let g = grid(64.0, 48.0);
    let p = params(true);
    let st = stand(60, 64.0, 48.0);
    let o = options(4, 31, DispersalMode::PerSeed);
    let cpu = run_on(&Backend::Cpu, &g, &p, &st, &o);
    backends::for_each_backend(|be| {
        let got = run_on(be, &g, &p, &st, &o);
        assert_eq!(got.0, cpu.0);
        assert_eq!(got.1, cpu.1);
        assert_eq!(got.2, cpu.2);
    });
}

/// Every year's numbers and the final trees of a run on the CPU.
fn run(
    g: &GridSpec,
    p: &ForestParams,
    st: &Stand,
    o: &SimulateOptions,
) -> (Vec<Vec<SpeciesYear>>, Vec<Vec<u32>>, Trees) {
    run_on(&Backend::Cpu, g, p, st, o)
}

/// Same seed, same run, for 1 thread and 3, in both modes: every count of every year, every
/// seed map and every final tree, bit for bit.
#[test]
fn a_run_is_the_same_for_any_thread_count() {
    let g = grid(64.0, 48.0);
    let p = params(true);
    let st = stand(60, 64.0, 48.0);
    for mode in [DispersalMode::Expected, DispersalMode::PerSeed] {
        let o = options(6, 11, mode);
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap()
            .install(|| run(&g, &p, &st, &o));
        let three = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap()
            .install(|| run(&g, &p, &st, &o));
        assert_eq!(one.0, three.0, "{mode:?}");
        assert_eq!(one.1, three.1, "{mode:?}");
        assert_eq!(one.2, three.2, "{mode:?}");
        // The run did something: recruits every year, trees died and grew.
        assert!(
            one.0[1..]
                .iter()
                .all(|y| y.iter().map(|s| s.recruits).sum::<u64>() > 0)
        );
        // A different seed gives a different run.
        let other = run(&g, &p, &st, &options(6, 12, mode));
        assert_ne!(one.0, other.0);
    }
}

/// Year 1 of both modes over 60 replicates: the mean seeds and recruits of each species agree
/// within 4 standard errors of their difference (gap and canopy parents, the lognormal gap
/// kernel, the survival of seeds landing in the other cover and establishment are all in the
/// path). The per-seed mean is the exact expectation; the expected mode's map evaluates the
/// density at cell centres, whose error here is ~1e-4 of a cell's count, far inside the test.
#[test]
fn per_seed_and_expected_modes_agree_in_distribution() {
    let g = grid(64.0, 48.0);
    let p = params(true);
    let st = stand(60, 64.0, 48.0);
    let reps = 60u64;
    let mut acc = [[[0.0f64; 2]; 2]; 4]; // [mode][species][sum, sum²] seeds; recruits at +2
    for (m, mode) in [DispersalMode::Expected, DispersalMode::PerSeed]
        .into_iter()
        .enumerate()
    {
        for r in 0..reps {
            let (years, _, _) = run(&g, &p, &st, &options(1, 100 + r, mode));
            for s in 0..2 {
                let (a, b) = (years[1][s].seeds as f64, years[1][s].recruits as f64);
                acc[m][s][0] += a;
                acc[m][s][1] += a * a;
                acc[m + 2][s][0] += b;
                acc[m + 2][s][1] += b * b;
            }
        }
    }
    let n = reps as f64;
    #[allow(clippy::needless_range_loop)]
    for what in [0, 2] {
        for s in 0..2 {
            let stat = |k: usize| {
                let (sum, sum2) = (acc[k][s][0], acc[k][s][1]);
                let mean = sum / n;
                (mean, (sum2 / n - mean * mean) * n / (n - 1.0) / n)
            };
            let (m0, v0) = stat(what);
            let (m1, v1) = stat(what + 1);
            let z = (m0 - m1) / (v0 + v1).sqrt();
            assert!(
                m0 > 100.0 && z.abs() < 4.0,
                "{} species {s}: expected {m0}, per seed {m1} (z {z:.2})",
                if what == 0 { "seeds" } else { "recruits" }
            );
        }
    }
}

/// Non-spatial rain alone with deterministic counts: λ = intercept + slope × BA seeds per m²
/// exactly in every cell (one tree of 1 m² basal area on a hectare: BA = 1 m²/ha, λ = 2);
/// with establishment 1, no mortality and no growth every seed is a recruit and stays a
/// seedling.
#[test]
fn seed_rain_and_bookkeeping_are_exact() {
    let g = grid(100.0, 100.0);
    let sp = Species::new(
        "rain_only".into(),
        Kernel::Weibull {
            d: 1e-3,
            theta: 2.0,
        },
        0.0,
        2.0,
        Eta::Analytic,
        10.0,
        None,
    )
    .unwrap();
    let mut f = ForestSpecies::with_defaults(sp);
    f.seed_distribution = SeedDistribution::Deterministic;
    f.rain = Some(Rain {
        intercept: 0.5,
        slope: 1.5,
    });
    f.establishment = 1.0;
    f.growth = [Growth::ConstantRadial {
        radial_mm_per_yr: 0.0,
    }; 3];
    f.mortality = [Mortality {
        annual: 0.0,
        per_neighbour: 0.0,
    }; 3];
    let p = ForestParams {
        species: vec![f],
        max_gap_density: 0,
        gap_cell_m: 8.0,
        torus: false,
    }
    .validated()
    .unwrap();
    let dbh = 200.0 / std::f64::consts::PI.sqrt(); // π (D/200)² = 1 m²
    let st = Stand::new(vec![50.0], vec![50.0], vec![dbh], vec![0]).unwrap();
    let (years, seeds, t) = run(&g, &p, &st, &options(2, 3, DispersalMode::Expected));
    assert!(
        seeds[0].iter().all(|&c| c == 2),
        "year 1: 2 seeds in every cell"
    );
    let y1 = years[1][0];
    assert_eq!(
        (y1.seeds, y1.recruits, y1.seedlings, y1.adults),
        (20_000, 20_000, 20_000, 1)
    );
    // Year 2: BA also counts nothing new (seedlings are not reproductive): the same again.
    let y2 = years[2][0];
    assert_eq!(
        (y2.seeds, y2.recruits, y2.seedlings),
        (20_000, 20_000, 40_000)
    );
    assert_eq!(t.len(), 40_001);
    // Ids are unique.
    let mut ids = t.id.clone();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), t.len());
}
