#!/usr/bin/env python3
"""WindNinja and geofield on the same inputs: WRF's output as the first guess, and WindNinja's
diurnal slope flows and non-neutral stability.

Inputs (``make_wrfout.py``): a synthetic wrfout file on WRF's Lambert conformal grid (true
latitudes 30/60, standard longitude 98 W, 40 x 40 points of 4 km centred on 119 W, 45 N,
grid-relative U10/V10 of a known earth-relative wind turning from 225 to 270 degrees across the
domain, two times), and a 20 km x 20 km DEM at 100 m in UTM 11N around the same point (a
Gaussian hill 500 m high; and the same DEM flat).

Cases:

1. **WRF, flat ground**: both fields are their first guess, so each can be scored against the
   truth, the earth-relative wind interpolated at each DEM cell's place on WRF's grid (found with
   WRF's own spherical projection) and turned to UTM's grid north, as both programs write it.
2. **WRF, over the hill**: the two 10 m fields compared cell by cell.
3. **Diurnal**: a domain-average 2 m/s west wind at 10 m over the hill, grass, 2024-06-21 13:00
   America/Los_Angeles, air 30 C, clear sky; each model run with and without ``diurnal_winds``,
   and with ``non_neutral_stability`` too. What the diurnal model adds (the vector difference
   of the 10 m winds) is compared between the two programs: pattern correlation and size.

WindNinja writes GeoTIFFs at full precision; its rasters carry one row (north) and one column
(east) more than the DEM, copies of their neighbours, which are dropped. Directions are relative
to the DEM's grid north in both programs. Wall times are of the whole command, same machine,
same threads, the median of ``--repeat`` runs.

Usage:
    WINDNINJA_CLI=/path/WindNinja_cli WINDNINJA_DATA=/path/windninja/data \\
        python validation/windninja/compare.py [--out-dir target/windninja] [--threads 2] \\
        [--repeat 3]

A stock WindNinja 3.12 built against GDAL >= 3 cannot georeference a wrfout file (GDAL refuses
SetGeoTransform on a read-only netCDF dataset, so WindNinja reports that the weather model grid
does not overlap the DEM); the script hands it the same file with CF x/y coordinates and a grid
mapping that reproduce WindNinja's own georeferencing (``make_wrfout.py --cf-georef``); geofield
reads the plain wrfout file. Needs numpy, netCDF4 and GDAL's Python bindings.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from osgeo import gdal, osr

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_wrfout as M  # noqa: E402

gdal.UseExceptions()
ROOT = Path(__file__).resolve().parents[2]
WRF_NAME = "wrfout_d01_2024-06-21_18:00:00"
DIURNAL = {"date": "2024-06-21", "time": "13:00", "tz": "America/Los_Angeles",
           "air_c": 30.0, "cloud_pct": 0.0}


REPEAT = 1


def run(cmd: list[str], env=None) -> float:
    """Runs `cmd` REPEAT times; the median wall time."""
    times = []
    for _ in range(REPEAT):
        t0 = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True, env=env)
        times.append(time.perf_counter() - t0)
        if p.returncode != 0:
            sys.exit(f"{' '.join(map(str, cmd))} failed ({p.returncode}):\n{p.stdout}\n"
                     f"{p.stderr}")
    return float(np.median(times))


def read(path: Path, shape: tuple[int, int]) -> np.ndarray:
    a = gdal.Open(str(path)).ReadAsArray().astype(np.float64)
    if a.shape == (shape[0] + 1, shape[1] + 1):  # WindNinja's extra north row, east column
        a = a[1:, :-1]
    if a.shape != shape:
        sys.exit(f"{path}: shape {a.shape}, expected {shape}")
    return a


def uv(speed: np.ndarray, direction_from: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    t = np.radians(direction_from)
    return -speed * np.sin(t), -speed * np.cos(t)


def angle_diff(a, b):
    return (a - b + 180.0) % 360.0 - 180.0


def windninja(cfg_keys: dict, wd: Path, threads: int) -> tuple[dict[str, Path], float]:
    cli, data = os.environ.get("WINDNINJA_CLI"), os.environ.get("WINDNINJA_DATA")
    if not cli or not Path(cli).exists() or not data:
        sys.exit("set WINDNINJA_CLI and WINDNINJA_DATA")
    if wd.exists():
        shutil.rmtree(wd)
    out = wd / "out"
    out.mkdir(parents=True)
    keys = {"num_threads": threads, "vegetation": "grass", "output_wind_height": 10.0,
            "units_output_wind_height": "m", "mesh_resolution": 100.0,
            "units_mesh_resolution": "m", "output_speed_units": "mps",
            "write_ascii_output": "false", "write_geotiff_output": "true",
            "write_goog_output": "false", "write_shapefile_output": "false",
            "write_vtk_output": "false", "output_path": out, **cfg_keys}
    cfg = wd / "run.cfg"
    cfg.write_text("".join(f"{k:<28} = {v}\n" for k, v in keys.items()))
    dt = run([cli, str(cfg)], env=dict(os.environ, WINDNINJA_DATA=data))
    vel = sorted(out.glob("*_vel.tif"))
    ang = sorted(out.glob("*_ang.tif"))
    if len(vel) != 1 or len(ang) != 1:
        sys.exit(f"{out}: expected one *_vel.tif and one *_ang.tif, found {vel} {ang}")
    return {"speed": vel[0], "dir": ang[0]}, dt


def geofield(args: list[str], wd: Path, threads: int) -> tuple[dict[str, Path], float]:
    exe = os.environ.get("GEOFIELD_BIN", str(ROOT / "target/release/geofield"))
    wd.mkdir(parents=True, exist_ok=True)
    s, d = wd / "speed.tif", wd / "dir.tif"
    dt = run([exe, "--backend", "cpu", "wind", *args,
              "--vegetation", "grass", "--output-height-m", "10", "--dz-m", "5",
              "--growth", "1.1", "--speed-out", str(s), "--direction-out", str(d)],
             env=dict(os.environ, RAYON_NUM_THREADS=str(threads)))
    return {"speed": s, "dir": d}, dt


def truth_on_dem(dem: Path, wrf: Path, t: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The earth-relative wind of the generator at each DEM cell, bilinear in WRF's index space
    at the cell's place found with WRF's spherical projection, as (speed, direction from)
    relative to the DEM's grid north."""
    tr = np.load(str(wrf) + "_truth.npz")
    ue, ve = tr["UE"][t], tr["VE"][t]
    g = gdal.Open(str(dem))
    x0, h, _, y1, _, _ = g.GetGeoTransform()
    rows, cols = g.RasterYSize, g.RasterXSize
    utm = osr.SpatialReference()
    utm.ImportFromEPSG(32611)
    geo = osr.SpatialReference()
    geo.ImportFromEPSG(4326)
    for s in (utm, geo):
        s.SetAxisMappingStrategy(osr.OAMS_TRADITIONAL_GIS_ORDER)
    to_geo = osr.CoordinateTransformation(utm, geo)
    xs = x0 + (np.arange(cols) + 0.5) * h
    ys = y1 - (np.arange(rows) + 0.5) * h
    X, Y = np.meshgrid(xs, ys)
    pts = np.array(to_geo.TransformPoints(np.c_[X.ravel(), Y.ravel()]))
    lon, lat = pts[:, 0], pts[:, 1]
    # The bearing of UTM's grid north at each cell (clockwise from true north), from a point
    # 1 m to its grid north.
    pn = np.array(to_geo.TransformPoints(np.c_[X.ravel(), Y.ravel() + 1.0]))
    dlon = np.radians(pn[:, 0] - lon) * np.cos(np.radians(lat))
    beta = np.degrees(np.arctan2(dlon, np.radians(pn[:, 1] - lat)))
    xc, yc = M.ll_to_xy(M.CEN_LAT, M.CEN_LON)
    xw, yw = M.ll_to_xy(lat, lon)
    p = (xw - xc) / M.DX + (M.NX - 1) / 2.0
    q = (yw - yc) / M.DY + (M.NY - 1) / 2.0
    i, j = np.floor(p).astype(int), np.floor(q).astype(int)
    s, t_ = p - i, q - j

    def bil(f):
        return (f[j, i] * (1 - s) * (1 - t_) + f[j, i + 1] * s * (1 - t_)
                + f[j + 1, i] * (1 - s) * t_ + f[j + 1, i + 1] * s * t_)

    u, v = bil(ue), bil(ve)
    speed = np.hypot(u, v)
    dirn = (np.degrees(np.arctan2(-u, -v)) - beta) % 360.0
    return speed.reshape(rows, cols), dirn.reshape(rows, cols)


