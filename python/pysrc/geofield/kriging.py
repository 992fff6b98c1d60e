"""Kriging: surfaces from scattered samples, with the kriging variance, empirical variograms and
their fits, and leave-one-out cross-validation.

Variograms are in geofield's practical-range convention (see ``geofield variogram --help``):
``model`` one of ``exponential``, ``gaussian``, ``spherical``, ``cubic``, ``stable:ALPHA``,
``matern:NU``, ``power:EXPONENT``, ``linear``, or nested structures joined by ``+``
(``"spherical+exponential"``, gstat's ``vgm(..., add.to=)``); ``sill`` the partial sill (power:
scale; linear: slope), a list for nested structures; ``range`` the practical range in metres (a
list: one per structure); ``nugget``. For PyKrige's conventions
use :mod:`geofield.pykrige`.
"""

from __future__ import annotations

import json

import numpy as np

from . import _arrays, _native, _progress, _xr
from ._errors import GeofieldValueError

builtins_range = range  # the functions below take a ``range`` argument (the variogram's)


def _values(values, n):
    """(list of contiguous float64 columns, names): ``values`` is one array, a 2-D array
    (n, surfaces), a dict or a DataFrame of columns. NaN marks a missing value of a surface."""
    if hasattr(values, "items") and not isinstance(values, np.ndarray):
        names = [str(k) for k in values.keys()]
        cols = [values[k] for k in values.keys()]
    else:
        a = np.asarray(values, dtype=float)
        if a.ndim == 1:
            names, cols = ["value"], [a]
        elif a.ndim == 2:
            names = [f"value{i + 1}" for i in range(a.shape[1])]
            cols = [a[:, i] for i in range(a.shape[1])]
        else:
            raise GeofieldValueError(f"values: expected 1-D or 2-D, got shape {a.shape}")
    out = []
    for name, c in zip(names, cols):
        arr = _arrays.floats(f"values[{name!r}]", c, finite=False)
        if len(arr) != n:
            raise GeofieldValueError(f"values[{name!r}]: has {len(arr)} values but x has {n}")
        if np.isinf(arr).any():
            i = int(np.flatnonzero(np.isinf(arr))[0])
            raise GeofieldValueError(f"values[{name!r}]: value at index {i} is {arr[i]}")
        out.append(arr)
    return out, names


def _floats(v, what):
    """A scalar or a sequence as a list of floats."""
    a = np.atleast_1d(np.asarray(v, dtype=float))
    if a.ndim != 1:
        raise GeofieldValueError(f"{what}: expected a number or a list of numbers")
    return [float(t) for t in a]


def _variograms(model, sill, range, nugget, surfaces):
    """[(model, sills, ranges, nugget)]: from the arguments, or from ``model`` given as a dict
    (``geofield.variogram(...)["fit"]``) or a list of such, one per surface. Nested models join
    their structures with ``+`` and take one sill and one range per structure (lists)."""
    if isinstance(model, dict):
        return _variograms(model["model"], model["sill"], model["range"], model["nugget"], 1)
    if isinstance(model, (list, tuple)) and model and isinstance(model[0], dict):
        if len(model) != surfaces:
            raise GeofieldValueError(f"model: {len(model)} variograms for {surfaces} surfaces")
        return [v for m in model for v in _variograms(m, None, None, None, 1)]
    if not isinstance(model, str):
        raise GeofieldValueError("model: expected a model name, or a fit from geofield.variogram")
    if sill is None:
        raise GeofieldValueError("sill: give the partial sill (power: scale; linear: slope)")
    bounded = [m for m in model.split("+") if m.strip().split(":")[0] not in ("power", "linear")]
    if range is None and bounded:
        raise GeofieldValueError("range: give the practical range in metres")
    ranges = [] if range is None else _floats(range, "range")
    return [(model, _floats(sill, "sill"), ranges, float(nugget))]


