use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use geofield_core::{Raster, RasterData};
use geofield_io::geotiff::{BigTiff, Compression, write_geotiff_with};
use geofield_io::{RasterMeta, write_raster};
use tiff::ColorType;
use tiff::decoder::{Decoder, DecodingResult};
use tiff::tags::Tag;

use crate::{grid, raster_f32, raster_f64};

fn open(p: &Path) -> Decoder<BufReader<File>> {
    Decoder::new(BufReader::new(File::open(p).unwrap())).unwrap()
}

/// Every band of the current image, planes concatenated, read tile by tile with the `tiff`
/// crate's chunk decoder (its whole-image reader does not assemble tiled planar images).
fn read_all(d: &mut Decoder<BufReader<File>>) -> DecodingResult {
    let (w, h) = d.dimensions().unwrap();
    let (w, h) = (w as usize, h as usize);
    let (tw, th) = d.chunk_dimensions();
    let (tw, th) = (tw as usize, th as usize);
    let planes = d.get_tag_u32(Tag::SamplesPerPixel).unwrap() as usize;
    let (across, down) = (w.div_ceil(tw), h.div_ceil(th));
    let mut out32 = vec![f32::NAN; planes * w * h];
    let mut out64 = vec![f64::NAN; planes * w * h];
    let mut is64 = false;
    for p in 0..planes {
        for t in 0..across * down {
            let (r0, c0) = ((t / across) * th, (t % across) * tw);
            let (cw, ch) = (tw.min(w - c0), th.min(h - r0));
            let chunk = d.read_chunk((p * across * down + t) as u32).unwrap();
            let n = match &chunk {
                DecodingResult::F32(v) => v.len(),
                DecodingResult::F64(v) => v.len(),
                _ => 0,
            };
            // Rows of edge tiles decode to their part inside the image (extra rows ignored).
            assert!(n >= cw * ch, "{n} values for a {cw} x {ch} tile");
            for r in 0..ch {
                for c in 0..cw {
                    let at = p * w * h + (r0 + r) * w + c0 + c;
                    match &chunk {
                        DecodingResult::F32(v) => out32[at] = v[r * cw + c],
                        DecodingResult::F64(v) => {
                            is64 = true;
                            out64[at] = v[r * cw + c];
                        }
                        other => panic!("unexpected sample type {other:?}"),
                    }
                }
            }
        }
    }
    if is64 {
        DecodingResult::F64(out64)
    } else {
        DecodingResult::F32(out32)
    }
}

fn ascii_tag(d: &mut Decoder<BufReader<File>>, tag: u16) -> String {
    let s = d
        .get_tag_ascii_string(Tag::from_u16_exhaustive(tag))
        .unwrap();
    s.trim_end_matches('\0').to_string()
}

#[test]
fn four_band_f32_with_georeferencing_names_units_and_nodata() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("seeds.tif");
    let g = grid(5, 3, 2.5, 500_000.0, 5_200_000.0);
    let names = [
        "Fagus sylvatica",
        "Abies alba",
        "Picea <abies> & co",
        "total",
    ];
    let r = raster_f32(g, &names, |b, r, c| (b * 1000 + r * 10 + c) as f32 + 0.25);
    let meta = RasterMeta {
        crs_epsg: Some(32633),
        nodata: Some(-9999.0),
        units: Some("seeds/m^2".into()),
        description: Some("seed density".into()),
        ..Default::default()
    };
    assert_eq!(
        write_raster(&p, &r, &meta).unwrap(),
        std::slice::from_ref(&p)
    );

    let mut d = open(&p);
    assert_eq!(d.dimensions().unwrap(), (5, 3));
    assert_eq!(
        d.colortype().unwrap(),
        ColorType::Multiband {
            bit_depth: 32,
            num_samples: 4
        }
    );
    assert_eq!(d.get_tag_u32(Tag::SamplesPerPixel).unwrap(), 4);
    assert_eq!(d.get_tag_u32(Tag::PlanarConfiguration).unwrap(), 2);
    assert_eq!(d.get_tag_u16_vec(Tag::SampleFormat).unwrap(), [3, 3, 3, 3]);
    assert_eq!(d.get_tag_u16_vec(Tag::ExtraSamples).unwrap(), [0, 0, 0]);
    assert_eq!(
        d.get_tag_f64_vec(Tag::ModelPixelScaleTag).unwrap(),
        [2.5, 2.5, 0.0]
    );
    assert_eq!(
        d.get_tag_f64_vec(Tag::ModelTiepointTag).unwrap(),
        [0.0, 0.0, 0.0, 500_000.0, 5_200_000.0, 0.0]
    );
    assert_eq!(
        d.get_tag_u16_vec(Tag::GeoKeyDirectoryTag).unwrap(),
        [1, 1, 0, 3, 1024, 0, 1, 1, 1025, 0, 1, 1, 3072, 0, 1, 32633]
    );
    let xml = ascii_tag(&mut d, 42112);
    for (i, name) in [
        "Fagus sylvatica",
        "Abies alba",
        "Picea &lt;abies&gt; &amp; co",
        "total",
    ]
    .iter()
    .enumerate()
    {
        let item =
            format!("<Item name=\"DESCRIPTION\" sample=\"{i}\" role=\"description\">{name}</Item>");
        assert!(xml.contains(&item), "missing {item} in {xml}");
        let unit =
            format!("<Item name=\"UNITTYPE\" sample=\"{i}\" role=\"unittype\">seeds/m^2</Item>");
        assert!(xml.contains(&unit), "missing {unit} in {xml}");
    }
    assert_eq!(ascii_tag(&mut d, 42113), "-9999");
    assert_eq!(ascii_tag(&mut d, 270), "seed density");
    assert_eq!(ascii_tag(&mut d, 305), "geofield");
    // TIFF wants the IFD on a word boundary.
    let bytes = std::fs::read(&p).unwrap();
    let ifd = u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]);
    assert_eq!(ifd % 2, 0, "IFD offset {ifd}");

    let RasterData::F32(expected) = &r.data else {
        unreachable!()
    };
    match read_all(&mut d) {
        DecodingResult::F32(v) => assert_eq!(&v, expected, "all four bands, band-major"),
        other => panic!("expected f32 data, got {other:?}"),
    }
}

