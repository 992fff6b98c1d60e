"""Drop-ins for PyKrige's ``OrdinaryKriging3D`` and ``UniversalKriging3D`` (PyKrige 1.7); import
them from :mod:`geofield.pykrige`::

    # from pykrige.ok3d import OrdinaryKriging3D
    from geofield.pykrige import OrdinaryKriging3D

PyKrige's arguments in PyKrige's conventions (``variogram_parameters``, the fit when they are
not given, ``anisotropy_scaling_y/z`` and ``anisotropy_angle_x/y/z``, ``exact_values``) and
``execute`` returning ``(k3d, ss3d)`` of shape (nz, ny, nx) for ``"grid"`` (masked arrays for
``"masked"``), (n,) for ``"points"``: the same numbers within 1e-9 relative, from geofield's 3-D
kriging (:func:`geofield.krige3d`). ``n_closest_points`` works with any ``backend``. Not
supported (raise): ``pseudo_inv=True``, custom variogram functions and GSTools models, the
``hole-effect`` model. The ``specified`` and ``functional`` drifts of ``UniversalKriging3D``
are supported (global, on the CPU).
"""

from __future__ import annotations

import json

import numpy as np

from . import _arrays, _native
from . import _pykrige_drift as _pd
from ._errors import GeofieldValueError
from .pykrige import _MODELS, _fit, _params_from, _to_geofield, _unsupported


def _adjusted3(x, y, z, scaling, angles_deg, center=None):
    """PyKrige's ``_adjust_for_anisotropy`` in 3-D (the same operations in the same order, so
    the fit's bins come out the same to the last bit), about the bounding-box centre of the
    points or ``center``."""
    pts = np.vstack((x, y, z)).T
    if center is None:
        center = [(np.amax(v) + np.amin(v)) / 2.0 for v in (x, y, z)]
    center = np.array([center], dtype=float)
    pts = pts - center
    a = np.asarray(angles_deg, dtype=float) * np.pi / 180
    stretch = np.array([[1.0, 0.0, 0.0], [0.0, scaling[0], 0.0], [0.0, 0.0, scaling[1]]])
    c, s = np.cos(-a), np.sin(-a)
    rx = np.array([[1.0, 0.0, 0.0], [0.0, c[0], -s[0]], [0.0, s[0], c[0]]])
    ry = np.array([[c[1], 0.0, s[1]], [0.0, 1.0, 0.0], [-s[1], 0.0, c[1]]])
    rz = np.array([[c[2], -s[2], 0.0], [s[2], c[2], 0.0], [0.0, 0.0, 1.0]])
    rot = np.dot(rz, np.dot(ry, rx))
    return np.dot(stretch, np.dot(rot, pts.T)).T + center


def _axis(name, v):
    a = np.atleast_1d(np.squeeze(np.array(v, dtype=float, copy=True)))
    return _arrays.floats(name, a.ravel())


def _monotone(a):
    d = np.diff(a)
    return a.size == 1 or bool(np.all(d > 0) or np.all(d < 0))


