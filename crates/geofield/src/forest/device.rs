//! The yearly loop on the GPU, with the stand kept in device memory: [`super::simulate`] on
//! the CUDA backend in expected mode runs here. What runs where, each year:
//!
//! - **device** (`geofield-cuda`'s `forest::year`, kernels in `kernels/forest_year.cu`): the
//!   occupancy of the coarse cells; each species' reproductive trees picked out of the stand;
//!   each cell's expected seeds (from the covers' maps, the survival to the landing cover, the
//!   torus' far tail and the rain), its seed count and establishments, and the new seedlings'
//!   positions; mortality, growth and the survivors' compaction; the census;
//! - **dispersal** (on the device too): each cover's expected map by the dispersal engine
//!   ([`super::landing::cover_maps`]; the map comes back to the host and goes to the device's
//!   map buffer);
//! - **host**: the masting decisions, each parent's seed production and cover (from the
//!   parents and the coarse cells' adult counts, both downloaded: small next to the stand),
//!   the seed rain's density, and the counts table.
//!
//! The per-cell seeds and the trees come back to the host only when an observer asks for them
//! ([`super::simulate::Year::seeds`], [`super::simulate::Year::trees`]), and the final trees at
//! the end. Every draw is the CPU loop's: for the same maps, the counts, seedlings, deaths and
//! DBHs are the CPU's to the bit (the kernels' header says how); the maps themselves, f32 sums
//! of the GPU's dispersal kernels, differ from the CPU's in the last bits, so a few cells'
//! counts can differ. Basal areas are summed in another order (equal to ~1e-15).

use std::sync::Arc;
use std::time::Instant;

use geofield_core::{GridSpec, RasterData};
use geofield_cuda::Gpu;
use geofield_cuda::forest::year as gy;

use super::fecundity::{MastState, Masting};
use super::landing::{CANOPY, CoverPart, GAP, cover_maps, keep_from, parents, rain_per_cell};
use super::params::{ForestParams, ForestSpecies, Growth};
use super::seed_counts::SeedDistribution;
use super::simulate::{SimulateOptions, SpeciesYear, Timing, Year, masts_of};
use super::trees::{CoarseCells, Occupancy, Trees};
use crate::dispersal::RowShare;
use crate::{Backend, Cancel, GeofieldError};

fn demography(sp: &ForestSpecies) -> gy::Demography {
    let law = |g: &Growth| match *g {
        Growth::ConstantRadial { radial_mm_per_yr } => {
            gy::GrowthLaw::ConstantRadial { radial_mm_per_yr }
        }
        Growth::SizeDependent {
            max_cm_per_yr,
            peak_dbh_cm,
            min_cm_per_yr,
        } => gy::GrowthLaw::SizeDependent {
            max_cm_per_yr,
            peak_dbh_cm,
            min_cm_per_yr,
        },
    };
    gy::Demography {
        sapling_dbh_cm: sp.sapling_dbh_cm,
        adult_dbh_cm: sp.adult_dbh_cm,
        annual: sp.mortality.map(|m| m.annual),
        per_neighbour: sp.mortality.map(|m| m.per_neighbour),
        growth: [law(&sp.growth[0]), law(&sp.growth[1]), law(&sp.growth[2])],
    }
}

fn seed_law(d: SeedDistribution) -> gy::SeedLaw {
    match d {
        SeedDistribution::Deterministic => gy::SeedLaw::Deterministic,
        SeedDistribution::Poisson => gy::SeedLaw::Poisson,
        SeedDistribution::NegativeBinomial { clumping } => {
            gy::SeedLaw::NegativeBinomial { clumping }
        }
        SeedDistribution::Normal { sd } => gy::SeedLaw::Normal { sd },
        SeedDistribution::Lognormal { sigma } => gy::SeedLaw::Lognormal { sigma },
    }
}

