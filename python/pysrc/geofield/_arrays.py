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


def species_index(sp_col: np.ndarray, names, where: str = "the run") -> np.ndarray:
    """Tree species (indices into ``names``, or names matched exactly, else ignoring case) as
    u32 indices; a bad one names its row. ``where`` names the species' source in messages."""
    if sp_col.dtype.kind in "iu":
        if sp_col.size and (sp_col.min() < 0 or sp_col.max() >= len(names)):
            bad = int(np.argmax((sp_col < 0) | (sp_col >= len(names))))
            raise GeofieldValueError(f"trees.species: index {sp_col[bad]} at row {bad} is not "
                                     f"one of the {len(names)} species")
        return sp_col.astype(np.uint32)
    lookup = {n: i for i, n in enumerate(names)}
    lower = {n.lower(): i for i, n in enumerate(names)}
    index = np.empty(len(sp_col), dtype=np.uint32)
    for row, s in enumerate(sp_col.astype(str)):
        i = lookup.get(s, lower.get(s.lower()))
        if i is None:
            raise GeofieldValueError(f"trees.species: {str(s)!r} at row {row} is not a species "
                                     f"of {where} (known: {', '.join(names)})")
        index[row] = i
    return index
