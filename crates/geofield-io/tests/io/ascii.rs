use geofield_io::{RasterMeta, write_raster};

use crate::{dir_entries, grid, raster_f32, raster_f64};

#[test]
fn three_by_two_grid_header_and_north_first_rows() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("dem.asc");
    // 3 cols x 2 rows of 10 m cells, north-west corner (100, 200): y from 180 to 200.
    let r = raster_f32(grid(3, 2, 10.0, 100.0, 200.0), &["elev"], |_, r, c| {
        if (r, c) == (1, 1) {
            f32::NAN
        } else {
            (r * 10 + c) as f32 + 0.1
        }
    });
    let meta = RasterMeta {
        nodata: Some(-9999.0),
        ..Default::default()
    };
    assert_eq!(
        write_raster(&p, &r, &meta).unwrap(),
        std::slice::from_ref(&p)
    );
    let text = std::fs::read_to_string(&p).unwrap();
    assert_eq!(
        text,
        "ncols        3\n\
         nrows        2\n\
         xllcorner    100\n\
         yllcorner    180\n\
         cellsize     10\n\
         NODATA_value -9999\n\
         0.1 1.1 2.1\n\
         10.1 -9999 12.1\n"
    );
}

#[test]
fn nan_without_nodata_gets_a_declared_default() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("n.asc");
    let r = raster_f64(grid(2, 1, 0.5, -1.0, 0.25), &["v"], |_, _, c| {
        if c == 0 { f64::NAN } else { 1.0 / 3.0 }
    });
    write_raster(&p, &r, &RasterMeta::default()).unwrap();
    let text = std::fs::read_to_string(&p).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[2], "xllcorner    -1");
    assert_eq!(lines[3], "yllcorner    -0.25");
    assert_eq!(lines[5], "NODATA_value -9999");
    let values: Vec<f64> = lines[6].split(' ').map(|s| s.parse().unwrap()).collect();
    assert_eq!(
        values,
        [-9999.0, 1.0 / 3.0],
        "f64 values must round-trip exactly"
    );
}

#[test]
fn several_bands_give_one_file_each() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("seeds.asc");
    let r = raster_f32(
        grid(2, 2, 1.0, 0.0, 2.0),
        &["Fagus sylvatica", "Abies alba"],
        |b, r, c| (b * 4 + r * 2 + c) as f32,
    );
    let written = write_raster(&p, &r, &RasterMeta::default()).unwrap();
    let expected = [
        dir.path().join("seeds_Fagus_sylvatica.asc"),
        dir.path().join("seeds_Abies_alba.asc"),
    ];
    assert_eq!(written, expected);
    assert_eq!(
        dir_entries(dir.path()),
        ["seeds_Abies_alba.asc", "seeds_Fagus_sylvatica.asc"]
    );
    let second = std::fs::read_to_string(&expected[1]).unwrap();
    assert!(second.ends_with("\n4 5\n6 7\n"), "{second}");
    assert!(
        !second.contains("NODATA"),
        "no nodata line without nodata: {second}"
    );
}

#[test]
fn prj_sidecars_hold_the_wkt_when_the_crs_is_known() {
    let dir = tempfile::tempdir().unwrap();
    let r = raster_f32(
        grid(3, 2, 1.0, 500_000.0, 5_200_000.0),
        &["a", "b"],
        |b, r, c| (b + r + c) as f32,
    );
    let meta = RasterMeta {
        crs_epsg: Some(32633),
        ..Default::default()
    };
    let files = write_raster(&dir.path().join("g.asc"), &r, &meta).unwrap();
    let names: Vec<String> = files
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["g_a.asc", "g_b.asc", "g_a.prj", "g_b.prj"]);
    for prj in &files[2..] {
        let wkt = std::fs::read_to_string(prj).unwrap();
        assert!(
            wkt.starts_with("PROJCS[\"WGS 84 / UTM zone 33N\"")
                && wkt.contains("PARAMETER[\"central_meridian\",15]")
                && wkt.ends_with("AUTHORITY[\"EPSG\",\"32633\"]]"),
            "{wkt}"
        );
    }
    // No CRS, no sidecar.
    let plain = write_raster(&dir.path().join("h.asc"), &r, &RasterMeta::default()).unwrap();
    assert_eq!(plain.len(), 2);
    assert!(!dir.path().join("h_a.prj").exists());
}

#[test]
fn a_prj_sidecar_gives_the_crs_when_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let r = raster_f64(
        grid(2, 2, 5.0, 500_000.0, 6_000_010.0),
        &["z"],
        |_, r, c| (r + c) as f64,
    );
    let p = dir.path().join("dem.asc");
    let meta = RasterMeta {
        crs_epsg: Some(26910),
        ..Default::default()
    };
    write_raster(&p, &r, &meta).unwrap();
    let (_, got) = geofield_io::read_raster(&p).unwrap();
    assert_eq!(got.crs_epsg, Some(26910));
    // Without the sidecar, no CRS.
    std::fs::remove_file(dir.path().join("dem.prj")).unwrap();
    assert_eq!(geofield_io::read_raster(&p).unwrap().1.crs_epsg, None);
}
