//! Writes a small four-band raster in every format, for checking the files with other tools:
//! `cargo run -p geofield-io --example io_demo -- OUT_DIR` writes `demo.tif`, `demo.npy`,
//! `demo_<band>.asc`, `demo_big.tif` (BigTIFF), `demo_f64.tif`, `panels.png`, `blend.png` and `log.png` into OUT_DIR.

use std::path::PathBuf;

use geofield_core::{GridSpec, Raster, RasterData};
use geofield_io::geotiff::BigTiff;
use geofield_io::render::{Layout, RenderOptions, Scale, render_png};
use geofield_io::{RasterMeta, write_raster};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| ".".into()));
    let grid = GridSpec {
        x_min_m: 500_000.0,
        y_max_m: 5_200_000.0,
        cell_size_m: 2.0,
        cols: 300,
        rows: 200,
    };
    let names = [
        "Fagus sylvatica",
        "Abies alba",
        "Picea abies",
        "Acer pseudoplatanus",
    ];
    let centres = [(60.0, 50.0), (220.0, 60.0), (120.0, 150.0), (250.0, 160.0)];
    let mut values = Vec::new();
    for (cx, cy) in centres {
        for r in 0..grid.rows {
            for c in 0..grid.cols {
                let d2 = (c as f64 - cx).powi(2) + (r as f64 - cy).powi(2);
                let v = 0.05 * (-d2 / (2.0 * 35.0f64.powi(2))).exp();
                values.push(if (90..100).contains(&r) && (10..20).contains(&c) {
                    f32::NAN
                } else {
                    v as f32
                });
            }
        }
    }
    let names = names.iter().map(|s| s.to_string()).collect();
    let raster = Raster::new(grid, names, RasterData::F32(values))?;
    let meta = RasterMeta {
        crs_epsg: Some(32633),
        nodata: Some(-9999.0),
        units: Some("seeds/m^2".into()),
        description: Some("geofield io demo".into()),
        ..Default::default()
    };
    for name in ["demo.tif", "demo.npy", "demo.asc"] {
        for p in write_raster(&out.join(name), &raster, &meta)? {
            println!("wrote {}", p.display());
        }
    }
    // The same data as BigTIFF, and as f64 without a CRS and with NaN as nodata.
    let big = out.join("demo_big.tif");
    geofield_io::geotiff::write_geotiff_with(&big, &raster, &meta, BigTiff::Always)?;
    let f64_values = (0..raster.data.len())
        .map(|i| raster.data.get_f64(i))
        .collect();
    let f64_raster = Raster::new(grid, raster.band_names.clone(), RasterData::F64(f64_values))?;
    let nan_meta = RasterMeta {
        nodata: Some(f64::NAN),
        ..Default::default()
    };
    write_raster(&out.join("demo_f64.tif"), &f64_raster, &nan_meta)?;
    println!("wrote demo_big.tif, demo_f64.tif");

    let base = RenderOptions {
        title: "Seed density".into(),
        units: "seeds/m^2".into(),
        ..Default::default()
    };
    render_png(&out.join("panels.png"), &raster, &base)?;
    render_png(
        &out.join("blend.png"),
        &raster,
        &RenderOptions {
            layout: Layout::Blend,
            ..base.clone()
        },
    )?;
    let log = RenderOptions {
        scale: Scale::Log {
            floor_fraction: 1e-4,
        },
        ..base
    };
    render_png(&out.join("log.png"), &raster, &log)?;
    println!("wrote panels.png, blend.png, log.png");
    Ok(())
}
