use std::collections::HashMap;

use geofield_io::vtk::{VtkArray, VtkImage, write_vti};

/// The attributes of the first element named `tag` at or after byte `from` of `xml`, and
/// where that element ends.
fn element(xml: &str, tag: &str, from: usize) -> (HashMap<String, String>, usize) {
    let open = format!("<{tag}");
    let start = from
        + xml[from..]
            .find(&open)
            .unwrap_or_else(|| panic!("no <{tag}>"));
    let end = start + xml[start..].find('>').unwrap();
    let mut attrs = HashMap::new();
    let mut rest = xml[start + open.len()..end].trim_end_matches('/');
    while let Some(eq) = rest.find("=\"") {
        let key = rest[..eq].trim().to_string();
        let value_start = eq + 2;
        let close = value_start + rest[value_start..].find('"').unwrap();
        attrs.insert(key, rest[value_start..close].to_string());
        rest = &rest[close + 1..];
    }
    (attrs, end + 1)
}

/// Every DataArray element between `<section` and `</section>`: its attributes, in order.
fn arrays(xml: &str, section: &str) -> Vec<HashMap<String, String>> {
    let start = xml.find(&format!("<{section}")).unwrap();
    let end = xml.find(&format!("</{section}>")).unwrap();
    let mut out = Vec::new();
    let mut at = start;
    while let Some(i) = xml[at..end].find("<DataArray") {
        let (attrs, next) = element(xml, "DataArray", at + i);
        out.push(attrs);
        at = next;
    }
    out
}

/// A parsed `.vti`: the XML header and the appended data (after the `_`).
fn split(bytes: &[u8]) -> (String, &[u8]) {
    let marker = b"<AppendedData encoding=\"raw\">";
    let at = bytes
        .windows(marker.len())
        .position(|w| w == marker)
        .unwrap();
    let underscore = at + bytes[at..].iter().position(|&b| b == b'_').unwrap();
    let header = String::from_utf8(bytes[..underscore].to_vec()).unwrap();
    (header, &bytes[underscore + 1..])
}

/// The compressed array at `offset` of the appended data: its uncompressed byte count, the
/// bytes (inflated block by block) and the offset just after it. Checks VTK's header: block
/// count, block size, partial last block size, compressed sizes.
fn block(data: &[u8], offset: usize) -> (u64, Vec<u8>, usize) {
    use std::io::Read;
    let word =
        |i: usize| u64::from_le_bytes(data[offset + 8 * i..offset + 8 * i + 8].try_into().unwrap());
    let (n_blocks, block_size, last) = (word(0) as usize, word(1), word(2));
    assert_eq!(block_size, geofield_io::vtk::BLOCK_BYTES as u64);
    let mut at = offset + 8 * (3 + n_blocks);
    let mut out = Vec::new();
    for b in 0..n_blocks {
        let size = word(3 + b) as usize;
        let mut part = Vec::new();
        flate2::read::ZlibDecoder::new(&data[at..at + size])
            .read_to_end(&mut part)
            .unwrap();
        let want = if b + 1 == n_blocks && last != 0 {
            last
        } else {
            block_size
        };
        assert_eq!(part.len() as u64, want, "block {b}");
        out.extend(part);
        at += size;
    }
    (out.len() as u64, out, at)
}