def _kind(kind, mean, drift):
    if kind == "universal" and drift is None:
        drift = "linear"
    return kind, (None if mean is None else float(mean)), drift


def _aniso(anisotropy):
    if anisotropy is None:
        return None
    try:
        azimuth, ratio = anisotropy
        return float(azimuth), float(ratio)
    except (TypeError, ValueError):
        raise GeofieldValueError("anisotropy: expected (azimuth_deg, ratio)") from None


def _block(block, discretisation):
    """(size_x, size_y, "gauss" | "N") or None: ``block`` a size or (size_x, size_y)."""
    if block is None:
        return None
    b = np.atleast_1d(np.asarray(block, dtype=float))
    if b.ndim != 1 or len(b) not in (1, 2):
        raise GeofieldValueError(f"block: expected a size or (size_x, size_y), got {block!r}")
    return (float(b[0]), float(b[-1]), str(discretisation))


def _external(external_drift):
    """(flat float64 values, grid tuple) of ``external_drift`` = (values, extent) with values a
    2-D array, row 0 north, covering extent = (x_min, y_min, x_max, y_max) in square cells; or an
    xarray.DataArray with regularly spaced ``x`` and ``y`` cell-centre coordinates."""
    if external_drift is None:
        return None
    if hasattr(external_drift, "coords") and hasattr(external_drift, "values"):
        da = external_drift.squeeze()
        x = np.asarray(da["x"].values, dtype=float)
        y = np.asarray(da["y"].values, dtype=float)
        v = np.asarray(da.transpose("y", "x").values, dtype=float)
        if len(x) < 2 or len(y) < 2:
            raise GeofieldValueError("external_drift: needs at least 2 x 2 cells")
        if y[0] < y[-1]:
            v, y = v[::-1], y[::-1]
        h = float(x[1] - x[0])
        extent = (x[0] - h / 2, y[-1] - h / 2, x[-1] + h / 2, y[0] + h / 2)
    else:
        try:
            v, extent = external_drift
        except (TypeError, ValueError):
            raise GeofieldValueError("external_drift: expected (values, extent) or a "
                                     "DataArray") from None
        v = np.asarray(v, dtype=float)
    if v.ndim != 2:
        raise GeofieldValueError(f"external_drift: expected a 2-D array, got shape {v.shape}")
    x_min, y_min, x_max, y_max = (float(t) for t in extent)
    h = (x_max - x_min) / v.shape[1]
    if not np.isclose((y_max - y_min) / v.shape[0], h, rtol=1e-9, atol=0):
        raise GeofieldValueError("external_drift: the cells must be square (the same size "
                                 "along x and y)")
    return (np.ascontiguousarray(v, dtype=float).ravel(), (x_min, y_max, h) + v.shape)


def _setup(kind, mean, drift, anisotropy, neighbors, radius, nugget_mode, block=None,
           block_discretisation="gauss"):
    """The native ``setup`` tuple (see ``python/src/kriging.rs``)."""
    if nugget_mode not in ("exact", "measurement-error"):
        raise GeofieldValueError(f"nugget_mode: {nugget_mode!r} is not 'exact' or "
                                 f"'measurement-error'")
    return (kind, mean, drift, _aniso(anisotropy), neighbors,
            None if radius is None else float(radius), nugget_mode == "measurement-error",
            _block(block, block_discretisation))


def _common(x, y, values):
    xs = _arrays.floats("x", x)
    ys = _arrays.floats("y", y)
    _arrays.same_length(x=xs, y=ys)
    cols, names = _values(values, len(xs))
    return xs, ys, cols, names


def _grid(extent, cell_size):
    """(x_min, y_max, cell size, rows, cols) of the grid of ``extent`` and ``cell_size``."""
    try:
        x_min, y_min, x_max, y_max = (float(v) for v in extent)
    except (TypeError, ValueError):
        raise GeofieldValueError(f"extent: expected (x_min, y_min, x_max, y_max), got {extent!r}") from None
    h = float(cell_size)
    if not (h > 0):
        raise GeofieldValueError(f"cell_size: {cell_size!r} must be > 0")
    return (x_min, y_max, h, round((y_max - y_min) / h), round((x_max - x_min) / h))


