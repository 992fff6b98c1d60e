//! The yearly loop.
//!
//! Each year, for every species in order:
//!
//! 1. **Seed production** ([`super::fecundity`]): every tree with DBH ≥ the species' minimum
//!    for reproduction expects N̄ = STR (DBH/30)^β seeds (its cover's STR and β, or, with
//!    masting, this year's mast or non-mast draw; trees not taking part expect 0).
//! 2. **Dispersal**. A parent whose coarse cell holds ≤ `max_gap_density` adults (a gap) uses
//!    the species' gap kernel, others the canopy kernel (without gap parameters, the canopy
//!    kernel everywhere). A seed landing in the other cover survives with probability
//!    min(1, STR_landing / STR_parent), the ratio of the two covers' STRs (SORTIE-ND's rule).
//!    - *expected*: the density of each cover's parents by [`crate::dispersal`] (any method,
//!      on the run's backend), times the cell area and the survival, plus the non-spatial rain
//!      ([`super::rain`]), is each cell's expected count, which the species' seed distribution
//!      ([`super::seed_counts`]) turns into a count;
//!    - *per seed* ([`super::per_seed`]): every seed drawn and counted in its cell, thinned by
//!      the survival (binomial per cell, purpose [`super::rng::Purpose::Survival`]), plus the rain's counts.
//! 3. **Establishment** ([`super::establishment`]).
//! 4. **Growth**, 5. **mortality**, 6. **stage transitions** ([`super::demography`]); the
//!    year's new seedlings take part.
//!
//! Year 0 reports the initial stand; years 1 ..= `years` are simulated. Every draw comes from a
//! stream keyed by (seed, year, species, cell or tree id, purpose), so a run is the same for any
//! thread count, and two runs that differ only in the dispersal method share their random
//! numbers (what `--compare` relies on).

use std::time::Instant;

use geofield_core::GridSpec;
use rayon::prelude::*;

use super::demography;
use super::establishment::{establish_rows, seedlings};
use super::fecundity::{MastState, Masting};
use super::landing::{CANOPY, GAP, add_rain, expected_seeds, landing_cover, parents, thin, zeroed};
use super::params::{ForestParams, Stage};
use super::per_seed::{Flight, place};
use super::seed_counts;
use super::split::Band;
use super::trees::{CoarseCells, Occupancy, Trees};
use crate::dispersal::{self, DisperseOptions, RowShare};
use crate::{Backend, Cancel, GeofieldError};

/// How seeds reach their cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DispersalMode {
    /// The expected density map, then random counts per cell.
    Expected,
    /// Every seed drawn (SORTIE-ND's spatial disperse).
    PerSeed,
}

impl DispersalMode {
    pub fn name(self) -> &'static str {
        match self {
            DispersalMode::Expected => "expected",
            DispersalMode::PerSeed => "per-seed",
        }
    }
}

/// Options of [`simulate`].
#[derive(Debug, Clone, PartialEq)]
pub struct SimulateOptions {
    pub years: u32,
    pub seed: u64,
    pub mode: DispersalMode,
    /// The dispersal method and its options in expected mode (`torus` comes from the
    /// parameters).
    pub dispersal: DisperseOptions,
    /// Establishment suitability per cell of the grid, in [0, 1].
    pub suitability: Option<Vec<f32>>,
}

/// One species' numbers at the end of a year.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct SpeciesYear {
    /// Seeds that landed on the plot this year (after the cover's survival; rain included).
    pub seeds: u64,
    /// New seedlings this year (before this year's mortality).
    pub recruits: u64,
    pub seedlings: u64,
    pub saplings: u64,
    pub adults: u64,
    /// Basal area of all the species' trees, m² per hectare of the plot.
    pub basal_area_m2_per_ha: f64,
    pub mast: bool,
}

/// What a year hands to the observer of [`simulate`]. The per-cell seeds and the trees are
/// fetched when asked for ([`Year::seeds`], [`Year::trees`]): on the GPU they stay in device
/// memory unless an observer needs them.
pub struct Year<'a> {
    pub year: u32,
    pub species: Vec<SpeciesYear>,
    /// The dispersal method each species' map used (expected mode; `per-seed` otherwise).
    pub methods: Vec<String>,
    seeds: Lazy<'a, [Vec<u32>]>,
    trees: Lazy<'a, Trees>,
}