#[test]
fn f64_band_without_crs_declares_metres() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("k.tiff");
    let r = raster_f64(grid(4, 2, 0.1, -3.0, 7.5), &["variance"], |_, r, c| {
        (r * 4 + c) as f64 / 3.0
    });
    write_raster(&p, &r, &RasterMeta::default()).unwrap();
    let mut d = open(&p);
    assert_eq!(d.colortype().unwrap(), ColorType::Gray(64));
    assert_eq!(d.get_tag_u16_vec(Tag::SampleFormat).unwrap(), [3]);
    let keys = d.get_tag_u16_vec(Tag::GeoKeyDirectoryTag).unwrap();
    assert_eq!(
        keys,
        [1, 1, 0, 3, 1024, 0, 1, 1, 1025, 0, 1, 1, 3076, 0, 1, 9001]
    );
    assert!(d.find_tag(Tag::GdalNodata).unwrap().is_none());
    let RasterData::F64(expected) = &r.data else {
        unreachable!()
    };
    match read_all(&mut d) {
        DecodingResult::F64(v) => assert_eq!(&v, expected),
        other => panic!("expected f64 data, got {other:?}"),
    }
}

#[test]
fn cloud_optimized_layout_tiles_predictor_and_overviews() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("big.tif");
    // 700 x 450 cells: 3 x 2 tiles of 256 per band; overviews 350 x 225 (2 x 1 tiles) and
    // 175 x 113 (one tile), where the halving stops.
    let g = grid(700, 450, 1.0, 0.0, 450.0);
    let r = raster_f64(g, &["a", "b"], |b, r, c| {
        if b == 1 && r == 7 && c == 9 {
            f64::NAN
        } else {
            ((b * 450 + r) * 700 + c) as f64
        }
    });
    let meta = RasterMeta {
        provenance: vec![("method".into(), "test & check".into())],
        ..Default::default()
    };
    write_raster(&p, &r, &meta).unwrap();
    let bytes = std::fs::read(&p).unwrap();
    // GDAL's ghost header right after the 8-byte TIFF header, the first IFD after it.
    let ghost = "GDAL_STRUCTURAL_METADATA_SIZE=000140 bytes\nLAYOUT=IFDS_BEFORE_DATA\n";
    assert_eq!(&bytes[8..8 + ghost.len()], ghost.as_bytes());
    let first_ifd = u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]) as usize;
    assert_eq!(first_ifd, 192, "8 + 43 + 140 bytes, rounded up to a word");

    let mut d = open(&p);
    let mut sizes = Vec::new();
    let mut first_tile = Vec::new();
    loop {
        let (w, h) = d.dimensions().unwrap();
        sizes.push((w, h));
        assert_eq!(d.get_tag_u32(Tag::TileWidth).unwrap(), 256);
        assert_eq!(d.get_tag_u32(Tag::TileLength).unwrap(), 256);
        assert_eq!(d.get_tag_u32(Tag::Compression).unwrap(), 8, "DEFLATE");
        assert_eq!(d.get_tag_u32(Tag::Predictor).unwrap(), 3, "floating point");
        assert_eq!(d.get_tag_u32(Tag::PlanarConfiguration).unwrap(), 2);
        let offsets = d.get_tag_u64_vec(Tag::TileOffsets).unwrap();
        let counts = d.get_tag_u64_vec(Tag::TileByteCounts).unwrap();
        let tiles = 2 * (w as usize).div_ceil(256) * (h as usize).div_ceil(256);
        assert_eq!(offsets.len(), tiles);
        // Each tile is framed: its byte count before it, its last 4 bytes repeated after it.
        for (&o, &n) in offsets.iter().zip(&counts) {
            let (o, n) = (o as usize, n as usize);
            assert_eq!(&bytes[o - 4..o], &(n as u32).to_le_bytes());
            assert_eq!(&bytes[o + n..o + n + 4], &bytes[o + n - 4..o + n]);
        }
        first_tile.push(offsets[0]);
        if sizes.len() > 1 {
            assert_eq!(d.get_tag_u32(Tag::NewSubfileType).unwrap(), 1);
        }
        assert_eq!(ascii_tag(&mut d, 42113), "nan", "NaN declared as nodata");
        if !d.more_images() {
            break;
        }
        d.next_image().unwrap();
    }
    assert_eq!(sizes, [(700, 450), (350, 225), (175, 113)]);
    // Tile data after every IFD, the smallest overview's first and the full image's last.
    assert!(first_tile[2] < first_tile[1] && first_tile[1] < first_tile[0]);

    let mut d = open(&p);
    let xml = ascii_tag(&mut d, 42112);
    assert!(
        xml.contains("<Item name=\"method\">test &amp; check</Item>"),
        "{xml}"
    );
    let RasterData::F64(expected) = &r.data else {
        unreachable!()
    };
    match read_all(&mut d) {
        DecodingResult::F64(v) => {
            assert_eq!(v.len(), expected.len());
            for (i, (a, b)) in v.iter().zip(expected).enumerate() {
                assert!(
                    a == b || (a.is_nan() && b.is_nan()),
                    "value {i}: {a} vs {b}"
                );
            }
        }
        other => panic!("expected f64 data, got {other:?}"),
    }
    // The first overview's cell (0, 0) of band 0 is the mean of cells (0..2, 0..2):
    // (0 + 1 + 700 + 701) / 4 = 350.5.
    d.next_image().unwrap();
    match read_all(&mut d) {
        DecodingResult::F64(v) => {
            assert_eq!(v.len(), 2 * 350 * 225);
            assert_eq!(v[0], 350.5);
            // Band 1's cell (3, 4) covers the NaN at (7, 9): the mean of the other three.
            let base = (450 * 700) as f64;
            let at = |r: f64, c: f64| base + r * 700.0 + c;
            let want = (at(6.0, 8.0) + at(6.0, 9.0) + at(7.0, 8.0)) / 3.0;
            assert_eq!(v[350 * 225 + 3 * 350 + 4], want);
        }
        other => panic!("expected f64 data, got {other:?}"),
    }
}

