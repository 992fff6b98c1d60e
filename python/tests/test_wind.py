"""geofield.wind from an xarray DEM and a stations table: flat ground keeps the station's wind
(direction raster equals the station's direction, no vertical wind), the field is divergence-free
to the tolerance over a hill, CRS and orientation survive."""

import math

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


def test_domain_average_vegetation_and_points():
    # Flat ground: the domain-average first guess is already divergence-free. Trees (z0 1 m,
    # d 12 m, h 15.4 m) with layers whose second centre is 25.4 m above the ground: the input
    # height 10 m above the canopy. Its speed there is the input speed, 20 kts = 10.2889 m/s;
    # at the third centre (45.2 m, 29.8 m above the canopy) WindNinja's log law gives
    # U ln(33.2) / ln(13.4).
    d = dem(lambda X, Y: np.full_like(X, 120.0), n=(10, 8), h=30.0)
    kts = 20 * 1852 / 3600
    pts = {"id": ["a", "b", "out"], "x_m": [float(d.x[2]), float(d.x[5]) + 7.0, 0.0],
           "y_m": [float(d.y[3]), float(d.y[4]) - 11.0, 0.0], "height_agl_m": [10.0, 29.8, 10.0]}
    ds, table = geofield.wind(d, speed=20, speed_units="kts", direction=180,
                              input_height_m=10, vegetation="trees",
                              levels_m=[20.4, 30.4, 60, 100, 150, 200], height_agl_m=10.0,
                              points=pts, backend="cpu")
    np.testing.assert_allclose(ds.speed_agl, kts, rtol=1e-9)
    np.testing.assert_allclose(ds.direction_agl, 180.0, atol=1e-9)
    assert list(table.columns) == ["id", "x_m", "y_m", "height_agl_m", "u", "v", "w", "speed",
                                   "direction", "ground_m", "inside"]
    assert list(table.inside) == [True, True, False]
    np.testing.assert_allclose(table.speed[:2], [kts, kts * np.log(33.2) / np.log(13.4)],
                               rtol=1e-9)
    np.testing.assert_allclose(table.v[:2], table.speed[:2], rtol=1e-12)  # from the south
    np.testing.assert_allclose(table.ground_m[:2], 120.0, rtol=1e-12)
    assert np.isnan(table.speed[2])


def test_windninja_station_csv_path_and_dataframe(tmp_path):
    pd = pytest.importorskip("pandas")
    pyproj = pytest.importorskip("pyproj")
    # A DEM in UTM 11N around (46.9 N, 114 W); one GEOGCS station at that point, 10 mph.
    d = dem(lambda X, Y: np.full_like(X, 900.0), n=(12, 10), h=30.0, x0=728300.0, y0=5198250.0)
    header = ["Station_Name", "Coord_Sys(PROJCS,GEOGCS)", "Datum(WGS84,NAD83,NAD27)",
              "Lat/YCoord", "Lon/XCoord", "Height", "Height_Units(meters,feet)", "Speed",
              "Speed_Units(mph,kph,mps,kts)", "Direction(degrees)", "Temperature",
              "Temperature_Units(F,C)", "Cloud_Cover(%)", "Radius_of_Influence",
              "Radius_of_Influence_Units(miles,feet,meters,km)"]
    row = ["s1", "GEOGCS", "WGS84", 46.9, -114.0, 33, "feet", 10, "mph", 300, 70, "F", 0, -1,
           "miles"]
    df = pd.DataFrame([row], columns=header)
    path = tmp_path / "wx.csv"
    df.to_csv(path, index=False)
    # The station's 300 degrees are from true north (WindNinja's rule): on the grid it reads
    # 300 - gamma, gamma = atan(tan(lon - lon0) sin(lat)) the meridian convergence of UTM 11N
    # (lon0 = 117 W) at the station (Snyder 1987, eq. 8-11; +2.2 degrees here); 1e-6 rad covers
    # the sphere's formula against the ellipsoid and the bearing's 1 m step.
    gamma = math.degrees(math.atan(math.tan(math.radians(-114.0 + 117.0))
                                   * math.sin(math.radians(46.9))))
    for stations in (df, path):
        ds = geofield.wind(d, stations, profile="uniform", nz=6, crs=32611, backend="cpu")
        np.testing.assert_allclose(ds.speed_agl, 10 * 1609.344 / 3600, rtol=1e-9)
        np.testing.assert_allclose(ds.direction_agl, 300.0 - gamma, atol=math.degrees(1e-6))
        assert ds.attrs["ignored_stations"] == "[]"
    # Directions on the grid's north already: taken as they are.
    ds = geofield.wind(d, df, profile="uniform", nz=6, crs=32611, backend="cpu",
                       grid_directions=True)
    np.testing.assert_allclose(ds.direction_agl, 300.0, atol=1e-9)
    # The projection agrees with PROJ: a station just outside is reported at PROJ's position.
    x, y = pyproj.Transformer.from_crs("EPSG:4326", "EPSG:32611", always_xy=True).transform(
        -114.0, 46.91)
    df.loc[0, "Lat/YCoord"] = 46.91
    df2 = pd.concat([df, pd.DataFrame([row], columns=header).assign(Station_Name="in")])
    ds = geofield.wind(d, df2, profile="uniform", nz=6, crs=32611, backend="cpu")
    assert f"({x:.1f}, {y:.1f})" in ds.attrs["ignored_stations"]


