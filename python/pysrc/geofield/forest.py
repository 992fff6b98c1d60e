"""Forest dynamics: the seed paper's yearly loop (seed production, dispersal, establishment,
growth, mortality) from a stem map and a species file, or from a SORTIE-ND parameter file, as
``geofield forest`` runs it."""

from __future__ import annotations

import json
import operator
import os

import numpy as np

from . import _arrays, _native, _progress, _xr
from ._errors import GeofieldIOError, GeofieldValueError
from .dispersal import _column, species_toml

__all__ = ["simulate"]

_COUNT_COLUMNS = ("year", "replicate", "species", "seeds", "seedlings", "saplings", "adults",
                  "recruits", "basal_area_m2_ha", "method")
_INT_COLUMNS = ("year", "replicate", "seeds", "seedlings", "saplings", "adults", "recruits")


class ArrayDict(dict):
    """A dict of numpy arrays whose ``==`` is one bool (all keys and arrays equal): pandas
    compares ``DataFrame.attrs`` when concatenating frames, which a plain dict of arrays
    breaks."""

    def __eq__(self, other):
        return (isinstance(other, dict) and self.keys() == other.keys()
                and all(np.array_equal(self[k], other[k]) for k in self))

    def __ne__(self, other):
        return not self == other

    __hash__ = None


def _require_pandas():
    try:
        import pandas  # noqa: PLC0415 - optional dependency
    except ImportError as e:
        raise ImportError("geofield.forest.simulate returns a pandas.DataFrame: install pandas "
                          "(pip install pandas), or geofield[xarray]") from e
    return pandas


def _toml_value(where: str, v) -> str:
    """``v`` as a TOML value: numbers, text, booleans, lists and (nested) inline tables."""
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v)  # a TOML basic string
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        return repr(float(v))
    if isinstance(v, dict):
        inner = ", ".join(f"{json.dumps(str(k))} = {_toml_value(f'{where}.{k}', x)}"
                          for k, x in v.items())
        return "{" + inner + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(where, x) for x in v) + "]"
    raise GeofieldValueError(f"{where} = {v!r} is not a number, text, boolean, list or table")


def _species_text(species) -> tuple[str, str]:
    """(TOML text, its source for messages) of ``species``: a path, TOML text, a dict
    ``{name: {parameters}}`` or a list of dicts with ``name``; parameters may hold the
    ``forest`` table as a dict."""
    if isinstance(species, str) and ("\n" in species or species.lstrip().startswith("[")):
        return species, "<species argument>"
    if isinstance(species, (str, os.PathLike)):
        return species_toml(species)
    if isinstance(species, dict):
        items = []
        for name, params in species.items():
            if not isinstance(params, dict):
                raise GeofieldValueError(f"species {name!r}: expected a dict of parameters")
            items.append({"name": name, **params})
    elif isinstance(species, (list, tuple)):
        items = list(species)
    else:
        raise GeofieldValueError("species: expected a path to a TOML file, TOML text, a dict "
                                 "{name: parameters} or a list of dicts")
    lines = []
    for i, sp in enumerate(items):
        if not isinstance(sp, dict) or "name" not in sp:
            raise GeofieldValueError(f"species[{i}]: expected a dict with a 'name'")
        lines.append("[[species]]")
        label = f"species {str(sp['name'])!r}"
        for k, v in sp.items():
            lines.append(f"{json.dumps(str(k))} = {_toml_value(f'{label}: {k}', v)}")
    return "\n".join(lines) + "\n", "<species argument>"


def _sortie_text(sortie) -> tuple[str, str]:
    """(XML text, its source for messages) of ``sortie``: a path or the XML itself."""
    if isinstance(sortie, str) and sortie.lstrip().startswith("<"):
        return sortie, "<sortie argument>"
    if isinstance(sortie, (str, os.PathLike)):
        path = os.fspath(sortie)
        try:
            with open(path, encoding="utf-8") as f:
                return f.read(), path
        except OSError as e:
            raise GeofieldIOError(f"sortie: cannot read {path}: {e.strerror}") from None
    raise GeofieldValueError("sortie: expected a path to a SORTIE-ND parameter file or its XML")


