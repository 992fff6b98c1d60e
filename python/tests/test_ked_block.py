"""Kriging with external drift against PyKrige's ``UniversalKriging(drift_terms=["external_Z"])``
(the drop-in and ``geofield.krige``: the same system, <= 1e-9 relative), and block kriging from
Python (the block mean is the weighted mean of point kriging at its points)."""

import numpy as np
import pytest

import geofield
from geofield import pykrige as gk


def dem(x, y):
    return 100.0 + 0.3 * x - 0.1 * y + 20.0 * np.sin(x / 60.0) * np.cos(y / 80.0)


@pytest.fixture
def case():
    rng = np.random.default_rng(3)
    # The drift grid: nodes every 10 m over [5, 295] (cell centres of a 300 m raster).
    gx = 5.0 + 10.0 * np.arange(30)
    gy = 5.0 + 10.0 * np.arange(30)
    grid = dem(gx[None, :], gy[:, None])  # (y, x), y increasing as PyKrige takes it
    x = rng.uniform(10, 290, 40)
    y = rng.uniform(10, 290, 40)
    # The samples' drift value as PyKrige samples it (bilinear), for the synthetic values.
    z = 0.05 * dem(x, y) + np.cos(x / 90.0) + 0.05 * rng.normal(size=40)
    return x, y, z, gx, gy, grid


def test_external_drift_drop_in_matches_pykrige(case):
    uk = pytest.importorskip("pykrige.uk")
    x, y, z, gx, gy, grid = case
    px = np.linspace(12, 288, 9)
    py = np.linspace(15, 285, 7)
    for terms in (["external_Z"], ["regional_linear", "external_Z"]):
        kw = dict(variogram_model="exponential",
                  variogram_parameters={"sill": 1.05, "range": 150.0, "nugget": 0.05},
                  drift_terms=terms, external_drift=grid, external_drift_x=gx,
                  external_drift_y=gy)
        theirs = uk.UniversalKriging(x, y, z, **kw)
        ours = gk.UniversalKriging(x, y, z, **kw)
        tz, ts = theirs.execute("grid", px, py)
        oz, os_ = ours.execute("grid", px, py, device="cpu")
        # The drift column (~100) conditions the system worse than ordinary kriging; two f64
        # solves (PyKrige's LU, geofield's Cholesky + GLS) still agree far inside 1e-9 of the
        # values' scale here (cond ~1e8 -> ~1e-8 absolute on the variances' scale ~1).
        assert np.max(np.abs(oz - tz)) <= 1e-9 * np.max(np.abs(tz)), terms
        assert np.max(np.abs(os_ - ts)) <= 1e-8, terms


def test_external_drift_in_krige_points(case):
    uk = pytest.importorskip("pykrige.uk")
    x, y, z, gx, gy, grid = case
    theirs = uk.UniversalKriging(x, y, z, variogram_model="exponential",
                                 variogram_parameters={"sill": 1.05, "range": 150.0,
                                                       "nugget": 0.05},
                                 drift_terms=["external_Z"], external_drift=grid,
                                 external_drift_x=gx, external_drift_y=gy)
    px, py = np.array([50.0, 150.0, 260.0]), np.array([40.0, 170.0, 255.0])
    tz, _ = theirs.execute("points", px, py)
    # geofield's own arguments: the raster row 0 north, extent of the cells around the nodes.
    ours, _ = geofield.krige_points(x, y, z, "exponential", sill=1.0, range=150.0, nugget=0.05,
                                    points=(px, py), kind="universal", drift="external",
                                    external_drift=(grid[::-1], (0, 0, 300, 300)),
                                    backend="cpu")
    assert np.max(np.abs(ours[0] - tz)) <= 1e-9 * np.max(np.abs(tz))
    with pytest.raises(geofield.GeofieldError, match="no external drift value"):
        geofield.krige_points(x, y, z, "exponential", sill=1.0, range=150.0, points=(
            np.array([400.0]), np.array([10.0])), kind="universal", drift="external",
            external_drift=(grid[::-1], (0, 0, 300, 300)), backend="cpu")


def test_block_kriging_is_the_weighted_mean_of_point_kriging(case):
    x, y, z, *_ = case
    # A 10 m block, 2 x 2 regular points at +-2.5 m, equal weights.
    ds = geofield.krige(x, y, z, "spherical", sill=1.0, range=120.0, extent=(0, 0, 100, 100),
                        cell_size=10, block=10, block_discretisation=2, backend="cpu")
    fine = geofield.krige(x, y, z, "spherical", sill=1.0, range=120.0, extent=(0, 0, 100, 100),
                          cell_size=5, backend="cpu")
    f = fine["value"].values
    mean = 0.25 * (f[0::2, 0::2] + f[0::2, 1::2] + f[1::2, 0::2] + f[1::2, 1::2])
    np.testing.assert_allclose(ds["value"].values, mean, rtol=0, atol=1e-10)
    # The block error is the mean of the four point errors, so its variance is at most the mean
    # of their variances (Cauchy-Schwarz).
    fv = fine["value_variance"].values
    fmean = 0.25 * (fv[0::2, 0::2] + fv[0::2, 1::2] + fv[1::2, 0::2] + fv[1::2, 1::2])
    assert (ds["value_variance"].values <= fmean + 1e-12).all()
    with pytest.raises(geofield.GeofieldValueError, match="block_discretisation"):
        geofield.krige(x, y, z, "spherical", sill=1.0, range=120.0, extent=(0, 0, 100, 100),
                       cell_size=10, block=10, block_discretisation="many", backend="cpu")


def test_variogram_of_the_drift_residuals(case):
    """gstat's variogram(z ~ dem): residuals of a least-squares fit on [1, dem] (dem sampled by
    scipy's bilinear interpolator here), binned by numpy, equal geofield's."""
    interp = pytest.importorskip("scipy.interpolate")
    x, y, z, gx, gy, grid = case
    e = interp.RegularGridInterpolator((gy, gx), grid)(np.column_stack([y, x]))
    f = np.column_stack([np.ones_like(e), e])
    r = z - f @ np.linalg.lstsq(f, z, rcond=None)[0]
    res = geofield.variogram(x, y, z, lags=8, max_lag=150, drift="external",
                             external_drift=(grid[::-1], (0, 0, 300, 300)))
    d = np.hypot(x[:, None] - x[None], y[:, None] - y[None])
    g = 0.5 * (r[:, None] - r[None]) ** 2
    iu = np.triu_indices(len(x), 1)
    d, g = d[iu], g[iu]
    for lo, hi, gamma, n in zip(res["lo"], res["hi"], res["gamma"], res["pairs"]):
        last = hi == res["hi"][-1]
        m = (d >= lo) & ((d <= hi) if last else (d < hi))
        assert m.sum() == n
        if n:
            # Sums of O(1) terms over < 1000 pairs, the fits' coefficients to ~1e-13: 1e-9.
            assert abs(gamma - g[m].mean()) <= 1e-9 * max(1.0, g[m].mean())
    raw = geofield.variogram(x, y, z, lags=8, max_lag=150)
    ok = raw["pairs"] > 0
    assert (res["gamma"][ok] < raw["gamma"][ok]).all()
    with pytest.raises(geofield.GeofieldValueError, match="drift"):
        geofield.variogram(x, y, z, drift="external")
