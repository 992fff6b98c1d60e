//! Where a year's seeds land: the parents of a species by cover (canopy or gap) with their
//! expected seeds, each landing cell's cover and the survival of seeds landing under the other
//! cover, the expected maps (periodic images on a torus), the per-seed thinning and the
//! non-spatial rain. The steps of [`super::simulate`]'s dispersal, in the order it calls them.

use geofield_core::{GridSpec, RasterData};
use rayon::prelude::*;

use super::fecundity::{species_str, tree_seeds};
use super::params::ForestSpecies;
use super::per_seed::{Parent, mean_seeds};
use super::rng::{Purpose, Stream};
use super::trees::{CoarseCells, Occupancy, Trees};
use crate::dispersal::{self, DisperseOptions, Eta, Method, RowShare, Species, Stand};
use crate::{Backend, Cancel, GeofieldError};

/// Cover of a parent or a landing cell: canopy or gap.
pub(super) const CANOPY: usize = 0;
pub(super) const GAP: usize = 1;

/// The parents of species `s` this year by cover (canopy, gap), with their expected seeds.
#[allow(clippy::too_many_arguments)]
pub(super) fn parents(
    params: &super::params::ForestParams,
    s: usize,
    mast: bool,
    trees: &Trees,
    cells: &CoarseCells,
    occ: &Occupancy,
    seed: u64,
    year: u32,
) -> [Vec<Parent>; 2] {
    let sp = &params.species[s];
    let str_once = sp
        .masting
        .as_ref()
        .and_then(|m| species_str(m, mast, seed, year, s as u8));
    let mut out = [Vec::new(), Vec::new()];
    for i in 0..trees.len() {
        if trees.species[i] as usize != s || trees.dbh_cm[i] < sp.canopy.min_dbh_cm {
            continue;
        }
        let (x_m, y_m, dbh) = (trees.x_m[i], trees.y_m[i], trees.dbh_cm[i]);
        let in_gap = sp.gap.is_some()
            && cells
                .of(x_m, y_m)
                .is_some_and(|c| occ.is_gap(c, params.max_gap_density));
        let cover = if in_gap { GAP } else { CANOPY };
        let disp = cover_species(sp, cover);
        let mean = match &sp.masting {
            Some(m) => {
                // Masting gives STR × (DBH/30)^β seeds: the same count as `mean_seeds` with
                // the analytic η; with another η the STR's units differ by η_K/η.
                let per_tree = tree_seeds(m, mast, str_once, dbh, seed, year, s as u8, trees.id[i]);
                per_tree * disp.kernel.eta_analytic() / disp.eta_m2()
            }
            None => mean_seeds(disp, dbh),
        };
        if mean > 0.0 {
            out[cover].push(Parent {
                x_m,
                y_m,
                mean_seeds: mean,
                id: trees.id[i],
            });
        }
    }
    out
}

/// The species' dispersal parameters for a cover.
fn cover_species(sp: &ForestSpecies, cover: usize) -> &Species {
    match (&sp.gap, cover) {
        (Some(g), GAP) => g,
        _ => &sp.canopy,
    }
}

/// The cover of every cell of `grid`'s rows `rows` (that of the coarse cell holding its
/// centre; row-major from the band's first row), or empty when the species has no gap
/// parameters (canopy everywhere).
pub(super) fn landing_cover(
    grid: &GridSpec,
    rows: std::ops::Range<usize>,
    cells: &CoarseCells,
    occ: &Occupancy,
    max_gap_density: u32,
    sp: &ForestSpecies,
) -> Vec<u8> {
    if sp.gap.is_none() {
        return Vec::new();
    }
    let first = rows.start * grid.cols;
    (first..rows.end * grid.cols)
        .into_par_iter()
        .map(|i| {
            let (x, y) = grid.cell_centre(i / grid.cols, i % grid.cols);
            let gap = cells
                .of(x, y)
                .is_some_and(|c| occ.is_gap(c, max_gap_density));
            if gap { GAP as u8 } else { CANOPY as u8 }
        })
        .collect()
}

