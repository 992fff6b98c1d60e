//! One COG written together by several processes (MPI ranks), each holding a strip of the
//! raster's rows: the file is byte for byte the one [`CogBuilder`](super::CogBuilder) writes
//! from the whole raster.
//!
//! 1. [`RowSplit::new`] cuts the rows into one strip per part, at multiples of
//!    `TILE_SIZE · 2^(encoded - 1)` rows: then the tiles of the first `encoded` images of the
//!    pyramid (full resolution and the largest overviews) each lie inside one strip.
//! 2. Each part encodes its strip with a [`CogPart`]: those tiles compressed, and the rows its
//!    strip makes of image `encoded` kept raw (`1/4^encoded` of the strip's values).
//! 3. [`CogPart::finish`] gives the part's [`PartDone`]; its [`PartDone::message`] (the tiles'
//!    byte counts and the raw rows) goes to the first part.
//! 4. The first part calls [`assemble`] with every part's message: it compresses the coarser
//!    images from the raw rows, lays the file out (the offsets of each part's run of tiles are
//!    exclusive prefix sums of the byte counts, in file order), writes the header, the
//!    directories and the coarse tiles, and returns where each part's tiles go.
//! 5. Each part writes its tiles there ([`PartDone::write_at`]) into the same file.
//!
//! Nothing here knows about MPI: the caller moves the messages and the offsets.

use std::ops::Range;
use std::path::Path;

use super::*;

/// Rows of each part, and how many images of the pyramid the parts encode themselves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowSplit {
    /// Part `r`'s rows (contiguous, in order, covering the raster; some may be empty).
    pub rows: Vec<Range<usize>>,
    /// Images of the pyramid whose tiles the parts compress (the others are the first part's).
    pub encoded: usize,
}

impl RowSplit {
    /// Rows of a `cols` x `rows` raster over `parts` parts (at least one). The strips are whole
    /// units of `TILE_SIZE · 2^(encoded - 1)` rows (`TILE_SIZE` when `encoded` is 0), as even
    /// as units allow; `encoded` is the largest for which every part gets at least four units
    /// (a part's share is then within a quarter of a unit of the mean), so that most of the
    /// compressing is spread and the raw rows sent to the first part stay small.
    pub fn new(cols: usize, rows: usize, parts: usize) -> Self {
        let parts = parts.max(1);
        let images = level_sizes(cols, rows).len();
        let unit = |k: usize| {
            if k == 0 {
                TILE_SIZE
            } else {
                TILE_SIZE << (k - 1)
            }
        };
        let mut encoded = 0;
        while encoded + 1 < images && rows.div_ceil(unit(encoded + 1)) >= 4 * parts {
            encoded += 1;
        }
        let u = unit(encoded);
        let units = rows.div_ceil(u);
        let at = |r: usize| (r * units / parts * u).min(rows);
        Self {
            rows: (0..parts).map(|r| at(r)..at(r + 1)).collect(),
            encoded,
        }
    }
}

/// One band's encoder, in the raster's precision.
enum PartBand {
    F32(RowEncoder<f32>),
    F64(RowEncoder<f64>),
}

/// The encoded strip of one part; see the [module docs](self).
pub struct CogPart {
    cols: usize,
    rows: Range<usize>,
    encoded: usize,
    bands: Vec<PartBand>,
    any_nan: bool,
}

impl CogPart {
    /// The part `part` of `split` of a raster on `grid` with `bands` bands (f64 if `f64`),
    /// compressed as `meta` says.
    pub fn new(
        grid: &GridSpec,
        bands: usize,
        f64: bool,
        meta: &RasterMeta,
        split: &RowSplit,
        part: usize,
    ) -> Self {
        let rows = split.rows.get(part).cloned().unwrap_or(0..0);
        let (nodata, codec) = (meta.nodata, meta.compression);
        let (c, r, first, k) = (grid.cols, grid.rows, rows.start, split.encoded);
        let band = || match f64 {
            false => PartBand::F32(RowEncoder::part(c, r, nodata, codec, first, k)),
            true => PartBand::F64(RowEncoder::part(c, r, nodata, codec, first, k)),
        };
        Self {
            cols: grid.cols,
            rows: rows.clone(),
            encoded: split.encoded,
            bands: (0..bands).map(|_| band()).collect(),
            any_nan: false,
        }
    }

