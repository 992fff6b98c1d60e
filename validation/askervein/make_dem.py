#!/usr/bin/env python3
"""Askervein Hill DEM from the WAsP .map contours of the IEA Wind Task 31 benchmark.

Input: ``data/askervein/askervein_elevation-roughness.map`` (Zenodo record 4095052, CC BY 4.0).
Output: a float32 GeoTIFF of ground elevation (m above sea level) on a regular grid in the
Askervein project's metric coordinates (the ones of ``askervein_validation1.txt``: RS at
(74300, 20980), HT at (75387, 23735)).

Method (reproducible, no tuning):

1. Parse the WAsP map. A record header is ``elev n`` (height contour), ``z0l z0r n``
   (roughness-change line: no height, skipped) or ``z0l z0r elev n`` (a roughness line that is
   also a height contour, e.g. a loch shore); ``n`` (x, y) pairs follow. The three lines after the
   title are the map's coordinate transform and are all identity (checked).
2. Keep the contour vertices within 1.5 km (``margin_m``) of the output window, drop duplicate
   vertices (closed contours repeat their first point), and interpolate linearly on their
   Delaunay triangulation (``scipy.interpolate.LinearNDInterpolator``) at the cell centres.
   Linear interpolation never overshoots the contours: a summit above its highest closed
   contour stays at that contour's height (a flat top; see the README for the check).
   West of the 0 m coastline the map holds no contour (the Atlantic); sea-level points on the
   map's west edge (x = 70000 m) make the sea 0 m.

The window defaults to 6 km x 6 km at 23.4375 m (256 x 256 cells), x 72200-78200 m,
y 20000-26000 m: the reference mast RS lies 980 m inside its south edge (upwind for the
210-degree runs), the hill top HT 2.7 km inside the south and east edges.

Usage:  python validation/askervein/make_dem.py [--cell-m 23.4375] [--cols 256] [--rows 256]
        [--x0 72200] [--y0 20000] [--out data/askervein/askervein_dem_23m.tif]
Needs numpy, scipy and rasterio (the GeoTIFF writer).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
MAP = ROOT / "data" / "askervein" / "askervein_elevation-roughness.map"


def read_wasp_map(path: Path) -> list[tuple[float, np.ndarray]]:
    """Height contours of a WAsP .map file: a list of (elevation m, (n, 2) array of x, y)."""
    lines = path.read_text().splitlines()
    transform = [float(v) for line in lines[1:4] for v in line.split()]
    # Identity transform: 0 0 0 0 / 1 0 1 0 / 1 0 (see the WAsP map format).
    if transform != [0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0]:
        raise ValueError(f"{path}: non-identity map transform {transform}")
    contours: list[tuple[float, np.ndarray]] = []
    i = 4
    while i < len(lines):
        head = lines[i].split()
        i += 1
        if not head:
            continue
        n = int(head[-1])
        vals: list[float] = []
        while len(vals) < 2 * n:
            vals.extend(float(v) for v in lines[i].split())
            i += 1
        if len(vals) != 2 * n:
            raise ValueError(f"{path}: line {i}: {len(vals)} numbers for {n} points")
        xy = np.asarray(vals).reshape(n, 2)
        if len(head) == 2:  # elev n
            contours.append((float(head[0]), xy))
        elif len(head) == 4:  # z0 left, z0 right, elev, n
            contours.append((float(head[2]), xy))
        elif len(head) != 3:  # z0 left, z0 right, n: roughness only
            raise ValueError(f"{path}: line {i}: unexpected header {head}")
    return contours


def make_dem(
    x0: float, y0: float, cell_m: float, cols: int, rows: int, margin_m: float = 1500.0
) -> np.ndarray:
    """Elevation (rows, cols), row 0 north, at the cell centres of the window."""
    from scipy.interpolate import LinearNDInterpolator

    contours = read_wasp_map(MAP)
    x1, y1 = x0 + cols * cell_m, y0 + rows * cell_m
    pts, zs = [], []
    for z, xy in contours:
        keep = (
            (xy[:, 0] > x0 - margin_m)
            & (xy[:, 0] < x1 + margin_m)
            & (xy[:, 1] > y0 - margin_m)
            & (xy[:, 1] < y1 + margin_m)
        )
        pts.append(xy[keep])
        zs.append(np.full(keep.sum(), z))
    # The Atlantic: west of the 0 m coastline (x ~ 72-73 km) the map has no contour; its
    # area starts at x = 70000 m. Sea-level points along that edge close the triangulation
    # over the sea at 0 m.
    ys = np.arange(y0 - margin_m, y1 + margin_m + 1.0, 250.0)
    pts.append(np.column_stack([np.full(ys.size, 70000.0), ys]))
    zs.append(np.zeros(ys.size))
    p = np.vstack(pts)
    z = np.concatenate(zs)
    # Duplicate vertices (closed contours; touching contours of equal height) confuse Qhull.
    p, idx = np.unique(p, axis=0, return_index=True)
    z = z[idx]
    xc = x0 + (np.arange(cols) + 0.5) * cell_m
    yc = y1 - (np.arange(rows) + 0.5) * cell_m  # row 0 north
    gx, gy = np.meshgrid(xc, yc)
    dem = LinearNDInterpolator(p, z)(gx, gy)
    if not np.all(np.isfinite(dem)):
        raise ValueError("window reaches outside the contours' convex hull")
    return dem.astype(np.float32)


def write_geotiff(path: Path, dem: np.ndarray, x0: float, y_top: float, cell_m: float) -> None:
    """Float32 GeoTIFF, pixel-is-area, no CRS (local project coordinates, see the README)."""
    import rasterio
    from rasterio.transform import from_origin

    rows, cols = dem.shape
    with rasterio.open(
        path,
        "w",
        driver="GTiff",
        width=cols,
        height=rows,
        count=1,
        dtype="float32",
        transform=from_origin(x0, y_top, cell_m, cell_m),
        compress="deflate",
        predictor=3,
    ) as dst:
        dst.write(dem, 1)
        dst.update_tags(
            SOURCE="Askervein WAsP map, Zenodo 10.5281/zenodo.4095052 (CC BY 4.0)",
            METHOD="linear interpolation on the Delaunay triangulation of contour vertices",
            COORDINATES="Askervein project metric x/y (no EPSG CRS; see data/askervein/README.md)",
        )


def bilinear(dem: np.ndarray, x0: float, y_top: float, cell_m: float, x: float, y: float) -> float:
    """Bilinear ground elevation between cell centres at (x, y)."""
    fx = (x - x0) / cell_m - 0.5
    fy = (y_top - y) / cell_m - 0.5
    i, j = int(np.floor(fx)), int(np.floor(fy))
    tx, ty = fx - i, fy - j
    a = dem[j : j + 2, i : i + 2].astype(float)
    return float(
        (1 - ty) * ((1 - tx) * a[0, 0] + tx * a[0, 1]) + ty * ((1 - tx) * a[1, 0] + tx * a[1, 1])
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cell-m", type=float, default=23.4375)
    ap.add_argument("--cols", type=int, default=256)
    ap.add_argument("--rows", type=int, default=256)
    ap.add_argument("--x0", type=float, default=72200.0)
    ap.add_argument("--y0", type=float, default=20000.0)
    ap.add_argument("--out", type=Path, default=ROOT / "data/askervein/askervein_dem_23m.tif")
    ap.add_argument("--check", action="store_true", help="print the mast ground-height check")
    a = ap.parse_args()
    dem = make_dem(a.x0, a.y0, a.cell_m, a.cols, a.rows)
    y_top = a.y0 + a.rows * a.cell_m
    write_geotiff(a.out, dem, a.x0, y_top, a.cell_m)
    print(f"wrote {a.out}: {a.cols} x {a.rows} at {a.cell_m} m, "
          f"{dem.min():.1f}..{dem.max():.1f} m")
    if a.check:
        import csv

        seen = set()
        with open(ROOT / "data/askervein/askervein_validation1.txt") as f:
            diffs = []
            for r in csv.DictReader(f):
                key = (r["X(m)"], r["Y(m)"])
                if key in seen:
                    continue
                seen.add(key)
                x, y, zg = float(r["X(m)"]), float(r["Y(m)"]), float(r["Z(m)"])
                zd = bilinear(dem, a.x0, y_top, a.cell_m, x, y)
                diffs.append(zd - zg)
                print(f"{r['Name']:>12} ground {zg:7.2f} m, DEM {zd:7.2f} m, diff {zd - zg:+6.2f}")
            d = np.array(diffs)
            print(f"masts: mean diff {d.mean():+.2f} m, RMS {np.sqrt((d**2).mean()):.2f} m, "
                  f"max |diff| {np.abs(d).max():.2f} m")


if __name__ == "__main__":
    main()
