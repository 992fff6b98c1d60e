"""geofield.wind(init_grid=...): a weather model's gridded wind as a path, an xarray Dataset or
(u, v) DataArrays, read by the library's one reader. A uniform grid in the DEM's CRS gives the
field of one station with the same wind; a west wind on an ERA5-like longitude/latitude grid
comes out turned by the meridian convergence of UTM; times by index and by date; refusals."""

import math

import numpy as np
import pytest

import geofield

xr = pytest.importorskip("xarray")
pytest.importorskip("scipy")  # xarray's NetCDF-3 writer


def dem(z_fn, n=(40, 32), h=25.0, x0=500000.0, y0=4100000.0, crs=None):
    x = x0 + (np.arange(n[0]) + 0.5) * h
    y = y0 + (np.arange(n[1])[::-1] + 0.5) * h
    X, Y = np.meshgrid(x, y)
    d = xr.DataArray(z_fn(X, Y), coords={"y": y, "x": x}, dims=("y", "x"))
    if crs is not None:
        rio = pytest.importorskip("rioxarray")  # noqa: F841 - registers .rio
        d = d.rio.write_crs(crs)
    return d


def hill(X, Y):
    return 100 + 60 * np.exp(-(((X - 500500) / 150) ** 2 + ((Y - 4100400) / 150) ** 2))


