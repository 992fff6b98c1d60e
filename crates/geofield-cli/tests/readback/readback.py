#!/usr/bin/env python3
"""Read geofield's outputs back with independent readers (GDAL through rasterio, rio-cogeo,
netCDF4/xarray, VTK, NumPy) and check what a GIS or visualisation user relies on.

Usage: readback.py RUN_DIR [DEMO_DIR]

RUN_DIR holds the outputs of one run per command, made by the Rust test
`crates/geofield-cli/tests/cli/readback.rs` (see there for the exact commands and the grids
asked for, which are repeated below as expectations). DEMO_DIR holds the outputs of
`geofield demo`. Exits 0 when every check passes, 1 with one line per failed check otherwise,
and 3 when a module is missing (the Rust test decides whether that is a failure).
"""

import json
import math
import os
import sys

try:
    import numpy as np
    import rasterio
    from rasterio.transform import Affine
    from rio_cogeo.cogeo import cog_validate
    import netCDF4
    import xarray as xr
    import vtk
    from vtk.util.numpy_support import vtk_to_numpy
except ImportError as e:  # pragma: no cover - exercised by the Rust test
    print(f"readback: missing Python module: {e.name}", file=sys.stderr)
    sys.exit(3)

FAILURES = []

# Expectations: the grids and CRS the Rust test asks for (north-west corner, cell size).
RUN_EPSG = 32633
DEM = dict(x0=500_000.0, y1=5_200_000.0 + 20 * 30.0, cell=30.0, cols=24, rows=20)
SEEDS = dict(x0=500_000.0, y1=5_200_100.0, cell=2.0, cols=50, rows=50)
KRIGE = dict(x0=500_000.0, y1=5_201_000.0, cell=50.0, cols=20, rows=20)
NZ = 16
# The demo (cmd_demo.rs): every output in NAD83 / UTM zone 10N.
DEMO_EPSG = 26910
DEMO_SEEDS = dict(x0=500_000.0, y1=6_000_256.0, cell=1.0, cols=256, rows=256)
DEMO_STRATA = dict(x0=500_000.0, y1=6_101_800.0, cell=10.0, cols=100, rows=180)
DEMO_WIND = dict(x0=500_000.0, y1=6_000_000.0 + 120 * 50.0, cell=50.0, cols=120, rows=120)


def check(cond, what):
    if not cond:
        FAILURES.append(what)
    return cond


def transform_of(g):
    return Affine(g["cell"], 0.0, g["x0"], 0.0, -g["cell"], g["y1"])


def near(a, b, tol=1e-6):
    return all(abs(x - y) <= tol * max(1.0, abs(y)) for x, y in zip(a, b))


def check_georef(src, name, epsg, grid):
    check(src.crs is not None, f"{name}: no CRS")
    if src.crs is not None:
        check(src.crs.to_epsg() == epsg, f"{name}: CRS EPSG:{src.crs.to_epsg()}, asked {epsg}")
    want = transform_of(grid)
    check(near(tuple(src.transform)[:6], tuple(want)[:6]),
          f"{name}: transform {tuple(src.transform)[:6]}, asked {tuple(want)[:6]}")
    if "cols" in grid:
        check((src.width, src.height) == (grid["cols"], grid["rows"]),
              f"{name}: {src.width} x {src.height}, asked {grid['cols']} x {grid['rows']}")


