"""Wind fields: a mass-consistent 3-D wind over terrain from station observations (Sherman's
variational model, solved to a tolerance, or the WEST model of the paper)."""

from __future__ import annotations

import json
import os
import tempfile

import numpy as np

from . import _arrays, _native, _progress, _xr
from ._errors import GeofieldValueError

_STATION_COLUMNS = {
    "x_m": ("x_m", "x"), "y_m": ("y_m", "y"), "height_agl_m": ("height_agl_m", "height_m", "z_m"),
    "speed_m_per_s": ("speed_m_per_s", "speed"), "direction_deg": ("direction_deg", "direction"),
}


def _col(stations, names, required=True):
    for n in names:
        try:
            return stations[n]
        except (KeyError, IndexError, TypeError, ValueError):
            continue
    if required:
        raise GeofieldValueError(f"stations: no column {' or '.join(map(repr, names))}")
    return None


def _init_grid(grid, u, v, time, height_m, crs, wind_axes=None):
    """The native source tuple of ``wind``'s ``init_grid`` and the temporary file to remove."""
    tmp = None
    if isinstance(grid, (tuple, list)):
        if len(grid) != 2:
            raise GeofieldValueError("init_grid: give a path, a Dataset or (u, v) DataArrays")
        import xarray as xr
        u, v = "u_init", "v_init"
        grid = xr.Dataset({u: grid[0], v: grid[1]})
    if not isinstance(grid, (str, os.PathLike)):
        if not hasattr(grid, "to_netcdf"):
            raise GeofieldValueError("init_grid: give a path, an xarray.Dataset or (u, v) "
                                     "DataArrays")
        # One reader for the rules: the library's, on a NetCDF-3 copy of the Dataset.
        fd, tmp = tempfile.mkstemp(suffix=".nc")
        os.close(fd)
        if crs is None:
            try:  # rioxarray's CRS, when it is imported and the Dataset has one
                crs = grid.rio.crs
            except Exception:  # noqa: BLE001 - no rioxarray or no CRS: the reader's rules
                crs = None
        grid.to_netcdf(tmp, format="NETCDF3_64BIT")
        path = tmp
    else:
        path = os.fspath(grid)
    if time is not None and not isinstance(time, (int, np.integer)):
        time = str(np.datetime64(time, "s")) if not isinstance(time, str) else time
    if height_m is not None:
        height_m = float(height_m)
    epsg = None if crs is None else _xr.epsg_of(crs)
    if crs is not None and epsg is None:
        raise GeofieldValueError(f"init_crs: {crs!r} has no EPSG code")
    if wind_axes is not None and wind_axes not in ("earth", "grid"):
        raise GeofieldValueError(f"init_wind_axes: expected 'earth' or 'grid', got {wind_axes!r}")
    return ("grid_file", path, u, v, None if time is None else str(time), height_m, epsg,
            wind_axes), tmp


def _stations(stations):
    cols = {k: _arrays.floats(f"stations.{k}", _col(stations, v))
            for k, v in _STATION_COLUMNS.items()}
    n = _arrays.same_length(**{f"stations.{k}": v for k, v in cols.items()})
    ids = _col(stations, ("id", "station"), required=False)
    ids = [str(i) for i in (ids if ids is not None else range(n))]
    st = _col(stations, ("stability",), required=False)
    st = [None] * n if st is None else [None if (s is None or s != s or s == "") else str(s)
                                        for s in st]
    if len(ids) != n or len(st) != n:
        raise GeofieldValueError("stations: the id and stability columns must have one value "
                                 "per station")
    return (ids, cols["x_m"], cols["y_m"], cols["height_agl_m"], cols["speed_m_per_s"],
            cols["direction_deg"], st)


