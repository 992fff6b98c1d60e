//! Outputs read back by independent readers: one run per command and `geofield demo`, then
//! `tests/readback/readback.py`, which opens every file with GDAL (rasterio), rio-cogeo,
//! netCDF4/xarray, VTK and NumPy and checks georeferencing, COG validity, nodata, band names
//! and units, CF attributes and the grid mapping, and values (see the script).
//!
//! Without python3 or its modules (numpy rasterio rio-cogeo netCDF4 xarray vtk) the test prints
//! a notice and passes, unless `GEOFIELD_REQUIRE_READBACK=1` (set by `.ci/run`) makes it fail.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The binary: `GEOFIELD_BIN`, else cargo's build output, else `.gpu/bin/geofield`.
fn binary() -> PathBuf {
    if let Some(p) = std::env::var_os("GEOFIELD_BIN") {
        return PathBuf::from(p);
    }
    let built = PathBuf::from(env!("CARGO_BIN_EXE_geofield"));
    if built.exists() {
        built
    } else {
        PathBuf::from(".gpu/bin/geofield")
    }
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Run `geofield` in `dir` on the CPU; the run must succeed.
fn run(dir: &Path, args: &[&str]) {
    let o = Command::new(binary())
        .args(args)
        .current_dir(dir)
        .env("GEOFIELD_BACKEND", "cpu")
        .output()
        .expect("run geofield");
    assert!(
        o.status.success(),
        "geofield {}: {}",
        args.join(" "),
        text(&o)
    );
}

const MODULES: &str = "import numpy, rasterio, rio_cogeo, netCDF4, xarray, vtk";

#[test]
fn every_output_reads_back_with_gdal_netcdf_and_vtk() {
    let required = std::env::var("GEOFIELD_REQUIRE_READBACK").is_ok_and(|v| v == "1");
    let probe = Command::new("python3").args(["-c", MODULES]).output();
    let missing = match &probe {
        Err(e) => Some(format!("python3 not found ({e})")),
        // The traceback's last line names the missing module.
        Ok(o) if !o.status.success() => Some(
            text(o)
                .lines()
                .rfind(|l| !l.trim().is_empty())
                .unwrap_or("a module is missing")
                .trim()
                .to_string(),
        ),
        Ok(_) => None,
    };
    if let Some(why) = missing {
        assert!(
            !required,
            "GEOFIELD_REQUIRE_READBACK=1 but the read-back check cannot run: {why}"
        );
        eprintln!(
            "notice: skipping the read-back check of the outputs ({why}); install numpy rasterio \
             rio-cogeo netCDF4 xarray vtk to run it"
        );
        return;
    }

    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    // The grids and CRS here are repeated as expectations at the top of readback.py.
    let ext = "500000,5200000,500100,5200100";
    let wells_ext = "500000,5200000,501000,5201000";
    run(
        d,
        &[
            "synth",
            "terrain",
            "--kind",
            "gaussian-hill",
            "--out",
            "dem.tif",
            "--stations",
            "st.csv",
            "--cols",
            "24",
            "--rows",
            "20",
            "--cell-size-m",
            "30",
            "--height-m",
            "80",
            "--station-count",
            "3",
            "--x-min-m",
            "500000",
            "--y-min-m",
            "5200000",
            "--crs",
            "EPSG:32633",
        ],
    );
    for out in ["wind.nc", "wind.vti", "wind.npz"] {
        run(
            d,
            &[
                "wind",
                "--dem",
                "dem.tif",
                "--stations",
                "st.csv",
                "--out",
                out,
                "--nz",
                "16",
                "--dz-m",
                "10",
                "--speed-out",
                "wind_speed.tif",
                "--direction-out",
                "wind_dir.tif",
                "-q",
            ],
        );
    }
    // The same DEM as ESRI ASCII: its .prj carries the CRS to the wind outputs.
    run(
        d,
        &[
            "synth",
            "terrain",
            "--kind",
            "gaussian-hill",
            "--out",
            "dem_asc.asc",
            "--cols",
            "24",
            "--rows",
            "20",
            "--cell-size-m",
            "30",
            "--height-m",
            "80",
            "--x-min-m",
            "500000",
            "--y-min-m",
            "5200000",
            "--crs",
            "EPSG:32633",
        ],
    );
    run(
        d,
        &[
            "wind",
            "--dem",
            "dem_asc.asc",
            "--stations",
            "st.csv",
            "--nz",
            "16",
            "--dz-m",
            "10",
            "--speed-out",
            "wind_speed_from_asc.tif",
            "-q",
        ],
    );
    run(
        d,
        &[
            "synth",
            "forest",
            "--trees",
            "300",
            "--extent",
            ext,
            "--seed",
            "3",
            "--out",
            "trees.csv",
            "--species-out",
            "species.toml",
        ],
    );
    for out in ["seeds.tif", "seeds.asc", "seeds.npy"] {
        run(
            d,
            &[
                "disperse",
                "--trees",
                "trees.csv",
                "--species",
                "species.toml",
                "--extent",
                ext,
                "--cell-size-m",
                "2",
                "--out",
                out,
                "--crs",
                "EPSG:32633",
                "-q",
            ],
        );
    }
    // The same seed map with Zstandard tiles, and a Zstandard DEM that `wind` reads back.
    run(
        d,
        &[
            "disperse",
            "--trees",
            "trees.csv",
            "--species",
            "species.toml",
            "--extent",
            ext,
            "--cell-size-m",
            "2",
            "--out",
            "seeds_zstd.tif",
            "--crs",
            "EPSG:32633",
            "--compress",
            "zstd",
            "-q",
        ],
    );
    run(
        d,
        &[
            "synth",
            "terrain",
            "--kind",
            "gaussian-hill",
            "--out",
            "dem_zstd.tif",
            "--cols",
            "24",
            "--rows",
            "20",
            "--cell-size-m",
            "30",
            "--height-m",
            "80",
            "--x-min-m",
            "500000",
            "--y-min-m",
            "5200000",
            "--crs",
            "EPSG:32633",
            "--compress",
            "zstd",
        ],
    );
    run(
        d,
        &[
            "wind",
            "--dem",
            "dem_zstd.tif",
            "--stations",
            "st.csv",
            "--nz",
            "16",
            "--dz-m",
            "10",
            "--speed-out",
            "wind_speed_from_zstd.tif",
            "-q",
        ],
    );
    run(
        d,
        &[
            "synth",
            "wells",
            "--wells",
            "25",
            "--surfaces",
            "2",
            "--extent",
            wells_ext,
            "--out",
            "wells.csv",
        ],
    );
    // Local kriging with a radius that leaves nodes without samples (NaN).
    for (out, var) in [
        ("krige.tif", "krige_var.tif"),
        ("krige.asc", "krige_var.asc"),
    ] {
        run(
            d,
            &[
                "krige",
                "--samples",
                "wells.csv",
                "--values",
                "s01,s02",
                "--extent",
                wells_ext,
                "--cell-size-m",
                "50",
                "--fit",
                "exponential",
                "--neighbors",
                "8",
                "--radius",
                "120",
                "--out",
                out,
                "--variance",
                var,
                "--crs",
                "EPSG:32633",
                "--units",
                "m",
                "-q",
            ],
        );
    }
    run(
        d,
        &[
            "knn",
            "--points",
            "wells.csv",
            "--k",
            "4",
            "--out",
            "knn.npy",
        ],
    );
    run(
        d,
        &[
            "flock",
            "--agents",
            "50",
            "--steps",
            "5",
            "--out",
            "flock.npy",
            "--quiet",
        ],
    );
    run(
        d,
        &[
            "variogram",
            "--samples",
            "wells.csv",
            "--values",
            "s01",
            "--model",
            "exponential",
            "--json",
            "variogram.json",
            "--map-width",
            "100",
            "--map",
            "varmap.tif",
        ],
    );
    // The forest: 4 years on the dispersal test's stand and grid, densities on 2 m cells.
    run(
        d,
        &[
            "forest",
            "--trees",
            "trees.csv",
            "--species",
            "species.toml",
            "--extent",
            ext,
            "--cell-size-m",
            "2",
            "--years",
            "4",
            "--counts",
            "forest_counts.csv",
            "--density",
            "forest_density.nc",
            "--crs",
            "EPSG:32633",
            "-q",
        ],
    );
    // 3-D kriging of values at three depths of the wells: NetCDF and VTK image data.
    let wells = std::fs::read_to_string(d.join("wells.csv")).unwrap();
    let mut w3 = String::from("x,y,z,v\n");
    for (i, line) in wells.lines().skip(1).enumerate() {
        let f: Vec<&str> = line.split(',').collect();
        let (x, y) = (f[1], f[2]);
        for (k, z) in [-30.0, -15.0, -2.0].iter().enumerate() {
            w3 += &format!("{x},{y},{z},{}\n", (i * 3 + k) as f64 * 0.1 + z * 0.01);
        }
    }
    std::fs::write(d.join("wells3d.csv"), w3).unwrap();
    for out in ["krige3d.nc", "krige3d.vti"] {
        run(
            d,
            &[
                "krige3d",
                "--samples",
                "wells3d.csv",
                "--value",
                "v",
                "--model",
                "spherical",
                "--sill",
                "1",
                "--range",
                "600",
                "--extent",
                "500000,5200000,-40,501000,5201000,0",
                "--cell-size-m",
                "50",
                "--dz-m",
                "10",
                "--anisotropy",
                "0,0,0,1,0.1",
                "--crs",
                "EPSG:32633",
                "--units",
                "%",
                "--out",
                out,
                "-q",
            ],
        );
    }
    run(d, &["demo", "--out", "demo", "--backend", "cpu"]);

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/readback/readback.py");
    let o = Command::new("python3")
        .arg(&script)
        .arg(d)
        .arg(d.join("demo"))
        .output()
        .unwrap();
    assert!(o.status.success(), "read-back check failed:\n{}", text(&o));
}
