"""3-D kriging: the PyKrige 3-D drop-ins against PyKrige 1.7 itself (<= 1e-9 relative in f64,
the same shapes and masks), geofield.krige3d against GSTools' ordinary kriging with its rotated
3-D anisotropy, the variogram fit, the NetCDF round trip, and clear errors."""

import numpy as np
import pytest

import geofield
from geofield import pykrige as gk

TOL = 1e-9


def data(rng, n=60):
    x = rng.uniform(0, 1000, n)
    y = rng.uniform(0, 800, n)
    z = rng.uniform(-60, 0, n)
    v = np.sin(x / 150) + np.cos(y / 200) + 0.02 * z + 0.1 * rng.normal(size=n)
    return x, y, z, v


def close(ours, theirs, tol=TOL):
    ours, theirs = np.ma.getdata(ours), np.ma.getdata(theirs)
    scale = max(np.max(np.abs(theirs)), 1e-300)
    return np.max(np.abs(ours - theirs)) <= tol * scale


MODELS = [
    ("exponential", [1.0, 300.0, 0.1]),
    ("gaussian", {"sill": 1.2, "range": 250.0, "nugget": 0.05}),
    ("spherical", {"psill": 1.0, "range": 400.0, "nugget": 0.0}),
    ("linear", [0.002, 0.1]),
    ("power", [0.05, 1.2, 0.0]),
]
ANIS = dict(anisotropy_scaling_y=1.5, anisotropy_scaling_z=8.0, anisotropy_angle_x=5.0,
            anisotropy_angle_y=-10.0, anisotropy_angle_z=30.0)
GX, GY, GZ = np.arange(0, 1000, 100.0), np.arange(0, 800, 100.0), np.array([-50.0, -30, -10])


@pytest.mark.parametrize("model, params", MODELS)
@pytest.mark.parametrize("exact", [True, False])
def test_ok3d_same_numbers(rng, backend, model, params, exact):
    ok3d = pytest.importorskip("pykrige.ok3d")
    x, y, z, v = data(rng)
    kw = dict(variogram_model=model, variogram_parameters=params, exact_values=exact, **ANIS)
    theirs = ok3d.OrdinaryKriging3D(x, y, z, v, **kw)
    ours = gk.OrdinaryKriging3D(x, y, z, v, **kw)
    k1, s1 = theirs.execute("grid", GX, GY, GZ)
    k2, s2 = ours.execute("grid", GX, GY, GZ, device=backend)
    assert k2.shape == k1.shape == (3, 8, 10)
    assert close(k2, k1) and close(s2, s1)
    # Points, including two samples (exact there unless exact_values=False).
    px, py, pz = np.r_[x[:2], 500.0], np.r_[y[:2], 400.0], np.r_[z[:2], -20.0]
    k1, s1 = theirs.execute("points", px, py, pz)
    k2, s2 = ours.execute("points", px, py, pz, device=backend)
    assert k2.shape == (3,) and close(k2, k1) and close(s2, s1)


def test_fitted_variogram_and_masked(rng):
    ok3d = pytest.importorskip("pykrige.ok3d")
    x, y, z, v = data(rng, 80)
    for model in ("spherical", "exponential", "linear"):
        theirs = ok3d.OrdinaryKriging3D(x, y, z, v, variogram_model=model, nlags=8, **ANIS)
        ours = gk.OrdinaryKriging3D(x, y, z, v, variogram_model=model, nlags=8, **ANIS)
        # The same bins and the same least-squares fit (PyKrige's own procedure).
        assert np.allclose(ours.variogram_model_parameters, theirs.variogram_model_parameters,
                           rtol=1e-6, atol=0)
        mask = np.zeros((3, 8, 10), dtype=bool)
        mask[1, 2:5, 3:7] = True
        k1, s1 = theirs.execute("masked", GX, GY, GZ, mask=mask)
        k2, s2 = ours.execute("masked", GX, GY, GZ, mask=mask)
        assert isinstance(k2, np.ma.MaskedArray) and (k2.mask == mask).all()
        tol = 1e-6  # the fitted parameters agree to ~1e-8 (optimiser tolerance), not 1e-16
        assert close(k2[~mask], k1[~mask], tol) and close(s2[~mask], s1[~mask], tol)