def _dem(dem):
    """(native DEM argument, EPSG or None)."""
    if isinstance(dem, (str, os.PathLike)):
        return os.fspath(dem), None
    if not hasattr(dem, "dims") or not hasattr(dem, "coords"):
        raise GeofieldValueError("dem: expected a path or an xarray.DataArray with x/y coordinates")
    da = dem.squeeze(drop=True)
    if da.ndim != 2 or "x" not in da.coords or "y" not in da.coords:
        raise GeofieldValueError(f"dem: expected a 2-D DataArray with x and y coordinates, got "
                                 f"dims {da.dims}")
    da = da.transpose("y", "x")
    x = np.asarray(da.x, dtype=float)
    y = np.asarray(da.y, dtype=float)
    if x.size < 2 or y.size < 2:
        raise GeofieldValueError("dem: needs at least 2 cells in x and y")
    h = x[1] - x[0]
    z = np.asarray(da.values, dtype=float)
    if y[1] > y[0]:  # south-up: flip to row 0 north
        y, z = y[::-1], z[::-1]
    if h < 0:
        x, z, h = x[::-1], z[:, ::-1], -h
    if not (np.allclose(np.diff(x), h, rtol=1e-9, atol=0)
            and np.allclose(np.diff(y), -h, rtol=1e-9, atol=0)):
        raise GeofieldValueError("dem: the x and y coordinates must be evenly spaced with square "
                                 "cells")
    z = _arrays.floats("dem", np.ascontiguousarray(z).ravel())
    crs = None
    try:
        crs = da.rio.crs  # rioxarray, when imported
        code = None if crs is None else crs.to_epsg()
        crs = code if code is not None else crs  # the EPSG code, or the CRS object without one
    except AttributeError:
        pass
    grid = (float(x[0] - h / 2), float(y[0] + h / 2), float(h), int(y.size), int(x.size))
    return (z, grid), crs


_SPEED_UNITS = {"mps": 1.0, "kph": 1000.0 / 3600.0, "mph": 1609.344 / 3600.0,
                "kts": 1852.0 / 3600.0}


def _is_windninja(stations):
    cols = getattr(stations, "columns", None)
    return cols is not None and len(cols) > 0 and str(cols[0]).strip().lower().startswith(
        "station_name")


def _points(points):
    """(x, y, height_agl_m) arrays and ids of a points table."""
    x = _arrays.floats("points.x_m", _col(points, ("x_m", "x")))
    y = _arrays.floats("points.y_m", _col(points, ("y_m", "y")))
    h = _arrays.floats("points.height_agl_m", _col(points, ("height_agl_m", "height_m", "z_m")))
    n = _arrays.same_length(**{"points.x_m": x, "points.y_m": y, "points.height_agl_m": h})
    ids = _col(points, ("id",), required=False)
    ids = [str(i) for i in (ids if ids is not None else range(n))]
    return (x, y, h), ids


_DIURNAL_KEYS = {"date", "time", "utc_offset", "time_zone", "air_temp", "cloud_cover", "lat",
                 "lon", "slope_flows"}


def _diurnal(d, gridded=False):
    """The native tuple of ``diurnal`` (see ``wind``); with ``gridded`` (an ``init_grid``),
    ``air_temp`` and ``cloud_cover`` may come from the grid."""
    import datetime as _dt

    if not isinstance(d, dict):
        raise GeofieldValueError("diurnal: expected a dict(date=..., time=..., utc_offset=..., "
                                 "air_temp=..., cloud_cover=...)")
    unknown = sorted(set(d) - _DIURNAL_KEYS)
    if unknown:
        raise GeofieldValueError(f"diurnal: unknown keys {unknown}; expected "
                                 f"{sorted(_DIURNAL_KEYS)}")
    for key in ("date",) if gridded else ("date", "air_temp", "cloud_cover"):
        if d.get(key) is None:
            raise GeofieldValueError(f"diurnal: needs {key!r}")
    date, time = d["date"], d.get("time")
    if isinstance(date, _dt.datetime):
        if time is not None:
            raise GeofieldValueError("diurnal: 'date' is a datetime: leave 'time' out")
        date, time = date.date(), date.time()
    if time is None:
        raise GeofieldValueError("diurnal: needs 'time' (local, \"HH:MM\")")
    if isinstance(date, str):
        try:
            date = _dt.date.fromisoformat(date.strip())
        except ValueError:
            raise GeofieldValueError(f"diurnal: date {date!r} is not YYYY-MM-DD") from None
    if isinstance(time, str):
        try:
            hh, mm = time.strip().split(":")
            time = _dt.time(int(hh), int(mm))
        except ValueError:
            raise GeofieldValueError(f"diurnal: time {time!r} is not HH:MM (0-23, 0-59)") from None
    if not isinstance(date, _dt.date) or not isinstance(time, _dt.time):
        raise GeofieldValueError("diurnal: date must be \"YYYY-MM-DD\" or a date, time \"HH:MM\" "
                                 "or a time")
    if (d.get("utc_offset") is None) == (d.get("time_zone") is None):
        raise GeofieldValueError("diurnal: give one of 'utc_offset' (hours, local minus UTC) "
                                 "and 'time_zone' (\"America/Denver\" or a fixed offset such as "
                                 "\"UTC-7\")")
    if (d.get("lat") is None) != (d.get("lon") is None):
        raise GeofieldValueError("diurnal: give both 'lat' and 'lon', or neither (the DEM's CRS)")
    opt = (lambda k: None if d.get(k) is None else float(d[k]))
    return (int(date.year), int(date.month), int(date.day), int(time.hour), int(time.minute),
            opt("utc_offset"), None if d.get("time_zone") is None else str(d["time_zone"]),
            opt("air_temp"), opt("cloud_cover"), opt("lat"), opt("lon"),
            bool(d.get("slope_flows", True)))


