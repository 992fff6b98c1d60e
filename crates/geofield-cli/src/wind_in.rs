//! Inputs of `geofield wind`: the DEM and the stations CSV (read by [`geofield::wind::io`]),
//! the vertical levels and the memory check, each with errors that name the file, line and
//! column or the flag.

use std::path::Path;

use anyhow::Result;
use geofield::wind::{Levels, WindGrid};

pub(crate) use geofield::wind::io::{Dem, read_stations};

/// The DEM of `--dem` at `--cell-size-m` (see [`geofield::wind::io::read_dem`]), with notes on
/// stderr about extra bands, filled nodata cells and cells the blocks leave out.
pub(crate) fn read_dem(path: &Path, cell_size_m: Option<f64>) -> Result<Dem> {
    use geofield::wind::io::DemError;
    let dem = geofield::wind::io::read_dem(path, cell_size_m).map_err(|e| match e {
        DemError::Input(e) => anyhow::Error::from(*e).context("reading the DEM (--dem)"),
        DemError::BadCellSize(c) => {
            anyhow::anyhow!("--cell-size-m must be a positive number of metres, got {c}")
        }
        e => anyhow::anyhow!("{}", e.to_string().replace("cell_size_m", "--cell-size-m")),
    })?;
    if dem.bands > 1 {
        eprintln!(
            "note: {} has {} bands; using the first ({}) as elevation",
            path.display(),
            dem.bands,
            dem.band_name
        );
    }
    if dem.filled > 0 {
        eprintln!(
            "warning: {}: {} nodata cell{} filled with the elevation of the nearest valid cell",
            path.display(),
            dem.filled,
            if dem.filled == 1 { "" } else { "s" }
        );
    }
    let (g, k) = (dem.dem_grid, dem.factor);
    if k > 1 && (g.cols % k != 0 || g.rows % k != 0) {
        eprintln!(
            "note: {} x {} DEM cells do not divide into {k} x {k} blocks: the last {} columns \
             (east) and {} rows (south) are left out",
            g.cols,
            g.rows,
            g.cols % k,
            g.rows % k
        );
    }
    Ok(dem)
}

/// The levels of `--levels-m` or `--nz`/`--dz-m`, and the number of layers.
pub(crate) fn levels(levels_m: Option<&[f64]>, nz: usize, dz_m: f64) -> (Levels, usize) {
    match levels_m {
        Some(t) => (Levels::Tops(t.to_vec()), t.len()),
        None => (Levels::Uniform { nz, dz_m }, nz),
    }
}

/// Bytes per cell the command needs besides the solver's: cell-centred fields (4 × f64), f32
/// copies for the outputs (faces and cells).
const OUTPUT_BYTES_PER_CELL: usize = 4 * 8 + 8 * 4;

/// Refuse, before allocating, a grid that would not fit in the available memory (the check is
/// the library's, [`WindGrid::check_memory`]; the hint names the flags).
pub(crate) fn check_memory(cols: usize, rows: usize, nz: usize) -> Result<()> {
    WindGrid::check_memory(cols, rows, nz, OUTPUT_BYTES_PER_CELL).map_err(|e| {
        anyhow::anyhow!(
            "{e}: use a coarser --cell-size-m (a multiple of the DEM's) or fewer layers"
        )
    })
}
