//! The valid seed files that the mutations start from.

use super::*;

// ---------------------------------------------------------------------------------------------
// Valid seed files.

pub(super) fn unit_rows(n: usize, f: impl Fn(usize, &mut Rng) -> String) -> String {
    let mut rng = Rng::seeded(42);
    (0..n).map(|i| f(i, &mut rng)).collect()
}

pub(super) fn stand_csv() -> Vec<u8> {
    let names = [
        "subalpine_fir",
        "hybrid_spruce",
        "lodgepole_pine",
        "Trembling_Aspen",
    ];
    let rows = unit_rows(24, |i, r| {
        format!(
            "{:.2},{:.2},{:.1},{}\n",
            r.unit() * 100.0,
            r.unit() * 100.0,
            5.0 + r.unit() * 40.0,
            names[i % names.len()]
        )
    });
    format!("x_m,y_m,dbh_cm,species\n{rows}").into_bytes()
}

pub(super) fn samples_csv() -> Vec<u8> {
    let rows = unit_rows(24, |i, r| {
        format!(
            "w{i},{:.3},{:.3},{:.4},{}\n",
            r.unit() * 1000.0,
            r.unit() * 1000.0,
            r.unit() * 10.0,
            if i % 5 == 0 {
                "NA".to_string()
            } else {
                format!("{:.2}", r.unit())
            }
        )
    });
    format!("id,x,y,depth,porosity\n{rows}").into_bytes()
}

pub(super) fn stations_csv() -> Vec<u8> {
    let rows = unit_rows(8, |i, r| {
        format!(
            "s{i},{:.1},{:.1},{:.1},{:.2},{:.1},{}\n",
            r.unit() * 300.0,
            r.unit() * 300.0,
            2.0 + r.unit() * 10.0,
            r.unit() * 12.0,
            r.unit() * 360.0,
            ["", "D", "e", "A"][i % 4]
        )
    });
    format!("id,x_m,y_m,height_agl_m,speed_m_per_s,direction_deg,stability\n{rows}").into_bytes()
}

pub(super) fn points_csv() -> Vec<u8> {
    let rows = unit_rows(40, |_, r| {
        format!("{:.4},{:.4},{:.4}\n", r.unit(), r.unit() * 5.0, r.unit())
    });
    format!("x,y,z\n{rows}").into_bytes()
}

pub(super) fn points_npy(dir: &Path) -> Vec<u8> {
    let mut r = Rng::seeded(7);
    let v: Vec<f64> = (0..40 * 3).map(|_| r.unit() * 100.0).collect();
    let p = dir.join("p.npy");
    geofield_io::write_npy_f64(&p, &[40, 3], &v).unwrap();
    std::fs::read(&p).unwrap()
}

pub(super) fn dem_raster() -> Raster {
    let (cols, rows) = (12, 9);
    let mut r = Rng::seeded(11);
    let z: Vec<f32> = (0..cols * rows)
        .map(|i| {
            if i % 17 == 3 {
                -9999.0
            } else {
                500.0 + (r.unit() * 100.0) as f32
            }
        })
        .collect();
    Raster {
        grid: GridSpec {
            x_min_m: 1000.0,
            y_max_m: 5000.0,
            cell_size_m: 30.0,
            cols,
            rows,
        },
        band_names: vec!["elevation".into()],
        data: RasterData::F32(z),
    }
}

pub(super) fn dem_file(dir: &Path, name: &str) -> Vec<u8> {
    let p = dir.join(name);
    let meta = geofield_io::RasterMeta {
        nodata: Some(-9999.0),
        ..Default::default()
    };
    geofield_io::write_raster(&p, &dem_raster(), &meta).unwrap();
    std::fs::read(&p).unwrap()
}
