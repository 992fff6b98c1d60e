"""Argument checks shared by every function: any array-like in, contiguous numpy out.

Contiguous float64 (or, where a function keeps it, float32) arrays pass through without a copy.
Errors are ``GeofieldValueError`` naming the argument and the first bad index.
"""

from __future__ import annotations

import numpy as np

from ._errors import GeofieldValueError


def _first_bad(mask: np.ndarray) -> str:
    idx = np.argwhere(mask)[0]
    return str(int(idx[0])) if idx.size == 1 else str(tuple(int(i) for i in idx))


def check_finite(name: str, a: np.ndarray) -> None:
    """Raise unless every value of ``a`` is finite."""
    if a.size and not np.isfinite(a).all():
        bad = ~np.isfinite(a)
        where = _first_bad(bad)
        value = a[tuple(np.argwhere(bad)[0])]
        raise GeofieldValueError(f"{name}: value at index {where} is {value} (values must be finite)")


def floats(name: str, a, *, ndim: int = 1, dtypes=(np.float64,), allow_empty: bool = False,
           finite: bool = True) -> np.ndarray:
    """``a`` as a C-contiguous array of one of ``dtypes`` (the first unless it already is one)."""
    try:
        arr = np.asarray(a)
    except Exception as e:  # noqa: BLE001 - any conversion failure is the caller's argument
        raise GeofieldValueError(f"{name}: cannot be read as an array ({e})") from None
    if arr.dtype.kind not in "fiub":
        raise GeofieldValueError(f"{name}: expected numbers, got an array of dtype {arr.dtype}")
    if arr.dtype not in [np.dtype(d) for d in dtypes]:
        arr = arr.astype(dtypes[0])
    arr = np.ascontiguousarray(arr)
    if arr.ndim != ndim:
        raise GeofieldValueError(f"{name}: expected a {ndim}-D array, got shape {arr.shape}")
    if not allow_empty and arr.size == 0:
        raise GeofieldValueError(f"{name}: is empty")
    if finite:
        check_finite(name, arr)
    return arr


def same_length(**arrays: np.ndarray) -> int:
    """The common length of 1-D arrays; raise naming the first that differs."""
    names = list(arrays)
    n = len(arrays[names[0]])
    for k in names[1:]:
        if len(arrays[k]) != n:
            raise GeofieldValueError(
                f"{k}: has {len(arrays[k])} values but {names[0]} has {n}")
    return n
