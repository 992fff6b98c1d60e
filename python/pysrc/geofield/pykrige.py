"""Drop-ins for PyKrige's ``OrdinaryKriging`` and ``UniversalKriging`` (PyKrige 1.7).

Change one import line::

    # from pykrige.ok import OrdinaryKriging
    from geofield.pykrige import OrdinaryKriging

and get the same numbers (within 1e-9 relative in f64) from geofield's kriging, on the CPU or the
GPU. The constructor takes PyKrige's arguments in PyKrige's conventions (practical ranges,
``variogram_parameters`` as a list or dict per model, ``anisotropy_scaling``/``anisotropy_angle``,
``exact_values``) and ``execute`` returns ``(z, ss)`` with PyKrige's shapes as masked arrays.
Arguments geofield cannot honour exactly raise instead of computing something else:
``pseudo_inv=True``, custom variogram functions, the ``hole-effect`` model, geographic
coordinates, and ``point_log`` drift. ``regional_linear``, ``external_Z`` (on a regular grid of
square cells), ``specified`` and ``functional`` (global, on the CPU; see
:mod:`geofield._pykrige_drift`) are supported.

Without ``variogram_parameters`` the variogram is fitted as PyKrige fits it (its lag bins and
``scipy.optimize.least_squares`` with the soft-L1 loss, so scipy is needed for that case).
"""

from __future__ import annotations

import math

import numpy as np

from . import _arrays, _native, _progress
from . import _pykrige_drift as _pd
from ._errors import GeofieldValueError

__all__ = ["OrdinaryKriging", "OrdinaryKriging3D", "UniversalKriging", "UniversalKriging3D"]

_BOUNDED = ("exponential", "gaussian", "spherical")
_MODELS = ("linear", "power") + _BOUNDED


def _unsupported(what: str) -> GeofieldValueError:
    return GeofieldValueError(f"{what} is not supported by geofield.pykrige (it would not give "
                              f"PyKrige's numbers); see the module docs")


def _params_from(model: str, params) -> dict:
    """PyKrige's variogram_parameters (list or dict, its conventions) as its internal
    [psill, range, nugget] / [slope, nugget] / [scale, exponent, nugget] in a dict."""
    if isinstance(params, dict):
        p = dict(params)
        if model == "linear":
            need = ("slope", "nugget")
            if any(k not in p for k in need):
                raise GeofieldValueError("variogram_parameters: the linear model needs 'slope' "
                                         "and 'nugget'")
            return {"slope": float(p["slope"]), "nugget": float(p["nugget"])}
        if model == "power":
            need = ("scale", "exponent", "nugget")
            if any(k not in p for k in need):
                raise GeofieldValueError("variogram_parameters: the power model needs 'scale', "
                                         "'exponent' and 'nugget'")
            return {k: float(p[k]) for k in need}
        if "range" not in p or "nugget" not in p or not ("sill" in p or "psill" in p):
            raise GeofieldValueError(f"variogram_parameters: the {model} model needs 'range', "
                                     "'nugget' and 'sill' or 'psill'")
        nugget = float(p["nugget"])
        psill = float(p["psill"]) if "psill" in p else float(p["sill"]) - nugget
        return {"psill": psill, "range": float(p["range"]), "nugget": nugget}
    try:
        v = [float(x) for x in params]
    except (TypeError, ValueError):
        raise GeofieldValueError("variogram_parameters: expected a list or a dict of numbers") from None
    need = {"linear": 2, "power": 3}.get(model, 3)
    if len(v) != need:
        raise GeofieldValueError(f"variogram_parameters: the {model} model takes {need} values, "
                                 f"got {len(v)}")
    if model == "linear":
        return {"slope": v[0], "nugget": v[1]}
    if model == "power":
        return {"scale": v[0], "exponent": v[1], "nugget": v[2]}
    # PyKrige's list form is [total sill, range, nugget].
    return {"psill": v[0] - v[2], "range": v[1], "nugget": v[2]}


def _to_geofield(model: str, p: dict) -> tuple[str, float, float, float]:
    """(model, partial sill or scale/slope, practical range, nugget) in geofield's convention."""
    if model == "linear":
        return "linear", p["slope"], 1.0, p["nugget"]
    if model == "power":
        return f"power:{p['exponent']!r}", p["scale"], 1.0, p["nugget"]
    r = p["range"]
    if model == "gaussian":
        # PyKrige: 1 - exp(-h^2 / (4r/7)^2); geofield: 1 - exp(-3 h^2 / a^2).
        r = r * 4.0 * math.sqrt(3.0) / 7.0
    return model, p["psill"], r, p["nugget"]


