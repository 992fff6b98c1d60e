//! Per-seed seed placement on the GPU: a safe wrapper over `kernels/forest.cu`.
//!
//! The library's `geofield::forest::per_seed::place` sheds every seed of a set of parents and
//! counts it in the cell it lands in; [`place_seeds`] does the same on the device, bit for bit:
//! one thread per seed (a grid-stride loop over all parents' seeds), its parent found by binary
//! search over the parents' exclusive prefix offsets of their seed counts (drawn on the host by
//! the library's own `random_round`), its two 32-bit draws computed directly from the parent's
//! Philox4x32-10 stream (they are two lanes of one counter block), the distance from the
//! library's quantile tables with its logarithm and exponential in FMA, add, mul and division
//! only, the direction from its unit-vector table, the torus wrap and the cell as the CPU does,
//! and an `atomicAdd` on a u32 count per cell. Every f64 operation is an explicit round-to-nearest
//! instruction (no contraction into FMAs, whatever the module's `--use_fast_math`), fused exactly
//! where the CPU calls `mul_add`; see the kernel's header. [`seed_positions`] runs the same
//! kernel and also returns every seed's distance and position, for the parity tests.
//!
//! The kernel contract: [`FlightTables`] are `Flight::tables()` (quantile tables of `table + 1`
//! entries each, [`DIRECTIONS`] + 1 unit vectors); [`SeedParents`] hold positions (m), stream ids
//! (at most 48 bits) and `offsets` (one more than the parents, from 0, non-decreasing);
//! [`PlotGrid`] is the grid with its width and height as the library computes them; [`StreamKey`]
//! the stream's run seed, year, species and purpose byte.

use cudarc::driver::DeviceRepr;

use crate::error::{CudaError, invalid};

mod launch;
#[cfg(test)]
mod tests;
pub mod year;

pub use launch::{place_seeds, seed_positions};

const MODULE: &str = "forest";
const KERNEL: &str = "forest_place_seeds";
/// Threads per block (`FO_THREADS`).
const THREADS: u32 = 256;
/// Intervals of the directions' table: 12 bits of a draw pick one (`FO_DIRECTIONS`).
pub const DIRECTIONS: usize = 1 << 12;
/// Most parents of one launch (the binary search is over u32 indices).
pub const MAX_PARENTS: usize = u32::MAX as usize;

/// A species' seed flights as the library tabulates them (`Flight::tables()`).
#[derive(Clone, Copy, Debug)]
pub struct FlightTables<'a> {
    /// ln r at `table + 1` equally spaced x = −ln u (u < ½) from ln 2 on.
    pub near: &'a [f64],
    /// ln r at the same x = −ln(1 − u) (u ≥ ½).
    pub far: &'a [f64],
    /// 1 / the tables' step in x.
    pub inv_step: f64,
    /// (cos, sin) at [`DIRECTIONS`] + 1 equally spaced angles.
    pub dir: &'a [(f64, f64)],
}

/// The parents that shed seeds (struct of arrays).
#[derive(Clone, Copy, Debug)]
pub struct SeedParents<'a> {
    /// Position (m, world coordinates).
    pub x_m: &'a [f64],
    pub y_m: &'a [f64],
    /// Stream id (the parent's; at most 48 bits are used, as the library's streams do).
    pub id: &'a [u64],
    /// Exclusive prefix sums of the parents' seed counts, plus the total: `x_m.len() + 1`
    /// entries, `offsets[0] = 0`, non-decreasing. Parent i sheds seeds `offsets[i]..offsets[i + 1]`.
    pub offsets: &'a [u64],
}

/// The grid the seeds are counted on (row-major from the north-west, one u32 per cell).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlotGrid {
    pub x_min_m: f64,
    pub y_max_m: f64,
    pub cell_size_m: f64,
    pub cols: usize,
    pub rows: usize,
    /// cols · cell size and rows · cell size, as the library computes them (the torus' periods).
    pub width_m: f64,
    pub height_m: f64,
    /// Seeds wrap around the plot (else those landing outside are lost).
    pub torus: bool,
}

/// Whose random stream the seeds draw from: the library's `Stream::new(seed, year, species, id,
/// purpose)` for each parent's id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamKey {
    pub seed: u64,
    pub year: u32,
    pub species: u8,
    /// The purpose's byte (`Purpose::SeedPlacement as u8`).
    pub purpose: u8,
}

/// The kernel's parameters (C: `ForestPlaceParams`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ForestPlaceParams {
    pub x_min_m: f64,
    pub y_max_m: f64,
    pub cell_m: f64,
    pub width_m: f64,
    pub height_m: f64,
    pub width_below_m: f64,
    pub height_below_m: f64,
    pub cols_f: f64,
    pub rows_f: f64,
    pub inv_step: f64,
    pub seeds: u64,
    pub cols: u64,
    pub parents: u32,
    pub table: u32,
    pub key0: u32,
    pub key1: u32,
    pub year: u32,
    pub tag: u32,
    pub torus: u32,
    pub record: u32,
}

