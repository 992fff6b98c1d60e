"""geofield.disperse against an independent numpy f64 sum of the SORTIE kernel, its xarray and
CRS output, its argument checks, and identity with the CLI's map for the same inputs."""

import json
import os
import shutil
import subprocess

import numpy as np
import pytest

import geofield

ETA = 350.0  # a numeric normaliser keeps the reference independent of the analytic one
FIR = {"kernel": "weibull", "d": 1.32e-4, "theta": 3.0, "str": 2.5, "beta": 2.0, "eta": ETA,
       "min_dbh_cm": 10.0}
ASPEN = {"kernel": "2dt", "u": 40.0, "p": 1.5, "str": 5.0, "beta": 2.2, "eta": ETA,
         "min_dbh_cm": 5.0}


def stand(rng, n=300, size=120.0):
    return {
        "x_m": rng.uniform(-10, size + 10, n),  # some trees outside the map: their seeds fly in
        "y_m": rng.uniform(-10, size + 10, n),
        "dbh_cm": rng.uniform(2, 60, n),
        "species": rng.choice(["fir", "aspen"], n),
    }


def reference(trees, params, name, x, y):
    """Σ over trees of species `name` with dbh >= min: STR/η (dbh/30)^β K(r), at cell centres."""
    sel = (np.asarray(trees["species"]) == name) & (trees["dbh_cm"] >= params["min_dbh_cm"])
    tx, ty, dbh = trees["x_m"][sel], trees["y_m"][sel], trees["dbh_cm"][sel]
    w = params["str"] / params["eta"] * (dbh / 30.0) ** params["beta"]
    gx, gy = np.meshgrid(x, y)
    r = np.hypot(gx[..., None] - tx, gy[..., None] - ty)
    if params["kernel"] == "weibull":
        k = np.exp(-params["d"] * r ** params["theta"])
    else:
        k = (1.0 + r ** 2 / params["u"]) ** -(params["p"] + 1.0)
    return (k * w).sum(axis=-1)


def test_exact_matches_numpy_f64_sum(rng, backend):
    trees = stand(rng)
    ds = geofield.disperse(trees, {"fir": FIR, "aspen": ASPEN}, (0, 0, 120, 80), 2.0,
                           method="exact", backend=backend)
    assert list(ds.data_vars) == ["fir", "aspen"]
    assert ds["fir"].shape == (40, 60)
    # Cell centres, row 0 north.
    np.testing.assert_allclose(ds.x.values[[0, -1]], [1.0, 119.0])
    np.testing.assert_allclose(ds.y.values[[0, -1]], [79.0, 1.0])
    for name, p in (("fir", FIR), ("aspen", ASPEN)):
        ref = reference(trees, p, name, ds.x.values, ds.y.values)
        got = ds[name].values
        # f64 on the CPU: the same sum in another order, ~1e-15 relative per term, 300 terms.
        # f32 on the GPU: compensated f32 sums, documented at ~1e-6 of the f64 sum.
        tol = 1e-12 if backend == "cpu" else 1e-5
        assert np.max(np.abs(got - ref)) <= tol * np.max(ref), name


def test_species_from_toml_file_and_indices(tmp_path, rng):
    trees = stand(rng, 100)
    toml = tmp_path / "species.toml"
    lines = []
    for name, p in (("fir", FIR), ("aspen", ASPEN)):
        lines.append("[[species]]")
        lines.append(f'name = "{name}"')
        lines += [f"{k} = {json.dumps(v)}" for k, v in p.items()]
    toml.write_text("\n".join(lines) + "\n")
    by_name = geofield.disperse(trees, {"fir": FIR, "aspen": ASPEN}, (0, 0, 120, 80), 4.0,
                                method="exact", backend="cpu")
    idx = dict(trees, species=np.where(np.asarray(trees["species"]) == "fir", 0, 1))
    by_file = geofield.disperse(idx, toml, (0, 0, 120, 80), 4.0, method="exact", backend="cpu")
    for v in ("fir", "aspen"):
        np.testing.assert_array_equal(by_name[v].values, by_file[v].values)


def test_crs_and_geotiff(tmp_path, rng):
    rioxarray = pytest.importorskip("rioxarray")
    rasterio = pytest.importorskip("rasterio")
    del rioxarray
    ds = geofield.disperse(stand(rng, 50), {"fir": FIR, "aspen": ASPEN},
                           (500000, 5200000, 500120, 5200080), 2.0, crs="EPSG:26910",
                           backend="cpu")
    out = tmp_path / "seeds.tif"
    ds["fir"].rio.to_raster(out)
    with rasterio.open(out) as r:
        assert r.crs.to_epsg() == 26910
        assert r.transform.a == 2.0 and r.transform.e == -2.0
        assert (r.transform.c, r.transform.f) == (500000.0, 5200080.0)
        np.testing.assert_array_equal(r.read(1), ds["fir"].values)


