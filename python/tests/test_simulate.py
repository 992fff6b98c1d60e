"""geofield.simulate (conditional Gaussian simulation) against the kriging it conditions on,
against GSTools' kriging and CondSRF, and `geofield krige --simulate` read back by xarray.

Statistical tolerances are stated where they are used: N realisations at a node are N
independent draws, so their mean has standard error sqrt(var/N) and (Gaussian) their sample
variance a relative standard error sqrt(2/(N-1)); 5 standard errors per check.
"""

import os
import shutil
import subprocess

import numpy as np
import pytest

import geofield

RNG = np.random.default_rng(7)
X = RNG.uniform(0, 100, 12)
Y = RNG.uniform(0, 100, 12)
Z = 10 + 2 * np.sin(X / 20) + np.cos(Y / 15)


def test_realisations_honour_the_samples_at_points():
    for nugget in (0.0, 0.3):
        sims = geofield.simulate(X, Y, Z, "exponential", 2.0, 50.0, nugget, n=6, seed=2,
                                 modes=400, points=(X, Y), backend="cpu")
        assert sims.shape == (6, 12)
        # Exact kriging: the datum to the solve's rounding.
        np.testing.assert_allclose(sims, np.broadcast_to(Z, sims.shape), rtol=0, atol=1e-9)


def test_the_ensemble_has_the_kriging_mean_and_variance():
    n = 1500
    sims = geofield.simulate(X, Y, Z, "gaussian", 1.5, 60.0, 0.0, n=n, seed=5,
                             extent=(0, 0, 100, 100), cell_size=10, backend="cpu")
    assert sims.dims == ("realization", "y", "x") and sims.shape == (n, 10, 10)
    k = geofield.krige(X, Y, Z, "gaussian", 1.5, 60.0, 0.0, extent=(0, 0, 100, 100),
                       cell_size=10, backend="cpu")
    pred = k[sims.name].values
    var = k[f"{sims.name}_variance"].values
    mean = sims.values.mean(axis=0)
    sv = sims.values.var(axis=0, ddof=1)
    for r, c in [(0, 0), (2, 7), (5, 5), (9, 3), (4, 9)]:
        assert abs(mean[r, c] - pred[r, c]) < 5 * np.sqrt(var[r, c] / n), (r, c)
        assert abs(sv[r, c] / var[r, c] - 1) < 5 * np.sqrt(2 / (n - 1)), (r, c)


def test_same_seed_same_realisations_and_prefix_independence():
    a = geofield.simulate(X, Y, Z, "matern:1.5", 1.0, 40.0, 0.1, n=3, seed=9, modes=200,
                          points=(X + 1, Y), backend="cpu")
    b = geofield.simulate(X, Y, Z, "matern:1.5", 1.0, 40.0, 0.1, n=5, seed=9, modes=200,
                          points=(X + 1, Y), backend="cpu")
    np.testing.assert_array_equal(a, b[:3])
    assert not np.array_equal(b[3], b[4])


def test_bad_requests_raise():
    with pytest.raises(geofield.GeofieldValueError):
        geofield.simulate(X, Y, Z, "exponential", 1.0, 40.0, n=0, points=(X, Y))
    with pytest.raises(geofield.GeofieldValueError):
        geofield.simulate(X, Y, np.stack([Z, Z], axis=1), "exponential", 1.0, 40.0, n=2,
                          points=(X, Y))
    with pytest.raises(geofield.GeofieldValueError, match="linear"):
        geofield.simulate(X, Y, Z, "linear", 1.0, 40.0, n=2, points=(X, Y))
    with pytest.raises(geofield.GeofieldValueError):
        geofield.simulate(X, Y, Z, "exponential", 1.0, 40.0, n=2)