def test_geographic_dem_is_refused():
    d = dem(lambda X, Y: np.full_like(X, 100.0), n=(6, 5), h=0.001, x0=-114.0, y0=46.9)
    with pytest.raises(geofield.GeofieldValueError, match="geographic"):
        geofield.wind(d, speed=5, direction=90, crs=4326, backend="cpu")


def test_a_crs_without_an_epsg_code_is_carried_as_wkt():
    pytest.importorskip("rioxarray")
    pyproj = pytest.importorskip("pyproj")
    # A Lambert azimuthal equal-area projection centred on a site: no EPSG code exists for it.
    laea = pyproj.CRS.from_proj4("+proj=laea +lat_0=47.3 +lon_0=-121.7 +x_0=500000 "
                                 "+y_0=4100000 +ellps=GRS80 +units=m +no_defs")
    assert laea.to_epsg() is None
    d = dem(lambda X, Y: 100 + 0.02 * (X - 500000)).rio.write_crs(laea)
    ds = geofield.wind(d, station(d), nz=8, dz_m=10.0, backend="cpu")
    assert pyproj.CRS.from_wkt(ds.rio.crs.to_wkt()).equals(laea)
    # The same CRS given as `crs=` (a pyproj object or its WKT) on a DEM without one.
    for crs in (laea, laea.to_wkt()):
        ds = geofield.wind(dem(lambda X, Y: np.full_like(X, 100.0)), station(d), nz=8,
                           dz_m=10.0, backend="cpu", crs=crs)
        assert pyproj.CRS.from_wkt(ds.spatial_ref.attrs["crs_wkt"]).equals(laea)
    # A geographic CRS without an EPSG code (a sphere) is refused like EPSG:4326.
    sphere = pyproj.CRS.from_proj4("+proj=longlat +a=6370000 +b=6370000 +no_defs")
    with pytest.raises(ValueError, match="geographic"):
        geofield.wind(d.rio.write_crs(sphere), station(d), nz=8, dz_m=10.0, backend="cpu")
    with pytest.raises(ValueError, match="crs"):
        geofield.wind(d, station(d), nz=8, dz_m=10.0, backend="cpu", crs="UTM zone 11")


def _cone(X, Y, cx=500500.0, cy=4100400.0):
    # 150 m high, 400 m in radius (slope 20.6 degrees) on a plain at 100 m.
    return 100 + 150 * np.clip(1 - np.hypot(X - cx, Y - cy) / 400.0, 0, None)


