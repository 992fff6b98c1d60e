#!/usr/bin/env python3
"""Askervein Hill, run TU-03B: WindNinja and geofield side by side, against the masts.

Both models get the same input: the DEM ``data/askervein/askervein_dem_23m.tif``, a
domain-average wind of 8.895 m/s from 210 degrees at 10 m above the ground (RS's measurement),
a neutral log profile with WindNinja's grass roughness z0 = 0.01 m, and the 10 m speed as the
output; at the DEM's cell (23.4375 m) and at twice it (46.875 m).

- WindNinja (``$WINDNINJA_CLI``, data directory ``$WINDNINJA_DATA``): domainAverageInitialization,
  vegetation grass, diurnal off, GeoTIFF output at full precision. WindNinja needs a projected
  CRS, so the DEM is copied with EPSG:32629 assigned (the coordinates stay the project's metric
  x/y, not true UTM; a domain-average run uses only the metric geometry). Its speed raster has
  one row and one column more than the mesh (north and east copies of their neighbours); the
  real values, rows 1.. and columns ..-2, sit at the mesh nodes, the DEM's (or the coarsened
  DEM's) cell centres.
- geofield (``$GEOFIELD_BIN`` or ``target/release/geofield``): ``wind --speed --direction``
  (domain average), Sherman with cut cells, MG-CG to 1e-6, and run.py's layers (uniform 5 m to
  165 m, then growing by 1.2 to 3000 m).

Sampling, the same rule for both: bilinear interpolation of the 10 m speed raster between cell
centres at the mast's (x, y). FSR = S(mast, 10 m) / S(RS, 10 m) - 1 with the model's own speed
at RS (74300, 20980), and the scores of run.py's ``scores()`` at 10 m. geofield's own point
sampler (``--points-in``, terrain-following, the rule run.py uses) is shown alongside as a check
of the raster sampling. Then the two 10 m speed fields are compared cell by cell on their
common grid (the whole domain, and the domain without a 500 m border).

Usage:
    WINDNINJA_CLI=/path/to/WindNinja_cli WINDNINJA_DATA=/path/to/windninja/data \\
        python validation/askervein/windninja.py [--out-dir target/askervein_windninja]

Needs numpy and GDAL's Python bindings (osgeo). Runs /usr/bin/time -v around both programs when
it exists (wall time and maximum RSS); prints markdown tables on stdout.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from osgeo import gdal

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as askervein  # noqa: E402  (validation/askervein/run.py: masts, layers, scores)

gdal.UseExceptions()

SPEED_MPS = 8.895  # RS, 10 m, TU-03B
DIRECTION_DEG = 210.0
HEIGHT_M = 10.0
Z0_GRASS_M = 0.01  # WindNinja's grass
FAKE_EPSG = 32629  # assigned to the DEM copy for WindNinja only
BORDER_M = 500.0


# ---------------------------------------------------------------------------------------------
# Running the programs


def timed(cmd: list[str], log_dir: Path, name: str, env: dict | None = None) -> dict:
    """Run `cmd` (under /usr/bin/time -v when available); stdout/stderr go to log_dir.
    Returns wall seconds, max RSS (MB, or None) and the stdout text."""
    log_dir.mkdir(parents=True, exist_ok=True)
    time_log = log_dir / f"{name}_time.log"
    full = cmd
    if Path("/usr/bin/time").exists():
        full = ["/usr/bin/time", "-v", "-o", str(time_log)] + cmd
    t0 = time.time()
    p = subprocess.run(full, capture_output=True, text=True, env=env)
    wall = time.time() - t0
    (log_dir / f"{name}_stdout.log").write_text(p.stdout)
    (log_dir / f"{name}_stderr.log").write_text(p.stderr)
    if p.returncode != 0:
        sys.exit(f"{name} failed ({p.returncode}):\n{' '.join(cmd)}\n{p.stdout[-2000:]}"
                 f"\n{p.stderr[-2000:]}")
    rss = None
    if time_log.exists():
        t = time_log.read_text()
        m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", t)
        rss = int(m.group(1)) / 1024 if m else None
        m = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)", t)
        if m:
            parts = [float(x) for x in m.group(1).split(":")]
            wall = sum(v * 60 ** (len(parts) - 1 - i) for i, v in enumerate(parts))
    return {"wall_s": wall, "rss_mb": rss, "stdout": p.stdout, "cmd": " ".join(cmd)}


def dem_with_crs(out_dir: Path) -> Path:
    """A copy of the DEM with EPSG:32629 assigned (gdal_translate -a_srs), for WindNinja."""
    dst = out_dir / "askervein_dem_23m_epsg32629.tif"
    if not dst.exists():
        out_dir.mkdir(parents=True, exist_ok=True)
        gdal.Translate(str(dst), str(askervein.DEM), outputSRS=f"EPSG:{FAKE_EPSG}")
    return dst


def run_windninja(cell_m: float, dem: Path, out_dir: Path, threads: int) -> tuple[Path, dict]:
    """WindNinja_cli, domain average; returns its 10 m speed GeoTIFF and the timings."""
    cli = os.environ.get("WINDNINJA_CLI")
    data = os.environ.get("WINDNINJA_DATA")
    if not cli or not Path(cli).exists():
        sys.exit("set WINDNINJA_CLI to the WindNinja_cli binary")
    if not data or not Path(data).is_dir():
        sys.exit("set WINDNINJA_DATA to WindNinja's data directory")
    tag = f"wn_{cell_m:g}m"
    wd = out_dir / tag
    if wd.exists():
        shutil.rmtree(wd)
    wd.mkdir(parents=True)
    cfg = out_dir / f"{tag}.cfg"
    keys = {
        "num_threads": threads,
        "elevation_file": dem,
        "initialization_method": "domainAverageInitialization",
        "time_zone": "Europe/London",
        "input_speed": SPEED_MPS,
        "input_speed_units": "mps",
        "output_speed_units": "mps",
        "input_direction": DIRECTION_DEG,
        "input_wind_height": HEIGHT_M,
        "units_input_wind_height": "m",
        "output_wind_height": HEIGHT_M,
        "units_output_wind_height": "m",
        "vegetation": "grass",
        "diurnal_winds": "false",
        "mesh_resolution": cell_m,
        "units_mesh_resolution": "m",
        "write_ascii_output": "false",
        "write_geotiff_output": "true",
        "write_goog_output": "false",
        "write_shapefile_output": "false",
        "write_farsite_atm": "false",
        "write_vtk_output": "false",
        "output_path": wd,
    }
    cfg.write_text("".join(f"{k:<26} = {v}\n" for k, v in keys.items()))
    env = dict(os.environ, WINDNINJA_DATA=data)
    info = timed([cli, str(cfg)], out_dir, tag, env)
    info["cfg"] = cfg.read_text()
    info["steps"] = {m.group(1): float(m.group(2)) for m in re.finditer(
        r"(\w[\w ]*?) time was ([\d.eE+-]+) seconds", info["stdout"])}
    vel = sorted(wd.glob("*_vel.tif"))
    if len(vel) != 1:
        sys.exit(f"expected one *_vel.tif in {wd}, found {vel}")
    return vel[0], info


def run_geofield(cell_m: float, out_dir: Path, masts: list[askervein.Mast],
                 backend: str) -> tuple[Path, Path, dict]:
    """geofield wind, domain average; returns its 10 m speed GeoTIFF, its point-sampler CSV
    (the 10 m masts, then RS) and the timings."""
    tag = f"gf_{cell_m:g}m"
    wd = out_dir / tag
    wd.mkdir(parents=True, exist_ok=True)
    points_in = wd / "masts_10m.csv"
    with open(points_in, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "x_m", "y_m", "height_agl_m"])
        for i, m in enumerate(masts):
            w.writerow([f"m{i}", m.x, m.y, HEIGHT_M])
        w.writerow(["RS", *askervein.RS_XY, HEIGHT_M])
    points_out = wd / "points.csv"
    speed_out, dir_out, summary = wd / "s.tif", wd / "d.tif", wd / "r.json"
    tops = askervein.levels(5.0, 165.0, 3000.0)  # run.py's layers (its 23 m and 47 m runs)
    cmd = [
        askervein.geofield_bin(), "--quiet", "--backend", backend, "--json", str(summary),
        "wind", "--dem", str(askervein.DEM),
        "--speed", str(SPEED_MPS), "--direction", str(DIRECTION_DEG),
        "--input-height-m", str(HEIGHT_M), "--profile", "log", "--roughness-m", str(Z0_GRASS_M),
        "--stability", "D", "--cell-size-m", str(cell_m),
        "--levels-m", ",".join(str(t) for t in tops),
        "--model", "sherman", "--solver", "mgcg", "--tolerance", "1e-6", "--terrain", "cut",
        "--speed-out", str(speed_out), "--direction-out", str(dir_out),
        "--output-height-m", str(HEIGHT_M),
        "--points-in", str(points_in), "--points-out", str(points_out),
    ]
    info = timed(cmd, out_dir, tag)
    s = json.loads(summary.read_text())
    info["grid"] = f"{s['cols']} × {s['rows']} × {s['nz']}"
    info["iterations"] = s["report"]["iterations"]
    info["solve_s"] = s["report"]["solve_seconds"]
    return speed_out, points_out, info


# ---------------------------------------------------------------------------------------------
# Rasters


class Raster:
    """A north-up raster: values and the x, y of its cell centres."""

    def __init__(self, a: np.ndarray, x0: float, y_top: float, dx: float):
        self.a, self.x0, self.y_top, self.dx = a, x0, y_top, dx

    @classmethod
    def read(cls, path: Path) -> "Raster":
        ds = gdal.Open(str(path))
        gt = ds.GetGeoTransform()
        if gt[2] != 0 or gt[4] != 0 or abs(gt[1] + gt[5]) > 1e-9:
            sys.exit(f"{path}: not a north-up raster with square cells")
        a = ds.GetRasterBand(1).ReadAsArray().astype(np.float64)
        return cls(a, gt[0], gt[3], gt[1])

    def windninja_trim(self) -> "Raster":
        """Drop WindNinja's extra north row and east column (copies of their neighbours)."""
        a = self.a
        if not (np.array_equal(a[0], a[1]) and np.array_equal(a[:, -1], a[:, -2])):
            print("warning: WindNinja's north row / east column are not copies", file=sys.stderr)
        return Raster(a[1:, :-1], self.x0, self.y_top - self.dx, self.dx)

    def bilinear(self, x: float, y: float) -> float:
        """Bilinear between cell centres (clamped to the outermost centres)."""
        rows, cols = self.a.shape
        fx = (x - self.x0) / self.dx - 0.5
        fy = (self.y_top - y) / self.dx - 0.5
        fx = min(max(fx, 0.0), cols - 1.0)
        fy = min(max(fy, 0.0), rows - 1.0)
        j0, i0 = min(int(fx), cols - 2), min(int(fy), rows - 2)
        tx, ty = fx - j0, fy - i0
        a = self.a
        return float((1 - ty) * ((1 - tx) * a[i0, j0] + tx * a[i0, j0 + 1])
                     + ty * ((1 - tx) * a[i0 + 1, j0] + tx * a[i0 + 1, j0 + 1]))


