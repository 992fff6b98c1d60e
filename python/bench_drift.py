#!/usr/bin/env python3
"""PyKrige's ``specified`` and ``functional`` drifts: geofield's drop-in against PyKrige itself,
in one run, on the same samples and grid.

500 samples; two specified drift variables plus ``regional_linear`` (2-D, a 200 x 200 grid),
one functional drift (2-D, 200 x 200), and a specified drift in 3-D (40 x 40 x 10). PyKrige's
``vectorized`` backend (its ``loop`` backend indexes the specified drift wrongly, see
python/tests/test_pykrige_drift.py). Median of ``--repeat`` after one warm-up, predictions and
variances compared.

Usage: ``python python/bench_drift.py [--repeat 3] [--json out.json]``.
"""

import argparse
import json
import statistics
import time

import numpy as np

import geofield.pykrige as gk


def timed(fn, repeat):
    out = fn()
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts), out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json")
    a = ap.parse_args()
    import pykrige
    rng = np.random.default_rng(7)
    x, y = rng.uniform(0, 100, (2, 500))
    f1 = lambda u, v: np.sin(u / 15.0) * np.cos(v / 20.0)  # noqa: E731
    f2 = lambda u, v: np.hypot(u - 50.0, v - 50.0) / 50.0  # noqa: E731
    z = 2.0 * f1(x, y) + f2(x, y) + 0.01 * x + 0.1 * rng.normal(size=500)
    gx = np.linspace(0, 100, 200)
    gy = np.linspace(0, 100, 200)
    mx, my = np.meshgrid(gx, gy)
    vm = dict(variogram_model="spherical", variogram_parameters=[0.5, 40.0, 0.05])
    rows = []

    def compare(case, make, run):
        res = {}
        for who, mod in (("PyKrige " + pykrige.__version__, pykrige), ("geofield", gk)):
            t, (zz, ss) = timed(lambda: run(make(mod)), a.repeat)
            res[who] = (t, np.asarray(zz), np.asarray(ss))
        (tp, zp, sp), (tg, zg, sg) = res.values()
        dz = float(np.max(np.abs(zg - zp)) / np.max(np.abs(zp)))
        ds = float(np.max(np.abs(sg - sp)) / np.max(np.abs(sp)))
        r = {"case": case, "pykrige_s": tp, "geofield_s": tg, "speedup": tp / tg,
             "max_rel_diff_pred": dz, "max_rel_diff_var": ds}
        print(f"{case:<48} PyKrige {tp:8.3f} s  geofield {tg:7.3f} s  {tp / tg:6.1f}x  "
              f"pred {dz:.1e} var {ds:.1e}", flush=True)
        rows.append(r)

    spec = [f1(x, y), f2(x, y)]
    garr = [f1(mx, my), f2(mx, my)]
    compare("specified x2 + regional_linear, 200x200",
            lambda m: (m.UniversalKriging if m is gk else m.uk.UniversalKriging)(
                x, y, z, drift_terms=["regional_linear", "specified"], specified_drift=spec,
                **vm),
            lambda uk: uk.execute("grid", gx, gy, specified_drift_arrays=garr))
    compare("functional, 200x200",
            lambda m: (m.UniversalKriging if m is gk else m.uk.UniversalKriging)(
                x, y, z, drift_terms=["functional"], functional_drift=[f1], **vm),
            lambda uk: uk.execute("grid", gx, gy))
    zz3 = rng.uniform(0, 20, 500)
    s3 = np.sin(x / 15.0) + zz3 / 20.0
    gz = np.linspace(0, 20, 10)
    g3x, g3y = np.linspace(0, 100, 40), np.linspace(0, 100, 40)
    Z3, Y3, X3 = np.meshgrid(gz, g3y, g3x, indexing="ij")
    a3 = [np.sin(X3 / 15.0) + Z3 / 20.0]
    compare("3-D specified, 40x40x10",
            lambda m: (m.UniversalKriging3D if m is gk else m.uk3d.UniversalKriging3D)(
                x, y, zz3, z + s3, drift_terms=["specified"], specified_drift=[s3], **vm),
            lambda uk: uk.execute("grid", g3x, g3y, gz, specified_drift_arrays=a3))
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"rows": rows, "repeat": a.repeat}, fh, indent=1)


if __name__ == "__main__":
    main()