def _trees(trees, names_of):
    """(x, y, dbh, species index) of the stem map; ``names_of()`` gives the species names."""
    x = _arrays.floats("trees.x_m", _column(trees, "x_m"), allow_empty=True)
    y = _arrays.floats("trees.y_m", _column(trees, "y_m"), allow_empty=True)
    dbh = _arrays.floats("trees.dbh_cm", _column(trees, "dbh_cm"), allow_empty=True)
    sp_col = np.asarray(_column(trees, "species"))
    _arrays.same_length(**{"trees.x_m": x, "trees.y_m": y, "trees.dbh_cm": dbh,
                           "trees.species": sp_col})
    return x, y, dbh, _arrays.species_index(sp_col, names_of())


def _int(name: str, v, low: int | None = None, high: int | None = None):
    if v is None:
        return None
    try:
        if isinstance(v, (bool, np.bool_)):
            raise TypeError
        i = operator.index(v)
    except TypeError:
        raise GeofieldValueError(f"{name}: expected an integer, got {v!r}") from None
    if (low is not None and i < low) or (high is not None and i > high):
        raise GeofieldValueError(f"{name}: must be between {low} and {high}, got {i}")
    return i


def _float(name: str, v):
    if v is None:
        return None
    try:
        return float(v)
    except (TypeError, ValueError):
        raise GeofieldValueError(f"{name}: expected a number, got {v!r}") from None


def _extent(extent):
    if extent is None:
        return None
    try:
        ext = tuple(float(v) for v in extent)
    except (TypeError, ValueError):
        raise GeofieldValueError(
            f"extent: expected (x_min, y_min, x_max, y_max), got {extent!r}") from None
    if len(ext) != 4:
        raise GeofieldValueError(f"extent: expected (x_min, y_min, x_max, y_max), got {extent!r}")
    return ext


def _compare(compare):
    if compare is None:
        return None
    if isinstance(compare, str):
        compare = [c.strip() for c in compare.split(",")]
    try:
        return [str(c) for c in compare]
    except TypeError:
        raise GeofieldValueError(
            f"compare: expected two method names, e.g. ('exact', 'multires'), got {compare!r}"
        ) from None


def _suitability_path(s):
    """The raster file of ``suitability``, if it names one."""
    if isinstance(s, (str, os.PathLike)):
        return os.fspath(s)
    return None


def _suitability_values(s):
    """``suitability`` as a flat float64 array (row 0 north), unless it is a file or None."""
    if s is None or isinstance(s, (str, os.PathLike)):
        return None
    a = np.asarray(getattr(s, "values", s), dtype=np.float64)
    if a.ndim != 2:
        raise GeofieldValueError(f"suitability: expected a (rows, cols) array, got shape {a.shape}")
    return np.ascontiguousarray(a).ravel()