#[test]
fn image_round_trips_through_the_appended_section() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("wind.vti");
    // 3 x 2 x 2 cells: 12 cells, 4 x 3 x 3 = 36 points.
    let (nx, ny, nz) = (3usize, 2usize, 2usize);
    let cell_id: Vec<i32> = (0..12).map(|i| i * 10 - 7).collect();
    let mask: Vec<u8> = (0..12).map(|i| (i % 3) as u8).collect();
    // Point values that encode their (i, j, k), in VTK order.
    let mut height = Vec::new();
    let mut wind = Vec::new();
    for k in 0..=nz {
        for j in 0..=ny {
            for i in 0..=nx {
                height.push((100 * k + 10 * j + i) as f64 + 0.25);
                wind.extend([i as f32 + 0.5, j as f32 - 1.5, k as f32 * 1e-3]);
            }
        }
    }
    let terrain: Vec<f32> = (0..36).map(|i| i as f32 * 0.5).collect();
    let image = VtkImage {
        origin: [500_000.0, 4_100_000.5, -2.0],
        spacing: [30.0, 30.0, 12.5],
        cells: [nx, ny, nz],
        cell_data: vec![
            ("cell id".into(), VtkArray::I32(&cell_id)),
            ("mask <0-2>".into(), VtkArray::U8(&mask)),
        ],
        point_data: vec![
            ("height".into(), VtkArray::F64(&height)),
            ("wind".into(), VtkArray::F32x3(&wind)),
            ("terrain".into(), VtkArray::F32(&terrain)),
        ],
        field_data: vec![],
    };
    write_vti(&p, &image).unwrap();
    let bytes = std::fs::read(&p).unwrap();
    let (xml, data) = split(&bytes);

    let (file, at) = element(&xml, "VTKFile", 0);
    assert_eq!(file["type"], "ImageData");
    assert_eq!(file["version"], "1.0");
    assert_eq!(file["byte_order"], "LittleEndian");
    assert_eq!(file["header_type"], "UInt64");
    let (img, at) = element(&xml, "ImageData", at);
    assert_eq!(img["WholeExtent"], "0 3 0 2 0 2");
    assert_eq!(img["Origin"], "500000 4100000.5 -2");
    assert_eq!(img["Spacing"], "30 30 12.5");
    let (piece, _) = element(&xml, "Piece", at);
    assert_eq!(piece["Extent"], "0 3 0 2 0 2");
    let (pd, _) = element(&xml, "PointData", 0);
    assert_eq!(pd["Scalars"], "height");
    assert_eq!(pd["Vectors"], "wind");

    let points = arrays(&xml, "PointData");
    let cells = arrays(&xml, "CellData");
    let names: Vec<&str> = points
        .iter()
        .chain(&cells)
        .map(|a| a["Name"].as_str())
        .collect();
    assert_eq!(
        names,
        ["height", "wind", "terrain", "cell id", "mask &lt;0-2&gt;"]
    );
    let types: Vec<&str> = points
        .iter()
        .chain(&cells)
        .map(|a| a["type"].as_str())
        .collect();
    assert_eq!(types, ["Float64", "Float32", "Float32", "Int32", "UInt8"]);
    let comps: Vec<&str> = points
        .iter()
        .chain(&cells)
        .map(|a| a["NumberOfComponents"].as_str())
        .collect();
    assert_eq!(comps, ["1", "3", "1", "1", "1"]);
    assert!(
        points
            .iter()
            .chain(&cells)
            .all(|a| a["format"] == "appended")
    );

    assert_eq!(file["compressor"], "vtkZLibDataCompressor");
    // Each array: its compression header, then its zlib blocks, one after the other from 0.
    let expected_bytes = [36 * 8, 36 * 3 * 4, 36 * 4, 12 * 4, 12];
    let mut next = 0;
    let mut blocks = Vec::new();
    for (a, &n) in points.iter().chain(&cells).zip(&expected_bytes) {
        let offset: usize = a["offset"].parse().unwrap();
        assert_eq!(offset, next, "{a:?}");
        let (count, bytes, end) = block(data, offset);
        assert_eq!(count as usize, n, "{a:?}");
        blocks.push(bytes);
        next = end;
    }
    assert_eq!(&data[next..], b"\n  </AppendedData>\n</VTKFile>\n");

    let f64s = |b: &[u8]| -> Vec<f64> {
        b.chunks(8)
            .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
            .collect()
    };
    let f32s = |b: &[u8]| -> Vec<f32> {
        b.chunks(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    };
    let back = f64s(&blocks[0]);
    assert_eq!(back, height);
    // Point (i, j, k) = (2, 1, 2) is at index i + 4 * (j + 3 * k) = 30.
    assert_eq!(back[30], 212.25);
    let w = f32s(&blocks[1]);
    assert_eq!(w, wind);
    assert_eq!(&w[3 * 30..3 * 31], [2.5, -0.5, 0.002]);
    assert_eq!(f32s(&blocks[2]), terrain);
    let ids: Vec<i32> = blocks[3]
        .chunks(4)
        .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(ids, cell_id);
    assert_eq!(blocks[4], mask);
}