def krige(x, y, values, model, sill=None, range=None, nugget=0.0, *, extent, cell_size,
          kind="ordinary", mean=None, drift=None, anisotropy=None, neighbors=None, radius=None,
          variance=True, nugget_mode="exact", precision="float64", backend="auto", crs=None,
          block=None, block_discretisation="gauss", external_drift=None, progress=False):
    """Kriged surfaces on a grid, as an ``xarray.Dataset``.

    Parameters
    ----------
    x, y : array_like
        Sample coordinates in metres.
    values : array_like, dict or DataFrame
        One surface (1-D), several (2-D, one column each) or named columns; NaN where a sample
        does not reach a surface.
    model, sill, range, nugget
        The variogram (see the module docs), or ``model`` = a fit from :func:`variogram`.
    extent : (x_min, y_min, x_max, y_max)
        The grid's extent in metres, a whole number of cells.
    cell_size : float
    kind : {"ordinary", "simple", "universal"}
        ``simple`` needs ``mean``; ``universal`` takes ``drift`` = "linear" (default),
        "quadratic", "external" (1 and ``external_drift``: kriging with external drift, gstat
        ``z ~ dem``) or "linear-external" (1, x, y and ``external_drift``).
    external_drift : (values, extent) or xarray.DataArray, optional
        The external drift variable on a raster (2-D, row 0 north, square cells covering
        extent = (x_min, y_min, x_max, y_max); or a DataArray with ``x``/``y`` cell centres),
        sampled bilinearly between cell centres at the samples and the nodes (PyKrige's rule);
        it must cover them. Evaluated on the CPU.
    anisotropy : (azimuth_deg, ratio), optional
        Longest range along the azimuth (degrees clockwise from north); ``ratio`` = minor/major.
    neighbors, radius : optional
        Local kriging from the ``neighbors`` nearest samples (1..64), optionally within
        ``radius``; nodes with too few samples get NaN.
    variance : bool
        Add ``<name>_variance`` variables.
    nugget_mode : {"exact", "measurement-error"}
    precision : {"float64", "float32"}
        Arithmetic of the node evaluation (the system is solved in float64).
    crs : int, str or CRS, optional
        Written as the CF ``spatial_ref``: an EPSG code (``32633`` or ``"EPSG:32633"``), or a CRS
        without one (WKT, or a pyproj/rasterio CRS), carried as WKT.
    block, block_discretisation : optional
        Block kriging (gstat ``block=``): each value is the mean over a block of this size
        (metres; or (size_x, size_y)) centred on the node, with the block variance;
        ``block_discretisation`` "gauss" (4 x 4 Gauss-Legendre points, gstat's default) or n (n x n
        regular points, gstat ``nblockdiscr``). Evaluated on the CPU.
    progress : bool
        Show a progress bar (tqdm if installed, else a text bar on stderr) of the nodes done.

    Interruptible: Ctrl-C raises ``KeyboardInterrupt`` within a fraction of a second.
    """
    _xr.require_xarray("geofield.krige")
    xs, ys, cols, names = _common(x, y, values)
    grid = _grid(extent, cell_size)
    kind, mean, drift = _kind(kind, mean, drift)
    with _progress.bar(progress, "kriging") as bar:
        z, var, grid, info, used = _native.krige(
            xs, ys, cols, names, _variograms(model, sill, range, nugget, len(cols)),
            _setup(kind, mean, drift, anisotropy, neighbors, radius, nugget_mode, block,
                   block_discretisation), None,
            grid, bool(variance), precision, backend,
            progress=bar, external_drift=_external(external_drift))
    rows, cols_ = grid[3], grid[4]
    bands = [z[i].reshape(rows, cols_) for i in builtins_range(len(names))]
    band_names = list(names)
    long_names = [f"kriging prediction of {n}" for n in names]
    if var is not None:
        bands += [var[i].reshape(rows, cols_) for i in builtins_range(len(names))]
        band_names += [f"{n}_variance" for n in names]
        long_names += [f"kriging variance of {n}" for n in names]
    info = json.loads(info)
    return _xr.grid_dataset("geofield.krige", bands, band_names, grid, crs=crs,
                            long_names=long_names,
                            attrs={"title": "kriging", "source": "geofield.krige",
                                   "backend": used, "kind": kind,
                                   "variograms": "; ".join(info["variograms"]),
                                   "evaluated": info["evaluated"]})


