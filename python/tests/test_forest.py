"""geofield.forest.simulate: its counts table and density maps (consistent with each other),
seeds and replicates, method comparison, per-seed dispersal, SORTIE-ND files, argument checks,
and identity with the CLI's counts.csv and density.nc for the same inputs."""

import os
import re
import shutil
import signal
import subprocess
import threading
import time

import numpy as np
import pytest

import geofield

pd = pytest.importorskip("pandas")
pytest.importorskip("xarray")

SPECIES = """
[forest]
gap_cell_m = 8.0

[[species]]
name = "fir"
kernel = "weibull"
d = 1.32e-4
theta = 3
str = 106.9
beta = 2
eta = "analytic"
min_dbh_cm = 15
[species.forest]
establishment = 0.05

[[species]]
name = "aspen"
kernel = "2dt"
u = 30.0
p = 1.5
str = 50.0
beta = 2
eta = 1.0
min_dbh_cm = 10
"""

EXTENT = (0.0, 0.0, 40.0, 30.0)
COLUMNS = ["year", "replicate", "species", "seeds", "seedlings", "saplings", "adults",
           "recruits", "basal_area_m2_ha", "method"]

# One species under NonGapDisperse (Weibull), a 40 m x 30 m plot, 2 years, seed 5, 3 adults.
SORTIE = """<?xml version="1.0" encoding="UTF-8"?>
<paramFile>
<plot><timesteps>2</timesteps><yearsPerTimestep>1</yearsPerTimestep><randomSeed>5</randomSeed>
<plot_lenX>40</plot_lenX><plot_lenY>30</plot_lenY></plot>
<trees>
<tr_speciesList><tr_species speciesName="Fir"/></tr_speciesList>
<tr_minAdultDBH><tr_madVal species="Fir">10</tr_madVal></tr_minAdultDBH>
<tr_treemap>
<tm_treeSettings sp="Fir" tp="3">
<tm_floatCodes><tm_floatCode label="X">0</tm_floatCode><tm_floatCode label="Y">1</tm_floatCode><tm_floatCode label="DBH">2</tm_floatCode></tm_floatCodes>
</tm_treeSettings>
<tree sp="0" tp="3"><fl c="0">10</fl><fl c="1">10</fl><fl c="2">35</fl></tree>
<tree sp="0" tp="3"><fl c="0">30</fl><fl c="1">20</fl><fl c="2">40</fl></tree>
<tree sp="0" tp="3"><fl c="0">20</fl><fl c="1">5</fl><fl c="2">25</fl></tree>
</tr_treemap>
</trees>
<behaviorList>
<behavior><behaviorName>NonGapDisperse</behaviorName><version>1</version><listPosition>1</listPosition>
<applyTo species="Fir" type="Adult"/></behavior>
</behaviorList>
<NonGapDisperse1>
<di_minDbhForReproduction><di_mdfrVal species="Fir">15</di_mdfrVal></di_minDbhForReproduction>
<di_canopyFunction><di_cfVal species="Fir">0</di_cfVal></di_canopyFunction>
<di_weibullCanopySTR><di_wcsVal species="Fir">400</di_wcsVal></di_weibullCanopySTR>
<di_weibullCanopyBeta><di_wcbVal species="Fir">2</di_wcbVal></di_weibullCanopyBeta>
<di_weibullCanopyDispersal><di_wcdVal species="Fir">1.2E-4</di_wcdVal></di_weibullCanopyDispersal>
<di_weibullCanopyTheta><di_wctVal species="Fir">3</di_wctVal></di_weibullCanopyTheta>
</NonGapDisperse1>
</paramFile>
"""


def stand(seed=3, n=40):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "x_m": rng.uniform(0, 40, n),
        "y_m": rng.uniform(0, 30, n),
        "dbh_cm": rng.uniform(5, 50, n),
        "species": rng.choice(["fir", "aspen"], n),
    })