def check_geotiff(path, epsg, grid, provenance=True, values=None, compression="DEFLATE"):
    """COG validity, georeferencing, nodata, descriptions, units and provenance."""
    name = os.path.basename(path)
    valid, errors, warnings = cog_validate(path, quiet=True)
    check(valid and not errors, f"{name}: not a valid COG: {errors}")
    with rasterio.open(path) as src:
        check_georef(src, name, epsg, grid)
        ims = src.tags(ns="IMAGE_STRUCTURE")
        check(ims.get("LAYOUT") == "COG", f"{name}: GDAL does not report LAYOUT=COG ({ims})")
        check(ims.get("COMPRESSION") == compression, f"{name}: compression {ims.get('COMPRESSION')}, asked {compression}")
        check(ims.get("PREDICTOR") == "3", f"{name}: predictor {ims.get('PREDICTOR')}")
        check(src.block_shapes[0] == (256, 256), f"{name}: blocks {src.block_shapes[0]}")
        if max(src.width, src.height) > 256:
            check(len(src.overviews(1)) > 0, f"{name}: no overviews on a {src.width} x {src.height} raster")
        check(all(d for d in src.descriptions), f"{name}: band without description {src.descriptions}")
        check(all(u for u in src.units), f"{name}: band without units {src.units}")
        tags = src.tags()
        if provenance:
            for k in ("geofield_version", "command_line"):
                check(k in tags, f"{name}: no provenance item {k} in {sorted(tags)}")
            check("geofield" in tags.get("command_line", ""), f"{name}: command line {tags.get('command_line')}")
        raw = src.read()
        has_nan = bool(np.isnan(raw).any())
        check(not has_nan or src.nodata is not None, f"{name}: holds NaN without a nodata value")
        data = src.read(masked=True)
        check(bool(np.isfinite(data.compressed()).all()), f"{name}: non-finite unmasked values")
        if values is not None:
            lo, hi = values
            c = data.compressed()
            check(c.size > 0 and c.min() >= lo and c.max() <= hi,
                  f"{name}: values {c.min() if c.size else None}..{c.max() if c.size else None} outside {lo}..{hi}")
        return data


def check_asc(path, epsg, grid):
    name = os.path.basename(path)
    check(os.path.exists(path[:-4] + ".prj"), f"{name}: no .prj sidecar")
    with rasterio.open(path) as src:
        check_georef(src, name, epsg, grid)
        return src.read(1, masked=True)


def check_run(d):
    p = lambda f: os.path.join(d, f)  # noqa: E731

    # Rasters: DEM, dispersal, kriging (local: may hold NaN, so nodata always declared).
    check_geotiff(p("dem.tif"), RUN_EPSG, DEM, values=(99.0, 181.0))
    seeds = check_geotiff(p("seeds.tif"), RUN_EPSG, SEEDS, values=(0.0, math.inf))
    check(seeds.shape[0] == 4, f"seeds.tif: {seeds.shape[0]} bands, 4 species")
    # --compress zstd: the same values, Zstandard tiles; a Zstandard DEM read by `wind`.
    seeds_z = check_geotiff(p("seeds_zstd.tif"), RUN_EPSG, SEEDS, values=(0.0, math.inf), compression="ZSTD")
    check(np.array_equal(seeds_z.filled(-1), seeds.filled(-1)), "seeds_zstd.tif differs from seeds.tif")
    dem = check_geotiff(p("dem.tif"), RUN_EPSG, DEM)
    dem_z = check_geotiff(p("dem_zstd.tif"), RUN_EPSG, DEM, compression="ZSTD")
    check(np.array_equal(dem_z, dem), "dem_zstd.tif differs from dem.tif")
    krige = check_geotiff(p("krige.tif"), RUN_EPSG, KRIGE)
    kvar = check_geotiff(p("krige_var.tif"), RUN_EPSG, KRIGE, values=(0.0, math.inf))
    for f in ("krige.tif", "krige_var.tif"):
        with rasterio.open(p(f)) as src:
            check(src.nodata is not None and math.isnan(src.nodata),
                  f"{f}: local kriging can leave NaN, nodata should be NaN, is {src.nodata}")
            check(src.units[0] in ("m", "m2"), f"{f}: units {src.units}")
            check("neighbors" in src.tags() and "variograms" in src.tags(),
                  f"{f}: kriging parameters missing from provenance {sorted(src.tags())}")

    # ESRI ASCII: same values as the GeoTIFF bands, with a .prj.
    with rasterio.open(p("seeds.tif")) as src:
        names = src.descriptions
    for i, n in enumerate(names):
        a = check_asc(p(f"seeds_{n}.asc"), RUN_EPSG, SEEDS)
        check(np.array_equal(a.filled(-1), seeds[i].filled(-1)), f"seeds_{n}.asc differs from band {i + 1} of seeds.tif")
    for stem, tif in (("krige", krige), ("krige_var", kvar)):
        for i, s in enumerate(("s01", "s02")):
            a = check_asc(p(f"{stem}_{s}.asc"), RUN_EPSG, KRIGE)
            check(np.array_equal(np.ma.getmaskarray(a), np.ma.getmaskarray(tif[i])), f"{stem}_{s}.asc: nodata cells differ from the .tif")
            check(np.allclose(a.compressed(), tif[i].compressed(), rtol=1e-6),
                  f"{stem}_{s}.asc: values differ from the .tif")

    # NPY: the same seed densities; kNN indices; flock state.
    npy = np.load(p("seeds.npy"))
    check(npy.shape == (4, 50, 50), f"seeds.npy: shape {npy.shape}")
    check(np.array_equal(npy, seeds.filled(np.nan)), "seeds.npy differs from seeds.tif")
    knn = np.load(p("knn.npy"))
    check(knn.shape == (25, 4) and knn.dtype == np.int64, f"knn.npy: {knn.shape} {knn.dtype}")
    check(((knn >= 0) & (knn < 25)).all(), "knn.npy: indices outside 0..25")
    check(not (knn == np.arange(25)[:, None]).any(), "knn.npy: a point is its own neighbour")
    flock = np.load(p("flock.npy"))
    check(flock.shape[0] == 50 and np.isfinite(flock).all(), f"flock.npy: {flock.shape}, finite {np.isfinite(flock).all()}")
    with open(p("variogram.json")) as f:
        vg = json.load(f)
    check(len(vg.get("bins", [])) > 0 and all(b["gamma"] >= 0 for b in vg["bins"]), "variogram.json: no bins or negative gamma")

    check_wind(d)
    check_forest(d)
    check_krige3d(d)
    check_varmap(d)


