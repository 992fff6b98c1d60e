"""3-D kriging: values at (x, y, z) samples (boreholes, soundings, probes) kriged onto a 3-D grid
or at points, with the kriging variance and a 3-D geometric anisotropy.

Variograms are in geofield's practical-range convention (see :mod:`geofield.kriging`); the range
is the range along the major axis. Anisotropy, in one of three conventions:

- ``anisotropy=(azimuth, dip, rake, ratio1, ratio2)``: gstat's ``anis = c(p, q, r, s, t)`` (GSLIB's
  convention): the major axis' azimuth (degrees clockwise from north) and dip (degrees up from
  horizontal), the rotation of the minor axes about it (degrees), and the two minor ranges over
  the major range.
- ``gstools_anisotropy=(angles, anis)``: GSTools' ``CovModel(dim=3, angles=..., anis=...)``:
  Tait-Bryan angles in radians and the two length-scale ratios.
- the PyKrige 3-D drop-ins (:mod:`geofield.pykrige`) take PyKrige's scalings and angles.

For PyKrige's ``OrdinaryKriging3D``/``UniversalKriging3D`` use :mod:`geofield.pykrige`.
"""

from __future__ import annotations

import json

import numpy as np

from . import _arrays, _native, _xr
from ._errors import GeofieldValueError
from .kriging import _variograms

__all__ = ["cokrige", "krige3d", "variogram3d"]


def _xyz(name, x, y, z):
    xs = _arrays.floats(f"{name} x", np.ravel(x))
    ys = _arrays.floats(f"{name} y", np.ravel(y))
    zs = _arrays.floats(f"{name} z", np.ravel(z))
    _arrays.same_length(**{f"{name}_x": xs, f"{name}_y": ys, f"{name}_z": zs})
    return xs, ys, zs


def _anisotropy(anisotropy, gstools_anisotropy):
    if anisotropy is not None and gstools_anisotropy is not None:
        raise GeofieldValueError("give anisotropy (gstat's) or gstools_anisotropy, not both")
    if anisotropy is not None:
        a = [float(v) for v in anisotropy]
        if len(a) != 5:
            raise GeofieldValueError("anisotropy: expected (azimuth, dip, rake, ratio1, ratio2)")
        return ("gstat", a)
    if gstools_anisotropy is not None:
        try:
            angles, anis = gstools_anisotropy
            angles = [float(v) for v in np.atleast_1d(angles)]
            anis = [float(v) for v in np.atleast_1d(anis)]
        except (TypeError, ValueError):
            raise GeofieldValueError("gstools_anisotropy: expected (angles, anis)") from None
        angles += [0.0] * (3 - len(angles))
        anis += [1.0] * (2 - len(anis))
        if len(angles) != 3 or len(anis) != 2:
            raise GeofieldValueError("gstools_anisotropy: at most 3 angles and 2 ratios in 3-D")
        return ("gstools", angles + anis)
    return None


def _axes(extent, cell_size, dz, grid):
    if grid is not None:
        if extent is not None:
            raise GeofieldValueError("give grid=(x, y, z) or extent with cell_size, not both")
        try:
            gx, gy, gz = grid
        except (TypeError, ValueError):
            raise GeofieldValueError("grid: expected (x, y, z) node coordinates") from None
        return tuple(_arrays.floats(f"grid {n}", np.ravel(a)) for n, a in zip("xyz", (gx, gy, gz)))
    if extent is None or cell_size is None:
        raise GeofieldValueError("give extent=(xmin, ymin, zmin, xmax, ymax, zmax) and cell_size, "
                                 "grid=(x, y, z) or points=(x, y, z)")
    e = [float(v) for v in extent]
    if len(e) != 6:
        raise GeofieldValueError("extent: expected (xmin, ymin, zmin, xmax, ymax, zmax)")
    h = float(cell_size)
    hz = h if dz is None else float(dz)
    out = []
    for lo, hi, step, n in ((e[0], e[3], h, "x"), (e[1], e[4], h, "y"), (e[2], e[5], hz, "z")):
        if not (step > 0 and np.isfinite(step)) or not hi > lo:
            raise GeofieldValueError(f"extent/cell_size: the {n} axis needs max > min and a step > 0")
        k = (hi - lo) / step
        if abs(k - round(k)) > 1e-9 * max(k, 1.0):
            raise GeofieldValueError(f"extent: the {n} span {hi - lo} is not a whole number of "
                                     f"{step} cells")
        out.append(lo + (np.arange(round(k)) + 0.5) * step)
    return tuple(out)


