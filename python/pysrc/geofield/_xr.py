"""xarray outputs: cell-centre ``x``/``y`` coordinates (row 0 north, so ``y`` decreases) and a CF
``spatial_ref`` grid-mapping variable, so ``ds.rio.to_raster("out.tif")`` writes a
georeferenced GeoTIFF and QGIS, GDAL and rioxarray read the CRS."""

from __future__ import annotations

import numpy as np

from . import _native


def require_xarray(what: str):
    """Import xarray, or raise an ImportError that says which function needs it."""
    try:
        import xarray  # noqa: PLC0415 - optional dependency
    except ImportError as e:
        raise ImportError(
            f"{what} returns an xarray.Dataset: install xarray (pip install xarray), "
            f"or geofield[xarray]") from e
    return xarray


def coords(grid) -> tuple[np.ndarray, np.ndarray]:
    """Cell-centre x (east) and y (north, decreasing) of ``grid = (x_min, y_max, h, rows, cols)``."""
    x_min, y_max, h, rows, cols = grid
    x = x_min + (np.arange(cols) + 0.5) * h
    y = y_max - (np.arange(rows) + 0.5) * h
    return x, y


_WKT_STARTS = ("PROJCS[", "GEOGCS[", "PROJCRS[", "GEOGCRS[", "GEODCRS[", "BOUNDCRS[",
               "COMPOUNDCRS[", "COMPD_CS[", "LOCAL_CS[", "ENGCRS[")


def epsg_of(crs):
    """The EPSG code of ``crs`` (an int, "EPSG:N", a WKT string, or a pyproj / rasterio CRS),
    or None when it has none (a WKT without an authority code); raises on anything else."""
    from ._errors import GeofieldValueError

    if crs is None:
        return None
    if hasattr(crs, "to_wkt"):  # pyproj.CRS, rasterio.crs.CRS
        code = crs.to_epsg() if hasattr(crs, "to_epsg") else None
        return None if code is None else int(code)
    if isinstance(crs, str):
        s = crs.strip()
        if s.upper().startswith("EPSG:"):
            s = s[5:]
        elif s.upper().startswith(_WKT_STARTS):
            return None
    else:
        s = crs
    try:
        return int(s)
    except (TypeError, ValueError):
        raise GeofieldValueError(f"crs: {crs!r} is not an EPSG code ('EPSG:N' or N), a WKT "
                                 f"string or a pyproj/rasterio CRS") from None


def is_geographic(crs) -> bool:
    """Whether ``crs`` is in degrees, where that can be told without an EPSG code (a CRS object's
    ``is_geographic``, or pyproj on a WKT string when installed); False when it cannot."""
    if crs is None:
        return False
    if hasattr(crs, "is_geographic"):
        return bool(crs.is_geographic)
    if isinstance(crs, str) and crs.strip().upper().startswith(_WKT_STARTS):
        try:
            import pyproj
        except ImportError:
            return False
        return bool(pyproj.CRS.from_wkt(crs).is_geographic)
    return False


def spatial_ref(crs) -> dict:
    """The attributes of the ``spatial_ref`` variable for ``crs``: an EPSG code ("EPSG:N" or N:
    the library's CF attributes), or a CRS without one (a WKT string, a pyproj or rasterio CRS:
    its WKT as ``crs_wkt``/``spatial_ref``, which GDAL and rioxarray read, and pyproj's CF
    grid-mapping attributes when pyproj is installed)."""
    code = epsg_of(crs)
    if code is not None:
        return dict(_native.crs_attrs(code))
    if crs is None:
        return {}
    wkt = crs.to_wkt() if hasattr(crs, "to_wkt") else str(crs).strip()
    try:
        import pyproj

        attrs = dict(pyproj.CRS.from_wkt(wkt).to_cf())
    except ImportError:
        attrs = {}
    attrs["crs_wkt"] = wkt
    attrs["spatial_ref"] = wkt
    return attrs


def grid_dataset(what: str, bands: np.ndarray, names, grid, crs=None, units=None,
                 long_names=None, attrs=None):
    """A Dataset with one (y, x) variable per band of ``bands`` (shape (b, rows, cols))."""
    xr = require_xarray(what)
    x, y = coords(grid)
    ref = spatial_ref(crs)
    data_vars = {}
    for i, name in enumerate(names):
        a = {"grid_mapping": "spatial_ref"} if ref else {}
        if units is not None:
            a["units"] = units if isinstance(units, str) else units[i]
        if long_names is not None:
            a["long_name"] = long_names if isinstance(long_names, str) else long_names[i]
        data_vars[name] = (("y", "x"), bands[i], a)
    coords_ = {
        "x": ("x", x, {"units": "m", "standard_name": "projection_x_coordinate",
                       "long_name": "x coordinate of cell centre", "axis": "X"}),
        "y": ("y", y, {"units": "m", "standard_name": "projection_y_coordinate",
                       "long_name": "y coordinate of cell centre", "axis": "Y"}),
    }
    if ref:
        coords_["spatial_ref"] = ((), np.int32(0), ref)
    ds = xr.Dataset(data_vars, coords=coords_, attrs=dict(attrs or {}))
    ds.attrs.setdefault("Conventions", "CF-1.8")
    return ds
