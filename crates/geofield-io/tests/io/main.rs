//! Integration tests of geofield-io's formats: every file is written into a fresh temporary
//! folder and read back, either with this crate's readers or with the `tiff` and `png` decoders.

// Test helpers outside `#[test]` functions may fail loudly too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod ascii;
mod atomic;
mod csv;
mod geotiff;
mod huge;
mod netcdf;
mod npy;
mod npz;
mod read;
mod render;
mod section;
mod vtk;

use geofield_core::{GridSpec, Raster, RasterData};

/// A grid with its north-west corner at (x_min, y_max).
pub fn grid(cols: usize, rows: usize, cell: f64, x_min: f64, y_max: f64) -> GridSpec {
    GridSpec {
        x_min_m: x_min,
        y_max_m: y_max,
        cell_size_m: cell,
        cols,
        rows,
    }
}

/// A raster whose value at (band, row, col) is `f(band, row, col)`.
pub fn raster_f32(g: GridSpec, names: &[&str], f: impl Fn(usize, usize, usize) -> f32) -> Raster {
    let mut v = Vec::new();
    for b in 0..names.len() {
        for r in 0..g.rows {
            for c in 0..g.cols {
                v.push(f(b, r, c));
            }
        }
    }
    Raster::new(
        g,
        names.iter().map(|s| s.to_string()).collect(),
        RasterData::F32(v),
    )
    .unwrap()
}

/// As [`raster_f32`] in f64.
pub fn raster_f64(g: GridSpec, names: &[&str], f: impl Fn(usize, usize, usize) -> f64) -> Raster {
    let mut v = Vec::new();
    for b in 0..names.len() {
        for r in 0..g.rows {
            for c in 0..g.cols {
                v.push(f(b, r, c));
            }
        }
    }
    Raster::new(
        g,
        names.iter().map(|s| s.to_string()).collect(),
        RasterData::F64(v),
    )
    .unwrap()
}

/// Names of the entries of a folder, sorted.
pub fn dir_entries(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}