fn host(t: &Trees) -> gy::HostTrees {
    gy::HostTrees {
        x_m: t.x_m.clone(),
        y_m: t.y_m.clone(),
        dbh_cm: t.dbh_cm.clone(),
        species: t.species.clone(),
        id: t.id.clone(),
    }
}

fn trees(h: gy::HostTrees) -> Trees {
    Trees {
        x_m: h.x_m,
        y_m: h.y_m,
        dbh_cm: h.dbh_cm,
        species: h.species,
        id: h.id,
    }
}

/// [`super::simulate::simulate`] on `gpu` in expected mode (the caller checked the options and
/// the host memory).
#[allow(clippy::too_many_arguments)]
pub(super) fn simulate_on_device(
    gpu: &Arc<Gpu>,
    backend: &Backend,
    grid: &GridSpec,
    params: &ForestParams,
    start: Trees,
    opts: &SimulateOptions,
    cancel: &Cancel,
    on_year: &mut dyn FnMut(&Year<'_>) -> Result<(), GeofieldError>,
) -> Result<(Trees, Timing), GeofieldError> {
    let n_sp = params.species.len();
    let cells = CoarseCells::new(grid, params.gap_cell_m);
    let dem: Vec<gy::Demography> = params.species.iter().map(demography).collect();
    let mut stand = gy::DeviceStand::new(
        gpu,
        gy::CellGrid {
            x_min_m: grid.x_min_m,
            y_max_m: grid.y_max_m,
            cell_m: grid.cell_size_m,
            cols: grid.cols,
            rows: grid.rows,
        },
        gy::Coarse {
            x_min_m: cells.x_min_m,
            y_max_m: cells.y_max_m,
            cell_m: cells.cell_m,
            cols: cells.cols,
            rows: cells.rows,
        },
        &dem,
        &host(&start),
        opts.suitability.as_deref(),
    )?;
    let mut timing = Timing::default();
    let mut next_id = start.next_id();
    let ha = grid.width_m() * grid.height_m() / 1e4;
    let plot = (
        grid.x_min_m,
        grid.x_min_m + grid.width_m(),
        grid.y_max_m - grid.height_m(),
        grid.y_max_m,
    );
    let min_dbh: Vec<f64> = params.species.iter().map(|s| s.canopy.min_dbh_cm).collect();
    let species_rows = |census: &[gy::Census], seeds: &[u64], recruits: &[u64], masts: &[bool]| {
        census
            .iter()
            .enumerate()
            .map(|(s, c)| SpeciesYear {
                seeds: seeds.get(s).copied().unwrap_or(0),
                recruits: recruits.get(s).copied().unwrap_or(0),
                seedlings: c.stages[0],
                saplings: c.stages[1],
                adults: c.stages[2],
                basal_area_m2_per_ha: if ha > 0.0 { c.basal_m2 / ha } else { 0.0 },
                mast: masts.get(s).copied().unwrap_or(false),
            })
            .collect::<Vec<_>>()
    };
    let census0 = stand.census(&min_dbh, plot)?;
    on_year(&Year::new(
        0,
        species_rows(&census0, &[], &[], &[]),
        Vec::new(),
        &[],
        &start,
    ))?;
    drop(start);
    let masting: Vec<Masting> = params.species.iter().filter_map(|s| s.masting).collect();
    let mut mast_state = MastState::default();
    let mut dopts = opts.dispersal;
    dopts.torus = params.torus;
    let mut resolved = vec![[dopts.method; 2]; n_sp];
    let any_rain = params.species.iter().any(|s| s.rain.is_some());
    for year in 1..=opts.years {
        cancel.check()?;
        let t0 = Instant::now();
        stand.occupancy()?;
        let occ = Occupancy {
            adults: stand.adults_per_coarse_cell()?,
            trees: Vec::new(),
        };
        let existing = stand.len();
        // The rain's basal area: the reproductive trees at the start of the year.
        let start_census = if any_rain {
            stand.census(&min_dbh, plot)?
        } else {
            Vec::new()
        };
        let masts = masts_of(params, &masting, &mut mast_state, opts.seed, year);
        timing.demography_s += t0.elapsed().as_secs_f64();
        let mut seeds = vec![0u64; n_sp];
        let mut recruits = vec![0u64; n_sp];
        let mut methods = Vec::with_capacity(n_sp);
        for (s, sp) in params.species.iter().enumerate() {
            cancel.check()?;
            let t1 = Instant::now();
            let mine = trees(stand.select(s as u32, sp.canopy.min_dbh_cm)?);
            let parents = parents(params, s, masts[s], &mine, &cells, &occ, opts.seed, year);
            drop(mine);
            let mut has = [false; 2];
            let mut tail = [0.0f64; 2];
            let label = cover_maps(
                backend,
                grid,
                sp,
                &parents,
                &dopts,
                &mut resolved[s],
                &RowShare::whole(grid),
                cancel,
                &mut |part| {
                    match part {
                        // The cutoff writes straight into the device's map buffer.
                        CoverPart::Cutoff {
                            from,
                            species,
                            stand: parents_stand,
                            opts,
                        } => {
                            let done = crate::dispersal::cutoff_into_device(
                                gpu,
                                grid,
                                species,
                                parents_stand,
                                opts,
                                stand.map_mut(from),
                            )?;
                            has[from] |= done;
                            return Ok(done);
                        }
                        CoverPart::Map { from, data, .. } => {
                            match &data {
                                RasterData::F32(v) => stand.upload_map_rows(from, 0, v)?,
                                RasterData::F64(_) => {
                                    return Err(GeofieldError::Invalid(
                                        "the forest on the GPU takes f32 maps".into(),
                                    ));
                                }
                            }
                            has[from] = true;
                            backend.recycle(data);
                        }
                        CoverPart::Tail { from, per_m2 } => tail[from] = per_m2,
                    }
                    Ok(false)
                },
            )?;
            methods.push(label);
            timing.dispersal_s += t1.elapsed().as_secs_f64();
            let t2 = Instant::now();
            let rain = sp.rain.map(|r| {
                let ba = start_census.get(s).map_or(0.0, |c| {
                    if ha > 0.0 {
                        c.reproductive_basal_m2 / ha
                    } else {
                        0.0
                    }
                });
                rain_per_cell(grid, &r, ba)
            });
            let [c0, c1] = keep_from(sp, CANOPY);
            let [g0, g1] = keep_from(sp, GAP);
            let (n_seeds, born) = stand.cells(&gy::CellYear {
                seed: opts.seed,
                year,
                species: s as u8,
                law: seed_law(sp.seed_distribution),
                maps: has,
                landing: sp.gap.is_some(),
                max_gap_density: params.max_gap_density,
                keep: [c0, c1, g0, g1],
                tail,
                rain,
                establishment: sp.establishment,
                seedling_dbh_cm: sp.seedling_dbh_cm,
                first_id: next_id,
            })?;
            next_id += born;
            seeds[s] = n_seeds;
            recruits[s] = born;
            timing.establishment_s += t2.elapsed().as_secs_f64();
        }
        let t4 = Instant::now();
        stand.survive(existing, opts.seed, year)?;
        let census = stand.census(&min_dbh, plot)?;
        timing.demography_s += t4.elapsed().as_secs_f64();
        let fetch_seeds = || -> Result<Vec<Vec<u32>>, GeofieldError> {
            (0..n_sp)
                .map(|s| stand.counts(s).map_err(GeofieldError::from))
                .collect()
        };
        let fetch_trees = || -> Result<Trees, GeofieldError> { Ok(trees(stand.trees()?)) };
        on_year(&Year::fetched(
            year,
            species_rows(&census, &seeds, &recruits, &masts),
            methods,
            &fetch_seeds,
            &fetch_trees,
        ))?;
    }
    Ok((trees(stand.trees()?), timing))
}
