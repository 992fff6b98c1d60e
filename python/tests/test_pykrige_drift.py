"""PyKrige's ``specified`` and ``functional`` drifts in the drop-ins (2-D ``UniversalKriging``,
3-D ``UniversalKriging3D``) against PyKrige itself: the same numbers (<= 1e-9 relative, f64),
alone and with ``regional_linear``, on grids, points and masked grids; and the argument errors.
PyKrige's vectorized backend is the reference (its ``loop`` backend reads the specified drift
at the wrong index)."""

import numpy as np
import pytest

pykrige_uk = pytest.importorskip("pykrige.uk")
pykrige_uk3d = pytest.importorskip("pykrige.uk3d")

from geofield import pykrige as gk  # noqa: E402
from geofield import GeofieldValueError  # noqa: E402

TOL = 1e-9


def close(ours, theirs, tol=TOL):
    ours, theirs = np.ma.getdata(ours), np.ma.getdata(theirs)
    assert ours.shape == theirs.shape
    scale = max(np.max(np.abs(theirs)), 1e-300)
    err = np.max(np.abs(ours - theirs)) / scale
    return err <= tol


def s1(x, y):
    return 40.0 * np.sin(x / 170.0) + 0.01 * y


def s2(x, y):
    return np.hypot(x - 400.0, y - 300.0)


def data(rng, n=60):
    x = rng.uniform(0, 1000, n)
    y = rng.uniform(0, 800, n)
    z = 0.02 * s1(x, y) - 0.003 * s2(x, y) + np.cos(y / 120.0) + 0.05 * rng.normal(size=n)
    return x, y, z


VG = dict(variogram_model="exponential", variogram_parameters=[1.0, 300.0, 0.1])
GX, GY = np.arange(0.0, 1000.0, 50.0), np.arange(0.0, 800.0, 50.0)  # not square


@pytest.mark.parametrize("terms", [["specified"], ["regional_linear", "specified"]])
@pytest.mark.parametrize("nvar", [1, 2])
@pytest.mark.parametrize("aniso", [{}, {"anisotropy_scaling": 2.0, "anisotropy_angle": 30.0}])
def test_specified_drift_grid_and_points(rng, terms, nvar, aniso):
    x, y, z = data(rng)
    funcs = [s1, s2][:nvar]
    kw = dict(VG, drift_terms=terms, specified_drift=[f(x, y) for f in funcs], **aniso)
    theirs, ours = pykrige_uk.UniversalKriging(x, y, z, **kw), gk.UniversalKriging(x, y, z, **kw)
    mx, my = np.meshgrid(GX, GY)
    arrays = [f(mx, my) for f in funcs]
    z1, v1 = theirs.execute("grid", GX, GY, specified_drift_arrays=arrays)
    z2, v2 = ours.execute("grid", GX, GY, specified_drift_arrays=arrays)
    assert close(z2, z1) and close(v2, v1)
    # The transposed arrays, as PyKrige accepts them.
    z3, _ = ours.execute("grid", GX, GY, specified_drift_arrays=[a.T for a in arrays])
    assert close(z3, z1)
    px, py = rng.uniform(0, 1000, 50), rng.uniform(0, 800, 50)
    px[0], py[0] = x[3], y[3]  # at a sample: the datum, variance 0
    arrays = [f(px, py) for f in funcs]
    z1, v1 = theirs.execute("points", px, py, specified_drift_arrays=arrays)
    z2, v2 = ours.execute("points", px, py, specified_drift_arrays=arrays)
    assert close(z2, z1) and close(v2, v1)
    assert abs(z2[0] - z[3]) < 1e-9 and abs(v2[0]) < 1e-9


@pytest.mark.parametrize("terms", [["functional"], ["regional_linear", "functional"],
                                   ["regional_linear", "specified", "functional"]])
@pytest.mark.parametrize("aniso", [{}, {"anisotropy_scaling": 1.5, "anisotropy_angle": -20.0}])
def test_functional_drift(rng, terms, aniso):
    x, y, z = data(rng)
    kw = dict(VG, drift_terms=terms, functional_drift=[s1, lambda a, b: (a - 500.0) * b / 1e3],
              **aniso)
    if "specified" in terms:
        kw["specified_drift"] = [s2(x, y)]
    theirs, ours = pykrige_uk.UniversalKriging(x, y, z, **kw), gk.UniversalKriging(x, y, z, **kw)
    ex = {}
    if "specified" in terms:
        ex = {"specified_drift_arrays": [s2(*np.meshgrid(GX, GY))]}
    z1, v1 = theirs.execute("grid", GX, GY, **ex)
    z2, v2 = ours.execute("grid", GX, GY, **ex)
    assert close(z2, z1) and close(v2, v1)
    mask = np.zeros((GY.size, GX.size), dtype=bool)
    mask[::3, ::2] = True
    z1, v1 = theirs.execute("masked", GX, GY, mask=mask, **ex)
    z2, v2 = ours.execute("masked", GX, GY, mask=mask, **ex)
    assert (z2.mask == mask).all() and close(z2[~mask], z1[~mask]) and close(v2[~mask], v1[~mask])


