"""Seed dispersal: seed density maps of a forest from a stem map (SORTIE-ND-style kernels)."""

from __future__ import annotations

import json
import os

import numpy as np

from . import _arrays, _native, _progress, _xr
from ._errors import GeofieldValueError

_COLUMNS = {"x_m": ("x_m", "x"), "y_m": ("y_m", "y"), "dbh_cm": ("dbh_cm", "dbh"),
            "species": ("species",)}


def _column(trees, key):
    for name in _COLUMNS[key]:
        try:
            return trees[name]
        except (KeyError, IndexError, TypeError, ValueError):
            continue
    raise GeofieldValueError(
        f"trees: no column {' or '.join(repr(c) for c in _COLUMNS[key])} "
        f"(give a pandas DataFrame or a dict of arrays with x_m, y_m, dbh_cm, species)")


def _toml_value(species: str, key: str, v) -> str:
    if isinstance(v, bool):
        raise GeofieldValueError(f"species {species!r}: {key} = {v!r} is not a number or text")
    if isinstance(v, str):
        return json.dumps(v)  # a TOML basic string
    if isinstance(v, (int, float, np.integer, np.floating)):
        return repr(float(v))
    raise GeofieldValueError(f"species {species!r}: {key} = {v!r} is not a number or text")


def species_toml(species) -> tuple[str, str]:
    """(TOML text, its source for messages) of ``species``: a path to a species TOML file, a dict
    ``{name: {kernel: ..., ...}}`` or a list of dicts with ``name`` (the keys of the species file:
    see ``geofield disperse --help``)."""
    if isinstance(species, (str, os.PathLike)):
        path = os.fspath(species)
        try:
            with open(path, encoding="utf-8") as f:
                return f.read(), path
        except OSError as e:
            from ._errors import GeofieldIOError
            raise GeofieldIOError(f"species: cannot read {path}: {e.strerror}") from None
    if isinstance(species, dict):
        items = []
        for name, params in species.items():
            if not isinstance(params, dict):
                raise GeofieldValueError(f"species {name!r}: expected a dict of parameters")
            items.append({"name": name, **params})
    elif isinstance(species, (list, tuple)):
        items = list(species)
    else:
        raise GeofieldValueError(
            "species: expected a path to a TOML file, a dict {name: parameters} or a list of dicts")
    lines = []
    for i, sp in enumerate(items):
        if not isinstance(sp, dict) or "name" not in sp:
            raise GeofieldValueError(f"species[{i}]: expected a dict with a 'name'")
        lines.append("[[species]]")
        for k, v in sp.items():
            lines.append(f"{k} = {_toml_value(str(sp['name']), k, v)}")
    return "\n".join(lines) + "\n", "<species argument>"


def _species_names(toml_text: str, source: str) -> list[str]:
    # The library parses (and checks) the file; it returns the names in order through an empty
    # call, so the rule of what a species file is lives in one place.
    return list(_native.species_names(toml_text, source))