def run(**kw):
    args = dict(trees=stand(), species=SPECIES, extent=EXTENT, cell_size_m=1.0, years=3, seed=7,
                method="exact", backend="cpu")
    args.update(kw)
    return geofield.forest.simulate(**args)


def test_counts_and_densities_agree(backend):
    counts, ds = run(density_cell_m=2.0, backend=backend)
    assert list(counts.columns) == COLUMNS
    assert len(counts) == 4 * 2 * 1  # (years + 1) x species x replicates
    assert counts.year.tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    assert (counts.replicate == 0).all() and set(counts.method) == {"exact"}
    assert counts[counts.year == 1].recruits.sum() > 0
    assert (counts[counts.year == 0].seeds == 0).all()
    assert counts.attrs["backend"].startswith(backend) and counts.attrs["seed"] == 7
    assert counts.attrs["torus"] is False and counts.attrs["mapping"] == []
    assert set(counts.attrs["timing"]) >= {"dispersal_s", "demography_s", "run_s"}
    # The densities: (time, species, y, x) on 2 m cells, row 0 north.
    sd = ds.seed_density
    assert sd.dims == ("time", "species", "y", "x") and sd.shape == (4, 2, 15, 20)
    assert ds.time.values.tolist() == [0, 1, 2, 3]
    assert ds.species.values.tolist() == ["fir", "aspen"]
    np.testing.assert_allclose(ds.x.values[[0, -1]], [1.0, 39.0])
    np.testing.assert_allclose(ds.y.values[[0, -1]], [29.0, 1.0])
    area = 4.0
    for row in counts.itertuples():
        t, s = row.year, row.species
        seeds = ds.seed_density.sel(time=t, species=s).values.astype(np.float64).sum() * area
        assert seeds == row.seeds, (t, s)
        seedlings = ds.seedling_density.sel(time=t, species=s).values.astype(np.float64).sum()
        assert seedlings * area == row.seedlings, (t, s)
    assert ds.seedling_density.sel(time=3).sum() > 0
    # The final stand: the trees standing at the end of the last year.
    fin = counts.attrs["final_trees"]
    last = counts[counts.year == 3]
    n = int((last.seedlings + last.saplings + last.adults).sum())
    assert len(fin["x_m"]) == len(fin["species"]) == n
    for name in ("fir", "aspen"):
        row = last[last.species == name].iloc[0]
        assert (fin["species"] == name).sum() == row.seedlings + row.saplings + row.adults


def test_crs_and_geotiff(tmp_path):
    pytest.importorskip("rioxarray")
    rasterio = pytest.importorskip("rasterio")
    x0, y0 = 500000.0, 5200000.0
    t = stand()
    t = t.assign(x_m=t.x_m + x0, y_m=t.y_m + y0)
    _, ds = run(trees=t, extent=(x0, y0, x0 + 40, y0 + 30), years=1, crs="EPSG:26910")
    assert ds.seed_density.attrs["grid_mapping"] == "spatial_ref"
    band = ds.seed_density.sel(time=1, species="fir")
    out = tmp_path / "seeds.tif"
    band.rio.to_raster(out)
    with rasterio.open(out) as r:
        assert r.crs.to_epsg() == 26910
        assert (r.transform.c, r.transform.f, r.transform.a) == (x0, y0 + 30, 1.0)
        np.testing.assert_array_equal(r.read(1), band.values)


def test_density_writes_to_netcdf(tmp_path):
    xr = pytest.importorskip("xarray")
    pytest.importorskip("scipy")
    _, ds = run(years=1)
    out = tmp_path / "density.nc"
    ds.to_netcdf(out, engine="scipy")
    with xr.open_dataset(out, engine="scipy") as back:
        np.testing.assert_array_equal(back.seed_density.values, ds.seed_density.values)
        assert back.attrs["dispersal"] == "expected"