def data3(rng, n=50):
    x, y, z = rng.uniform(0, 1000, n), rng.uniform(0, 800, n), rng.uniform(-60, 0, n)
    v = 0.02 * s1(x, y) * (1 + z / 100) + np.sin(y / 90.0) + 0.05 * rng.normal(size=n)
    return x, y, z, v


def f3(x, y, z):
    return s1(x, y) * (1.0 + z / 100.0)


GX3, GY3 = np.arange(0.0, 1000.0, 125.0), np.arange(0.0, 800.0, 100.0)
GZ3 = np.array([-50.0, -25.0, -5.0])
ANIS3 = dict(anisotropy_scaling_y=2.0, anisotropy_scaling_z=5.0, anisotropy_angle_z=25.0)


@pytest.mark.parametrize("terms", [["specified"], ["regional_linear", "specified"],
                                   ["functional"], ["regional_linear", "specified", "functional"]])
@pytest.mark.parametrize("aniso", [{}, ANIS3])
def test_uk3d_specified_and_functional(rng, terms, aniso):
    x, y, z, v = data3(rng)
    kw = dict(variogram_model="spherical", variogram_parameters=[1.0, 500.0, 0.05],
              drift_terms=terms, **aniso)
    if "specified" in terms:
        kw["specified_drift"] = [f3(x, y, z), np.hypot(x - 300, z * 5)]
    if "functional" in terms:
        kw["functional_drift"] = [lambda a, b, c: np.cos(a / 300.0) * c]
    theirs = pykrige_uk3d.UniversalKriging3D(x, y, z, v, **kw)
    ours = gk.UniversalKriging3D(x, y, z, v, **kw)
    gz, gy, gx = np.meshgrid(GZ3, GY3, GX3, indexing="ij")
    ex = {}
    if "specified" in terms:
        ex = {"specified_drift_arrays": [f3(gx, gy, gz), np.hypot(gx - 300, gz * 5)]}
    k1, s1_ = theirs.execute("grid", GX3, GY3, GZ3, **ex)
    k2, s2_ = ours.execute("grid", GX3, GY3, GZ3, **ex)
    assert close(k2, k1) and close(s2_, s1_)
    px, py, pz = rng.uniform(0, 1000, 30), rng.uniform(0, 800, 30), rng.uniform(-60, 0, 30)
    if "specified" in terms:
        ex = {"specified_drift_arrays": [f3(px, py, pz), np.hypot(px - 300, pz * 5)]}
    k1, s1_ = theirs.execute("points", px, py, pz, **ex)
    k2, s2_ = ours.execute("points", px, py, pz, **ex)
    assert close(k2, k1) and close(s2_, s1_)


def test_drift_argument_errors(rng):
    x, y, z = data(rng, 30)
    with pytest.raises(GeofieldValueError, match="specified_drift"):
        gk.UniversalKriging(x, y, z, drift_terms=["specified"])
    with pytest.raises(GeofieldValueError, match=r"specified_drift\[0\]: 29 values"):
        gk.UniversalKriging(x, y, z, drift_terms=["specified"], specified_drift=[x[:-1]])
    with pytest.raises(GeofieldValueError, match="functional_drift"):
        gk.UniversalKriging(x, y, z, drift_terms=["functional"], functional_drift=[])
    with pytest.raises(GeofieldValueError, match="not callable"):
        gk.UniversalKriging(x, y, z, drift_terms=["functional"], functional_drift=[3.0])
    uk = gk.UniversalKriging(x, y, z, drift_terms=["specified"], specified_drift=[s1(x, y)])
    with pytest.raises(GeofieldValueError, match="specified_drift_arrays: must provide"):
        uk.execute("grid", GX, GY)
    with pytest.raises(GeofieldValueError, match=r"specified_drift_arrays\[0\]: shape"):
        uk.execute("grid", GX, GY, specified_drift_arrays=[np.zeros((3, 4))])
    with pytest.raises(GeofieldValueError, match="inconsistent"):
        uk.execute("points", GX, GX, specified_drift_arrays=[GX, GX])
    # A variable that is a multiple of another: the error names the drift term.
    uk = gk.UniversalKriging(x, y, z, drift_terms=["specified"],
                             specified_drift=[s1(x, y), 2 * s1(x, y) + 1])
    with pytest.raises(ValueError, match=r"drift variable specified_drift\[1\]"):
        uk.execute("points", GX, GX, specified_drift_arrays=[GX, GX])
    x3, y3, z3, v3 = data3(rng, 20)
    with pytest.raises(GeofieldValueError, match="specified_drift_arrays"):
        gk.UniversalKriging3D(x3, y3, z3, v3, drift_terms=["specified"],
                              specified_drift=[x3]).execute("grid", GX3, GY3, GZ3)
