//! Reading the inputs of the wind model: the DEM (nodata filled, optionally block-averaged to a
//! coarser cell) and the stations CSV. Errors name the file, line and column; what the caller
//! may want to tell a user (several bands, cells filled, cells left out by the blocks) is
//! returned in [`Dem`].

use std::collections::{HashMap, VecDeque};
use std::path::Path;

use geofield_core::GridSpec;

use crate::input_error::{InputError, quote};
use crate::wind::Station;

/// The terrain on the wind grid's columns.
#[derive(Debug, Clone, PartialEq)]
pub struct Dem {
    /// The wind grid's columns (the DEM's grid, or its blocks).
    pub plan: GridSpec,
    /// Ground elevation per column (m), `plan.rows * plan.cols`, row 0 north.
    pub terrain_m: Vec<f64>,
    /// EPSG code of the DEM's coordinate reference system, when it declares one.
    pub crs_epsg: Option<u16>,
    /// Nodata cells filled (counted on the DEM's own grid).
    pub filled: usize,
    /// DEM cells per wind column along each axis (1: the DEM's grid).
    pub factor: usize,
    pub dem_cell_size_m: f64,
    /// The DEM's own grid (before block averaging).
    pub dem_grid: GridSpec,
    /// Bands in the file (the first is the elevation) and the name of the first.
    pub bands: usize,
    pub band_name: String,
}

impl Dem {
    /// DEM columns in the last (east) block column and DEM rows in the last (south) block row
    /// when they do not fill a whole block (0 when they do, and without block averaging): those
    /// blocks average the DEM cells they hold and reach beyond the DEM's edge by the rest of a
    /// block.
    pub fn partial_blocks(&self) -> (usize, usize) {
        let (g, k) = (self.dem_grid, self.factor);
        if k > 1 {
            (g.cols % k, g.rows % k)
        } else {
            (0, 0)
        }
    }
}

/// Whether a DEM is in geographic coordinates (degrees), and how we know: its CRS is a
/// geographic EPSG code, its `.prj` is a `GEOGCS` (ESRI WKT without a code), or, with no CRS,
/// its cells are smaller than 0.01 and its extent fits in ±180 × ±90 (degrees, not metres).
pub fn geographic_reason(path: &Path, crs_epsg: Option<u16>, grid: &GridSpec) -> Option<String> {
    if let Some(code) = crs_epsg {
        return (geofield_io::crs::is_geographic(code) == Some(true))
            .then(|| format!("its CRS, EPSG:{code}, is geographic (degrees)"));
    }
    let prj = path.with_extension("prj");
    let small = std::fs::metadata(&prj).is_ok_and(|m| m.len() <= 1 << 16);
    if small
        && std::fs::read_to_string(&prj)
            .is_ok_and(|t| t.trim_start().to_ascii_uppercase().starts_with("GEOGCS"))
    {
        return Some(format!("{} is a GEOGCS (degrees)", prj.display()));
    }
    let e = grid.extent();
    let in_degrees =
        e.x_min_m >= -180.0 && e.x_max_m <= 360.0 && e.y_min_m >= -90.0 && e.y_max_m <= 90.0;
    (grid.cell_size_m < 0.01 && in_degrees).then(|| {
        format!(
            "it declares no CRS and its {} cells and extent x {:.4}..{:.4}, y {:.4}..{:.4} look \
             like degrees",
            grid.cell_size_m, e.x_min_m, e.x_max_m, e.y_min_m, e.y_max_m
        )
    })
}

/// Errors of [`read_dem`] that are about the requested cell size rather than the file.
#[derive(Debug, thiserror::Error)]
pub enum DemError {
    /// The file cannot be read or is not a usable DEM (boxed: the other variants are small).
    #[error(transparent)]
    Input(Box<InputError>),
    /// `cell_size_m` is not positive and finite.
    #[error("cell_size_m must be a positive number of metres, got {0}")]
    BadCellSize(f64),
    /// `cell_size_m` is not an integer multiple of the DEM's cell size.
    #[error(
        "mismatched cell size: the DEM {} has {dem_cell_size_m} m cells and cell_size_m is {cell_size_m} m; give the DEM's cell size or an integer multiple of it (the DEM is then block-averaged)",
        .path.display()
    )]
    NotMultiple {
        path: std::path::PathBuf,
        dem_cell_size_m: f64,
        cell_size_m: f64,
    },
    /// The DEM is in geographic coordinates (degrees), not metres.
    #[error(
        "{}: the DEM must be on a projected grid in metres, and {reason}; reproject it first, e.g. gdalwarp -t_srs EPSG:32611 -r bilinear {} dem_utm.tif (the UTM zone of the area: 326NN north, 327NN south)",
        .path.display(), .path.display()
    )]
    Geographic {
        path: std::path::PathBuf,
        reason: String,
    },
    /// `cell_size_m` is larger than the DEM.
    #[error(
        "cell_size_m {cell_size_m} m is larger than the DEM {} ({cols} x {rows} cells of {dem_cell_size_m} m)",
        .path.display()
    )]
    LargerThanDem {
        path: std::path::PathBuf,
        cell_size_m: f64,
        cols: usize,
        rows: usize,
        dem_cell_size_m: f64,
    },
}

impl From<InputError> for DemError {
    fn from(e: InputError) -> Self {
        DemError::Input(Box::new(e))
    }
}

