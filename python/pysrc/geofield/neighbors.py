"""Exact neighbour searches: :class:`NeighborIndex`, a drop-in for scipy's ``cKDTree`` (k-NN,
radius queries, pairs, pair counts; Minkowski p = 1, 2, inf; periodic boxes), and
:func:`ripley_k`, Ripley's K with spatstat's edge corrections."""

from __future__ import annotations

import gc
import math

import numpy as np

from . import _arrays, _native, _progress
from ._errors import GeofieldValueError

K_MAX = 64
# k-NN in any space (p, periodic boxes) answers up to this many neighbours per query.
K_MAX_SPACE = 65536


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
    boxsize : float or array_like, optional
        A periodic box (scipy's ``boxsize``): one length for every axis or one per axis, 0 for
        an open axis; the points must lie in [0, L). Queries are wrapped into the box.

    Besides :meth:`query`, the scipy methods :meth:`query_ball_point`, :meth:`query_ball_tree`,
    :meth:`query_pairs` and :meth:`count_neighbors` take scipy's arguments and return its
    shapes; :meth:`within` returns every neighbour within r as CSR arrays. Membership is
    inclusive (d <= r) as scipy's. The radius methods run on ``backend`` (CPU and CUDA give the
    same rows); k-NN with ``p`` other than 2, a periodic box or k above 64 runs on the CPU.
    """

    def __init__(self, points, index="auto", backend="auto", cell_size=None, boxsize=None):
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
        self.boxsize = None
        if boxsize is not None:
            b = np.broadcast_to(np.asarray(boxsize, dtype=np.float64), (self.m,))
            if not np.isfinite(b).all() or (b < 0).any():
                raise GeofieldValueError(f"boxsize: {boxsize!r} must be finite lengths >= 0")
            if (b > 0).any():
                self.boxsize = [float(v) for v in b]
        self._f64 = None

    def _data64(self):
        """The points as float64 (the radius searches run in float64), converted once."""
        if self._f64 is None:
            self._f64 = np.ascontiguousarray(self.data, dtype=np.float64)
        return self._f64

    def _queries64(self, x):
        xa = np.asarray(x, dtype=np.float64)
        if xa.shape[-1:] != (self.m,):
            raise GeofieldValueError(f"x: the last dimension must be {self.m} (the points' "
                                     f"dimension), got shape {xa.shape}")
        q = np.ascontiguousarray(xa.reshape(-1, self.m))
        if q.shape[0]:
            _native.check_points(q, "x")
        return xa.shape[:-1], q

    def query(self, x, k=1, eps=0, p=2, distance_upper_bound=math.inf, workers=1,
              progress=False):
        """The k nearest points of each row of ``x`` (scipy ``cKDTree.query`` conventions).

        ``k`` an int (1..65536) or a list of the neighbour ranks wanted (1-based, as scipy).
        ``p`` 1, 2 or inf (Manhattan, Euclidean, Chebyshev) and the index's ``boxsize`` are
        honoured; only ``eps=0`` (exact search) is computed; ``workers`` is accepted (every
        core is used). Every case runs on the index's backend. Returns ``(d, i)``: for ``k=1`` shape ``x.shape[:-1]``, else
        ``x.shape[:-1] + (k,)``; missing neighbours have ``d = inf`` and ``i = n``.
        ``progress=True`` shows a bar of the queries answered. Interruptible: Ctrl-C raises ``KeyboardInterrupt`` within a fraction of a second.
        """
        if eps != 0:
            raise GeofieldValueError("eps: only exact search (eps=0) is supported")
        p = _check_p(p)
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
        if kk > K_MAX_SPACE:
            raise GeofieldValueError(f"k: {kk} is more than the {K_MAX_SPACE} neighbours geofield "
                                     f"returns per query")
        if p != 2 or self.boxsize is not None or kk > K_MAX:
            return self._query_space(x, k, kk, ranks, p, distance_upper_bound)
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

    def _query_space(self, x, k, kk, ranks, p, distance_upper_bound):
        """:meth:`query` for p = 1 or inf, a periodic box, or k above 64 (the growing-radius
        search of :meth:`within`, on the index's backend)."""
        lead, q = self._queries64(x)
        bound = float(distance_upper_bound)
        if math.isnan(bound) or bound < 0:
            raise GeofieldValueError(f"distance_upper_bound: {distance_upper_bound!r} must be >= 0")
        if q.shape[0] == 0:
            d, i = np.empty((0, kk)), np.empty((0, kk), dtype=np.int64)
        else:
            d, i, self.last_backend = _native.ball_knn(
                self._data64(), q, kk, p, self.boxsize, False,
                None if math.isinf(bound) else bound, self.n, self.backend)
            if not math.isinf(bound):
                far = d >= bound  # scipy keeps neighbours strictly closer than the bound
                d[far] = math.inf
                i[far] = self.n
        if ranks is not None:
            d, i = d[:, ranks - 1], i[:, ranks - 1]
            return d.reshape(lead + (ranks.size,)), i.reshape(lead + (ranks.size,))
        if np.ndim(k) == 0 and kk == 1:
            d, i = d[:, 0], i[:, 0]
            return (d.reshape(lead), i.reshape(lead)) if lead else (d[0], i[0])
        return d.reshape(lead + (kk,)), i.reshape(lead + (kk,))

    def within(self, x=None, r=1.0, p=2, sort="distance", exclude_self=False):
        """Every point within ``r`` (inclusive) of each row of ``x`` (default: of every point),
        as CSR arrays ``(offsets, indices, distances)``: query i's neighbours are
        ``indices[offsets[i]:offsets[i+1]]``, sorted by (distance, index) (``sort="distance"``),
        by index (``"index"``) or in the index's own order (``"none"``). ``exclude_self`` leaves
        each point out of its own row when ``x`` is None. kiddo's ``within`` with the rows
        packed."""
        p = _check_p(p)
        q = None
        if x is not None:
            _, q = self._queries64(x)
        return _native.ball_within(self._data64(), q, float(r), p, self.boxsize, sort,
                                   bool(exclude_self), self.backend)

    def query_ball_point(self, x, r, p=2.0, eps=0, workers=1, return_sorted=None,
                         return_length=False):
        """scipy's ``cKDTree.query_ball_point``: the indices of the points within ``r``
        (inclusive) of each row of ``x``; a list for one point, else an object array of lists
        of shape ``x.shape[:-1]``. ``r`` may be an array broadcast against ``x.shape[:-1]``.
        ``return_sorted`` None sorts the lists of several points, not of one (scipy's rule);
        ``return_length`` returns the counts instead."""
        if eps != 0:
            raise GeofieldValueError("eps: only exact search (eps=0) is supported")
        del workers
        p = _check_p(p)
        lead, q = self._queries64(x)
        rr = np.broadcast_to(np.asarray(r, dtype=np.float64), lead).ravel()
        if np.isnan(rr).any():
            raise GeofieldValueError("r: must be numbers")
        single = len(lead) == 0
        sort = (not single) if return_sorted is None else bool(return_sorted)
        order = "index" if sort else "none"
        counts = np.zeros(q.shape[0], dtype=np.intp)
        lists = [None] * q.shape[0]
        for rv in np.unique(rr):
            sel = np.flatnonzero(rr == rv)
            qs = q if sel.size == q.shape[0] else np.ascontiguousarray(q[sel])
            if rv < 0:
                if not return_length:
                    for s in sel:
                        lists[s] = []
                continue
            if return_length:
                counts[sel] = _native.ball_counts(self._data64(), qs, float(rv), p, self.boxsize,
                                                  self.backend)
                continue
            off, idx, _ = _native.ball_within(self._data64(), qs, float(rv), p, self.boxsize,
                                              order, False, self.backend)
            # One list of Python ints, sliced per row (C-speed slicing), with the cyclic
            # garbage collector paused: a million new lists would set it off again and again
            # over the growing heap (2.7x slower), and lists of ints hold no cycles.
            paused = gc.isenabled()
            gc.disable()
            try:
                flat = idx.tolist()
                bounds = off.tolist()
                for j, s in enumerate(sel):
                    lists[s] = flat[bounds[j]:bounds[j + 1]]
            finally:
                if paused:
                    gc.enable()
        if return_length:
            return counts.reshape(lead) if lead else counts[0]
        if single:
            return lists[0]
        out = np.empty(len(lists), dtype=object)
        out[:] = lists
        return out.reshape(lead)

    def query_ball_tree(self, other, r, p=2.0, eps=0):
        """scipy's ``query_ball_tree``: for each point of this index, the list of the indices
        of ``other``'s points within ``r``."""
        if eps != 0:
            raise GeofieldValueError("eps: only exact search (eps=0) is supported")
        p = _check_p(p)
        off, idx, _ = _native.ball_within(_other64(other, self.m), self._data64(), float(r), p,
                                          self.boxsize, "index", False, self.backend)
        return [part.tolist() for part in np.split(idx, off[1:-1].astype(np.int64))]

    def query_pairs(self, r, p=2.0, eps=0, output_type="set"):
        """scipy's ``query_pairs``: the pairs (i, j), i < j, within ``r`` (inclusive), as a set
        of tuples or, with ``output_type="ndarray"``, an (npairs, 2) array in ascending
        order."""
        if eps != 0:
            raise GeofieldValueError("eps: only exact search (eps=0) is supported")
        p = _check_p(p)
        if output_type not in ("set", "ndarray"):
            raise GeofieldValueError(f"output_type: {output_type!r} is not 'set' or 'ndarray'")
        pairs = _native.ball_pairs(self._data64(), float(r), p, self.boxsize, self.backend)
        if output_type == "ndarray":
            return pairs.astype(np.intp, copy=False)
        return set(map(tuple, pairs.tolist()))

    def count_neighbors(self, other, r, p=2.0, weights=None, cumulative=True):
        """scipy's ``count_neighbors``: the number of pairs (x1 from this index, x2 from
        ``other``) with distance <= r, for a scalar or array ``r`` (with ``cumulative=False``
        the counts between consecutive radii, which must be non-decreasing). ``weights``: one
        array (only when ``other`` is this index) or a tuple ``(self_weights, other_weights)``
        with None for ones; weighted counts are floats."""
        p = _check_p(p)
        same = other is self
        o = None if same else _other64(other, self.m)
        rr = np.asarray(r, dtype=np.float64)
        w1 = w2 = None
        if weights is not None:
            if isinstance(weights, tuple):
                w1, w2 = weights
            elif same:
                w1 = w2 = weights
            else:
                raise GeofieldValueError("weights: a single array is valid only when other is "
                                         "self; pass (self_weights, other_weights)")
            w1 = None if w1 is None else _arrays.floats("weights", w1)
            w2 = None if w2 is None else _arrays.floats("weights", w2)
            if w1 is None and w2 is None:
                w1 = np.ones(self.n)
        res = _native.ball_count(self._data64(), o, np.ascontiguousarray(rr.ravel()), p,
                                 self.boxsize, w1, w2, bool(cumulative), self.backend)
        if w1 is None and w2 is None:
            res = res.astype(np.intp)
        return res.reshape(rr.shape) if rr.ndim else res[0]

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


def _check_p(p):
    p = float(p)
    if p not in (1.0, 2.0, math.inf):
        raise GeofieldValueError(f"p: {p} is not supported (1, 2 or inf: Manhattan, Euclidean, "
                                 f"Chebyshev)")
    return p


def _other64(other, m):
    data = other._data64() if isinstance(other, NeighborIndex) else getattr(other, "data", other)
    a = _arrays.floats("other", data, ndim=2)
    if a.shape[1] != m:
        raise GeofieldValueError(f"other: points of dimension {a.shape[1]}, expected {m}")
    return a


def _pattern(points, window, r):
    """A 2-D pattern's points (n, 2), window (x0, y0, x1, y1) or None and radii or None."""
    pts = _arrays.floats("points", points, ndim=2)
    if pts.shape[1] != 2:
        raise GeofieldValueError(f"points: expected shape (n, 2), got {pts.shape}")
    w = None if window is None else [float(v) for v in window]
    if w is not None and len(w) != 4:
        raise GeofieldValueError(f"window: expected (x0, y0, x1, y1), got {window!r}")
    rr = None if r is None else _arrays.floats("r", r)
    return pts, w, rr


def ripley_k(points, window=None, r=None, correction=("border", "translate", "isotropic"),
             backend="auto"):
    """Ripley's K and Besag's L of a 2-D point pattern (a stem map) in a rectangular window,
    with spatstat's ``Kest`` edge corrections.

    Parameters
    ----------
    points : array_like, shape (n, 2)
    window : (x0, y0, x1, y1), optional
        The plot. Default: the points' bounding box (smaller than the plot: biases K up).
    r : array_like, optional
        Non-decreasing radii >= 0. Default: spatstat's, 513 from 0 to
        min(shorter side / 4, sqrt(1000 / (pi * intensity))).
    correction : str or sequence of str
        Any of "none", "border", "translate", "isotropic" (or spatstat's "un", "trans", "iso").
    backend : {"auto", "cpu", "cuda", "cuda:N"}
        Both give the same K, bit for bit but for the isotropic estimate (within 1e-13: the
        device's arc cosine).

    Returns
    -------
    dict of numpy arrays: ``r``, ``theo`` (pi r^2), one K per correction under spatstat's
    column names (``un``, ``border``, ``trans``, ``iso``; NaN where a correction is
    undefined), ``L_<name>`` = sqrt(K / pi) for each, and ``n``, ``area``, ``window``.
    """
    pts, w, rr = _pattern(points, window, r)
    if isinstance(correction, str):
        correction = [correction]
    out = dict(_native.ripley_k(pts, w, rr, list(correction), backend))
    for name in ("un", "border", "trans", "iso"):
        if name in out:
            out["L_" + name] = np.sqrt(np.maximum(out[name], 0.0) / math.pi)
    return out


def pair_correlation(points, window=None, r=None, correction=("translate", "isotropic"), bw=None,
                     divisor="r"):
    """The pair-correlation function g(r) of a 2-D point pattern in a rectangular window
    (spatstat's ``pcf``): the kernel estimate of K'(r) / (2 pi r), 1 under complete spatial
    randomness, above 1 where points cluster at that distance, below where they repel.

    Parameters
    ----------
    points : array_like, shape (n, 2)
    window : (x0, y0, x1, y1), optional
        The plot. Default: the points' bounding box (smaller than the plot: give the plot).
    r : array_like, optional
        Non-decreasing radii >= 0. Default: spatstat's (as :func:`ripley_k`).
    correction : str or sequence of str
        Any of "none", "translate", "isotropic" (spatstat's "un", "trans", "iso"; "Ripley").
    bw : float, optional
        The Epanechnikov kernel's standard deviation (spatstat's ``bw``; its half-width is
        sqrt(5) bw). Default: spatstat's, half-width 0.15 / sqrt(intensity).
    divisor : {"r", "d"}
        Divide the kernel sum by r (spatstat's default) or each pair's term by its distance.

    Returns
    -------
    dict of numpy arrays: ``r``, ``theo`` (1), one g per correction under spatstat's column
    names (``un``, ``trans``, ``iso``; NaN at r = 0 with divisor "r"), and ``bw``,
    ``half_width``, ``n``, ``area``, ``window``. Exact kernel sums over the pairs (spatstat bins
    the distances first: the two agree to that binning's error). Runs on the CPU.
    """
    pts, w, rr = _pattern(points, window, r)
    if isinstance(correction, str):
        correction = [correction]
    return dict(_native.pair_correlation(pts, w, rr, list(correction),
                                         None if bw is None else float(bw), str(divisor)))


def _interval(name, v):
    if v is None:
        return None
    v = tuple(float(x) for x in v)
    if len(v) != 2:
        raise GeofieldValueError(f"{name}: expected (rmin, rmax), got {v!r}")
    return v


def csr_envelope(points, window=None, r=None, fun="L", correction="translate", nsim=99, nrank=1,
                 seed=0, bw=None, divisor="r", backend="auto", global_=False, ginterval=None,
                 use_theory=True):
    """A simulation envelope of K, L or g under complete spatial randomness (spatstat's
    ``envelope(X, Lest, nsim=99)``): ``nsim`` Poisson patterns of the observed intensity in
    the window (:func:`csr_patterns`), the function of each at the same radii with the same
    ``correction``.

    Pointwise (default): at each r the ``nrank``-th smallest (``lo``) and largest (``hi``)
    simulated value. Where the observed curve (``obs``) leaves [lo, hi] at one r chosen
    beforehand, randomness is rejected at the pointwise level ``alpha`` = 2 nrank / (nsim + 1)
    (0.02 by default); scanning every r for an exit is not a test at that level.

    Global (``global_=True``, spatstat's ``global=TRUE``): the band ``centre`` +- ``width``
    of constant width, ``width`` the nrank-th largest over the simulations of their maximum
    absolute deviation from the centre over r in ``ginterval`` (rmin, rmax) (default: every r;
    lo, hi NaN outside). An observed curve leaving it anywhere in the interval rejects
    randomness at ``alpha`` = nrank / (nsim + 1). The centre is the theory (pi r^2, r or 1;
    ``use_theory=True``, spatstat's default for CSR) or, with ``use_theory=False``, the mean
    of ``nsim`` further simulations (spatstat's ``nsim2 = nsim``: 2 nsim patterns in all).

    ``fun``: "K", "L" or "g" (``bw`` and ``divisor`` as :func:`pair_correlation`). ``seed``
    fixes the simulations (each has its own generator: the same on every backend and thread
    count). K runs on ``backend``.

    Returns a dict of numpy arrays ``r``, ``obs``, ``theo``, ``lo``, ``hi``, ``mean`` (the
    band's simulations' mean) and ``alpha``, ``nsim``, ``nrank``, ``correction``, ``backend``,
    ``global``; global envelopes add ``centre``, ``width``, ``ginterval``, ``use_theory``.
    """
    pts, w, rr = _pattern(points, window, r)
    return dict(_native.csr_envelope(pts, w, rr, str(fun), str(correction), int(nsim),
                                     int(nrank), int(seed), None if bw is None else float(bw),
                                     str(divisor), backend, bool(global_),
                                     _interval("ginterval", ginterval), bool(use_theory)))


def _deviation_test(test, points, window, r, fun, correction, nsim, seed, bw, divisor, backend,
                    rinterval, use_theory):
    pts, w, rr = _pattern(points, window, r)
    return dict(_native.csr_test(pts, w, rr, str(fun), str(correction), int(nsim), int(seed),
                                 None if bw is None else float(bw), str(divisor), backend, test,
                                 _interval("rinterval", rinterval), bool(use_theory)))


_TEST_DOC = """Monte Carlo test of complete spatial randomness (spatstat's ``{name}``) with
    ``nsim`` CSR patterns (the first ``nsim`` of :func:`csr_envelope`'s with the same ``seed``).

    The deviation d(r) of a curve is f(r) - theory (``use_theory=True``, spatstat's default for
    CSR) or, with ``use_theory=False``, (f(r) - m(r)) (nsim + 1) / nsim with m the mean of the
    nsim simulated and the observed curves (spatstat's default ``leaveout=1``), over the r in
    ``rinterval`` (rmin, rmax) (default: every r; an undefined observed value at its first r
    only, as g(0), moves rmin to the next r). {stat}

    The p-value is rank / (nsim + 1), rank = 1 + the simulations whose statistic is at least
    the observed one (ties count against the pattern; spatstat's default draws their share at
    random, so the two agree whenever ``ties`` is 0).

    Returns a dict: ``statistic``, ``p_value``, ``rank``, ``ties``, ``sim_statistics`` (each
    simulation's), ``rinterval`` (the one used), ``nsim``, ``test``, ``use_theory``.
    """


def mad_test(points, window=None, r=None, fun="L", correction="translate", nsim=99, seed=0,
             bw=None, divisor="r", backend="auto", rinterval=None, use_theory=True):
    return _deviation_test("mad", points, window, r, fun, correction, nsim, seed, bw, divisor,
                           backend, rinterval, use_theory)


def dclf_test(points, window=None, r=None, fun="L", correction="translate", nsim=99, seed=0,
              bw=None, divisor="r", backend="auto", rinterval=None, use_theory=True):
    return _deviation_test("dclf", points, window, r, fun, correction, nsim, seed, bw, divisor,
                           backend, rinterval, use_theory)


mad_test.__doc__ = _TEST_DOC.format(
    name="mad.test", stat="The statistic is max |d(r)| (maximum absolute deviation).")
dclf_test.__doc__ = _TEST_DOC.format(
    name="dclf.test",
    stat="The statistic is (rmax - rmin) mean(d(r)^2) over those r (spatstat's discretisation "
         "of the integral of d^2; 1 times the mean for a single r: "
         "Diggle-Cressie-Loosmore-Ford).")


def csr_patterns(points, window=None, nsim=99, seed=0, first=0):
    """The CSR patterns that :func:`csr_envelope`, :func:`mad_test` and :func:`dclf_test` draw
    for ``points`` in ``window`` with ``seed``: patterns ``first`` .. ``first + nsim - 1``, a
    list of float64 arrays (m, 2) (a Poisson number of mean n = len(points), redrawn below 2,
    of uniform points). A global envelope with ``use_theory=False`` uses patterns 0 .. 2 nsim - 1.
    """
    pts, w, _ = _pattern(points, window, None)
    return list(_native.csr_patterns(pts, w, int(nsim), int(seed), int(first)))
