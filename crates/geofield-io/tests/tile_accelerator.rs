//! GeoTIFFs whose DEFLATE tiles come from an installed tile accelerator (here the CPU's copy
//! of the GPU encoder, `segdeflate::tile_f32`): every level reads back with the values of the
//! libdeflate file, the accelerator's streams are the ones in the file, f64 rasters and zstd
//! stay on the CPU's codecs, and an accelerator that fails leaves the CPU's file. Its own
//! process: the accelerator is process-wide.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use geofield_core::{GridSpec, Raster, RasterData};
use geofield_io::geotiff::segdeflate::{TileAccelerator, set_tile_accelerator, tile_f32};
use geofield_io::geotiff::{
    BandValues, BigTiff, CogBuilder, CogPart, Compression, PartDone, RowSplit, assemble,
};
use geofield_io::{RasterMeta, read_raster, write_raster};

/// The CPU's copy of the GPU encoder, counting the tiles it made; fails when `broken`.
struct CpuTwin {
    tiles: AtomicUsize,
    broken: bool,
}

impl TileAccelerator for CpuTwin {
    fn deflate_f32(
        &self,
        values: &[f32],
        cols: usize,
        rows: usize,
        fill: Option<f32>,
    ) -> Result<Vec<Vec<u8>>, String> {
        if self.broken {
            return Err("no device".into());
        }
        let (across, down) = (cols.div_ceil(256), rows.div_ceil(256));
        self.tiles.fetch_add(across * down, Ordering::Relaxed);
        Ok((0..across * down)
            .map(|t| tile_f32(values, cols, rows, t / across, t % across, fill))
            .collect())
    }
}

fn grid(cols: usize, rows: usize) -> GridSpec {
    GridSpec {
        x_min_m: 0.0,
        y_max_m: rows as f64,
        cell_size_m: 1.0,
        cols,
        rows,
    }
}

/// Two bands of 700 × 1300 cells (edge tiles, overviews): smooth values, NaN, nodata, zeros.
fn value(b: usize, i: usize) -> f64 {
    let (r, c) = (i / 700, i % 700);
    if (r * 31 + c * 7 + b).is_multiple_of(997) {
        f64::NAN
    } else if (r + c).is_multiple_of(501) {
        -9999.0
    } else if r > 1100 {
        0.0
    } else {
        ((r as f64 * 0.37).sin() + (c as f64 * 0.011).cos()).exp() * 1e-3 + b as f64
    }
}

fn raster(f64: bool) -> Raster {
    let g = grid(700, 1300);
    let v: Vec<f64> = (0..2)
        .flat_map(|b| (0..g.n_cells()).map(move |i| value(b, i)))
        .collect();
    let data = match f64 {
        true => RasterData::F64(v),
        false => RasterData::F32(v.iter().map(|&x| x as f32).collect()),
    };
    Raster::new(g, vec!["a".into(), "b".into()], data).unwrap()
}

fn same_values(a: &Raster, b: &Raster) {
    assert_eq!(a.data.len(), b.data.len());
    for i in 0..a.data.len() {
        let (p, q) = (a.data.get_f64(i), b.data.get_f64(i));
        // The reader masks the nodata value as NaN.
        let gone = |x: f64| x.is_nan() || x == -9999.0;
        assert!(p == q || (gone(p) && gone(q)), "value {i}: {p} vs {q}");
    }
}