def fsr_10m(r: Raster, masts: list[askervein.Mast]) -> np.ndarray:
    """FSR at 10 m for every mast (NaN at other heights), relative to RS at 10 m."""
    rs = r.bilinear(*askervein.RS_XY)
    return np.array([r.bilinear(m.x, m.y) / rs - 1.0 if m.h == HEIGHT_M else math.nan
                     for m in masts])


def fsr_points(points_csv: Path, masts: list[askervein.Mast]) -> np.ndarray:
    """FSR at 10 m from geofield's point sampler (rows m<i>, then RS)."""
    with open(points_csv) as f:
        rows = {r["id"]: r for r in csv.DictReader(f)}
    rs = float(rows["RS"]["speed"])
    return np.array([float(rows[f"m{i}"]["speed"]) / rs - 1.0 if m.h == HEIGHT_M else math.nan
                     for i, m in enumerate(masts)])


def field_stats(gf: Raster, wn: Raster, border_cells: int) -> dict:
    """geofield minus WindNinja over the common grid (optionally without a border)."""
    if gf.a.shape != wn.a.shape or abs(gf.x0 - wn.x0) > 1e-6 or abs(gf.y_top - wn.y_top) > 1e-6:
        sys.exit(f"grids differ: geofield {gf.a.shape} at ({gf.x0}, {gf.y_top}), "
                 f"WindNinja {wn.a.shape} at ({wn.x0}, {wn.y_top})")
    b = border_cells
    g = gf.a[b:gf.a.shape[0] - b, b:gf.a.shape[1] - b].ravel()
    w = wn.a[b:wn.a.shape[0] - b, b:wn.a.shape[1] - b].ravel()
    d = g - w
    return {"n": d.size, "mean": float(d.mean()), "mean_abs": float(np.abs(d).mean()),
            "max_abs": float(np.abs(d).max()), "rms": float(np.sqrt(np.mean(d ** 2))),
            "corr": float(np.corrcoef(g, w)[0, 1]), "gf_mean": float(g.mean()),
            "wn_mean": float(w.mean()), "gf_max": float(g.max()), "wn_max": float(w.max())}