def test_uk3d_regional_linear_and_moving_window(rng, backend):
    ok3d = pytest.importorskip("pykrige.ok3d")
    uk3d = pytest.importorskip("pykrige.uk3d")
    x, y, z, v = data(rng)
    v = v + 0.002 * x - 0.001 * y + 0.05 * z
    kw = dict(variogram_model="spherical", variogram_parameters=[1.0, 500.0, 0.05], **ANIS)
    theirs = uk3d.UniversalKriging3D(x, y, z, v, drift_terms=["regional_linear"], **kw)
    ours = gk.UniversalKriging3D(x, y, z, v, drift_terms=["regional_linear"], **kw)
    k1, s1 = theirs.execute("grid", GX, GY, GZ)
    k2, s2 = ours.execute("grid", GX, GY, GZ, device=backend)
    assert close(k2, k1) and close(s2, s1)
    # Moving window: PyKrige's loop backend with the 12 closest samples.
    t = ok3d.OrdinaryKriging3D(x, y, z, v, **kw)
    o = gk.OrdinaryKriging3D(x, y, z, v, **kw)
    k1, s1 = t.execute("grid", GX, GY, GZ, backend="loop", n_closest_points=12)
    k2, s2 = o.execute("grid", GX, GY, GZ, backend="loop", n_closest_points=12, device=backend)
    assert close(k2, k1) and close(s2, s1)


def test_gstools_anisotropy_same_numbers(rng, backend):
    gs = pytest.importorskip("gstools")
    x, y, z, v = data(rng)
    angles, anis = [0.4, -0.3, 0.2], [0.5, 0.1]
    model = gs.Exponential(dim=3, var=1.3, len_scale=200.0, anis=anis, angles=angles)
    krig = gs.krige.Ordinary(model, cond_pos=[x, y, z], cond_val=v, pseudo_inv=False)
    px, py, pz = rng.uniform(0, 1000, 50), rng.uniform(0, 800, 50), rng.uniform(-60, 0, 50)
    field, var = krig([px, py, pz], mesh_type="unstructured", return_var=True)
    # GSTools' exponential len_scale l is a practical range of 3 l.
    ours, ours_var = geofield.krige3d(x, y, z, v, "exponential", sill=1.3, range=600.0,
                                      points=(px, py, pz), gstools_anisotropy=(angles, anis),
                                      backend=backend)
    assert close(ours, field) and close(ours_var, var, 1e-8)


def test_krige3d_dataset_and_variogram3d(rng, tmp_path):
    x, y, z, v = data(rng, 120)
    fit = geofield.variogram3d(x, y, z, v, lags=10, anisotropy=(0, 0, 0, 1, 0.1),
                               model="spherical")
    assert fit["pairs"].sum() > 0 and fit["fit"]["model"] == "spherical"
    ds = geofield.krige3d(x, y, z, v, fit["fit"], extent=(0, 0, -60, 1000, 800, 0),
                          cell_size=100, dz=20, anisotropy=(0, 0, 0, 1, 0.1), name="poro",
                          units="1", crs=32633)
    assert ds["poro"].dims == ("z", "y", "x") and ds["poro"].shape == (3, 8, 10)
    assert np.allclose(ds["z"].values, [-50, -30, -10])
    assert (ds["poro_variance"].values >= 0).all()
    p = tmp_path / "m.nc"
    ds.to_netcdf(p)
    import xarray as xr
    back = xr.open_dataset(p)
    assert np.array_equal(back["poro"].values, ds["poro"].values)
    # A sample is reproduced at its own location.
    val, var = geofield.krige3d(x, y, z, v, fit["fit"], points=(x[:3], y[:3], z[:3]),
                                anisotropy=(0, 0, 0, 1, 0.1))
    assert np.allclose(val, v[:3], atol=1e-9) and np.allclose(var, 0, atol=1e-9)


def test_errors(rng):
    x, y, z, v = data(rng, 20)
    with pytest.raises(geofield.GeofieldValueError, match="whole number"):
        geofield.krige3d(x, y, z, v, "spherical", sill=1, range=100,
                         extent=(0, 0, -60, 1000, 800, 0), cell_size=300)
    with pytest.raises(geofield.GeofieldValueError, match="anisotropy"):
        geofield.krige3d(x, y, z, v, "spherical", sill=1, range=100, points=(x, y, z),
                         anisotropy=(0, 0, 1))
    z2 = z.copy()
    z2[4] = np.nan
    with pytest.raises(geofield.GeofieldValueError, match="4"):
        geofield.krige3d(x, y, z2, v, "spherical", sill=1, range=100, points=(x, y, z))
    with pytest.raises(geofield.GeofieldValueError, match="specified"):
        gk.UniversalKriging3D(x, y, z, v, variogram_model="linear",
                              variogram_parameters=[1.0, 0.0], drift_terms=["specified"])