#[test]
fn bigtiff_when_asked_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("big.tif");
    let r = raster_f32(grid(30, 20, 5.0, 10.0, 100.0), &["a", "b"], |b, r, c| {
        (b + r * c) as f32
    });
    let meta = RasterMeta {
        crs_epsg: Some(25832),
        ..Default::default()
    };
    write_geotiff_with(&p, &r, &meta, BigTiff::Always).unwrap();
    let bytes = std::fs::read(&p).unwrap();
    // Little-endian BigTIFF header: "II", version 43, offset size 8.
    assert_eq!(&bytes[..6], b"II\x2b\x00\x08\x00");
    let mut d = open(&p);
    assert_eq!(d.dimensions().unwrap(), (30, 20));
    assert_eq!(
        d.get_tag_f64_vec(Tag::ModelPixelScaleTag).unwrap(),
        [5.0, 5.0, 0.0]
    );
    let RasterData::F32(expected) = &r.data else {
        unreachable!()
    };
    match read_all(&mut d) {
        DecodingResult::F32(v) => assert_eq!(&v, expected),
        other => panic!("expected f32 data, got {other:?}"),
    }
}

#[test]
fn bad_rasters_and_extensions_are_refused_without_leaving_files() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.tif");
    let empty = Raster {
        grid: grid(2, 2, 1.0, 0.0, 2.0),
        band_names: vec![],
        data: RasterData::F32(vec![]),
    };
    let e = write_raster(&p, &empty, &RasterMeta::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("has no bands"), "{e}");
    let wrong = Raster {
        grid: grid(2, 2, 1.0, 0.0, 2.0),
        band_names: vec!["a".into()],
        data: RasterData::F32(vec![1.0]),
    };
    let e = write_raster(&p, &wrong, &RasterMeta::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("holds 1 values"), "{e}");
    let ok = raster_f32(grid(1, 1, 1.0, 0.0, 1.0), &["a"], |_, _, _| 1.0);
    let e = write_raster(&dir.path().join("x.jpg"), &ok, &RasterMeta::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("unsupported raster format \".jpg\""), "{e}");
    assert!(crate::dir_entries(dir.path()).is_empty());
}