def test_against_gstools_krige_and_condsrf():
    gs = pytest.importorskip("gstools")
    # Ours: exponential, practical range a, partial sill 2; GSTools: len_scale = a / 3.
    a, ps = 45.0, 2.0
    model = gs.Exponential(dim=2, var=ps, len_scale=a / 3)
    krig = gs.krige.Ordinary(model, cond_pos=[X, Y], cond_val=Z, exact=True, pseudo_inv=False)
    px = np.linspace(3, 97, 40)
    py = np.linspace(90, 8, 40)
    g_mean, g_var = krig((px, py), mesh_type="unstructured", return_var=True)
    k_mean, k_var = geofield.krige_points(X, Y, Z, "exponential", ps, a, 0.0, points=(px, py),
                                          backend="cpu")
    # The same kriging system (ordinary, exact, f64 solves): 1e-9 relative.
    np.testing.assert_allclose(k_mean[0], g_mean, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(k_var[0], g_var, rtol=1e-9, atol=1e-9)
    n = 600
    srf = gs.CondSRF(krig)
    srf.set_pos((px, py), "unstructured")
    g = np.array([srf(seed=100 + i) for i in range(n)])
    ours = geofield.simulate(X, Y, Z, "exponential", ps, a, 0.0, n=n, seed=1,
                             points=(px, py), backend="cpu")
    # Both ensembles estimate the kriging mean and variance at each point: the difference of
    # two independent means has standard error sqrt(2 var / n); the ratio of the sample
    # variances, relative standard error 2 / sqrt(n - 1) (each sqrt(2 / (n - 1))).
    ok = k_var[0] > 1e-6
    d_mean = np.abs(ours.mean(0) - g.mean(0))[ok]
    assert np.all(d_mean < 5 * np.sqrt(2 * k_var[0][ok] / n))
    ratio = (ours.var(0, ddof=1) / g.var(0, ddof=1))[ok]
    assert np.all(np.abs(ratio - 1) < 5 * 2 / np.sqrt(n - 1))


def test_cli_netcdf_reads_back_in_xarray(tmp_path):
    xr = pytest.importorskip("xarray")
    exe = os.environ.get("GEOFIELD_BIN") or shutil.which("geofield")
    if not exe:
        pytest.skip("no geofield binary (set GEOFIELD_BIN)")
    csv = tmp_path / "w.csv"
    csv.write_text("x,y,z\n15,85,10.0\n75,75,12.5\n25,25,9.0\n85,15,11.0\n")
    out = tmp_path / "s.nc"
    r = subprocess.run([exe, "--backend", "cpu", "krige", "--samples", str(csv), "--values", "z",
                        "--model", "exponential", "--sill", "2", "--range", "60",
                        "--extent", "0,0,100,100", "--cell-size-m", "10", "--simulate", "3",
                        "--seed", "4", "--out", str(out), "--crs", "EPSG:32633",
                        "--units", "m"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    ds = xr.open_dataset(out)
    z = ds["z"]
    assert z.dims == ("realization", "y", "x") and z.shape == (3, 10, 10)
    assert list(ds["realization"].values) == [1, 2, 3]
    assert np.all(np.diff(ds["y"].values) > 0) and z.attrs["units"] == "m"
    # Wells sit on cell centres: each realisation equals the datum there.
    for x, y, v in [(15, 85, 10.0), (75, 75, 12.5), (25, 25, 9.0), (85, 15, 11.0)]:
        np.testing.assert_allclose(z.sel(x=x, y=y).values, v, atol=1e-9)
    assert "crs" in ds.variables and z.attrs.get("grid_mapping") == "crs"
    # The same realisations as a GeoTIFF of 3 bands, read by rasterio (GDAL).
    rasterio = pytest.importorskip("rasterio")
    tif = tmp_path / "s.tif"
    r = subprocess.run([exe, "--backend", "cpu", "krige", "--samples", str(csv), "--values", "z",
                        "--model", "exponential", "--sill", "2", "--range", "60",
                        "--extent", "0,0,100,100", "--cell-size-m", "10", "--simulate", "3",
                        "--seed", "4", "--out", str(tif), "--crs", "EPSG:32633",
                        "--precision", "f64"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    with rasterio.open(tif) as src:
        assert src.count == 3 and src.crs.to_epsg() == 32633
        bands = src.read()
        rows, cols = src.index(15, 85)
        np.testing.assert_allclose(bands[:, rows, cols], 10.0, atol=1e-9)
    # Rows north first in the GeoTIFF, south first in the NetCDF: the same values.
    np.testing.assert_allclose(bands, z.values[:, ::-1, :], atol=1e-12)


def test_indicator_kriging_against_pykrige_and_as_distributions():
    t = [9.5, 10.5, 11.2]
    ds = geofield.indicator_krige(X, Y, Z, t, "exponential", 0.25, 60.0, 0.0,
                                  extent=(0, 0, 100, 100), cell_size=10, correction="none",
                                  variance=True, backend="cpu")
    assert ds["probability"].dims == ("threshold", "y", "x")
    np.testing.assert_allclose(ds["threshold"].values, t)
    pk = pytest.importorskip("pykrige.ok")
    gx = np.arange(5.0, 100, 10)
    gy = np.arange(5.0, 100, 10)
    for k, th in enumerate(t):
        ind = (Z <= th).astype(float)
        # PyKrige's exponential range is the practical range (1 - exp(-3 d / r)).
        ok = pk.OrdinaryKriging(X, Y, ind, variogram_model="exponential",
                                variogram_parameters={"psill": 0.25, "range": 60.0,
                                                      "nugget": 0.0})
        zz, ss = ok.execute("grid", gx, gy)
        # PyKrige's rows go south to north; ours north to south. Same system: 1e-9.
        np.testing.assert_allclose(ds["probability"].values[k][::-1], zz, atol=1e-9)
        np.testing.assert_allclose(ds["variance"].values[k][::-1], ss, atol=1e-9)
    c = geofield.indicator_krige(X, Y, Z, t, "exponential", 0.25, 60.0, 0.0,
                                 extent=(0, 0, 100, 100), cell_size=10, backend="cpu")
    p = c["probability"].values
    assert p.min() >= 0 and p.max() <= 1 and np.all(np.diff(p, axis=0) >= 0)
    with pytest.raises(geofield.GeofieldValueError):
        geofield.indicator_krige(X, Y, Z, [2.0, 1.0], "exponential", 0.25, 60.0,
                                 extent=(0, 0, 100, 100), cell_size=10)
