"""NeighborIndex's radius methods, pair counts and k-NN in other spaces against scipy's cKDTree
(same lists, sets and counts; lattice points put many distances exactly at r, so the
inclusive boundary is compared too), and ripley_k against its definition computed by brute
force in numpy."""

import math

import numpy as np
import pytest

import geofield

scipy_spatial = pytest.importorskip("scipy.spatial")

P = [1, 2, np.inf]


def lattice(rng, n, dim, side):
    return rng.integers(0, side, (n, dim)).astype(np.float64)


@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("p", P)
@pytest.mark.parametrize("box", [None, 20.0])
def test_radius_methods_match_ckdtree(rng, dim, p, box):
    pts = lattice(rng, 800, dim, 20)
    q = lattice(rng, 60, dim, 20) + (0 if box else rng.integers(-3, 3, (60, dim)))
    tree = scipy_spatial.cKDTree(pts, boxsize=box)
    ours = geofield.NeighborIndex(pts, boxsize=box)
    for r in (0.0, 2.0, 3.0):
        a = tree.query_ball_point(q, r, p=p, return_sorted=True)
        b = ours.query_ball_point(q, r, p=p)
        assert b.shape == a.shape and b.dtype == object
        assert all(list(x) == list(y) for x, y in zip(a, b))
        np.testing.assert_array_equal(
            ours.query_ball_point(q, r, p=p, return_length=True),
            tree.query_ball_point(q, r, p=p, return_length=True))
        # One point: a list; unsorted unless asked (the same set).
        assert sorted(ours.query_ball_point(q[0], r, p=p)) == sorted(
            tree.query_ball_point(q[0], r, p=p))
        assert ours.query_pairs(r, p=p) == tree.query_pairs(r, p=p)
        np.testing.assert_array_equal(ours.query_pairs(r, p=p, output_type="ndarray"),
                                      np.array(sorted(tree.query_pairs(r, p=p))).reshape(-1, 2))
    # Per-point radii, broadcast against the queries.
    rr = rng.choice([0.0, 1.0, 2.5], size=60)
    a = tree.query_ball_point(q, rr, p=p, return_sorted=True)
    b = ours.query_ball_point(q, rr, p=p)
    assert all(list(x) == list(y) for x, y in zip(a, b))
    other_pts = lattice(rng, 300, dim, 20)
    other_tree = scipy_spatial.cKDTree(other_pts, boxsize=box)
    other = geofield.NeighborIndex(other_pts, boxsize=box)
    a = tree.query_ball_tree(other_tree, 2.0, p=p)
    b = ours.query_ball_tree(other, 2.0, p=p)
    assert [sorted(x) for x in a] == b


@pytest.mark.parametrize("p", P)
@pytest.mark.parametrize("box", [None, 15.0])
def test_count_neighbors_matches_ckdtree(rng, p, box):
    a_pts, b_pts = lattice(rng, 600, 2, 15), lattice(rng, 400, 2, 15)
    ta, tb = scipy_spatial.cKDTree(a_pts, boxsize=box), scipy_spatial.cKDTree(b_pts, boxsize=box)
    ga, gb = geofield.NeighborIndex(a_pts, boxsize=box), geofield.NeighborIndex(b_pts, boxsize=box)
    r = np.array([0.0, 1.0, 2.0, 3.5, 7.0])
    np.testing.assert_array_equal(ga.count_neighbors(gb, r, p=p), ta.count_neighbors(tb, r, p=p))
    np.testing.assert_array_equal(ga.count_neighbors(ga, r, p=p), ta.count_neighbors(ta, r, p=p))
    np.testing.assert_array_equal(ga.count_neighbors(gb, r, p=p, cumulative=False),
                                  ta.count_neighbors(tb, r, p=p, cumulative=False))
    assert ga.count_neighbors(gb, 2.0, p=p) == ta.count_neighbors(tb, 2.0, p=p)
    # Weights in multiples of 1/8: every product and sum is exact, so the floats agree exactly.
    wa = rng.integers(1, 9, 600) / 8.0
    wb = rng.integers(1, 9, 400) / 8.0
    np.testing.assert_array_equal(ga.count_neighbors(gb, r, p=p, weights=(wa, wb)),
                                  ta.count_neighbors(tb, r, p=p, weights=(wa, wb)))
    np.testing.assert_array_equal(ga.count_neighbors(gb, r, p=p, weights=(wa, None)),
                                  ta.count_neighbors(tb, r, p=p, weights=(wa, None)))
    np.testing.assert_array_equal(ga.count_neighbors(ga, r, p=p, weights=wa),
                                  ta.count_neighbors(ta, r, p=p, weights=wa))