    /// Rows `row0 ..` of band `index` (whole rows, the next ones of this part's strip, in
    /// order). `path` names the file in errors.
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
        let cols = self.cols.max(1);
        let Some(b) = self.bands.get_mut(index) else {
            return Err(invalid(format!("band {} of a part", index + 1)));
        };
        let received = match b {
            PartBand::F32(e) => e.received(),
            PartBand::F64(e) => e.received(),
        };
        let n = values.len() / cols;
        if row0 != received || !values.len().is_multiple_of(cols) || row0 + n > self.rows.end {
            return Err(invalid(format!(
                "band {}: rows {row0} + {n} given to the part of rows {:?} at row {received}",
                index + 1,
                self.rows
            )));
        }
        let nan = match (values, b) {
            (BandValues::F32(v), PartBand::F32(e)) => {
                e.push(v).map_err(invalid)?;
                v.par_iter().any(|x| x.is_nan())
            }
            (BandValues::F64(v), PartBand::F64(e)) => {
                e.push(v).map_err(invalid)?;
                v.par_iter().any(|x| x.is_nan())
            }
            _ => return Err(invalid("a band in the wrong precision".into())),
        };
        self.any_nan |= nan;
        Ok(())
    }

    /// The part's tiles and raw rows, once every band's strip was given.
    pub fn finish(self, path: &Path) -> Result<PartDone, IoError> {
        let mut levels = Vec::with_capacity(self.bands.len());
        let mut raw = Vec::with_capacity(self.bands.len());
        for (i, b) in self.bands.into_iter().enumerate() {
            let received = match &b {
                PartBand::F32(e) => e.received(),
                PartBand::F64(e) => e.received(),
            };
            if received != self.rows.end {
                return Err(IoError::InvalidOutput {
                    path: path.to_path_buf(),
                    reason: format!(
                        "band {}: the part of rows {:?} got rows up to {received} only",
                        i + 1,
                        self.rows
                    ),
                });
            }
            let (l, r) = match b {
                PartBand::F32(e) => {
                    let (l, r) = e.into_part();
                    (l, r.iter().flat_map(|x| x.to_le_bytes()).collect())
                }
                PartBand::F64(e) => {
                    let (l, r) = e.into_part();
                    (l, r.iter().flat_map(|x| x.to_le_bytes()).collect())
                }
            };
            levels.push(l);
            raw.push(r);
        }
        debug_assert!(levels.iter().all(|l| l.len() == self.encoded));
        Ok(PartDone {
            levels,
            raw,
            any_nan: self.any_nan,
        })
    }
}

/// A part's encoded strip: per band, its tiles of each encoded image, and the raw rows (little
/// endian) of the next image.
pub struct PartDone {
    levels: Vec<Vec<Level>>,
    raw: Vec<Vec<u8>>,
    any_nan: bool,
}

/// Reads little-endian u64s off a message.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn u64(&mut self) -> Option<u64> {
        let b = self.bytes.get(self.at..self.at + 8)?;
        self.at += 8;
        Some(u64::from_le_bytes(b.try_into().ok()?))
    }

    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let b = self.bytes.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(b)
    }
}

impl PartDone {
    /// What the first part needs of this one: whether any value is NaN, each (image, band)
    /// run's tile byte counts, and each band's raw rows.
    pub fn message(&self) -> Vec<u8> {
        let mut m = vec![u8::from(self.any_nan)];
        let encoded = self.levels.first().map_or(0, Vec::len);
        for i in 0..encoded {
            for band in &self.levels {
                let tiles = &band[i].tiles;
                m.extend_from_slice(&(tiles.len() as u64).to_le_bytes());
                for t in tiles {
                    m.extend_from_slice(&(t.len() as u64).to_le_bytes());
                }
            }
        }
        for r in &self.raw {
            m.extend_from_slice(&(r.len() as u64).to_le_bytes());
            m.extend_from_slice(r);
        }
        m
    }