def test_uniform_grid_in_the_dem_crs_is_one_station(backend):
    d = dem(hill)
    t = math.radians(235.0)
    su, sv = -6.0 * math.sin(t), -6.0 * math.cos(t)
    x = np.array([499900.0, 500500.0, 501100.0])
    y = np.array([4101000.0, 4100400.0, 4099800.0])
    grid = xr.Dataset(
        {"u": (("y", "x"), np.full((3, 3), su), {"units": "m s-1"}),
         "v": (("y", "x"), np.full((3, 3), sv), {"units": "m s-1"})},
        coords={"x": ("x", x, {"units": "m"}), "y": ("y", y, {"units": "m"})})
    st = {"x_m": [500300.0], "y_m": [4100300.0], "height_agl_m": [10.0],
          "speed_m_per_s": [6.0], "direction_deg": [235.0]}
    one = geofield.wind(d, st, nz=12, dz_m=10.0, backend=backend)
    with pytest.warns(UserWarning, match="declares no CRS"):
        gridded = geofield.wind(d, init_grid=grid, init_height_m=10.0, nz=12, dz_m=10.0,
                                backend=backend)
    # One station in every column: the same first guess to rounding, so the same solve (the
    # f64 fields agree far below the solver's tolerance of 1e-6 of max|div u0|).
    np.testing.assert_allclose(gridded.speed_agl, one.speed_agl, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(gridded.direction_agl, one.direction_agl, atol=1e-4)
    assert float(one.speed_agl.max()) > 6.0
    # The same as (u, v) DataArrays.
    pair = geofield.wind(d, init_grid=(grid.u, grid.v), init_height_m=10.0, nz=12, dz_m=10.0,
                         backend=backend)
    np.testing.assert_array_equal(pair.speed_agl, gridded.speed_agl)


def era5(times=("2024-06-21T12:00", "2024-06-21T18:00")):
    """ERA5's layout: latitudes north first, 0..360 longitudes, a west wind of 5 then 7 m/s."""
    lat = np.arange(45.5, 44.49, -0.25)
    lon = np.arange(240.5, 242.01, 0.25)
    shape = (len(times), len(lat), len(lon))
    u = np.stack([np.full(shape[1:], s) for s in (5.0, 7.0)[: len(times)]])
    return xr.Dataset(
        {"u10": (("time", "latitude", "longitude"), u, {"units": "m s**-1"}),
         "v10": (("time", "latitude", "longitude"), np.zeros(shape), {"units": "m s**-1"})},
        coords={"time": np.array(times, dtype="datetime64[ns]"),
                "latitude": ("latitude", lat, {"units": "degrees_north"}),
                "longitude": ("longitude", lon, {"units": "degrees_east"})})


def test_lonlat_grid_turns_by_the_convergence(tmp_path):
    pyproj = pytest.importorskip("pyproj")
    x0, y0 = pyproj.Transformer.from_crs(4326, 32611, always_xy=True).transform(-119.0, 45.0)
    d = dem(lambda X, Y: np.full_like(X, 300.0), n=(16, 16), h=30.0, x0=x0, y0=y0,
            crs="EPSG:32611")
    ds = era5()
    with pytest.warns(UserWarning, match="10 m above the ground"):
        out = geofield.wind(d, init_grid=ds, init_time="2024-06-21T18:00", nz=8,
                            backend="cpu", profile="uniform")
    # Flat ground: the field is the first guess. The west wind's direction on the DEM's grid is
    # 270° − γ, γ = atan(tan(λ − λ0) sin φ) (UTM 11N: λ0 = 117° W), −1.41° here; the DEM spans
    # 0.006° of longitude (γ varies by under 0.005°).
    lon, lat = pyproj.Transformer.from_crs(32611, 4326, always_xy=True).transform(
        float(d.x.mean()), float(d.y.mean()))
    gamma = math.degrees(math.atan(math.tan(math.radians(lon + 117.0))
                                   * math.sin(math.radians(lat))))
    np.testing.assert_allclose(out.direction_agl, 270.0 - gamma, atol=0.01)
    np.testing.assert_allclose(out.speed_agl, 7.0, rtol=1e-6)
    # By index, and from the NetCDF file itself: the same field.
    path = tmp_path / "era5.nc"
    ds.to_netcdf(path, format="NETCDF3_64BIT")
    with pytest.warns(UserWarning):
        again = geofield.wind(d, init_grid=path, init_time=1, nz=8, backend="cpu",
                              profile="uniform")
    np.testing.assert_array_equal(again.speed_agl, out.speed_agl)
    # The default is the first time (5 m/s), said in a warning.
    with pytest.warns(UserWarning, match="using the first"):
        first = geofield.wind(d, init_grid=path, nz=8, backend="cpu", profile="uniform")
    np.testing.assert_allclose(first.speed_agl, 5.0, rtol=1e-6)


def wrf_dataset(speeds=(5.0, 7.0), nx=30, ny=24, dx=4000.0):
    """A Dataset as xarray opens WRF's output: a Lambert conformal grid (true latitudes 30 and
    60, standard longitude 98 W, WRF's sphere of 6370 km; Snyder 1987 eqs. 15-1 to 15-11)
    centred at 119 W, 45 N, XLONG/XLAT per time, Times as text, and a west wind of ``speeds``
    m/s written in the grid's axes (turned by -n (lon - lon0)) as WRF writes U10/V10."""
    r, lon0 = 6370000.0, -98.0
    p1, p2 = math.radians(30.0), math.radians(60.0)
    t = lambda p: math.tan(math.pi / 4 + p / 2)  # noqa: E731
    n = math.log(math.cos(p1) / math.cos(p2)) / math.log(t(p2) / t(p1))
    rf = r * math.cos(p1) * t(p1) ** n / n
    rho0 = rf / t(math.radians(45.0)) ** n
    th_c = n * math.radians(-119.0 - lon0)
    xc, yc = rho0 * math.sin(th_c), rho0 - rho0 * math.cos(th_c)  # the centre, at 45 N
    X = xc + (np.arange(nx) - (nx - 1) / 2) * dx
    Y = yc + (np.arange(ny) - (ny - 1) / 2) * dx
    X, Y = np.meshgrid(X, Y)
    rho = np.hypot(X, rho0 - Y)
    lon = lon0 + np.degrees(np.arctan2(X, rho0 - Y) / n)
    lat = np.degrees(2 * np.arctan((rf / rho) ** (1 / n)) - math.pi / 2)
    alpha = n * np.radians(lon - lon0)
    u = np.stack([s * np.cos(alpha) for s in speeds])
    v = np.stack([s * np.sin(alpha) for s in speeds])
    dims = ("Time", "south_north", "west_east")
    k = len(speeds)
    ds = xr.Dataset(
        {"U10": (dims, u.astype("f4"), {"units": "m s-1"}),
         "V10": (dims, v.astype("f4"), {"units": "m s-1"}),
         "Times": (("Time",), np.array([f"2024-06-21_{18 + i}:00:00" for i in range(k)],
                                       dtype="S19"))},
        coords={"XLONG": (dims, np.repeat(lon[None], k, 0), {"units": "degree_east"}),
                "XLAT": (dims, np.repeat(lat[None], k, 0), {"units": "degree_north"})})
    ds.attrs.update(MAP_PROJ=1, TRUELAT1=30.0, TRUELAT2=60.0, STAND_LON=lon0, DX=dx, DY=dx)
    return ds


def test_wrf_output_as_xarray_opens_it():
    # WRF's curvilinear grid read as it is: its grid-relative U10/V10 (a 15 degree rotation at
    # 119 W) come back as the west wind on the DEM's grid, 270 - gamma as for ERA5's grid
    # above. Tolerance: the grid's turn is measured across a cell (the rotation changes by
    # 0.006 degrees over one), WRF's sphere against UTM's ellipsoid tilts a bearing by at most
    # 0.1 degree, plus the f32 components (1e-7 relative).
    pyproj = pytest.importorskip("pyproj")
    x0, y0 = pyproj.Transformer.from_crs(4326, 32611, always_xy=True).transform(-119.0, 45.0)
    d = dem(lambda X, Y: np.full_like(X, 300.0), n=(16, 16), h=30.0, x0=x0, y0=y0,
            crs="EPSG:32611")
    ds = wrf_dataset()
    with pytest.warns(UserWarning, match="WRF's grid-relative"):
        out = geofield.wind(d, init_grid=ds, init_time="2024-06-21T19:00", nz=8,
                            backend="cpu", profile="uniform")
    lon, lat = pyproj.Transformer.from_crs(32611, 4326, always_xy=True).transform(
        float(d.x.mean()), float(d.y.mean()))
    gamma = math.degrees(math.atan(math.tan(math.radians(lon + 117.0))
                                   * math.sin(math.radians(lat))))
    np.testing.assert_allclose(out.direction_agl, 270.0 - gamma, atol=0.11)
    np.testing.assert_allclose(out.speed_agl, 7.0, rtol=1e-5)
    # Taken as east/north components, the same file is off by the grid's rotation.
    with pytest.warns(UserWarning):
        wrong = geofield.wind(d, init_grid=ds, init_time=1, nz=8, backend="cpu",
                              profile="uniform", init_wind_axes="earth")
    assert float(np.abs(wrong.direction_agl - (270.0 - gamma)).min()) > 10.0
    with pytest.raises(geofield.GeofieldValueError, match="init_wind_axes"):
        geofield.wind(d, init_grid=ds, init_wind_axes="north")


def test_refusals(tmp_path):
    d = dem(hill, crs=None)
    h5 = tmp_path / "wx4.nc"
    h5.write_bytes(b"\x89HDF\r\n\x1a\n00000000")
    with pytest.raises(geofield.GeofieldValueError, match="nccopy"):
        geofield.wind(d, init_grid=h5)
    st = {"x_m": [500300.0], "y_m": [4100300.0], "height_agl_m": [10.0],
          "speed_m_per_s": [6.0], "direction_deg": [235.0]}
    with pytest.raises(geofield.GeofieldValueError, match="give one of"):
        geofield.wind(d, st, init_grid=h5)
    with pytest.raises(geofield.GeofieldValueError, match="DEM declares no CRS"):
        geofield.wind(d, init_grid=era5(), init_height_m=10.0)
    with pytest.raises(geofield.GeofieldValueError, match="out of range"):
        geofield.wind(d, init_grid=era5(), init_time=5, init_crs="EPSG:32611")
    with pytest.raises(geofield.GeofieldValueError, match="init_grid"):
        geofield.wind(d, init_grid=42)


def test_diurnal_takes_the_grids_temperature_and_cloud_cover():
    # ERA5's t2m (K) and tcc (a fraction) beside its wind: with diurnal=... and no air_temp or
    # cloud_cover, the model takes them per column; the same values given over a grid without
    # them give the same field; a value given wins; neither: an error naming air_temp.
    pyproj = pytest.importorskip("pyproj")
    x0, y0 = pyproj.Transformer.from_crs(4326, 32611, always_xy=True).transform(-119.0, 45.0)
    xc, yc = x0 + 20 * 25.0, y0 + 16 * 25.0
    d = dem(lambda X, Y: 300 + 60 * np.exp(-(((X - xc) / 150) ** 2 + ((Y - yc) / 150) ** 2)),
            x0=x0, y0=y0, crs="EPSG:32611")
    ds = era5(times=("2024-06-21T18:00",))
    shape = ds.u10.shape
    wx = ds.assign(t2m=(ds.u10.dims, np.full(shape, 293.15), {"units": "K"}),
                   tcc=(ds.u10.dims, np.full(shape, 0.25), {"units": "(0 - 1)"}))
    when = dict(date="2024-06-21", time="11:00", utc_offset=-7)
    kw = dict(nz=12, dz_m=10.0, backend="cpu", profile="log", roughness_m=0.1)
    with pytest.warns(UserWarning, match="air temperature from"):
        gridded = geofield.wind(d, init_grid=wx, diurnal=when, **kw)
    flags = geofield.wind(d, init_grid=ds, diurnal=dict(when, air_temp=293.15 - 273.15,
                                                        cloud_cover=25.0), **kw)
    # The grid's uniform values reach each column through a bilinear blend (weights summing to
    # 1 within rounding): the same inputs to a few ulps, so the same field to ~1e-15; the
    # model's response to the temperature itself is ~1e-3 per degree (slope flows ∝ 1/T^(1/3)).
    np.testing.assert_allclose(gridded.speed_agl, flags.speed_agl, rtol=1e-12, atol=0)
    assert gridded.attrs["diurnal_air_temp_gridded"] == 1
    assert gridded.attrs["diurnal_max_slope_flow_m_per_s"] > 0  # the hill's slopes flow
    assert math.isclose(gridded.attrs["diurnal_heat_flux_mean_w_per_m2"],
                        flags.attrs["diurnal_heat_flux_mean_w_per_m2"], rel_tol=1e-12)
    # A value given wins over the grid's (with a warning): overcast, so less heat flux.
    with pytest.warns(UserWarning, match="cloud cover given is used everywhere"):
        over = geofield.wind(d, init_grid=wx, diurnal=dict(when, cloud_cover=100.0), **kw)
    assert over.attrs["diurnal_cloud_cover_gridded"] == 0
    assert over.attrs["diurnal_air_temp_gridded"] == 1
    assert over.attrs["diurnal_heat_flux_mean_w_per_m2"] < \
        gridded.attrs["diurnal_heat_flux_mean_w_per_m2"]
    with pytest.raises(ValueError, match="air_temp"):
        geofield.wind(d, init_grid=ds, diurnal=dict(when, cloud_cover=25.0), **kw)
