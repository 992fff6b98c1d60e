"""geofield.wind from an xarray DEM and a stations table: flat ground keeps the station's wind
(direction raster equals the station's direction, no vertical wind), the field is divergence-free
to the tolerance over a hill, CRS and orientation survive."""

import numpy as np
import pytest

import geofield

xr = pytest.importorskip("xarray")


def dem(z_fn, n=(40, 32), h=25.0, x0=500000.0, y0=4100000.0):
    x = x0 + (np.arange(n[0]) + 0.5) * h
    y = y0 + (np.arange(n[1])[::-1] + 0.5) * h
    X, Y = np.meshgrid(x, y)
    return xr.DataArray(z_fn(X, Y), coords={"y": y, "x": x}, dims=("y", "x"))


def station(d, direction=250.0, speed=6.0):
    return {"x_m": [float(d.x[3])], "y_m": [float(d.y[3])], "height_agl_m": [10.0],
            "speed_m_per_s": [speed], "direction_deg": [direction], "id": ["mast"]}


def test_flat_ground_keeps_the_station_wind(backend):
    d = dem(lambda X, Y: np.full_like(X, 120.0))
    ds = geofield.wind(d, station(d), nz=8, dz_m=10.0, backend=backend, height_agl_m=10.0,
                       profile="uniform")
    # Uniform flow over flat ground is mass-consistent: nothing to adjust. The direction map is
    # the station's direction everywhere, the speed the station's (a uniform profile, so the
    # interpolation between layer centres is exact) and w vanishes (to the solver's rounding).
    np.testing.assert_allclose(ds.direction_agl, 250.0, atol=1e-6)
    np.testing.assert_allclose(ds.speed_agl, 6.0, rtol=1e-6)
    assert float(abs(ds.w).max()) < 1e-6
    assert ds.attrs["converged"] == 1


def test_hill_and_orientation(backend):
    def hill(X, Y):
        return 100 + 60 * np.exp(-(((X - 500500) / 150) ** 2 + ((Y - 4100400) / 150) ** 2))

    d = dem(hill)
    ds = geofield.wind(d, station(d, direction=270.0), nz=12, dz_m=12.0, backend=backend,
                       crs=32611)
    assert ds.attrs["max_div_per_s"] <= ds.attrs["threshold_per_s"]
    np.testing.assert_array_equal(ds.terrain.values, d.values)  # same orientation, row 0 north
    np.testing.assert_array_equal(ds.x.values, d.x.values)
    np.testing.assert_array_equal(ds.y.values, d.y.values)
    assert "spatial_ref" in ds.coords
    # Flow over the hill speeds up at the crest relative to the upwind foot.
    crest = ds.speed_agl.sel(x=500500, y=4100400, method="nearest")
    foot = ds.speed_agl.sel(x=500100, y=4100400, method="nearest")
    assert float(crest) > float(foot)
    # Below ground the 3-D field is NaN; above, finite.
    assert np.isnan(ds.u.values).any() and np.isfinite(ds.u.values[-1]).all()


def test_south_up_dem_is_flipped():
    d = dem(lambda X, Y: 100 + 0.05 * (Y - 4100000))
    ds = geofield.wind(d.isel(y=slice(None, None, -1)), station(d), nz=8, dz_m=10.0,
                       backend="cpu")
    np.testing.assert_array_equal(ds.terrain.values, d.values)


@pytest.mark.parametrize("change, message", [
    ({"model": "potential"}, "model"),
    ({"solver": "jacobi"}, "solver"),
    ({"tolerance": 2.0}, "tolerance"),
    ({"stability": "Z"}, "stability"),
])
def test_bad_options(change, message):
    d = dem(lambda X, Y: np.full_like(X, 10.0))
    with pytest.raises(ValueError, match=message):
        geofield.wind(d, station(d), nz=4, dz_m=10.0, backend="cpu", **change)


def test_bad_stations():
    d = dem(lambda X, Y: np.full_like(X, 10.0))
    s = station(d)
    s["speed_m_per_s"] = [np.nan]
    with pytest.raises(ValueError, match="stations.speed_m_per_s: value at index 0 is nan"):
        geofield.wind(d, s, nz=4, dz_m=10.0, backend="cpu")
    s = station(d)
    del s["direction_deg"]
    with pytest.raises(ValueError, match="direction"):
        geofield.wind(d, s, nz=4, dz_m=10.0, backend="cpu")


def test_stretched_layers_and_the_convergence_report():
    # A 60 m hill; layers from 2 m growing by 1.2 up to 100 m above the hill top.
    d = dem(lambda X, Y: 100.0 + 60.0 * np.exp(-((X - X.mean()) ** 2 + (Y - Y.mean()) ** 2)
                                               / (2 * 150.0 ** 2)))
    ds = geofield.wind(d, station(d), dz_m=2.0, growth=1.2, top_m=100.0, backend="cpu")
    relief = float(d.max() - d.min())
    z = ds["z"].values
    dz = np.diff(z)
    # Centres of layers 2, 2.4, 2.88, ...: spacing between centres grows by 1.2.
    assert z[0] == pytest.approx(1.0)
    assert np.allclose(dz[1:] / dz[:-1], 1.2)
    # The top face (last centre + half its layer) is at or above relief + 100 m, within a layer.
    top = z[-1] + 0.5 * 2.0 * 1.2 ** (len(z) - 1)
    assert relief + 100.0 <= top < relief + 100.0 + 2.0 * 1.2 ** (len(z) - 1)
    assert ds.attrs["converged"] == 1 and ds.attrs["stop"] == "converged"
    assert ds.attrs["last_residual_per_s"] <= ds.attrs["threshold_per_s"]
    assert ds.attrs["first_residual_per_s"] > ds.attrs["last_residual_per_s"]
    with pytest.raises(ValueError, match="growth"):
        geofield.wind(d, station(d), dz_m=2.0, growth=0.5, backend="cpu")
    with pytest.raises(ValueError, match="levels_m"):
        geofield.wind(d, station(d), levels_m=[10.0, 20.0], growth=1.2, backend="cpu")


def test_terrain_option(backend):
    def hill(X, Y):
        return 100 + 60 * np.exp(-(((X - 500500) / 150) ** 2 + ((Y - 4100400) / 150) ** 2))

    d = dem(hill)
    cut = geofield.wind(d, station(d, direction=270.0), nz=12, dz_m=12.0, backend=backend)
    stairs = geofield.wind(d, station(d, direction=270.0), nz=12, dz_m=12.0, backend=backend,
                           terrain="stairs")
    # Both are mass-consistent; the cut cells move the ground, so the fields differ.
    assert stairs.attrs["max_div_per_s"] <= stairs.attrs["threshold_per_s"]
    assert float(abs(cut.speed_agl - stairs.speed_agl).max()) > 1e-3
    with pytest.raises(ValueError):
        geofield.wind(d, station(d), model="west", terrain="cut", backend=backend)
    with pytest.raises(ValueError):
        geofield.wind(d, station(d), terrain="smooth", backend=backend)
