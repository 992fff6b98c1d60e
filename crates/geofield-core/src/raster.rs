use crate::{CoreError, GridSpec};

/// Raster values in the computation's precision, band-major: index `(band * rows + row) * cols + col`.
#[derive(Debug, Clone, PartialEq)]
pub enum RasterData {
    F32(Vec<f32>),
    F64(Vec<f64>),
}

impl RasterData {
    pub fn len(&self) -> usize {
        match self {
            RasterData::F32(v) => v.len(),
            RasterData::F64(v) => v.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Value at flat index `i` as f64.
    pub fn get_f64(&self, i: usize) -> f64 {
        match self {
            RasterData::F32(v) => v[i] as f64,
            RasterData::F64(v) => v[i],
        }
    }
    /// Bytes per value (4 or 8).
    pub fn bytes_per_value(&self) -> usize {
        match self {
            RasterData::F32(_) => 4,
            RasterData::F64(_) => 8,
        }
    }
}

/// A multi-band raster on a [`GridSpec`], with one name per band.
#[derive(Debug, Clone, PartialEq)]
pub struct Raster {
    pub grid: GridSpec,
    pub band_names: Vec<String>,
    pub data: RasterData,
}

impl Raster {
    /// Build a raster, checking that `data` holds `band_names.len() * rows * cols` values.
    pub fn new(
        grid: GridSpec,
        band_names: Vec<String>,
        data: RasterData,
    ) -> Result<Self, CoreError> {
        let expected = band_names.len() * grid.n_cells();
        if data.len() != expected {
            return Err(CoreError::ShapeMismatch {
                got: data.len(),
                expected,
                bands: band_names.len(),
                rows: grid.rows,
                cols: grid.cols,
            });
        }
        Ok(Self {
            grid,
            band_names,
            data,
        })
    }
    pub fn n_bands(&self) -> usize {
        self.band_names.len()
    }
    /// The values of one band as f64 (copied), row-major from the north edge.
    pub fn band_f64(&self, band: usize) -> Vec<f64> {
        let n = self.grid.n_cells();
        match &self.data {
            RasterData::F32(v) => v[band * n..(band + 1) * n]
                .iter()
                .map(|&x| x as f64)
                .collect(),
            RasterData::F64(v) => v[band * n..(band + 1) * n].to_vec(),
        }
    }
}