def check_wind(d):
    p = lambda f: os.path.join(d, f)  # noqa: E731
    speed_tif = check_geotiff(p("wind_speed.tif"), RUN_EPSG, DEM, values=(0.0, 100.0))
    dir_tif = check_geotiff(p("wind_dir.tif"), RUN_EPSG, DEM, values=(0.0, 360.0))
    # The run on the .asc DEM: the CRS came from its .prj, the values are the same.
    check_asc(p("dem_asc.asc"), RUN_EPSG, DEM)
    from_asc = check_geotiff(p("wind_speed_from_asc.tif"), RUN_EPSG, DEM)
    check(np.allclose(from_asc, speed_tif, rtol=1e-5), "wind over dem_asc.asc differs from wind over dem.tif")
    from_zstd = check_geotiff(p("wind_speed_from_zstd.tif"), RUN_EPSG, DEM)
    check(np.array_equal(from_zstd, speed_tif), "wind over dem_zstd.tif differs from wind over dem.tif")

    # NetCDF: CF attributes, the grid mapping, and GDAL's georeferencing.
    nc = netCDF4.Dataset(p("wind.nc"))
    check(nc.Conventions == "CF-1.8", f"wind.nc: Conventions {nc.Conventions}")
    check("geofield" in nc.history and "wind" in nc.history, f"wind.nc: history {nc.history!r}")
    crs = nc.variables.get("crs")
    if check(crs is not None, "wind.nc: no grid-mapping variable crs"):
        check(crs.grid_mapping_name == "transverse_mercator", f"wind.nc: grid_mapping_name {crs.grid_mapping_name}")
        check(crs.longitude_of_central_meridian == 15.0, "wind.nc: UTM 33 central meridian is 15")
        check(crs.false_easting == 500000.0 and crs.scale_factor_at_central_meridian == 0.9996,
              "wind.nc: UTM false easting / scale factor")
        check("UTM zone 33N" in crs.crs_wkt and crs.spatial_ref == crs.crs_wkt, "wind.nc: crs_wkt / spatial_ref")
    for name, var in nc.variables.items():
        if "x" in var.dimensions and "y" in var.dimensions:
            check(getattr(var, "grid_mapping", None) == "crs", f"wind.nc: {name} has no grid_mapping")
    for b, n in (("x_bnds", 24), ("y_bnds", 20)):
        check(b in nc.variables and nc.variables[b].shape == (n, 2), f"wind.nc: {b}")
    x = nc.variables["x"][:]
    xb = nc.variables["x_bnds"][:]
    check(np.allclose(xb.mean(axis=1), x) and np.allclose(xb[:, 1] - xb[:, 0], 30.0), "wind.nc: x_bnds do not bracket x")
    ws = nc.variables["wind_speed"]
    wd = nc.variables["wind_from_direction"]
    check(ws.standard_name == "wind_speed" and ws.units == "m s-1", "wind.nc: wind_speed attributes")
    check(wd.standard_name == "wind_from_direction" and wd.units == "degree", "wind.nc: wind_from_direction attributes")
    # Same values as the rasters (NetCDF y increases northwards: flip to north-up).
    check(np.allclose(np.flipud(ws[:]), speed_tif[0], rtol=1e-6), "wind.nc: wind_speed differs from wind_speed.tif")
    check(np.allclose(np.flipud(wd[:]), dir_tif[0], rtol=1e-6), "wind.nc: wind_from_direction differs from wind_dir.tif")
    sc = nc.variables["stability_class"]
    check(list(sc.flag_values) == [0, 1, 2, 3, 4, 5] and sc.flag_meanings == "A B C D E F",
          "wind.nc: stability coding 0 = A .. 5 = F")
    nc_speed = nc.variables["speed"][:]  # masked in solid cells (_FillValue)
    nc_stab = sc[:]
    nc.close()

    ds = xr.open_dataset(p("wind.nc"), engine="netcdf4")
    check(set(ds.data_vars) >= {"u", "v", "w", "speed", "wind_speed", "wind_from_direction", "terrain"},
          f"wind.nc via xarray: {sorted(ds.data_vars)}")
    check(ds["speed"].dims == ("z", "y", "x"), f"wind.nc via xarray: speed dims {ds['speed'].dims}")
    ds.close()

    for var, grid in (("speed", DEM), ("wind_speed", DEM)):
        with rasterio.open(f"NETCDF:{p('wind.nc')}:{var}") as src:
            check_georef(src, f"NETCDF:wind.nc:{var}", RUN_EPSG, grid)

    # VTK: compressed arrays decompress, sizes, FieldData, and values equal the NetCDF ones.
    r = vtk.vtkXMLImageDataReader()
    r.SetFileName(p("wind.vti"))
    r.Update()
    img = r.GetOutput()
    check(img.GetNumberOfCells() == 24 * 20 * NZ, f"wind.vti: {img.GetNumberOfCells()} cells")
    cd = img.GetCellData()
    arrays = {cd.GetArrayName(i): vtk_to_numpy(cd.GetArray(i)) for i in range(cd.GetNumberOfArrays())}
    check(set(arrays) == {"wind", "speed", "solid"}, f"wind.vti arrays {sorted(arrays)}")
    fd = img.GetFieldData()
    fields = {fd.GetAbstractArray(i).GetName(): fd.GetAbstractArray(i).GetValue(0)
              for i in range(fd.GetNumberOfArrays())}
    check(fields.get("crs") == f"EPSG:{RUN_EPSG}", f"wind.vti FieldData crs {fields.get('crs')}")
    check("UTM zone 33N" in fields.get("crs_wkt", ""), "wind.vti FieldData crs_wkt")
    check(fields.get("units_speed") == "m s-1", f"wind.vti FieldData units {fields}")
    origin = img.GetOrigin()
    check(near(origin[:2], (DEM["x0"], DEM["y1"] - DEM["rows"] * DEM["cell"])), f"wind.vti origin {origin}")
    if set(arrays) == {"wind", "speed", "solid"}:
        speed = arrays["speed"].reshape(NZ, 20, 24)
        solid = arrays["solid"].reshape(NZ, 20, 24).astype(bool)
        wind = arrays["wind"].reshape(NZ, 20, 24, 3)
        check((speed[solid] == 0).all() and (wind[solid] == 0).all(), "wind.vti: solid cells are not zero")
        check(np.array_equal(solid, np.ma.getmaskarray(nc_speed)), "wind.vti solid differs from wind.nc's masked cells")
        check(np.allclose(speed[~solid], nc_speed.compressed(), rtol=1e-6), "wind.vti speed differs from wind.nc speed")
        check(np.isfinite(arrays["wind"]).all(), "wind.vti: non-finite wind")

    # NPZ: CRS and the same stability coding as the NetCDF file.
    z = np.load(p("wind.npz"))
    check(int(z["crs_epsg"]) == RUN_EPSG if "crs_epsg" in z else False, "wind.npz: crs_epsg")
    check(z["stability"].dtype == np.uint8 and np.array_equal(z["stability"], np.flipud(nc_stab)),
          "wind.npz stability differs from wind.nc stability_class")


