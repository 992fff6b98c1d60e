#!/usr/bin/env python3
"""Askervein Hill, run TU-03B: geofield's wind field against the mast measurements.

Setup (Taylor & Teunissen 1987; the WEMEP/IEA Task 31 benchmark), nothing fitted to the case:

- terrain: ``data/askervein/askervein_dem_23m.tif`` (6 km x 6 km, 23.4375 m, from the benchmark's
  contours by ``make_dem.py``), block-averaged by ``geofield wind --cell-size-m`` for the coarser
  runs;
- neutral stratification: stability class D, so alpha = 1 (Sherman's equal moduli);
- first guess: a log profile with the campaign's roughness z0 = 0.03 m, terrain-following;
- one station, the reference mast RS (74300, 20980) at 10 m above ground with its measured
  8.9 m/s from 210 degrees (``askervein_validation1.txt``);
- layers: uniform ``dz`` from the lowest ground (the sea, 0 m) to 40 m above the hill top
  (about 165 m), so every mast height on the hill lies in fine layers, then growing by 1.2 per
  layer up to ``--top-m`` (default 3000 m). The hill's perturbation decays with height on the
  scale of its half-width L (200-300 m at half height along line A, from the masts' ground
  heights; linear theory:
  exp(-z/L)), so a top above 10 L leaves it unaffected; ``--depth-study`` checks it.

Sampling: geofield's own point sampler (``geofield wind --points-in/--points-out``, the rule of
every output; ``crates/geofield/src/wind/sample.rs``): at a mast (x, y, height h above ground)
each of the four columns around it is sampled at its own height h above the DEM ground
(terrain-following; with cut cells, at the middle of each cell's open part, following the log
profile below the first sample), then blended bilinearly. FSR = S(x, y, h) / S(RS, h) - 1, with
the model's own speed at RS at the same height, as the measurements are defined.

Outputs (``--out-dir``, default ``target/askervein``): ``askervein_fsr.csv`` (every mast and
height, measured and predicted FSR for every run), ``askervein_fsr.png`` (lines A and AA at
10 m, if matplotlib is installed), and the markdown tables on stdout (pasted into
``docs/validation.md``).

Usage:
    cargo build --release -p geofield-cli
    python validation/askervein/run.py               # the refinement study (a few minutes)
    python validation/askervein/run.py --quick       # one run at 46.875 m
    GEOFIELD_BIN=/path/to/geofield python validation/askervein/run.py --backend cuda

Needs numpy (and matplotlib for the plot).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data" / "askervein"
DEM = DATA / "askervein_dem_23m.tif"
DEM_CELL_M = 23.4375
Z0_M = 0.03  # campaign roughness length (Taylor & Teunissen 1987)
RS_XY = (74300.0, 20980.0)
HT_XY = (75387.0, 23735.0)
CP_XY = (75676.0, 23466.0)
LEE = ["ANE20", "ANE40", "AANE20", "AANE30", "AANE40", "AANE60"]
"""Masts in the lee: downwind of the crest on lines A and AA, 40-90 m below it."""


# ---------------------------------------------------------------------------------------------
# Measurements


@dataclass
class Mast:
    """One measurement: mast name, line, position, height above ground and measured FSR."""

    name: str
    line: str
    x: float
    y: float
    h: float
    fsr: float
    fsr_err: float
    dist_m: float  # signed distance along its line from HT (A, B) or CP (AA), + downwind


def line_of(name: str) -> str:
    """Mast line from its name (the campaign's naming: A line ASW/ANE, AA line AASW/AANE...)."""
    if name.startswith("AASW") or name.startswith("AANE"):
        return "AA"
    if name.startswith("ASW") or name.startswith("ANE"):
        return "A"
    if name.startswith("BNW") or name.startswith("BSE"):
        return "B"
    if name.startswith("HT"):
        return "HT"
    if name.startswith("CP"):
        return "CP"
    return "RS"


def read_masts() -> list[Mast]:
    """Measured FSR of run TU-03B, one row per distinct (name, height); -999 rows dropped."""
    out: list[Mast] = []
    seen: set[tuple[str, float]] = set()
    # Unit vectors along the lines (ASW85 -> ANE40 for A, AASW70 -> AANE60 for AA, BNW20 ->
    # BSE170 for B), so distances are signed + towards the NE (downwind of 210 deg) or SE.
    ends = {"A": ((74813, 23122), (75661, 24017)), "AA": ((75208, 22968), (76073, 23886)),
            "B": ((75243, 23875), (76636, 22585))}
    with open(DATA / "askervein_validation1.txt") as f:
        for r in csv.DictReader(f):
            name = r["Name"].strip()
            fsr = float(r["FSR"])
            if fsr == -999:
                continue
            h = float(r["H(m)"])
            if (name, h) in seen:
                continue
            seen.add((name, h))
            x, y = float(r["X(m)"]), float(r["Y(m)"])
            line = line_of(name)
            lo, hi = float(r["FSRmin"]), float(r["FSRmax"])
            err = max(lo, hi) if lo != -999 else float("nan")
            dist = 0.0
            if line in ends:
                (x0, y0), (x1, y1) = ends[line]
                ox, oy = CP_XY if line == "AA" else HT_XY
                n = math.hypot(x1 - x0, y1 - y0)
                dist = ((x - ox) * (x1 - x0) + (y - oy) * (y1 - y0)) / n
            out.append(Mast(name, line, x, y, h, fsr, err, dist))
    return out


# ---------------------------------------------------------------------------------------------
# Running geofield


def geofield_bin() -> str:
    """The geofield binary: $GEOFIELD_BIN or target/release/geofield."""
    b = os.environ.get("GEOFIELD_BIN") or str(ROOT / "target" / "release" / "geofield")
    if not Path(b).exists():
        sys.exit(f"no geofield binary at {b}: run `cargo build --release -p geofield-cli`")
    return b


def levels(dz_m: float, fine_top_m: float, top_m: float, growth: float = 1.2) -> list[float]:
    """Layer tops above the lowest ground: uniform dz to fine_top_m, then growing to top_m."""
    tops = [dz_m * i for i in range(1, int(math.ceil(fine_top_m / dz_m)) + 1)]
    d = dz_m
    while tops[-1] < top_m:
        d *= growth
        tops.append(tops[-1] + d)
    return [round(t, 3) for t in tops]


@dataclass
class Run:
    """One model configuration."""

    label: str
    cell_m: float
    dz_m: float
    top_m: float = 3000.0
    fine_top_m: float = 165.0  # hill top 124 m above the sea + 40 m
    dem: Path = DEM
    alpha: float | None = None  # None: from the stability class (D: 1)
    terrain: str = "cut"  # geofield's default for Sherman; "stairs" for comparison


def run_geofield(run: Run, work: Path, masts: list[Mast], backend: str) -> tuple[np.ndarray, dict]:
    """Run `geofield wind` for `run`, sampling every mast and RS at every mast height; returns
    the horizontal speeds (the masts, then RS at each mast's height) and the --json summary."""
    work.mkdir(parents=True, exist_ok=True)
    stations = work / "rs_station.csv"
    stations.write_text(
        "id,x_m,y_m,height_agl_m,speed_m_per_s,direction_deg,stability\n"
        f"RS,{RS_XY[0]},{RS_XY[1]},10,8.895,210,D\n"
    )
    points_in = work / "masts.csv"
    with open(points_in, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "x_m", "y_m", "height_agl_m"])
        for i, m in enumerate(masts):
            w.writerow([f"m{i}", m.x, m.y, m.h])
        for i, m in enumerate(masts):
            w.writerow([f"rs{i}", RS_XY[0], RS_XY[1], m.h])
    points_out = work / f"{run.label}_points.csv"
    summary = work / f"{run.label}.json"
    cmd = [
        geofield_bin(), "--quiet", "--backend", backend, "--json", str(summary), "wind",
        "--dem", str(run.dem), "--stations", str(stations),
        "--cell-size-m", str(run.cell_m),
        "--levels-m", ",".join(str(t) for t in levels(run.dz_m, run.fine_top_m, run.top_m)),
        "--model", "sherman", "--solver", "mgcg", "--tolerance", "1e-6",
        "--profile", "log", "--roughness-m", str(Z0_M), "--stability", "D",
        "--terrain", run.terrain,
        "--points-in", str(points_in), "--points-out", str(points_out),
    ]
    if run.alpha is not None:
        cmd[-4:-4] = ["--alpha", str(run.alpha)]
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"geofield failed ({p.returncode}):\n{' '.join(cmd)}\n{p.stderr}")
    info = json.loads(summary.read_text())
    info["wall_s"] = time.time() - t0
    info["cmd"] = " ".join(cmd)
    with open(points_out) as f:
        rows = list(csv.DictReader(f))
    if len(rows) != 2 * len(masts) or not all(r["inside"] == "1" for r in rows):
        sys.exit(f"{points_out}: expected {2 * len(masts)} points inside the grid")
    return np.array([float(r["speed"]) for r in rows]), info