def krige_points(x, y, values, model, sill=None, range=None, nugget=0.0, *, points,
                 kind="ordinary", mean=None, drift=None, anisotropy=None, neighbors=None,
                 radius=None, variance=True, nugget_mode="exact", backend="auto",
                 block=None, block_discretisation="gauss", external_drift=None,
                 progress=False):
    """Kriged values at arbitrary ``points`` = (xp, yp): returns ``(values, variance)`` arrays
    of shape (surfaces, n) (``variance`` None unless asked for). Arguments as :func:`krige`
    (``progress=True`` shows a bar of the points done). Interruptible: Ctrl-C raises ``KeyboardInterrupt`` within a fraction of a second."""
    xs, ys, cols, names = _common(x, y, values)
    try:
        xp, yp = points
    except (TypeError, ValueError):
        raise GeofieldValueError("points: expected (xp, yp)") from None
    xp = _arrays.floats("points[0]", xp)
    yp = _arrays.floats("points[1]", yp)
    _arrays.same_length(**{"points[0]": xp, "points[1]": yp})
    kind, mean, drift = _kind(kind, mean, drift)
    with _progress.bar(progress, "kriging") as bar:
        z, var, _, _, _ = _native.krige(
            xs, ys, cols, names, _variograms(model, sill, range, nugget, len(cols)),
            _setup(kind, mean, drift, anisotropy, neighbors, radius, nugget_mode, block,
                   block_discretisation), (xp, yp), None,
            bool(variance), "float64", backend, progress=bar, external_drift=_external(external_drift))
    return z, var


def variogram(x, y, values, lags=15, max_lag=None, direction=None, estimator="matheron",
              model=None, fit_nugget=True, drift=None, external_drift=None):
    """The empirical variogram of one surface, and with ``model`` its weighted least-squares fit.

    With ``drift`` ("linear", "quadratic", "external", "linear-external"; the last two with
    ``external_drift`` as :func:`krige` takes it), the variogram of the residuals from a
    least-squares fit of that drift (gstat's ``variogram(z ~ drift)``): the one universal
    kriging with that drift needs.

    Returns a dict: ``lo``, ``hi`` (bin edges), ``distance`` (mean separation), ``gamma``,
    ``pairs`` (numpy arrays) and ``fit`` = ``{"model", "sill", "range", "nugget", "wrss",
    "warnings"}`` (or None), which :func:`krige` takes as its ``model``.
    """
    xs, ys, cols, _ = _common(x, y, values)
    if len(cols) != 1:
        raise GeofieldValueError("values: variogram takes one surface")
    lo, hi, dist, gamma, pairs, fit = _native.variogram_bins(
        xs, ys, cols[0], int(lags), None if max_lag is None else float(max_lag),
        None if direction is None else (float(direction[0]), float(direction[1])), estimator,
        model, bool(fit_nugget), drift=drift, external_drift=_external(external_drift))
    out = {"lo": np.array(lo), "hi": np.array(hi), "distance": np.array(dist),
           "gamma": np.array(gamma), "pairs": np.array(pairs, dtype=np.int64), "fit": None}
    if fit is not None:
        # One structure: numbers; nested: one sill and range per structure.
        one = len(fit[1]) == 1
        out["fit"] = {"model": fit[0], "sill": fit[1][0] if one else list(fit[1]),
                      "range": fit[2][0] if one else list(fit[2]), "nugget": fit[3],
                      "wrss": fit[4], "warnings": list(fit[5])}
    return out