def krige3d(x, y, z, values, model, sill=None, range=None, nugget=0.0, *, extent=None,
            cell_size=None, dz=None, grid=None, points=None, kind="ordinary", mean=None,
            anisotropy=None, gstools_anisotropy=None, neighbors=None, radius=None,
            nugget_mode="exact", variance=True, name="value", units=None, crs=None,
            backend="auto"):
    """3-D kriging of ``values`` at samples (``x``, ``y``, ``z``).

    Target: ``extent=(xmin, ymin, zmin, xmax, ymax, zmax)`` with ``cell_size`` (and ``dz``, the
    vertical cell size; nodes at cell centres), ``grid=(x, y, z)`` node coordinates along each
    axis, or ``points=(x, y, z)``. ``kind``: "ordinary", "simple" (with ``mean``) or
    "universal" (linear drift in x, y, z). ``neighbors``: local kriging from that many nearest
    samples (``radius``: within that distance; nodes without enough get NaN). ``nugget_mode``:
    "exact" (honour the data) or "error" (the nugget is measurement error).

    Returns, for a grid, an ``xarray.Dataset`` with ``name`` and ``name_variance`` on dims
    ``(z, y, x)`` (``ds.to_netcdf`` writes CF NetCDF); for points, ``(values, variance)`` numpy
    arrays (variance None with ``variance=False``). ``ds.attrs["evaluated"]`` says how.
    """
    xs, ys, zs = _xyz("samples", x, y, z)
    v = _arrays.floats("values", np.ravel(values))
    if len(v) != len(xs):
        raise GeofieldValueError(f"values: has {len(v)} values but x has {len(xs)}")
    if nugget_mode not in ("exact", "error"):
        raise GeofieldValueError(f"nugget_mode: {nugget_mode!r} is not 'exact' or 'error'")
    vg = _variograms(model, sill, range, nugget, 1)[0]
    aniso = _anisotropy(anisotropy, gstools_anisotropy)
    if points is not None:
        if extent is not None or grid is not None:
            raise GeofieldValueError("give points or a grid, not both")
        pts = _xyz("points", *points)
        axes = None
    else:
        axes = _axes(extent, cell_size, dz, grid)
        pts = None
    vals, var, info, label = _native.krige3d(
        (xs, ys, zs), v, vg, kind, None if mean is None else float(mean), aniso,
        None if neighbors is None else int(neighbors), None if radius is None else float(radius),
        nugget_mode == "error", axes, pts, bool(variance), backend)
    info = json.loads(info)
    if pts is not None:
        return vals, var
    xr = _xr.require_xarray("geofield.krige3d")
    shape = (len(axes[2]), len(axes[1]), len(axes[0]))
    ref = _xr.spatial_ref(crs)
    a = {"grid_mapping": "spatial_ref"} if ref else {}
    data = {name: (("z", "y", "x"), vals.reshape(shape),
                   dict(a, long_name=f"{name}: kriged", **({"units": units} if units else {})))}
    if var is not None:
        data[f"{name}_variance"] = (("z", "y", "x"), var.reshape(shape),
                                    dict(a, long_name=f"{name}: kriging variance"))
    coords = {
        "x": ("x", axes[0], {"units": "m", "standard_name": "projection_x_coordinate",
                             "axis": "X"}),
        "y": ("y", axes[1], {"units": "m", "standard_name": "projection_y_coordinate",
                             "axis": "Y"}),
        "z": ("z", axes[2], {"units": "m", "standard_name": "height", "positive": "up",
                             "axis": "Z"}),
    }
    if ref:
        coords["spatial_ref"] = ((), np.int32(0), ref)
    return xr.Dataset(data, coords=coords, attrs={
        "Conventions": "CF-1.8", "evaluated": info["evaluated"], "variogram": info["variogram"],
        "backend": label, "missing_nodes": info["missing"]})