def check_varmap(d):
    """The variogram map (`geofield variogram --map`): two bands gamma and pairs, square, odd,
    symmetric through the centre (every ordered pair is counted), centred on (0, 0)."""
    with rasterio.open(os.path.join(d, "varmap.tif")) as src:
        check(src.count == 2 and src.descriptions[:2] == ("gamma", "pairs"),
              f"varmap.tif: bands {src.count} {src.descriptions}")
        g, n = src.read(1), src.read(2)
        check(g.shape[0] == g.shape[1] and g.shape[0] % 2 == 1, f"varmap.tif: shape {g.shape}")
        check(np.array_equal(n, n[::-1, ::-1]), "varmap.tif: pair counts not symmetric")
        ok = np.isfinite(g)
        check(np.allclose(g[ok], g[::-1, ::-1][ok]), "varmap.tif: gamma not symmetric")
        b = src.bounds
        check(near((b.left + b.right, b.bottom + b.top), (0.0, 0.0)), f"varmap.tif: bounds {b}")


def check_krige3d(d):
    """3-D kriging (`geofield krige3d`): CF NetCDF with (z, y, x) and the grid mapping, GDAL
    georeferencing (one band per level), the VTK image at the same cells with the same values."""
    p = lambda f: os.path.join(d, f)  # noqa: E731
    ds = xr.open_dataset(p("krige3d.nc"), engine="netcdf4")
    check(ds.attrs.get("Conventions") == "CF-1.8", "krige3d.nc: Conventions")
    check(ds["v"].dims == ("z", "y", "x") and dict(ds.sizes)["z"] == 4,
          f"krige3d.nc: v dims {ds['v'].dims} sizes {dict(ds.sizes)}")
    check(ds["v"].attrs.get("units") == "%" and ds["v_variance"].attrs.get("units") == "%2",
          "krige3d.nc: units")
    check(ds["v"].attrs.get("grid_mapping") == "crs", "krige3d.nc: grid_mapping")
    check(ds["z"].attrs.get("positive") == "up" and ds["z"].attrs.get("axis") == "Z",
          "krige3d.nc: z axis attributes")
    check(np.allclose(ds["z"].values, [-35, -25, -15, -5]), f"krige3d.nc: z {ds['z'].values}")
    check(bool(np.isfinite(ds["v"].values).all()) and float(ds["v_variance"].min()) >= 0,
          "krige3d.nc: non-finite values or negative variance")
    with rasterio.open(f"NETCDF:{p('krige3d.nc')}:v") as src:
        check_georef(src, "NETCDF:krige3d.nc:v", RUN_EPSG, KRIGE)
        check(src.count == 4, f"krige3d.nc via GDAL: {src.count} bands, 4 levels")
    r = vtk.vtkXMLImageDataReader()
    r.SetFileName(p("krige3d.vti"))
    r.Update()
    img = r.GetOutput()
    check(img.GetNumberOfCells() == 20 * 20 * 4, f"krige3d.vti: {img.GetNumberOfCells()} cells")
    check(near(img.GetOrigin(), (500_000.0, 5_200_000.0, -40.0)), f"krige3d.vti origin {img.GetOrigin()}")
    check(near(img.GetSpacing(), (50.0, 50.0, 10.0)), f"krige3d.vti spacing {img.GetSpacing()}")
    v = vtk_to_numpy(img.GetCellData().GetArray("v"))
    check(np.allclose(v, ds["v"].values.ravel(), rtol=1e-12), "krige3d.vti v differs from krige3d.nc")
    crs = img.GetFieldData().GetAbstractArray("crs")
    check(crs is not None and crs.GetValue(0) == f"EPSG:{RUN_EPSG}", "krige3d.vti: FieldData crs")