class OrdinaryKriging3D:
    _kind = "ordinary"

    def __init__(self, x, y, z, val, variogram_model="linear", variogram_parameters=None,
                 variogram_function=None, nlags=6, weight=False, anisotropy_scaling_y=1.0,
                 anisotropy_scaling_z=1.0, anisotropy_angle_x=0.0, anisotropy_angle_y=0.0,
                 anisotropy_angle_z=0.0, verbose=False, enable_plotting=False,
                 exact_values=True, pseudo_inv=False, pseudo_inv_type="pinv"):
        if pseudo_inv:
            raise GeofieldValueError(
                "pseudo_inv=True is not supported: geofield solves the kriging system exactly "
                "(Cholesky, coincident samples merged), so a pseudo-inverse is never needed")
        if variogram_function is not None or variogram_model == "custom":
            raise _unsupported("a custom variogram function")
        if not isinstance(variogram_model, str):
            raise _unsupported("a GSTools covariance model")
        if variogram_model not in _MODELS:
            if variogram_model == "hole-effect":
                raise _unsupported("the hole-effect variogram model")
            raise GeofieldValueError(f"variogram_model: {variogram_model!r} is not one of "
                                     f"{', '.join(_MODELS)}")
        if enable_plotting:
            raise _unsupported("enable_plotting=True")
        if not isinstance(exact_values, bool):
            raise GeofieldValueError("exact_values has to be boolean True or False")
        self.X_ORIG = _arrays.floats("x", np.ravel(x))
        self.Y_ORIG = _arrays.floats("y", np.ravel(y))
        self.Z_ORIG = _arrays.floats("z", np.ravel(z))
        self.VALUES = _arrays.floats("val", np.ravel(val))
        _arrays.same_length(x=self.X_ORIG, y=self.Y_ORIG, z=self.Z_ORIG, val=self.VALUES)
        self.variogram_model = variogram_model
        self.verbose = verbose
        self.exact_values = exact_values
        self.anisotropy_scaling_y = float(anisotropy_scaling_y)
        self.anisotropy_scaling_z = float(anisotropy_scaling_z)
        self.anisotropy_angle_x = float(anisotropy_angle_x)
        self.anisotropy_angle_y = float(anisotropy_angle_y)
        self.anisotropy_angle_z = float(anisotropy_angle_z)
        if variogram_parameters is None:
            adj = _adjusted3(self.X_ORIG, self.Y_ORIG, self.Z_ORIG,
                             [self.anisotropy_scaling_y, self.anisotropy_scaling_z],
                             [self.anisotropy_angle_x, self.anisotropy_angle_y,
                              self.anisotropy_angle_z])
            p = _fit(variogram_model, adj, self._fit_values(), int(nlags), bool(weight))
        else:
            p = _params_from(variogram_model, variogram_parameters)
        if variogram_model == "linear":
            self.variogram_model_parameters = [p["slope"], p["nugget"]]
        elif variogram_model == "power":
            self.variogram_model_parameters = [p["scale"], p["exponent"], p["nugget"]]
        else:
            self.variogram_model_parameters = [p["psill"], p["range"], p["nugget"]]
        self._gf = _to_geofield(variogram_model, p)
        self.info = None
        self.last_device = None

    def _fit_values(self):
        return self.VALUES

    def _anisotropy(self):
        return ("pykrige", [self.anisotropy_scaling_y, self.anisotropy_scaling_z,
                            self.anisotropy_angle_x, self.anisotropy_angle_y,
                            self.anisotropy_angle_z])

    def execute(self, style, xpoints, ypoints, zpoints, mask=None, backend="vectorized",
                n_closest_points=None, *, device="auto"):
        """Kriged values and variances in PyKrige's shapes: ``"grid"`` (xpoints x ypoints x
        zpoints, arrays of shape (nz, ny, nx)), ``"masked"`` (the grid with ``mask`` True where
        no value is wanted; masked arrays) or ``"points"`` (paired coordinates, shape (n,)).
        ``n_closest_points``: krige each node from that many nearest samples (at most 64).
        ``device`` picks geofield's backend ("auto", "cpu", "cuda")."""
        return self._execute(style, xpoints, ypoints, zpoints, mask, backend, n_closest_points,
                             device)

    def _execute(self, style, xpoints, ypoints, zpoints, mask, backend, n_closest_points,
                 device):
        if backend not in ("vectorized", "loop"):
            raise GeofieldValueError(f"backend: {backend!r} is not 'vectorized' or 'loop'")
        if style not in ("grid", "points", "masked"):
            raise GeofieldValueError("style argument must be 'grid', 'points', or 'masked'")
        xp, yp, zp = _axis("xpoints", xpoints), _axis("ypoints", ypoints), _axis("zpoints", zpoints)
        if style == "points":
            _arrays.same_length(xpoints=xp, ypoints=yp, zpoints=zp)
            z, ss = self._krige(None, (xp, yp, zp), n_closest_points, device)
            return z, ss
        shape = (zp.size, yp.size, xp.size)
        if style == "masked":
            if mask is None:
                raise GeofieldValueError("Must specify boolean masking array when style is "
                                         "'masked'.")
            m = np.asarray(mask, dtype=bool)
            if m.ndim != 3:
                raise GeofieldValueError("Mask is not three-dimensional.")
            if m.shape != shape:
                if m.shape == shape[::-1]:
                    m = m.swapaxes(0, 2)  # PyKrige accepts (nx, ny, nz) too
                else:
                    raise GeofieldValueError("Mask dimensions do not match specified grid.")
        else:
            m = None
        if all(_monotone(a) for a in (xp, yp, zp)) and m is None:
            z, ss = self._krige((xp, yp, zp), None, n_closest_points, device)
            return z.reshape(shape), ss.reshape(shape)
        gz, gy, gx = np.meshgrid(zp, yp, xp, indexing="ij")
        keep = np.ones(shape, dtype=bool) if m is None else ~m
        z_full, s_full = np.zeros(shape), np.zeros(shape)
        if keep.any():
            z, ss = self._krige(None, (gx[keep], gy[keep], gz[keep]), n_closest_points, device)
            z_full[keep], s_full[keep] = z, ss
        if m is None:
            return z_full, s_full
        return np.ma.array(z_full, mask=m), np.ma.array(s_full, mask=m)

    def _krige(self, grid, points, neighbors, device):
        model, sill, rng, nugget = self._gf
        kind = self._drift_kind()
        grid = None if grid is None else tuple(np.ascontiguousarray(a) for a in grid)
        points = None if points is None else tuple(np.ascontiguousarray(a) for a in points)
        z, ss, info, self.last_device = _native.krige3d(
            (self.X_ORIG, self.Y_ORIG, self.Z_ORIG), self.VALUES,
            (model, [sill], [rng], nugget), kind, None, self._anisotropy(),
            None if neighbors is None else int(neighbors), None, not self.exact_values,
            grid, points, True, device)
        self.info = json.loads(info)
        return z, ss

    def _drift_kind(self):
        return "ordinary"

    def print_statistics(self):
        raise _unsupported("print_statistics")

    def display_variogram_model(self):
        raise _unsupported("display_variogram_model")