/// Survival of a seed from a `from` parent landing in cover `to`: min(1, STR_to / STR_from).
fn survival(sp: &ForestSpecies, from: usize, to: usize) -> f64 {
    if from == to || sp.gap.is_none() {
        return 1.0;
    }
    let (a, b) = (cover_species(sp, from).str_, cover_species(sp, to).str_);
    if a > 0.0 { (b / a).min(1.0) } else { 1.0 }
}

/// Thin per-seed `counts` of parents in cover `from` by the survival where they landed.
pub(super) fn thin(
    counts: &mut [u32],
    landing: &[u8],
    from: usize,
    sp: &ForestSpecies,
    seed: u64,
    year: u32,
    s: u8,
) {
    if landing.is_empty() {
        return;
    }
    let keep = [survival(sp, from, CANOPY), survival(sp, from, GAP)];
    if keep == [1.0, 1.0] {
        return;
    }
    counts.par_iter_mut().enumerate().for_each(|(i, c)| {
        let k = keep[usize::from(landing[i])];
        if *c > 0 && k < 1.0 {
            // The purpose's id space: cells, and `from` in the top bit so the covers differ.
            let id = i as u64 | ((from as u64) << 47);
            let mut st = Stream::new(seed, year, s, id, Purpose::Survival);
            *c = st.binomial(u64::from(*c), k) as u32;
        }
    });
}

/// What [`cover_maps`] hands on, in order: for each cover, first an offer of its cutoff map
/// (`Cutoff`: the sink computes it where it wants it and answers true, or false to get a `Map`),
/// then its map, then its far tail.
pub(super) enum CoverPart<'a> {
    /// Cover `from`'s map is a cutoff: the species and stand (periodic images included) and
    /// the options of [`crate::dispersal::disperse_each`] that would compute it.
    Cutoff {
        from: usize,
        species: &'a Species,
        stand: &'a Stand,
        opts: &'a DisperseOptions,
    },
    /// The density of cover `from`'s parents' seeds per m² on grid rows `row0 ..` (whole rows,
    /// the run's precision): the whole map, or strips of the rows a split run computes.
    Map {
        from: usize,
        row0: usize,
        data: RasterData,
    },
    /// On a torus, the seeds of cover `from`'s parents flying beyond the periodic images' reach:
    /// `per_m2` seeds per m² on every cell.
    Tail { from: usize, per_m2: f64 },
}

/// The expected seeds per cell of `share.rows` (row-major from the band's first row; the whole
/// grid in one process) of one species from its parents (by cover), with the survival of seeds
/// landing in the other cover (`landing`: the band's covers); returns them and the methods
/// that ran. `methods` holds
/// each cover's method: an `auto` there is resolved by its first map and kept for the run (the
/// choice depends on the kernel and the grid, not on the year, and costs a cost model each time).
#[allow(clippy::too_many_arguments)]
pub(super) fn expected_seeds(
    backend: &Backend,
    grid: &GridSpec,
    sp: &ForestSpecies,
    parents: &[Vec<Parent>; 2],
    landing: &[u8],
    dopts: &DisperseOptions,
    methods: &mut [Method; 2],
    share: &RowShare<'_>,
    cancel: &Cancel,
    expected: &mut Vec<f64>,
) -> Result<String, GeofieldError> {
    let area = grid.cell_size_m * grid.cell_size_m;
    let first_row = share.rows.start;
    zeroed(expected, share.rows.len() * grid.cols);
    let keeps = [keep_from(sp, CANOPY), keep_from(sp, GAP)];
    let factor = |from: usize, i: usize| {
        if landing.is_empty() {
            area
        } else {
            area * keeps[from][usize::from(landing[i])]
        }
    };
    cover_maps(
        backend,
        grid,
        sp,
        parents,
        dopts,
        methods,
        share,
        cancel,
        &mut |part| {
            match part {
                CoverPart::Map { from, row0, data } => {
                    let at = (row0 - first_row) * grid.cols;
                    let strip = &mut expected[at..at + data.len()];
                    match &data {
                        RasterData::F32(v) => {
                            strip.par_iter_mut().enumerate().for_each(|(i, e)| {
                                *e += f64::from(v[i]) * factor(from, at + i);
                            });
                        }
                        RasterData::F64(v) => strip
                            .par_iter_mut()
                            .enumerate()
                            .for_each(|(i, e)| *e += v[i] * factor(from, at + i)),
                    }
                    backend.recycle(data);
                }
                CoverPart::Tail { from, per_m2 } => expected
                    .par_iter_mut()
                    .enumerate()
                    .for_each(|(i, e)| *e += per_m2 * factor(from, i)),
                CoverPart::Cutoff { .. } => {}
            }
            Ok(false)
        },
    )
}

