//! Maps handed out in strips of rows as they are computed ([`disperse_strips`]), and one
//! process's rows of a run split over several ([`disperse_rows`], [`RowShare`]).

use geofield_core::{GridSpec, RasterData};

use geofield_cuda::wind::Exchange;

use super::sources::Sources;
use super::{
    DisperseOptions, Species, SpeciesReport, SpeciesStep, Stand, band, check_device_memory_rows,
    check_memory,
};
use crate::{Backend, Cancel, GeofieldError};

/// A horizontal strip of one species' map: grid rows `row0 ..` of band `band` (whole rows,
/// row-major from the north-west, in the output precision).
#[derive(Debug, Clone, PartialEq)]
pub struct Strip {
    pub band: usize,
    pub row0: usize,
    pub data: RasterData,
}

/// The rows of the maps this process computes when a run is split over processes (MPI ranks:
/// [`disperse_rows`]), and how the processes combine what each needs of the others.
pub struct RowShare<'a> {
    /// This process's rows of every map: whole strips of [`STRIP_ALIGN`](super::STRIP_ALIGN) rows (the grid's last
    /// row may end the range), so that every cell gets the whole run's value.
    pub rows: std::ops::Range<usize>,
    /// This process's index among `parts` processes (the near/far planner shares out its
    /// candidate splits by it).
    pub part: usize,
    pub parts: usize,
    /// `[max, sum]` over the processes, or the error of the lowest failing process. Called the
    /// same number of times on every process: at the end of each species (the band's maximum and
    /// sum of this process's rows), and before that by the near/far method (its near field's
    /// maximum, which the certificate needs over the whole map; and twice in its planning, to
    /// agree on the cheapest split). A process that fails calls it
    /// with its error instead, once, and then no more: the others get the error at the point
    /// they are at. `None`: one process.
    pub combine: Option<&'a Combine<'a>>,
    /// `Some`: each process holds a piece of the stand, not all of it: the `stand` this process
    /// passes is a contiguous run of the whole stand in file order (its byte range of the stem
    /// map), the pieces in process order; what the methods need of the whole stand is combined
    /// through this exchange, and each process receives the trees its rows need (the cutoff:
    /// those within the radius of its rows; the other methods and the torus: all). Every value
    /// is still the one-process run's. `None`: every process holds the whole stand.
    pub trees: Option<&'a dyn Exchange>,
    /// With `trees`: how the near/far split's far field crosses the processes.
    pub far: FarExchange,
}

/// How a near/far split over processes that hold pieces of the stand ([`RowShare::trees`])
/// gets the whole stand's far field. Both give every cell the one-process value bit for bit
/// (the lattice's node weights are exact fixed-point sums, whatever order the trees come in).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FarExchange {
    /// The smaller of the two below: the trees (3 words a tree) where they are fewer than the
    /// lattice's words (8 a node: two lattices, two words a node, sent and received).
    #[default]
    Auto,
    /// Each process spreads its piece, the lattices are summed over the processes (one coarse
    /// lattice crosses), and each process receives only the trees within the near radius of its
    /// rows.
    Lattice,
    /// Every process gathers every tree.
    Trees,
}

/// See [`RowShare::combine`].
pub type Combine<'a> =
    dyn Fn(Result<[f64; 2], String>) -> Result<[f64; 2], GeofieldError> + Sync + 'a;

impl RowShare<'_> {
    /// The whole grid in one process.
    pub fn whole(grid: &GridSpec) -> RowShare<'static> {
        RowShare {
            rows: 0..grid.rows,
            part: 0,
            parts: 1,
            combine: None,
            trees: None,
            far: FarExchange::Auto,
        }
    }

    /// `[max, sum]` over the processes of this one's `mine`.
    pub(crate) fn combined(&self, mine: [f64; 2]) -> Result<[f64; 2], GeofieldError> {
        match self.combine {
            Some(c) => c(Ok(mine)),
            None => Ok(mine),
        }
    }
}

/// [`disperse_each`](super::disperse_each) in strips of rows: each species' map is handed to `sink` as strips in
/// order (top to bottom; `strip_rows` rounded up to a multiple of [`STRIP_ALIGN`](super::STRIP_ALIGN)) as they are
/// computed. The cutoff method computes strip by strip, so a caller compresses or writes one
/// strip while the next computes and holds only the strips it keeps; the other methods compute
/// a whole map and hand it on as one strip. The values are those of [`disperse_each`](super::disperse_each). `sink`
/// is called before the species' `Done` step; an error from it stops the run.
#[allow(clippy::too_many_arguments)]
pub fn disperse_strips(
    backend: &Backend,
    grid: &GridSpec,
    species: &[Species],
    stand: &Stand,
    opts: &DisperseOptions,
    strip_rows: usize,
    progress: &mut dyn FnMut(SpeciesStep<'_>),
    cancel: &Cancel,
    sink: &mut dyn FnMut(Strip) -> Result<(), GeofieldError>,
) -> Result<Vec<SpeciesReport>, GeofieldError> {
    let share = RowShare::whole(grid);
    disperse_rows(
        backend, grid, species, stand, opts, strip_rows, &share, progress, cancel, sink,
    )
}

/// [`disperse_strips`] for the rows `share.rows` of every map only: one process's part of a run
/// split over processes by rows. Each process holds every tree (the methods' radii, bounds and
/// far fields depend on them all) and computes only its rows; the cutoff, the exact sum, the
/// near/far split's near field and the multi-resolution traversal on the CPU, and the cutoff on
/// the GPU, visit only those rows (the GPU's exact, near/far and multi-resolution kernels
/// compute the whole map, of which the process keeps its rows). Every value is the one-process
/// run's; the reports' seeds and maxima are the whole maps' (through `share.combine`).
#[allow(clippy::too_many_arguments)]
pub fn disperse_rows(
    backend: &Backend,
    grid: &GridSpec,
    species: &[Species],
    stand: &Stand,
    opts: &DisperseOptions,
    strip_rows: usize,
    share: &RowShare<'_>,
    progress: &mut dyn FnMut(SpeciesStep<'_>),
    cancel: &Cancel,
    sink: &mut dyn FnMut(Strip) -> Result<(), GeofieldError>,
) -> Result<Vec<SpeciesReport>, GeofieldError> {
    // This process's rows of every map (the whole grid in one process).
    let band = GridSpec {
        rows: share.rows.len().clamp(1, grid.rows.max(1)),
        ..*grid
    };
    check_memory(&band, species.len(), opts.precision)?;
    check_device_memory_rows(
        backend,
        grid,
        super::device_rows(opts.method, grid, &share.rows),
    )?;
    let mut reports = Vec::with_capacity(species.len());
    for (index, sp) in species.iter().enumerate() {
        cancel.check()?;
        progress(SpeciesStep::Start { index, species: sp });
        let sources = Sources::for_species(stand, index as u32, sp, grid, opts.torus);
        let precision = opts.precision;
        let mut report = band::disperse_species_strips(
            backend,
            grid,
            sp,
            &sources,
            opts,
            cancel,
            strip_rows,
            share,
            &mut |row0, b| {
                sink(Strip {
                    band: index,
                    row0,
                    data: b.into_data(precision),
                })
            },
        )?;
        if share.combine.is_some() {
            let cell = grid.cell_size_m * grid.cell_size_m;
            let [max, sum] =
                share.combined([report.max_density_per_m2, report.seeds_on_grid / cell])?;
            report.max_density_per_m2 = max;
            report.seeds_on_grid = sum * cell;
        }
        progress(SpeciesStep::Done {
            index,
            report: &report,
        });
        reports.push(report);
    }
    Ok(reports)
}
