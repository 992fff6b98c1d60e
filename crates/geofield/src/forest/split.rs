//! A forest stand split by rows over several parts (MPI ranks, or threads of one process):
//! `mpiexec -n R geofield forest ...` with one case.
//!
//! Each part takes a band of the grid's rows (whole units of
//! [`STRIP_ALIGN`](crate::dispersal::STRIP_ALIGN) rows, as even as the units allow:
//! [`band_rows`]) and keeps the whole stand. Each year, on every part alike, it computes the
//! per-tree steps (occupancy, masting, each tree's seeds, the parents by cover, mortality,
//! growth: cheap, and every draw keyed by the tree); on its band only, the per-cell steps (each
//! species' expected map by [`crate::dispersal::disperse_rows`], the seed counts, establishment:
//! every draw keyed by the cell's index in the whole grid). The year's new seedlings of every
//! band are gathered in band order, which is row order, the one-process order, and numbered
//! from the stand's next id. So every part ends each year with the stand a single process
//! has, to the bit, for any number of parts; only the dispersal maps' work (and the per-cell
//! work) is divided.
//!
//! Expected mode only: per-seed dispersal draws every seed of every parent wherever it lands,
//! work that a band does not divide (spread `--replicates` over the ranks instead). On a GPU
//! backend the maps of the band are computed on the part's GPU and the rest on its host (the
//! single-process GPU run keeps the whole year on the device instead, with the same draws but
//! f32 maps summed in another order: the two agree within the map's rounding, not bit for bit).
//!
//! Failures: every collective call of the split starts with an agreement
//! ([`Exchange::agree`]); a part that fails anywhere tells the others once, at whatever
//! collective point they are, and every part returns the error of the lowest failing part.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};

use geofield_core::GridSpec;

use super::params::ForestParams;
use super::simulate::{
    DispersalMode, SimulateOptions, Timing, Year, check_suitability, host_years,
};
use super::trees::Trees;
use crate::dispersal::{self, STRIP_ALIGN};
pub use crate::wind::split::{Exchange, LocalPart, LocalParts};
use crate::{Backend, Cancel, GeofieldError};

/// The rows of a grid of `rows` rows that part `part` of `parts` takes: whole units of
/// [`STRIP_ALIGN`] rows (the last may be short), spread as evenly as the units allow. Parts
/// beyond the units get no rows (they still take part in every collective call).
pub fn band_rows(rows: usize, part: usize, parts: usize) -> Range<usize> {
    let parts = parts.max(1);
    let units = rows.div_ceil(STRIP_ALIGN);
    let at = |p: usize| (p * units / parts * STRIP_ALIGN).min(rows);
    at(part)..at(part + 1)
}

/// Run the forest as [`super::simulate::simulate`] does, split by rows over the parts of `ex`
/// (see the [module docs](self)): this part computes its band and returns the whole final
/// stand, as every part does. `on_year` is called on every part with the whole stand's census
/// and trees; the seeds per cell ([`Year::seeds`]) are the whole grid's when `whole_seeds`
/// (gathered from every band each year: every part must pass the same), otherwise asking for
/// them is an error. An error on any part ends every part with the lowest failing part's error.
#[allow(clippy::too_many_arguments)]
pub fn simulate_split(
    backend: &Backend,
    grid: &GridSpec,
    params: &ForestParams,
    trees: Trees,
    opts: &SimulateOptions,
    ex: &dyn Exchange,
    whole_seeds: bool,
    cancel: &Cancel,
    on_year: &mut dyn FnMut(&Year<'_>) -> Result<(), GeofieldError>,
) -> Result<(Trees, Timing), GeofieldError> {
    let band = Band {
        rows: band_rows(grid.rows, ex.part(), ex.parts()),
        ex: Some(ex),
        told: AtomicBool::new(false),
        whole_seeds,
    };
    let checked = check_split(grid, params, opts, &band.rows);
    band.agree(checked.map_err(|e| e.to_string()))?;
    let run = host_years(backend, grid, params, trees, opts, &band, cancel, on_year);
    if let Err(e) = &run {
        band.fail(e);
    }
    run
}

/// What a split run refuses before it starts (the same on every part but the band's memory).
fn check_split(
    grid: &GridSpec,
    params: &ForestParams,
    opts: &SimulateOptions,
    rows: &Range<usize>,
) -> Result<(), GeofieldError> {
    if opts.mode == DispersalMode::PerSeed {
        return Err(GeofieldError::Invalid(
            "per-seed dispersal is not split by rows: every seed of every parent is drawn \
             wherever it lands (run it in one process, or spread --replicates over the ranks)"
                .into(),
        ));
    }
    check_suitability(grid, opts)?;
    // The band's per-cell buffers, as the whole run's in `simulate`.
    let band_grid = GridSpec {
        rows: rows.len().max(1),
        y_max_m: grid.y_max_m - rows.start as f64 * grid.cell_size_m,
        ..*grid
    };
    dispersal::check_memory(
        &band_grid,
        params.species.len() + 2,
        opts.dispersal.precision,
    )
}

/// The band of rows of one part of a run, and its collective calls with the other parts
/// (none in one process).
pub(super) struct Band<'a> {
    pub rows: Range<usize>,
    ex: Option<&'a dyn Exchange>,
    /// Whether every part already knows of a failure (an agreement returned it).
    told: AtomicBool,
    /// Whether the seeds per cell are gathered whole every year.
    pub whole_seeds: bool,
}