/// The survival of a seed from cover `from` landing in each cover: [to canopy, to gap].
pub(super) fn keep_from(sp: &ForestSpecies, from: usize) -> [f64; 2] {
    [survival(sp, from, CANOPY), survival(sp, from, GAP)]
}

/// Each cover's map of seed density (and, on a torus, its far tail), handed to `sink` in the
/// order canopy map, canopy tail, gap map, gap tail (covers without parents skipped); returns
/// the methods that ran (see [`expected_seeds`]). The maps cover `share.rows`: the whole grid
/// in one process (one map each, by [`dispersal::disperse_each`]), or a split run's band, in
/// strips ([`dispersal::disperse_rows`]: every value the one-process run's).
#[allow(clippy::too_many_arguments)]
pub(super) fn cover_maps(
    backend: &Backend,
    grid: &GridSpec,
    sp: &ForestSpecies,
    parents: &[Vec<Parent>; 2],
    dopts: &DisperseOptions,
    methods: &mut [Method; 2],
    share: &RowShare<'_>,
    cancel: &Cancel,
    sink: &mut dyn FnMut(CoverPart<'_>) -> Result<bool, GeofieldError>,
) -> Result<String, GeofieldError> {
    let whole = share.parts == 1 && share.rows == (0..grid.rows);
    let mut labels: Vec<&'static str> = Vec::new();
    for from in [CANOPY, GAP] {
        if parents[from].is_empty() {
            continue;
        }
        let base = cover_species(sp, from);
        // The seeds' density: weight = N̄/η_K (the tree's DBH is replaced by 30 N̄, with
        // STR = 1 and β = 1).
        let dsp = [Species {
            name: format!(
                "{}/{}",
                sp.name(),
                if from == GAP { "gap" } else { "canopy" }
            ),
            kernel: base.kernel,
            str_: 1.0,
            beta: 1.0,
            eta: Eta::Analytic,
            min_dbh_cm: 0.0,
            multires_threshold_m: base.multires_threshold_m,
        }];
        // On a torus a seed wraps as often as it travels (SORTIE-ND's plot): every periodic
        // image of a parent within the kernel's reach of the plot adds to it, not just the
        // nearest (the dispersal module's torus), so the images go into the stand and the map
        // is computed on the open plot. Seeds flying farther than the reach (several plot
        // lengths) land evenly.
        let (reach, offsets) = if dopts.torus {
            let r = reach_m(&base.kernel)
                .min(TORUS_REACH_PERIODS * grid.width_m().max(grid.height_m()));
            (r, image_offsets(grid, r))
        } else {
            (f64::INFINITY, vec![(0.0, 0.0)])
        };
        let (x0, y0, x1, y1) = (grid.x_min_m, grid.y_min_m(), grid.x_max_m(), grid.y_max_m);
        let mut stand = Stand {
            x_m: Vec::new(),
            y_m: Vec::new(),
            dbh_cm: Vec::new(),
            species: Vec::new(),
        };
        for p in &parents[from] {
            for &(dx, dy) in &offsets {
                let (x, y) = (p.x_m + dx, p.y_m + dy);
                // Distance from the image to the plot rectangle.
                let ex = (x0 - x).max(x - x1).max(0.0);
                let ey = (y0 - y).max(y - y1).max(0.0);
                if ex.hypot(ey) > reach {
                    continue;
                }
                stand.x_m.push(x);
                stand.y_m.push(y);
                stand.dbh_cm.push(30.0 * p.mean_seeds);
                stand.species.push(0);
            }
        }
        let opts = DisperseOptions {
            method: methods[from],
            torus: false,
            ..*dopts
        };
        let offer = CoverPart::Cutoff {
            from,
            species: &dsp[0],
            stand: &stand,
            opts: &opts,
        };
        if whole && methods[from] == Method::Cutoff && sink(offer)? {
            labels.push(Method::Cutoff.name());
        } else {
            let reports = if whole {
                dispersal::disperse_each(
                    backend,
                    grid,
                    &dsp,
                    &stand,
                    &opts,
                    &mut |_| {},
                    cancel,
                    &mut |_, data| {
                        sink(CoverPart::Map {
                            from,
                            row0: 0,
                            data,
                        })
                        .map(|_| ())
                    },
                )?
            } else {
                dispersal::disperse_rows(
                    backend,
                    grid,
                    &dsp,
                    &stand,
                    &opts,
                    share.rows.len().max(1),
                    share,
                    &mut |_| {},
                    cancel,
                    &mut |strip| {
                        sink(CoverPart::Map {
                            from,
                            row0: strip.row0,
                            data: strip.data,
                        })
                        .map(|_| ())
                    },
                )?
            };
            if let Some(r) = reports.first() {
                methods[from] = r.method;
                labels.push(r.method.name());
            }
        }
        if dopts.torus {
            let seeds: f64 = parents[from].iter().map(|p| p.mean_seeds).sum();
            let per_m2 =
                seeds * base.kernel.mass_beyond(reach) / (grid.width_m() * grid.height_m());
            if per_m2 > 0.0 {
                sink(CoverPart::Tail { from, per_m2 })?;
            }
        }
    }
    labels.dedup();
    Ok(if labels.is_empty() {
        "none".to_string()
    } else {
        labels.join("/")
    })
}

/// `v` as `n` zeros (in parallel; its allocation kept).
pub(super) fn zeroed<T: Default + Copy + Send + Sync>(v: &mut Vec<T>, n: usize) {
    v.resize(n, T::default());
    v.par_iter_mut().for_each(|x| *x = T::default());
}

/// On a torus, periodic images count out to this many plot lengths; the seeds flying farther
/// (wrapping more often) land evenly over the plot.
const TORUS_REACH_PERIODS: f64 = 4.0;

/// The distance beyond which a seed of `kernel` lands with probability below 1e-9 (where a
/// torus stops adding periodic images).
fn reach_m(kernel: &crate::dispersal::Kernel) -> f64 {
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    while kernel.mass_beyond(hi) > 1e-9 && hi < 1e7 {
        lo = hi;
        hi *= 2.0;
    }
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        if kernel.mass_beyond(mid) > 1e-9 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

/// The shifts (whole plot periods) of the periodic images within `reach` of the plot.
fn image_offsets(grid: &GridSpec, reach: f64) -> Vec<(f64, f64)> {
    let (lx, ly) = (grid.width_m(), grid.height_m());
    let nx = (reach / lx).ceil().min(1000.0) as i64;
    let ny = (reach / ly).ceil().min(1000.0) as i64;
    let mut out = Vec::new();
    for j in -ny..=ny {
        for i in -nx..=nx {
            out.push((i as f64 * lx, j as f64 * ly));
        }
    }
    out
}

/// Add the species' non-spatial rain to the expected seeds of every cell.
pub(super) fn add_rain(
    grid: &GridSpec,
    sp: &ForestSpecies,
    s: usize,
    trees: &Trees,
    expected: &mut [f64],
) {
    let Some(rain) = sp.rain else {
        return;
    };
    let ba = super::rain::basal_area_of(
        grid,
        sp.canopy.min_dbh_cm,
        s as u32,
        (&trees.x_m, &trees.y_m, &trees.dbh_cm, &trees.species),
    );
    let per_cell = rain_per_cell(grid, &rain, ba);
    expected.par_iter_mut().for_each(|e| *e += per_cell);
}

/// The rain's expected seeds per cell with the stand's reproductive basal area `ba` (m²/ha).
pub(super) fn rain_per_cell(grid: &GridSpec, rain: &super::rain::Rain, ba: f64) -> f64 {
    rain.density(ba) * grid.cell_size_m * grid.cell_size_m
}