@pytest.mark.parametrize("p", P)
@pytest.mark.parametrize("box", [None, 30.0])
def test_query_in_other_spaces_and_large_k_matches_ckdtree(rng, p, box):
    pts = rng.uniform(0, 30, (3000, 3))
    q = rng.uniform(0, 30, (200, 3))
    tree = scipy_spatial.cKDTree(pts, boxsize=box)
    ours = geofield.NeighborIndex(pts, boxsize=box)
    for k in (1, 5, 300):
        d, i = ours.query(q, k=k, p=p)
        d2, i2 = tree.query(q, k=k, p=p)
        np.testing.assert_array_equal(i, i2)
        np.testing.assert_array_equal(d, d2)
    d, i = ours.query(q, k=20, p=p, distance_upper_bound=2.0)
    d2, i2 = tree.query(q, k=20, p=p, distance_upper_bound=2.0)
    np.testing.assert_array_equal(i, i2)
    np.testing.assert_array_equal(d, d2)


def test_within_csr():
    pts = np.array([[0.0, 0.0], [1.0, 0.0], [3.0, 0.0], [0.0, 1.0]])
    off, idx, dist = geofield.NeighborIndex(pts).within(r=1.0)
    np.testing.assert_array_equal(off, [0, 3, 5, 6, 8])
    np.testing.assert_array_equal(idx, [0, 1, 3, 1, 0, 2, 3, 0])
    np.testing.assert_array_equal(dist, [0, 1, 1, 0, 1, 0, 0, 1])
    off, idx, dist = geofield.NeighborIndex(pts).within(r=1.0, exclude_self=True)
    np.testing.assert_array_equal(idx, [1, 3, 0, 0])
    off, idx, _ = geofield.NeighborIndex(pts).within([[2.0, 0.0]], r=1.0, sort="index")
    np.testing.assert_array_equal(idx, [1, 2])


def test_bad_radius_arguments_raise(rng):
    idx = geofield.NeighborIndex(rng.uniform(0, 1, (10, 2)))
    with pytest.raises(ValueError, match="p:"):
        idx.query_ball_point([0.5, 0.5], 0.1, p=3)
    with pytest.raises(ValueError, match="radius"):
        idx.within(r=-1.0)
    with pytest.raises(ValueError, match="non-decreasing"):
        idx.count_neighbors(idx, [0.5, 0.1], cumulative=False)
    with pytest.raises(ValueError, match="outside the periodic box"):
        geofield.NeighborIndex(rng.uniform(0, 2, (10, 2)), boxsize=1.0).query_pairs(0.1)
    with pytest.raises(ValueError, match="sort"):
        idx.within(r=0.1, sort="up")