impl Band<'_> {
    /// The whole grid in one process.
    pub fn whole(grid: &GridSpec) -> Band<'static> {
        Band {
            rows: 0..grid.rows,
            ex: None,
            told: AtomicBool::new(false),
            whole_seeds: true,
        }
    }

    pub fn is_split(&self) -> bool {
        self.ex.is_some()
    }

    pub fn part(&self) -> usize {
        self.ex.map_or(0, |e| e.part())
    }

    pub fn parts(&self) -> usize {
        self.ex.map_or(1, |e| e.parts())
    }

    fn agree(&self, mine: Result<(), String>) -> Result<(), GeofieldError> {
        let Some(ex) = self.ex else {
            return mine.map_err(GeofieldError::Invalid);
        };
        ex.agree(mine).map_err(|e| {
            self.told.store(true, Ordering::SeqCst);
            GeofieldError::Invalid(e)
        })
    }

    /// This part failed: tell the others, unless they already know.
    fn fail(&self, e: &GeofieldError) {
        if let Some(ex) = self.ex
            && !self.told.swap(true, Ordering::SeqCst)
        {
            let _ = ex.agree(Err(e.to_string()));
        }
    }

    /// The dispersal's `[max, sum]` over the parts ([`crate::dispersal::RowShare::combine`]).
    pub fn combine(&self, mine: Result<[f64; 2], String>) -> Result<[f64; 2], GeofieldError> {
        let v = *mine.as_ref().unwrap_or(&[0.0; 2]);
        self.agree(mine.map(|_| ()))?;
        Ok(match self.ex {
            Some(ex) => [ex.max(v[0]), ex.sum(v[1])],
            None => v,
        })
    }

    /// The end of a year: every part's observer agreed (one failing fails every part).
    pub fn year_done(&self, mine: Result<(), GeofieldError>) -> Result<(), GeofieldError> {
        match self.ex {
            None => mine,
            Some(_) => self.agree(mine.map_err(|e| e.to_string())),
        }
    }

    /// Every band's new seedlings' positions (x, y pairs, in band order) and the sum of
    /// `seeds` (this band's seeds of the species) over the bands.
    pub fn gather_seedlings(
        &self,
        born: &Trees,
        seeds: u64,
    ) -> Result<(Vec<f64>, u64), GeofieldError> {
        let Some(ex) = self.ex else {
            return Ok((interleave(born), seeds));
        };
        // Per part: [seeds, n, x0, y0, x1, y1, ...]; counts below 2^53 travel exactly.
        let mut mine = Vec::with_capacity(2 + 2 * born.len());
        mine.push(seeds as f64);
        mine.push(born.len() as f64);
        mine.extend(interleave(born));
        self.agree(Ok(()))?;
        let all = ex.all_gather(&mine);
        let (mut xy, mut total, mut at) = (Vec::new(), 0u64, 0usize);
        for _ in 0..ex.parts() {
            let head = all.get(at..at + 2).ok_or_else(lost)?;
            let n = head[1] as usize;
            total += head[0] as u64;
            xy.extend_from_slice(all.get(at + 2..at + 2 + 2 * n).ok_or_else(lost)?);
            at += 2 + 2 * n;
        }
        Ok((xy, total))
    }

    /// Every band's seed counts, the whole grid's (row-major).
    pub fn gather_counts(&self, counts: &[u32]) -> Result<Vec<u32>, GeofieldError> {
        let Some(ex) = self.ex else {
            return Ok(counts.to_vec());
        };
        let mine: Vec<f64> = counts.iter().map(|&c| f64::from(c)).collect();
        self.agree(Ok(()))?;
        Ok(ex.all_gather(&mine).into_iter().map(|c| c as u32).collect())
    }
}

fn lost() -> GeofieldError {
    GeofieldError::Invalid("a part's new seedlings went missing in the gather".into())
}

/// x, y pairs of the trees in order.
fn interleave(t: &Trees) -> Vec<f64> {
    t.x_m
        .iter()
        .zip(&t.y_m)
        .flat_map(|(&x, &y)| [x, y])
        .collect()
}
