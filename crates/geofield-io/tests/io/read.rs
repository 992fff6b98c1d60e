//! Raster readers: round trips through our writers, hand-written ESRI ASCII grids, GeoTIFFs
//! written directly with the `tiff` crate, and errors that name the file and line or tag.

use std::path::Path;

use geofield_core::{Raster, RasterData};
use geofield_io::{IoError, RasterMeta, read_raster, write_raster};
use tiff::encoder::{Compression, TiffEncoder, colortype};
use tiff::tags::Tag;

use crate::{grid, raster_f32, raster_f64};

/// Values equal, or both NaN.
fn same(a: f64, b: f64) -> bool {
    a == b || (a.is_nan() && b.is_nan())
}

/// A value pattern with NaN holes, negative and fractional values.
fn pattern(b: usize, r: usize, c: usize) -> f64 {
    if (r * 7 + c * 3 + b) % 5 == 2 {
        f64::NAN
    } else {
        (b as f64 * 1000.0) - (r as f64) * 1.25 + (c as f64) / 3.0
    }
}

fn assert_same_values(got: &Raster, want: &Raster) {
    assert_eq!(got.data.len(), want.data.len());
    for i in 0..want.data.len() {
        let (g, w) = (got.data.get_f64(i), want.data.get_f64(i));
        assert!(same(g, w), "value {i}: got {g}, want {w}");
    }
}

#[test]
fn geotiff_round_trip_f32_and_f64_all_bands_and_metadata() {
    let dir = tempfile::tempdir().unwrap();
    // (cols, rows, bands): 1x1, a small multi-band one, and one of two strips per band.
    for (cols, rows, names) in [
        (1usize, 1usize, vec!["z"]),
        (7, 5, vec!["elev", "slope <deg> & \"x\"", "aspect"]),
        (600, 500, vec!["a", "b"]),
    ] {
        let g = grid(cols, rows, 2.5, -1000.0, 5_000_000.0);
        let r32 = raster_f32(g, &names, |b, r, c| pattern(b, r, c) as f32);
        let r64 = raster_f64(g, &names, pattern);
        for (raster, nodata) in [(&r32, Some(f64::NAN)), (&r64, Some(-9999.0)), (&r64, None)] {
            let p = dir.path().join(format!("r{cols}x{rows}.tif"));
            let meta = RasterMeta {
                crs_epsg: Some(32633),
                nodata,
                units: Some("m".into()),
                description: Some("test DEM".into()),
                ..Default::default()
            };
            write_raster(&p, raster, &meta).unwrap();
            let (got, got_meta) = read_raster(&p).unwrap();
            assert_eq!(got.grid, raster.grid);
            assert_eq!(got.band_names, raster.band_names);
            assert_eq!(
                std::mem::discriminant(&got.data),
                std::mem::discriminant(&raster.data),
                "precision kept"
            );
            assert_same_values(&got, raster);
            assert_eq!(got_meta.crs_epsg, Some(32633));
            assert_eq!(got_meta.units.as_deref(), Some("m"));
            assert_eq!(got_meta.description.as_deref(), Some("test DEM"));
            // Without a declared nodata, a raster holding NaN is written with nodata = NaN.
            let has_nan =
                (0..raster.n_bands()).any(|b| raster.band_f64(b).iter().any(|v| v.is_nan()));
            let nodata = nodata.or(has_nan.then_some(f64::NAN));
            match (got_meta.nodata, nodata) {
                (Some(a), Some(b)) => assert!(same(a, b), "{a} vs {b}"),
                (a, b) => assert_eq!(a, b),
            }
        }
    }
}

#[test]
fn geotiff_nodata_value_cells_become_nan() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("nd.tif");
    let g = grid(3, 2, 1.0, 0.0, 2.0);
    let r = raster_f64(g, &["z"], |_, r, c| if r == c { -9999.0 } else { 1.0 });
    let meta = RasterMeta {
        nodata: Some(-9999.0),
        ..Default::default()
    };
    write_raster(&p, &r, &meta).unwrap();
    let (got, got_meta) = read_raster(&p).unwrap();
    assert_eq!(got_meta.nodata, Some(-9999.0));
    assert_eq!(got_meta.crs_epsg, None);
    let v = got.band_f64(0);
    for (i, x) in v.iter().enumerate() {
        let (row, col) = (i / 3, i % 3);
        if row == col {
            assert!(x.is_nan(), "cell {i} should be NaN, is {x}");
        } else {
            assert_eq!(*x, 1.0);
        }
    }
}