/// A value at hand, or one fetched once when first asked for.
enum Lazy<'a, T: ?Sized + ToOwned> {
    Ready(&'a T),
    Later(
        &'a dyn Fn() -> Result<T::Owned, GeofieldError>,
        std::cell::OnceCell<T::Owned>,
    ),
}

impl<T: ?Sized + ToOwned> Lazy<'_, T> {
    fn get(&self) -> Result<&T, GeofieldError> {
        match self {
            Lazy::Ready(v) => Ok(v),
            Lazy::Later(fetch, cell) => {
                if cell.get().is_none() {
                    let v = fetch()?;
                    let _ = cell.set(v);
                }
                cell.get()
                    .map(std::borrow::Borrow::borrow)
                    .ok_or_else(|| GeofieldError::Invalid("a year's data went missing".into()))
            }
        }
    }
}

impl std::fmt::Debug for Year<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Year")
            .field("year", &self.year)
            .field("species", &self.species)
            .field("methods", &self.methods)
            .finish_non_exhaustive()
    }
}

impl<'a> Year<'a> {
    /// A year whose seeds (per species, per cell, row-major; empty in year 0) and trees (at the
    /// end of the year) are at hand.
    pub fn new(
        year: u32,
        species: Vec<SpeciesYear>,
        methods: Vec<String>,
        seeds: &'a [Vec<u32>],
        trees: &'a Trees,
    ) -> Self {
        Year {
            year,
            species,
            methods,
            seeds: Lazy::Ready(seeds),
            trees: Lazy::Ready(trees),
        }
    }

    /// A year whose seeds and trees `fetch_seeds` and `fetch_trees` produce when first asked for.
    pub fn fetched(
        year: u32,
        species: Vec<SpeciesYear>,
        methods: Vec<String>,
        fetch_seeds: &'a dyn Fn() -> Result<Vec<Vec<u32>>, GeofieldError>,
        fetch_trees: &'a dyn Fn() -> Result<Trees, GeofieldError>,
    ) -> Self {
        Year {
            year,
            species,
            methods,
            seeds: Lazy::Later(fetch_seeds, std::cell::OnceCell::new()),
            trees: Lazy::Later(fetch_trees, std::cell::OnceCell::new()),
        }
    }

    /// Seeds per cell of each species this year (row-major; empty in year 0).
    pub fn seeds(&self) -> Result<&[Vec<u32>], GeofieldError> {
        self.seeds.get()
    }

    /// The trees at the end of the year.
    pub fn trees(&self) -> Result<&Trees, GeofieldError> {
        self.trees.get()
    }
}

/// Where a run's time went, in seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Timing {
    /// Seed production and dispersal (maps or seeds).
    pub dispersal_s: f64,
    /// Survival, rain and the counts per cell (on the GPU: part of `establishment_s`, one
    /// kernel draws both).
    pub counts_s: f64,
    pub establishment_s: f64,
    /// Occupancy, growth, mortality and stage counts.
    pub demography_s: f64,
}