#[test]
fn flat_image_and_no_arrays() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("flat.vti");
    // A 2-D raster as one layer of 4 x 3 cells.
    let v: Vec<f64> = (0..12).map(f64::from).collect();
    let image = VtkImage {
        origin: [0.0; 3],
        spacing: [1.0; 3],
        cells: [4, 3, 0],
        cell_data: vec![
            ("v".into(), VtkArray::F64x3(&[0.0; 36])),
            ("s".into(), VtkArray::F64(&v)),
        ],
        point_data: vec![],
        field_data: vec![],
    };
    write_vti(&p, &image).unwrap();
    let bytes = std::fs::read(&p).unwrap();
    let (xml, data) = split(&bytes);
    assert_eq!(
        element(&xml, "ImageData", 0).0["WholeExtent"],
        "0 4 0 3 0 0"
    );
    let cells = arrays(&xml, "CellData");
    let (n, _, end) = block(data, 0);
    assert_eq!(n, 36 * 8);
    assert_eq!(cells[1]["offset"], end.to_string());
    assert_eq!(block(data, end).0, 12 * 8);
    assert!(arrays(&xml, "PointData").is_empty());
}

#[test]
fn wrong_lengths_and_bad_grids_are_errors_naming_the_array() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.vti");
    let ok = vec![0.0f32; 24];
    let short = vec![0.0f32; 23];
    let base = VtkImage {
        origin: [0.0; 3],
        spacing: [1.0; 3],
        cells: [4, 3, 2],
        cell_data: vec![("temperature".into(), VtkArray::F32(&ok))],
        point_data: vec![],
        field_data: vec![],
    };
    write_vti(&p, &base).unwrap();
    std::fs::remove_file(&p).unwrap();

    let wrong = VtkImage {
        cell_data: vec![
            ("temperature".into(), VtkArray::F32(&ok)),
            ("pressure".into(), VtkArray::F32(&short)),
        ],
        ..base.clone()
    };
    let e = write_vti(&p, &wrong).unwrap_err().to_string();
    assert!(
        e.contains("\"pressure\"") && e.contains("23 values") && e.contains("24"),
        "{e}"
    );
    // A vector array needs three values per tuple; point arrays one tuple per point.
    let vectors = VtkImage {
        point_data: vec![("wind".into(), VtkArray::F32x3(&ok))],
        ..base.clone()
    };
    let e = write_vti(&p, &vectors).unwrap_err().to_string();
    assert!(e.contains("\"wind\"") && e.contains("180"), "{e}");
    let e = write_vti(
        &p,
        &VtkImage {
            spacing: [1.0, 0.0, 1.0],
            ..base.clone()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("spacing"), "{e}");
    let dup = VtkImage {
        cell_data: vec![
            ("t".into(), VtkArray::F32(&ok)),
            ("t".into(), VtkArray::F32(&ok)),
        ],
        ..base.clone()
    };
    assert!(
        write_vti(&p, &dup)
            .unwrap_err()
            .to_string()
            .contains("\"t\"")
    );
    // Nothing was left behind.
    assert!(crate::dir_entries(dir.path()).is_empty());
}

#[test]
fn large_arrays_span_several_blocks_and_field_data_is_text() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("big.vti");
    // 40 x 25 x 40 = 40 000 f32 cells = 160 000 bytes: blocks of 65 536, 65 536 and 28 928.
    let v: Vec<f32> = (0..40_000).map(|i| (i as f32).sin()).collect();
    let image = VtkImage {
        origin: [0.0; 3],
        spacing: [1.0; 3],
        cells: [40, 25, 40],
        cell_data: vec![("s".into(), VtkArray::F32(&v))],
        point_data: vec![],
        field_data: vec![
            ("crs".into(), "EPSG:26910".into()),
            ("units_s".into(), "m s-1".into()),
        ],
    };
    write_vti(&p, &image).unwrap();
    let bytes = std::fs::read(&p).unwrap();
    let (xml, data) = split(&bytes);
    assert_eq!(u64::from_le_bytes(data[..8].try_into().unwrap()), 3);
    assert_eq!(
        u64::from_le_bytes(data[16..24].try_into().unwrap()),
        160_000 - 2 * 65_536
    );
    let (n, raw, _) = block(data, 0);
    assert_eq!(n, 160_000);
    let back: Vec<f32> = raw
        .chunks(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(back, v);
    // "EPSG:26910" as character codes, then the terminating 0.
    let codes: Vec<String> = "EPSG:26910".bytes().map(|b| b.to_string()).collect();
    assert!(
        xml.contains(&format!(
            "<DataArray type=\"String\" Name=\"crs\" NumberOfTuples=\"1\" format=\"ascii\">\n        {} 0\n",
            codes.join(" ")
        )),
        "{xml}"
    );
}