def test_diurnal_slope_flows_up_by_day_down_by_night(backend):
    """WindNinja's diurnal winds on a cone under a calm domain wind: masts 5 m above the west
    and east flanks blow up the slope at local noon (west flank east, east flank west) and down
    it at night, compared to the run without; the heat flux is positive by day, negative by
    night (Holtslag & van Ulden 1983)."""
    d = dem(_cone, n=(40, 32))
    pts = {"x_m": [500500.0 - 200, 500500.0 + 200], "y_m": [4100400.0] * 2,
           "height_agl_m": [5.0, 5.0], "id": ["west", "east"]}
    kw = dict(speed=0.5, direction=0.0, nz=30, dz_m=10.0, backend=backend, points=pts,
              crs=32613)

    def run(time=None):
        diurnal = None if time is None else dict(
            date="2024-06-21", time=time, utc_offset=-7, air_temp=20.0, cloud_cover=0.0)
        ds, t = geofield.wind(d, diurnal=diurnal, **kw)
        return ds, t.set_index("id")["u"]

    _, plain = run()
    day_ds, day = run("12:00")
    night_ds, night = run("00:30")
    assert day["west"] - plain["west"] > 0.1 and day["east"] - plain["east"] < -0.1
    assert night["west"] - plain["west"] < -0.1 and night["east"] - plain["east"] > 0.1
    assert day_ds.attrs["diurnal_heat_flux_mean_w_per_m2"] > 0
    assert night_ds.attrs["diurnal_heat_flux_mean_w_per_m2"] < 0
    # The place came from the CRS: UTM 13N at 500 500 E is on the zone's meridian, 105 W.
    assert day_ds.attrs["diurnal_sun_zenith_deg"] < 20.0


def test_diurnal_non_neutral_and_bad_inputs():
    d = dem(_cone)
    kw = dict(speed=3.0, direction=270.0, nz=30, dz_m=10.0, backend="cpu", crs=32613)
    inputs = dict(date="2024-06-21", time="12:00", utc_offset=-7, air_temp=20.0, cloud_cover=0)
    ds = geofield.wind(d, diurnal=dict(inputs, slope_flows=False), non_neutral_stability=True,
                       **kw)
    assert ds.attrs["non_neutral_stability"] == 1
    assert ds.attrs["diurnal_obukhov_length_m"] < 0  # unstable by day
    assert ds.attrs["diurnal_max_slope_flow_m_per_s"] == 0
    with pytest.raises(ValueError, match="non_neutral_stability needs diurnal"):
        geofield.wind(d, non_neutral_stability=True, **kw)
    with pytest.raises(ValueError, match="air_temp"):
        geofield.wind(d, diurnal={k: v for k, v in inputs.items() if k != "air_temp"}, **kw)
    with pytest.raises(ValueError, match="time"):
        geofield.wind(d, diurnal=dict(inputs, time="25:00"), **kw)
    # A named zone: its offset at the date (21 June in Denver: daylight time, UTC-6).
    no_offset = {k: v for k, v in inputs.items() if k != "utc_offset"}
    named = geofield.wind(d, diurnal=dict(no_offset, time_zone="America/Denver"), **kw)
    fixed = geofield.wind(d, diurnal=dict(inputs, utc_offset=-6), **kw)
    assert named.attrs["diurnal_obukhov_length_m"] == fixed.attrs["diurnal_obukhov_length_m"]
    assert np.array_equal(named["u"].values, fixed["u"].values, equal_nan=True)
    with pytest.raises(ValueError, match="time_zone"):
        geofield.wind(d, diurnal=dict(no_offset, time_zone="Mars/Olympus_Mons"), **kw)
    with pytest.raises(ValueError, match="does not exist"):
        geofield.wind(d, diurnal=dict(no_offset, date="2024-03-10", time="02:30",
                                      time_zone="America/Denver"), **kw)
    with pytest.raises(ValueError, match="lat"):
        geofield.wind(d.drop_vars([c for c in d.coords if c not in ("x", "y")]),
                      diurnal=inputs, **{**kw, "crs": None})
