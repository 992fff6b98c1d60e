//! A Cloud-Optimized GeoTIFF built band by band: [`CogBuilder`].
//!
//! A COG puts every directory before the tile data, so nothing can reach the file before the
//! last band is known; but nearly all of the work of writing one, cutting tiles, the overviews,
//! the predictor and DEFLATE, is per band. The builder does that work as each band is handed to
//! it (in parallel over the band's tiles) and keeps only the compressed tiles; [`finish`]
//! lays the file out and writes it. A program that computes its bands one after another (seed
//! maps, one per species) compresses each while the next one computes.
//!
//! [`write_geotiff`](super::write_geotiff) is this builder given every band of a raster, so the
//! two write the same bytes.
//!
//! [`finish`]: CogBuilder::finish

use std::path::Path;
use std::time::Instant;

use geofield_core::{GridSpec, RasterData};

use super::*;

/// The values of one band, row-major from the north-west corner.
#[derive(Debug, Clone, Copy)]
pub enum BandValues<'a> {
    F32(&'a [f32]),
    F64(&'a [f64]),
}

impl<'a> BandValues<'a> {
    /// Band `index` of a band-major `data` holding bands of `cells` values each.
    pub fn of(data: &'a RasterData, index: usize, cells: usize) -> Option<Self> {
        let range = index.checked_mul(cells)?..(index + 1).checked_mul(cells)?;
        match data {
            RasterData::F32(v) => v.get(range).map(BandValues::F32),
            RasterData::F64(v) => v.get(range).map(BandValues::F64),
        }
    }

    pub(super) fn len(&self) -> usize {
        match self {
            BandValues::F32(v) => v.len(),
            BandValues::F64(v) => v.len(),
        }
    }
}

/// A COG of `bands` bands on a grid, compressed band by band; see the [module docs](self).
pub struct CogBuilder {
    grid: GridSpec,
    band_names: Vec<String>,
    f64: bool,
    meta: RasterMeta,
    /// Per band, once given: its levels (full resolution first), tiles compressed.
    encoded: Vec<Option<Vec<Level>>>,
    /// Per band being given in strips of rows: its pyramid so far.
    partial: Vec<Option<Partial>>,
    any_nan: bool,
}

impl CogBuilder {
    /// A builder for a raster on `grid` with one band per name, in f64 when `f64` is set (else
    /// f32), with `meta` (whose provenance may still change, [`Self::set_provenance`]). `path`
    /// names the file in errors about the shape (no band, an empty grid, too many bands or
    /// cells for a TIFF).
    pub fn new(
        path: &Path,
        grid: GridSpec,
        band_names: Vec<String>,
        f64: bool,
        meta: RasterMeta,
    ) -> Result<Self, IoError> {
        let invalid = |reason: String| IoError::InvalidOutput {
            path: path.to_path_buf(),
            reason,
        };
        if band_names.is_empty() {
            return Err(invalid("the raster has no bands".to_string()));
        }
        if grid.rows == 0 || grid.cols == 0 {
            return Err(invalid(format!(
                "the raster grid is empty ({} x {} cells)",
                grid.cols, grid.rows
            )));
        }
        if band_names.len() > usize::from(u16::MAX) {
            return Err(invalid(format!(
                "{} bands is more than a TIFF can hold",
                band_names.len()
            )));
        }
        if u32::try_from(grid.cols).is_err() || u32::try_from(grid.rows).is_err() {
            return Err(invalid(
                "the grid is wider or taller than a TIFF can hold".into(),
            ));
        }
        let n = band_names.len();
        Ok(Self {
            grid,
            band_names,
            f64,
            meta,
            encoded: (0..n).map(|_| None).collect(),
            partial: (0..n).map(|_| None).collect(),
            any_nan: false,
        })
    }

    /// Replace the provenance items of the metadata (for items known only once every band
    /// has been computed).
    pub fn set_provenance(&mut self, provenance: Vec<(String, String)>) {
        self.meta.provenance = provenance;
    }

    /// Compress band `index` (its full-resolution tiles and overviews), in parallel over its
    /// tiles. The values must hold one band of the grid in the builder's precision; a band
    /// given twice replaces the first.
    pub fn add_band(
        &mut self,
        path: &Path,
        index: usize,
        values: BandValues<'_>,
    ) -> Result<(), IoError> {
        let cells = self.grid.n_cells();
        if values.len() != cells {
            return Err(IoError::InvalidOutput {
                path: path.to_path_buf(),
                reason: format!(
                    "band {} holds {} values but the grid has {} x {} = {cells} cells",
                    index + 1,
                    values.len(),
                    self.grid.cols,
                    self.grid.rows
                ),
            });
        }
        self.add_rows(path, index, 0, values)
    }

    /// Give band `index` as strips of whole rows, top to bottom: `values` holds the rows from
    /// `row0`, which must be the first row not given yet (0 starts the band afresh). The tiles
    /// of every complete tile row, and the overview rows they make, are compressed at once (in
    /// parallel), so that a band computed in strips is compressed while its later strips
    /// compute; the file is the one [`Self::add_band`] gives with the whole band.
    pub fn add_rows(
        &mut self,
        path: &Path,
        index: usize,
        row0: usize,
        values: BandValues<'_>,
    ) -> Result<(), IoError> {
        let invalid = |reason: String| IoError::InvalidOutput {
            path: path.to_path_buf(),
            reason,
        };
        let slot = self.encoded.len();
        if index >= slot {
            return Err(invalid(format!(
                "band {} of a raster of {slot} band(s)",
                index + 1
            )));
        }
        let (cols, rows) = (self.grid.cols, self.grid.rows);
        let (nodata, codec) = (self.meta.nodata, self.meta.compression);
        if row0 == 0 {
            self.encoded[index] = None;
            self.partial[index] = Some(match self.f64 {
                false => Partial::F32(RowEncoder::new(cols, rows, nodata, codec)),
                true => Partial::F64(RowEncoder::new(cols, rows, nodata, codec)),
            });
        }
        let Some(part) = self.partial[index].as_mut() else {
            return Err(invalid(format!(
                "band {}: rows from {row0} given before row 0",
                index + 1
            )));
        };
        let received = part.received();
        let n = values.len() / cols;
        if row0 != received || !values.len().is_multiple_of(cols) || received + n > rows {
            return Err(invalid(format!(
                "band {}: {} values from row {row0}, expected whole rows of {cols} values from \
                 row {received}, within the grid's {rows} rows",
                index + 1,
                values.len()
            )));
        }
        let nan = match (values, part) {
            (BandValues::F32(v), Partial::F32(e)) => {
                e.push(v).map_err(invalid)?;
                v.par_iter().any(|x| x.is_nan())
            }
            (BandValues::F64(v), Partial::F64(e)) => {
                e.push(v).map_err(invalid)?;
                v.par_iter().any(|x| x.is_nan())
            }
            _ => {
                return Err(invalid(format!(
                    "band {} is not in the raster's precision ({})",
                    index + 1,
                    if self.f64 { "f64" } else { "f32" }
                )));
            }
        };
        self.any_nan |= nan;
        if received + n == rows
            && let Some(done) = self.partial[index].take()
        {
            self.encoded[index] = Some(done.into_levels());
        }
        Ok(())
    }

    /// Write the file to `path` atomically, BigTIFF as `bigtiff` says. Every band must have
    /// been given. Returns the file's size and the time spent writing it and syncing it to disk.
    pub fn finish(self, path: &Path, bigtiff: BigTiff) -> Result<CogWritten, IoError> {
        if let Some(missing) = self.encoded.iter().position(Option::is_none) {
            return Err(IoError::InvalidOutput {
                path: path.to_path_buf(),
                reason: format!(
                    "band {} of {} was never computed",
                    missing + 1,
                    self.encoded.len()
                ),
            });
        }
        // The nodata value to declare: the metadata's, else NaN when any band holds NaN.
        let nodata = self.meta.nodata.or(self.any_nan.then_some(f64::NAN));
        let tags = MainTags::new(
            &self.grid,
            &self.band_names,
            if self.f64 { 64 } else { 32 },
            &self.meta,
            nodata,
        );
        // Each level's tiles in file order: band by band.
        let mut levels: Vec<Level> = Vec::new();
        for band in self.encoded.into_iter().flatten() {
            for (i, l) in band.into_iter().enumerate() {
                match levels.get_mut(i) {
                    Some(all) => all.tiles.extend(l.tiles),
                    None => levels.push(l),
                }
            }
        }
        let shapes: Vec<Shape> = levels.iter().map(Shape::of).collect();
        let layout = plan_either(&shapes, &tags, bigtiff).0;
        let t0 = Instant::now();
        #[cfg_attr(unix, allow(unused_mut))]
        let mut staged = Staged::create(path)?;
        #[cfg(unix)]
        write_file_at(staged.file(), &layout, &levels).map_err(|e| write_error(path, e))?;
        #[cfg(not(unix))]
        staged.with_writer(|w| {
            write_file(w, &layout, &levels).map_err(|source| write_error(path, source))
        })?;
        let t1 = Instant::now();
        commit(vec![staged])?;
        Ok(CogWritten {
            bytes: layout.end,
            write_s: (t1 - t0).as_secs_f64(),
            sync_s: t1.elapsed().as_secs_f64(),
        })
    }
}

/// A band's pyramid being built from strips, in the raster's precision.
enum Partial {
    F32(RowEncoder<f32>),
    F64(RowEncoder<f64>),
}

impl Partial {
    fn received(&self) -> usize {
        match self {
            Partial::F32(e) => e.received(),
            Partial::F64(e) => e.received(),
        }
    }

    fn into_levels(self) -> Vec<Level> {
        match self {
            Partial::F32(e) => e.into_levels(),
            Partial::F64(e) => e.into_levels(),
        }
    }
}

/// What [`CogBuilder::finish`] wrote.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CogWritten {
    /// The file's size in bytes.
    pub bytes: u64,
    /// Seconds writing the bytes (into the operating system's cache).
    pub write_s: f64,
    /// Seconds waiting for them to reach the disk (fsync) and renaming the file into place.
    pub sync_s: f64,
}