#[test]
fn ascii_round_trip_single_and_multi_band() {
    let dir = tempfile::tempdir().unwrap();
    for (cols, rows) in [(1usize, 1usize), (9, 4)] {
        let g = grid(cols, rows, 0.5, 12.5, -3.0);
        let names = ["dem", "b2", "b3"];
        let r32 = raster_f32(g, &names, |b, r, c| pattern(b, r, c) as f32);
        let r64 = raster_f64(g, &names, pattern);
        for raster in [&r32, &r64] {
            let meta = RasterMeta {
                nodata: Some(-9999.0),
                ..Default::default()
            };
            let files = write_raster(&dir.path().join("out.asc"), raster, &meta).unwrap();
            assert_eq!(files.len(), 3);
            for (b, f) in files.iter().enumerate() {
                let (got, got_meta) = read_raster(f).unwrap();
                assert_eq!(got.grid, raster.grid, "{}", f.display());
                assert_eq!(got.band_names, ["band1"]);
                assert_eq!(got_meta.nodata, Some(-9999.0));
                let want = raster.band_f64(b);
                let v = got.band_f64(0);
                assert_eq!(v.len(), want.len());
                for (i, (&g, &w)) in v.iter().zip(&want).enumerate() {
                    // The writer prints f32 values with f32's shortest digits.
                    let g = if matches!(raster.data, RasterData::F32(_)) {
                        g as f32 as f64
                    } else {
                        g
                    };
                    assert!(same(g, w), "band {b} value {i}: got {g}, want {w}");
                }
            }
            // Single band: the file is the path itself.
            let single =
                Raster::new(g, vec!["z".into()], RasterData::F64(raster.band_f64(1))).unwrap();
            let p = dir.path().join("one.asc");
            write_raster(&p, &single, &meta).unwrap();
            let (got, _) = read_raster(&p).unwrap();
            let want = single.band_f64(0);
            for (i, (&g, &w)) in got.band_f64(0).iter().zip(&want).enumerate() {
                let g = if matches!(raster.data, RasterData::F32(_)) {
                    g as f32 as f64
                } else {
                    g
                };
                assert!(same(g, w), "value {i}: got {g}, want {w}");
            }
        }
    }
}

