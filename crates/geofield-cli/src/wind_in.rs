//! Inputs of `geofield wind`: the DEM (nodata filled, optionally block-averaged to a coarser
//! cell), the stations CSV, the vertical levels and the memory check, each with errors that
//! name the file, line and column or the flag.

use std::collections::{HashMap, VecDeque};
use std::path::Path;

use anyhow::{Context, Result, bail};
use geofield::wind::{Levels, Station, WindGrid};
use geofield_core::GridSpec;
use geofield_io::CsvTable;

use crate::inputs;

/// The terrain on the wind grid's columns.
pub(crate) struct Dem {
    pub plan: GridSpec,
    pub terrain_m: Vec<f64>,
    pub crs_epsg: Option<u16>,
    /// Nodata cells filled (counted on the DEM's own grid).
    pub filled: usize,
    /// DEM cells per wind column along each axis (1: the DEM's grid).
    pub factor: usize,
    pub dem_cell_size_m: f64,
}

/// Read the DEM's first band; fill nodata with the nearest valid elevation (see
/// [`fill_nodata`]); block-average `factor x factor` cells when `cell_size_m` is an integer
/// multiple of the DEM's cell size.
pub(crate) fn read_dem(path: &Path, cell_size_m: Option<f64>) -> Result<Dem> {
    let (raster, meta) = geofield_io::read_raster(path).context("reading the DEM (--dem)")?;
    let g = raster.grid;
    if raster.n_bands() > 1 {
        eprintln!(
            "note: {} has {} bands; using the first ({}) as elevation",
            path.display(),
            raster.n_bands(),
            raster.band_names.first().map_or("", String::as_str)
        );
    }
    let mut z = raster.band_f64(0);
    let filled = fill_nodata(&mut z, g.cols, g.rows)
        .with_context(|| format!("{}: every cell is nodata", path.display()))?;
    if filled > 0 {
        eprintln!(
            "warning: {}: {filled} nodata cell{} filled with the elevation of the nearest valid cell",
            path.display(),
            if filled == 1 { "" } else { "s" }
        );
    }
    let dem_cell = g.cell_size_m;
    let cell = cell_size_m.unwrap_or(dem_cell);
    if !(cell.is_finite() && cell > 0.0) {
        bail!("--cell-size-m must be a positive number of metres, got {cell}");
    }
    let ratio = cell / dem_cell;
    let factor = ratio.round();
    if factor < 1.0 || (ratio - factor).abs() > 1e-6 * ratio {
        bail!(
            "mismatched cell size: the DEM {} has {dem_cell} m cells and --cell-size-m is {cell} m; \
             give the DEM's cell size or an integer multiple of it (the DEM is then block-averaged)",
            path.display()
        );
    }
    let k = factor as usize;
    let (cols, rows) = (g.cols / k, g.rows / k);
    if cols == 0 || rows == 0 {
        bail!(
            "--cell-size-m {cell} m is larger than the DEM {} ({} x {} cells of {dem_cell} m)",
            path.display(),
            g.cols,
            g.rows
        );
    }
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
    let terrain_m = if k == 1 {
        z
    } else {
        block_average(&z, g.cols, k, cols, rows)
    };
    Ok(Dem {
        plan: GridSpec {
            x_min_m: g.x_min_m,
            y_max_m: g.y_max_m,
            cell_size_m: dem_cell * k as f64,
            cols,
            rows,
        },
        terrain_m,
        crs_epsg: meta.crs_epsg,
        filled,
        factor: k,
        dem_cell_size_m: dem_cell,
    })
}

/// Replace every non-finite cell by the value of the nearest finite cell, nearest in steps to
/// the eight neighbours (chessboard distance), found by a breadth-first search from all valid
/// cells at once; ties go to the cell reached first (scan order of the sources). Returns the
/// number of cells filled, or `None` when no cell is valid.
pub(crate) fn fill_nodata(z: &mut [f64], cols: usize, rows: usize) -> Option<usize> {
    let mut queue: VecDeque<usize> = (0..z.len()).filter(|&i| z[i].is_finite()).collect();
    if queue.is_empty() {
        return None;
    }
    let missing = z.len() - queue.len();
    while let Some(i) = queue.pop_front() {
        let (r, c) = ((i / cols) as i64, (i % cols) as i64);
        for dr in -1..=1i64 {
            for dc in -1..=1i64 {
                let (rr, cc) = (r + dr, c + dc);
                if rr < 0 || cc < 0 || rr >= rows as i64 || cc >= cols as i64 {
                    continue;
                }
                let j = rr as usize * cols + cc as usize;
                if !z[j].is_finite() {
                    z[j] = z[i];
                    queue.push_back(j);
                }
            }
        }
    }
    Some(missing)
}

/// Means of `k x k` blocks of a `src_cols`-wide grid into `cols x rows` blocks.
fn block_average(z: &[f64], src_cols: usize, k: usize, cols: usize, rows: usize) -> Vec<f64> {
    let mut out = Vec::with_capacity(cols * rows);
    let inv = 1.0 / (k * k) as f64;
    for r in 0..rows {
        for c in 0..cols {
            let mut sum = 0.0;
            for rr in r * k..(r + 1) * k {
                sum += z[rr * src_cols + c * k..rr * src_cols + (c + 1) * k]
                    .iter()
                    .sum::<f64>();
            }
            out.push(sum * inv);
        }
    }
    out
}