# ---------------------------------------------------------------------------------------------
# Scores


def predicted_fsr(speeds: np.ndarray, masts: list[Mast]) -> np.ndarray:
    """FSR = S(mast, h) / S(RS, h) - 1 for every mast, from `run_geofield`'s speeds."""
    n = len(masts)
    return speeds[:n] / speeds[n:] - 1.0


def scores(masts: list[Mast], pred: np.ndarray) -> dict:
    """Hill top, RMS along A and AA at 10 m, the lee; measured values alongside."""
    def sel(cond):
        return np.array([i for i, m in enumerate(masts) if cond(m)], dtype=int)

    meas = np.array([m.fsr for m in masts])
    ht = sel(lambda m: m.name == "HT" and m.h == 10)[0]
    cp = sel(lambda m: m.name == "CP (FRG_t)" and m.h == 10)[0]
    a = sel(lambda m: m.line in ("A", "HT") and m.h == 10 and not m.name.startswith("HT ("))
    aa = sel(lambda m: (m.line == "AA" or m.name == "CP (FRG_t)") and m.h == 10)
    b = sel(lambda m: (m.line == "B" or m.name == "HT (10m_t)") and m.h == 10)
    lee = sel(lambda m: m.name in LEE and m.h == 10)
    ht_prof = sel(lambda m: m.name == "HT" and m.h != 10)

    def rms(ix):
        return float(np.sqrt(np.mean((pred[ix] - meas[ix]) ** 2)))

    return {
        "ht": (float(pred[ht]), float(meas[ht])),
        "cp": (float(pred[cp]), float(meas[cp])),
        "rms_a": rms(a), "rms_aa": rms(aa), "rms_b": rms(b), "rms_ht_profile": rms(ht_prof),
        "lee": (float(pred[lee].mean()), float(meas[lee].mean())),
        "lee_min": (float(pred[lee].min()), float(meas[lee].min())),
        "n_a": len(a), "n_aa": len(aa), "n_b": len(b),
    }