def variogram_map(x, y, values, cutoff, width, estimator="matheron"):
    """The variogram map of one surface (gstat ``variogram(..., map=TRUE)``, GSLIB ``varmap``):
    the semivariance over separation vectors, in square cells of ``width`` centred on multiples
    of it out to ``cutoff`` along each axis, to see anisotropy before fitting one.

    Every ordered pair of samples counts in the cell of its separation (x_j - x_i, y_j - y_i),
    so the map is symmetric through its centre. Returns a dict: ``gamma`` and ``pairs`` (2-D
    arrays, row 0 at the largest dy, north up like a raster; NaN where a cell has no pair),
    ``dx`` (increasing) and ``dy`` (decreasing) the cell centres.
    """
    xs, ys, cols, _ = _common(x, y, values)
    if len(cols) != 1:
        raise GeofieldValueError("values: variogram_map takes one surface")
    lags, gamma, pairs = _native.variogram_map(xs, ys, cols[0], float(cutoff), float(width),
                                               estimator)
    side = 2 * lags + 1
    k = np.arange(-lags, lags + 1) * float(width)
    return {"gamma": np.array(gamma).reshape(side, side),
            "pairs": np.array(pairs, dtype=np.int64).reshape(side, side),
            "dx": k, "dy": k[::-1].copy()}


def cross_validate(x, y, values, model, sill=None, range=None, nugget=0.0, *, kind="ordinary",
                   mean=None, drift=None, anisotropy=None, neighbors=None, radius=None,
                   nugget_mode="exact", progress=False):
    """Leave-one-out cross-validation: per surface a dict with ``locations`` (input index of
    each location left out), ``error`` (datum − prediction), ``variance``, ``rmse``,
    ``mean_error``, ``mean_standardised_error`` and ``mean_square_standardised_error``.
    ``progress=True`` shows a bar of the folds done. Interruptible: Ctrl-C raises ``KeyboardInterrupt`` within a fraction of a second."""
    xs, ys, cols, names = _common(x, y, values)
    kind, mean, drift = _kind(kind, mean, drift)
    with _progress.bar(progress, "cross-validation") as bar:
        rows = _native.cross_validate(
            xs, ys, cols, names, _variograms(model, sill, range, nugget, len(cols)),
            _setup(kind, mean, drift, anisotropy, neighbors, radius, nugget_mode), progress=bar)
    return {r[0]: {"locations": np.array(r[1], dtype=np.int64), "error": np.array(r[2]),
                   "variance": np.array(r[3]), "rmse": r[4], "mean_error": r[5],
                   "mean_standardised_error": r[6], "mean_square_standardised_error": r[7]}
            for r in rows}


