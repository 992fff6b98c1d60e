#!/usr/bin/env python3
"""geofield's kriging against R's gstat on the same machine, in one run:

- block kriging: 200 x 200 blocks (4 x 4 Gauss points, gstat's default) from 500 samples,
  with the block variance (gstat ``krige(..., block = c(b, b))``);
- kriging with external drift on a 400 x 400 grid from 500 samples (gstat ``z ~ dem``);
- ordinary cokriging, global: ~166 primary + 500 secondary samples onto 200 x 200 nodes, with
  the LMC geofield fitted given to gstat (``gstat()`` with both variables and the cross model);
- 3-D global ordinary kriging onto 100 x 100 x 20 nodes from 500 samples, anisotropic;
- indicator kriging at the three quartiles onto 200 x 200 nodes from 500 samples (gstat
  ``krige(I(z <= t) ~ 1, ...)`` per threshold; geofield ``indicator_krige`` with
  ``correction="none"``, gstat's raw estimates).

All global (every sample in every system), f64, with variances. gstat is timed inside R
(``system.time`` around ``krige``/``predict`` only: no R startup, no CSV I/O); geofield around
the Python call (median of ``--repeat`` after one warm-up), on the CPU and, where
``geofield.info()`` reports one, the GPU. Each case also reports the largest difference of the
predictions from gstat's (relative to the data's scale; the block case differs by ~1e-8 because
gstat stores block-point weights in float32, see python/tests/test_gstat.py).

Usage: ``python python/bench_gstat.py [--json out.json] [--repeat 3]``; needs ``Rscript`` with
gstat (Debian: ``apt-get install r-cran-gstat``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import tempfile
import time

import numpy as np
import pandas as pd

import geofield


def median_time(fn, repeat):
    out = fn()  # warm-up
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts), out


def vgm(structures, nugget):
    f = {"exponential": ("Exp", 1 / 3), "spherical": ("Sph", 1.0)}
    out = f"vgm({float(nugget)!r}, 'Nug', 0)"
    for model, sill, rng, anis in structures:
        a = "" if anis is None else ", anis=c(" + ", ".join(repr(float(v)) for v in anis) + ")"
        name, k = f[model]
        out = f"vgm({float(sill)!r}, '{name}', {float(rng) * k!r}{a}, add.to={out})"
    return out


def run_gstat(tmp, name, script, frames):
    """Run ``script`` (which sets ``secs`` and ``r``) in R; returns (seconds, predictions)."""
    for f, df in frames.items():
        pd.DataFrame(df).to_csv(os.path.join(tmp, f"{name}_{f}.csv"), index=False,
                                float_format="%.17g")
    reads = "".join(f"{f} <- read.csv('{name}_{f}.csv')\n" for f in frames)
    src = ("suppressPackageStartupMessages({library(sp); library(gstat)})\n" + reads + script
           + f"\nwrite.csv(data.frame(pred = pred), '{name}_out.csv', row.names = FALSE)\n"
           f"cat(secs[['elapsed']], file = '{name}_secs.txt')\n")
    path = os.path.join(tmp, f"{name}.R")
    with open(path, "w") as fh:
        fh.write(src)
    r = subprocess.run(["Rscript", path], cwd=tmp, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"gstat {name} failed:\n{r.stderr}")
    with open(os.path.join(tmp, f"{name}_secs.txt")) as fh:
        secs = float(fh.read())
    return secs, pd.read_csv(os.path.join(tmp, f"{name}_out.csv"))["pred"].values


def grid_nodes(ds):
    gx, gy = np.meshgrid(ds["x"].values, ds["y"].values)
    return gx.ravel(), gy.ravel()


def case_block(tmp, backends, repeat):
    rng = np.random.default_rng(1)
    x, y = rng.uniform(0, 1000, (2, 500))
    z = np.sin(x / 150) + np.cos(y / 200) + 0.2 * rng.normal(size=500)
    kw = dict(model="spherical", sill=1.0, range=300.0, nugget=0.1, extent=(0, 0, 1000, 1000),
              cell_size=5.0, block=5.0, variance=True)
    rows = {}
    for be in backends:
        t, ds = median_time(lambda: geofield.krige(x, y, z, backend=be, **kw), repeat)
        rows[be] = (t, ds["value"].values.ravel())
    gx, gy = grid_nodes(ds)
    secs, pred = run_gstat(tmp, "block", f"m <- {vgm([('spherical', 1.0, 300.0, None)], 0.1)}\n"
                           "secs <- system.time(r <- krige(z ~ 1, ~x + y, d, g, model = m, "
                           "block = c(5, 5)))\npred <- r$var1.pred",
                           {"d": dict(x=x, y=y, z=z), "g": dict(x=gx, y=gy)})
    return "block kriging 200x200 (4x4 Gauss) from 500", rows, secs, pred, z


def case_ked(tmp, backends, repeat):
    rng = np.random.default_rng(2)
    h, n = 2.5, 400
    c = (np.arange(n) + 0.5) * h
    dem = 200 + 0.05 * c[None, :] - 0.08 * c[:, None] + 30 * np.sin(c[None, :] / 150) \
        * np.cos(c[:, None] / 110)                             # (y up, x)
    cells = rng.choice(n * n, 500, replace=False)
    x, y, ds_ = c[cells % n], c[cells // n], dem.ravel()[cells]
    z = 0.04 * ds_ + np.sin(x / 200) + 0.2 * rng.normal(size=500)
    kw = dict(model="exponential", sill=0.5, range=400.0, nugget=0.05, extent=(0, 0, 1000, 1000),
              cell_size=h, kind="universal", drift="external",
              external_drift=(dem[::-1], (0, 0, 1000, 1000)), variance=True)
    rows = {}
    for be in backends:
        t, ds = median_time(lambda: geofield.krige(x, y, z, backend=be, **kw), repeat)
        rows[be] = (t, ds["value"].values.ravel())
    gx, gy = grid_nodes(ds)
    gd = dem[::-1].ravel()                                     # row 0 north, as the Dataset
    secs, pred = run_gstat(tmp, "ked", f"m <- {vgm([('exponential', 0.5, 400.0, None)], 0.05)}\n"
                           "secs <- system.time(r <- krige(z ~ dem, ~x + y, d, g, model = m))\n"
                           "pred <- r$var1.pred",
                           {"d": dict(x=x, y=y, z=z, dem=ds_), "g": dict(x=gx, y=gy, dem=gd)})
    return "KED z~dem 400x400 from 500", rows, secs, pred, z


def case_cokrige(tmp, backends, repeat):
    rng = np.random.default_rng(3)
    n = 500
    x, y = rng.uniform(0, 1000, (2, n))
    c = np.sin(x / 160) + np.cos(y / 210)
    a = 5 + c + 0.2 * rng.normal(size=n)
    b = 2 * c + 0.3 * rng.normal(size=n)
    a[np.arange(n) % 3 != 0] = np.nan                          # 167 primary, 500 secondary
    kw = dict(model="spherical", range=[400.0], extent=(0, 0, 1000, 1000), cell_size=5.0,
              variance=True)
    rows = {}
    for be in backends:
        t, ds = median_time(lambda: geofield.cokrige(x, y, {"a": a, "b": b}, backend=be, **kw),
                            repeat)
        rows[be] = (t, ds["a"].values.ravel())
    lmc = json.loads(ds.attrs["lmc"])

    def model(k):
        return vgm([(s["model"], sl[k], s["range"], None)
                    for s, sl in zip(lmc["structures"], lmc["sills"])], lmc["nugget"][k])
    gx, gy = grid_nodes(ds)
    ia = np.isfinite(a)
    secs, pred = run_gstat(tmp, "cok", f"g <- gstat(NULL, 'a', a ~ 1, ~x + y, da, model = {model(0)})\n"
                           f"g <- gstat(g, 'b', b ~ 1, ~x + y, db, model = {model(3)})\n"
                           f"g <- gstat(g, c('a', 'b'), model = {model(1)})\n"
                           "g$set <- list(nocheck = 1)\n"
                           "secs <- system.time(r <- predict(g, p))\npred <- r$a.pred",
                           {"da": dict(x=x[ia], y=y[ia], a=a[ia]), "db": dict(x=x, y=y, b=b),
                            "p": dict(x=gx, y=gy)})
    return "cokriging 167+500 -> 200x200", rows, secs, pred, a[ia]


def case_3d(tmp, backends, repeat):
    rng = np.random.default_rng(4)
    x, y = rng.uniform(0, 1000, (2, 500))
    z = rng.uniform(0, 100, 500)
    v = np.sin(x / 200 + z / 40) + np.cos(y / 250) + 0.2 * rng.normal(size=500)
    anis = (35.0, 10.0, 20.0, 0.5, 0.1)
    kw = dict(model="exponential", sill=1.0, range=600.0, nugget=0.1,
              extent=(0, 0, 0, 1000, 1000, 100), cell_size=10.0, dz=5.0, anisotropy=anis,
              variance=True)
    rows = {}
    for be in backends:
        t, ds = median_time(lambda: geofield.krige3d(x, y, z, v, backend=be, **kw), repeat)
        rows[be] = (t, ds["value"].values.ravel())
    gz, gy, gx = np.meshgrid(ds["z"].values, ds["y"].values, ds["x"].values, indexing="ij")
    secs, pred = run_gstat(tmp, "k3d", f"m <- {vgm([('exponential', 1.0, 600.0, anis)], 0.1)}\n"
                           "secs <- system.time(r <- krige(v ~ 1, ~x + y + z, d, g, model = m))\n"
                           "pred <- r$var1.pred",
                           {"d": dict(x=x, y=y, z=z, v=v),
                            "g": dict(x=gx.ravel(), y=gy.ravel(), z=gz.ravel())})
    return "3-D OK 100x100x20 from 500", rows, secs, pred, v


def case_indicator(tmp, backends, repeat):
    rng = np.random.default_rng(5)
    x, y = rng.uniform(0, 1000, (2, 500))
    z = np.exp(np.sin(x / 170) + np.cos(y / 230) + 0.3 * rng.normal(size=500))
    ts = np.quantile(z, [0.25, 0.5, 0.75])
    kw = dict(sill=0.2, range=350.0, nugget=0.05, extent=(0, 0, 1000, 1000), cell_size=5.0,
              correction="none", variance=True)
    rows = {}
    for be in backends:
        t, ds = median_time(lambda: geofield.indicator_krige(x, y, z, ts, "spherical",
                                                             backend=be, **kw), repeat)
        rows[be] = (t, ds["probability"].values.ravel())
    gx, gy = grid_nodes(ds)
    m = vgm([("spherical", 0.2, 350.0, None)], 0.05)
    script = (f"m <- {m}\nts <- c({', '.join(repr(float(v)) for v in ts)})\n"
              "secs <- system.time(pred <- unlist(lapply(ts, function(t) {\n"
              "  d$i <- as.numeric(d$z <= t)\n"
              "  krige(i ~ 1, ~x + y, d, g, model = m)$var1.pred })))")
    secs, pred = run_gstat(tmp, "ik", script, {"d": dict(x=x, y=y, z=z),
                                                "g": dict(x=gx, y=gy)})
    return "indicator 3 quartiles 200x200 from 500", rows, secs, pred, np.array([0.0, 1.0])


CASES = {"block": case_block, "ked": case_ked, "cokrige": case_cokrige, "3d": case_3d,
         "indicator": case_indicator}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cases", default=",".join(CASES),
                    help=f"comma-separated subset of {','.join(CASES)}")
    args = ap.parse_args()
    info = geofield.info()
    backends = ["cpu"] + (["cuda"] if info["cuda_available"] else [])
    r = subprocess.run(["Rscript", "-e", "cat(as.character(packageVersion('gstat')), "
                        "R.version.string, sep = '|')"], capture_output=True, text=True)
    gstat_version, r_version = r.stdout.split("|")
    results = []
    print(f"{'case':<44} {'gstat s':>9} " + " ".join(f"{be + ' s':>9} {'x':>7}" for be in backends)
          + "  max|diff|/scale")
    with tempfile.TemporaryDirectory() as tmp:
        for case in (CASES[c] for c in args.cases.split(",")):
            name, rows, secs, pred, data = case(tmp, backends, args.repeat)
            scale = max(np.max(np.abs(data)), np.ptp(data))
            row = {"case": name, "gstat_s": secs, "geofield": {}}
            line = f"{name:<44} {secs:9.3f} "
            for be, (t, ours) in rows.items():
                diff = float(np.max(np.abs(ours - pred)) / scale)
                row["geofield"][be] = {"seconds": t, "speedup": secs / t, "max_rel_diff": diff}
                line += f"{t:9.3f} {secs / t:7.1f} "
            line += " " + " ".join(f"{row['geofield'][be]['max_rel_diff']:.1e}" for be in rows)
            print(line, flush=True)
            results.append(row)
    out = {"machine": {"platform": platform.platform(), "processor": platform.processor(),
                       "cpu_count": os.cpu_count(), "geofield": info},
           "gstat": gstat_version, "R": r_version, "repeat": args.repeat,
           "timing": "gstat: system.time(elapsed) around krige/predict inside R; geofield: "
                     "median wall time of the Python call after one warm-up",
           "results": results}
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=2)


if __name__ == "__main__":
    main()