#[test]
fn accelerated_tiles_read_back_and_fall_back_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let meta = RasterMeta {
        nodata: Some(-9999.0),
        ..Default::default()
    };
    let (cpu, acc, strips) = (
        dir.path().join("cpu.tif"),
        dir.path().join("acc.tif"),
        dir.path().join("strips.tif"),
    );
    let r32 = raster(false);
    write_raster(&cpu, &r32, &meta).unwrap();

    let twin = Arc::new(CpuTwin {
        tiles: AtomicUsize::new(0),
        broken: false,
    });
    set_tile_accelerator(Some(twin.clone()));
    write_raster(&acc, &r32, &meta).unwrap();
    // Full resolution 3 x 6 tiles, overviews 2 x 3 and 1 x 2 and 1: 27 tiles a band.
    assert_eq!(twin.tiles.load(Ordering::Relaxed), 2 * (18 + 6 + 2 + 1));
    let (a, _) = read_raster(&acc).unwrap();
    same_values(&a, &r32);
    let (c, _) = read_raster(&cpu).unwrap();
    same_values(&a, &c);
    assert_ne!(std::fs::read(&acc).unwrap(), std::fs::read(&cpu).unwrap());
    // The first full-resolution tile of band a is the accelerator's stream, in the file.
    let RasterData::F32(v) = &r32.data else {
        panic!("f32")
    };
    let first = tile_f32(&v[..700 * 1300], 700, 1300, 0, 0, Some(-9999.0));
    let file = std::fs::read(&acc).unwrap();
    assert!(file.windows(first.len()).any(|w| w == first.as_slice()));

    // Strips of rows give the whole raster's file, byte for byte.
    let names = vec!["a".to_string(), "b".to_string()];
    let mut b = CogBuilder::new(&strips, r32.grid, names, false, meta.clone()).unwrap();
    for band in 0..2 {
        let plane = &v[band * 700 * 1300..(band + 1) * 700 * 1300];
        let mut row = 0;
        for h in [1usize, 300, 256, 2, 511, 230].iter().cycle() {
            if row == 1300 {
                break;
            }
            let h = (*h).min(1300 - row);
            let part = BandValues::F32(&plane[row * 700..(row + h) * 700]);
            b.add_rows(&strips, band, row, part).unwrap();
            row += h;
        }
    }
    b.finish(&strips, BigTiff::IfNeeded).unwrap();
    assert_eq!(std::fs::read(&strips).unwrap(), file);

    // f64 and zstd stay on the CPU: the same files as without the accelerator.
    let before = twin.tiles.load(Ordering::Relaxed);
    let r64 = raster(true);
    let zstd = RasterMeta {
        compression: Compression::Zstd,
        ..meta.clone()
    };
    let (p64, pz) = (dir.path().join("a64.tif"), dir.path().join("z.tif"));
    write_raster(&p64, &r64, &meta).unwrap();
    write_raster(&pz, &r32, &zstd).unwrap();
    assert_eq!(twin.tiles.load(Ordering::Relaxed), before);

    // Parts of the rows (MPI ranks) write the whole raster's file, byte for byte.
    let g = grid(300, 2600);
    let band: Vec<f32> = (0..g.n_cells())
        .map(|i| {
            let (r, c) = ((i / 300) as f32, (i % 300) as f32);
            (c * 0.013).sin() * (r * 0.007).cos() + 1e-3 * (i % 31) as f32
        })
        .collect();
    let whole = dir.path().join("whole.tif");
    let mut b = CogBuilder::new(&whole, g, vec!["a".into()], false, meta.clone()).unwrap();
    b.add_band(&whole, 0, BandValues::F32(&band)).unwrap();
    b.finish(&whole, BigTiff::IfNeeded).unwrap();
    for parts in [2, 3] {
        let split = RowSplit::new(g.cols, g.rows, parts);
        assert_eq!(split.rows.len(), parts);
        let done: Vec<PartDone> = (0..parts)
            .map(|p| {
                let mut part = CogPart::new(&g, 1, false, &meta, &split, p);
                let rows = split.rows[p].clone();
                let vals = &band[rows.start * 300..rows.end * 300];
                part.add_rows(dir.path(), 0, rows.start, BandValues::F32(vals))
                    .unwrap();
                part.finish(dir.path()).unwrap()
            })
            .collect();
        let messages: Vec<Vec<u8>> = done.iter().map(PartDone::message).collect();
        let path = dir.path().join(format!("parts{parts}.tif"));
        let names = vec!["a".to_string()];
        let a = assemble(
            &path,
            &g,
            &names,
            false,
            &meta,
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
        assert!(
            std::fs::read(&path).unwrap() == std::fs::read(&whole).unwrap(),
            "{parts} parts"
        );
    }

    // A failing accelerator: the CPU's file.
    set_tile_accelerator(Some(Arc::new(CpuTwin {
        tiles: AtomicUsize::new(0),
        broken: true,
    })));
    let fell = dir.path().join("fell.tif");
    write_raster(&fell, &r32, &meta).unwrap();
    set_tile_accelerator(None);
    assert_eq!(std::fs::read(&fell).unwrap(), std::fs::read(&cpu).unwrap());
}