def _pykrige_variogram(model: str, p: dict, h: np.ndarray) -> np.ndarray:
    """PyKrige's own variogram formulas (for the fit), in its parameters."""
    if model == "linear":
        return p["slope"] * h + p["nugget"]
    if model == "power":
        return p["scale"] * h ** p["exponent"] + p["nugget"]
    ps, r, n = p["psill"], p["range"], p["nugget"]
    if model == "exponential":
        return ps * (1.0 - np.exp(-h / (r / 3.0))) + n
    if model == "gaussian":
        return ps * (1.0 - np.exp(-(h ** 2) / (r * 4.0 / 7.0) ** 2)) + n
    return np.piecewise(h, [h <= r, h > r],
                        [lambda x: ps * ((3.0 * x) / (2.0 * r) - (x ** 3.0) / (2.0 * r ** 3.0)) + n,
                         ps + n])


def _anisotropy_adjusted(x: np.ndarray, y: np.ndarray, scaling: float, angle_deg: float,
                         center=None):
    """The coordinates PyKrige fits its variogram on: rotated by -angle about the bounding-box
    centre (of (x, y), or ``center``) and stretched by ``scaling`` across the major axis (the
    same operations in the same order, so the bins and hence the fit come out the same to the
    last bit)."""
    if center is None:
        center = ((np.amax(x) + np.amin(x)) / 2.0, (np.amax(y) + np.amin(y)) / 2.0)
    center = np.array([center], dtype=float)
    pts = np.vstack((x, y)).T - center
    a = angle_deg * np.pi / 180.0
    stretch = np.array([[1.0, 0.0], [0.0, scaling]])
    rot = np.array([[np.cos(-a), -np.sin(-a)], [np.sin(-a), np.cos(-a)]])
    adj = np.dot(stretch, np.dot(rot, pts.T)).T + center
    return adj[:, 0], adj[:, 1]


def _fit(model: str, pts: np.ndarray, z: np.ndarray, nlags: int, weight: bool):
    """PyKrige 1.7's automatic fit: all pairs' semivariances in ``nlags`` equal-width bins
    between the smallest and largest separation of the points ``pts`` (n, dim), then a soft-L1
    least-squares fit from its starting point within its bounds (optionally weighted towards
    short lags)."""
    try:
        from scipy.optimize import least_squares  # noqa: PLC0415 - optional dependency
        from scipy.spatial.distance import pdist  # noqa: PLC0415
    except ImportError as e:
        raise ImportError("fitting the variogram as PyKrige does needs scipy: pip install scipy, "
                          "or pass variogram_parameters") from e
    d = pdist(pts, metric="euclidean")
    g = 0.5 * pdist(z[:, None], metric="sqeuclidean")
    dmax, dmin = np.amax(d), np.amin(d)
    dd = (dmax - dmin) / nlags
    bins = [dmin + n * dd for n in range(nlags)]
    dmax += 0.001
    bins.append(dmax)
    lags = np.zeros(nlags)
    sv = np.zeros(nlags)
    for n in range(nlags):
        m = (d >= bins[n]) & (d < bins[n + 1])
        if d[m].size > 0:
            lags[n] = np.mean(d[m])
            sv[n] = np.mean(g[m])
        else:
            lags[n] = np.nan
            sv[n] = np.nan
    keep = ~np.isnan(sv)
    lags, sv = lags[keep], sv[keep]
    if model == "linear":
        x0 = [(np.amax(sv) - np.amin(sv)) / (np.amax(lags) - np.amin(lags)), np.amin(sv)]
        bnds = ([0.0, 0.0], [np.inf, np.amax(sv)])
        names = ("slope", "nugget")
    elif model == "power":
        x0 = [(np.amax(sv) - np.amin(sv)) / (np.amax(lags) - np.amin(lags)), 1.1, np.amin(sv)]
        bnds = ([0.0, 0.001, 0.0], [np.inf, 1.999, np.amax(sv)])
        names = ("scale", "exponent", "nugget")
    else:
        x0 = [np.amax(sv) - np.amin(sv), 0.25 * np.amax(lags), np.amin(sv)]
        bnds = ([0.0, 0.0, 0.0], [10.0 * np.amax(sv), np.amax(lags), np.amax(sv)])
        names = ("psill", "range", "nugget")

    def residuals(params):
        p = dict(zip(names, params))
        if weight:
            drange = np.amax(lags) - np.amin(lags)
            k = 2.1972 / (0.1 * drange)
            x0_ = 0.7 * drange + np.amin(lags)
            w = 1.0 / (1.0 + np.exp(-k * (x0_ - lags)))
            w /= np.sum(w)
            return (_pykrige_variogram(model, p, lags) - sv) * w
        return _pykrige_variogram(model, p, lags) - sv

    res = least_squares(residuals, x0, bounds=bnds, loss="soft_l1")
    return dict(zip(names, (float(v) for v in res.x)))


