//! WindNinja-style use of the wind library: the point sampler and output resolution against
//! analytic fields, the domain-average first guess with a displaced log profile, WindNinja's
//! station CSV.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use geofield::Backend;
use geofield::wind::{
    self, Levels, Profile, SolveReport, Stability, WindField, WindGrid, WindOptions,
};

mod wind_common;
use wind_common::{hill, plan};

/// A field on flat ground (100 m) whose faces hold u = a + b x + c z, v = e − f y (x, y the face
/// centre, z its elevation above 100 m), w = 0: cell-centred values are the same linear
/// functions at the cell centres (the mean of two faces of a linear function is its value
/// at the centre), so every linear interpolation of them is exact.
fn linear_field() -> (WindField, impl Fn(f64, f64, f64) -> (f64, f64)) {
    let p = plan(7, 5, 20.0);
    let g = WindGrid::new(p, vec![100.0; 35], &Levels::Uniform { nz: 6, dz_m: 8.0 }).unwrap();
    let (rows, cols, nz) = (g.rows(), g.cols(), g.nz);
    let fu = |x: f64, z: f64| 1.0 + 0.01 * x + 0.05 * z;
    let fv = |y: f64, _z: f64| 2.0 - 0.02 * y;
    let mut u = vec![0.0; g.n_u()];
    let mut v = vec![0.0; g.n_v()];
    for k in 0..nz {
        let z = g.z_centre_m(k) - 100.0;
        for row in 0..rows {
            for i in 0..=cols {
                u[(k * rows + row) * (cols + 1) + i] = fu(i as f64 * 20.0, z);
            }
        }
        for r in 0..=rows {
            for col in 0..cols {
                v[(k * (rows + 1) + r) * cols + col] = fv(p.y_max_m - r as f64 * 20.0, z);
            }
        }
    }
    let field = WindField {
        stability: vec![Stability::D; rows * cols],
        w: vec![0.0; g.n_w()],
        grid: g,
        u,
        v,
        ignored_stations: vec![],
        report: SolveReport::default(),
        profile: Profile::Uniform,
        min_height_agl_m: 1.0,
        displacement_m: 0.0,
    };
    (field, move |x: f64, y: f64, h: f64| (fu(x, h), fv(y, h)))
}

#[test]
fn point_sampler_is_exact_on_linear_fields_and_agrees_with_the_columns() {
    let (f, exact) = linear_field();
    // Inside the centres' hull (x 10..130, y 10..90) and at heights between layer centres
    // (4..44 m): trilinear interpolation of a linear field is exact (to rounding, 1e-12 of
    // values ~3).
    for &(x, y, h) in &[
        (10.0, 10.0, 4.0),
        (37.3, 51.9, 13.7),
        (129.9, 89.0, 44.0),
        (75.0, 42.0, 27.1),
    ] {
        let s = wind::sample_point(&f, x, y, h).unwrap().unwrap();
        let (u, v) = exact(x, y, h);
        assert!(
            (s.u - u).abs() < 1e-12 && (s.v - v).abs() < 1e-12,
            "{x} {y} {h}: {s:?}"
        );
        assert_eq!(s.w, 0.0);
        // The bilinear weights sum to 1 to rounding.
        assert!((s.ground_m - 100.0).abs() < 1e-12);
        let (sp, dir) = wind::speed_direction(u, v);
        assert!((s.speed - sp).abs() < 1e-12 && (s.direction - dir).abs() < 1e-9);
    }
    // Outside the grid: none; a bad height: an error.
    assert!(wind::sample_point(&f, -1.0, 50.0, 10.0).unwrap().is_none());
    assert!(wind::sample_point(&f, 50.0, 50.0, 0.0).is_err());
    // At every column centre the point sampler gives the columns' own values (at_height_agl).
    let (speed, _) = wind::at_height_agl(&f, 17.0).unwrap();
    let p = f.grid.plan;
    for row in 0..p.rows {
        for col in 0..p.cols {
            let (x, y) = p.cell_centre(row, col);
            let s = wind::sample_point(&f, x, y, 17.0).unwrap().unwrap();
            assert!((s.speed - speed[row * p.cols + col]).abs() < 1e-12);
        }
    }
}