    /// Write this part's tiles into `file` (the one [`assemble`] laid out), each (image, band)
    /// run at its offset in `starts` (from [`assemble`], in the order of [`Self::message`]).
    #[cfg(unix)]
    pub fn write_at(
        &self,
        path: &Path,
        file: &std::fs::File,
        starts: &[u64],
    ) -> Result<(), IoError> {
        let encoded = self.levels.first().map_or(0, Vec::len);
        let runs = (0..encoded).flat_map(|i| self.levels.iter().map(move |b| &b[i].tiles));
        // Every run at once (one map of the file), in file order.
        let mut all: Vec<(u64, Vec<&Vec<u8>>)> = runs
            .zip(starts)
            .filter(|(tiles, _)| !tiles.is_empty())
            .map(|(tiles, &start)| (start, tiles.iter().collect()))
            .collect();
        all.sort_by_key(|r| r.0);
        write_runs_at(file, &all).map_err(|e| write_error(path, e))
    }
}

/// What [`assemble`] wrote and where each part's tiles go.
pub struct Assembled {
    /// The file's size in bytes.
    pub bytes: u64,
    /// Per part, the file offset of each of its (image, band) runs of tiles (order of
    /// [`PartDone::message`]; 0 for an empty run).
    pub starts: Vec<Vec<u64>>,
}

