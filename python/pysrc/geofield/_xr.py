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


def spatial_ref(crs) -> dict:
    """The attributes of the ``spatial_ref`` variable for ``crs`` (an EPSG code or "EPSG:N")."""
    if crs is None:
        return {}
    code = crs
    if isinstance(crs, str):
        s = crs.strip().upper()
        if not s.startswith("EPSG:"):
            from ._errors import GeofieldValueError
            raise GeofieldValueError(f"crs: {crs!r} is not of the form 'EPSG:N'")
        code = s[5:]
    try:
        code = int(code)
    except (TypeError, ValueError):
        from ._errors import GeofieldValueError
        raise GeofieldValueError(f"crs: {crs!r} is not an EPSG code") from None
    return dict(_native.crs_attrs(code))


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
