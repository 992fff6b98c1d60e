"""NeighborIndex against scipy's cKDTree (the drop-in contract: same shapes, distances, indices
where distances are distinct, inf/n for missing) and against a brute-force numpy search for
geofield's own (distance, index) tie rule."""

import numpy as np
import pytest

import geofield

scipy_spatial = pytest.importorskip("scipy.spatial")


def brute(p, q, k):
    d = np.sqrt(((q[:, None, :] - p[None, :, :]) ** 2).sum(-1))
    order = np.lexsort((np.broadcast_to(np.arange(len(p)), d.shape), d), axis=-1)[:, :k]
    return np.take_along_axis(d, order, 1), order


@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("index", ["auto", "uniform", "dynamic", "brute"])
def test_same_as_ckdtree(rng, backend, dim, index):
    p = rng.uniform(0, 100, (5000, dim))
    q = rng.uniform(-10, 110, (700, dim))
    tree = scipy_spatial.cKDTree(p)
    ours = geofield.NeighborIndex(p, index=index, backend=backend)
    for k in (1, 4, [2, 5]):
        d, i = ours.query(q, k=k)
        d2, i2 = tree.query(q, k=k)
        assert d.shape == d2.shape and i.shape == i2.shape
        assert i.dtype.kind == "i"
        # Both compute sqrt of a sum of three squares in f64: equal to a few ulps.
        np.testing.assert_allclose(d, d2, rtol=4e-16 * 8, atol=0)
        np.testing.assert_array_equal(i, i2)  # random reals: no ties


def test_missing_neighbours_and_bound(rng, backend):
    p = rng.uniform(0, 100, (2000, 2))
    q = rng.uniform(0, 100, (300, 2))
    d, i = geofield.NeighborIndex(p, backend=backend).query(q, k=6, distance_upper_bound=2.0)
    d2, i2 = scipy_spatial.cKDTree(p).query(q, k=6, distance_upper_bound=2.0)
    np.testing.assert_array_equal(np.isinf(d), np.isinf(d2))
    np.testing.assert_array_equal(i, i2)
    assert (i[np.isinf(d)] == len(p)).all()
    # Fewer points than k.
    d, i = geofield.NeighborIndex(p[:3], backend=backend).query(q[:2], k=5)
    assert np.isinf(d[:, 3:]).all() and (i[:, 3:] == 3).all()


def test_single_point_and_leading_shapes(rng):
    p = rng.uniform(0, 1, (100, 3))
    idx = geofield.NeighborIndex(p)
    d, i = idx.query([0.5, 0.5, 0.5])
    assert np.ndim(d) == 0 and np.ndim(i) == 0
    d, i = idx.query(rng.uniform(0, 1, (4, 5, 3)), k=2)
    assert d.shape == (4, 5, 2)


def test_ties_go_to_the_lower_index(backend):
    # A lattice: many equal distances. geofield orders them by index (scipy does not promise).
    g = np.stack(np.meshgrid(np.arange(20.0), np.arange(20.0)), -1).reshape(-1, 2)
    q = g[::7] + 0.0
    d, i = geofield.NeighborIndex(g, backend=backend).query(q, k=9)
    bd, bi = brute(g, q, 9)
    np.testing.assert_array_equal(i, bi)
    np.testing.assert_allclose(d, bd, rtol=1e-15)


def test_float32_stays_float32_and_matches_brute_force_in_float32(rng, backend):
    p = rng.uniform(0, 100, (3000, 2)).astype(np.float32)
    idx = geofield.NeighborIndex(p, backend=backend)
    assert idx.data is p or np.shares_memory(idx.data, p)  # no copy of contiguous float32
    d, i = idx.query(p[:200], k=3)
    # Squared distances in float32, ordered by (d², index): compare with the same in numpy.
    diff = p[:200, None, :] - p[None, :, :]
    d2 = (diff * diff).sum(-1, dtype=np.float32)
    order = np.lexsort((np.broadcast_to(np.arange(len(p)), d2.shape), d2), axis=-1)[:, :3]
    np.testing.assert_array_equal(i, order)


def test_own_neighbours_exclude_self(rng, backend):
    p = rng.uniform(0, 10, (500, 2))
    d, i = geofield.NeighborIndex(p, backend=backend).neighbors(3)
    assert (i != np.arange(500)[:, None]).all()
    bd, bi = brute(p, p, 4)
    np.testing.assert_array_equal(i, bi[:, 1:])


@pytest.mark.parametrize("kwargs, message", [
    ({"k": 0}, "k:"),
    ({"k": 70000}, "65536"),
    ({"eps": 0.1}, "eps"),
    ({"p": 3}, "p:"),
    ({"distance_upper_bound": -1.0}, "distance_upper_bound"),
])
def test_bad_queries_raise(rng, kwargs, message):
    idx = geofield.NeighborIndex(rng.uniform(0, 1, (10, 2)))
    with pytest.raises(ValueError, match=message):
        idx.query(rng.uniform(0, 1, (3, 2)), **kwargs)


def test_bad_points_raise(rng):
    with pytest.raises(ValueError, match="points: expected shape"):
        geofield.NeighborIndex(rng.uniform(0, 1, (10, 4)))
    p = rng.uniform(0, 1, (10, 2))
    p[3, 1] = np.nan
    with pytest.raises(ValueError,
                       match=r"points: point 3 has a non-finite coordinate \(axis 1: NaN\)"):
        geofield.NeighborIndex(p)
    q = np.zeros((4, 2))
    q[2, 0] = np.inf
    with pytest.raises(ValueError, match=r"x: point 2 has a non-finite coordinate \(axis 0: inf\)"):
        geofield.NeighborIndex(p[:3].copy()).query(q)
    with pytest.raises(ValueError, match="points: is empty"):
        geofield.NeighborIndex(np.empty((0, 2)))
    with pytest.raises(ValueError, match="last dimension"):
        geofield.NeighborIndex(p[:2].copy() + 0).query(np.zeros((3, 3)))