fn write_text(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn ascii_centre_origin_case_insensitive_keys_and_wrapped_values() {
    let dir = tempfile::tempdir().unwrap();
    let p = write_text(
        dir.path(),
        "c.asc",
        "NCOLS 3\nNRows 2\nXLLCENTER 105\nyllcenter 205\nCellSize 10\nnodata_value -1\n\
         1 2\n3 -1 5.5\n  6\n",
    );
    let (r, meta) = read_raster(&p).unwrap();
    // Lower-left cell centre (105, 205) => corner (100, 200); 2 rows of 10 m => y_max 220.
    assert_eq!(r.grid, grid(3, 2, 10.0, 100.0, 220.0));
    assert_eq!(meta.nodata, Some(-1.0));
    let v = r.band_f64(0);
    assert_eq!(&v[..3], [1.0, 2.0, 3.0]);
    assert!(v[3].is_nan());
    assert_eq!(&v[4..], [5.5, 6.0]);
    // North row first: cell (0, 0) centre is at the north-west.
    assert_eq!(r.grid.cell_centre(0, 0), (105.0, 215.0));

    // dx == dy is accepted as the cell size.
    let p = write_text(
        dir.path(),
        "d.asc",
        "ncols 1\nnrows 1\nxllcorner 0\nyllcorner 0\ndx 2\ndy 2\n7\n",
    );
    let (r, meta) = read_raster(&p).unwrap();
    assert_eq!(r.grid, grid(1, 1, 2.0, 0.0, 2.0));
    assert_eq!(r.band_f64(0), [7.0]);
    assert_eq!(meta.nodata, None);
}

#[test]
fn ascii_errors_name_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let head = "ncols 2\nnrows 2\nxllcorner 0\nyllcorner 0\ncellsize 1\n";
    let cases: [(&str, String, &str); 8] = [
        ("badnum.asc", format!("{head}1 2\n3 x4\n"), ":7:"),
        ("few.asc", format!("{head}1 2\n3\n"), ":7:"),
        ("many.asc", format!("{head}1 2\n3 4\n\n5\n"), ":9:"),
        (
            "nocell.asc",
            "ncols 2\nnrows 2\nxllcorner 0\nyllcorner 0\n1 2\n3 4\n".into(),
            ":5:",
        ),
        (
            "dxdy.asc",
            "ncols 2\nnrows 2\nxllcorner 0\nyllcorner 0\ndx 1\ndy 2\n1 2\n3 4\n".into(),
            ":5:",
        ),
        (
            "unknown.asc",
            "ncols 2\nnrows 2\nxllcorner 0\nyllcorner 0\ncellsize 1\nfoo 3\n1 2\n3 4\n".into(),
            ":6:",
        ),
        (
            "negcell.asc",
            "ncols 2\nnrows 2\nxllcorner 0\nyllcorner 0\ncellsize -1\n1 2\n3 4\n".into(),
            ":5:",
        ),
        (
            "badcols.asc",
            "ncols 2.5\nnrows 2\nxllcorner 0\nyllcorner 0\ncellsize 1\n1 2\n3 4\n".into(),
            ":1:",
        ),
    ];
    for (name, text, line) in cases {
        let p = write_text(dir.path(), name, &text);
        let e = read_raster(&p).unwrap_err();
        assert!(matches!(e, IoError::BadAsciiGrid { .. }), "{name}: {e:?}");
        let msg = e.to_string();
        assert!(
            msg.contains(&format!("{name}{line}")),
            "{name}: want {line} in {msg}"
        );
        match name {
            "badnum.asc" => assert!(msg.contains("\"x4\" is not a number"), "{msg}"),
            "few.asc" => assert!(msg.contains("too few values"), "{msg}"),
            "many.asc" => assert!(msg.contains("too many values"), "{msg}"),
            "nocell.asc" => assert!(msg.contains("no cellsize"), "{msg}"),
            "dxdy.asc" => assert!(msg.contains("non-square cells are not supported"), "{msg}"),
            "unknown.asc" => assert!(msg.contains("unknown header key \"foo\""), "{msg}"),
            _ => {}
        }
    }
}

#[test]
fn npy_and_unknown_extensions_are_refused_clearly() {
    let e = read_raster(Path::new("dem.npy")).unwrap_err().to_string();
    assert!(
        e.contains("dem.npy") && e.contains("no georeferencing"),
        "{e}"
    );
    let e = read_raster(Path::new("dem.png")).unwrap_err().to_string();
    assert!(
        e.contains("cannot read dem.png") && e.contains(".tif, .tiff, .asc"),
        "{e}"
    );
}

/// GeoKeyDirectory with GTModelType = projected, GTRasterType = `raster_type`, EPSG 32633.
fn geo_keys(raster_type: u16) -> Vec<u16> {
    vec![
        1,
        1,
        0,
        3,
        1024,
        0,
        1,
        1,
        1025,
        0,
        1,
        raster_type,
        3072,
        0,
        1,
        32633,
    ]
}