def k_brute(pts, w, r):
    """spatstat's K estimators from their definitions (module docs of geofield's ripley)."""
    x0, y0, x1, y1 = w
    n = len(pts)
    a = (x1 - x0) * (y1 - y0)
    dx = pts[None, :, 0] - pts[:, None, 0]
    dy = pts[None, :, 1] - pts[:, None, 1]
    d = np.hypot(dx, dy)
    off = ~np.eye(n, dtype=bool)
    trans = np.minimum(a / ((x1 - x0 - np.abs(dx)) * (y1 - y0 - np.abs(dy))), 100.0)
    # Isotropic: the fraction of each circle inside, by 20000 points on it (error <= 8/20000).
    t = (np.arange(20000) + 0.5) * 2 * np.pi / 20000
    frac = np.empty((n, n))
    for i in range(n):
        cx = pts[i, 0] + d[i][:, None] * np.cos(t)
        cy = pts[i, 1] + d[i][:, None] * np.sin(t)
        frac[i] = ((cx >= x0) & (cx <= x1) & (cy >= y0) & (cy <= y1)).mean(1)
    iso = np.minimum(1.0 / np.maximum(frac, 1e-300), 100.0)
    b = np.minimum.reduce([pts[:, 0] - x0, x1 - pts[:, 0], pts[:, 1] - y0, y1 - pts[:, 1]])
    out = {"un": [], "trans": [], "iso": [], "border": []}
    for rv in r:
        m = off & (d * d <= rv * rv)
        s = a / (n * (n - 1))
        out["un"].append(m.sum() * s)
        out["trans"].append((trans * m).sum() * s)
        out["iso"].append((iso * m).sum() * s)
        c = b >= rv
        out["border"].append(m[c].sum() / (n / a * c.sum()) if c.any() else np.nan)
    return {k: np.array(v) for k, v in out.items()}


def test_ripley_k_matches_its_definition(rng):
    w = (0.0, 0.0, 40.0, 25.0)
    pts = np.column_stack([rng.uniform(0, 40, 150), rng.uniform(0, 25, 150)])
    r = np.linspace(0, 6, 13)
    k = geofield.ripley_k(pts, window=w, r=r, correction=["none", "border", "translate",
                                                           "isotropic"])
    want = k_brute(pts, w, r)
    np.testing.assert_array_equal(k["r"], r)
    np.testing.assert_allclose(k["theo"], np.pi * r * r)
    np.testing.assert_allclose(k["un"], want["un"], rtol=1e-12)
    np.testing.assert_allclose(k["border"], want["border"], rtol=1e-12)
    np.testing.assert_allclose(k["trans"], want["trans"], rtol=1e-12)
    # The numerical circle fractions err by <= 8/20000 each; weights <= 100 by 1/f² times that.
    np.testing.assert_allclose(k["iso"], want["iso"], rtol=5e-3)
    np.testing.assert_allclose(k["L_iso"], np.sqrt(k["iso"] / math.pi))
    # Defaults: spatstat's 513 radii up to the shorter side / 4 (or the intensity rule).
    d = geofield.ripley_k(pts, window=w)
    assert len(d["r"]) == 513 and d["r"][-1] == pytest.approx(min(25 / 4, math.sqrt(
        1000 / (math.pi * 150 / 1000))))
    assert set(d) >= {"border", "trans", "iso", "L_border", "n", "area", "window"}
    with pytest.raises(ValueError, match="outside the window"):
        geofield.ripley_k(pts, window=(0, 0, 10, 10))
    with pytest.raises(ValueError, match="correction"):
        geofield.ripley_k(pts, window=w, correction="best")


def test_geofield_pairs_csv_reads_back_as_ripley_k(rng, tmp_path):
    """The command line's k.csv, read by numpy (an independent CSV reader), holds what
    geofield.ripley_k returns for the same stems: the same library call, every column."""
    import os
    import shutil
    import subprocess

    exe = os.environ.get("GEOFIELD_BIN") or shutil.which("geofield")
    if not exe:
        pytest.skip("no geofield binary (set GEOFIELD_BIN)")
    pts = np.column_stack([rng.uniform(0, 80, 300), rng.uniform(0, 50, 300)])
    stems = tmp_path / "stems.csv"
    np.savetxt(stems, pts, delimiter=",", header="x_m,y_m", comments="", fmt="%.17g")
    out = tmp_path / "k.csv"
    subprocess.run([exe, "--backend", "cpu", "-q", "pairs", "--points", str(stems), "--window",
                    "0,0,80,50", "--correction", "all", "--out", str(out)], check=True)
    got = np.genfromtxt(out, delimiter=",", names=True)
    want = geofield.ripley_k(pts, window=(0, 0, 80, 50),
                             correction=["none", "border", "translate", "isotropic"],
                             backend="cpu")
    assert got.dtype.names == ("r", "theo", "un", "border", "trans", "iso", "L_un", "L_border",
                               "L_trans", "L_iso")
    for name in got.dtype.names:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)
