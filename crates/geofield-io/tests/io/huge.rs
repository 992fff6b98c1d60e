//! Sizes declared by a file are checked against the file's length before anything of that size
//! is allocated: a corrupt header gives an error naming the size, never an abort.

use std::path::Path;

use geofield_io::{IoError, RasterMeta, read_raster, write_raster};

use super::{grid, raster_f32};

/// A plain one-strip, georeferenced TIFF of 4 x 3 f32 pixels, as many tools write (geofield's own
/// writer makes tiled COGs).
fn strip_tiff(p: &Path) {
    let file = std::fs::File::create(p).unwrap();
    let mut enc = tiff::encoder::TiffEncoder::new(file).unwrap();
    let data: Vec<f32> = (0..12).map(|v| v as f32).collect();
    let mut img = enc
        .new_image::<tiff::encoder::colortype::Gray32Float>(4, 3)
        .unwrap();
    let d = img.encoder();
    d.write_tag(
        tiff::tags::Tag::ModelPixelScaleTag,
        &[30.0f64, 30.0, 0.0][..],
    )
    .unwrap();
    d.write_tag(
        tiff::tags::Tag::ModelTiepointTag,
        &[0.0f64, 0.0, 0.0, 10.0, 90.0, 0.0][..],
    )
    .unwrap();
    img.write_data(&data).unwrap();
}

/// (byte offset, tag) of every entry of the first IFD of a little-endian classic TIFF.
fn first_ifd_entries(bytes: &[u8]) -> Vec<(usize, u16)> {
    assert_eq!(&bytes[..4], b"II*\0", "a little-endian classic TIFF");
    let ifd = u32::from_le_bytes(bytes[4..8].try_into().unwrap()) as usize;
    let n = u16::from_le_bytes(bytes[ifd..ifd + 2].try_into().unwrap()) as usize;
    (0..n)
        .map(|e| {
            let at = ifd + 2 + 12 * e;
            (
                at,
                u16::from_le_bytes(bytes[at..at + 2].try_into().unwrap()),
            )
        })
        .collect()
}

/// Rewrite ImageWidth (256), ImageLength (257) and RowsPerStrip (278, so that the strip count
/// stays one) of the first IFD of a little-endian classic TIFF to `width` x `height` (as LONG
/// values).
fn patch_dimensions(bytes: &mut [u8], width: u32, height: u32) {
    for (at, tag) in first_ifd_entries(bytes) {
        let value = match tag {
            256 => width,
            257 | 278 => height,
            _ => continue,
        };
        bytes[at + 2..at + 4].copy_from_slice(&4u16.to_le_bytes());
        bytes[at + 4..at + 8].copy_from_slice(&1u32.to_le_bytes());
        bytes[at + 8..at + 12].copy_from_slice(&value.to_le_bytes());
    }
}

#[test]
fn tiff_declaring_100000_squared_pixels_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("dem.tif");
    strip_tiff(&p);
    let mut bytes = std::fs::read(&p).unwrap();
    patch_dimensions(&mut bytes, 100_000, 100_000);
    std::fs::write(&p, &bytes).unwrap();
    let e = read_raster(&p).unwrap_err();
    let m = e.to_string();
    assert!(matches!(e, IoError::BadGeoTiff { .. }), "{m}");
    assert!(m.contains("100000 x 100000") && m.contains("bytes"), "{m}");
}

/// A tiled GeoTIFF (geofield's COG) whose tile size is patched to 65535 x 65535: one tile would
/// decode to 17 GB from a file of a few KB. Refused before decoding, naming the tile.
#[test]
fn tiff_declaring_a_huge_tile_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("dem.tif");
    let r = raster_f32(grid(4, 3, 10.0, 0.0, 30.0), &["z"], |_, r, c| {
        (r * 4 + c) as f32
    });
    write_raster(&p, &r, &RasterMeta::default()).unwrap();
    let mut bytes = std::fs::read(&p).unwrap();
    let mut patched = 0;
    for (at, tag) in first_ifd_entries(&bytes) {
        if tag == 322 || tag == 323 {
            // SHORT or LONG: write 65535 in the field's first two bytes, zero the rest.
            bytes[at + 8..at + 12].copy_from_slice(&[0xff, 0xff, 0, 0]);
            patched += 1;
        }
    }
    assert_eq!(patched, 2, "TileWidth and TileLength present");
    std::fs::write(&p, &bytes).unwrap();
    let e = read_raster(&p).unwrap_err();
    let m = e.to_string();
    assert!(matches!(e, IoError::BadGeoTiff { .. }), "{m}");
    assert!(m.contains("65535 x 65535"), "{m}");
}

fn asc(dir: &Path, text: &str) -> Result<(), IoError> {
    let p = dir.join("dem.asc");
    std::fs::write(&p, text).unwrap();
    read_raster(&p).map(|_| ())
}

#[test]
fn ascii_grid_declaring_more_values_than_its_bytes_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let head = "xllcorner 0\nyllcorner 0\ncellsize 1\n";
    let ok = format!("ncols 2\nnrows 2\n{head}1 2\n3 4\n");
    assert!(asc(dir.path(), &ok).is_ok());
    for (cols, rows) in [
        ("2", "3"),
        ("100000", "100000"),
        ("18446744073709551615", "1"),
        ("4294967296", "4294967296"),
    ] {
        let text = format!("ncols {cols}\nnrows {rows}\n{head}1 2\n3 4\n");
        let m = asc(dir.path(), &text).unwrap_err().to_string();
        assert!(m.contains("dem.asc:"), "{m}");
        assert!(
            m.contains("too many") || m.contains("too few values"),
            "{m}"
        );
    }
}

#[test]
fn tiff_tag_count_beyond_the_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("dem.tif");
    strip_tiff(&p);
    let mut bytes = std::fs::read(&p).unwrap();
    // ImageWidth (256) claims 5.7 million LONG values (22.8 MB) in a file of a few hundred bytes.
    let ifd = u32::from_le_bytes(bytes[4..8].try_into().unwrap()) as usize;
    assert_eq!(u16::from_le_bytes([bytes[ifd + 2], bytes[ifd + 3]]), 256);
    bytes[ifd + 6..ifd + 10].copy_from_slice(&5_701_633u32.to_le_bytes());
    std::fs::write(&p, &bytes).unwrap();
    let m = read_raster(&p).unwrap_err().to_string();
    assert!(m.contains("tag 256 declares 5701633 values"), "{m}");
}

#[test]
fn long_bad_values_are_quoted_at_most_80_characters() {
    let dir = tempfile::tempdir().unwrap();
    let long = "7x".repeat(5000);
    let p = dir.path().join("t.csv");
    std::fs::write(&p, format!("x,y\n1,{long}\n")).unwrap();
    let mut t = geofield_io::CsvTable::read(&p).unwrap();
    let mut rec = geofield_io::CsvRecord::default();
    assert!(t.next_record(&mut rec).unwrap());
    let m = t.f64_at(&rec, 1).unwrap_err().to_string();
    assert!(
        m.contains("t.csv:2") && m.contains("(10000 characters)"),
        "{m}"
    );
    assert!(m.len() < 300, "{} characters: {m}", m.len());
    let head = "ncols 1\nnrows 1\nxllcorner 0\nyllcorner 0\ncellsize 1\n";
    for text in [
        format!("{head}{long}\n"),
        format!("ncols {long}\n{head}1\n"),
    ] {
        let m = asc(dir.path(), &text).unwrap_err().to_string();
        assert!(m.contains("(10000 characters)") && m.len() < 300, "{m}");
    }
}