@pytest.mark.parametrize("kw, message", [
    ({"cell_size_m": -1.0}, "cell_size_m"),
    ({"cell_size_m": 7.0}, "whole number"),
    ({"method": "fast"}, "method"),
    ({"extent": (0, 0, 10)}, "extent"),
    ({"trees": {"x_m": [1.0], "y_m": [np.nan], "dbh_cm": [20.0], "species": ["fir"]}},
     "trees.y_m: value at index 0 is nan"),
    ({"trees": {"x_m": [1.0], "y_m": [1.0], "dbh_cm": [-2.0], "species": ["fir"]}},
     "trees.dbh_cm: -2.0 at row 0 is negative"),
    ({"trees": {"x_m": [1.0], "y_m": [1.0], "dbh_cm": [20.0], "species": ["oak"]}},
     "'oak' at row 0 is not a species"),
    ({"trees": {"x_m": [1.0, 2.0], "y_m": [1.0], "dbh_cm": [20.0], "species": ["fir"]}},
     "has 1 values but trees.x_m has 2"),
    ({"species": {"fir": dict(FIR, kernel="cauchy")}}, "unknown kernel"),
    ({"species": {"fir": dict(FIR, d=-1.0)}}, "d"),
    ({"backend": "tpu"}, "backend"),
])
def test_bad_arguments_raise_value_errors_naming_them(kw, message, rng):
    args = {"trees": stand(rng, 10), "species": {"fir": FIR, "aspen": ASPEN},
            "extent": (0, 0, 120, 80), "cell_size_m": 2.0, "backend": "cpu"}
    args.update(kw)
    with pytest.raises(geofield.GeofieldValueError, match=None) as e:
        geofield.disperse(**args)
    assert isinstance(e.value, ValueError)
    assert message in str(e.value)


def test_missing_species_file_is_an_oserror(tmp_path, rng):
    with pytest.raises(OSError) as e:
        geofield.disperse(stand(rng, 10), tmp_path / "none.toml", (0, 0, 120, 80), 2.0)
    assert isinstance(e.value, geofield.GeofieldError)
    assert "none.toml" in str(e.value)


def test_same_map_as_the_cli(tmp_path, rng):
    exe = os.environ.get("GEOFIELD_BIN") or shutil.which("geofield")
    if exe is None:
        pytest.skip("no geofield binary (set GEOFIELD_BIN)")
    trees = stand(rng, 200)
    csv = tmp_path / "trees.csv"
    with open(csv, "w") as f:
        f.write("x_m,y_m,dbh_cm,species\n")
        for x, y, d, s in zip(trees["x_m"], trees["y_m"], trees["dbh_cm"], trees["species"]):
            f.write(f"{float(x)!r},{float(y)!r},{float(d)!r},{s}\n")
    toml = tmp_path / "species.toml"
    lines = []
    for name, p in (("fir", FIR), ("aspen", ASPEN)):
        lines += ["[[species]]", f'name = "{name}"'] + [f"{k} = {json.dumps(v)}" for k, v in p.items()]
    toml.write_text("\n".join(lines) + "\n")
    out = tmp_path / "seeds.npy"
    subprocess.run([exe, "-q", "--backend", "cpu", "disperse", "--trees", str(csv), "--species",
                    str(toml), "--extent", "0,0,120,80", "--cell-size-m", "2", "--method",
                    "exact", "--precision", "f64", "--out", str(out)], check=True)
    cli = np.load(out)
    ds = geofield.disperse(trees, toml, (0, 0, 120, 80), 2.0, method="exact", backend="cpu")
    np.testing.assert_array_equal(cli.reshape(2, 40, 60), np.stack([ds.fir, ds.aspen]))


def test_nearfar_matches_numpy_f64_sum_where_the_far_field_matters(rng):
    # A fat tail (2Dt, p = 0.5: K ~ r^-3) on a 200 m map with trees over all of it, so that the
    # near/far split's far field (lattice, FFT, interpolation) carries much more than the
    # tolerance.
    name = "fat"
    params = dict(ASPEN, u=400.0, p=0.5)
    trees = stand(rng, n=300, size=200.0)
    trees["species"] = np.full(300, name)
    tol = 1e-4
    ds = geofield.disperse(trees, {name: params}, (0, 0, 200, 200), 1.0, method="nearfar",
                           tolerance=tol, backend="cpu")
    rep = json.loads(ds.attrs["reports"])[0]
    assert rep["method"] == "nearfar", rep
    radius = rep["radius_m"]
    x, y = ds.x.values, ds.y.values
    ref = reference(trees, params, name, x, y)
    # The method's promise: error <= tolerance x the band maximum at every cell (f64 here).
    err = np.max(np.abs(ds[name].values - ref))
    assert err <= tol * np.max(ref), (err, np.max(ref))
    # The seeds from trees beyond R: more than 10x the tolerance somewhere, so a wrong far
    # field could not pass.
    far = {k: np.asarray(v) for k, v in trees.items()}
    gx, gy = np.meshgrid(x, y)
    beyond = np.zeros_like(ref)
    for i in range(300):
        if far["dbh_cm"][i] < params["min_dbh_cm"]:
            continue
        r = np.hypot(gx - far["x_m"][i], gy - far["y_m"][i])
        one = {k: v[i:i + 1] for k, v in far.items()}
        k = reference(one, params, name, x, y)
        beyond += np.where(r > radius, k, 0.0)
    assert np.max(beyond) > 10 * tol * np.max(ref), (np.max(beyond), np.max(ref))
