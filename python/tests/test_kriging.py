"""geofield.krige / krige_points / variogram / cross_validate: an independent numpy solve of the
ordinary kriging system, the xarray output, and identity between the grid and points paths."""

import numpy as np
import pytest

import geofield


def exp_cov(h, sill, a):
    return sill * np.exp(-3.0 * h / a)


def numpy_ok(x, y, z, px, py, sill, a):
    """Ordinary kriging by a dense numpy solve (no nugget, exponential, practical range a)."""
    n = len(x)
    d = np.hypot(x[:, None] - x[None], y[:, None] - y[None])
    A = np.ones((n + 1, n + 1))
    A[:n, :n] = exp_cov(d, sill, a)
    A[n, n] = 0.0
    d0 = np.hypot(px[:, None] - x[None], py[:, None] - y[None])
    b = np.ones((len(px), n + 1))
    b[:, :n] = exp_cov(d0, sill, a)
    w = np.linalg.solve(A, b.T)
    pred = w[:n].T @ z
    var = sill - (w * b.T).sum(0)
    return pred, var


@pytest.fixture
def samples(rng):
    x = rng.uniform(0, 500, 40)
    y = rng.uniform(0, 500, 40)
    return x, y, np.sin(x / 90) * np.cos(y / 120)


def test_points_match_numpy_solve(samples, backend):
    x, y, z = samples
    px, py = np.linspace(5, 495, 50), np.linspace(495, 5, 50)
    val, var = geofield.krige_points(x, y, z, "exponential", sill=1.0, range=200.0,
                                     points=(px, py), backend=backend)
    ref, rvar = numpy_ok(x, y, z, px, py, 1.0, 200.0)
    # Condition number of this system ~1e3: the two f64 solves agree to ~1e-12.
    np.testing.assert_allclose(val[0], ref, rtol=0, atol=1e-10)
    np.testing.assert_allclose(var[0], rvar, rtol=0, atol=1e-10)


def test_grid_dataset(samples, backend):
    pytest.importorskip("xarray")
    x, y, z = samples
    ds = geofield.krige(x, y, {"depth": z, "twice": 2 * z}, "exponential", sill=1.0, range=200.0,
                        extent=(0, 0, 500, 400), cell_size=10.0, crs=32633, backend=backend)
    assert set(ds.data_vars) == {"depth", "twice", "depth_variance", "twice_variance"}
    assert ds.depth.shape == (40, 50)
    gx, gy = np.meshgrid(ds.x.values, ds.y.values)
    ref, rvar = numpy_ok(x, y, z, gx.ravel(), gy.ravel(), 1.0, 200.0)
    # GPU global kriging evaluates the nodes in f64 here (precision="float64").
    np.testing.assert_allclose(ds.depth.values.ravel(), ref, atol=1e-9)
    np.testing.assert_allclose(ds.twice.values.ravel(), 2 * ref, atol=2e-9)
    np.testing.assert_allclose(ds.depth_variance.values.ravel(), rvar, atol=1e-9)
    assert "spatial_ref" in ds.coords and ds.depth.attrs["grid_mapping"] == "spatial_ref"


def test_variogram_fit_feeds_krige(samples):
    x, y, z = samples
    v = geofield.variogram(x, y, z, lags=10, model="exponential")
    assert len(v["gamma"]) == 10 and v["pairs"].sum() > 0
    assert v["fit"]["model"] == "exponential" and v["fit"]["range"] > 0
    val, _ = geofield.krige_points(x, y, z, v["fit"], points=(x[:3], y[:3]))
    np.testing.assert_allclose(val[0], z[:3], atol=1e-9)  # exact at the samples


def test_cross_validation_is_leave_one_out(samples):
    x, y, z = samples
    cv = geofield.cross_validate(x, y, z, "exponential", sill=1.0, range=200.0)["value"]
    keep = np.arange(len(x)) != 5
    ref, _ = numpy_ok(x[keep], y[keep], z[keep], x[5:6], y[5:6], 1.0, 200.0)
    i = int(np.flatnonzero(cv["locations"] == 5)[0])
    np.testing.assert_allclose(cv["error"][i], z[5] - ref[0], atol=1e-10)
    assert cv["rmse"] == pytest.approx(np.sqrt(np.mean(cv["error"] ** 2)))


@pytest.mark.parametrize("kw, message", [
    ({"model": "circular"}, "model"),
    ({"sill": -1.0}, "sill"),
    ({"kind": "simple"}, "mean"),
    ({"kind": "kriging"}, "kind"),
    ({"neighbors": 0}, ""),
])
def test_bad_arguments(samples, kw, message):
    x, y, z = samples
    args = {"model": "exponential", "sill": 1.0, "range": 100.0}
    args.update(kw)
    with pytest.raises(ValueError, match=message or None):
        geofield.krige_points(x, y, z, points=(x[:2], y[:2]), **args)