#[test]
fn geotiff_u16_pixel_is_point_from_the_tiff_crate() {
    let dir = tempfile::tempdir().unwrap();
    let (w, h) = (4u32, 3u32);
    let values: Vec<u16> = (0..w * h)
        .map(|i| if i == 5 { 65535 } else { (i * 1000 + 7) as u16 })
        .collect();
    for compression in [
        Compression::Uncompressed,
        Compression::Lzw,
        Compression::Deflate(Default::default()),
    ] {
        let p = dir.path().join("point.tif");
        {
            let file = std::fs::File::create(&p).unwrap();
            let mut enc = TiffEncoder::new(file)
                .unwrap()
                .with_compression(compression);
            let mut img = enc.new_image::<colortype::Gray16>(w, h).unwrap();
            let d = img.encoder();
            d.write_tag(Tag::ModelPixelScaleTag, &[2.0f64, 2.0, 0.0][..])
                .unwrap();
            // Pixel (0, 0)'s centre is at (1000, 2000).
            d.write_tag(
                Tag::ModelTiepointTag,
                &[0.0f64, 0.0, 0.0, 1000.0, 2000.0, 0.0][..],
            )
            .unwrap();
            d.write_tag(Tag::GeoKeyDirectoryTag, &geo_keys(2)[..])
                .unwrap();
            d.write_tag(Tag::GdalNodata, "65535").unwrap();
            img.write_data(&values).unwrap();
        }
        let (r, meta) = read_raster(&p).unwrap();
        // Half a cell west and north of the tie point.
        assert_eq!(r.grid, grid(4, 3, 2.0, 999.0, 2001.0));
        assert_eq!(r.grid.cell_centre(0, 0), (1000.0, 2000.0));
        assert_eq!(r.band_names, ["band1"]);
        assert_eq!(meta.crs_epsg, Some(32633));
        assert_eq!(meta.nodata, Some(65535.0));
        let RasterData::F32(v) = &r.data else {
            panic!("u16 should read as f32")
        };
        for (i, (&got, &want)) in v.iter().zip(&values).enumerate() {
            if i == 5 {
                assert!(got.is_nan());
            } else {
                assert_eq!(got, f32::from(want), "value {i}");
            }
        }

        // The same file declared PixelIsArea: no shift.
        let p2 = dir.path().join("area.tif");
        {
            let file = std::fs::File::create(&p2).unwrap();
            let mut enc = TiffEncoder::new(file)
                .unwrap()
                .with_compression(compression);
            let mut img = enc.new_image::<colortype::Gray16>(w, h).unwrap();
            let d = img.encoder();
            d.write_tag(Tag::ModelPixelScaleTag, &[2.0f64, 2.0, 0.0][..])
                .unwrap();
            d.write_tag(
                Tag::ModelTiepointTag,
                &[0.0f64, 0.0, 0.0, 1000.0, 2000.0, 0.0][..],
            )
            .unwrap();
            d.write_tag(Tag::GeoKeyDirectoryTag, &geo_keys(1)[..])
                .unwrap();
            img.write_data(&values).unwrap();
        }
        let (r, meta) = read_raster(&p2).unwrap();
        assert_eq!(r.grid, grid(4, 3, 2.0, 1000.0, 2000.0));
        assert_eq!(meta.nodata, None);
        assert_eq!(r.band_f64(0)[5], 65535.0);
    }
}

#[test]
fn geotiff_chunky_multi_sample_u16_and_tiepoint_offset() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("rgb.tif");
    let (w, h) = (5u32, 3u32);
    // Chunky RGB16: pixel i has samples (i, 100 + i, 200 + i).
    let values: Vec<u16> = (0..w * h)
        .flat_map(|i| [i as u16, 100 + i as u16, 200 + i as u16])
        .collect();
    {
        let file = std::fs::File::create(&p).unwrap();
        let mut enc = TiffEncoder::new(file).unwrap();
        let mut img = enc.new_image::<colortype::RGB16>(w, h).unwrap();
        let d = img.encoder();
        d.write_tag(Tag::ModelPixelScaleTag, &[10.0f64, 10.0, 0.0][..])
            .unwrap();
        // Tie point at raster (1, 2) => corner of (0, 0) is 10 m west and 20 m north of it.
        d.write_tag(
            Tag::ModelTiepointTag,
            &[1.0f64, 2.0, 0.0, 500.0, 800.0, 0.0][..],
        )
        .unwrap();
        img.write_data(&values).unwrap();
    }
    let (r, meta) = read_raster(&p).unwrap();
    assert_eq!(r.grid, grid(5, 3, 10.0, 490.0, 820.0));
    assert_eq!(r.band_names, ["band1", "band2", "band3"]);
    assert_eq!(meta.crs_epsg, None);
    for b in 0..3 {
        let v = r.band_f64(b);
        for (i, x) in v.iter().enumerate() {
            assert_eq!(*x, (b * 100 + i) as f64, "band {b} pixel {i}");
        }
    }
}

/// A TIFF tag with its f64 values.
type GeoTag = (Tag, Vec<f64>);