def simulate(trees=None, species=None, extent=None, cell_size_m=1.0, years=None, seed=None,
             dispersal="expected", method="auto", tolerance=1e-6, replicates=1, compare=None,
             torus=False, backend="auto", precision="auto", density_cell_m=None, crs=None,
             sortie=None, ignore_unsupported=False, suitability=None, progress=False):
    """Run the forest year by year: counts per year, species and replicate, and the seed and
    seedling density maps, as ``geofield forest`` computes them (the same defaults and numbers
    as its ``--counts`` and ``--density`` files).

    Each year, per species: seed production (STR (DBH/30)^β, masting), dispersal (canopy or gap
    kernel), establishment, growth, mortality and stage transitions. Year 0 is the initial stand;
    years 1 .. ``years`` are simulated.

    Parameters
    ----------
    trees : pandas.DataFrame or dict of arrays, optional
        The initial stem map: ``x_m``, ``y_m`` (metres; or ``x``, ``y``), ``dbh_cm`` (or
        ``dbh``) and ``species`` (names of the run's species, matched exactly, else ignoring
        case, or integer indices into them). Trees outside ``extent`` are kept. Required with
        ``species``; with ``sortie`` it replaces the file's tree map.
    species : str, path, dict or list of dicts, optional
        The species file of ``geofield forest``: a path to the TOML file, its text, or its
        content as ``{name: {"kernel": "weibull", "d": ..., "forest": {...}}}`` (the dispersal
        keys of :func:`geofield.disperse` plus an optional ``forest`` table: establishment,
        stage DBHs, seed distribution, gap kernel, growth, mortality, masting, rain). The
        run-wide ``[forest]`` table (``max_gap_density``, ``gap_cell_m``, ``torus``) needs the
        file or its text. Give this or ``sortie``.
    extent : (x_min, y_min, x_max, y_max), optional
        The plot in metres, a whole number of cells wide and high. Required with ``species``;
        with ``sortie`` the file's plot (from 0, 0) by default.
    cell_size_m : float
        Cell size of the seed grid in metres.
    years : int, optional
        Years to simulate, 1 to 100000 (default: the SORTIE-ND file's timesteps × years per
        timestep, else 30).
    seed : int, optional
        Random seed, 0 to 2**64 - 1 (default: the SORTIE-ND file's, else 1). The same seed gives
        the same run on any thread count.
    dispersal : {"expected", "per-seed"}
        ``expected``: each species' expected seed map (any ``method``, on the GPU when there is
        one), then random counts per cell by its seed distribution; ``per-seed``: every seed
        drawn and placed (SORTIE-ND's spatial disperse; the CPU).
    method : {"auto", "exact", "multires", "cutoff", "nearfar"}
        Dispersal method of the expected maps (see :func:`geofield.disperse`); ``auto`` is
        replaced in the counts' ``method`` column by the method(s) it chose.
    tolerance : float
        The cutoff's and near/far's bound, relative to each map's maximum, in (0, 1).
    replicates : int
        Independent replicates, 1 to 100000 (replicate 0 runs with ``seed``, the others with
        seeds derived from it).
    compare : (str, str) or str, optional
        Two different methods, the reference first (e.g. ``("exact", "multires")`` or
        ``"exact,multires"``), run on the
        same random streams (expected dispersal only); the counts hold both, and
        ``counts.attrs["recruit_difference"]`` the per-year relative difference of the recruits
        (the seed paper's Fig. 13). Replaces ``method``.
    torus : bool
        Seeds leaving the plot re-enter on the other side. On when the species file's
        ``[forest]`` table says so, and for SORTIE-ND files (their plots are tori); ``True``
        forces it on.
    backend : {"auto", "cpu", "cuda", "cuda:N"}
    precision : {"auto", "float32", "float64"}
        Precision of the expected maps. ``auto`` is float32, ``geofield forest``'s default (the
        GPU computes only float32).
    density_cell_m : float, optional
        Cell of the density maps in metres, a whole multiple of ``cell_size_m`` (default: the
        cell size). Blocks start at the plot's north-west corner; a partial block at the east or
        south edge holds the density over its real area.
    crs : int, str or CRS, optional
        CRS of the coordinates (see :func:`geofield.disperse`), written as the densities' CF
        ``spatial_ref``.
    sortie : str or path, optional
        A SORTIE-ND parameter file (XML), or its text: plot, years, seed, species, tree map and
        the dispersal, establishment, growth and mortality behaviours geofield models. How each
        maps is listed in ``counts.attrs["mapping"]``. Give this or ``species``.
    ignore_unsupported : bool
        Run a SORTIE-ND file whose behaviours geofield does not model without them (they are
        listed in ``counts.attrs["mapping"]``); without it such a file is refused.
    suitability : array-like, xarray.DataArray, str or path, optional
        Establishment suitability on the seed grid: a (rows, cols) array (row 0 north) or a
        raster file (GeoTIFF, ESRI ASCII) on the same grid; values in [0, 1] multiply every
        species' establishment probability, NaN (nodata) counts as 0.
    progress : bool or callable
        Show a progress bar of the years done (tqdm if installed, else a text bar on stderr), or
        call ``progress(fraction)``.

    Returns
    -------
    counts : pandas.DataFrame
        One row per year, replicate, species and method (the CLI's ``counts.csv``): ``year``,
        ``replicate``, ``species``, ``seeds`` (landed on the plot that year), ``seedlings``,
        ``saplings``, ``adults`` (standing at the end of the year), ``recruits`` (new seedlings
        that year), ``basal_area_m2_ha`` and ``method``. ``counts.attrs`` holds ``backend``,
        ``dispersal``, ``methods``, ``years``, ``seed``, ``replicates``, ``torus``, ``extent``,
        ``timing`` (seconds per phase), ``mapping`` (the SORTIE-ND file's mapping and what was
        left out; empty otherwise), ``final_trees`` (the final stand of replicate 0 of the first
        method: numpy arrays ``x_m``, ``y_m``, ``dbh_cm`` and ``species`` names) and, with
        ``compare``, ``recruit_difference`` (a list, per year from 1; NaN where the reference
        has no recruits).
    density : xarray.Dataset
        ``seed_density`` (seeds landed per m², 0 in year 0) and ``seedling_density``
        (seedlings standing at the end of the year per m²), float32 (time, species, y, x), of
        replicate 0 of the first method; ``time`` is the year (0 ..), ``species`` the names,
        ``x``/``y`` cell centres (``y`` decreasing, row 0 north).

    Interruptible: Ctrl-C raises ``KeyboardInterrupt`` within a fraction of a second.
    """
    pd = _require_pandas()
    xr = _xr.require_xarray("geofield.forest.simulate")
    if species is not None and sortie is not None:
        raise GeofieldValueError(
            "sortie: give species or sortie, not both (a SORTIE-ND file carries its species)")
    species_text = sortie_text = None
    if sortie is not None:
        sortie_text, source = _sortie_text(sortie)
    elif species is not None:
        species_text, source = _species_text(species)
    else:
        raise GeofieldValueError(
            "species: give a species file (a path, TOML text or a dict), or sortie=")

    def names_of():
        return list(_native.forest_species_names(species_text, sortie_text, source,
                                                 bool(ignore_unsupported)))

    tree_arrays = None if trees is None else _trees(trees, names_of)
    with _progress.bar(progress, "forest") as bar:
        r = _native.forest(
            trees=tree_arrays, species_toml=species_text, sortie_xml=sortie_text,
            source_name=source, ignore_unsupported=bool(ignore_unsupported),
            extent=_extent(extent), cell_size_m=_float("cell_size_m", cell_size_m),
            years=_int("years", years), seed=_int("seed", seed, 0, 2**64 - 1),
            dispersal=str(dispersal), method_name=str(method),
            tolerance=_float("tolerance", tolerance), replicates=_int("replicates", replicates),
            compare=_compare(compare), torus=bool(torus), precision_name=str(precision),
            backend=str(backend), density_cell_m=_float("density_cell_m", density_cell_m),
            suitability=_suitability_values(suitability),
            suitability_path=_suitability_path(suitability),
            progress=bar)
    names = list(r["names"])
    counts = pd.DataFrame({c: r[c] for c in _COUNT_COLUMNS})
    for c in _INT_COLUMNS:
        counts[c] = counts[c].astype(np.int64)
    fin = r.get("final_trees")
    final_trees = ArrayDict()
    if fin is not None:
        final_trees.update(x_m=fin["x_m"], y_m=fin["y_m"], dbh_cm=fin["dbh_cm"],
                           species=np.asarray(names, dtype=object)[fin["species"]])
    counts.attrs.update(
        backend=r["backend"], dispersal=r["mode"], methods=list(r["methods"]), years=r["years"],
        seed=r["seed"], replicates=r["replicates"], torus=r["torus"], extent=tuple(r["extent"]),
        timing=dict(r["timing"]), mapping=list(r["notes"]), final_trees=final_trees)
    if "recruit_difference" in r:
        counts.attrs["recruit_difference"] = [float(v) for v in r["recruit_difference"]]
    ds = _density(xr, r, names, crs)
    return counts, ds