def test_seeds_give_the_same_run_and_other_seeds_another():
    a, da = run(years=2)
    b, db = run(years=2)
    c, _ = run(years=2, seed=8)
    pd.testing.assert_frame_equal(a, b)
    np.testing.assert_array_equal(da.seed_density.values, db.seed_density.values)
    assert not a.equals(c)
    # Frames of two runs concatenate (their attrs hold arrays).
    assert len(pd.concat([a, c])) == len(a) + len(c)


def test_replicates_differ():
    counts, _ = run(years=2, replicates=2)
    assert len(counts) == 3 * 2 * 2
    assert sorted(set(counts.replicate)) == [0, 1]
    r0 = counts[counts.replicate == 0].drop(columns="replicate").reset_index(drop=True)
    r1 = counts[counts.replicate == 1].drop(columns="replicate").reset_index(drop=True)
    # Year 0 is the initial stand in both; the years after differ.
    pd.testing.assert_frame_equal(r0[r0.year == 0], r1[r1.year == 0])
    assert not r0[r0.year > 0][["seeds", "recruits"]].equals(r1[r1.year > 0][["seeds", "recruits"]])


def test_compare_two_methods():
    counts, ds = run(years=2, compare=("exact", "multires"))
    assert len(counts) == 3 * 2 * 2
    assert set(counts.method) == {"exact", "multires"}
    assert counts.attrs["methods"] == ["exact", "multires"]
    diff = counts.attrs["recruit_difference"]
    assert len(diff) == 2 and all(np.isnan(d) or d >= 0 for d in diff)
    ref = counts[counts.method == "exact"]
    rec = [ref[ref.year == y].recruits.sum() for y in (1, 2)]
    other = counts[counts.method == "multires"]
    for y, d in zip((1, 2), diff):
        if rec[y - 1]:
            got = abs(other[other.year == y].recruits.sum() - rec[y - 1]) / rec[y - 1]
            assert d == pytest.approx(got)
    assert ds.attrs["method"] == "exact"


def test_auto_is_replaced_by_the_method_that_ran():
    counts, _ = run(years=1, method="auto")
    assert "auto" not in set(counts.method)


def test_per_seed_runs():
    counts, ds = run(dispersal="per-seed")
    assert set(counts.method) == {"per-seed"}
    assert counts[counts.year > 0].seeds.sum() > 0
    assert counts.attrs["dispersal"] == "per-seed"
    one = ds.seed_density.sel(time=1).values.astype(np.float64).sum()
    assert one == counts[counts.year == 1].seeds.sum()


def test_species_as_a_dict_with_forest_tables_and_indices():
    species = {
        "fir": {"kernel": "weibull", "d": 1.32e-4, "theta": 3.0, "str": 106.9, "beta": 2.0,
                "eta": "analytic", "min_dbh_cm": 15.0, "forest": {"establishment": 0.05}},
        "aspen": {"kernel": "2dt", "u": 30.0, "p": 1.5, "str": 50.0, "beta": 2.0, "eta": 1.0,
                  "min_dbh_cm": 10.0},
    }
    t = stand()
    by_index = dict(t, species=np.where(t.species == "fir", 0, 1))
    a, _ = run(species=species, trees=by_index, years=2)
    b, _ = run(years=2)  # SPECIES sets gap_cell_m = 8, the default
    pd.testing.assert_frame_equal(a, b)