def variogram3d(x, y, z, values, lags=15, max_lag=None, anisotropy=None,
                gstools_anisotropy=None, drift=False, model=None):
    """The 3-D empirical variogram (Matheron, every pair, anisotropy-corrected distances) and,
    with ``model``, its weighted least-squares fit; with ``drift=True``, of the residuals from a
    least-squares linear drift (what universal kriging needs).

    Returns a dict like :func:`geofield.variogram`: ``lo``, ``hi``, ``distance``, ``gamma``,
    ``pairs`` and ``fit`` (``{"model", "sill", "range", "nugget", "wrss"}``, which
    :func:`krige3d` takes as its ``model``)."""
    xs, ys, zs = _xyz("samples", x, y, z)
    v = _arrays.floats("values", np.ravel(values))
    if len(v) != len(xs):
        raise GeofieldValueError(f"values: has {len(v)} values but x has {len(xs)}")
    lo, hi, dist, gamma, pairs, fit = _native.variogram3d(
        (xs, ys, zs), v, _anisotropy(anisotropy, gstools_anisotropy), int(lags),
        None if max_lag is None else float(max_lag), bool(drift), model)
    out = {"lo": np.array(lo), "hi": np.array(hi), "distance": np.array(dist),
           "gamma": np.array(gamma), "pairs": np.array(pairs, dtype=np.int64), "fit": None}
    if fit is not None:
        (m, sills, ranges, nug), wrss = fit
        one = len(sills) == 1
        out["fit"] = {"model": m, "sill": sills[0] if one else list(sills),
                      "range": ranges[0] if one else list(ranges), "nugget": nug, "wrss": wrss}
    return out


def cokrige(x, y, values, model="spherical", range=None, *, nugget=True, lags=15, max_lag=None,
            kind="ordinary", mean=None, anisotropy=None, extent=None, cell_size=None,
            points=None, variance=True, crs=None, units=None, backend="auto"):
    """Cokriging of the primary variable (the first of ``values``: a dict or DataFrame of
    columns, or a 2-D array (n, variables); NaN where a variable was not measured) from its
    samples and the secondaries', with a linear model of coregionalisation fitted as gstat's
    ``fit.lmc``: the structures ``model`` ("spherical", "spherical+exponential", bounded
    models) with ``range`` (one per structure; default fitted to the primary's variogram) and a
    nugget (``nugget=False``: none), their sills fitted for every direct and cross variogram
    (``lags`` bins to ``max_lag``) and made positive semi-definite.

    ``kind``: "ordinary" (the primary's weights sum to 1, each secondary's to 0) or "simple"
    (``mean``: one per variable). ``anisotropy=(azimuth_deg, ratio)``.

    Returns, on a grid (``extent=(xmin, ymin, xmax, ymax)``, ``cell_size``), an xarray Dataset
    with the primary and ``<primary>_variance`` (``ds.attrs["lmc"]``: the fitted model as
    JSON, ``ds.attrs["evaluated"]``: "CUDA, global, f64" where the GPU evaluated the nodes); at
    ``points=(x, y)``, ``(values, variance)``. ``backend``: "auto", "cpu" or "cuda" (the system
    is solved on the host in f64 either way).
    """
    from .kriging import _common, _grid
    xs, ys, cols, names = _common(x, y, values)
    if len(cols) < 2:
        raise GeofieldValueError("values: cokriging needs the primary and at least one secondary")
    if kind not in ("ordinary", "simple"):
        raise GeofieldValueError(f"kind: {kind!r} is not 'ordinary' or 'simple'")
    if (kind == "simple") != (mean is not None):
        raise GeofieldValueError("mean: simple cokriging needs one mean per variable (and only it)")
    means = None if mean is None else [float(m) for m in np.atleast_1d(mean)]
    ranges = None if range is None else [float(r) for r in np.atleast_1d(range)]
    aniso = None
    if anisotropy is not None:
        aniso = (float(anisotropy[0]), float(anisotropy[1]))
    grid = None
    pts = None
    if points is not None:
        pts = (_arrays.floats("points x", np.ravel(points[0])),
               _arrays.floats("points y", np.ravel(points[1])))
    else:
        if extent is None or cell_size is None:
            raise GeofieldValueError("give extent and cell_size, or points=(x, y)")
        grid = _grid(extent, cell_size)
    vals, var, lmc, evaluated = _native.cokrige_native(
        xs, ys, cols, names, str(model), ranges, bool(nugget), int(lags),
        None if max_lag is None else float(max_lag), means, aniso, pts, grid, bool(variance),
        str(backend))
    if pts is not None:
        return vals, var
    rows, cols_ = grid[3], grid[4]
    bands = [vals.reshape(rows, cols_)]
    band_names = [names[0]]
    if var is not None:
        bands.append(var.reshape(rows, cols_))
        band_names.append(f"{names[0]}_variance")
    return _xr.grid_dataset("geofield.cokrige", np.stack(bands), band_names, grid, crs=crs,
                            units=units, attrs={"lmc": lmc, "method": "cokriging",
                                                "evaluated": evaluated})