def _density(xr, r, names, crs):
    """The densities as a Dataset with (time, species, y, x), x/y cell centres and CF
    ``spatial_ref``."""
    grid = r["density_grid"]
    x, y = _xr.coords(grid)
    ref = _xr.spatial_ref(crs)
    gm = {"grid_mapping": "spatial_ref"} if ref else {}
    dims = ("time", "species", "y", "x")
    data_vars = {
        "seed_density": (dims, r["seed_density"], {
            "units": "m-2", "long_name": "seeds landed that year per m2", **gm}),
        "seedling_density": (dims, r["seedling_density"], {
            "units": "m-2", "long_name": "seedlings at the end of the year per m2", **gm}),
    }
    coords = {
        "time": ("time", np.asarray(r["time"], dtype=np.int64),
                 {"long_name": "simulation year (0: the initial stand)", "units": "1"}),
        "species": ("species", np.asarray(names, dtype=object), {"long_name": "species"}),
        "x": ("x", x, {"units": "m", "standard_name": "projection_x_coordinate",
                       "long_name": "x coordinate of cell centre", "axis": "X"}),
        "y": ("y", y, {"units": "m", "standard_name": "projection_y_coordinate",
                       "long_name": "y coordinate of cell centre", "axis": "Y"}),
    }
    if ref:
        coords["spatial_ref"] = ((), np.int32(0), ref)
    attrs = {"title": "seed and seedling densities", "source": "geofield.forest.simulate",
             "Conventions": "CF-1.8", "backend": r["backend"], "dispersal": r["mode"],
             "method": r["methods"][0] if r["methods"] else "", "replicate": 0,
             "seed": r["seed"], "cell_size_m": float(grid[2])}
    return xr.Dataset(data_vars, coords=coords, attrs=attrs)