def _uniform_grid(xp: np.ndarray, yp: np.ndarray):
    """``((x_min, y_max, h, rows, cols), flip_x, flip_y)`` when ``xpoints`` × ``ypoints`` are the
    cell centres of a grid of square cells (equal steps to 1e-9 relative), else None."""
    if xp.size < 2 or yp.size < 2:
        return None
    dx, dy = np.diff(xp), np.diff(yp)
    h = abs(dx[0])
    if h == 0 or not (np.all(np.abs(dx - dx[0]) <= 1e-9 * h)
                      and np.all(np.abs(dy - dy[0]) <= 1e-9 * h)
                      and abs(abs(dy[0]) - h) <= 1e-9 * h):
        return None
    x_min = min(xp[0], xp[-1]) - 0.5 * h
    y_max = max(yp[0], yp[-1]) + 0.5 * h
    return (x_min, y_max, h, yp.size, xp.size), bool(dx[0] < 0), bool(dy[0] > 0)


class _Kriging:
    _kind = "ordinary"

    def __init__(self, x, y, z, variogram_model="linear", variogram_parameters=None,
                 variogram_function=None, nlags=6, weight=False, anisotropy_scaling=1.0,
                 anisotropy_angle=0.0, verbose=False, enable_plotting=False,
                 enable_statistics=False, coordinates_type="euclidean", exact_values=True,
                 pseudo_inv=False, pseudo_inv_type="pinv"):
        if pseudo_inv:
            raise GeofieldValueError(
                "pseudo_inv=True is not supported: geofield solves the kriging system exactly "
                "(Cholesky and a bordered solve, with duplicate samples merged first), so a "
                "pseudo-inverse is never needed; drop the argument")
        if variogram_function is not None or variogram_model == "custom":
            raise _unsupported("a custom variogram function")
        if variogram_model not in _MODELS:
            if variogram_model == "hole-effect":
                raise _unsupported("the hole-effect variogram model")
            raise GeofieldValueError(f"variogram_model: {variogram_model!r} is not one of "
                                     f"{', '.join(_MODELS)}")
        if coordinates_type != "euclidean":
            raise _unsupported(f"coordinates_type={coordinates_type!r}")
        if enable_plotting:
            raise _unsupported("enable_plotting=True")
        if enable_statistics:
            raise _unsupported("enable_statistics=True")
        self.X_ORIG = _arrays.floats("x", x).ravel()
        self.Y_ORIG = _arrays.floats("y", y).ravel()
        self.Z = _arrays.floats("z", z).ravel()
        _arrays.same_length(x=self.X_ORIG, y=self.Y_ORIG, z=self.Z)
        self.variogram_model = variogram_model
        self.verbose = verbose
        self.exact_values = bool(exact_values)
        self.anisotropy_scaling = float(anisotropy_scaling)
        self.anisotropy_angle = float(anisotropy_angle)
        if not (self.anisotropy_scaling >= 1.0 and math.isfinite(self.anisotropy_scaling)):
            # PyKrige stretches the minor axis by the scaling: below 1 it would be the major.
            raise GeofieldValueError(
                f"anisotropy_scaling: {anisotropy_scaling} must be >= 1 (geofield takes the "
                f"longer axis as the variogram's range)")
        if variogram_parameters is None:
            xa, ya = _anisotropy_adjusted(self.X_ORIG, self.Y_ORIG, self.anisotropy_scaling,
                                          self.anisotropy_angle)
            p = _fit(variogram_model, np.column_stack((xa, ya)), self._fit_values(), int(nlags),
                     bool(weight))
        else:
            p = _params_from(variogram_model, variogram_parameters)
        self._params = p
        self.variogram_model_parameters = self._pykrige_list(p)
        self._gf = _to_geofield(variogram_model, p)

    def _fit_values(self):
        return self.Z

    def _pykrige_list(self, p):
        if self.variogram_model == "linear":
            return [p["slope"], p["nugget"]]
        if self.variogram_model == "power":
            return [p["scale"], p["exponent"], p["nugget"]]
        return [p["psill"], p["range"], p["nugget"]]

    def _options(self) -> dict:
        return {}

    def execute(self, style, xpoints, ypoints, mask=None, backend="vectorized",
                n_closest_points=None, *, device="auto", progress=False):
        """Kriged values and variances at ``style`` nodes, in PyKrige's shapes.

        ``style``: ``"grid"`` (``xpoints`` × ``ypoints``, result shape (ny, nx)), ``"points"``
        (paired coordinates, shape (n,)) or ``"masked"`` (the grid with ``mask`` True where no
        value is wanted). PyKrige's ``backend`` ("vectorized", "loop", "C") only chose its
        implementation and is accepted; ``device`` picks geofield's ("auto", "cpu", "cuda").
        ``n_closest_points`` krige each node from that many nearest samples (at most 64).
        Returns ``(z, ss)`` as ``numpy.ma.MaskedArray``. ``progress=True`` (geofield's own)
        shows a bar of the nodes done. Interruptible: Ctrl-C raises ``KeyboardInterrupt`` within a fraction of a second.
        """
        if backend not in ("vectorized", "loop", "C"):
            raise GeofieldValueError(f"backend: {backend!r} is not one of 'vectorized', 'loop', 'C'")
        if style not in ("grid", "points", "masked"):
            raise GeofieldValueError(f"style: {style!r} is not one of 'grid', 'points', 'masked'")
        xp = np.atleast_1d(_arrays.floats("xpoints", np.atleast_1d(xpoints)).ravel())
        yp = np.atleast_1d(_arrays.floats("ypoints", np.atleast_1d(ypoints)).ravel())
        if style == "points":
            _arrays.same_length(xpoints=xp, ypoints=yp)
            px, py_ = xp, yp
            shape = xp.shape
            m = np.zeros(shape, dtype=bool)
        else:
            shape = (yp.size, xp.size)
            if style == "masked":
                if mask is None:
                    raise GeofieldValueError("mask: style 'masked' needs a mask")
                m = np.asarray(mask, dtype=bool)
                if m.shape != shape:
                    if m.T.shape == shape:
                        m = m.T  # PyKrige accepts the transposed mask too
                    else:
                        raise GeofieldValueError(f"mask: shape {m.shape} is not (len(ypoints), "
                                                 f"len(xpoints)) = {shape}")
            else:
                m = np.zeros(shape, dtype=bool)
        neighbors = None if n_closest_points is None else int(n_closest_points)
        grid = _uniform_grid(xp, yp) if style != "points" else None
        if grid is not None:
            # A regular grid with square cells: geofield's grid path (on the GPU when there is
            # one), then flipped into PyKrige's axis order.
            spec, flip_x, flip_y = grid
            zs, ss = self._krige(None, spec, neighbors, device, progress)
            zs, ss = zs.reshape(shape), ss.reshape(shape)
            if flip_y:
                zs, ss = zs[::-1], ss[::-1]
            if flip_x:
                zs, ss = zs[:, ::-1], ss[:, ::-1]
            # Views, not copies: flipping a 1e6-node grid twice would cost more than the
            # Python layer's whole budget on the GPU.
            return np.ma.masked_array(zs, mask=m), np.ma.masked_array(ss, mask=m)
        if style != "points":
            gx, gy = np.meshgrid(xp, yp)
            px, py_ = gx[~m], gy[~m]
        zs, ss = self._krige((np.ascontiguousarray(px), np.ascontiguousarray(py_)), None,
                             neighbors, device, progress)
        z_full = np.zeros(shape)
        s_full = np.zeros(shape)
        if style == "points":
            z_full[...] = zs
            s_full[...] = ss
        else:
            z_full[~m] = zs
            s_full[~m] = ss
        return np.ma.masked_array(z_full, mask=m), np.ma.masked_array(s_full, mask=m)

    def _krige(self, points, grid, neighbors, device, progress=False):
        model, sill, rng, nugget = self._gf
        aniso = None
        if self.anisotropy_scaling != 1.0 or self.anisotropy_angle != 0.0:
            aniso = (90.0 - self.anisotropy_angle, 1.0 / self.anisotropy_scaling)
        with _progress.bar(progress, "kriging") as bar:
            z, var, _, self.info, self.last_device = _native.krige(
                self.X_ORIG, self.Y_ORIG, [self.Z], ["z"], [(model, [sill], [rng], nugget)],
                (self._kind, None, self._drift(), aniso, neighbors, None, not self.exact_values,
                 None),
                points, grid, True, "float64", device, progress=bar,
                external_drift=getattr(self, "_ext", None))
        return z[0], var[0]

    def _drift(self):
        return None

    def print_statistics(self):
        raise _unsupported("print_statistics")


