"""geofield's kriging against R's gstat itself (run through ``Rscript``), on synthetic data with
a fixed seed and on Meuse (``data(meuse)`` from R's sp, read at run time, never stored here).

Each case writes the samples and the prediction locations to CSV, runs gstat on them in a
small R script (``krige``/``predict``), reads gstat's predictions and variances back and compares
them with geofield's (``backend="cpu"``, and ``"cuda"`` where a GPU is usable).

Conventions (README): geofield's variogram ranges are practical ranges; gstat's exponential range
is a/3, its gaussian range a/sqrt(3), the spherical's the same a. 2-D ``anisotropy=(azimuth,
ratio)`` is gstat's ``anis = c(azimuth, ratio)``; 3-D ``anisotropy=(p, q, r, s, t)`` is gstat's
``anis = c(p, q, r, s, t)``.

Tolerance: in every case both programs solve the same kriging system in f64 (gstat: weights
from an LDL'/Cholesky solve per location, lambda' z; geofield: one Cholesky factor and dual
kriging, k' K^-1 z, with a block-elimination for the drift). Two backward-stable f64 solves of
one system differ by ~cond(K) * 1e-16; the systems here have nuggets or block-averaged
covariances with cond(K) <~ 1e5, so ~1e-11 of the values' scale; R's CSV adds 1e-15 (15
significant digits). 1e-9 of max(|value|, data spread) (predictions) and of max(|variance|,
total sill) (variances) leaves two orders of margin, while any convention slip (a range off by
3, an angle's sign, another block discretisation, another neighbourhood) moves them by > 1e-4.
Run with ``-s`` to see the worst difference of every case.

``GEOFIELD_REQUIRE_GSTAT=1`` (CI, after installing r-cran-gstat) turns the skip into a failure.
"""

import json
import os
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest

import geofield

TOL = 1e-9