def check_forest(d):
    """`geofield forest --density`: CF NetCDF on (time, species, y, x) that xarray opens without
    warnings and GDAL georeferences; the seed densities add up to counts.csv's seeds."""
    import csv
    import warnings

    p = lambda f: os.path.join(d, f)  # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ds = xr.open_dataset(p("forest_density.nc"), engine="netcdf4")
    check(ds.attrs.get("Conventions") == "CF-1.8", "forest_density.nc: Conventions")
    for v in ("seed_density", "seedling_density"):
        check(v in ds and ds[v].dims == ("time", "species", "y", "x"), f"forest_density.nc: {v} dims")
        check(ds[v].attrs.get("units") == "m-2", f"forest_density.nc: {v} units")
        check(ds[v].attrs.get("grid_mapping") == "crs", f"forest_density.nc: {v} grid_mapping")
    check(list(ds["time"].values) == [0, 1, 2, 3, 4], f"forest_density.nc: time {ds['time'].values}")
    check(ds.sizes["species"] == 4 and ds.sizes["x"] == SEEDS["cols"] and ds.sizes["y"] == SEEDS["rows"],
          f"forest_density.nc: sizes {dict(ds.sizes)}")
    check(bool((np.diff(ds["y"].values) > 0).all()), "forest_density.nc: y must increase (south first)")
    seeds = {}
    with open(p("forest_counts.csv"), newline="") as f:
        for row in csv.DictReader(f):
            seeds[(int(row["year"]), row["species"])] = int(row["seeds"])
    names = ds["species"].attrs.get("species_names", "").split("\n")
    check(len(names) == 4, f"forest_density.nc: species_names {names}")
    area = SEEDS["cell"] ** 2
    for t in range(5):
        for s, name in enumerate(names):
            total = float(ds["seed_density"][t, s].sum()) * area
            want = seeds.get((t, name), -1)
            check(abs(total - want) <= 1e-5 * max(want, 1) + 0.5,
                  f"forest_density.nc: year {t} {name}: {total} seeds, counts.csv {want}")
    check(float(ds["seedling_density"][4].sum()) > 0, "forest_density.nc: no seedlings after 4 years")
    with rasterio.open(f"NETCDF:{p('forest_density.nc')}:seed_density") as src:
        check_georef(src, "NETCDF:forest_density.nc:seed_density", RUN_EPSG, SEEDS)
        check(src.count == 5 * 4, f"forest_density.nc via GDAL: {src.count} bands, 5 years x 4 species")