def disperse(trees, species, extent, cell_size_m, method="auto", tolerance=1e-6, torus=False,
             backend="auto", precision="auto", crs=None, progress=False):
    """Seed density maps (seeds m⁻² yr⁻¹), one per species, as an ``xarray.Dataset``.

    Parameters
    ----------
    trees : pandas.DataFrame or dict of arrays
        The stem map: ``x_m``, ``y_m`` (metres; or ``x``, ``y``), ``dbh_cm`` (or ``dbh``) and
        ``species`` (names from ``species``, or integer indices into it). Trees outside
        ``extent`` are kept: their seeds fly in.
    species : str, path, dict or list of dicts
        A species TOML file, or its content as ``{name: {"kernel": "weibull", "d": ..., ...}}``.
    extent : (x_min, y_min, x_max, y_max)
        The map's extent in metres, a whole number of cells wide and high.
    cell_size_m : float
        Cell size in metres.
    method : {"auto", "exact", "multires", "cutoff", "nearfar"}
        ``exact`` sums every tree into every cell; ``cutoff`` neglects at most ``tolerance`` of
        each map's maximum; ``nearfar`` (any kernel, fat-tailed lognormal and 2Dt too) sums
        exactly within a radius and adds the far field from a lattice (FFT), with its error
        certified ≤ ``tolerance`` of each map's maximum; ``multires`` is the 2012 paper's
        method; ``auto`` picks the cheapest and says why in the report.
    tolerance : float
        The cutoff's and near/far's bound, relative to each map's maximum.
    torus : bool
        Periodic boundaries (seeds leaving one side enter the other).
    backend : {"auto", "cpu", "cuda", "cuda:N"}
    precision : {"auto", "float32", "float64"}
        ``auto`` is float64 on the CPU and float32 on the GPU (whose kernels compute in f32).
    crs : int, str or CRS, optional
        CRS of the coordinates: an EPSG code (e.g. ``26910`` or ``"EPSG:26910"``), or a CRS
        without one (WKT, or a pyproj/rasterio CRS), written as the CF ``spatial_ref`` so
        ``ds.rio.to_raster("seeds.tif")`` is georeferenced.
    progress : bool
        Show a progress bar (tqdm if installed, else a text bar on stderr) of the species done.

    Returns
    -------
    xarray.Dataset
        One (y, x) variable per species; ``x``/``y`` are cell centres (``y`` decreasing, row 0
        north); attrs hold the backend and each species' report (method used, trees, timing).

    Interruptible: Ctrl-C raises ``KeyboardInterrupt`` within a fraction of a second.
    """
    _xr.require_xarray("geofield.disperse")
    text, source = species_toml(species)
    names = _species_names(text, source)
    x = _arrays.floats("trees.x_m", _column(trees, "x_m"), allow_empty=True)
    y = _arrays.floats("trees.y_m", _column(trees, "y_m"), allow_empty=True)
    dbh = _arrays.floats("trees.dbh_cm", _column(trees, "dbh_cm"), allow_empty=True)
    sp_col = np.asarray(_column(trees, "species"))
    _arrays.same_length(**{"trees.x_m": x, "trees.y_m": y, "trees.dbh_cm": dbh,
                           "trees.species": sp_col})
    index = _arrays.species_index(sp_col, names, source)
    if bad := np.flatnonzero(dbh < 0).size:
        row = int(np.flatnonzero(dbh < 0)[0])
        raise GeofieldValueError(
            f"trees.dbh_cm: {dbh[row]} at row {row} is negative ({bad} trees); DBH must be >= 0")
    try:
        ext = tuple(float(v) for v in extent)
    except (TypeError, ValueError):
        raise GeofieldValueError(f"extent: expected (x_min, y_min, x_max, y_max), got {extent!r}") from None
    if len(ext) != 4:
        raise GeofieldValueError(f"extent: expected (x_min, y_min, x_max, y_max), got {extent!r}")
    with _progress.bar(progress, "dispersal") as bar:
        bands, band_names, reports, used, grid = _native.disperse(
            x, y, dbh, index, text, source, ext, float(cell_size_m), method, float(tolerance),
            bool(torus), precision, backend, progress=bar)
    reports = json.loads(reports)
    ds = _xr.grid_dataset(
        "geofield.disperse", bands, band_names, grid, crs=crs, units="seeds m-2 yr-1",
        long_names=[f"seed density of {n}" for n in band_names],
        attrs={"title": "seed density", "source": "geofield.disperse", "backend": used,
               "method": method, "cell_size_m": float(cell_size_m)})
    for name, rep in zip(band_names, reports):
        ds[name].attrs["method"] = rep.get("method", method)
        ds[name].attrs["trees_contributing"] = rep.get("trees_contributing", 0)
        ds[name].attrs["seconds"] = rep.get("seconds", float("nan"))
    ds.attrs["reports"] = json.dumps(reports)
    return ds