/// The run seed of replicate `r` of a run with `seed` (replicate 0 is the seed itself; others
/// are scrambled by SplitMix64 so that their streams share nothing).
pub fn replicate_seed(seed: u64, r: u32) -> u64 {
    if r == 0 {
        return seed;
    }
    let mut z = seed.wrapping_add(u64::from(r).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Run the forest on `grid` from `trees` for `opts.years` years, calling `on_year` after the
/// initial state (year 0) and after every year; an error from it stops the run. Returns the
/// final trees and where the time went.
///
/// ```
/// use geofield::forest::params::{ForestParams, ForestSpecies};
/// use geofield::forest::simulate::{self, DispersalMode, SimulateOptions};
/// use geofield::forest::trees::Trees;
/// use geofield::{Backend, Cancel, synth};
/// use geofield_core::{Extent, GridSpec};
///
/// let extent = Extent::new(0.0, 0.0, 60.0, 40.0)?;
/// let grid = GridSpec::from_extent(extent, 1.0)?;
/// let params = ForestParams {
///     species: synth::sbs_species().into_iter().map(ForestSpecies::with_defaults).collect(),
///     max_gap_density: 0, gap_cell_m: 8.0, torus: true,
/// }.validated()?;
/// let stand = synth::forest(40, &extent, 1, synth::Pattern::Uniform,
///     synth::DbhModel::Uniform15to60, &synth::SBS_SHARES);
/// let opts = SimulateOptions { years: 3, seed: 1, mode: DispersalMode::Expected,
///     dispersal: Default::default(), suitability: None };
/// let mut recruits = Vec::new();
/// simulate::simulate(&Backend::Cpu, &grid, &params, Trees::from_stand(&stand, 4)?, &opts,
///     &Cancel::new(), &mut |y| {
///         recruits.push(y.species.iter().map(|s| s.recruits).sum::<u64>());
///         Ok(())
///     })?;
/// assert_eq!(recruits.len(), 4);
/// assert!(recruits[1] > 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[allow(clippy::too_many_arguments)]
pub fn simulate(
    backend: &Backend,
    grid: &GridSpec,
    params: &ForestParams,
    trees: Trees,
    opts: &SimulateOptions,
    cancel: &Cancel,
    on_year: &mut dyn FnMut(&Year<'_>) -> Result<(), GeofieldError>,
) -> Result<(Trees, Timing), GeofieldError> {
    let n_sp = params.species.len();
    check_suitability(grid, opts)?;
    // Per cell the run holds the expected seeds (f64), a map from the dispersal, and a year's
    // seed counts (u32) per species twice (this year's and the buffers kept from the last):
    // refused before anything is allocated when that would not fit (≥ 12 bytes per band).
    dispersal::check_memory(grid, n_sp + 2, opts.dispersal.precision)?;
    if let (Backend::Cuda(gpu), DispersalMode::Expected) = (backend, opts.mode) {
        return super::device::simulate_on_device(
            gpu, backend, grid, params, trees, opts, cancel, on_year,
        );
    }
    host_years(
        backend,
        grid,
        params,
        trees,
        opts,
        &Band::whole(grid),
        cancel,
        on_year,
    )
}

/// The suitability layer, if any, has one value per cell of `grid`.
pub(super) fn check_suitability(
    grid: &GridSpec,
    opts: &SimulateOptions,
) -> Result<(), GeofieldError> {
    match &opts.suitability {
        Some(s) if s.len() != grid.n_cells() => Err(GeofieldError::Invalid(format!(
            "the suitability layer has {} cells, the grid {}",
            s.len(),
            grid.n_cells()
        ))),
        _ => Ok(()),
    }
}

/// The yearly loop on the host (the dispersal maps on the run's backend) over the band of rows
/// `band` holds: the whole grid in one process, or one part of a stand split by rows
/// ([`super::split::simulate_split`]). Every part keeps the whole stand: the per-tree steps
/// (fecundity, occupancy, mortality, growth) run on every part alike, the per-cell steps
/// (the maps, counts, establishment) on the band's cells only, and each year's new seedlings of
/// every band are gathered in row order, which is the one-process order.
#[allow(clippy::too_many_arguments)]
pub(super) fn host_years(
    backend: &Backend,
    grid: &GridSpec,
    params: &ForestParams,
    trees: Trees,
    opts: &SimulateOptions,
    band: &Band<'_>,
    cancel: &Cancel,
    on_year: &mut dyn FnMut(&Year<'_>) -> Result<(), GeofieldError>,
) -> Result<(Trees, Timing), GeofieldError> {
    let n_sp = params.species.len();
    let rows = band.rows.clone();
    let first_cell = rows.start * grid.cols;
    let band_cells = rows.len() * grid.cols;
    // A split band runs in expected mode only (`split::simulate_split` checks).
    let split = band.is_split();
    let combine = |m: Result<[f64; 2], String>| band.combine(m);
    let share = RowShare {
        rows: rows.clone(),
        part: band.part(),
        parts: band.parts(),
        combine: split.then_some(&combine as &dispersal::Combine<'_>),
        trees: None,
        far: dispersal::FarExchange::Auto,
    };
    // The seeds per cell of a split run, when nobody asked for them to be gathered.
    let not_gathered = || -> Result<Vec<Vec<u32>>, GeofieldError> {
        Err(GeofieldError::Invalid(
            "the seeds per cell of a stand split by rows are gathered only when asked for".into(),
        ))
    };
    let cells = CoarseCells::new(grid, params.gap_cell_m);
    let mut timing = Timing::default();
    let mut next_id = trees.next_id();
    let mut trees = trees;
    let no_seeds: Vec<Vec<u32>> = Vec::new();
    let first = on_year(&Year::new(
        0,
        census(grid, params, &trees, &[0; 0], &[], &[]),
        Vec::new(),
        &no_seeds,
        &trees,
    ));
    band.year_done(first)?;
    let masting: Vec<Masting> = params.species.iter().filter_map(|s| s.masting).collect();
    let mut mast_state = MastState::default();
    let flights: Vec<[Option<Flight>; 2]> = match opts.mode {
        DispersalMode::PerSeed => params
            .species
            .iter()
            .map(|s| {
                [
                    Some(Flight::new(&s.canopy.kernel)),
                    s.gap.as_ref().map(|g| Flight::new(&g.kernel)),
                ]
            })
            .collect(),
        DispersalMode::Expected => vec![[None, None]; n_sp],
    };
    let mut dopts = opts.dispersal;
    dopts.torus = params.torus;
    let mut resolved = vec![[dopts.method; 2]; n_sp];
    // Per-cell buffers kept from year to year: fresh ones of this size cost their page faults
    // every time (a few ms per million cells).
    let mut expected: Vec<f64> = Vec::new();
    let mut scratch: Vec<u32> = Vec::new();
    let mut spare: Vec<Vec<u32>> = Vec::new();
    for year in 1..=opts.years {
        cancel.check()?;
        let t0 = Instant::now();
        let occ = Occupancy::count(&cells, params, &trees);
        let existing = trees.len();
        let masts = masts_of(params, &masting, &mut mast_state, opts.seed, year);
        timing.demography_s += t0.elapsed().as_secs_f64();
        let mut all_seeds = Vec::with_capacity(n_sp);
        let mut seeds_total = vec![0u64; n_sp];
        let mut recruits = vec![0u64; n_sp];
        let mut methods = Vec::with_capacity(n_sp);
        let mut newcomers = Trees::default();
        for (s, sp) in params.species.iter().enumerate() {
            cancel.check()?;
            let t1 = Instant::now();
            let parents = parents(params, s, masts[s], &trees, &cells, &occ, opts.seed, year);
            let landing =
                landing_cover(grid, rows.clone(), &cells, &occ, params.max_gap_density, sp);
            let mut counts = spare.pop().unwrap_or_default();
            match opts.mode {
                DispersalMode::Expected => {
                    let label = expected_seeds(
                        backend,
                        grid,
                        sp,
                        &parents,
                        &landing,
                        &dopts,
                        &mut resolved[s],
                        &share,
                        cancel,
                        &mut expected,
                    )?;
                    methods.push(label);
                    timing.dispersal_s += t1.elapsed().as_secs_f64();
                    let t2 = Instant::now();
                    add_rain(grid, sp, s, &trees, &mut expected);
                    seed_counts::counts_into_at(
                        sp.seed_distribution,
                        &expected,
                        first_cell,
                        opts.seed,
                        year,
                        s as u8,
                        &mut counts,
                    );
                    timing.counts_s += t2.elapsed().as_secs_f64();
                }
                DispersalMode::PerSeed => {
                    methods.push("per-seed".to_string());
                    zeroed(&mut counts, grid.n_cells());
                    for cover in [CANOPY, GAP] {
                        let (Some(flight), false) = (&flights[s][cover], parents[cover].is_empty())
                        else {
                            continue;
                        };
                        zeroed(&mut scratch, grid.n_cells());
                        place(
                            backend,
                            grid,
                            flight,
                            &parents[cover],
                            s as u8,
                            params.torus,
                            opts.seed,
                            year,
                            &mut scratch,
                        )?;
                        thin(&mut scratch, &landing, cover, sp, opts.seed, year, s as u8);
                        counts
                            .par_iter_mut()
                            .zip(&scratch)
                            .for_each(|(t, &v)| *t += v);
                    }
                    timing.dispersal_s += t1.elapsed().as_secs_f64();
                    let t2 = Instant::now();
                    if sp.rain.is_some() {
                        expected.clear();
                        expected.resize(grid.n_cells(), 0.0);
                        add_rain(grid, sp, s, &trees, &mut expected);
                        seed_counts::counts_into(
                            sp.seed_distribution,
                            &expected,
                            opts.seed,
                            year,
                            s as u8,
                            &mut scratch,
                        );
                        counts
                            .par_iter_mut()
                            .zip(&scratch)
                            .for_each(|(t, &v)| *t = t.saturating_add(v));
                    }
                    timing.counts_s += t2.elapsed().as_secs_f64();
                }
            }
            debug_assert_eq!(counts.len(), band_cells);
            let t3 = Instant::now();
            let mut born = establish_rows(
                grid,
                rows.clone(),
                &counts,
                sp.establishment,
                opts.suitability.as_deref(),
                sp.seedling_dbh_cm,
                opts.seed,
                year,
                s as u8,
                next_id,
            );
            seeds_total[s] = counts.par_iter().map(|&v| u64::from(v)).sum();
            if split {
                // Every band's seedlings, in band (row) order: the one-process order.
                let (xy, total) = band.gather_seedlings(&born, seeds_total[s])?;
                born = seedlings(&xy, sp.seedling_dbh_cm, s as u8, next_id);
                seeds_total[s] = total;
                if band.whole_seeds {
                    counts = band.gather_counts(&counts)?;
                }
            }
            next_id += born.len() as u64;
            recruits[s] = born.len() as u64;
            newcomers.extend(born);
            timing.establishment_s += t3.elapsed().as_secs_f64();
            all_seeds.push(counts);
        }
        let t4 = Instant::now();
        trees.extend(newcomers);
        // Mortality by the stage at the start of the year, then growth and the new stages.
        let alive = demography::survivors(
            params, &trees, &cells, &occ.trees, existing, opts.seed, year,
        );
        trees.retain(&alive);
        demography::grow(params, &mut trees);
        let species = census(grid, params, &trees, &seeds_total, &recruits, &masts);
        timing.demography_s += t4.elapsed().as_secs_f64();
        let y = Year {
            year,
            species,
            methods,
            seeds: if split && !band.whole_seeds {
                Lazy::Later(&not_gathered, std::cell::OnceCell::new())
            } else {
                Lazy::Ready(&all_seeds)
            },
            trees: Lazy::Ready(&trees),
        };
        let done = on_year(&y);
        drop(y);
        band.year_done(done)?;
        spare = all_seeds;
    }
    Ok((trees, timing))
}

/// Masting: this year's decisions of the masting species, spread back over all species.
pub(super) fn masts_of(
    params: &ForestParams,
    masting: &[Masting],
    state: &mut MastState,
    seed: u64,
    year: u32,
) -> Vec<bool> {
    let mut d = state.decide(masting, seed, year).into_iter();
    params
        .species
        .iter()
        .map(|s| s.masting.is_some() && d.next().unwrap_or(false))
        .collect()
}

/// Stage counts and basal area per species, with this year's seeds, recruits and masts (empty
/// slices: zeros).
fn census(
    grid: &GridSpec,
    params: &ForestParams,
    trees: &Trees,
    seeds: &[u64],
    recruits: &[u64],
    masts: &[bool],
) -> Vec<SpeciesYear> {
    let mut out: Vec<SpeciesYear> = (0..params.species.len())
        .map(|s| SpeciesYear {
            seeds: seeds.get(s).copied().unwrap_or(0),
            recruits: recruits.get(s).copied().unwrap_or(0),
            mast: masts.get(s).copied().unwrap_or(false),
            ..SpeciesYear::default()
        })
        .collect();
    let ha = grid.width_m() * grid.height_m() / 1e4;
    for i in 0..trees.len() {
        let o = &mut out[trees.species[i] as usize];
        match trees.stage(params, i) {
            Stage::Seedling => o.seedlings += 1,
            Stage::Sapling => o.saplings += 1,
            Stage::Adult => o.adults += 1,
        }
        o.basal_area_m2_per_ha += std::f64::consts::PI * (trees.dbh_cm[i] / 200.0).powi(2) / ha;
    }
    out
}