/// Read the DEM's first band (GeoTIFF or ESRI ASCII grid, see [`geofield_io::read_raster`]);
/// fill nodata with the nearest valid elevation (see [`fill_nodata`]); block-average
/// `factor x factor` cells when `cell_size_m` is an integer multiple of the DEM's cell size
/// (a last column or row of blocks that the DEM does not fill averages the cells it holds and
/// reaches beyond the DEM's east or south edge: nothing is left out, see
/// [`Dem::partial_blocks`]). A DEM in geographic coordinates is refused
/// ([`geographic_reason`], [`DemError::Geographic`]).
pub fn read_dem(path: &Path, cell_size_m: Option<f64>) -> Result<Dem, DemError> {
    let (raster, meta) = geofield_io::read_raster(path).map_err(InputError::from)?;
    let g = raster.grid;
    if let Some(reason) = geographic_reason(path, meta.crs_epsg, &g) {
        return Err(DemError::Geographic {
            path: path.to_path_buf(),
            reason,
        });
    }
    let mut z = raster.band_f64(0);
    let filled = fill_nodata(&mut z, g.cols, g.rows).ok_or_else(|| {
        DemError::from(InputError::Invalid {
            path: path.to_path_buf(),
            reason: "every cell is nodata".into(),
        })
    })?;
    let dem_cell = g.cell_size_m;
    let cell = cell_size_m.unwrap_or(dem_cell);
    if !(cell.is_finite() && cell > 0.0) {
        return Err(DemError::BadCellSize(cell));
    }
    let ratio = cell / dem_cell;
    let factor = ratio.round();
    if !(factor >= 1.0 && (ratio - factor).abs() <= 1e-6 * ratio) {
        return Err(DemError::NotMultiple {
            path: path.to_path_buf(),
            dem_cell_size_m: dem_cell,
            cell_size_m: cell,
        });
    }
    let k = if factor > g.cols.max(g.rows) as f64 {
        usize::MAX
    } else {
        factor as usize
    };
    let (cols, rows) = (g.cols.div_ceil(k), g.rows.div_ceil(k));
    if k > g.cols || k > g.rows {
        return Err(DemError::LargerThanDem {
            path: path.to_path_buf(),
            cell_size_m: cell,
            cols: g.cols,
            rows: g.rows,
            dem_cell_size_m: dem_cell,
        });
    }
    let terrain_m = if k == 1 {
        z
    } else {
        block_average(&z, g.cols, g.rows, k)
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
        dem_grid: g,
        bands: raster.n_bands(),
        band_name: raster.band_names.first().cloned().unwrap_or_default(),
    })
}

/// Replace every non-finite cell by the value of the nearest finite cell, nearest in steps to
/// the eight neighbours (chessboard distance), found by a breadth-first search from all valid
/// cells at once; ties go to the cell reached first (scan order of the sources). Returns the
/// number of cells filled, or `None` when no cell is valid.
pub fn fill_nodata(z: &mut [f64], cols: usize, rows: usize) -> Option<usize> {
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

/// Means of the `k x k` blocks of a `src_cols x src_rows` grid, ⌈src_cols/k⌉ × ⌈src_rows/k⌉
/// blocks; a block at the east or south edge that the grid does not fill is the mean of the
/// cells it holds.
fn block_average(z: &[f64], src_cols: usize, src_rows: usize, k: usize) -> Vec<f64> {
    let (cols, rows) = (src_cols.div_ceil(k), src_rows.div_ceil(k));
    let mut out = Vec::with_capacity(cols * rows);
    for r in 0..rows {
        let r_end = ((r + 1) * k).min(src_rows);
        for c in 0..cols {
            let c_end = ((c + 1) * k).min(src_cols);
            let mut sum = 0.0;
            for rr in r * k..r_end {
                sum += z[rr * src_cols + c * k..rr * src_cols + c_end]
                    .iter()
                    .sum::<f64>();
            }
            out.push(sum / ((r_end - r * k) * (c_end - c * k)) as f64);
        }
    }
    out
}

/// Column names of the stations CSV.
pub const STATION_COLUMNS: [&str; 6] = [
    "id",
    "x_m",
    "y_m",
    "height_agl_m",
    "speed_m_per_s",
    "direction_deg",
];

/// Read `id,x_m,y_m,height_agl_m,speed_m_per_s,direction_deg[,stability]` (any order, other
/// columns ignored). An empty stability cell means "the run's default" (`None`).
pub fn read_stations(path: &Path) -> Result<Vec<Station>, InputError> {
    let mut t = geofield_io::CsvTable::read(path)?;
    let cols: Vec<usize> = STATION_COLUMNS
        .iter()
        .map(|c| t.column(c))
        .collect::<Result<_, _>>()?;
    let cs = t.column("stability").ok();
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
        let at =
            |col: usize, reason: String| super::field_error(path, line, &t.headers, col, reason);
        if id.is_empty() {
            return Err(at(cols[0], "the station id is empty".into()));
        }
        if let Some(first) = lines.insert(id.clone(), line) {
            return Err(at(
                cols[0],
                format!(
                    "station id {} is used twice (lines {first} and {line})",
                    quote(&id)
                ),
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
        return Err(InputError::Invalid {
            path: path.to_path_buf(),
            reason: "no stations (only a header?)".into(),
        });
    }
    Ok(out)
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
        // 2 x 2 blocks: the south row of blocks holds one DEM row (8..11).
        assert_eq!(block_average(&z, 4, 3, 2), vec![2.5, 4.5, 8.5, 10.5]);
        // 3 x 3: a full-height block of 3 columns and a partial one of 1 column.
        assert_eq!(block_average(&z, 4, 3, 3), vec![5.0, 7.0]);
    }
}