def field_stats(a: dict, b: dict, shape) -> dict:
    sa, sb = read(a["speed"], shape), read(b["speed"], shape)
    da, db = read(a["dir"], shape), read(b["dir"], shape)
    dd = angle_diff(da, db)
    return {"speed_rms_diff": float(np.sqrt(np.mean((sa - sb) ** 2))),
            "speed_mean": [float(sa.mean()), float(sb.mean())],
            "speed_range": [[float(sa.min()), float(sa.max())], [float(sb.min()), float(sb.max())]],
            "speed_corr": float(np.corrcoef(sa.ravel(), sb.ravel())[0, 1]),
            "dir_mean_diff": float(dd.mean()), "dir_rms_diff": float(np.sqrt(np.mean(dd ** 2))),
            "dir_max_abs_diff": float(np.abs(dd).max())}


def increment(with_: dict, without: dict, shape):
    u1, v1 = uv(read(with_["speed"], shape), read(with_["dir"], shape))
    u0, v0 = uv(read(without["speed"], shape), read(without["dir"], shape))
    return u1 - u0, v1 - v0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out-dir", type=Path, default=ROOT / "target/windninja")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=1, help="runs of each command (median time)")
    a = ap.parse_args()
    global REPEAT
    REPEAT = max(1, a.repeat)
    out = a.out_dir.resolve()
    data = out / "data"
    data.mkdir(parents=True, exist_ok=True)
    wrf, wrf_cf = data / WRF_NAME, data / (WRF_NAME + "_cf")
    M.make_wrfout(str(wrf))
    M.make_wrfout(str(wrf_cf), cf_georef=True)
    hill, flat = data / "dem_hill_utm11.tif", data / "dem_flat_utm11.tif"
    M.make_dem(str(hill))
    M.make_dem(str(flat), hill_m=0.0)
    shape = (200, 200)
    report: dict = {"threads": a.threads}

    # 1-2: WRF's output as the first guess.
    wrf_keys = {"initialization_method": "wxModelInitialization",
                "forecast_filename": wrf_cf, "forecast_time": "20240621T180000",
                "time_zone": "America/Los_Angeles", "diurnal_winds": "false"}
    for name, dem in (("flat", flat), ("hill", hill)):
        wn, t_wn = windninja({**wrf_keys, "elevation_file": dem}, out / f"wn_wrf_{name}",
                             a.threads)
        gf, t_gf = geofield(["--dem", str(dem), "--init-grid", str(wrf),
                             "--init-time", "2024-06-21T18:00"], out / f"gf_wrf_{name}",
                            a.threads)
        r = {"seconds": {"windninja": t_wn, "geofield": t_gf},
             "geofield_vs_windninja": field_stats(gf, wn, shape)}
        if name == "flat":
            ts, td = truth_on_dem(flat, wrf)
            for who, f in (("geofield", gf), ("windninja", wn)):
                s, d = read(f["speed"], shape), read(f["dir"], shape)
                dd = angle_diff(d, td)
                r[f"{who}_vs_truth"] = {
                    "speed_max_abs_err": float(np.abs(s - ts).max()),
                    "speed_rms_err": float(np.sqrt(np.mean((s - ts) ** 2))),
                    "dir_mean_err": float(dd.mean()), "dir_max_abs_err": float(np.abs(dd).max())}
        report[f"wrf_{name}"] = r

    # 3: diurnal slope flows and stability, domain average.
    da = {"initialization_method": "domainAverageInitialization", "input_speed": 2.0,
          "input_speed_units": "mps", "input_direction": 270.0, "input_wind_height": 10.0,
          "units_input_wind_height": "m", "time_zone": DIURNAL["tz"], "elevation_file": hill}
    di = {"diurnal_winds": "true", "uni_air_temp": DIURNAL["air_c"], "air_temp_units": "C",
          "uni_cloud_cover": DIURNAL["cloud_pct"], "cloud_cover_units": "percent",
          "year": 2024, "month": 6, "day": 21, "hour": 13, "minute": 0}
    g_da = ["--dem", str(hill), "--speed", "2", "--direction", "270", "--input-height-m", "10"]
    g_di = ["--diurnal", "--date", DIURNAL["date"], "--time", DIURNAL["time"],
            "--time-zone", DIURNAL["tz"], "--air-temp", str(DIURNAL["air_c"]),
            "--cloud-cover", str(DIURNAL["cloud_pct"])]
    runs = {}
    for tag, wk, gk in (("neutral", {"diurnal_winds": "false"}, []),
                        ("diurnal", di, g_di),
                        ("diurnal_stability", {**di, "non_neutral_stability": "true"},
                         [*g_di, "--non-neutral-stability"])):
        wn, t_wn = windninja({**da, **wk}, out / f"wn_{tag}", a.threads)
        gf, t_gf = geofield([*g_da, *gk], out / f"gf_{tag}", a.threads)
        runs[tag] = (wn, gf)
        report[tag] = {"seconds": {"windninja": t_wn, "geofield": t_gf},
                       "geofield_vs_windninja": field_stats(gf, wn, shape)}
    for tag, base in (("diurnal", "neutral"), ("diurnal_stability", "diurnal")):
        (wn1, gf1), (wn0, gf0) = runs[tag], runs[base]
        du_w, dv_w = increment(wn1, wn0, shape)
        du_g, dv_g = increment(gf1, gf0, shape)
        mag_w, mag_g = np.hypot(du_w, dv_w), np.hypot(du_g, dv_g)
        # Pattern correlation of the two increment fields as vectors.
        cw = np.r_[du_w.ravel() - du_w.mean(), dv_w.ravel() - dv_w.mean()]
        cg = np.r_[du_g.ravel() - du_g.mean(), dv_g.ravel() - dv_g.mean()]
        report[f"{tag}_minus_{base}"] = {
            "rms_magnitude": {"windninja": float(np.sqrt(np.mean(mag_w ** 2))),
                              "geofield": float(np.sqrt(np.mean(mag_g ** 2)))},
            "max_magnitude": {"windninja": float(mag_w.max()), "geofield": float(mag_g.max())},
            "mean_vector": {"windninja": [float(du_w.mean()), float(dv_w.mean())],
                            "geofield": [float(du_g.mean()), float(dv_g.mean())]},
            "vector_pattern_corr": float(cw @ cg / np.sqrt((cw @ cw) * (cg @ cg))),
            "rms_difference": float(np.sqrt(np.mean((du_w - du_g) ** 2 + (dv_w - dv_g) ** 2))),
        }
    (out / "report.json").write_text(json.dumps(report, indent=1))
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