def check_demo(d):
    p = lambda f: os.path.join(d, f)  # noqa: E731
    check_geotiff(p("seeds.tif"), DEMO_EPSG, DEMO_SEEDS, values=(0.0, math.inf))
    for f in ("strata.tif", "strata_variance.tif"):
        check_geotiff(p(f), DEMO_EPSG, DEMO_STRATA)
    check_geotiff(p("wind_speed.tif"), DEMO_EPSG, DEMO_WIND, values=(0.0, 100.0))
    with rasterio.open(f"NETCDF:{p('wind.nc')}:speed") as src:
        check_georef(src, "demo NETCDF:wind.nc:speed", DEMO_EPSG, DEMO_WIND)
    r = vtk.vtkXMLImageDataReader()
    r.SetFileName(p("strata.vti"))
    r.Update()
    fd = r.GetOutput().GetFieldData()
    crs = fd.GetAbstractArray("crs")
    check(crs is not None and crs.GetValue(0) == f"EPSG:{DEMO_EPSG}", "demo strata.vti: FieldData crs")
    check(r.GetOutput().GetNumberOfCells() > 0, "demo strata.vti: no cells")
    for f in ("flock_state.npy",):
        a = np.load(p(f))
        check(np.isfinite(a).all(), f"demo {f}: non-finite values")


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    check_run(sys.argv[1])
    if len(sys.argv) > 2:
        check_demo(sys.argv[2])
    if FAILURES:
        for f in FAILURES:
            print(f"FAIL {f}")
        sys.exit(1)
    print("readback: all checks passed")


if __name__ == "__main__":
    main()
