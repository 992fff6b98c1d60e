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

    fn len(&self) -> usize {
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
        self.check(path, index, values)?;
        let (cols, rows, nodata) = (self.grid.cols, self.grid.rows, self.meta.nodata);
        let (levels, nan) = match values {
            BandValues::F32(v) => (encode_levels(v, cols, rows, nodata), has_nan(v)),
            BandValues::F64(v) => (encode_levels(v, cols, rows, nodata), has_nan(v)),
        };
        self.any_nan |= nan;
        self.encoded[index] = Some(levels);
        Ok(())
    }

    /// Refuse a band that is not one of the raster's, in its shape and precision.
    fn check(&self, path: &Path, index: usize, values: BandValues<'_>) -> Result<(), IoError> {
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
        let cells = self.grid.n_cells();
        if values.len() != cells {
            return Err(invalid(format!(
                "band {} holds {} values but the grid has {} x {} = {cells} cells",
                index + 1,
                values.len(),
                self.grid.cols,
                self.grid.rows
            )));
        }
        if matches!(values, BandValues::F64(_)) != self.f64 {
            return Err(invalid(format!(
                "band {} is not in the raster's precision ({})",
                index + 1,
                if self.f64 { "f64" } else { "f32" }
            )));
        }
        Ok(())
    }

    /// The first band not given, if any.
    fn missing(&self, path: &Path) -> Result<(), IoError> {
        match self.encoded.iter().position(Option::is_none) {
            Some(missing) => Err(IoError::InvalidOutput {
                path: path.to_path_buf(),
                reason: format!(
                    "band {} of {} was never computed",
                    missing + 1,
                    self.encoded.len()
                ),
            }),
            None => Ok(()),
        }
    }

    /// The tags, and each level's tiles of every band in file order (band by band).
    fn assemble(&mut self) -> (MainTags, Vec<Level>) {
        // The nodata value to declare: the metadata's, else NaN when any band holds NaN.
        let nodata = self.meta.nodata.or(self.any_nan.then_some(f64::NAN));
        let tags = MainTags::new(
            &self.grid,
            &self.band_names,
            if self.f64 { 64 } else { 32 },
            &self.meta,
            nodata,
        );
        let mut levels: Vec<Level> = Vec::new();
        for band in std::mem::take(&mut self.encoded).into_iter().flatten() {
            for (i, l) in band.into_iter().enumerate() {
                match levels.get_mut(i) {
                    Some(all) => all.tiles.extend(l.tiles),
                    None => levels.push(l),
                }
            }
        }
        (tags, levels)
    }

    /// Write the file to `path` atomically, BigTIFF as `bigtiff` says. Every band must have
    /// been given. Returns the file's size and the time spent writing it and syncing it to disk.
    pub fn finish(mut self, path: &Path, bigtiff: BigTiff) -> Result<CogWritten, IoError> {
        self.missing(path)?;
        let (tags, levels) = self.assemble();
        let classic = plan(&levels, &tags, false);
        let layout = if bigtiff == BigTiff::Always || classic.end > u64::from(u32::MAX) {
            plan(&levels, &tags, true)
        } else {
            classic
        };
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

    /// Give the last band (`index` is the raster's last) and write the file, overlapping the
    /// work: the band's overviews are compressed first, then its full-resolution tiles, the
    /// last bytes of the file, are compressed while everything before them is written and
    /// sent to the disk. The same file as [`Self::add_band`] then [`Self::finish`] (BigTIFF is
    /// chosen from an upper bound on the size here, so a file within a few bytes per tile of
    /// 4 GiB may be BigTIFF where `finish` would not). For another band, or off Unix, it is
    /// exactly that.
    pub fn finish_with_last(
        mut self,
        path: &Path,
        bigtiff: BigTiff,
        index: usize,
        values: BandValues<'_>,
    ) -> Result<CogWritten, IoError> {
        self.check(path, index, values)?;
        if index + 1 != self.encoded.len() || cfg!(not(unix)) {
            self.add_band(path, index, values)?;
            return self.finish(path, bigtiff);
        }
        #[cfg(unix)]
        {
            self.finish_overlapped(path, bigtiff, index, values)
        }
        #[cfg(not(unix))]
        unreachable!()
    }

    #[cfg(unix)]
    fn finish_overlapped(
        mut self,
        path: &Path,
        bigtiff: BigTiff,
        index: usize,
        values: BandValues<'_>,
    ) -> Result<CogWritten, IoError> {
        let (cols, rows, nodata) = (self.grid.cols, self.grid.rows, self.meta.nodata);
        let (overviews, nan) = match values {
            BandValues::F32(v) => (encode_overviews(v, cols, rows, nodata), has_nan(v)),
            BandValues::F64(v) => (encode_overviews(v, cols, rows, nodata), has_nan(v)),
        };
        self.any_nan |= nan;
        // Its full-resolution tiles as empty placeholders: the file's last tiles.
        let n0 = cols.div_ceil(TILE_SIZE) * rows.div_ceil(TILE_SIZE);
        let mut band = vec![Level {
            cols,
            rows,
            tiles: vec![Vec::new(); n0],
        }];
        band.extend(overviews);
        self.encoded[index] = Some(band);
        self.missing(path)?;
        let (tags, mut levels) = self.assemble();
        let before = plan(&levels, &tags, false);
        // The placeholders' largest compressed size (libdeflate's bound of a raw tile).
        let raw_tile = TILE_SIZE * TILE_SIZE * if self.f64 { 8 } else { 4 };
        let upper = before.end + (n0 as u64) * (raw_tile as u64 + raw_tile as u64 / 64 + 64);
        let big = bigtiff == BigTiff::Always || upper > u64::from(u32::MAX);
        let head_len = {
            let l = plan(&levels, &tags, big);
            l.prefix.len() as u64 + l.ifds.iter().map(|i| i.len() as u64).sum::<u64>()
        };
        let t0 = Instant::now();
        let staged = Staged::create(path)?;
        let file = staged.file();
        let io = |e| write_error(path, e);
        // Everything before the placeholders goes out (and towards the disk) while they are
        // compressed.
        let (tiles0, early) = std::thread::scope(|s| {
            let levels = &levels;
            let writer = s.spawn(move || -> std::io::Result<()> {
                let all = tiles_in_file_order(levels);
                write_tiles_at(file, &all[..all.len() - n0], head_len)?;
                file.sync_data()
            });
            let tiles0 = match values {
                BandValues::F32(v) => compress_image(v, cols, rows, 1, nodata),
                BandValues::F64(v) => compress_image(v, cols, rows, 1, nodata),
            };
            let early = writer
                .join()
                .unwrap_or_else(|_| Err(std::io::Error::other("the writing thread panicked")));
            (tiles0, early)
        });
        early.map_err(io)?;
        let first = levels[0].tiles.len() - n0;
        for (slot, t) in levels[0].tiles[first..].iter_mut().zip(tiles0) {
            *slot = t;
        }
        let layout = plan(&levels, &tags, big);
        let all = tiles_in_file_order(&levels);
        let tail_at = head_len
            + all[..all.len() - n0]
                .iter()
                .map(|t| t.len() as u64 + 8)
                .sum::<u64>();
        write_tiles_at(file, &all[all.len() - n0..], tail_at).map_err(io)?;
        // The IFDs last: they hold every tile's offset and size.
        let written_head = write_head_at(file, &layout).map_err(io)?;
        if written_head != head_len {
            return Err(IoError::InvalidOutput {
                path: path.to_path_buf(),
                reason: "internal: the directories changed size after the data was written".into(),
            });
        }
        let t1 = Instant::now();
        commit(vec![staged])?;
        Ok(CogWritten {
            bytes: layout.end,
            write_s: (t1 - t0).as_secs_f64(),
            sync_s: t1.elapsed().as_secs_f64(),
        })
    }
}

/// Whether any value is NaN.
fn has_nan<T: Sample>(v: &[T]) -> bool {
    v.par_iter().any(|x| x.is_nan())
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