# ---------------------------------------------------------------------------------------------


def plot(masts: list[Mast], preds: dict[str, np.ndarray], path: Path) -> bool:
    """Lines A, AA and B at 10 m: measured (with error bars) and predicted FSR against
    distance."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, axes = plt.subplots(1, 3, figsize=(16, 4), sharey=True)
    for ax, line, ref, towards in [(axes[0], "A", "HT", "NE"), (axes[1], "AA", "CP", "NE"),
                                   (axes[2], "B", "HT", "SE")]:
        ix = [i for i, m in enumerate(masts) if m.h == 10 and (
            m.line == line or (line == "A" and m.name == "HT")
            or (line == "AA" and m.name == "CP (FRG_t)")
            or (line == "B" and m.name == "HT (10m_t)"))]
        ix.sort(key=lambda i: masts[i].dist_m)
        d = [masts[i].dist_m for i in ix]
        ax.errorbar(d, [masts[i].fsr for i in ix], yerr=[masts[i].fsr_err for i in ix],
                    fmt="ko", label="measured (TU-03B)", capsize=3)
        for label, p in preds.items():
            ax.plot(d, p[ix], "-", marker=".", label=f"geofield {label}")
        ax.axhline(0, color="grey", lw=0.5)
        ax.set_xlabel(f"distance from {ref} along line {line} (m, + towards {towards})")
        ax.set_title(f"Askervein line {line}, 10 m above ground")
    axes[0].set_ylabel("fractional speed-up FSR")
    axes[2].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out-dir", type=Path, default=ROOT / "target" / "askervein")
    ap.add_argument("--quick", action="store_true", help="one run at 46.875 m, dz 5 m")
    ap.add_argument("--depth-study", action="store_true", help="also vary the model top")
    ap.add_argument("--alpha-study", action="store_true",
                    help="sensitivity to alpha (not the setup: neutral is alpha = 1)")
    ap.add_argument("--backend", default="cpu", help="geofield's --backend (cpu, cuda, auto)")
    ap.add_argument("--stairs", action="store_true",
                    help="also every run on stair-step terrain (geofield wind --terrain stairs)")
    ap.add_argument("--fine", action="store_true",
                    help="also 11.7 m cells (a 512 x 512 DEM built by make_dem.py; ~1 min, 5 GB)")
    a = ap.parse_args()

    masts = read_masts()
    if a.quick:
        runs = [Run("47m_dz5", 2 * DEM_CELL_M, 5.0)]
    else:
        runs = [
            Run("94m_dz10", 4 * DEM_CELL_M, 10.0),
            Run("47m_dz5", 2 * DEM_CELL_M, 5.0),
            Run("23m_dz5", DEM_CELL_M, 5.0),
            Run("23m_dz2.5", DEM_CELL_M, 2.5),
        ]
    if a.fine:
        sys.path.insert(0, str(Path(__file__).parent))
        import make_dem

        a.out_dir.mkdir(parents=True, exist_ok=True)
        fine = a.out_dir / "askervein_dem_12m.tif"
        if not fine.exists():
            dem = make_dem.make_dem(72200.0, 20000.0, DEM_CELL_M / 2, 512, 512)
            make_dem.write_geotiff(fine, dem, 72200.0, 26000.0, DEM_CELL_M / 2)
        runs.append(Run("12m_dz2.5", DEM_CELL_M / 2, 2.5, dem=fine))
    if a.alpha_study:
        runs += [Run(f"23m_dz5_alpha{al}", DEM_CELL_M, 5.0, alpha=al) for al in (0.5, 0.7, 2.0)]
    if a.depth_study:
        runs += [Run(f"47m_dz5_top{t}", 2 * DEM_CELL_M, 5.0, top_m=t) for t in (300, 1000, 6000)]

    if a.stairs:
        runs += [Run(f"{r.label}_stairs", r.cell_m, r.dz_m, r.top_m, r.fine_top_m, r.dem, r.alpha,
                     "stairs") for r in runs if "top" not in r.label and "alpha" not in r.label]

    preds: dict[str, np.ndarray] = {}
    infos: dict[str, dict] = {}
    for run in runs:
        speeds, info = run_geofield(run, a.out_dir, masts, a.backend)
        preds[run.label] = predicted_fsr(speeds, masts)
        infos[run.label] = info
        print(f"# {run.label}: {info['wall_s']:.1f} s", file=sys.stderr)

    with open(a.out_dir / "askervein_fsr.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["name", "line", "x_m", "y_m", "height_agl_m", "dist_m", "fsr_measured",
                    "fsr_uncertainty"] + [f"fsr_{k}" for k in preds])
        for i, m in enumerate(masts):
            w.writerow([m.name, m.line, m.x, m.y, m.h, round(m.dist_m, 1), m.fsr, m.fsr_err]
                       + [round(float(p[i]), 4) for p in preds.values()])

    print("| run | cells (x × y × z) | top (m) | hill top HT 10 m | CP 10 m | RMS A (n) "
          "| RMS AA (n) | RMS B (n) | lee mean (min) | RMS HT 1–34 m | solve |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    first = True
    for run in runs:
        s = scores(masts, preds[run.label])
        info = infos[run.label]
        dims = f"{info['cols']} × {info['rows']} × {info['nz']}"
        if first:
            print(f"| measured | | | {s['ht'][1]:.2f} | {s['cp'][1]:.2f} | | | | "
                  f"{s['lee'][1]:.2f} ({s['lee_min'][1]:.2f}) | | |")
            first = False
        print(f"| {run.label} | {dims} | {run.top_m:.0f} | {s['ht'][0]:.2f} | {s['cp'][0]:.2f} "
              f"| {s['rms_a']:.2f} ({s['n_a']}) | {s['rms_aa']:.2f} ({s['n_aa']}) "
              f"| {s['rms_b']:.2f} ({s['n_b']}) "
              f"| {s['lee'][0]:.2f} ({s['lee_min'][0]:.2f}) | {s['rms_ht_profile']:.2f} "
              f"| {info['wall_s']:.0f} s |")

    best = [r.label for r in runs if "top" not in r.label and "alpha" not in r.label
            and r.terrain == "cut"][-1]
    p = preds[best]
    print(f"\nPer mast at 10 m ({best}):\n")
    print("| mast | line | distance (m) | measured FSR | predicted FSR | difference |")
    print("| --- | --- | --- | --- | --- | --- |")
    for i, m in sorted(enumerate(masts), key=lambda t: (t[1].line, t[1].dist_m)):
        if m.h == 10 and m.line in ("A", "AA", "B", "HT", "CP") and not m.name.startswith("HT ("):
            print(f"| {m.name} | {m.line} | {m.dist_m:.0f} | {m.fsr:+.2f} | {p[i]:+.2f} "
                  f"| {p[i] - m.fsr:+.2f} |")
    print(f"\nHill-top profile ({best}):\n")
    print("| height above ground (m) | measured FSR | predicted FSR |")
    print("| --- | --- | --- |")
    for i, m in sorted(enumerate(masts), key=lambda t: t[1].h):
        if m.name == "HT":
            print(f"| {m.h:g} | {m.fsr:+.2f} | {p[i]:+.2f} |")
    shown = {k: preds[k] for k in preds if "top" not in k and "alpha" not in k}
    if plot(masts, shown, a.out_dir / "askervein_fsr.png"):
        print(f"\nwrote {a.out_dir / 'askervein_fsr.png'}", file=sys.stderr)
    print(f"wrote {a.out_dir / 'askervein_fsr.csv'}", file=sys.stderr)
    print(f"command of the {best} run: {infos[best]['cmd']}", file=sys.stderr)


if __name__ == "__main__":
    main()