def _gstat_missing():
    if shutil.which("Rscript") is None:
        return "Rscript not found"
    try:
        r = subprocess.run(["Rscript", "-e", "suppressPackageStartupMessages({library(sp); library(gstat)})"],
                           capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"Rscript failed: {e}"
    return None if r.returncode == 0 else f"R packages sp, gstat not loadable: {r.stderr.strip()}"


_MISSING = _gstat_missing()
if _MISSING is not None:
    if os.environ.get("GEOFIELD_REQUIRE_GSTAT") == "1":
        pytest.fail(f"GEOFIELD_REQUIRE_GSTAT=1 but {_MISSING}", pytrace=False)
    pytest.skip(_MISSING, allow_module_level=True)

R_NAMES = {"exponential": ("Exp", 1 / 3), "spherical": ("Sph", 1.0),
           "gaussian": ("Gau", 1 / np.sqrt(3))}


def vgm(structures, nugget=0.0, anis=None):
    """gstat's ``vgm(...)`` for geofield's [(model, partial sill, practical range)] + nugget."""
    a = "" if anis is None else ", anis=c(" + ", ".join(repr(float(v)) for v in anis) + ")"
    out = f"vgm({float(nugget)!r}, 'Nug', 0)"
    for model, sill, rng in structures:
        name, f = R_NAMES[model]
        out = f"vgm({float(sill)!r}, '{name}', {float(rng) * float(f)!r}{a}, add.to={out})"
    return out


def geo_model(structures):
    """geofield's (model, sill, range) arguments for the same structures."""
    return ("+".join(s[0] for s in structures), [s[1] for s in structures],
            [s[2] for s in structures])


def gstat(tmp_path, script, **frames):
    """Run ``script`` in R with gstat loaded and each frame read from CSV as a data.frame of
    its name; the script leaves its result in the data.frame ``out``, returned."""
    for name, df in frames.items():
        pd.DataFrame(df).to_csv(tmp_path / f"{name}.csv", index=False, float_format="%.17g")
    reads = "".join(f"{n} <- read.csv('{n}.csv')\n" for n in frames)
    src = ("suppressPackageStartupMessages({library(sp); library(gstat)})\n" + reads + script
           + "\nwrite.csv(out, 'out.csv', row.names = FALSE)\n")
    (tmp_path / "case.R").write_text(src)
    r = subprocess.run(["Rscript", "case.R"], cwd=tmp_path, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, f"gstat failed:\n{r.stderr}"
    return pd.read_csv(tmp_path / "out.csv")


def compare(case, ours, theirs, scale, tol=TOL):
    """max |ours - theirs| / scale <= tol; returns it (printed with ``-s``)."""
    ours = np.ravel(np.asarray(ours, dtype=float))
    theirs = np.ravel(np.asarray(theirs, dtype=float))
    assert ours.shape == theirs.shape, case
    assert np.isfinite(theirs).all() and np.isfinite(ours).all(), case
    err = float(np.max(np.abs(ours - theirs))) / scale
    print(f"\ngstat parity {case}: max |diff| / scale = {err:.2e} (scale {scale:.3g})")
    assert err <= tol, f"{case}: {err:.3e} > {tol:g}"
    return err


def check(case, z, zs, var, vs, values, sill):
    compare(f"{case} prediction", z, zs, max(np.max(np.abs(values)), np.ptp(values)))
    compare(f"{case} variance", var, vs, max(np.max(np.abs(vs)), sill))


def field(rng, x, y):
    return (10 + 0.004 * x - 0.002 * y + np.sin(x / 170) + np.cos(y / 230)
            + 0.3 * rng.normal(size=len(x)))


@pytest.fixture
def synth():
    rng = np.random.default_rng(20261129)
    x, y = rng.uniform(0, 1000, (2, 300))
    px, py = (a.ravel() for a in np.meshgrid(np.linspace(-30, 1030, 19), np.linspace(5, 995, 17)))
    return x, y, field(rng, x, y), px, py


def points_case(tmp_path, backend, synth, structures, nugget, r_call, anis=None, **kw):
    x, y, z, px, py = synth
    m, s, a = geo_model(structures)
    out = gstat(tmp_path, f"m <- {vgm(structures, nugget, anis)}\n{r_call}\n"
                "out <- data.frame(pred = r$var1.pred, var = r$var1.var)",
                d=dict(x=x, y=y, z=z), p=dict(x=px, y=py))
    zo, vo = geofield.krige_points(x, y, z, m, sill=s, range=a, nugget=nugget, points=(px, py),
                                   anisotropy=anis, backend=backend, **kw)
    return zo[0], out["pred"], vo[0], out["var"], z, nugget + sum(s)


@pytest.mark.parametrize("anis", [None, (30.0, 0.4)])
def test_ordinary_exponential_nugget(tmp_path, backend, synth, anis):
    r = points_case(tmp_path, backend, synth, [("exponential", 0.9, 450.0)], 0.1,
                    "r <- krige(z ~ 1, ~x + y, d, p, model = m)", anis=anis)
    check(f"OK exponential+nugget anis={anis} [{backend}]", *r)


def test_ordinary_nested(tmp_path, backend, synth):
    r = points_case(tmp_path, backend, synth,
                    [("spherical", 0.5, 250.0), ("exponential", 0.6, 900.0)], 0.08,
                    "r <- krige(z ~ 1, ~x + y, d, p, model = m)")
    check(f"OK spherical+exponential+nugget [{backend}]", *r)


def test_ordinary_gaussian(tmp_path, backend, synth):
    # A gaussian structure plus a nugget (the nugget keeps the system well conditioned).
    r = points_case(tmp_path, backend, synth, [("gaussian", 1.0, 400.0)], 0.2,
                    "r <- krige(z ~ 1, ~x + y, d, p, model = m)")
    check(f"OK gaussian+nugget [{backend}]", *r)


def test_universal_linear_drift(tmp_path, backend, synth):
    r = points_case(tmp_path, backend, synth, [("spherical", 0.7, 500.0)], 0.1,
                    "r <- krige(z ~ x + y, ~x + y, d, p, model = m)", kind="universal")
    check(f"UK z~x+y [{backend}]", *r)


def test_local_nmax(tmp_path, backend, synth):
    # gstat nmax = k: the k nearest samples of each location (ties have probability 0 here).
    for k in (12, 40):
        r = points_case(tmp_path, backend, synth, [("exponential", 0.9, 450.0)], 0.1,
                        f"r <- krige(z ~ 1, ~x + y, d, p, model = m, nmax = {k})", neighbors=k)
        check(f"OK local nmax={k} [{backend}]", *r)


# Block kriging differs by the discretisation gstat evaluates, not by the system. gstat
# (src/block.c, src/data.h) keeps (1) a 4 x 4 Gauss-Legendre table printed to 10 digits (points
# off by <= 8e-12 of the block size, weights by 3e-11) and (2) every block point's weight in a
# float32 (the DPOINT union), so the weights are rounded to 2^-24 relative (1/25 -> 0.0399999991)
# and no longer sum to 1; the block-block pairs multiply two float32 weights in float32. Both
# scale the block covariances by up to ~1e-7. So the checks are against a numpy oracle of the
# same bordered system: with the exact discretisation (f64 weights) against geofield (1e-9, both
# prediction and variance), and with gstat's points and float32 weights against gstat: its
# prediction to 1e-9; its variance, whose block-block term we do not reproduce bit for bit (the
# order of gstat's float32 products), to GSTAT_VAR_TOL = 4 * 2^-24 of the total sill (the
# weights' rounding, <= 2^-24 each, in C(B, B) (<= 2 * 2^-24 c) and in lambda' k_B + mu (<= 2^-24 c
# times the weights' 1-norm, <~ 2)). geofield against gstat directly: BLOCK_TOL = 1e-6 (the
# ~1e-7 perturbation of the covariances times the 1-norm of the dual/kriging weights).
GSTAT_GAUSS = np.array([-0.4305681558, -0.1699905218, 0.1699905218, 0.4305681558])
GSTAT_GAUSS_W = np.array([0.1739274226, 0.3260725774, 0.3260725774, 0.1739274226])
BLOCK_TOL = 1e-6
GSTAT_VAR_TOL = 4 * 2.0 ** -24


def cov(structures, nugget, h):
    c = np.where(h == 0, nugget, 0.0)
    for model, sill, a in structures:
        r = h / a
        c = c + sill * (np.exp(-3 * r) if model == "exponential"
                        else np.where(r < 1, 1 - 1.5 * r + 0.5 * r ** 3, 0.0))
    return c


def discretisation(b, disc, like_gstat):
    """[(dx, dy)], weights, block-block weights of a block of size b."""
    if disc == "gauss":
        p, w = (GSTAT_GAUSS, GSTAT_GAUSS_W) if like_gstat else \
            (lambda g: (g[0] / 2, g[1] / 2))(np.polynomial.legendre.leggauss(4))
    else:
        p, w = -0.5 + (1.0 / disc) * (0.5 + np.arange(disc)), np.full(disc, 1.0 / disc)
    d = np.array([(b * pi, b * pj) for pi in p for pj in p])
    w2 = np.array([wi * wj for wi in w for wj in w])
    if not like_gstat:
        return d, w2, np.outer(w2, w2)
    if disc != "gauss":
        w2 = np.full(len(w2), 1.0 / len(w2))
    f = w2.astype(np.float32)
    return d, f.astype(float), np.outer(f, f).astype(np.float32).astype(float)


def block_oracle(x, y, z, structures, nugget, px, py, b, disc, like_gstat):
    """Ordinary block kriging in numpy: prediction and variance (C(B, B) without the nugget:
    gstat moves coincident points apart by its tiny gl_zero)."""
    d, w, ww = discretisation(b, disc, like_gstat)
    n = len(x)
    a = np.ones((n + 1, n + 1))
    a[n, n] = 0.0
    a[:n, :n] = cov(structures, nugget, np.hypot(x[:, None] - x, y[:, None] - y))
    rhs = np.ones((n + 1, len(px)))
    rhs[:n] = sum(wi * cov(structures, nugget, np.hypot(x[:, None] - (px - dx),
                                                          y[:, None] - (py - dy)))
                  for (dx, dy), wi in zip(d, w))
    sol = np.linalg.solve(a, rhs)
    cbb = np.sum(ww * cov(structures, 0.0, np.hypot(*(d[:, None] - d).transpose(2, 0, 1))))
    return sol[:n].T @ z, cbb - np.sum(sol * rhs, axis=0)


def check_block(case, x, y, z, st, nugget, px, py, b, disc, ours, theirs):
    """geofield (zo, vo) and gstat (zs, vs) block kriging, each against the oracle of its own
    discretisation, and against each other (BLOCK_TOL)."""
    scale = max(np.max(np.abs(z)), np.ptp(z))
    vscale = max(np.max(np.abs(theirs[1])), nugget + sum(s[1] for s in st))
    for who, res, like in (("geofield", ours, False), ("gstat", theirs, True)):
        zr, vr = block_oracle(x, y, z, st, nugget, px, py, b, disc, like)
        compare(f"{case} {who} vs oracle prediction", res[0], zr, scale)
        compare(f"{case} {who} vs oracle variance", res[1], vr, vscale,
                GSTAT_VAR_TOL if like else TOL)
    compare(f"{case} prediction", ours[0], theirs[0], scale, BLOCK_TOL)
    compare(f"{case} variance", ours[1], theirs[1], vscale, BLOCK_TOL)


def test_block_kriging(tmp_path, backend, synth):
    x, y, z, px, py = synth
    st = [("spherical", 0.5, 250.0), ("exponential", 0.6, 900.0)]
    for b, disc, setting in ((40.0, "gauss", ""), (75.0, "gauss", ""),
                             (60.0, 5, ", set = list(nblockdiscr = 5)")):
        zo, zs, vo, vs, _, _ = points_case(
            tmp_path, backend, synth, st, 0.08,
            f"r <- krige(z ~ 1, ~x + y, d, p, model = m, block = c({b}, {b}){setting})",
            block=b, block_discretisation=disc)
        check_block(f"block {b} {disc} [{backend}]", x, y, z, st, 0.08, px, py, b, disc,
                    (zo, vo), (zs.values, vs.values))


def test_external_drift(tmp_path, backend):
    # A 60 x 50 raster of 20 m cells; samples and nodes at cell centres, where the bilinear
    # sampling of the raster is its value exactly, so both see the same drift column.
    rng = np.random.default_rng(7)
    h, nx, ny = 20.0, 60, 50
    cx, cy = (np.arange(nx) + 0.5) * h, (np.arange(ny) + 0.5) * h
    dem = 200 + 0.05 * cx[None, :] - 0.08 * cy[:, None] + 30 * np.sin(cx[None, :] / 150) \
        * np.cos(cy[:, None] / 110)                         # (y up, x)
    cells = rng.choice(nx * ny, 500, replace=False)
    s, t = cells[:300], cells[300:]                         # samples; nodes (other cells)
    x, y, ds = cx[s % nx], cy[s // nx], dem.ravel()[s]
    z = 0.04 * ds + np.sin(x / 200) + 0.2 * rng.normal(size=300)
    px, py, dp = cx[t % nx], cy[t // nx], dem.ravel()[t]
    st = [("exponential", 0.5, 400.0)]
    out = gstat(tmp_path, f"m <- {vgm(st, 0.05)}\n"
                "r <- krige(z ~ dem, ~x + y, d, p, model = m)\n"
                "out <- data.frame(pred = r$var1.pred, var = r$var1.var)",
                d=dict(x=x, y=y, z=z, dem=ds), p=dict(x=px, y=py, dem=dp))
    zo, vo = geofield.krige_points(x, y, z, "exponential", sill=0.5, range=400.0, nugget=0.05,
                                   points=(px, py), kind="universal", drift="external",
                                   external_drift=(dem[::-1], (0, 0, nx * h, ny * h)),
                                   backend=backend)
    check(f"KED z~dem [{backend}]", zo[0], out["pred"], vo[0], out["var"], z, 0.55)


def test_indicator_kriging(tmp_path, backend, synth):
    x, y, z, _, _ = synth
    t = float(np.median(z))
    st = [("spherical", 0.2, 350.0)]
    ds = geofield.indicator_krige(x, y, z, [t], "spherical", sill=0.2, range=350.0, nugget=0.05,
                                  extent=(0, 0, 1000, 1000), cell_size=50, correction="none",
                                  variance=True, backend=backend)
    gx, gy = np.meshgrid(ds["x"].values, ds["y"].values)
    out = gstat(tmp_path, f"m <- {vgm(st, 0.05)}\n"
                f"r <- krige(I(z <= {t!r}) ~ 1, ~x + y, d, p, model = m)\n"
                "out <- data.frame(pred = r$var1.pred, var = r$var1.var)",
                d=dict(x=x, y=y, z=z), p=dict(x=gx.ravel(), y=gy.ravel()))
    check(f"indicator z<=median [{backend}]", ds["probability"].values[0], out["pred"],
          ds["variance"].values[0], out["var"], np.array([0.0, 1.0]), 0.25)


def test_cokriging(tmp_path, backend):
    # Heterotopic: the primary at 100 of 300 sites, the secondary at 270; the LMC geofield
    # fitted is given to gstat as it is (gstat's variograms of a, b and the cross a.b).
    rng = np.random.default_rng(11)
    n = 300
    x, y = rng.uniform(0, 1000, (2, n))
    c = np.sin(x / 160) + np.cos(y / 210)
    a = 5 + c + 0.2 * rng.normal(size=n)
    b = 2 * c + 0.3 * rng.normal(size=n)
    a[np.arange(n) % 3 != 0] = np.nan
    b[np.arange(n) % 10 == 9] = np.nan
    ds = geofield.cokrige(x, y, {"a": a, "b": b}, "spherical+exponential", range=[300.0, 800.0],
                          extent=(0, 0, 1000, 1000), cell_size=50, backend=backend)
    lmc = json.loads(ds.attrs["lmc"])
    kk = lmc["variables"]

    def model(k, l):
        return vgm([(s["model"], sills[k * kk + l], s["range"])
                    for s, sills in zip(lmc["structures"], lmc["sills"])],
                   lmc["nugget"][k * kk + l])
    gx, gy = np.meshgrid(ds["x"].values, ds["y"].values)
    ia, ib = np.isfinite(a), np.isfinite(b)
    out = gstat(tmp_path, f"g <- gstat(NULL, 'a', a ~ 1, ~x + y, da, model = {model(0, 0)})\n"
                f"g <- gstat(g, 'b', b ~ 1, ~x + y, db, model = {model(1, 1)})\n"
                f"g <- gstat(g, c('a', 'b'), model = {model(0, 1)})\n"
                "g$set <- list(nocheck = 1)\n"
                "r <- predict(g, p)\n"
                "out <- data.frame(pred = r$a.pred, var = r$a.var)",
                da=dict(x=x[ia], y=y[ia], a=a[ia]), db=dict(x=x[ib], y=y[ib], b=b[ib]),
                p=dict(x=gx.ravel(), y=gy.ravel()))
    total = lmc["nugget"][0] + sum(s[0] for s in lmc["sills"])
    check(f"ordinary cokriging [{backend}]", ds["a"].values, out["pred"],
          ds["a_variance"].values, out["var"], a[ia], total)


def test_kriging3d_anisotropic(tmp_path, backend):
    rng = np.random.default_rng(5)
    n = 400
    x, y = rng.uniform(0, 1000, (2, n))
    z = rng.uniform(0, 100, n)
    v = np.sin(x / 200 + z / 40) + np.cos(y / 250) + 0.2 * rng.normal(size=n)
    px, py, pz = (a.ravel() for a in np.meshgrid(np.linspace(0, 1000, 9),
                                                  np.linspace(0, 1000, 8), np.linspace(5, 95, 5)))
    anis = (35.0, 10.0, 20.0, 0.5, 0.1)      # azimuth, dip, rake, minor/major, vertical/major
    for st, nug in (([("exponential", 1.0, 600.0)], 0.1),
                    ([("spherical", 0.6, 400.0), ("exponential", 0.5, 900.0)], 0.05)):
        m, s, r = geo_model(st)
        out = gstat(tmp_path, f"m <- {vgm(st, nug, anis)}\n"
                    "r <- krige(v ~ 1, ~x + y + z, d, p, model = m)\n"
                    "out <- data.frame(pred = r$var1.pred, var = r$var1.var)",
                    d=dict(x=x, y=y, z=z, v=v), p=dict(x=px, y=py, z=pz))
        zo, vo = geofield.krige3d(x, y, z, v, m, sill=s, range=r, nugget=nug,
                                  points=(px, py, pz), anisotropy=anis, backend=backend)
        check(f"3-D OK {m} anis={anis} [{backend}]", zo, out["pred"], vo, out["var"], v,
              nug + sum(s))


def test_kriging3d_local_nmax(tmp_path, backend):
    # gstat's nmax in 3-D: the k nearest samples of each location (Euclidean: no anisotropy,
    # since gstat picks neighbours by plain distance), ordinary and universal (linear drift in
    # x, y, z); on "cuda" the search and the systems run on the GPU.
    rng = np.random.default_rng(11)
    n = 500
    x, y = rng.uniform(0, 1000, (2, n))
    z = rng.uniform(0, 200, n)
    v = 0.002 * x - 0.004 * z + np.sin(x / 150 + z / 60) + np.cos(y / 200) + 0.1 * rng.normal(size=n)
    px, py, pz = (a.ravel() for a in np.meshgrid(np.linspace(10, 990, 7),
                                                  np.linspace(20, 980, 6), np.linspace(5, 195, 5)))
    st, nug = [("exponential", 1.0, 500.0)], 0.05
    m, s, r = geo_model(st)
    for k in (10, 30):
        for formula, kind in (("v ~ 1", "ordinary"), ("v ~ x + y + z", "universal")):
            out = gstat(tmp_path, f"m <- {vgm(st, nug)}\n"
                        f"r <- krige({formula}, ~x + y + z, d, p, model = m, nmax = {k})\n"
                        "out <- data.frame(pred = r$var1.pred, var = r$var1.var)",
                        d=dict(x=x, y=y, z=z, v=v), p=dict(x=px, y=py, z=pz))
            zo, vo = geofield.krige3d(x, y, z, v, m, sill=s, range=r, nugget=nug, kind=kind,
                                      points=(px, py, pz), neighbors=k, backend=backend)
            check(f"3-D {kind} nmax={k} [{backend}]", zo, out["pred"], vo, out["var"], v,
                  nug + sum(s))


def test_meuse(tmp_path, backend):
    # Meuse log(zinc) with the classic vgm(.59, "Sph", 874, .04), at every 7th node of
    # meuse.grid: point and 40 m block kriging (global) and point kriging with nmax = 30.
    st = [("spherical", 0.59, 874.0)]
    out = gstat(tmp_path, f"""
data(meuse); data(meuse.grid)
g <- meuse.grid[seq(1, nrow(meuse.grid), by = 7), ]
m <- {vgm(st, 0.04)}
f <- function(...) krige(log(zinc) ~ 1, ~x + y, meuse, g, model = m, ...)
a <- f(); b <- f(block = c(40, 40)); k <- f(nmax = 30)
out <- data.frame(sx = meuse$x[1:nrow(g)], gx = g$x, gy = g$y,
                  p = a$var1.pred, v = a$var1.var, bp = b$var1.pred, bv = b$var1.var,
                  kp = k$var1.pred, kv = k$var1.var)
out$sy <- meuse$y[1:nrow(g)]; out$z <- log(meuse$zinc[1:nrow(g)])
""")
    # meuse has 155 rows, fewer than the nodes: the samples are the first 155 rows.
    d = out.iloc[:155]
    x, y, z = d["sx"].values, d["sy"].values, d["z"].values
    pts = (out["gx"].values, out["gy"].values)
    kw = dict(sill=0.59, range=874.0, nugget=0.04, points=pts, backend=backend)
    for tag, extra, p, v in (("point", {}, "p", "v"), ("nmax 30", {"neighbors": 30}, "kp", "kv")):
        zo, vo = geofield.krige_points(x, y, z, "spherical", **kw, **extra)
        check(f"Meuse log(zinc) {tag} [{backend}]", zo[0], out[p], vo[0], out[v], z, 0.63)
    zo, vo = geofield.krige_points(x, y, z, "spherical", **kw, block=40.0)
    check_block(f"Meuse log(zinc) block 40 [{backend}]", x, y, z, st, 0.04, *pts, 40.0, "gauss",
                (zo[0], vo[0]), (out["bp"].values, out["bv"].values))