class UniversalKriging3D(OrdinaryKriging3D):
    """PyKrige's ``UniversalKriging3D``: ``drift_terms`` from ``"regional_linear"`` (a linear
    drift in x, y, z), ``"specified"`` (``specified_drift``, and ``specified_drift_arrays`` at
    ``execute``) and ``"functional"`` (``functional_drift``, callables f(x, y, z)), or none
    (ordinary kriging, as PyKrige). ``specified`` and ``functional`` run on the CPU."""

    def __init__(self, x, y, z, val, variogram_model="linear", variogram_parameters=None,
                 variogram_function=None, nlags=6, weight=False, anisotropy_scaling_y=1.0,
                 anisotropy_scaling_z=1.0, anisotropy_angle_x=0.0, anisotropy_angle_y=0.0,
                 anisotropy_angle_z=0.0, drift_terms=None, specified_drift=None,
                 functional_drift=None, verbose=False, enable_plotting=False,
                 exact_values=True, pseudo_inv=False, pseudo_inv_type="pinv"):
        terms = [] if drift_terms is None else list(drift_terms)
        for t in terms:
            if t not in ("regional_linear", "specified", "functional"):
                raise GeofieldValueError(f"drift_terms: {t!r} is not a 3-D drift term")
        self._linear = "regional_linear" in terms
        super().__init__(x, y, z, val, variogram_model, variogram_parameters,
                         variogram_function, nlags, weight, anisotropy_scaling_y,
                         anisotropy_scaling_z, anisotropy_angle_x, anisotropy_angle_y,
                         anisotropy_angle_z, verbose, enable_plotting, exact_values, pseudo_inv,
                         pseudo_inv_type)
        n = self.VALUES.size
        self._spec, self._funcs = _pd.check_terms(terms, specified_drift, functional_drift, n)
        self._func_s = _pd.evaluate(self._funcs, self._adjusted(self.X_ORIG, self.Y_ORIG,
                                                                self.Z_ORIG), n)

    def _adjusted(self, x, y, z):
        """PyKrige's anisotropy-adjusted (x, y, z), about the samples' bounding-box centre."""
        adj = _adjusted3(np.asarray(x, dtype=float), np.asarray(y, dtype=float),
                         np.asarray(z, dtype=float),
                         [self.anisotropy_scaling_y, self.anisotropy_scaling_z],
                         [self.anisotropy_angle_x, self.anisotropy_angle_y,
                          self.anisotropy_angle_z],
                         [(np.amax(v) + np.amin(v)) / 2.0
                          for v in (self.X_ORIG, self.Y_ORIG, self.Z_ORIG)])
        return adj[:, 0], adj[:, 1], adj[:, 2]

    def _drift_kind(self):
        return "universal" if self._linear else "ordinary"

    def execute(self, style, xpoints, ypoints, zpoints, mask=None, backend="vectorized",
                specified_drift_arrays=None, *, device="auto"):
        """As :meth:`OrdinaryKriging3D.execute` (PyKrige's UK3D has no moving window); with a
        specified drift, ``specified_drift_arrays`` gives each variable at the nodes."""
        if not (self._spec or self._funcs):
            _pd.unexpected_arrays(specified_drift_arrays)
            return self._execute(style, xpoints, ypoints, zpoints, mask, backend, None, device)
        if backend not in ("vectorized", "loop"):
            raise GeofieldValueError(f"backend: {backend!r} is not 'vectorized' or 'loop'")
        if style not in ("grid", "points", "masked"):
            raise GeofieldValueError("style argument must be 'grid', 'points', or 'masked'")
        xp, yp, zp = _axis("xpoints", xpoints), _axis("ypoints", ypoints), _axis("zpoints", zpoints)
        keep = m = None
        if style == "points":
            _arrays.same_length(xpoints=xp, ypoints=yp, zpoints=zp)
            shape, px, py_, pz = xp.shape, xp, yp, zp
        else:
            shape = (zp.size, yp.size, xp.size)
            m = np.zeros(shape, dtype=bool)
            if style == "masked":
                if mask is None:
                    raise GeofieldValueError("Must specify boolean masking array when style is "
                                             "'masked'.")
                m = np.asarray(mask, dtype=bool)
                if m.ndim != 3:
                    raise GeofieldValueError("Mask is not three-dimensional.")
                if m.shape != shape:
                    if m.shape != shape[::-1]:
                        raise GeofieldValueError("Mask dimensions do not match specified grid.")
                    m = m.swapaxes(0, 2)
            gz, gy, gx = np.meshgrid(zp, yp, xp, indexing="ij")
            keep = ~m.ravel()
            px, py_, pz = gx.ravel()[keep], gy.ravel()[keep], gz.ravel()[keep]
        spec_n = (_pd.node_arrays(specified_drift_arrays, len(self._spec), style, shape, keep)
                  if self._spec else [])
        func_n = _pd.evaluate(self._funcs, self._adjusted(px, py_, pz), px.size)
        model, sill, rng, nugget = self._gf
        pts = tuple(np.ascontiguousarray(a) for a in (px, py_, pz))
        z, ss, info, self.last_device = _native.krige3d(
            (self.X_ORIG, self.Y_ORIG, self.Z_ORIG), self.VALUES,
            (model, [sill], [rng], nugget), self._drift_kind(), None, self._anisotropy(), None,
            None, not self.exact_values, None, pts, True, device,
            given_drift=_pd.given(self._spec, spec_n, self._func_s, func_n))
        self.info = json.loads(info)
        if style == "points":
            return z, ss
        z_full, s_full = np.zeros(shape), np.zeros(shape)
        z_full.ravel()[keep], s_full.ravel()[keep] = z, ss
        if style == "grid":
            return z_full, s_full
        return np.ma.array(z_full, mask=m), np.ma.array(s_full, mask=m)
