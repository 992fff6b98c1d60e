#!/usr/bin/env python3
"""Timings of the Python package against the peers its users would otherwise call, in one run on
one machine (results go to docs/benchmarks.md):

- ``NeighborIndex(p).query(p, k=8)`` on 1e6 uniform 3-D points: geofield (each backend) against
  scipy's ``cKDTree(p).query(p, k=8, workers=-1)`` (tree build included in both).
- ``geofield.pykrige.OrdinaryKriging(...).execute("grid", ...)`` with its variance on 1e6 grid
  nodes from 500 samples against PyKrige's fastest backend ("vectorized" and "C", both timed).
- Radius queries, pairs, pair counts and Ripley's K on 1e6 uniform 2-D points (``--only
  radius``) against scipy's ``cKDTree`` (``query_ball_point`` lists and counts, ``query_pairs``,
  ``count_neighbors``; spatstat's K has no Python peer: scipy's counts give its uncorrected K).
- ``geofield.simulate``: 100 conditional realisations of 1e6 grid nodes from 500 samples
  (``--only simulate``) against GSTools' ``CondSRF`` on the same CPU.
- Kriging with external drift against PyKrige, block kriging, a variogram map and a nested fit
  (``--only peers``).
- The Python overhead: each call's wall time minus the time of the library call inside it
  (``_native`` timed directly with the same arrays).

Usage: ``python python/bench.py [--json out.json] [--repeat 3] [--quick]`` (``--only knn
--knn-dims 2,3 --backends cuda --no-scipy`` for the GPU k-NN alone, in 2-D and 3-D). Medians of
``--repeat`` runs after one warm-up (the warm-up also compiles the GPU kernels once); each
result is freed after its clock stops, as a caller keeps it.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time

import numpy as np

import geofield
from geofield import _native


def median_time(fn, repeat, warmup=True):
    if warmup:
        fn()  # warm-up (GPU kernel compile, page faults)
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn()
        ts.append(time.perf_counter() - t)
        # Freed after the clock stops: a caller keeps the result (freeing 128 MB of fresh pages
        # takes milliseconds, and is not the call's time).
        del result
    return statistics.median(ts)


def knn_rows(n, repeat, backends, dim=3, scipy=True):
    rng = np.random.default_rng(1)
    p = rng.uniform(0, 1000, (n, dim))
    rows = []
    for be in backends:
        whole = median_time(lambda: geofield.NeighborIndex(p, backend=be).query(p, k=8), repeat)
        # The library call NeighborIndex makes for the indexed points themselves (stored path).
        lib = median_time(lambda: _native.knn(p, None, 8, None, False, "auto", None, be, n),
                          repeat)
        rows.append({"case": f"knn {dim}-D n={n} k=8", "who": f"geofield {be}", "seconds": whole,
                     "library_seconds": lib, "python_overhead": (whole - lib) / lib})
    if not scipy:
        return rows
    try:
        from scipy.spatial import cKDTree
    except ImportError:
        return rows
    t = median_time(lambda: cKDTree(p).query(p, k=8, workers=-1), repeat)
    rows.append({"case": f"knn {dim}-D n={n} k=8", "who": "scipy cKDTree workers=-1", "seconds": t})
    return rows


def space_rows(n, repeat, backends, scipy=True):
    """k nearest neighbours in other spaces (issue 20): n uniform 2-D points at unit density in
    a periodic box, Manhattan k=16, Chebyshev k=16, Euclidean k=8 periodic, Euclidean k=256 and
    k=1024 on open axes; every geofield backend against scipy's cKDTree (workers=-1), one
    process, the same points. Each result is checked against scipy's before it is timed."""
    rng = np.random.default_rng(5)
    side = float(np.sqrt(n))
    p = rng.uniform(0, side, (n, 2))
    cases = [
        ("Manhattan k=16 periodic", dict(k=16, p=1), True),
        ("Chebyshev k=16", dict(k=16, p=np.inf), False),
        ("Euclidean k=8 periodic", dict(k=8, p=2), True),
        ("Euclidean k=256", dict(k=256, p=2), False),
        ("Euclidean k=1024, 1e5 queries", dict(k=1024, p=2), False),
    ]
    rows = []

    def row(case, who, fn):
        r = {"case": f"{case} n={n}", "who": who, "seconds": median_time(fn, repeat)}
        print(f"{r['case']:<52} {who:<34} {r['seconds']:9.4f} s", flush=True)
        rows.append(r)

    tree = tree_box = None
    if scipy:
        try:
            from scipy.spatial import cKDTree
            tree, tree_box = cKDTree(p), cKDTree(p, boxsize=side)
        except ImportError:
            print("scipy missing: no cKDTree rows", file=sys.stderr)
    for case, kw, box in cases:
        q = p[: n // 10] if "1e5" in case else p
        want = None
        if tree is not None:
            t = tree_box if box else tree
            want = t.query(q, workers=-1, **kw)
            row(case, "scipy cKDTree (workers=-1)", lambda: t.query(q, workers=-1, **kw))
        for be in backends:
            idx = geofield.NeighborIndex(p, backend=be, boxsize=side if box else None)
            if want is not None:
                got = idx.query(q, **kw)
                same = np.array_equal(got[1], want[1]) and np.allclose(got[0], want[0], rtol=1e-15, atol=0)
                if not same:
                    print(f"{case} {be}: rows differ from scipy's", file=sys.stderr)
            row(case, f"geofield {be}", lambda: idx.query(q, **kw))
    return rows


def radius_rows(n, repeat, backends, scipy=True):
    """Radius queries, pairs and pair counts on n uniform 2-D points at unit density (r = 3:
    ~28 neighbours each), and Ripley's K on n/10 of them (spatstat's default 513 radii: ~1000
    neighbours each), geofield's backends against scipy's cKDTree. Each row is printed as it
    is measured; the slow peer rows are timed once, without a warm-up."""
    rng = np.random.default_rng(3)
    rows = []

    def cloud(m):
        side = float(np.sqrt(m))
        return rng.uniform(0, side, (m, 2)), side

    p, side = cloud(n)
    pk, side_k = cloud(n // 10)
    radii = np.linspace(0, 10, 51)
    k_radii = np.linspace(0, min(side_k / 4, np.sqrt(1000 / np.pi)), 513)
    w = (0.0, 0.0, side_k, side_k)

    def row(case, m, who, fn, reps=repeat, warm=True):
        r = {"case": f"{case} n={m}", "who": who, "seconds": median_time(fn, reps, warm)}
        print(f"{r['case']:<52} {who:<34} {r['seconds']:9.4f} s", flush=True)
        rows.append(r)

    for be in backends:
        idx = geofield.NeighborIndex(p, backend=be)
        row("ball r=3 CSR (within)", n, f"geofield {be}", lambda: idx.within(r=3.0, sort="none"))
        row("ball r=3 lists (query_ball_point)", n, f"geofield {be}",
            lambda: idx.query_ball_point(p, 3.0))
        row("ball r=3 counts", n, f"geofield {be}",
            lambda: idx.query_ball_point(p, 3.0, return_length=True))
        row("pairs r=3 ndarray", n, f"geofield {be}",
            lambda: idx.query_pairs(3.0, output_type="ndarray"))
        row("count_neighbors 51 radii <= 10", n, f"geofield {be}",
            lambda: idx.count_neighbors(idx, radii))
        row("Ripley K 513 radii, none", n // 10, f"geofield {be}",
            lambda: geofield.ripley_k(pk, w, k_radii, "none", backend=be))
        row("Ripley K 513 radii, border+trans+iso", n // 10, f"geofield {be}",
            lambda: geofield.ripley_k(pk, w, k_radii, backend=be))
    if not scipy:
        return rows
    try:
        from scipy.spatial import cKDTree
    except ImportError:
        return rows
    t = cKDTree(p)
    who = "scipy cKDTree workers=-1"
    row("ball r=3 lists (query_ball_point)", n, who,
        lambda: t.query_ball_point(p, 3.0, workers=-1, return_sorted=False), 1, False)
    row("ball r=3 counts", n, who,
        lambda: t.query_ball_point(p, 3.0, workers=-1, return_length=True), 1, False)
    row("pairs r=3 ndarray", n, "scipy cKDTree", lambda: t.query_pairs(3.0, output_type="ndarray"),
        1, False)
    row("count_neighbors 51 radii <= 10", n, "scipy cKDTree", lambda: t.count_neighbors(t, radii),
        1, False)
    tk = cKDTree(pk)
    row("Ripley K 513 radii, none", n // 10, "scipy count_neighbors (K_un only)",
        lambda: tk.count_neighbors(tk, k_radii), 1, False)
    return rows


def krige_rows(nodes_side, samples, repeat, backends, pykrige_backends):
    rng = np.random.default_rng(2)
    x, y = rng.uniform(0, 1000, (2, samples))
    z = np.sin(x / 150) + np.cos(y / 200) + 0.05 * rng.normal(size=samples)
    gx = np.linspace(0.5, 999.5, nodes_side)
    gy = np.linspace(0.5, 999.5, nodes_side)
    params = [1.0, 300.0, 0.05]
    rows = []
    from geofield import pykrige as gk
    ok = gk.OrdinaryKriging(x, y, z, variogram_model="exponential", variogram_parameters=params)
    h = gx[1] - gx[0]
    grid = (gx[0] - h / 2, gy[-1] + h / 2, h, nodes_side, nodes_side)
    for be in backends:
        whole = median_time(lambda: ok.execute("grid", gx, gy, device=be), repeat)
        model, sill, rng_, nug = ok._gf
        lib = median_time(lambda: _native.krige(
            ok.X_ORIG, ok.Y_ORIG, [ok.Z], ["z"], [(model, [sill], [rng_], nug)],
            ("ordinary", None, None, None, None, None, False, None), None, grid, True, "float64",
            be),
            repeat)
        rows.append({"case": f"pykrige grid {nodes_side}x{nodes_side} from {samples} with variance",
                     "who": f"geofield.pykrige {be}", "seconds": whole, "library_seconds": lib,
                     "python_overhead": (whole - lib) / lib})
    try:
        from pykrige.ok import OrdinaryKriging
    except ImportError:
        return rows
    pk = OrdinaryKriging(x, y, z, variogram_model="exponential", variogram_parameters=params)
    for b in pykrige_backends:
        # PyKrige compiles nothing and takes minutes here: one run each, no warm-up.
        t = median_time(lambda: pk.execute("grid", gx, gy, backend=b), 1, warmup=False)
        rows.append({"case": f"pykrige grid {nodes_side}x{nodes_side} from {samples} with variance",
                     "who": f"PyKrige 1.7 backend={b}", "seconds": t})
    return rows


def simulate_rows(side, samples, reals, repeat, backends, gstools_reals, model="exponential"):
    """``reals`` conditional realisations on a side x side grid from ``samples`` wells
    (exponential, range 300 m over 1 km), each backend, then GSTools' ``CondSRF`` (its kriging
    once, then ``gstools_reals`` fields, each timed)."""
    rng = np.random.default_rng(4)
    x, y = rng.uniform(0, 1000, (2, samples))
    z = np.sin(x / 150) + np.cos(y / 200) + 0.05 * rng.normal(size=samples)
    h = 1000.0 / side
    case = f"simulate {reals} x {side}x{side} from {samples}, {model}"
    rows = []
    for be in backends:
        holder = {}

        def call():
            holder["s"] = geofield.simulate(x, y, z, model, 1.0, 300.0, 0.0, n=reals,
                                            seed=1, extent=(0, 0, 1000, 1000), cell_size=h,
                                            backend=be)
            return holder["s"]
        t = median_time(call, repeat)
        a = holder.pop("s").attrs
        row = {"case": case, "who": f"geofield.simulate {be}", "seconds": t,
               "unconditional_seconds": a["seconds_unconditional"],
               "conditioning_seconds": a["seconds_conditioning"],
               "device_seconds": a.get("device_seconds")}
        print(row, flush=True)
        rows.append(row)
    if gstools_reals:
        try:
            import gstools as gs
        except ImportError:
            return rows
        gx = (np.arange(side) + 0.5) * h
        # GSTools' length scales: the exponential's is a third of the practical range, the
        # spherical's is the range itself.
        gmodel = (gs.Spherical(dim=2, var=1.0, len_scale=300.0) if model == "spherical"
                  else gs.Exponential(dim=2, var=1.0, len_scale=100.0))
        krig = gs.krige.Ordinary(gmodel, cond_pos=[x, y], cond_val=z, exact=True)
        srf = gs.CondSRF(krig)
        srf.set_pos((gx, gx), "structured")
        t0 = time.perf_counter()
        srf(seed=0)  # the kriging (kept for the next fields) and the first field
        first = time.perf_counter() - t0
        ts = []
        for i in builtins_range(1, gstools_reals):
            t = time.perf_counter()
            srf(seed=i)
            ts.append(time.perf_counter() - t)
        per = statistics.median(ts) if ts else first
        measured = gstools_reals >= reals
        total = first + (sum(ts) if measured else per * (reals - 1))
        row = {"case": case, "who": f"GSTools {gs.__version__} CondSRF", "seconds": total,
               "first_field_seconds": first, "per_field_seconds": per,
               "fields_timed": gstools_reals,
               "note": "all fields timed" if measured else
                       f"first field (with the kriging) + {reals - 1} x the median of "
                       f"{len(ts)} more fields"}
        print(row, flush=True)
        rows.append(row)
    return rows


builtins_range = range


def peers_rows(side, samples, repeat, backends):
    """Issue 20's kriging additions beside their peers: kriging with external drift (PyKrige's
    ``external_Z``), block kriging (gstat's default 4 x 4 Gauss points; gstat itself is R and
    not run here), a variogram map (numpy's vectorised pair loop, the reference) and a nested
    fit."""
    rng = np.random.default_rng(5)
    x, y = rng.uniform(10, 990, (2, samples))
    gx = 5.0 + 10.0 * np.arange(100)
    dem = 100 + 0.3 * gx[None, :] - 0.1 * gx[:, None] + 20 * np.sin(gx[None, :] / 60)
    z = np.sin(x / 150) + np.cos(y / 200) + 0.05 * rng.normal(size=samples)
    px = np.linspace(10, 990, side)
    kw = dict(variogram_model="exponential",
              variogram_parameters={"sill": 1.05, "range": 300.0, "nugget": 0.05},
              drift_terms=["external_Z"], external_drift=dem, external_drift_x=gx,
              external_drift_y=gx)
    rows = []
    from geofield import pykrige as gk
    case = f"external drift grid {side}x{side} from {samples}"
    ours = gk.UniversalKriging(x, y, z, **kw)
    for be in backends:
        t = median_time(lambda: ours.execute("grid", px, px, device=be), repeat)
        rows.append({"case": case, "who": f"geofield.pykrige {be}", "seconds": t})
    try:
        if NO_PEERS:
            raise ImportError
        from pykrige.uk import UniversalKriging
        pk = UniversalKriging(x, y, z, **kw)
        t = median_time(lambda: pk.execute("grid", px, px), 1, warmup=False)
        rows.append({"case": case, "who": "PyKrige 1.7 external_Z", "seconds": t})
    except ImportError:
        pass
    for be in backends:
        t = median_time(lambda: geofield.krige(
            x, y, z, "exponential", sill=1.0, range=300.0, nugget=0.05,
            extent=(0, 0, 1000, 1000), cell_size=1000 / side, block=1000 / side, backend=be),
            repeat)
        rows.append({"case": f"block kriging (4x4 Gauss) grid {side}x{side} from {samples}",
                     "who": f"geofield {be}", "seconds": t})
    nm = 5000
    mx, my = rng.uniform(0, 1000, (2, nm))
    mz = np.sin(mx / 150) + np.cos(my / 200) + 0.05 * rng.normal(size=nm)
    t = median_time(lambda: geofield.variogram_map(mx, my, mz, cutoff=300.0, width=20.0), repeat)
    rows.append({"case": f"variogram map 31x31 of {nm} samples", "who": "geofield cpu",
                 "seconds": t})

    def numpy_map():
        dx = mx[None, :] - mx[:, None]
        dy = my[None, :] - my[:, None]
        kx, ky = np.round(dx / 20.0), np.round(dy / 20.0)
        keep = (np.abs(kx) <= 15) & (np.abs(ky) <= 15) & ~np.eye(nm, dtype=bool)
        cell = ((15 - ky) * 31 + kx + 15)[keep].astype(np.int64)
        d2 = 0.5 * (mz[None, :] - mz[:, None]) ** 2
        return np.bincount(cell, d2[keep], 961) / np.maximum(np.bincount(cell, None, 961), 1)
    t = median_time(numpy_map, repeat)
    rows.append({"case": f"variogram map 31x31 of {nm} samples", "who": "numpy (vectorised)",
                 "seconds": t})
    t = median_time(lambda: geofield.variogram(x, y, z, lags=15,
                                               model="spherical+exponential"), repeat)
    rows.append({"case": f"nested fit spherical+exponential, {samples} samples",
                 "who": "geofield cpu", "seconds": t})
    rows += krige3d_rows(side, samples, repeat, backends)
    # Cokriging: a third of the sites with the primary, all with a correlated secondary.
    a = z.copy()
    a[np.arange(samples) % 3 != 0] = np.nan
    b = 2 * z + 0.1 * rng.normal(size=samples)
    for be in backends:
        t = median_time(lambda: geofield.cokrige(
            x, y, {"a": a, "b": b}, "spherical", range=400.0, extent=(0, 0, 1000, 1000),
            cell_size=1000 / (side // 2), backend=be), repeat)
        rows.append({"case": f"cokriging (fit.lmc + predict) grid {side // 2}x{side // 2}, "
                             f"{samples // 3} primary + {samples} secondary",
                     "who": f"geofield {be}", "seconds": t})
    return rows


def krige3d_rows(side, samples, repeat, backends):
    """3-D ordinary kriging with variance (PyKrige's OrdinaryKriging3D, vectorised) on a
    side/4 x side/4 x 20 grid, global and with the 16 nearest samples (PyKrige's loop backend
    with n_closest_points)."""
    rng = np.random.default_rng(6)
    x, y = rng.uniform(0, 1000, (2, samples))
    zz = rng.uniform(-100, 0, samples)
    v = np.sin(x / 150) + np.cos(y / 200) + 0.01 * zz + 0.05 * rng.normal(size=samples)
    n = side // 4
    gx = np.linspace(5, 995, n)
    gz = np.linspace(-97.5, -2.5, 20)
    kw = dict(variogram_model="spherical", variogram_parameters=[1.0, 400.0, 0.05],
              anisotropy_scaling_z=5.0)
    from geofield import pykrige as gk
    rows = []
    for local, label in ((None, "global"), (16, "16 nearest")):
        case = f"3-D kriging {n}x{n}x20 grid from {samples}, {label}"
        ours = gk.OrdinaryKriging3D(x, y, zz, v, **kw)
        for be in backends:
            t = median_time(lambda: ours.execute("grid", gx, gx, gz, n_closest_points=local,
                                                 device=be), repeat)
            rows.append({"case": case, "who": f"geofield.pykrige {be}", "seconds": t})
        try:
            if NO_PEERS:
                raise ImportError
            from pykrige.ok3d import OrdinaryKriging3D
        except ImportError:
            continue
        pk = OrdinaryKriging3D(x, y, zz, v, **kw)
        backend = "vectorized" if local is None else "loop"
        t = median_time(lambda: pk.execute("grid", gx, gx, gz, backend=backend,
                                           n_closest_points=local), 1, warmup=False)
        rows.append({"case": case, "who": f"PyKrige 1.7 OK3D {backend}", "seconds": t})
    return rows


# --no-peers: time geofield alone (for sizes the peers would take minutes on).
NO_PEERS = False


def main():
    global NO_PEERS
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--no-peers", action="store_true",
                    help="--only peers: geofield's rows alone")
    ap.add_argument("--peers-side", type=int, help="--only peers: grid side (default 400; "
                    "--quick 200)")
    ap.add_argument("--json")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="1e5 points, 316^2 nodes")
    ap.add_argument("--pykrige-backends", default="vectorized,C")
    ap.add_argument("--only", choices=["knn", "kriging", "radius", "space", "simulate", "peers"], help="run one case")
    ap.add_argument("--knn-dims", default="3",
                    help="point dimensions of the k-NN case, e.g. 2,3 (default 3)")
    ap.add_argument("--backends", help="comma-separated backends (default: cpu and, when "
                    "available, cuda)")
    ap.add_argument("--sim-reals", type=int, default=100, help="realisations of the simulate case")
    ap.add_argument("--sim-model", default="exponential", choices=["exponential", "spherical"],
                    help="variogram model of the simulate case")
    ap.add_argument("--gstools-reals", type=int, default=10,
                    help="GSTools CondSRF fields timed (0: none)")
    ap.add_argument("--no-scipy", action="store_true", help="skip the cKDTree row")
    a = ap.parse_args()
    info = geofield.info()
    backends = ["cpu"] + (["cuda"] if info["cuda_available"] else [])
    if a.backends:
        backends = a.backends.split(",")
    n, side = (100_000, 316) if a.quick else (1_000_000, 1000)
    rows = []
    if a.only in (None, "knn"):
        for dim in (int(d) for d in a.knn_dims.split(",")):
            rows += knn_rows(n, a.repeat, backends, dim, not a.no_scipy)
    if a.only in (None, "radius"):
        rows += radius_rows(n, a.repeat, backends, not a.no_scipy)
    if a.only in (None, "space"):
        rows += space_rows(n, a.repeat, backends, not a.no_scipy)
    if a.only in (None, "kriging"):
        rows += krige_rows(side, 500, a.repeat, backends, a.pykrige_backends.split(","))
    if a.only == "peers":
        NO_PEERS = a.no_peers
        rows += peers_rows(a.peers_side or (200 if a.quick else 400), 500, a.repeat, backends)
    if a.only == "simulate":
        rows += simulate_rows(side, 500, a.sim_reals, a.repeat, backends, a.gstools_reals,
                              a.sim_model)
    out = {"machine": platform.node(), "python": sys.version.split()[0], "geofield": info,
           "rows": rows}
    for r in rows:
        extra = ""
        if "library_seconds" in r:
            extra = f"  (library {r['library_seconds']:.4f} s, Python overhead {100 * r['python_overhead']:.1f} %)"
        print(f"{r['case']:<52} {r['who']:<34} {r['seconds']:9.4f} s{extra}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
