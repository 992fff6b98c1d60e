use std::path::Path;

use geofield_io::render::{Section, SectionWell, layer_colour, write_section_png};

/// Decode an 8-bit RGB PNG: (width, height, pixels).
fn decode(p: &Path) -> (usize, usize, Vec<[u8; 3]>) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(p).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!(info.color_type, png::ColorType::Rgb);
    let px = buf[..info.buffer_size()]
        .chunks(3)
        .map(|c| [c[0], c[1], c[2]])
        .collect();
    (info.width as usize, info.height as usize, px)
}

fn count(px: &[[u8; 3]], rgb: [u8; 3]) -> usize {
    px.iter().filter(|&&p| p == rgb).count()
}

/// Flat surfaces at `tops` (m) over 2 km, sampled every 100 m.
fn flat(tops: &[f64]) -> Section {
    let distance_m: Vec<f64> = (0..21).map(|k| f64::from(k) * 100.0).collect();
    Section {
        title: "Stratigraphy along row 45".into(),
        x_label: "distance along row 45 (m)".into(),
        y_label: "elevation (m)".into(),
        surfaces: tops.iter().map(|&z| vec![z; distance_m.len()]).collect(),
        names: (0..tops.len()).map(|i| format!("S{i}")).collect(),
        distance_m,
        wells: vec![SectionWell {
            name: "BH-7".into(),
            along_m: 700.0,
            offset_m: 12.0,
        }],
    }
}

/// Legend swatches are 14 x 14 pixels of each layer colour.
const SWATCH_PX: usize = 14 * 14;

#[test]
fn layer_areas_follow_their_thickness_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("section.png");
    // Layers 10 m, 40 m and 20 m thick.
    write_section_png(&p, &flat(&[100.0, 90.0, 50.0, 30.0])).unwrap();
    let (w, h, px) = decode(&p);
    let area = |i: usize| (count(&px, layer_colour(i)) - SWATCH_PX) as f64;
    let (a0, a1, a2) = (area(0), area(1), area(2));
    assert!(a0 > 1000.0, "{a0}");
    // Up to a couple of pixel rows lost to the surface lines and rounding per layer.
    let close = |got: f64, want: f64| (got - want).abs() < 0.1 * want;
    assert!(close(a1 / a0, 4.0), "{a0} {a1}");
    assert!(close(a2 / a0, 2.0), "{a0} {a2}");
    // Down any column through the layers the colours come in order: 0, then 1, then 2.
    let x = (0..w)
        .find(|&x| (0..h).any(|y| px[y * w + x] == layer_colour(2)))
        .unwrap();
    let first_row = |i: usize| (0..h).position(|y| px[y * w + x] == layer_colour(i));
    let rows: Vec<usize> = (0..3).map(|i| first_row(i).unwrap()).collect();
    assert!(rows[0] < rows[1] && rows[1] < rows[2], "{rows:?}");
}

#[test]
fn degenerate_sections_still_draw() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("d.png");
    let mut gaps = flat(&[100.0, 60.0, 20.0]);
    gaps.surfaces[1][3] = f64::NAN;
    gaps.surfaces[2] = vec![f64::NAN; 21];
    let mut all_missing = flat(&[1.0, 2.0]);
    all_missing.surfaces = vec![vec![f64::NAN; 21]; 2];
    let one_column = Section {
        distance_m: vec![5.0],
        surfaces: vec![vec![10.0], vec![4.0]],
        ..Default::default()
    };
    let no_columns = Section {
        surfaces: vec![vec![], vec![]],
        wells: vec![SectionWell {
            name: "W".into(),
            along_m: 0.0,
            offset_m: f64::NAN,
        }],
        ..Default::default()
    };
    let cases = [
        ("one surface", flat(&[100.0])),
        ("constant surfaces", flat(&[50.0, 50.0, 50.0])),
        ("gaps", gaps.clone()),
        ("all missing", all_missing),
        ("one column", one_column),
        ("no columns", no_columns),
        ("nothing", Section::default()),
    ];
    for (what, s) in cases {
        write_section_png(&p, &s).unwrap_or_else(|e| panic!("{what}: {e}"));
        let (w, h, px) = decode(&p);
        assert!(w >= 600 && h >= 400, "{what}: {w} x {h}");
        // Something is drawn (axes, frame) on the white background.
        assert!(count(&px, [255, 255, 255]) < w * h, "{what}");
        if what == "constant surfaces" {
            // Zero-thickness layers fill nothing beyond their legend swatches.
            assert_eq!(count(&px, layer_colour(0)), SWATCH_PX, "{what}");
        }
    }
    // With the middle surface missing at one column and the base nowhere, layer 0 is still
    // drawn and layer 1 only in its swatch.
    write_section_png(&p, &gaps).unwrap();
    let (_, _, px) = decode(&p);
    assert!(count(&px, layer_colour(0)) > 10 * SWATCH_PX);
    assert_eq!(count(&px, layer_colour(1)), SWATCH_PX);
}

#[test]
fn inconsistent_sections_are_errors_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.png");
    let mut short = flat(&[10.0, 5.0]);
    short.surfaces[1].pop();
    let e = write_section_png(&p, &short).unwrap_err().to_string();
    assert!(
        e.contains("surface 1 (\"S1\") has 20 values") && e.contains("21"),
        "{e}"
    );
    let mut unordered = flat(&[10.0, 5.0]);
    unordered.distance_m[4] = 250.0;
    let e = write_section_png(&p, &unordered).unwrap_err().to_string();
    assert!(e.contains("distance_m[4] = 250"), "{e}");
    let mut nan = flat(&[10.0]);
    nan.distance_m[0] = f64::NAN;
    assert!(write_section_png(&p, &nan).is_err());
    assert!(!p.exists());
    assert!(crate::dir_entries(dir.path()).is_empty());
}
