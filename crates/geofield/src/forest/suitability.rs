//! The establishment suitability layer (feature `io`): a raster on the run's grid whose values
//! in [0, 1] multiply each species' establishment probability cell by cell (a stand-in for
//! SORTIE-ND's substrate and light behaviours; see [`super::establishment`]).

use std::path::Path;

use geofield_core::GridSpec;

use crate::input_error::InputError;

/// Read the first band of `path` (GeoTIFF, ESRI ASCII grid) as the suitability of every cell of
/// `grid`. The raster must have the grid's extent, cell size and shape; nodata (NaN) cells count
/// as 0 (nothing establishes); any other value outside [0, 1] is an error naming the first such
/// cell.
pub fn read_suitability(path: &Path, grid: &GridSpec) -> Result<Vec<f32>, InputError> {
    let (raster, _) = geofield_io::read_raster(path)?;
    let g = raster.grid;
    let tol = 1e-9 * grid.cell_size_m;
    if g.cols != grid.cols
        || g.rows != grid.rows
        || (g.cell_size_m - grid.cell_size_m).abs() > tol
        || (g.x_min_m - grid.x_min_m).abs() > tol
        || (g.y_max_m - grid.y_max_m).abs() > tol
    {
        return Err(InputError::Invalid {
            path: path.to_path_buf(),
            reason: format!(
                "the suitability raster must lie on the run's grid ({} x {} cells of {} m from \
                 x {} m, y {} m at the north-west corner); it has {} x {} cells of {} m from x \
                 {} m, y {} m",
                grid.cols,
                grid.rows,
                grid.cell_size_m,
                grid.x_min_m,
                grid.y_max_m,
                g.cols,
                g.rows,
                g.cell_size_m,
                g.x_min_m,
                g.y_max_m
            ),
        });
    }
    suitability_values(raster.band_f64(0), g.cols).map_err(|reason| InputError::Invalid {
        path: path.to_path_buf(),
        reason,
    })
}

/// The suitability of each cell from raw values (row-major, `cols` a row; for a message):
/// NaN (nodata) becomes 0; any other value outside [0, 1] is an error naming its row and
/// column.
pub fn suitability_values(v: Vec<f64>, cols: usize) -> Result<Vec<f32>, String> {
    if let Some(i) = v
        .iter()
        .position(|x| !x.is_nan() && !(0.0..=1.0).contains(x))
    {
        return Err(format!(
            "suitability must be in [0, 1] (or nodata); row {}, column {} holds {}",
            i / cols.max(1),
            i % cols.max(1),
            v[i]
        ));
    }
    Ok(v.into_iter()
        .map(|x| if x.is_nan() { 0.0 } else { x as f32 })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use geofield_core::{Extent, Raster, RasterData};

    fn write(dir: &Path, name: &str, grid: GridSpec, v: Vec<f32>) -> std::path::PathBuf {
        let p = dir.join(name);
        let r = Raster::new(grid, vec!["s".into()], RasterData::F32(v)).unwrap();
        geofield_io::geotiff::write_geotiff(&p, &r, &Default::default()).unwrap();
        p
    }

    /// The layer on the run's grid reads back value for value, NaN as 0; another grid, and a
    /// value outside [0, 1], are refused naming the file (and the cell).
    #[test]
    fn the_layer_must_lie_on_the_grid_and_hold_probabilities() {
        let dir = tempfile::tempdir().unwrap();
        let grid =
            GridSpec::from_extent(Extent::new(10.0, 20.0, 16.0, 24.0).unwrap(), 2.0).unwrap();
        let mut v: Vec<f32> = (0..grid.n_cells()).map(|i| i as f32 / 10.0).collect();
        v[1] = f32::NAN;
        let ok = write(dir.path(), "ok.tif", grid, v.clone());
        let got = read_suitability(&ok, &grid).unwrap();
        assert_eq!(got[1], 0.0);
        assert_eq!(got[5], 0.5);
        let other =
            GridSpec::from_extent(Extent::new(10.0, 20.0, 16.0, 24.0).unwrap(), 1.0).unwrap();
        let e = read_suitability(&ok, &other).unwrap_err().to_string();
        assert!(e.contains("ok.tif") && e.contains("run's grid"), "{e}");
        v[4] = 1.5;
        let bad = write(dir.path(), "bad.tif", grid, v);
        let e = read_suitability(&bad, &grid).unwrap_err().to_string();
        assert!(
            e.contains("bad.tif") && e.contains("row 1, column 1") && e.contains("1.5"),
            "{e}"
        );
    }
}
