"""geofield.cokrige: the prediction and variance against ordinary cokriging solved here with
numpy (the textbook bordered system, with the coregionalisation the call fitted and returned),
the fitted model positive semi-definite, the Dataset, and errors."""

import json

import numpy as np
import pytest

import geofield


def data(rng, n=60):
    x, y = rng.uniform(0, 1000, (2, n))
    c = np.sin(x / 150) + np.cos(y / 200)
    a = c + 0.2 * rng.normal(size=n)
    b = 2 * c + 0.3 * rng.normal(size=n)
    a[np.arange(n) % 3 != 0] = np.nan          # the primary measured at a third of the sites
    b[np.arange(n) % 7 == 6] = np.nan
    return x, y, {"a": a, "b": b}


def cov(lmc, k, l, h):
    kk = lmc["variables"]
    c = np.where(h == 0, lmc["nugget"][k * kk + l], 0.0)
    for st, b in zip(lmc["structures"], lmc["sills"]):
        r = np.minimum(h / st["range"], 1.0)
        assert st["model"] == "spherical"
        c = c + b[k * kk + l] * (1 - (1.5 * r - 0.5 * r ** 3))
    return c


def oracle(x, y, vals, lmc, px, py):
    e = [(k, i) for k, v in enumerate(vals) for i in range(len(x)) if np.isfinite(v[i])]
    n = len(e)
    a = np.zeros((n + 2, n + 2))
    for r, (k, i) in enumerate(e):
        for q, (l, j) in enumerate(e):
            a[r, q] = cov(lmc, k, l, np.hypot(x[i] - x[j], y[i] - y[j]))
        a[r, n + k] = a[n + k, r] = 1.0
    z = np.array([vals[k][i] for k, i in e])
    out, var = [], []
    for qx, qy in zip(px, py):
        b = np.zeros(n + 2)
        for r, (k, i) in enumerate(e):
            b[r] = cov(lmc, k, 0, np.hypot(x[i] - qx, y[i] - qy))
        b[n] = 1.0
        w = np.linalg.solve(a, b)
        out.append(w[:n] @ z)
        var.append(cov(lmc, 0, 0, np.array(0.0)) - w[:n] @ b[:n] - w[n])
    return np.array(out), np.array(var)


def test_cokrige_matches_numpy(rng):
    x, y, v = data(rng)
    px, py = rng.uniform(0, 1000, (2, 25))
    ds = geofield.cokrige(x, y, v, "spherical", range=400.0, extent=(0, 0, 1000, 1000),
                          cell_size=50, crs=32633)
    lmc = json.loads(ds.attrs["lmc"])
    for b in [lmc["nugget"]] + lmc["sills"]:
        assert np.linalg.eigvalsh(np.reshape(b, (2, 2))).min() > -1e-12
    z, s = geofield.cokrige(x, y, v, "spherical", range=400.0, points=(px, py))
    want, want_var = oracle(x, y, [v["a"], v["b"]], lmc, px, py)
    # The same f64 system solved by LU here and by Cholesky/dual form there.
    assert np.allclose(z, want, rtol=0, atol=1e-9) and np.allclose(s, want_var, rtol=0, atol=1e-9)
    assert ds["a"].shape == (20, 20) and "a_variance" in ds
    assert (ds["a_variance"].values >= 0).all()


def test_errors(rng):
    x, y, v = data(rng, 30)
    with pytest.raises(geofield.GeofieldValueError, match="secondary"):
        geofield.cokrige(x, y, {"a": v["a"]}, points=(x, y))
    with pytest.raises(geofield.GeofieldValueError, match="bounded"):
        geofield.cokrige(x, y, v, "power:1.5", range=1.0, points=(x, y))
    with pytest.raises(geofield.GeofieldValueError, match="mean"):
        geofield.cokrige(x, y, v, kind="simple", points=(x, y))