#[test]
fn zstd_tiles_read_back_equal_on_every_level() {
    let dir = tempfile::tempdir().unwrap();
    let (pz, pd) = (dir.path().join("z.tif"), dir.path().join("d.tif"));
    // 700 x 450 as above (edge tiles, two overviews); a band with NaN, a constant band.
    let g = grid(700, 450, 1.0, 0.0, 450.0);
    let r = raster_f32(g, &["a", "b"], |b, r, c| {
        if b == 0 && r == 7 && c == 9 {
            f32::NAN
        } else if b == 0 {
            ((r * 700 + c) as f32).sqrt() * 0.37
        } else {
            0.0
        }
    });
    let zstd = RasterMeta {
        compression: Compression::Zstd,
        ..Default::default()
    };
    write_raster(&pz, &r, &zstd).unwrap();
    write_raster(&pd, &r, &RasterMeta::default()).unwrap();
    let (mut dz, mut dd) = (open(&pz), open(&pd));
    let mut levels = 0;
    loop {
        assert_eq!(dz.get_tag_u32(Tag::Compression).unwrap(), 50000, "ZSTD");
        assert_eq!(dd.get_tag_u32(Tag::Compression).unwrap(), 8, "DEFLATE");
        assert_eq!(dz.get_tag_u32(Tag::Predictor).unwrap(), 3);
        match (read_all(&mut dz), read_all(&mut dd)) {
            (DecodingResult::F32(a), DecodingResult::F32(b)) => {
                assert_eq!(a.len(), b.len());
                for (i, (x, y)) in a.iter().zip(&b).enumerate() {
                    assert!(
                        x == y || (x.is_nan() && y.is_nan()),
                        "value {i}: {x} vs {y}"
                    );
                }
            }
            other => panic!("expected f32 data, got {other:?}"),
        }
        levels += 1;
        if !dz.more_images() {
            assert!(!dd.more_images());
            break;
        }
        dz.next_image().unwrap();
        dd.next_image().unwrap();
    }
    assert_eq!(levels, 3);
}

#[test]
fn a_zstd_raster_of_zeros_reads_back_despite_its_ratio() {
    // 3000 x 3000 zeros: 36 MB of samples in a few kB of Zstandard (RLE blocks), more than
    // DEFLATE's 1032:1 allows; the reader's size check must know Zstandard's bound.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("zeros.tif");
    let g = grid(3000, 3000, 1.0, 0.0, 3000.0);
    let r = Raster::new(g, vec!["z".into()], RasterData::F32(vec![0.0; 9_000_000])).unwrap();
    let meta = RasterMeta {
        compression: Compression::Zstd,
        ..Default::default()
    };
    write_raster(&p, &r, &meta).unwrap();
    let len = std::fs::metadata(&p).unwrap().len();
    assert!(
        len * 2048 < 36_000_000,
        "the file ({len} bytes) should be small enough to exceed DEFLATE's ratio"
    );
    let (back, _) = geofield_io::read_raster(&p).unwrap();
    assert_eq!(back.grid.cols, 3000);
    match back.data {
        RasterData::F32(v) => assert!(v.iter().all(|&x| x == 0.0)),
        RasterData::F64(v) => assert!(v.iter().all(|&x| x == 0.0)),
    }
}

