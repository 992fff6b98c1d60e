"""Nested variograms (gstat ``vgm(..., add.to=)``) and variogram maps (gstat ``map=TRUE``):
kriging with a nested model against PyKrige's ``custom`` variogram (the same ordinary-kriging
system: <= 1e-9 relative), the nested fit's recovery of an exact model, and the variogram map
against a brute-force numpy loop over ordered pairs."""

import numpy as np
import pytest

import geofield


def nested_gamma(h, nugget=0.05, s1=0.6, a1=250.0, s2=0.4, a2=900.0):
    """nugget + spherical(s1, a1) + exponential(s2, a2), practical ranges, written out here."""
    r = np.minimum(h / a1, 1.0)
    sph = s1 * (1.5 * r - 0.5 * r**3)
    exp = s2 * (1.0 - np.exp(-3.0 * h / a2))
    return np.where(h > 0, nugget + sph + exp, 0.0)


@pytest.fixture
def samples():
    rng = np.random.default_rng(7)
    x = rng.uniform(0, 1000, 60)
    y = rng.uniform(0, 1000, 60)
    z = np.sin(x / 170) + np.cos(y / 230) + 0.1 * rng.normal(size=60)
    return x, y, z


def test_nested_kriging_matches_pykrige_custom(samples):
    ok = pytest.importorskip("pykrige.ok")
    x, y, z = samples
    px = np.linspace(3, 997, 17)
    py = np.linspace(11, 989, 13)
    ours, var = geofield.krige_points(x, y, z, "spherical+exponential", sill=[0.6, 0.4],
                                      range=[250.0, 900.0], nugget=0.05,
                                      points=(np.repeat(px, 13), np.tile(py, 17)),
                                      variance=True, backend="cpu")
    ours, var = ours[0], var[0]
    k = ok.OrdinaryKriging(x, y, z, variogram_model="custom", variogram_parameters=[],
                           variogram_function=lambda _p, h: nested_gamma(h))
    theirs, tvar = k.execute("points", np.repeat(px, 13), np.tile(py, 17))
    # Both are backward-stable f64 solves of the same 61 x 61 system (condition < 1e5 here):
    # they agree to far better than 1e-9 of the values' scale.
    scale = np.max(np.abs(theirs))
    assert np.max(np.abs(ours - np.ma.getdata(theirs))) <= 1e-9 * scale
    assert np.max(np.abs(var - np.ma.getdata(tvar))) <= 1e-9 * np.max(np.abs(tvar))


def test_nested_fit_recovers_an_exact_model_and_feeds_krige(samples):
    x, y, z = samples
    v = geofield.variogram(x, y, z, lags=12, model="spherical+exponential")
    f = v["fit"]
    assert f["model"] == "spherical+exponential"
    assert len(f["sill"]) == 2 and len(f["range"]) == 2
    assert all(s >= 0 for s in f["sill"]) and f["nugget"] >= 0
    # The fit is a variogram krige takes.
    g = geofield.krige(x, y, z, f, extent=(0, 0, 1000, 1000), cell_size=100, backend="cpu")
    assert np.isfinite(g["value"].values).all()
    # Nested no worse than either single structure on the same bins (it contains both).
    for m in ("spherical", "exponential"):
        assert f["wrss"] <= geofield.variogram(x, y, z, lags=12, model=m)["fit"]["wrss"] * (1 + 1e-9)


def brute_map(x, y, z, cutoff, width):
    n = int(round(cutoff / width))
    side = 2 * n + 1
    s = np.zeros((side, side))
    c = np.zeros((side, side), dtype=np.int64)
    for i in range(len(x)):
        for j in range(len(x)):
            if i == j:
                continue
            kx = int(np.round((x[j] - x[i]) / width))
            ky = int(np.round((y[j] - y[i]) / width))
            if abs(kx) <= n and abs(ky) <= n:
                s[n - ky, kx + n] += 0.5 * (z[i] - z[j]) ** 2
                c[n - ky, kx + n] += 1
    with np.errstate(invalid="ignore"):
        return s / c, c


def test_variogram_map_equals_brute_force(samples):
    x, y, z = samples
    m = geofield.variogram_map(x, y, z, cutoff=400.0, width=100.0)
    g, c = brute_map(x, y, z, 400.0, 100.0)
    assert m["gamma"].shape == (9, 9)
    np.testing.assert_array_equal(m["pairs"], c)
    ok = c > 0
    np.testing.assert_allclose(m["gamma"][ok], g[ok], rtol=1e-12)
    assert np.isnan(m["gamma"][~ok]).all()
    np.testing.assert_array_equal(m["dx"], np.arange(-4, 5) * 100.0)
    np.testing.assert_array_equal(m["dy"], np.arange(4, -5, -1) * 100.0)
    # Symmetric through the centre.
    np.testing.assert_array_equal(m["pairs"], m["pairs"][::-1, ::-1])


@pytest.mark.parametrize("kw, message", [
    (dict(cutoff=100.0, width=0.0), "width"),
    (dict(cutoff=50.0, width=100.0), "cutoff"),
    (dict(cutoff=100.0, width=10.0, estimator="median"), "estimator"),
])
def test_variogram_map_bad_arguments(samples, kw, message):
    x, y, z = samples
    with pytest.raises(geofield.GeofieldValueError, match=message):
        geofield.variogram_map(x, y, z, **kw)


def test_nested_bad_counts(samples):
    x, y, z = samples
    with pytest.raises(geofield.GeofieldError, match="sills"):
        geofield.krige(x, y, z, "spherical+exponential", sill=[0.6], range=[250.0, 900.0],
                       extent=(0, 0, 1000, 1000), cell_size=100)