def test_sortie_text_and_file(tmp_path):
    counts, ds = geofield.forest.simulate(sortie=SORTIE, backend="cpu", method="exact")
    # The file's plot, years (2 x 1), seed and torus.
    assert counts.year.max() == 2 and counts.attrs["seed"] == 5
    assert counts.attrs["torus"] is True and counts.attrs["extent"] == (0.0, 0.0, 40.0, 30.0)
    assert set(counts.species) == {"Fir"}
    assert counts[counts.year == 0].adults.tolist() == [3]
    assert any("NonGapDisperse" in line for line in counts.attrs["mapping"])
    assert ds.seed_density.shape == (3, 1, 30, 40)
    path = tmp_path / "run.xml"
    path.write_text(SORTIE)
    again, _ = geofield.forest.simulate(sortie=path, backend="cpu", method="exact")
    pd.testing.assert_frame_equal(counts, again)
    # trees= replaces the file's tree map; years= and seed= its values.
    trees = {"x_m": [20.0], "y_m": [15.0], "dbh_cm": [30.0], "species": ["fir"]}
    one, _ = geofield.forest.simulate(trees=trees, sortie=path, years=1, seed=9, backend="cpu")
    assert one.year.max() == 1 and one.attrs["seed"] == 9
    assert one[one.year == 0].adults.tolist() == [1]


@pytest.mark.parametrize("kw, message", [
    ({"dispersal": "wind"}, "dispersal"),
    ({"method": "fast"}, "method"),
    ({"compare": ("exact",)}, "compare"),
    ({"compare": ("exact", "exact")}, "compare"),
    ({"compare": ("exact", "multires"), "dispersal": "per-seed"}, "compare"),
    ({"sortie": SORTIE}, "sortie"),
    ({"years": -1}, "years"),
    ({"years": 0}, "years"),
    ({"years": 2.5}, "years"),
    ({"seed": -1}, "seed"),
    ({"replicates": 0}, "replicates"),
    ({"tolerance": 2.0}, "tolerance"),
    ({"density_cell_m": 1.5}, "density_cell_m"),
    ({"cell_size_m": 7.0}, "whole number"),
    ({"extent": None}, "extent"),
    ({"trees": None}, "trees"),
    ({"species": None}, "species"),
    ({"precision": "half"}, "precision"),
    ({"backend": "tpu"}, "backend"),
    ({"trees": {"x_m": [1.0], "y_m": [1.0], "dbh_cm": [20.0], "species": ["oak"]}},
     "trees.species: 'oak' at row 0"),
    ({"species": SPECIES.replace("establishment = 0.05", "establishment = 2.0")},
     "establishment"),
])
def test_bad_arguments_raise_value_errors_naming_them(kw, message):
    with pytest.raises(geofield.GeofieldValueError) as e:
        run(**kw)
    assert isinstance(e.value, ValueError)
    assert message in str(e.value)


def test_file_errors_name_the_file_and_line(tmp_path):
    path = tmp_path / "run.xml"
    path.write_text(SORTIE.replace("<di_wctVal species=\"Fir\">3<", "<di_wctVal species=\"Fir\">x<"))
    with pytest.raises(geofield.GeofieldValueError) as e:
        geofield.forest.simulate(sortie=path, backend="cpu")
    assert re.search(r"run\.xml:\d+: ", str(e.value)), str(e.value)
    with pytest.raises(OSError) as e:
        geofield.forest.simulate(sortie=tmp_path / "none.xml")
    assert "none.xml" in str(e.value)
    with pytest.raises(OSError) as e:
        run(species=tmp_path / "none.toml")
    assert "none.toml" in str(e.value)


