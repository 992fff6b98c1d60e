"""Exact k-nearest neighbours: :class:`NeighborIndex`, a drop-in for scipy's ``cKDTree`` k-NN."""

from __future__ import annotations

import math

import numpy as np

from . import _arrays, _native, _progress
from ._errors import GeofieldValueError

K_MAX = 64


class NeighborIndex:
    """Exact k-nearest-neighbour search over 2-D or 3-D points.

    ``NeighborIndex(points).query(x, k)`` returns what ``scipy.spatial.cKDTree(points).query(x, k)``
    returns for Euclidean k-NN: the same shapes, ``inf`` distances and index ``n`` where fewer
    than k points qualify. Ties in distance go to the lower index (scipy leaves their order
    unspecified). float64 points are searched in float64; float32 points stay float32 (no copy)
    and are searched in float32.

    Parameters
    ----------
    points : array_like, shape (n, 2) or (n, 3)
    index : {"auto", "uniform", "dynamic", "brute"}
        The spatial index: a uniform grid, a grid adapted to clustered points, or none. Every
        index returns the same neighbours; ``auto`` picks by how clustered the points are.
    backend : {"auto", "cpu", "cuda", "cuda:N"}
    cell_size : float, optional
        Cell size of the uniform grid (default: from the point density).
    """

    def __init__(self, points, index="auto", backend="auto", cell_size=None):
        # Finiteness by the library's parallel check (numpy's isfinite would cost more than
        # the GPU search of a million points).
        self.data = _arrays.floats("points", points, ndim=2, dtypes=(np.float64, np.float32),
                                   finite=False)
        if self.data.shape[1] not in (2, 3):
            raise GeofieldValueError(f"points: expected shape (n, 2) or (n, 3), got "
                                     f"{self.data.shape}")
        _native.check_points(self.data, "points")
        self.n, self.m = self.data.shape
        self.index = index
        self.backend = backend
        self.cell_size = None if cell_size is None else float(cell_size)
        self.last_backend = None

    def query(self, x, k=1, eps=0, p=2, distance_upper_bound=math.inf, workers=1,
              progress=False):
        """The k nearest points of each row of ``x`` (scipy ``cKDTree.query`` conventions).

        ``k`` an int (1..64) or a list of the neighbour ranks wanted (1-based, as scipy).
        Only ``eps=0`` and ``p=2`` (exact Euclidean) are computed; ``workers`` is accepted (every
        core is used). Returns ``(d, i)``: for ``k=1`` shape ``x.shape[:-1]``, else
        ``x.shape[:-1] + (k,)``; missing neighbours have ``d = inf`` and ``i = n``.
        ``progress=True`` shows a bar of the queries answered. Interruptible: Ctrl-C raises ``KeyboardInterrupt`` within a fraction of a second.
        """
        if eps != 0:
            raise GeofieldValueError("eps: only exact search (eps=0) is supported")
        if p != 2:
            raise GeofieldValueError("p: only the Euclidean distance (p=2) is supported")
        del workers
        ranks = None
        if np.ndim(k) == 0:
            kk = int(k)
            if kk != k or kk < 1:
                raise GeofieldValueError(f"k: {k!r} must be a positive integer")
        else:
            ranks = np.asarray(k, dtype=np.int64).ravel()
            if ranks.size == 0 or ranks.min() < 1:
                raise GeofieldValueError(f"k: ranks {list(ranks)} must be positive integers")
            kk = int(ranks.max())
        if kk > K_MAX:
            raise GeofieldValueError(f"k: {kk} is more than the {K_MAX} neighbours geofield "
                                     f"returns per query")
        xa = np.asarray(x)
        if xa.shape[-1:] != (self.m,):
            raise GeofieldValueError(f"x: the last dimension must be {self.m} (the points' "
                                     f"dimension), got shape {xa.shape}")
        lead = xa.shape[:-1]
        if xa is self.data:
            q = self.data  # checked when the index was built
        else:
            q = _arrays.floats("x", xa.reshape(-1, self.m), ndim=2, dtypes=(self.data.dtype,),
                               allow_empty=True, finite=False)
            if q.shape[0]:
                _native.check_points(q, "x")
        bound = float(distance_upper_bound)
        if math.isnan(bound) or bound < 0:
            raise GeofieldValueError(f"distance_upper_bound: {distance_upper_bound!r} must be >= 0")
        if q.shape[0] == 0:
            d = np.empty((0, kk))
            i = np.empty((0, kk), dtype=np.int64)
        else:
            # Querying the indexed points themselves (the same memory): the library's stored
            # path answers them in the index's own order, with the same rows.
            same = (q.shape == self.data.shape and q.dtype == self.data.dtype
                    and q.ctypes.data == self.data.ctypes.data)
            with _progress.bar(progress, "k-NN") as bar:
                d, i, self.last_backend = _native.knn(
                    self.data, None if same else q, kk, None if math.isinf(bound) else bound,
                    False, self.index, self.cell_size, self.backend, self.n, progress=bar)
            if not math.isinf(bound):
                # scipy keeps neighbours strictly closer than the bound.
                far = d >= bound
                d[far] = math.inf
                i[far] = self.n
        if ranks is not None:
            d, i = d[:, ranks - 1], i[:, ranks - 1]
            return d.reshape(lead + (ranks.size,)), i.reshape(lead + (ranks.size,))
        if np.ndim(k) == 0 and kk == 1:
            d, i = d[:, 0], i[:, 0]
            return (d.reshape(lead), i.reshape(lead)) if lead else (d[0], i[0])
        return d.reshape(lead + (kk,)), i.reshape(lead + (kk,))

    def neighbors(self, k, radius=None, progress=False):
        """The ``k`` nearest *other* points of every point, geofield's own convention:
        ``(distance, index)`` arrays of shape (n, k) in ascending (distance, index) order, with
        ``inf`` / -1 where fewer than k others are within ``radius`` (inclusive).
        ``progress`` and interruption as :meth:`query`."""
        with _progress.bar(progress, "k-NN") as bar:
            d, i, self.last_backend = _native.knn(
                self.data, None, int(k), None if radius is None else float(radius), True,
                self.index, self.cell_size, self.backend, -1, progress=bar)
        return d, i