def simulate(x, y, values, model, sill=None, range=None, nugget=0.0, *, n=1, seed=0,
             modes=1000, extent=None, cell_size=None, points=None, kind="ordinary", mean=None,
             drift=None, anisotropy=None, neighbors=None, radius=None, nugget_mode="exact",
             precision="float64", backend="auto", crs=None, progress=False):
    """``n`` conditional Gaussian realisations of one surface (gstat's ``krige(nsim=n)``,
    GSTools' ``CondSRF``).

    Each realisation honours the samples (``nugget_mode="exact"``) and has the variogram's
    covariance: an unconditional field (randomisation method, ``modes`` modes per structure,
    GSTools' default 1000) plus the kriging of the samples' residuals from it; the kriging is
    :func:`krige`'s, with the same arguments. The ensemble's mean is the kriging prediction and
    its variance the kriging variance. ``nugget_mode="measurement-error"`` simulates the
    noise-free signal. Structures: exponential, gaussian, spherical, cubic, matern, stable.

    The same ``seed`` gives the same realisations on every backend and thread count, and
    realisation i does not depend on ``n``.

    Returns, for a grid (``extent``, ``cell_size``), an ``xarray.DataArray`` of dims
    (realization, y, x) named after the surface; for ``points`` = (xp, yp), a numpy array of
    shape (n, len(xp)). Interruptible: Ctrl-C raises ``KeyboardInterrupt``.
    """
    xs, ys, cols, names = _common(x, y, values)
    if len(cols) != 1:
        raise GeofieldValueError(f"values: simulate takes one surface, got {len(cols)}")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise GeofieldValueError(f"n: {n!r} must be an integer >= 1")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2**64:
        raise GeofieldValueError(f"seed: {seed!r} must be an integer in [0, 2**64)")
    if isinstance(modes, bool) or not isinstance(modes, (int, np.integer)) or modes < 1:
        raise GeofieldValueError(f"modes: {modes!r} must be an integer >= 1")
    grid = None
    pts = None
    if points is not None:
        if extent is not None or cell_size is not None:
            raise GeofieldValueError("give either points or extent and cell_size, not both")
        try:
            xp, yp = points
        except (TypeError, ValueError):
            raise GeofieldValueError("points: expected (xp, yp)") from None
        xp = _arrays.floats("points[0]", xp)
        yp = _arrays.floats("points[1]", yp)
        _arrays.same_length(**{"points[0]": xp, "points[1]": yp})
        pts = (xp, yp)
    else:
        if extent is None or cell_size is None:
            raise GeofieldValueError("give extent and cell_size (a grid) or points")
        _xr.require_xarray("geofield.simulate")
        grid = _grid(extent, cell_size)
    kind, mean, drift = _kind(kind, mean, drift)
    with _progress.bar(progress, "simulating") as bar:
        z, grid_out, info, used = _native.simulate(
            xs, ys, cols[0], names[0], _variograms(model, sill, range, nugget, 1),
            _setup(kind, mean, drift, anisotropy, neighbors, radius, nugget_mode), pts, grid,
            int(n), int(seed), int(modes), precision, backend, progress=bar)
    if grid_out is None:
        return z
    xr = _xr.require_xarray("geofield.simulate")
    rows, cols_ = grid_out[3], grid_out[4]
    x_c, y_c = _xr.coords(grid_out)
    ref = _xr.spatial_ref(crs)
    info = json.loads(info)
    coords = {
        "realization": ("realization", np.arange(1, int(n) + 1, dtype=np.int32),
                        {"standard_name": "realization", "long_name": "realisation number"}),
        "x": ("x", x_c, {"units": "m", "standard_name": "projection_x_coordinate",
                         "long_name": "x coordinate of cell centre", "axis": "X"}),
        "y": ("y", y_c, {"units": "m", "standard_name": "projection_y_coordinate",
                         "long_name": "y coordinate of cell centre", "axis": "Y"}),
    }
    attrs = {"long_name": f"conditional simulation of {names[0]}", "backend": used,
             "kind": kind, "variograms": "; ".join(info["variograms"]),
             "evaluated": info["evaluated"], "seed": int(seed), "modes": int(modes),
             "seconds_unconditional": info["seconds_unconditional"],
             "seconds_conditioning": info["seconds_conditioning"]}
    if info["device_seconds"] is not None:
        attrs["device_seconds"] = info["device_seconds"]
    if ref:
        coords["spatial_ref"] = ((), np.int32(0), ref)
        attrs["grid_mapping"] = "spatial_ref"
    return xr.DataArray(z.reshape(int(n), rows, cols_), dims=("realization", "y", "x"),
                        coords=coords, name=names[0], attrs=attrs)


