"""PyKrige's ``specified`` and ``functional`` drifts for the drop-ins (2-D ``UniversalKriging``
and 3-D ``UniversalKriging3D``): the arguments checked as PyKrige checks them, the callables
evaluated here, and everything passed to geofield's native kriging as drift variables given by
value at the samples and at the nodes (the algebra is the library's).

As PyKrige: ``specified_drift`` is a list of arrays, one value per sample each;
``execute(..., specified_drift_arrays=[...])`` gives each at the nodes (the grid's shape, or one
value per point). ``functional_drift`` is a list of callables f(x, y) (3-D: f(x, y, z)) evaluated
on PyKrige's anisotropy-adjusted coordinates (rotated and stretched about the samples'
bounding-box centre) at the samples and at the nodes. The columns come in PyKrige's order
(the polynomial, then the specified, then the functional terms); the order does not change the
kriging.
"""

from __future__ import annotations

import warnings

import numpy as np

from ._errors import GeofieldValueError


def check_terms(terms, specified_drift, functional_drift, n):
    """PyKrige's constructor checks: ``(specified arrays at the samples, callables)``."""
    spec, funcs = [], []
    if "specified" in terms:
        if not isinstance(specified_drift, list):
            raise GeofieldValueError("specified_drift: arrays for specified drift terms must be "
                                     "encapsulated in a list")
        if len(specified_drift) == 0:
            raise GeofieldValueError("specified_drift: must provide at least one drift-value "
                                     "array when using the 'specified' drift capability")
        for k, term in enumerate(specified_drift):
            a = np.squeeze(np.array(term, dtype=float, copy=True))
            if a.size != n:
                raise GeofieldValueError(
                    f"specified_drift[{k}]: {a.size} values; must specify the drift values for "
                    f"each data point ({n}) when using the 'specified' drift capability")
            spec.append(np.ascontiguousarray(a.ravel()))
    if "functional" in terms:
        if not isinstance(functional_drift, list):
            raise GeofieldValueError("functional_drift: callables for functional drift terms "
                                     "must be encapsulated in a list")
        if len(functional_drift) == 0:
            raise GeofieldValueError("functional_drift: must provide at least one callable "
                                     "object when using the 'functional' drift capability")
        for k, f in enumerate(functional_drift):
            if not callable(f):
                raise GeofieldValueError(f"functional_drift[{k}]: {f!r} is not callable")
        funcs = list(functional_drift)
    return spec, funcs


def evaluate(funcs, coords, count):
    """Every callable at the adjusted ``coords`` (a tuple of arrays), as float arrays of
    ``count`` values (a scalar result is broadcast, as numpy would in PyKrige's matrix)."""
    out = []
    for k, f in enumerate(funcs):
        v = np.asarray(f(*coords), dtype=float)
        try:
            v = np.broadcast_to(v, (count,)) if v.ndim == 0 else v.reshape(count)
        except ValueError:
            raise GeofieldValueError(f"functional_drift[{k}]: returned shape {v.shape} for "
                                     f"{count} points") from None
        out.append(np.ascontiguousarray(v, dtype=float))
    return out


def node_arrays(arrays, n_terms, style, shape, keep):
    """PyKrige's ``execute`` checks of ``specified_drift_arrays``: each the grid's ``shape``
    (or its reverse, transposed) for ``"grid"``/``"masked"``, one value per point for
    ``"points"``; returns each flattened in the nodes' order (``keep``: the grid nodes kept,
    flattened; None for all)."""
    if arrays is None or (isinstance(arrays, list) and len(arrays) == 0):
        raise GeofieldValueError("specified_drift_arrays: must provide drift values for kriging "
                                 "points when using 'specified' drift capability")
    if not isinstance(arrays, list):
        raise GeofieldValueError("specified_drift_arrays: arrays for specified drift terms must "
                                 "be encapsulated in a list")
    out = []
    for k, a in enumerate(arrays):
        a = np.asarray(a, dtype=float)
        if style == "points":
            if a.ndim != 1 or a.shape[0] != shape[0]:
                raise GeofieldValueError(
                    f"specified_drift_arrays[{k}]: shape {a.shape}; the number of drift values "
                    f"must match the number of kriging points ({shape[0]})")
        elif a.shape != shape:
            if a.shape == shape[::-1]:
                a = a.T  # PyKrige accepts the reversed axes too ((nx, ny[, nz]))
            else:
                raise GeofieldValueError(
                    f"specified_drift_arrays[{k}]: shape {a.shape} does not match the grid's "
                    f"{shape}")
        a = a.ravel()
        out.append(np.ascontiguousarray(a if keep is None else a[keep]))
    if len(out) != n_terms:
        raise GeofieldValueError(f"specified_drift_arrays: {len(out)} arrays for {n_terms} "
                                 f"specified drift terms (inconsistent number supplied)")
    return out


def unexpected_arrays(arrays):
    """PyKrige warns when drift arrays come without a specified drift."""
    if arrays is not None and len(arrays) != 0:
        warnings.warn("Provided specified drift values, but 'specified' drift was not "
                      "initialized during instantiation of the kriging class.", RuntimeWarning,
                      stacklevel=3)


def given(spec_s, spec_n, func_s, func_n):
    """The native layer's drift variables: (name, at the samples, at the nodes)."""
    return ([(f"specified_drift[{k}]", s, n) for k, (s, n) in enumerate(zip(spec_s, spec_n))]
            + [(f"functional_drift[{k}]", s, n)
               for k, (s, n) in enumerate(zip(func_s, func_n))])