/// A band given in strips of rows (any heights: single rows, odd rows across tile rows and
/// overview row pairs) is the file of the whole band given at once, byte for byte: f32 and
/// f64, with NaN, a nodata value, four overview levels, either codec.
#[test]
fn strips_of_rows_give_the_whole_bands_file() {
    use geofield_io::geotiff::{BandValues, CogBuilder};
    let dir = tempfile::tempdir().unwrap();
    let g = grid(700, 1300, 1.0, 0.0, 1300.0);
    let cells = g.n_cells();
    let value = |b: usize, i: usize| {
        let (r, c) = (i / 700, i % 700);
        if (r * 31 + c * 7 + b).is_multiple_of(997) {
            f64::NAN
        } else if (r + c).is_multiple_of(501) {
            -9999.0
        } else {
            ((r as f64 * 0.37).sin() + (c as f64 * 0.011).cos()) * 10.0 + b as f64
        }
    };
    let heights = [1usize, 255, 2, 257, 3, 300, 1, 256, 512];
    for (f64, codec) in [
        (false, Compression::Deflate),
        (true, Compression::Zstd),
        (false, Compression::Zstd),
    ] {
        let bands: Vec<Vec<f64>> = (0..2)
            .map(|b| (0..cells).map(|i| value(b, i)).collect())
            .collect();
        let b32: Vec<Vec<f32>> = bands
            .iter()
            .map(|v| v.iter().map(|&x| x as f32).collect())
            .collect();
        let of = |b: usize, lo: usize, hi: usize| match f64 {
            true => BandValues::F64(&bands[b][lo..hi]),
            false => BandValues::F32(&b32[b][lo..hi]),
        };
        let meta = RasterMeta {
            nodata: Some(-9999.0),
            compression: codec,
            ..Default::default()
        };
        let names = vec!["a".to_string(), "b".to_string()];
        let (pw, ps) = (dir.path().join("whole.tif"), dir.path().join("strips.tif"));
        let mut whole = CogBuilder::new(&pw, g, names.clone(), f64, meta.clone()).unwrap();
        for b in 0..2 {
            whole.add_band(&pw, b, of(b, 0, cells)).unwrap();
        }
        whole.finish(&pw, BigTiff::IfNeeded).unwrap();
        let mut strips = CogBuilder::new(&ps, g, names, f64, meta).unwrap();
        // Band 1 first, and the two bands interleaved: each band's rows in order.
        let mut at = [0usize; 2];
        let mut k = 0;
        while at.iter().any(|&r| r < 1300) {
            for b in [1, 0] {
                if at[b] < 1300 {
                    let n = heights[k % heights.len()].min(1300 - at[b]);
                    strips
                        .add_rows(&ps, b, at[b], of(b, at[b] * 700, (at[b] + n) * 700))
                        .unwrap();
                    at[b] += n;
                    k += 1;
                }
            }
        }
        strips.finish(&ps, BigTiff::IfNeeded).unwrap();
        let (a, b) = (std::fs::read(&pw).unwrap(), std::fs::read(&ps).unwrap());
        assert!(a == b, "f64 {f64} {codec:?}: strips give another file");
        // And the file holds the values (reading the full resolution back).
        let mut d = open(&ps);
        assert_eq!(d.dimensions().unwrap(), (700, 1300));
        let back: Vec<f64> = match read_all(&mut d) {
            DecodingResult::F32(v) => v.iter().map(|&x| f64::from(x)).collect(),
            DecodingResult::F64(v) => v,
            other => panic!("{other:?}"),
        };
        for (i, (x, y)) in back.iter().zip(bands.concat()).enumerate() {
            // NaN is stored as the (finite) nodata value.
            let y = if y.is_nan() { -9999.0 } else { y };
            let y = if f64 { y } else { f64::from(y as f32) };
            assert_eq!(*x, y, "value {i}");
        }
    }
}

#[test]
fn strips_out_of_order_or_unfinished_are_errors() {
    use geofield_io::geotiff::{BandValues, CogBuilder};
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.tif");
    let g = grid(10, 6, 1.0, 0.0, 6.0);
    let v = vec![1.0f32; 60];
    let names = vec!["a".to_string()];
    let mut c = CogBuilder::new(&p, g, names.clone(), false, RasterMeta::default()).unwrap();
    let err = |r: Result<(), geofield_io::IoError>| r.unwrap_err().to_string();
    assert!(err(c.add_rows(&p, 0, 2, BandValues::F32(&v[..20]))).contains("before row 0"));
    c.add_rows(&p, 0, 0, BandValues::F32(&v[..20])).unwrap();
    assert!(err(c.add_rows(&p, 0, 3, BandValues::F32(&v[..10]))).contains("from row 2"));
    assert!(err(c.add_rows(&p, 0, 2, BandValues::F32(&v[..15]))).contains("whole rows"));
    assert!(err(c.add_rows(&p, 0, 2, BandValues::F32(&v[..50]))).contains("within the grid"));
    assert!(err(c.add_rows(&p, 0, 2, BandValues::F64(&[0.0; 10]))).contains("precision"));
    // Two of six rows given: the band is not complete, and nothing is written.
    let e = c.finish(&p, BigTiff::IfNeeded).unwrap_err().to_string();
    assert!(e.contains("never computed"), "{e}");
    assert!(!p.exists());
}