// SAFETY: #[repr(C)] plain-old-data (f64, u64 and u32 fields, no padding: ten f64, two u64 and
// eight u32 make 128 bytes) whose layout matches the C mirror `ForestPlaceParams` (size checked on
// both sides: GF_CHECK_SIZE and the unit test).
unsafe impl DeviceRepr for ForestPlaceParams {}

/// (Rust name, C name, size in bytes) of the parameter struct.
pub const PARAM_STRUCTS: &[(&str, &str, usize)] =
    &[("ForestPlaceParams", "ForestPlaceParams", 128)];

/// Checks the inputs against the kernel contract (see the module docs) and builds the
/// parameters; `None` when there is no seed to place.
pub(crate) fn params(
    tables: &FlightTables<'_>,
    parents: &SeedParents<'_>,
    grid: &PlotGrid,
    key: StreamKey,
    counts_len: usize,
    record: bool,
) -> Result<Option<ForestPlaceParams>, CudaError> {
    let table = tables.near.len().saturating_sub(1);
    if table == 0 || tables.far.len() != tables.near.len() || table > u32::MAX as usize - 1 {
        return Err(invalid(
            KERNEL,
            format!(
                "the quantile tables hold {} (near) and {} (far) entries: expected the same \
                 number, at least 2",
                tables.near.len(),
                tables.far.len()
            ),
        ));
    }
    if tables.dir.len() != DIRECTIONS + 1 {
        return Err(invalid(
            KERNEL,
            format!(
                "the directions' table holds {} entries: expected {}",
                tables.dir.len(),
                DIRECTIONS + 1
            ),
        ));
    }
    if !(tables.inv_step.is_finite() && tables.inv_step > 0.0) {
        return Err(invalid(
            KERNEL,
            format!("inv_step = {} must be finite and > 0", tables.inv_step),
        ));
    }
    let n = parents.x_m.len();
    if parents.y_m.len() != n || parents.id.len() != n || parents.offsets.len() != n + 1 {
        return Err(invalid(
            KERNEL,
            format!(
                "parent arrays of different lengths (x {}, y {}, id {}, offsets {}; offsets \
                 must hold one more than the parents)",
                n,
                parents.y_m.len(),
                parents.id.len(),
                parents.offsets.len()
            ),
        ));
    }
    if n > MAX_PARENTS {
        return Err(invalid(
            KERNEL,
            format!("{n} parents; at most {MAX_PARENTS} per call"),
        ));
    }
    if parents.offsets[0] != 0 || parents.offsets.windows(2).any(|w| w[1] < w[0]) {
        return Err(invalid(
            KERNEL,
            "offsets must start at 0 and never decrease",
        ));
    }
    let cells = grid.cols.checked_mul(grid.rows);
    if grid.cols == 0 || grid.rows == 0 || cells != Some(counts_len) {
        return Err(invalid(
            KERNEL,
            format!(
                "a grid of {} x {} cells needs that many counts; got {counts_len} (and at \
                 least one cell)",
                grid.cols, grid.rows
            ),
        ));
    }
    let positive = |v: f64| v.is_finite() && v > 0.0;
    if !(positive(grid.cell_size_m) && positive(grid.width_m) && positive(grid.height_m)) {
        return Err(invalid(
            KERNEL,
            format!(
                "cell size {} m, width {} m and height {} m must be finite and > 0",
                grid.cell_size_m, grid.width_m, grid.height_m
            ),
        ));
    }
    if !(grid.x_min_m.is_finite() && grid.y_max_m.is_finite()) {
        return Err(invalid(KERNEL, "the grid's origin is not finite"));
    }
    let seeds = parents.offsets[n];
    if seeds == 0 {
        return Ok(None);
    }
    Ok(Some(ForestPlaceParams {
        x_min_m: grid.x_min_m,
        y_max_m: grid.y_max_m,
        cell_m: grid.cell_size_m,
        width_m: grid.width_m,
        height_m: grid.height_m,
        width_below_m: grid.width_m.next_down(),
        height_below_m: grid.height_m.next_down(),
        cols_f: grid.cols as f64,
        rows_f: grid.rows as f64,
        inv_step: tables.inv_step,
        seeds,
        cols: grid.cols as u64,
        parents: n as u32,
        table: table as u32,
        key0: key.seed as u32,
        key1: (key.seed >> 32) as u32,
        year: key.year,
        tag: (u32::from(key.species) << 16) | (u32::from(key.purpose) << 24),
        torus: u32::from(grid.torus),
        record: u32::from(record),
    }))
}