def wind(dem, stations=None, *, speed=None, direction=None, input_height_m=10.0,
         speed_units="mps", vegetation=None, points=None, nz=32, dz_m=10.0, levels_m=None,
         growth=None, top_m=None, cell_size_m=None, model="sherman", solver="multigrid",
         tolerance=1e-6, max_iterations=2000, profile=None, roughness_m=0.1, alpha=None,
         stability="D", radius_m=None, lid=False, terrain=None, height_agl_m=10.0,
         backend="auto", crs=None, progress=False, diurnal=None, non_neutral_stability=False,
         init_grid=None, init_u=None, init_v=None, init_time=None, init_height_m=None,
         init_crs=None, init_wind_axes=None, grid_directions=False):
    """The wind field over ``dem`` from ``stations`` (or a domain-average wind, or a weather
    model's gridded wind), as an
    ``xarray.Dataset``; with ``points``, ``(dataset, DataFrame)``.

    Parameters
    ----------
    dem : path or xarray.DataArray
        Elevation in metres on a projected grid: a GeoTIFF or ESRI ASCII grid (``cell_size_m``
        may coarsen it by block averaging), or a DataArray with evenly spaced ``x``/``y`` (its
        CRS is read with rioxarray when present). A geographic DEM (degrees) is refused:
        reproject it first.
    stations : pandas.DataFrame, dict of arrays or path, optional
        ``x_m``, ``y_m``, ``height_agl_m`` (anemometer height above ground), ``speed_m_per_s``,
        ``direction_deg`` (where the wind comes from, clockwise from north); optional ``id`` and
        ``stability`` (Pasquill class A-F). Or a CSV path, geofield's format or WindNinja's
        station file as it is (detected by its ``Station_Name`` header; lat/lon rows projected
        to the DEM's CRS, units converted, its largest radius of influence used unless
        ``radius_m``), or a DataFrame with WindNinja's columns.
    init_grid : path, xarray.Dataset or (u, v) DataArrays, optional
        Instead of ``stations``, WindNinja's weather-model initialisation: the wind at one
        height above the ground on a grid (ERA5, GFS, NAM, HRRR subsets; longitude/latitude, the
        DEM's CRS or another), interpolated bilinearly to every DEM column, turned from the
        grid's north to the DEM's, and extended up each column by the profile. A path is read
        by the library (NetCDF-3; NetCDF-4 is refused with the command that converts it); a
        Dataset (any file xarray opens: NetCDF-4, GRIB with cfgrib) is handed to the same
        reader. The variables (``init_u``, ``init_v``; default by ``standard_name``
        eastward_wind/northward_wind or the names u10/v10, uas/vas, u/v, …), the time
        (``init_time``: an index, or a date "YYYY-MM-DDTHH:MM" / datetime64 in UTC; default the
        first), the height above the ground (``init_height_m``; default the file's ``height``
        coordinate, or 10 m for u10-like names) and the grid's CRS (``init_crs``; default
        longitude/latitude axes, the grid mapping, or the DEM's CRS) are found as
        ``geofield wind --init-grid`` finds them; what was assumed is issued as a warning.
        Curvilinear grids are read as they are: WRF's output (``XLONG``/``XLAT``, ``Times``,
        its grid-relative ``U10``/``V10``) and grids with 2-D longitude/latitude coordinates;
        ``init_wind_axes`` ("earth" or "grid") says where their u and v point when the file
        does not (default: ``standard_name`` eastward_wind or x_wind; WRF's are "grid").
    speed, direction, input_height_m, speed_units
        Instead of ``stations``, WindNinja's domain-average initialisation: ``speed`` (in
        ``speed_units``: "mps", "kph", "mph" or "kts") from ``direction`` (degrees, where it
        comes from) at ``input_height_m`` above the ground everywhere.
    vegetation : {"grass", "brush", "trees"}, optional
        WindNinja's vegetation class: the log profile with its roughness length and
        displacement height (grass 0.01/0 m, brush 0.43/1.8 m, trees 1.0/12 m); the input,
        station, output and point heights are then above the vegetation top (brush 2.3 m,
        trees 15.4 m), as in WindNinja.
    points : pandas.DataFrame or dict of arrays, optional
        Masts to sample: ``x_m``, ``y_m`` (the DEM's CRS), ``height_agl_m``, optional ``id``.
        The returned DataFrame adds ``ground_m``, ``u``, ``v``, ``w``, ``speed``, ``direction``
        and ``inside`` (NaN and False outside the grid): trilinear in the fluid (linear between
        layer centres in each column at that height above its own ground, bilinear between
        columns).
    nz, dz_m, levels_m
        ``nz`` layers of ``dz_m`` metres, or the layer tops ``levels_m`` (stretched layers).
    growth, top_m
        Stretched layers without listing them: the first ``dz_m`` thick, each ``growth`` times
        the one below (1 to 2; WindNinja uses 1.3), up to a model top ``top_m`` metres above the
        highest ground (default with ``growth``: 3 × the relief, at least 200 m). ``top_m``
        alone gives uniform ``dz_m`` layers up to that top. Not with ``levels_m``.
    model : {"sherman", "west"}
    solver : {"multigrid", "mgcg", "sor"}
    tolerance, max_iterations
        Stop when max |div u| ≤ tolerance × max |div u0|.
    profile : {"power", "log", "uniform"}, optional
        Vertical extrapolation of the stations (``roughness_m`` for "log"); default "power",
        or "log" with ``vegetation``.
    stability : str
        Class of stations without one.
    radius_m : float, optional
        Only stations within this distance inform a column.
    grid_directions : bool
        The stations' (and ``direction``'s) directions are on the DEM grid's north. Default:
        they are meteorological, from true north, and each is turned to the grid's north at its
        station by the meridian convergence, as WindNinja does (needs the DEM's CRS; without
        one they are taken as they are). ``direction_agl`` is on the grid's north either way.
    lid : bool
        A closed top instead of an open one.
    terrain : {"cut", "stairs"}, optional
        The ground as a surface cutting cells and faces (default for "sherman") or stair steps
        of whole cells (the default and only choice for "west").
    height_agl_m : float
        Height above ground of the ``speed_agl``/``direction_agl`` maps.
    crs : int, str or CRS, optional
        The outputs' CRS (default: the DEM's): an EPSG code (``32633`` or ``"EPSG:32633"``), or
        a CRS without one (WKT, or a pyproj/rasterio CRS), carried as WKT.
    progress : bool
        Show a progress bar (tqdm if installed, else a text bar on stderr) of the solve: the
        residual's reduction towards ``tolerance`` on a log scale.
    diurnal : dict, optional
        WindNinja's diurnal winds (Forthofer et al. 2014): upslope flows by day and downslope
        by night, from the sun on each slope and the surface heat flux (Holtslag & van Ulden
        1983), added to the first guess. Keys: ``date`` ("YYYY-MM-DD" or a ``datetime.date``),
        ``time`` (local "HH:MM" or a ``datetime.time``; or ``date`` a ``datetime.datetime``),
        ``utc_offset`` (hours, local time minus UTC, e.g. -7) or ``time_zone`` (a zone of the
        IANA database such as "America/Denver", its offset at the date with daylight saving
        time, or a fixed offset such as "UTC-7" or "-06:00"), ``air_temp`` (°C),
        ``cloud_cover`` (%, 0–100; both optional with ``init_grid``: a weather model's
        near-surface air temperature and cloud cover, such as ERA5's ``t2m`` and ``tcc``, are
        then used per DEM column), and
        optionally ``lat``/``lon`` (degrees; default the DEM centre's, from its CRS) and
        ``slope_flows`` (default True; False with ``non_neutral_stability`` for the stability
        correction alone, as WindNinja's ``non_neutral_stability`` without ``diurnal_winds``).
        The model's summary is in the attrs ``diurnal_*``.
    non_neutral_stability : bool
        The log profile corrected by Monin–Obukhov similarity (Paulson 1970 unstable, van Ulden
        & Holtslag 1985 stable) with the Obukhov length of each column's heat flux; needs
        ``diurnal``. Sets ``profile="log"`` when no profile is given.

    Returns
    -------
    xarray.Dataset
        ``u``, ``v``, ``w``, ``speed`` (z, y, x) at cell centres (NaN below ground), ``z`` the
        layer centres above the domain bottom; ``speed_agl``, ``direction_agl`` (y, x);
        ``terrain``; attrs with the solver report (iterations, max divergence, convergence,
        ``stop``: "converged", "iteration_cap", "stagnated", "diverged" or "fixed_iterations",
        and the solver's first and last residual ``first_residual_per_s``,
        ``last_residual_per_s``).

    Interruptible: Ctrl-C raises ``KeyboardInterrupt`` within a fraction of a second.
    """
    _xr.require_xarray("geofield.wind")
    dem_arg, dem_crs = _dem(dem)
    # The CRS of the outputs: `crs`, else the DEM's (an EPSG code, or a WKT/CRS object without
    # one, carried as WKT); the library gets the EPSG code where there is one.
    out_crs = crs if crs is not None else dem_crs
    if _xr.is_geographic(out_crs):
        raise GeofieldValueError(
            "dem: its CRS is geographic (degrees): the DEM must be on a projected grid in metres; "
            "reproject it first (e.g. rioxarray's .rio.reproject(\"EPSG:32611\"))")
    out_epsg = _xr.epsg_of(out_crs)
    if profile is None:
        profile = "log" if (vegetation is not None or non_neutral_stability) else "power"
    diurnal_arg = None if diurnal is None else _diurnal(diurnal, init_grid is not None)
    if non_neutral_stability and diurnal_arg is None:
        raise GeofieldValueError(
            "non_neutral_stability needs diurnal=dict(date=..., time=..., utc_offset=..., "
            "air_temp=..., cloud_cover=...): the Obukhov length comes from the heat flux")
    if sum(x is not None for x in (stations, speed, init_grid)) != 1:
        raise GeofieldValueError("give one of stations, init_grid (a weather model's gridded "
                                 "wind), or speed and direction (a domain-average wind)")
    tmp = None
    try:
        if init_grid is not None:
            source, tmp = _init_grid(init_grid, init_u, init_v, init_time, init_height_m,
                                     init_crs, init_wind_axes)
        elif speed is not None:
            if direction is None:
                raise GeofieldValueError("speed needs direction (where the wind comes from)")
            if speed_units not in _SPEED_UNITS:
                raise GeofieldValueError(f"speed_units: {speed_units!r} is not one of "
                                         f"{', '.join(_SPEED_UNITS)}")
            source = (float(speed) * _SPEED_UNITS[speed_units], float(direction),
                      float(input_height_m))
        elif isinstance(stations, (str, os.PathLike)):
            source = os.fspath(stations)
        elif _is_windninja(stations):
            # One reader for WindNinja's rules: the library's, on a CSV of the table.
            fd, tmp = tempfile.mkstemp(suffix=".csv")
            os.close(fd)
            stations.to_csv(tmp, index=False)
            source = tmp
        else:
            source = _stations(stations)
        pts, point_ids = (None, None) if points is None else _points(points)
        with _progress.bar(progress, "wind") as bar:
            (u, v, w, speed_c, speed_h, dir_h, grid, z, terrain_m, report, file_epsg,
             (used, samples)) = _native.wind(
                dem_arg, None if cell_size_m is None else float(cell_size_m), source,
                int(nz), float(dz_m), None if levels_m is None else [float(t) for t in levels_m],
                None if growth is None else float(growth),
                None if top_m is None else float(top_m),
                model, solver, float(tolerance), int(max_iterations), profile, float(roughness_m),
                None if alpha is None else float(alpha), stability,
                None if radius_m is None else float(radius_m), bool(lid),
                None if terrain is None else str(terrain), float(height_agl_m),
                backend, vegetation, pts, out_epsg,
                progress=bar, diurnal=diurnal_arg,
                non_neutral_stability=bool(non_neutral_stability),
                grid_directions=bool(grid_directions))
    finally:
        if tmp is not None:
            os.unlink(tmp)
    speed = speed_c
    epsg = out_crs if out_crs is not None else file_epsg
    info = json.loads(report)
    rep = info["report"]
    ds = _xr.grid_dataset(
        "geofield.wind", [speed_h, dir_h, terrain_m], ["speed_agl", "direction_agl", "terrain"],
        grid, crs=epsg, units=["m s-1", "degree", "m"],
        long_names=[f"horizontal wind speed {height_agl_m:g} m above ground",
                    f"wind direction (from, clockwise from north) {height_agl_m:g} m above ground",
                    "ground elevation"],
        attrs={"title": "mass-consistent wind field", "source": "geofield.wind",
               "backend": used, "method": rep["method"], "iterations": rep["iterations"],
               "converged": int(rep["converged"]), "max_div0_per_s": rep["max_div0_per_s"],
               "max_div_per_s": rep["max_div_per_s"], "rms_div_per_s": rep["rms_div_per_s"],
               "threshold_per_s": rep["threshold_per_s"], "stop": rep["stop"],
               "first_residual_per_s": rep["first_residual_per_s"],
               "last_residual_per_s": rep["last_residual_per_s"],
               "bottom_elevation_m": info["bottom_m"],
               "ignored_stations": json.dumps(info["ignored_stations"])})
    if rep.get("diurnal") is not None:
        for key, value in rep["diurnal"].items():
            # NetCDF attributes hold no booleans: 0/1.
            ds.attrs[f"diurnal_{key}"] = int(value) if isinstance(value, bool) else value
        ds.attrs["non_neutral_stability"] = int(bool(non_neutral_stability))
    ds["speed_agl"].attrs["height_agl_m"] = float(height_agl_m)
    ds["direction_agl"].attrs["height_agl_m"] = float(height_agl_m)
    ds = ds.assign_coords(z=("z", np.asarray(z), {
        "units": "m", "positive": "up", "axis": "Z",
        "long_name": "layer centre height above the domain bottom"}))
    grid_map = {"grid_mapping": "spatial_ref"} if "spatial_ref" in ds.coords else {}
    for name, arr, units, long in (("u", u, "m s-1", "eastward wind"),
                                   ("v", v, "m s-1", "northward wind"),
                                   ("w", w, "m s-1", "upward wind"),
                                   ("speed", speed, "m s-1", "horizontal wind speed")):
        ds[name] = (("z", "y", "x"), arr, {"units": units, "long_name": long, **grid_map})
    if samples is None:
        return ds
    import pandas as pd

    table = pd.DataFrame({"id": point_ids, "x_m": pts[0], "y_m": pts[1],
                          "height_agl_m": pts[2]})
    for i, name in enumerate(("u", "v", "w", "speed", "direction", "ground_m")):
        table[name] = samples[:, i]
    table["inside"] = samples[:, 6] == 1.0
    return ds, table
