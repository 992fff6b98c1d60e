use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use geofield_core::{Raster, RasterData};
use geofield_io::geotiff::{BigTiff, write_geotiff_with};
use geofield_io::{RasterMeta, write_raster};
use tiff::ColorType;
use tiff::decoder::{Decoder, DecodingResult};
use tiff::tags::Tag;

use crate::{grid, raster_f32, raster_f64};

fn open(p: &Path) -> Decoder<BufReader<File>> {
    Decoder::new(BufReader::new(File::open(p).unwrap())).unwrap()
}

/// Every band of the image, planes concatenated.
fn read_all(d: &mut Decoder<BufReader<File>>) -> DecodingResult {
    let mut out = DecodingResult::U8(vec![]);
    d.read_image_to_buffer(&mut out).unwrap();
    out
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
fn many_strips_per_band_read_back_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("big.tif");
    // 700 cols of f64 = 5600 B per row: 187 rows per 1 MiB strip, so 3 strips per band.
    let g = grid(700, 450, 1.0, 0.0, 450.0);
    let r = raster_f64(g, &["a", "b"], |b, r, c| ((b * 450 + r) * 700 + c) as f64);
    write_raster(
        &p,
        &r,
        &RasterMeta {
            nodata: Some(f64::NAN),
            ..Default::default()
        },
    )
    .unwrap();
    let mut d = open(&p);
    assert_eq!(d.strip_count().unwrap(), 6);
    assert_eq!(d.get_tag_u32(Tag::RowsPerStrip).unwrap(), 187);
    assert_eq!(ascii_tag(&mut d, 42113), "nan");
    let RasterData::F64(expected) = &r.data else {
        unreachable!()
    };
    match read_all(&mut d) {
        DecodingResult::F64(v) => assert!(v == *expected, "data differs"),
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