/// Lay out the COG of `split` from every part's [`PartDone::message`] (in part order), create
/// `path` at its full size and write everything but the parts' tiles: the header, the
/// directories and the coarse images' tiles, compressed here from the raw rows. The file is
/// complete once every part has written its tiles ([`PartDone::write_at`]).
#[cfg(unix)]
#[allow(clippy::too_many_arguments)]
pub fn assemble(
    path: &Path,
    grid: &GridSpec,
    band_names: &[String],
    f64: bool,
    meta: &RasterMeta,
    split: &RowSplit,
    messages: &[Vec<u8>],
    bigtiff: BigTiff,
) -> Result<Assembled, IoError> {
    use std::os::unix::fs::FileExt;
    let bad = |what: String| IoError::InvalidOutput {
        path: path.to_path_buf(),
        reason: format!("assembling the parts: {what}"),
    };
    let (bands, k, parts) = (band_names.len(), split.encoded, messages.len());
    if parts != split.rows.len() {
        return Err(bad(format!(
            "{parts} messages for {} parts",
            split.rows.len()
        )));
    }
    let sizes = level_sizes(grid.cols, grid.rows);
    // Per part: its run lengths [image][band], and each band's raw rows.
    let mut counts: Vec<Vec<Vec<u64>>> = Vec::with_capacity(parts);
    let mut raw: Vec<Vec<u8>> = vec![Vec::new(); bands];
    let mut any_nan = false;
    for (p, m) in messages.iter().enumerate() {
        let mut r = Reader { bytes: m, at: 0 };
        let short = || bad(format!("part {p}'s message is cut short"));
        any_nan |= r.take(1).ok_or_else(short)?[0] != 0;
        let mut mine = Vec::with_capacity(k * bands);
        for _ in 0..k * bands {
            let n = r.u64().ok_or_else(short)? as usize;
            if n > m.len() / 8 {
                return Err(short());
            }
            mine.push(
                (0..n)
                    .map(|_| r.u64().ok_or_else(short))
                    .collect::<Result<_, _>>()?,
            );
        }
        counts.push(mine);
        for band in raw.iter_mut() {
            let n = r.u64().ok_or_else(short)? as usize;
            band.extend_from_slice(r.take(n).ok_or_else(short)?);
        }
    }
    // The coarse images, from image `k`'s rows gathered in part order.
    let (ck, rk) = sizes[k.min(sizes.len() - 1)];
    let mut coarse: Vec<Level> = Vec::new();
    for band in &raw {
        let levels = match f64 {
            false => {
                let v: Vec<f32> = band
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                    .collect();
                coarse_levels(v, ck, rk, meta)
            }
            true => {
                let v: Vec<f64> = band
                    .chunks_exact(8)
                    .map(|b| f64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
                    .collect();
                coarse_levels(v, ck, rk, meta)
            }
        }
        .map_err(bad)?;
        for (i, l) in levels.into_iter().enumerate() {
            match coarse.get_mut(i) {
                Some(all) => all.tiles.extend(l.tiles),
                None => coarse.push(l),
            }
        }
    }
    // Every image's byte counts in file order: band, then part (its tile rows), then tile.
    let mut shapes: Vec<Shape> = (0..k)
        .map(|i| Shape {
            cols: sizes[i].0,
            rows: sizes[i].1,
            counts: (0..bands)
                .flat_map(|b| {
                    counts
                        .iter()
                        .flat_map(move |c| c[i * bands + b].iter().copied())
                })
                .collect(),
        })
        .collect();
    shapes.extend(coarse.iter().map(Shape::of));
    let nodata = meta.nodata.or(any_nan.then_some(f64::NAN));
    let tags = MainTags::new(grid, band_names, if f64 { 64 } else { 32 }, meta, nodata);
    let (layout, offsets) = plan_either(&shapes, &tags, bigtiff);
    // Each part's runs start 4 bytes (the leader) before their first tile.
    let mut starts = vec![vec![0u64; k * bands]; parts];
    for i in 0..k {
        let mut t = 0;
        for b in 0..bands {
            for (p, c) in counts.iter().enumerate() {
                let run = &c[i * bands + b];
                if !run.is_empty() {
                    starts[p][i * bands + b] = offsets[i][t] - 4;
                }
                t += run.len();
            }
        }
    }
    let file = std::fs::File::create(path).map_err(|e| write_error(path, e))?;
    file.set_len(layout.end).map_err(|e| write_error(path, e))?;
    let mut head = layout.prefix.clone();
    for ifd in &layout.ifds {
        head.extend_from_slice(ifd);
    }
    file.write_all_at(&head, 0)
        .map_err(|e| write_error(path, e))?;
    // The coarse images' tiles: the file's first tiles, smallest image first.
    let tiles: Vec<&Vec<u8>> = coarse.iter().rev().flat_map(|l| l.tiles.iter()).collect();
    let coarse_start = head.len() as u64;
    write_tiles_at(&file, &tiles, coarse_start).map_err(|e| write_error(path, e))?;
    Ok(Assembled {
        bytes: layout.end,
        starts,
    })
}

/// Images `k ..` of a band's pyramid from image `k`'s values (`cols` x `rows`).
fn coarse_levels<T: Sample>(
    v: Vec<T>,
    cols: usize,
    rows: usize,
    meta: &RasterMeta,
) -> Result<Vec<Level>, String> {
    if v.len() != cols * rows {
        return Err(format!(
            "the parts' overview rows hold {} values, not {cols} x {rows}",
            v.len()
        ));
    }
    let mut e = RowEncoder::new(cols, rows, meta.nodata, meta.compression);
    e.push(&v)?;
    Ok(e.into_levels())
}

#[cfg(all(test, unix))]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A map with structure at every scale, NaN holes, and a value per cell.
    fn map(cols: usize, rows: usize, band: usize) -> Vec<f32> {
        (0..cols * rows)
            .map(|i| {
                let (c, r) = ((i % cols) as f32, (i / cols) as f32);
                if (i * 7 + band * 13).is_multiple_of(997) {
                    f32::NAN
                } else {
                    (c * 0.013 + band as f32).sin() * (r * 0.007).cos() + 1e-3 * (i % 31) as f32
                }
            })
            .collect()
    }

    /// The file the parts write together, for `parts` parts fed in strips of `strip` rows.
    fn written_in_parts(
        dir: &Path,
        grid: &GridSpec,
        bands: &[Vec<f32>],
        meta: &RasterMeta,
        parts: usize,
        strip: usize,
    ) -> Vec<u8> {
        let names: Vec<String> = (0..bands.len()).map(|b| format!("b{b}")).collect();
        let split = RowSplit::new(grid.cols, grid.rows, parts);
        let done: Vec<PartDone> = (0..parts)
            .map(|p| {
                let mut part = CogPart::new(grid, bands.len(), false, meta, &split, p);
                let rows = split.rows[p].clone();
                for (b, v) in bands.iter().enumerate() {
                    let mut r = rows.start;
                    while r < rows.end {
                        let n = strip.min(rows.end - r);
                        let vals = &v[r * grid.cols..(r + n) * grid.cols];
                        part.add_rows(dir, b, r, BandValues::F32(vals)).unwrap();
                        r += n;
                    }
                }
                part.finish(dir).unwrap()
            })
            .collect();
        let messages: Vec<Vec<u8>> = done.iter().map(PartDone::message).collect();
        let path = dir.join(format!("parts{parts}.tif"));
        let a = assemble(
            &path,
            grid,
            &names,
            false,
            meta,
            &split,
            &messages,
            BigTiff::IfNeeded,
        )
        .unwrap();
        let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        for (d, s) in done.iter().zip(&a.starts) {
            d.write_at(&path, &file, s).unwrap();
        }
        drop(file);
        std::fs::read(&path).unwrap()
    }

    #[test]
    fn parts_write_the_whole_rasters_file() {
        let dir = tempfile::tempdir().unwrap();
        // Odd sizes (the last tile row and column partial, odd overview sizes) and sizes where
        // the parts encode several images.
        for (cols, rows) in [(700, 1100), (300, 2600), (257, 259)] {
            let grid = GridSpec {
                x_min_m: 500.0,
                y_max_m: 7000.0,
                cell_size_m: 2.0,
                cols,
                rows,
            };
            let bands: Vec<Vec<f32>> = (0..2).map(|b| map(cols, rows, b)).collect();
            for compression in [Compression::Deflate, Compression::Zstd] {
                let meta = RasterMeta {
                    compression,
                    ..RasterMeta::default()
                };
                let whole = dir.path().join("whole.tif");
                let mut cog = CogBuilder::new(
                    &whole,
                    grid,
                    vec!["b0".into(), "b1".into()],
                    false,
                    meta.clone(),
                )
                .unwrap();
                for (b, v) in bands.iter().enumerate() {
                    cog.add_band(&whole, b, BandValues::F32(v)).unwrap();
                }
                cog.finish(&whole, BigTiff::IfNeeded).unwrap();
                let expected = std::fs::read(&whole).unwrap();
                for parts in [1, 2, 3, 5] {
                    for strip in [256, 512, 100_000] {
                        let got = written_in_parts(dir.path(), &grid, &bands, &meta, parts, strip);
                        assert!(
                            got == expected,
                            "{cols} x {rows}, {compression:?}, {parts} parts, strips of {strip}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn splits_cover_the_rows_in_whole_units() {
        for (rows, parts) in [(20480, 2), (20480, 4), (1000, 2), (100, 3), (5000, 7)] {
            let s = RowSplit::new(20480, rows, parts);
            assert_eq!(s.rows.len(), parts);
            assert_eq!(s.rows[0].start, 0);
            assert_eq!(s.rows[parts - 1].end, rows);
            let unit = if s.encoded == 0 {
                TILE_SIZE
            } else {
                TILE_SIZE << (s.encoded - 1)
            };
            for w in s.rows.windows(2) {
                assert_eq!(w[0].end, w[1].start);
                assert_eq!(w[0].end % unit, 0, "{rows} rows, {parts} parts");
            }
        }
        // 20480 rows over 2 parts: units of 2048 rows (4 images encoded by the parts), 5 each.
        let s = RowSplit::new(20480, 20480, 2);
        assert_eq!(s.encoded, 4);
        assert_eq!(s.rows, vec![0..10240, 10240..20480]);
    }
}