#[test]
fn output_resolution_samples_cell_centres() {
    let (f, exact) = linear_field();
    // The field's own cell size gives the columns.
    let same = wind::surface(&f, 12.0, Some(20.0)).unwrap();
    assert_eq!(same.plan, f.grid.plan);
    // 140 x 100 m at 30 m: 4 x 3 cells (the last partial ones left out), centres at 15, 45, ...
    let s = wind::surface(&f, 12.0, Some(30.0)).unwrap();
    assert_eq!((s.plan.cols, s.plan.rows, s.plan.cell_size_m), (4, 3, 30.0));
    assert_eq!((s.plan.x_min_m, s.plan.y_max_m), (0.0, 100.0));
    for row in 0..3 {
        for col in 0..4 {
            let (x, y) = s.plan.cell_centre(row, col);
            let (u, v) = exact(x, y, 12.0);
            let (sp, dir) = wind::speed_direction(u, v);
            let i = row * 4 + col;
            assert!((s.speed[i] - sp).abs() < 1e-12, "{x} {y}");
            assert!((s.direction[i] - dir).abs() < 1e-9);
        }
    }
    // Finer: 10 m cells, 14 x 10; near the edges (within half a field cell) the value is the
    // outer column's, clamped, so check the inside only.
    let fine = wind::surface(&f, 12.0, Some(10.0)).unwrap();
    assert_eq!((fine.plan.cols, fine.plan.rows), (14, 10));
    let (x, y) = fine.plan.cell_centre(4, 6);
    let (u, v) = exact(x, y, 12.0);
    assert!((fine.speed[4 * 14 + 6] - u.hypot(v)).abs() < 1e-12);
    assert!(wind::surface(&f, 12.0, Some(500.0)).is_err());
    assert!(wind::surface(&f, 12.0, Some(-1.0)).is_err());
}

#[test]
fn domain_average_with_a_displaced_log_profile_over_flat_ground() {
    // Flat ground: the first guess is divergence-free, so the solve returns it and the wind at
    // every layer centre is the log law written from its formula: U ln((z - d)/z0) /
    // ln((H - d)/z0) with H the input height above the ground (brush: z0 0.43, d 1.8).
    let p = plan(6, 6, 30.0);
    let g = WindGrid::new(p, vec![50.0; 36], &Levels::Uniform { nz: 8, dz_m: 5.0 }).unwrap();
    let veg = wind::Vegetation::Brush;
    let h_in = 10.0 + veg.canopy_height_m();
    let st = wind::domain_average(&p, 7.0, 225.0, h_in);
    assert_eq!(st.id, wind::DOMAIN_AVERAGE_ID);
    let opts = WindOptions {
        profile: Profile::Log {
            roughness_m: veg.roughness_m(),
        },
        displacement_m: veg.displacement_m(),
        ..Default::default()
    };
    let f = wind::compute(&Backend::Cpu, g, &[st], &opts).unwrap();
    let (z0, d) = (0.43f64, 1.8f64);
    for k in 1..8 {
        let z = (k as f64 + 0.5) * 5.0;
        let want = 7.0 * ((z - d) / z0).ln() / ((h_in - d) / z0).ln();
        let (s, dir) = wind::at_height_agl(&f, z).unwrap();
        // Every column the same wind (one station, no radius), from 225 degrees.
        for (sp, di) in s.iter().zip(&dir) {
            assert!((sp - want).abs() < 1e-9, "z {z}: {sp} vs {want}");
            assert!((di - 225.0).abs() < 1e-9);
        }
    }
    // The displacement is refused with another profile, and negative.
    let bad = WindOptions {
        displacement_m: 1.0,
        ..Default::default()
    };
    assert!(wind::check_options(&bad).is_err());
    let bad = WindOptions {
        displacement_m: -1.0,
        ..opts
    };
    assert!(wind::check_options(&bad).is_err());
}