def _external_grid(z, x, y):
    """PyKrige's external drift (array on nodes ``x`` by ``y``) as geofield's raster: the nodes
    are cell centres of square cells (regular spacing, the same along x and y, required)."""
    if z is None or x is None or y is None:
        raise ValueError("Must specify external Z drift terms.")
    x = np.asarray(x, dtype=float).ravel()
    y = np.asarray(y, dtype=float).ravel()
    z = np.asarray(z, dtype=float)
    if z.shape != (len(y), len(x)):
        if z.shape == (len(x), len(y)):
            z = z.T
        else:
            raise ValueError("External drift dimensions do not match provided x- and "
                             "y-coordinate dimensions.")
    if len(x) < 2 or len(y) < 2:
        raise _unsupported("an external drift grid of fewer than 2 x 2 nodes")
    if x[0] > x[-1]:
        x, z = x[::-1], z[:, ::-1]
    if y[0] < y[-1]:  # geofield's rows run north first
        y, z = y[::-1], z[::-1]
    hx = np.diff(x)
    hy = -np.diff(y)
    h = float(hx[0])
    if not (np.allclose(hx, h, rtol=1e-9, atol=0) and np.allclose(hy, h, rtol=1e-9, atol=0)):
        raise _unsupported("an external drift grid that is not regular with square cells")
    grid = (float(x[0] - h / 2), float(y[0] + h / 2), h, len(y), len(x))
    return np.ascontiguousarray(z).ravel(), grid