def test_same_counts_and_densities_as_the_cli(tmp_path):
    exe = os.environ.get("GEOFIELD_BIN") or shutil.which("geofield")
    if exe is None:
        pytest.skip("no geofield binary (set GEOFIELD_BIN)")
    trees = stand()
    csv = tmp_path / "trees.csv"
    with open(csv, "w") as f:
        f.write("x_m,y_m,dbh_cm,species\n")
        for r in trees.itertuples():
            f.write(f"{float(r.x_m)!r},{float(r.y_m)!r},{float(r.dbh_cm)!r},{r.species}\n")
    toml = tmp_path / "species.toml"
    toml.write_text(SPECIES)
    out, nc = tmp_path / "counts.csv", tmp_path / "density.nc"
    # The defaults of both (method auto, float32 maps), but for the years and the seed.
    subprocess.run([exe, "-q", "--backend", "cpu", "forest", "--trees", str(csv), "--species",
                    str(toml), "--extent", "0,0,40,30", "--cell-size-m", "1", "--years", "3",
                    "--seed", "11", "--replicates", "2", "--counts", str(out), "--density",
                    str(nc), "--density-cell-m", "2"],
                   check=True, stdout=subprocess.DEVNULL)
    # Exact float parsing: the default from pandas 3 on, which deprecates the argument.
    exact = {} if int(pd.__version__.split(".")[0]) >= 3 else {"float_precision": "round_trip"}
    cli = pd.read_csv(out, **exact)
    counts, ds = geofield.forest.simulate(trees, toml, EXTENT, 1.0, years=3, seed=11,
                                          replicates=2, density_cell_m=2.0, backend="cpu")
    pd.testing.assert_frame_equal(counts, cli, check_exact=True)
    xr = pytest.importorskip("xarray")
    try:
        ref = xr.open_dataset(nc)
    except (ImportError, ValueError) as e:  # no NetCDF reader (netCDF4 or scipy)
        pytest.skip(f"cannot read NetCDF: {e}")
    with ref:
        for v in ("seed_density", "seedling_density"):
            a = ref[v].transpose("time", "species", "y", "x").sortby("y", ascending=False)
            np.testing.assert_array_equal(a.values, ds[v].values)
            np.testing.assert_allclose(a.y.values, ds.y.values)


def test_progress_is_the_fraction_of_years_done():
    seen = []
    a, _ = run(years=3, replicates=2, progress=seen.append)
    b, _ = run(years=3, replicates=2)
    pd.testing.assert_frame_equal(a, b)
    assert seen[-1] == 1.0 and seen == sorted(seen)


def test_sigint_interrupts_a_long_run():
    # 1000 years of a 200 m plot: minutes uncancelled (20 years take seconds).
    rng = np.random.default_rng(2)
    trees = {"x_m": rng.uniform(0, 200, 500), "y_m": rng.uniform(0, 200, 500),
             "dbh_cm": rng.uniform(15, 60, 500), "species": rng.choice(["fir", "aspen"], 500)}
    timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    start = time.perf_counter()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            run(trees=trees, extent=(0, 0, 200, 200), years=1000, density_cell_m=10.0)
    finally:
        timer.cancel()
    assert time.perf_counter() - start < 0.5 + 1.0
    counts, _ = run(years=1)  # the process stays usable
    assert len(counts) == 4


def test_suitability_scales_establishment(tmp_path):
    """A layer of zeros establishes nothing; ones change nothing; a wrong shape or a value
    outside [0, 1] is refused naming the argument; a raster file on the grid works too."""
    rows, cols = int(EXTENT[3] - EXTENT[1]), int(EXTENT[2] - EXTENT[0])
    base, _ = run(years=2)
    zero, _ = run(years=2, suitability=np.zeros((rows, cols)))
    assert (zero["recruits"] == 0).all() and base["recruits"].sum() > 0
    ones, _ = run(years=2, suitability=np.ones((rows, cols)))
    pd.testing.assert_frame_equal(ones, base, check_like=True)
    with pytest.raises(geofield.GeofieldValueError, match="suitability"):
        run(years=2, suitability=np.ones((rows, cols + 1)))
    bad = np.ones((rows, cols))
    bad[2, 3] = 1.5
    with pytest.raises(geofield.GeofieldValueError, match=r"suitability.*row 2, column 3"):
        run(years=2, suitability=bad)
    asc = tmp_path / "zero.asc"
    asc.write_text(f"ncols {cols}\nnrows {rows}\nxllcorner {EXTENT[0]}\nyllcorner {EXTENT[1]}\n"
                   "cellsize 1\nNODATA_value -9999\n" + (" ".join(["0"] * cols) + "\n") * rows)
    from_file, _ = run(years=2, suitability=asc)
    assert (from_file["recruits"] == 0).all()