#[test]
fn sampler_follows_the_terrain_on_a_hill() {
    // On a solved hill field, a point at a column centre and at 10 m above the ground gives
    // that column's at_height_agl value, and its ground elevation is the column's.
    let p = plan(12, 10, 30.0);
    let g = WindGrid::new(
        p,
        hill(&p, 40.0, 60.0),
        &Levels::Uniform { nz: 12, dz_m: 8.0 },
    )
    .unwrap();
    let st = wind::domain_average(&p, 5.0, 270.0, 10.0);
    let f = wind::compute(&Backend::Cpu, g, &[st], &WindOptions::default()).unwrap();
    let (speed, dir) = wind::at_height_agl(&f, 10.0).unwrap();
    for (row, col) in [(0, 0), (5, 6), (9, 11), (4, 3)] {
        let (x, y) = p.cell_centre(row, col);
        let s = wind::sample_point(&f, x, y, 10.0).unwrap().unwrap();
        let c = row * p.cols + col;
        assert!((s.speed - speed[c]).abs() < 1e-12 && (s.direction - dir[c]).abs() < 1e-9);
        assert!((s.ground_m - f.grid.terrain_m[c]).abs() < 1e-12);
    }
}

/// As WindNinja writes it: quoted, the brackets hold commas.
const NINJA_HEADER: &str = "\"Station_Name\",\"Coord_Sys(PROJCS,GEOGCS)\",\"Datum(WGS84,NAD83,NAD27)\",\"Lat/YCoord\",\"Lon/XCoord\",\"Height\",\"Height_Units(meters,feet)\",\"Speed\",\"Speed_Units(mph,kph,mps,kts)\",\"Direction(degrees)\",\"Temperature\",\"Temperature_Units(F,C)\",\"Cloud_Cover(%)\",\"Radius_of_Influence\",\"Radius_of_Influence_Units(miles,feet,meters,km)\"";

#[test]
fn windninja_csv_units_projection_and_radius() {
    use geofield::wind::io::read_station_file;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("wx.csv");
    std::fs::write(
        &p,
        format!(
            "{NINJA_HEADER}\n\
             a,PROJCS,WGS84,5198100,728100,20,feet,10,mph,270,70,F,0,-1,miles\n\
             b,GEOGCS,WGS84,46.9,-114.0,10,meters,36,kph,90,70,F,0,2,km\n\
             c,GEOGCS,NAD27,46.9,-114.0,3,meters,1,mps,0,20,C,0,3,miles\n"
        ),
    )
    .unwrap();
    let f = read_station_file(&p, Some(32611)).unwrap();
    assert!(f.windninja);
    let s = &f.stations;
    assert_eq!((s[0].x_m, s[0].y_m), (728_100.0, 5_198_100.0));
    // 20 ft = 6.096 m; 10 mph = 4.4704 m/s; 36 kph = 10 m/s (exact unit definitions).
    assert!((s[0].height_agl_m - 6.096).abs() < 1e-12);
    assert!((s[0].speed_m_per_s - 4.4704).abs() < 1e-12);
    assert!((s[1].speed_m_per_s - 10.0).abs() < 1e-12);
    // (46.9 N, 114 W) on WGS 84 in UTM 11N: (728495.109, 5198421.333) by PROJ (pyproj 3.7).
    assert!((s[1].x_m - 728_495.109).abs() < 0.01 && (s[1].y_m - 5_198_421.333).abs() < 0.01);
    // NAD27: shifted by tens of metres from the WGS 84 point (the datums differ by ~70 m here).
    let shift = (s[2].x_m - s[1].x_m).hypot(s[2].y_m - s[1].y_m);
    assert!((30.0..150.0).contains(&shift), "{shift}");
    // The largest radius of influence: 3 miles.
    assert!((f.radius_m.unwrap() - 3.0 * 1609.344).abs() < 1e-9);
    // Without the DEM's CRS a GEOGCS row is an error naming the file and line.
    let e = read_station_file(&p, None).unwrap_err().to_string();
    assert!(e.contains("wx.csv:3") && e.contains("Coord_Sys"), "{e}");
    // The geofield format is still read (no radius).
    std::fs::write(
        &p,
        "id,x_m,y_m,height_agl_m,speed_m_per_s,direction_deg\ns,1,2,10,3,90\n",
    )
    .unwrap();
    let f = read_station_file(&p, None).unwrap();
    assert!(!f.windninja && f.radius_m.is_none() && f.stations[0].speed_m_per_s == 3.0);
}

#[test]
fn windninja_output_names() {
    use geofield::wind::io::ninja_output_stem;
    let dem = std::path::Path::new("/d/big_butte.tif");
    assert_eq!(
        ninja_output_stem(dem, Some((220.0, 10.0)), 138.2),
        "big_butte_220_10_138m"
    );
    assert_eq!(ninja_output_stem(dem, None, 690.0), "big_butte_point_690m");
}