# ---------------------------------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out-dir", type=Path, default=askervein.ROOT / "target" / "askervein_windninja")
    ap.add_argument("--cells", default=f"{askervein.DEM_CELL_M},{2 * askervein.DEM_CELL_M}",
                    help="comma-separated cell sizes (m), multiples of the DEM's 23.4375 m")
    ap.add_argument("--threads", type=int, default=2, help="WindNinja's num_threads")
    ap.add_argument("--backend", default="cpu", help="geofield's --backend")
    a = ap.parse_args()
    a.out_dir = a.out_dir.resolve()
    a.out_dir.mkdir(parents=True, exist_ok=True)

    masts = askervein.read_masts()
    dem = dem_with_crs(a.out_dir)
    cells = [float(c) for c in a.cells.split(",")]

    results = []
    for cell in cells:
        wn_tif, wn_info = run_windninja(cell, dem, a.out_dir, a.threads)
        print(f"# WindNinja {cell:g} m: {wn_info['wall_s']:.1f} s", file=sys.stderr)
        gf_tif, gf_points, gf_info = run_geofield(cell, a.out_dir, masts, a.backend)
        print(f"# geofield {cell:g} m: {gf_info['wall_s']:.1f} s", file=sys.stderr)
        wn = Raster.read(wn_tif).windninja_trim()
        gf = Raster.read(gf_tif)
        results.append({
            "cell": cell, "wn_info": wn_info, "gf_info": gf_info, "wn": wn, "gf": gf,
            "wn_fsr": fsr_10m(wn, masts), "gf_fsr": fsr_10m(gf, masts),
            "gf_pts_fsr": fsr_points(gf_points, masts),
            "stats": [field_stats(gf, wn, 0),
                      field_stats(gf, wn, int(round(BORDER_M / cell)))],
        })

    # Runs -----------------------------------------------------------------------------------
    print("## Runs\n")
    print("| model | cell (m) | grid | wall (s) | max RSS (MB) | solver | solve (s) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in results:
        wi, gi = r["wn_info"], r["gf_info"]
        rss = lambda v: f"{v:.0f}" if v is not None else "?"  # noqa: E731
        nodes = f"{r['wn'].a.shape[1]} × {r['wn'].a.shape[0]} nodes × 20 layers"
        print(f"| WindNinja | {r['cell']:g} | {nodes} | {wi['wall_s']:.1f} | {rss(wi['rss_mb'])} "
              f"| PCG (SSOR), rel. residual 0.1 | {wi['steps'].get('Solver', math.nan):.2f} |")
        print(f"| geofield | {r['cell']:g} | {gi['grid']} cells | {gi['wall_s']:.1f} "
              f"| {rss(gi['rss_mb'])} | MG-CG, {gi['iterations']} it. to 1e-6 "
              f"| {gi['solve_s']:.2f} |")
    print("\nWindNinja's own timings (s):\n")
    steps = list(results[0]["wn_info"]["steps"])
    print("| cell (m) | " + " | ".join(steps) + " |")
    print("| --- |" + " --- |" * len(steps))
    for r in results:
        print(f"| {r['cell']:g} | " + " | ".join(f"{r['wn_info']['steps'].get(k, math.nan):.2f}"
                                                for k in steps) + " |")

    # Scores ---------------------------------------------------------------------------------
    sc = [(r, askervein.scores(masts, r["wn_fsr"]), askervein.scores(masts, r["gf_fsr"]),
           askervein.scores(masts, r["gf_pts_fsr"])) for r in results]
    s0 = sc[0][1]
    cols = []
    for r, swn, sgf, spt in sc:
        cols += [(f"WindNinja {r['cell']:g} m", swn), (f"geofield {r['cell']:g} m", sgf),
                 (f"geofield {r['cell']:g} m (point sampler)", spt)]
    print("\n## Scores at 10 m (FSR; RMS of predicted minus measured FSR)\n")
    print("| score | measured | " + " | ".join(c for c, _ in cols) + " |")
    print("| --- | --- |" + " --- |" * len(cols))
    rows = [
        ("hill top HT", f"{s0['ht'][1]:+.3f}", lambda s: f"{s['ht'][0]:+.3f}"),
        ("CP", f"{s0['cp'][1]:+.3f}", lambda s: f"{s['cp'][0]:+.3f}"),
        (f"RMS line A (n = {s0['n_a']})", "", lambda s: f"{s['rms_a']:.3f}"),
        (f"RMS line AA (n = {s0['n_aa']})", "", lambda s: f"{s['rms_aa']:.3f}"),
        (f"RMS line B (n = {s0['n_b']})", "", lambda s: f"{s['rms_b']:.3f}"),
        ("lee mean", f"{s0['lee'][1]:+.3f}", lambda s: f"{s['lee'][0]:+.3f}"),
        ("lee min", f"{s0['lee_min'][1]:+.3f}", lambda s: f"{s['lee_min'][0]:+.3f}"),
    ]
    for name, meas, fmt in rows:
        print(f"| {name} | {meas} | " + " | ".join(fmt(s) for _, s in cols) + " |")

    # Per mast -------------------------------------------------------------------------------
    print("\n## Per mast at 10 m (FSR, raster bilinear sampling)\n")
    hdr = []
    for r in results:
        hdr += [f"WindNinja {r['cell']:g} m", f"geofield {r['cell']:g} m"]
    print("| mast | line | distance (m) | measured | " + " | ".join(hdr) + " |")
    print("| --- | --- | --- | --- |" + " --- |" * len(hdr))
    for i, m in sorted(enumerate(masts), key=lambda t: (t[1].line, t[1].dist_m)):
        if m.h == HEIGHT_M and m.line in ("A", "AA", "B", "HT", "CP"):
            vals = []
            for r in results:
                vals += [f"{r['wn_fsr'][i]:+.3f}", f"{r['gf_fsr'][i]:+.3f}"]
            print(f"| {m.name} | {m.line} | {m.dist_m:.0f} | {m.fsr:+.3f} | "
                  + " | ".join(vals) + " |")

    # Fields ---------------------------------------------------------------------------------
    print("\n## 10 m speed fields: geofield minus WindNinja (m/s)\n")
    print("| cell (m) | region | cells | mean GF / WN | max GF / WN | mean diff | mean abs diff "
          "| max abs diff | RMS diff | correlation |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in results:
        for region, st in zip(["whole domain", f"without {BORDER_M:g} m border"], r["stats"]):
            print(f"| {r['cell']:g} | {region} | {st['n']} | {st['gf_mean']:.3f} / "
                  f"{st['wn_mean']:.3f} | {st['gf_max']:.3f} / {st['wn_max']:.3f} "
                  f"| {st['mean']:+.3f} | {st['mean_abs']:.3f} | {st['max_abs']:.3f} "
                  f"| {st['rms']:.3f} | {st['corr']:.4f} |")
    rs = [(r["cell"], r["wn"].bilinear(*askervein.RS_XY), r["gf"].bilinear(*askervein.RS_XY))
          for r in results]
    print("\nSpeed at RS, 10 m (m/s; the input is 8.895): "
          + "; ".join(f"{c:g} m: WindNinja {w:.3f}, geofield {g:.3f}" for c, w, g in rs))

    print("\nCommands:", file=sys.stderr)
    for r in results:
        print(f"  {r['wn_info']['cmd']}\n  {r['gf_info']['cmd']}", file=sys.stderr)


if __name__ == "__main__":
    main()