def indicator_krige(x, y, values, thresholds, model, sill=None, range=None, nugget=0.0, *,
                    extent, cell_size, correction="cdf", kind="ordinary", mean=None,
                    anisotropy=None, neighbors=None, radius=None, variance=False,
                    nugget_mode="exact", backend="auto", crs=None, progress=False):
    """Indicator kriging: P(value <= t) on a grid for each threshold t (gstat's kriging of
    ``I(z <= t) ~ 1``, GSLIB's ik3d), as an ``xarray.Dataset`` with ``probability`` (and with
    ``variance=True`` the indicators' kriging ``variance``) on (threshold, y, x).

    Each threshold's indicator (1 where the value is <= t, 0 above, NaN where missing) is kriged
    with the variogram given (one for all, or ``model``/``sill``/``range``/``nugget`` as lists,
    one per threshold); ``correction`` makes the estimates a distribution function at each node:
    ``"cdf"`` (clip to [0, 1], then GSLIB's average of an upward and a downward pass:
    non-decreasing in t; gstat ``order = 4``), ``"clip"`` (gstat ``order = 1``) or ``"none"``.
    Other arguments as :func:`krige`.
    """
    xs, ys, cols, names = _common(x, y, values)
    if len(cols) != 1:
        raise GeofieldValueError(f"values: indicator kriging takes one surface, got {len(cols)}")
    t = _arrays.floats("thresholds", np.atleast_1d(np.asarray(thresholds, dtype=float)))
    xr = _xr.require_xarray("geofield.indicator_krige")
    grid = _grid(extent, cell_size)
    kind, mean, _ = _kind(kind, mean, None)
    vgs = _indicator_variograms(model, sill, range, nugget, len(t))
    with _progress.bar(progress, "indicator kriging") as bar:
        p, var, grid_out, info, used = _native.krige(
            xs, ys, cols, names, vgs,
            _setup(kind, mean, None, anisotropy, neighbors, radius, nugget_mode), None, grid,
            bool(variance), "float64", backend, progress=bar,
            indicator=([float(v) for v in t], str(correction)))
    rows, cols_ = grid_out[3], grid_out[4]
    x_c, y_c = _xr.coords(grid_out)
    ref = _xr.spatial_ref(crs)
    coords = {
        "threshold": ("threshold", t, {"long_name": f"threshold of {names[0]}"}),
        "x": ("x", x_c, {"units": "m", "standard_name": "projection_x_coordinate", "axis": "X"}),
        "y": ("y", y_c, {"units": "m", "standard_name": "projection_y_coordinate", "axis": "Y"}),
    }
    gm = {"grid_mapping": "spatial_ref"} if ref else {}
    if ref:
        coords["spatial_ref"] = ((), np.int32(0), ref)
    data = {"probability": (("threshold", "y", "x"), p.reshape(len(t), rows, cols_),
                            {"long_name": f"P({names[0]} <= threshold)", "units": "1", **gm})}
    if var is not None:
        data["variance"] = (("threshold", "y", "x"), var.reshape(len(t), rows, cols_),
                            {"long_name": "kriging variance of the indicator", "units": "1", **gm})
    info = json.loads(info)
    return xr.Dataset(data, coords=coords, attrs={
        "Conventions": "CF-1.8", "title": "indicator kriging", "source": "geofield.indicator_krige",
        "backend": used, "correction": str(correction),
        "variograms": "; ".join(info["variograms"]), "evaluated": info["evaluated"]})


def _indicator_variograms(model, sill, range, nugget, k):
    """One variogram per threshold: scalars repeated, or lists of length k."""
    def per(v, what):
        if isinstance(v, (list, tuple, np.ndarray)):
            if len(v) != k:
                raise GeofieldValueError(f"{what}: {len(v)} values for {k} thresholds")
            return list(v)
        return [v] * k
    ms, ss, rs, ns = per(model, "model"), per(sill, "sill"), per(range, "range"), per(nugget, "nugget")
    out = []
    for m, s, r, n in zip(ms, ss, rs, ns):
        out += _variograms(m, s, r, n, 1)
    return out