/// Column names of the stations CSV.
pub(crate) const STATION_COLUMNS: [&str; 6] = [
    "id",
    "x_m",
    "y_m",
    "height_agl_m",
    "speed_m_per_s",
    "direction_deg",
];

/// Read `id,x_m,y_m,height_agl_m,speed_m_per_s,direction_deg[,stability]` (any order, other
/// columns ignored). An empty stability cell means "the --stability default".
pub(crate) fn read_stations(path: &Path) -> Result<Vec<Station>> {
    let mut t = CsvTable::read(path)?;
    let cols: Vec<usize> = STATION_COLUMNS
        .iter()
        .map(|c| t.column(c))
        .collect::<Result<_, _>>()?;
    let cs = t.column("stability").ok();
    let file = path.display().to_string();
    let mut out: Vec<Station> = Vec::new();
    let mut lines: HashMap<String, u64> = HashMap::new();
    let mut rec = geofield_io::CsvRecord::default();
    while t.next_record(&mut rec)? {
        let row = t.row(&rec);
        let line = row.line();
        let id = row.str(cols[0])?.to_string();
        let [x_m, y_m, height_agl_m, speed_m_per_s, direction_deg] =
            [1, 2, 3, 4, 5].map(|i| row.finite_f64(cols[i]));
        let (x_m, y_m) = (x_m?, y_m?);
        let (height_agl_m, speed_m_per_s, direction_deg) =
            (height_agl_m?, speed_m_per_s?, direction_deg?);
        let at = |col: usize, what: String| {
            anyhow::anyhow!("{file}:{line}: column \"{}\": {what}", t.headers[col])
        };
        if id.is_empty() {
            return Err(at(cols[0], "the station id is empty".into()));
        }
        if let Some(first) = lines.insert(id.clone(), line) {
            return Err(at(
                cols[0],
                format!("station id {id:?} is used twice (lines {first} and {line})"),
            ));
        }
        if height_agl_m <= 0.0 {
            return Err(at(
                cols[3],
                format!("height {height_agl_m} m: the anemometer must be above the ground (> 0 m)"),
            ));
        }
        if speed_m_per_s < 0.0 {
            return Err(at(
                cols[4],
                format!("speed {speed_m_per_s} m/s is negative; speeds must be >= 0"),
            ));
        }
        if !(0.0..=360.0).contains(&direction_deg) {
            return Err(at(
                cols[5],
                format!(
                    "direction {direction_deg} is not in [0, 360] degrees (where the wind comes \
                     from, clockwise from north)"
                ),
            ));
        }
        let stability = match cs {
            Some(c) if !row.str(c)?.is_empty() => {
                Some(row.str(c)?.parse().map_err(|e: String| at(c, e))?)
            }
            _ => None,
        };
        out.push(Station {
            id,
            x_m,
            y_m,
            height_agl_m,
            speed_m_per_s,
            direction_deg,
            stability,
        });
    }
    if out.is_empty() {
        bail!("{file}: no stations (only a header?)");
    }
    Ok(out)
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

/// Refuse, before allocating, a grid that would not fit in the available memory.
pub(crate) fn check_memory(cols: usize, rows: usize, nz: usize) -> Result<()> {
    let cells = cols as u128 * rows as u128 * nz as u128;
    let need = cells * (WindGrid::BYTES_PER_CELL + OUTPUT_BYTES_PER_CELL) as u128;
    let too_many = cells > usize::MAX as u128 / 64;
    let avail = inputs::available_memory_bytes();
    if too_many || avail.is_some_and(|a| need > u128::from(a)) {
        bail!(
            "the wind grid of {cols} x {rows} columns x {nz} layers = {cells} cells needs about \
             {:.1} GB of memory, more than this machine's {} available: use a coarser \
             --cell-size-m (a multiple of the DEM's) or fewer layers",
            need as f64 / 1e9,
            avail.map_or("(unknown)".to_string(), |a| format!(
                "{:.1} GB",
                a as f64 / 1e9
            ))
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodata_takes_the_nearest_valid_cell() {
        let n = f64::NAN;
        let mut z = vec![1.0, n, n, n, n, n, n, n, 9.0];
        assert_eq!(fill_nodata(&mut z, 3, 3), Some(7));
        assert_eq!(z, vec![1.0, 1.0, 1.0, 1.0, 1.0, 9.0, 1.0, 9.0, 9.0]);
        let mut all = vec![n; 4];
        assert_eq!(fill_nodata(&mut all, 2, 2), None);
        let mut none = vec![2.0; 4];
        assert_eq!(fill_nodata(&mut none, 2, 2), Some(0));
    }

    #[test]
    fn blocks_average() {
        let z: Vec<f64> = (0..12).map(f64::from).collect(); // 4 x 3
        assert_eq!(block_average(&z, 4, 2, 2, 1), vec![2.5, 4.5]);
    }
}