class OrdinaryKriging(_Kriging):
    """PyKrige's ``OrdinaryKriging`` (same constructor and ``execute``), computed by geofield."""

    _kind = "ordinary"


class UniversalKriging(_Kriging):
    """PyKrige's ``UniversalKriging`` with ``drift_terms`` from ``"regional_linear"``,
    ``"external_Z"`` (with ``external_drift``, ``external_drift_x``, ``external_drift_y``),
    ``"specified"`` (with ``specified_drift``, and ``specified_drift_arrays`` at ``execute``) and
    ``"functional"`` (with ``functional_drift``), computed by geofield (``specified`` and
    ``functional`` on the CPU, global, not with ``external_Z``)."""

    _kind = "universal"

    def __init__(self, x, y, z, variogram_model="linear", variogram_parameters=None,
                 variogram_function=None, nlags=6, weight=False, anisotropy_scaling=1.0,
                 anisotropy_angle=0.0, drift_terms=None, point_drift=None, external_drift=None,
                 external_drift_x=None, external_drift_y=None, specified_drift=None,
                 functional_drift=None, verbose=False, enable_plotting=False,
                 exact_values=True, pseudo_inv=False, pseudo_inv_type="pinv"):
        if point_drift is not None:
            raise _unsupported("point_drift")
        terms = list(drift_terms or [])
        for t in terms:
            if t not in ("regional_linear", "external_Z", "specified", "functional"):
                raise _unsupported(f"drift term {t!r}")
        self._ext = None
        if "external_Z" in terms:
            if "specified" in terms or "functional" in terms:
                raise _unsupported("'external_Z' together with a 'specified' or 'functional' "
                                   "drift")
            self._ext = _external_grid(external_drift, external_drift_x, external_drift_y)
        self._linear = "regional_linear" in terms
        super().__init__(x, y, z, variogram_model, variogram_parameters, variogram_function,
                         nlags, weight, anisotropy_scaling, anisotropy_angle, verbose,
                         enable_plotting, False, "euclidean", exact_values, pseudo_inv,
                         pseudo_inv_type)
        self._spec, self._funcs = _pd.check_terms(terms, specified_drift, functional_drift,
                                                  self.Z.size)
        self._func_s = _pd.evaluate(self._funcs, self._adjusted(self.X_ORIG, self.Y_ORIG),
                                    self.Z.size)
        if not self._linear and self._ext is None:
            self._kind = "ordinary"

    def _adjusted(self, x, y):
        """PyKrige's anisotropy-adjusted coordinates of (x, y), about the samples' centre."""
        c = ((np.amax(self.X_ORIG) + np.amin(self.X_ORIG)) / 2.0,
             (np.amax(self.Y_ORIG) + np.amin(self.Y_ORIG)) / 2.0)
        return _anisotropy_adjusted(np.asarray(x, dtype=float), np.asarray(y, dtype=float),
                                    self.anisotropy_scaling, self.anisotropy_angle, c)

    def _drift(self):
        if self._ext is not None:
            return "linear-external" if self._linear else "external"
        return "linear" if self._linear else None

    def execute(self, style, xpoints, ypoints, mask=None, backend="vectorized",
                specified_drift_arrays=None, functional_drift=None, *, device="auto",
                progress=False):
        """As PyKrige's ``UniversalKriging.execute`` (no ``n_closest_points`` there either);
        ``progress`` and interruption as :meth:`OrdinaryKriging.execute`. With a specified
        drift, ``specified_drift_arrays`` gives each variable at the nodes."""
        if functional_drift is not None:
            raise _unsupported("functional_drift at execute (give it to the constructor)")
        if not (self._spec or self._funcs):
            _pd.unexpected_arrays(specified_drift_arrays)
            return super().execute(style, xpoints, ypoints, mask, backend, None, device=device,
                                   progress=progress)
        if backend not in ("vectorized", "loop", "C"):
            raise GeofieldValueError(f"backend: {backend!r} is not one of 'vectorized', "
                                     f"'loop', 'C'")
        if style not in ("grid", "points", "masked"):
            raise GeofieldValueError(f"style: {style!r} is not one of 'grid', 'points', 'masked'")
        xp = np.atleast_1d(_arrays.floats("xpoints", np.atleast_1d(xpoints)).ravel())
        yp = np.atleast_1d(_arrays.floats("ypoints", np.atleast_1d(ypoints)).ravel())
        keep = None
        if style == "points":
            _arrays.same_length(xpoints=xp, ypoints=yp)
            shape, px, py_ = xp.shape, xp, yp
        else:
            shape = (yp.size, xp.size)
            gx, gy = np.meshgrid(xp, yp)
            m = np.zeros(shape, dtype=bool)
            if style == "masked":
                if mask is None:
                    raise GeofieldValueError("mask: style 'masked' needs a mask")
                m = np.asarray(mask, dtype=bool)
                if m.shape != shape:
                    if m.T.shape != shape:
                        raise GeofieldValueError(f"mask: shape {m.shape} is not (len(ypoints), "
                                                 f"len(xpoints)) = {shape}")
                    m = m.T
            keep = ~m.ravel()
            px, py_ = gx.ravel()[keep], gy.ravel()[keep]
        spec_n = (_pd.node_arrays(specified_drift_arrays, len(self._spec), style, shape, keep)
                  if self._spec else [])
        func_n = _pd.evaluate(self._funcs, self._adjusted(px, py_), px.size)
        model, sill, rng, nugget = self._gf
        aniso = None
        if self.anisotropy_scaling != 1.0 or self.anisotropy_angle != 0.0:
            aniso = (90.0 - self.anisotropy_angle, 1.0 / self.anisotropy_scaling)
        z, var, _, self.info, self.last_device = _native.krige(
            self.X_ORIG, self.Y_ORIG, [self.Z], ["z"], [(model, [sill], [rng], nugget)],
            (self._kind, None, self._drift(), aniso, None, None, not self.exact_values, None),
            (np.ascontiguousarray(px), np.ascontiguousarray(py_)), None, True, "float64",
            device, given_drift=_pd.given(self._spec, spec_n, self._func_s, func_n))
        if style == "points":
            return np.ma.masked_array(z[0]), np.ma.masked_array(var[0])
        z_full, s_full = np.zeros(shape), np.zeros(shape)
        z_full.ravel()[keep], s_full.ravel()[keep] = z[0], var[0]
        m = ~keep.reshape(shape)
        return np.ma.masked_array(z_full, mask=m), np.ma.masked_array(s_full, mask=m)


from ._pykrige3d import OrdinaryKriging3D, UniversalKriging3D  # noqa: E402 - needs the above