/// A 2x2 f32 GeoTIFF with the given georeferencing tags.
fn georef_tiff(p: &Path, tags: &[GeoTag]) {
    let file = std::fs::File::create(p).unwrap();
    let mut enc = TiffEncoder::new(file).unwrap();
    let mut img = enc.new_image::<colortype::Gray32Float>(2, 2).unwrap();
    for (tag, v) in tags {
        img.encoder().write_tag(*tag, &v[..]).unwrap();
    }
    img.write_data(&[1.0f32, 2.0, 3.0, 4.0]).unwrap();
}

#[test]
fn geotiff_georeferencing_errors_name_the_tag() {
    let dir = tempfile::tempdir().unwrap();
    let tie = (Tag::ModelTiepointTag, vec![0.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
    let cases: [(&str, Vec<GeoTag>, &str); 4] = [
        (
            "nonsquare.tif",
            vec![(Tag::ModelPixelScaleTag, vec![1.0, 2.0, 0.0]), tie.clone()],
            "non-square pixels are not supported",
        ),
        ("nogeo.tif", vec![], "no georeferencing"),
        (
            "rotated.tif",
            vec![(
                Tag::ModelTransformationTag,
                vec![
                    1.0, 0.5, 0.0, 10.0, 0.5, -1.0, 0.0, 20.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
                    1.0,
                ],
            )],
            "ModelTransformationTag (34264) has rotation",
        ),
        (
            "notie.tif",
            vec![(Tag::ModelPixelScaleTag, vec![1.0, 1.0, 0.0])],
            "without a ModelTiepointTag (33922)",
        ),
    ];
    for (name, tags, want) in cases {
        let p = dir.path().join(name);
        georef_tiff(&p, &tags);
        let e = read_raster(&p).unwrap_err();
        assert!(matches!(e, IoError::BadGeoTiff { .. }), "{name}: {e:?}");
        let msg = e.to_string();
        assert!(msg.contains(name) && msg.contains(want), "{name}: {msg}");
    }
    // A transformation without rotation is accepted.
    let p = dir.path().join("transform.tif");
    georef_tiff(
        &p,
        &[(
            Tag::ModelTransformationTag,
            vec![
                3.0, 0.0, 0.0, 10.0, 0.0, -3.0, 0.0, 20.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0,
            ],
        )],
    );
    let (r, _) = read_raster(&p).unwrap();
    assert_eq!(r.grid, grid(2, 2, 3.0, 10.0, 20.0));
    assert_eq!(r.data, RasterData::F32(vec![1.0, 2.0, 3.0, 4.0]));
}

/// Write a tiled GeoTIFF by hand (the tiff crate's encoder writes strips only): 16 x 16 tiles,
/// padded at the right and bottom edges with `pad`, `bands` samples of signed integers per
/// pixel, chunky or planar. `value(band, row, col)` gives the samples.
fn tiled_tiff<T: Copy + tiff::encoder::TiffValue>(
    p: &Path,
    (cols, rows, bands): (usize, usize, usize),
    planar: bool,
    pad: T,
    value: impl Fn(usize, usize, usize) -> T,
) where
    [T]: tiff::encoder::TiffValue,
{
    const TILE: usize = 16;
    let bits = (std::mem::size_of::<T>() * 8) as u16;
    let file = std::fs::File::create(p).unwrap();
    let mut enc = TiffEncoder::new(file).unwrap();
    let mut dir = enc.image_directory().unwrap();
    let (across, down) = (cols.div_ceil(TILE), rows.div_ceil(TILE));
    let (planes, spp) = if planar { (bands, 1) } else { (1, bands) };
    let mut offsets = Vec::new();
    let mut counts = Vec::new();
    for plane in 0..planes {
        for ty in 0..down {
            for tx in 0..across {
                let mut tile = vec![pad; TILE * TILE * spp];
                for r in 0..TILE {
                    for c in 0..TILE {
                        let (row, col) = (ty * TILE + r, tx * TILE + c);
                        if row < rows && col < cols {
                            for s in 0..spp {
                                tile[(r * TILE + c) * spp + s] = value(plane + s, row, col);
                            }
                        }
                    }
                }
                offsets.push(dir.write_data(&tile[..]).unwrap() as u32);
                counts.push((tile.len() * std::mem::size_of::<T>()) as u32);
            }
        }
    }
    dir.write_tag(Tag::ImageWidth, cols as u32).unwrap();
    dir.write_tag(Tag::ImageLength, rows as u32).unwrap();
    dir.write_tag(Tag::BitsPerSample, &vec![bits; bands][..])
        .unwrap();
    dir.write_tag(Tag::Compression, 1u16).unwrap();
    dir.write_tag(Tag::PhotometricInterpretation, 1u16).unwrap();
    dir.write_tag(Tag::SamplesPerPixel, bands as u16).unwrap();
    dir.write_tag(Tag::PlanarConfiguration, if planar { 2u16 } else { 1 })
        .unwrap();
    if bands > 1 {
        dir.write_tag(Tag::ExtraSamples, &vec![0u16; bands - 1][..])
            .unwrap();
    }
    dir.write_tag(Tag::SampleFormat, &vec![2u16; bands][..])
        .unwrap();
    dir.write_tag(Tag::TileWidth, TILE as u32).unwrap();
    dir.write_tag(Tag::TileLength, TILE as u32).unwrap();
    dir.write_tag(Tag::TileOffsets, &offsets[..]).unwrap();
    dir.write_tag(Tag::TileByteCounts, &counts[..]).unwrap();
    dir.write_tag(Tag::ModelPixelScaleTag, &[5.0f64, 5.0, 0.0][..])
        .unwrap();
    dir.write_tag(
        Tag::ModelTiepointTag,
        &[0.0f64, 0.0, 0.0, 300.0, 400.0, 0.0][..],
    )
    .unwrap();
    dir.write_tag(Tag::GdalNodata, "-32768").unwrap();
    dir.finish().unwrap();
}

#[test]
fn geotiff_tiled_chunky_and_planar_signed_integers() {
    let dir = tempfile::tempdir().unwrap();
    // 20 x 18 pixels: 2 x 2 tiles of 16, the right and bottom ones partly padding.
    let (cols, rows) = (20usize, 18usize);
    let f = |b: usize, r: usize, c: usize| -(b as i32 * 10_000) + (r * 100 + c) as i32 - 500;
    for planar in [false, true] {
        // i16, 2 bands; one nodata cell per band.
        let p = dir.path().join(format!("i16_{planar}.tif"));
        let v16 = |b: usize, r: usize, c: usize| {
            if (r, c) == (17, 19 - b) {
                -32768i16
            } else {
                f(b, r, c) as i16
            }
        };
        tiled_tiff(&p, (cols, rows, 2), planar, 77i16, v16);
        let (r, meta) = read_raster(&p).unwrap();
        assert_eq!(r.grid, grid(cols, rows, 5.0, 300.0, 400.0));
        assert_eq!(r.band_names, ["band1", "band2"]);
        assert_eq!(meta.nodata, Some(-32768.0));
        assert!(matches!(r.data, RasterData::F32(_)), "i16 reads as f32");
        for b in 0..2 {
            let band = r.band_f64(b);
            for row in 0..rows {
                for col in 0..cols {
                    let got = band[row * cols + col];
                    if (row, col) == (17, 19 - b) {
                        assert!(got.is_nan(), "planar {planar} band {b} ({row}, {col})");
                    } else {
                        assert_eq!(
                            got,
                            f64::from(v16(b, row, col)),
                            "planar {planar} band {b} ({row}, {col})"
                        );
                    }
                }
            }
        }

        // i32, 3 bands: read as f64.
        let p = dir.path().join(format!("i32_{planar}.tif"));
        let v32 = |b: usize, r: usize, c: usize| f(b, r, c) * 1000;
        tiled_tiff(&p, (cols, rows, 3), planar, 0i32, v32);
        let (r, _) = read_raster(&p).unwrap();
        let RasterData::F64(data) = &r.data else {
            panic!("i32 should read as f64")
        };
        for b in 0..3 {
            for row in 0..rows {
                for col in 0..cols {
                    assert_eq!(
                        data[(b * rows + row) * cols + col],
                        f64::from(v32(b, row, col)),
                        "planar {planar} band {b} ({row}, {col})"
                    );
                }
            }
        }
    }
}
