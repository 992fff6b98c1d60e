#!/usr/bin/env python3
"""Reference values for geofield's kriging from the peer libraries PyKrige and GSTools.

Writes ``crates/geofield/tests/data/kriging_peers.json`` (or ``--out FILE``): predictions and
kriging variances of PyKrige 1.7.x and GSTools 1.7.x on two cases, for a list of configurations,
with the peers' mutual agreement, so that the Rust tests can check geofield against both.

How to run (a virtual environment outside the repository; a few seconds of CPU):

    python3 -m venv /tmp/peers
    /tmp/peers/bin/pip install pykrige==1.7.3 gstools==1.7.0 scikit-gstat==1.0.26
    MEUSE=$(bash scripts/fetch_meuse.sh /tmp/meuse-cache)     # or any meuse.txt of that sha256
    OMP_NUM_THREADS=1 /tmp/peers/bin/python scripts/kriging_peers.py --meuse "$MEUSE"

Without ``--meuse`` the file is taken from the installed scikit-gstat
(``skgstat/data/samples/meuse.txt``). ``--verify FILE`` re-checks a written JSON without running
the peers (the Meuse file is needed for the exactness check of that case). The run fails if the file's sha256 differs from
``MEUSE_SHA256`` below, or if any check (peers' agreement, exactness at the samples, distance
ties of the neighbour search) does not hold.

Cases
-----
meuse
    The Meuse data (R ``sp``; 155 samples; GPL, so the samples are NOT stored here: only the
    numbers we derive and the nodes we choose). File: scikit-gstat 1.0.26's
    ``skgstat/data/samples/meuse.txt``, a CSV with one header line
    (``"x","y","cadmium","copper","lead","zinc",...``) and 155 data rows; fields are separated by
    ``,``; x, y (RD metres) and zinc (ppm) are the 1st, 2nd and 6th fields, plain numbers. The
    variable is z = ln(zinc) (natural log). Sample i is the i-th data row (0-based). Nodes: the
    cell centres of a 40 x 40 grid over the samples' bounding box, then 5 sample locations.
synthetic
    Ours, stored in full: 60 samples uniform in [0, 1000]^2 (numpy default_rng(SYNTH_SEED), drawn
    one by one and rejected when closer than 10 m to an earlier one), z = sin(x/150) + cos(y/200)
    + 0.05 N(0, 1), stored at UTM-like coordinates (x + 5e5, y + 5.2e6) rounded to the millimetre.
    Nodes: the cell centres of a 30 x 30 grid over [0, 1000]^2 (same offsets), then 5 sample
    locations.

Parameter mapping (geofield's practical-range convention, see
crates/geofield/src/kriging/variogram.rs): model, partial sill c, practical range a, nugget c0.

| model       | PyKrige variogram_parameters                        | GSTools model (rescale default)        |
|-------------|----------------------------------------------------|----------------------------------------|
| exponential | {psill: c, range: a, nugget: c0}                    | Exponential(var=c, len_scale=a/3, nugget=c0) |
| spherical   | {psill: c, range: a, nugget: c0}                    | Spherical(var=c, len_scale=a, nugget=c0)     |
| gaussian    | {psill: c, range: 7a/(4 sqrt 3), nugget: c0}        | Gaussian(var=c, len_scale=a sqrt(pi/12), nugget=c0) |

PyKrige's variogram_parameters are passed as a dict with "psill": its LIST form for these
models is [TOTAL sill, range, nugget] (1.7.3 subtracts the nugget), not [psill, range, nugget].

Geometric anisotropy, geofield (azimuth_deg = direction of the major axis, degrees clockwise from
north; ratio = minor range / major range <= 1; the variogram's range is the major range):
PyKrige ``anisotropy_angle = 90 - azimuth_deg`` (degrees counter-clockwise from +x),
``anisotropy_scaling = 1 / ratio``; GSTools ``angles = radians(90 - azimuth_deg)``,
``anis = ratio``. Verified here: both peers and an independent numpy solve of geofield's
semantics agree under this mapping (and disagree by O(0.1) under the wrong ones; see the log).

Coordinates: the peers are called on world coordinates minus a round ``peer_offset`` (exact in
f64 here), which changes nothing mathematically: PyKrige adds its bounding-box centre back after
the anisotropy rotation, so its universal-kriging drift columns are ~5e6 at UTM coordinates and its
variances lose ~1e-9; GSTools never centres, and its default pinv of that system is off by O(0.1).
GSTools is called with pseudo_inv=False (a plain inverse). ``user_default_check`` records what
the untranslated default calls give.

Nugget: ``nugget_mode`` "exact" (default; PyKrige exact_values=True, GSTools exact=True): the
kriging honours the data, prediction = datum and variance 0 at a sample. "measurement-error"
(PyKrige exact_values=False, GSTools exact=False, cond_err='nugget'): the nugget is noise; the
right-hand side uses c*rho(d) also at d = 0, the matrix diagonal keeps c0 + c. Away from the
samples both modes are identical.

JSON schema
-----------
::

  {
    "schema_version": 1,
    "generator": "scripts/kriging_peers.py",
    "versions": {"python", "numpy", "scipy", "pykrige", "gstools"},
    "metrics": "<text: how max_abs and max_rel are computed>",
    "peer_tolerance": 1e-10,          # the generator fails if any check exceeds this (max_rel)
    "meuse" | "synthetic": {
      "description": str,
      # meuse only (the samples are not stored):
      "source": {"package": "scikit-gstat", "version": "1.0.26",
                 "path": "skgstat/data/samples/meuse.txt", "sha256": hex,
                 "parse": text, "n": 155, "z_sum": sum of z, "z_min", "z_max"},
      "column": "zinc", "transform": "ln",
      # synthetic only:
      "samples": {"x": [...], "y": [...], "z": [...], "seed": int, "generator": text,
                  "min_separation": metres},
      "peer_offset": [x0, y0],        # the peers were given world coordinates minus this
      "nodes": {"x": [...], "y": [...],                   # world coordinates, N nodes
                "grid": {"nx", "ny", "x0", "y0", "dx", "dy", "count", "order"},
                "sample_nodes": {"node_index": [...], "sample_index": [...]}},
      "configs": [
        {"name": str,                  # one configuration; each peer that ran it has an entry
         "kind": "ordinary" | "simple" | "universal",
         "mean": float | null,         # simple kriging's known mean
         "drift": "linear" | null,     # universal kriging's drift (1, x, y)
         "model": "exponential" | "spherical" | "gaussian",
         "sill": c, "range": a, "nugget": c0,   # geofield's parameters (partial sill!)
         "anisotropy": [azimuth_deg, ratio] | null,
         "neighbors": k | null,        # k nearest samples (anisotropy-corrected distance)
         "nugget_mode": "exact" | "measurement-error",
         "peer": "pykrige" | "gstools", "peer_version": str,
         "peer_call": str,             # the exact call, Python syntax
         "peer_params": {...},         # the mapped library parameters, machine-readable
         "prediction": [N floats], "variance": [N floats],   # kriging variance (sigma^2) as
                                       # the peer returns it: PyKrige's is not clamped (about
                                       # -1e-15 at samples), GSTools' is clamped at 0
         "agreement": {"other": "pykrige" | "gstools" | "gstools per node", "prediction_max_abs",
                       "prediction_max_rel", "variance_max_abs", "variance_max_rel"} | null,
         "reference_check": {same fields, against an independent numpy f64 solve of geofield's
                             semantics (scripts/kriging_peers.py: reference())},
         "backend_check": {"C": {...}, "loop": {...}} | absent (pykrige only: its other backends
                           against the stored one),
         "user_default_check": {...} | absent  # the stored values against the same peer called
                           # on the world coordinates (not translated by peer_offset) and, for
                           # GSTools, with its default pseudo_inv=True: what a user would get
         "exactness": {"prediction_max_abs", "variance_max_abs"} | null   # at the sample nodes:
                       # |prediction - datum|, |variance|; exact mode only
         "tie_margin": float | absent  # local only: min over nodes of (d_(k+1) - d_k) / d_(k+1)
        }, ...]
    }
  }
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import math
import os
import platform
import sys
from pathlib import Path

import numpy as np
import scipy
import scipy.linalg
from scipy.spatial import cKDTree

MEUSE_SHA256 = "b27776bc1cad63c4bf308923c86a5a76a0a02566ac75984b018df2a477b52f64"
SKGSTAT_VERSION = "1.0.26"
SYNTH_SEED = 20240611
# The peers get world coordinates minus these (exact in f64 for both cases): PyKrige adds its
# bounding-box centre back after the anisotropy rotation, so its UK drift columns are ~5e6 and
# its variances lose ~1e-9; GSTools never centres, and its pinv of the UK system at UTM
# coordinates is wrong by O(0.1). Translated, every peer agrees with a 40-digit solve to ~1e-14.
MEUSE_OFFSET = (180000.0, 331000.0)
SYNTH_OFFSET = (500000.0, 5200000.0)
REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "crates/geofield/tests/data/kriging_peers.json"

# A configuration is rejected if the two peers differ by more than this (relative, see metrics).
PEER_TOL = 1e-10
METRICS = (
    "max_abs = max_i |a_i - b_i|; max_rel = max_i |a_i - b_i| / max(|a_i|, |b_i|, s), "
    "s = std(z) (population std of the case's sample values) for predictions and s = sill + "
    "nugget for variances: relative to the value, or to the data scale where the value is "
    "smaller (variances ~1e-16 at samples, predictions crossing 0)"
)


# ---------------------------------------------------------------------------------------------
# Parameter mapping


def pykrige_params(model: str, c: float, a: float, c0: float) -> dict:
    """PyKrige's variogram_parameters for geofield's (model, c, a, c0), in the dict form.

    Beware: PyKrige 1.7.3's LIST form for these models is [sill, range, nugget] with the TOTAL
    sill (core._make_variogram_parameter_list subtracts the nugget: psill = l[0] - l[2]); only its
    internal list is [psill, range, nugget]. The dict with "psill" says what it means.
    """
    if model in ("exponential", "spherical"):
        rng = a
    elif model == "gaussian":
        rng = 7.0 * a / (4.0 * math.sqrt(3.0))
    else:
        raise ValueError(model)
    return {"psill": c, "range": rng, "nugget": c0}


def gstools_len_scale(model: str, a: float) -> float:
    if model == "exponential":
        return a / 3.0
    if model == "spherical":
        return a
    if model == "gaussian":
        return a * math.sqrt(math.pi / 12.0)
    raise ValueError(model)


GS_CLASS = {"exponential": "Exponential", "spherical": "Spherical", "gaussian": "Gaussian"}


def pykrige_aniso(aniso):
    """(anisotropy_angle in degrees CCW from +x, anisotropy_scaling = major/minor)."""
    if aniso is None:
        return 0.0, 1.0
    az, ratio = aniso
    return 90.0 - az, 1.0 / ratio


def gstools_aniso(aniso):
    """(angles in radians CCW from +x, anis = minor/major)."""
    if aniso is None:
        return 0.0, 1.0
    az, ratio = aniso
    return math.radians(90.0 - az), ratio


# ---------------------------------------------------------------------------------------------
# Independent reference: geofield's semantics solved directly with numpy (LU, f64)


def covariance(model, c, a, c0, h, at_zero):
    """C(h) = c0 + c - gamma(h) for h > 0; `at_zero` at h == 0 (c0 + c exact, c noise)."""
    r = h / a
    if model == "exponential":
        rho = np.exp(-3.0 * r)
    elif model == "gaussian":
        rho = np.exp(-3.0 * r * r)
    elif model == "spherical":
        rho = np.where(r < 1.0, 1.0 - r * (1.5 - 0.5 * r * r), 0.0)
    else:
        raise ValueError(model)
    return np.where(h <= 1e-9, at_zero, c * rho)


def kriging_space(x, y, centre, aniso):
    dx, dy = np.asarray(x) - centre[0], np.asarray(y) - centre[1]
    if aniso is None:
        return dx, dy
    az, ratio = aniso
    s, co = math.sin(math.radians(az)), math.cos(math.radians(az))
    return s * dx + co * dy, (co * dx - s * dy) / ratio


def reference(sx, sy, sz, nx, ny, cfg):
    """Predictions and variances of geofield's semantics by a direct f64 solve."""
    model, c, a, c0 = cfg["model"], cfg["sill"], cfg["range"], cfg["nugget"]
    merr = cfg["nugget_mode"] == "measurement-error"
    centre = (float(np.mean(sx)), float(np.mean(sy)))
    su, sv = kriging_space(sx, sy, centre, cfg["anisotropy"])
    nu, nv = kriging_space(nx, ny, centre, cfg["anisotropy"])
    scale = max(np.abs(su).max(), np.abs(sv).max())
    kind = cfg["kind"]

    def drift(u, v):
        if kind == "simple":
            return np.zeros((0, len(u)))
        if kind == "ordinary":
            return np.ones((1, len(u)))
        return np.vstack([np.ones(len(u)), u / scale, v / scale])

    c_total = c0 + c
    k_zero = c if merr else c_total
    mean = cfg["mean"] if kind == "simple" else 0.0

    def solve(idx, u0, v0):
        pu, pv = su[idx], sv[idx]
        d = np.hypot(pu[:, None] - pu[None, :], pv[:, None] - pv[None, :])
        cmat = covariance(model, c, a, c0, d, c_total)
        f = drift(pu, pv)
        p = f.shape[0]
        n = len(idx)
        mat = np.zeros((n + p, n + p))
        mat[:n, :n] = cmat
        mat[:n, n:] = f.T
        mat[n:, :n] = f
        dn = np.hypot(pu[:, None] - u0[None, :], pv[:, None] - v0[None, :])
        rhs = np.vstack([covariance(model, c, a, c0, dn, k_zero), drift(u0, v0)])
        w = scipy.linalg.solve(mat, rhs)
        pred = mean + w[:n].T @ (sz[idx] - mean)
        var = c_total - np.sum(w * rhs, axis=0)
        return pred, np.maximum(var, 0.0)

    if cfg["neighbors"] is None:
        return solve(np.arange(len(sx)), nu, nv)
    k = cfg["neighbors"]
    _, nbr = cKDTree(np.c_[su, sv]).query(np.c_[nu, nv], k=k)
    pred = np.empty(len(nu))
    var = np.empty(len(nu))
    for j in range(len(nu)):
        pj, vj = solve(nbr[j], nu[j : j + 1], nv[j : j + 1])
        pred[j], var[j] = pj[0], vj[0]
    return pred, var


def tie_margin(sx, sy, nx, ny, k, aniso):
    """min over nodes of (d_(k+1) - d_k) / d_(k+1) in geofield's kriging space."""
    centre = (float(np.mean(sx)), float(np.mean(sy)))
    su, sv = kriging_space(sx, sy, centre, aniso)
    nu, nv = kriging_space(nx, ny, centre, aniso)
    d = np.hypot(nu[:, None] - su[None, :], nv[:, None] - sv[None, :])
    d.sort(axis=1)
    return float(np.min((d[:, k] - d[:, k - 1]) / d[:, k]))


# ---------------------------------------------------------------------------------------------
# Peers


def run_pykrige(sx, sy, sz, nx, ny, cfg, backend, offset=(0.0, 0.0)):
    """PyKrige on coordinates translated by -offset (exact in f64 for our data)."""
    from pykrige.ok import OrdinaryKriging
    from pykrige.uk import UniversalKriging

    params = pykrige_params(cfg["model"], cfg["sill"], cfg["range"], cfg["nugget"])
    angle, scaling = pykrige_aniso(cfg["anisotropy"])
    exact = cfg["nugget_mode"] == "exact"
    kw = dict(
        variogram_model=cfg["model"],
        variogram_parameters=params,
        anisotropy_scaling=scaling,
        anisotropy_angle=angle,
        exact_values=exact,
        pseudo_inv=False,
    )
    ox, oy = offset
    sx, sy, nx, ny = sx - ox, sy - oy, nx - ox, ny - oy
    if cfg["kind"] == "ordinary":
        ctor = "pykrige.ok.OrdinaryKriging"
        krig = OrdinaryKriging(sx, sy, sz, **kw)
    elif cfg["kind"] == "universal":
        ctor = "pykrige.uk.UniversalKriging"
        kw["drift_terms"] = ["regional_linear"]
        krig = UniversalKriging(sx, sy, sz, **kw)
    else:
        raise ValueError(cfg["kind"])
    ex = dict(backend=backend)
    if cfg["neighbors"] is not None:
        ex["n_closest_points"] = cfg["neighbors"]
    pred, var = krig.execute("points", nx, ny, **ex)
    args = ", ".join(f"{key}={val!r}" for key, val in kw.items())
    exargs = ", ".join(f"{key}={val!r}" for key, val in ex.items())
    call = (
        f"{ctor}(x - {ox!r}, y - {oy!r}, z, {args}).execute('points', nodes_x - {ox!r}, "
        f"nodes_y - {oy!r}, {exargs}) -> (prediction, variance)"
    )
    peer_params = dict(kw, **ex)
    return np.asarray(pred, float), np.asarray(var, float), call, peer_params


def gstools_model(cfg):
    import gstools as gs

    angles, anis = gstools_aniso(cfg["anisotropy"])
    kw = dict(
        dim=2,
        var=cfg["sill"],
        len_scale=gstools_len_scale(cfg["model"], cfg["range"]),
        nugget=cfg["nugget"],
        anis=anis,
        angles=angles,
    )
    cls = GS_CLASS[cfg["model"]]
    return getattr(gs, cls)(**kw), f"gstools.{cls}(" + ", ".join(
        f"{key}={val!r}" for key, val in kw.items()
    ) + ")", dict(kw, model_class=cls)


def run_gstools(sx, sy, sz, nx, ny, cfg, offset=(0.0, 0.0), pseudo_inv=False):
    """GSTools on coordinates translated by -offset (exact in f64 for our data)."""
    import gstools as gs

    model, model_call, mparams = gstools_model(cfg)
    exact = cfg["nugget_mode"] == "exact"
    kw = dict(exact=exact, cond_err="nugget", pseudo_inv=pseudo_inv)
    ox, oy = offset
    sx, sy, nx, ny = sx - ox, sy - oy, nx - ox, ny - oy
    if cfg["kind"] == "ordinary":
        ctor = "gstools.krige.Ordinary"
        krig = gs.krige.Ordinary(model, [sx, sy], sz, **kw)
        extra = ""
    elif cfg["kind"] == "simple":
        ctor = "gstools.krige.Simple"
        krig = gs.krige.Simple(model, [sx, sy], sz, mean=cfg["mean"], **kw)
        extra = f"mean={cfg['mean']!r}, "
    elif cfg["kind"] == "universal":
        ctor = "gstools.krige.Universal"
        krig = gs.krige.Universal(model, [sx, sy], sz, drift_functions="linear", **kw)
        extra = "drift_functions='linear', "
    else:
        raise ValueError(cfg["kind"])
    pred, var = krig((nx, ny), mesh_type="unstructured", return_var=True)
    args = ", ".join(f"{key}={val!r}" for key, val in kw.items())
    call = (
        f"{ctor}({model_call}, cond_pos=[x - {ox!r}, y - {oy!r}], cond_val=z, {extra}{args})"
        f"((nodes_x - {ox!r}, nodes_y - {oy!r}), mesh_type='unstructured', return_var=True)"
        " -> (prediction, variance)"
    )
    peer_params = dict(kw, model=mparams)
    if cfg["kind"] == "simple":
        peer_params["mean"] = cfg["mean"]
    if cfg["kind"] == "universal":
        peer_params["drift_functions"] = "linear"
    return np.asarray(pred, float), np.asarray(var, float), call, peer_params


def run_gstools_local(sx, sy, sz, nx, ny, cfg, offset):
    """GSTools has no neighbourhood: one krige.Ordinary per node on its k nearest samples (found
    with scipy's cKDTree in geofield's kriging space). A check of PyKrige's local kriging."""
    model, _, _ = gstools_model(cfg)
    import gstools as gs

    k = cfg["neighbors"]
    centre = (float(np.mean(sx)), float(np.mean(sy)))
    su, sv = kriging_space(sx, sy, centre, cfg["anisotropy"])
    nu, nv = kriging_space(nx, ny, centre, cfg["anisotropy"])
    _, nbr = cKDTree(np.c_[su, sv]).query(np.c_[nu, nv], k=k)
    exact = cfg["nugget_mode"] == "exact"
    pred = np.empty(len(nx))
    var = np.empty(len(nx))
    ox, oy = offset
    for j in range(len(nx)):
        idx = nbr[j]
        krig = gs.krige.Ordinary(model, [sx[idx] - ox, sy[idx] - oy], sz[idx], exact=exact,
                                 pseudo_inv=False)
        p, v = krig(([nx[j] - ox], [ny[j] - oy]), mesh_type="unstructured", return_var=True)
        pred[j], var[j] = p[0], v[0]
    return pred, var


# ---------------------------------------------------------------------------------------------


def diff(a, b, pscale, vscale):
    (pa, va), (pb, vb) = a, b

    def one(x, y, s):
        d = np.abs(x - y)
        den = np.maximum(np.maximum(np.abs(x), np.abs(y)), s)
        return float(d.max()), float((d / den).max())

    pm, pr = one(pa, pb, pscale)
    vm, vr = one(va, vb, vscale)
    return {
        "prediction_max_abs": pm,
        "prediction_max_rel": pr,
        "variance_max_abs": vm,
        "variance_max_rel": vr,
    }


def make_config(name, kind="ordinary", model="exponential", sill=1.0, rng=300.0, nugget=0.0,
                mean=None, drift=None, anisotropy=None, neighbors=None, nugget_mode="exact"):
    return {
        "name": name,
        "kind": kind,
        "mean": mean,
        "drift": drift,
        "model": model,
        "sill": sill,
        "range": rng,
        "nugget": nugget,
        "anisotropy": anisotropy,
        "neighbors": neighbors,
        "nugget_mode": nugget_mode,
    }


def config_list(zmean, c, a_exp, a_sph, a_gau, a_gau_nug, aniso, tag):
    """The configurations of one case; c = a total sill near the data variance."""
    cn, c0 = round(0.92 * c, 6), round(0.08 * c, 6)
    L = [
        make_config("ok_exponential", model="exponential", sill=c, rng=a_exp),
        make_config("ok_exponential_nugget", model="exponential", sill=cn, rng=a_exp, nugget=c0),
        make_config("ok_spherical", model="spherical", sill=c, rng=a_sph),
        make_config("ok_spherical_nugget", model="spherical", sill=cn, rng=a_sph, nugget=c0),
        make_config("ok_gaussian", model="gaussian", sill=c, rng=a_gau),
        make_config("ok_gaussian_nugget", model="gaussian", sill=cn, rng=a_gau_nug, nugget=c0),
        make_config("ok_exponential_nugget_measurement_error", model="exponential", sill=cn,
                    rng=a_exp, nugget=c0, nugget_mode="measurement-error"),
        make_config("sk_exponential", kind="simple", mean=zmean, model="exponential", sill=c,
                    rng=a_exp),
        make_config("sk_spherical_nugget", kind="simple", mean=zmean, model="spherical",
                    sill=cn, rng=a_sph, nugget=c0),
        make_config("uk_linear_exponential", kind="universal", drift="linear",
                    model="exponential", sill=cn, rng=a_exp, nugget=c0),
        make_config("uk_linear_spherical_anisotropic", kind="universal", drift="linear",
                    model="spherical", sill=c, rng=a_sph, anisotropy=aniso),
        make_config("ok_exponential_anisotropic", model="exponential", sill=cn, rng=a_exp,
                    nugget=c0, anisotropy=aniso),
        make_config("ok_gaussian_anisotropic", model="gaussian", sill=cn, rng=a_gau_nug,
                    nugget=c0, anisotropy=aniso),
        make_config("local20_ok_exponential", model="exponential", sill=c, rng=a_exp,
                    neighbors=20),
        make_config("local20_ok_spherical_nugget_anisotropic", model="spherical", sill=cn,
                    rng=a_sph, nugget=c0, anisotropy=aniso, neighbors=20),
    ]
    return L


def run_case(case, sx, sy, sz, nx, ny, sample_nodes, configs, offset, log):
    """Runs every configuration with every peer that supports it; checks and returns entries."""
    pscale = float(np.std(sz))
    out = []
    failures = []
    for cfg in configs:
        vscale = cfg["sill"] + cfg["nugget"]
        ref = reference(sx, sy, sz, nx, ny, cfg)
        results = {}
        extra = {}
        if cfg["kind"] in ("ordinary", "universal"):
            backend = "loop" if cfg["neighbors"] is not None else "vectorized"
            p, v, call, pp = run_pykrige(sx, sy, sz, nx, ny, cfg, backend, offset)
            results["pykrige"] = (p, v, call, pp)
            pr, vr, _, _ = run_pykrige(sx, sy, sz, nx, ny, cfg, backend)
            extra["pykrige"] = {"user_default_check": diff((p, v), (pr, vr), pscale, vscale)}
            checks = {}
            if cfg["kind"] == "universal":
                others = ["loop"]  # UniversalKriging has no C backend
            elif cfg["neighbors"] is not None:
                others = ["C"]
            else:
                others = ["C", "loop"]
            for b in others:
                pb, vb, _, _ = run_pykrige(sx, sy, sz, nx, ny, cfg, b, offset)
                checks[b] = diff((p, v), (pb, vb), pscale, vscale)
            extra["pykrige"]["backend_check"] = checks
        if cfg["neighbors"] is None:
            p, v, call, pp = run_gstools(sx, sy, sz, nx, ny, cfg, offset)
            results["gstools"] = (p, v, call, pp)
            pr, vr, _, _ = run_gstools(sx, sy, sz, nx, ny, cfg, pseudo_inv=True)
            extra["gstools"] = {"user_default_check": diff((p, v), (pr, vr), pscale, vscale)}
            other = {"pykrige": "gstools", "gstools": "pykrige"}
            check_pair = ("pykrige", "gstools") if "pykrige" in results else None
        else:
            p, v = run_gstools_local(sx, sy, sz, nx, ny, cfg, offset)
            check_pair = None
            local_check = diff(results["pykrige"][:2], (p, v), pscale, vscale)
            extra["pykrige"]["agreement"] = dict(other="gstools per node", **local_check)
            margin = tie_margin(sx, sy, nx, ny, cfg["neighbors"], cfg["anisotropy"])
            extra["pykrige"]["tie_margin"] = margin
            if margin < 1e-6:
                failures.append(f"{case}/{cfg['name']}: distance tie margin {margin:.3g}")
        agreement = None
        if check_pair:
            agreement = diff(results["pykrige"][:2], results["gstools"][:2], pscale, vscale)
        for peer, (p, v, call, pp) in results.items():
            e = dict(cfg)
            e["peer"] = peer
            e["peer_version"] = PEER_VERSIONS[peer]
            e["peer_call"] = call
            e["peer_params"] = pp
            e["prediction"] = p.tolist()
            e["variance"] = v.tolist()
            if check_pair:
                e["agreement"] = dict(other=other[peer], **agreement)
            else:
                e["agreement"] = extra.get(peer, {}).get("agreement")
            e["reference_check"] = diff((p, v), ref, pscale, vscale)
            if peer in extra:
                for key in ("backend_check", "user_default_check", "tie_margin"):
                    if key in extra[peer]:
                        e[key] = extra[peer][key]
            if cfg["nugget_mode"] == "exact":
                ni, si = sample_nodes["node_index"], sample_nodes["sample_index"]
                e["exactness"] = {
                    "prediction_max_abs": float(np.abs(p[ni] - sz[si]).max()),
                    "variance_max_abs": float(np.abs(v[ni]).max()),
                }
                ex = e["exactness"]
                if ex["prediction_max_abs"] > 1e-12 * max(1.0, np.abs(sz).max()) or (
                    ex["variance_max_abs"] > 1e-12 * vscale
                ):
                    failures.append(f"{case}/{cfg['name']}/{peer}: not exact {ex}")
            else:
                e["exactness"] = None
            for label, chk in (("agreement", e["agreement"]), ("reference", e["reference_check"])):
                if chk and max(chk["prediction_max_rel"], chk["variance_max_rel"]) > PEER_TOL:
                    failures.append(f"{case}/{cfg['name']}/{peer}: {label} {chk}")
            for b, chk in e.get("backend_check", {}).items():
                if max(chk["prediction_max_rel"], chk["variance_max_rel"]) > PEER_TOL:
                    failures.append(f"{case}/{cfg['name']}/{peer}: backend {b} {chk}")
            out.append(e)
            a = e["agreement"] or {}
            r = e["reference_check"]
            log(
                f"{case:9s} {cfg['name']:42s} {peer:8s} "
                f"vs {a.get('other', '-'):16s} pred {a.get('prediction_max_abs', float('nan')):8.1e}"
                f" var {a.get('variance_max_abs', float('nan')):8.1e} | vs numpy pred "
                f"{r['prediction_max_abs']:8.1e} var {r['variance_max_abs']:8.1e}"
            )
    return out, failures


def anisotropy_mapping_demo(sx, sy, sz, nx, ny, cfg, offset, log):
    """Shows that the mapping matters: wrong angle or inverted ratio give O(0.1) differences."""
    import gstools as gs
    from pykrige.ok import OrdinaryKriging

    az, ratio = cfg["anisotropy"]
    ref, _ = reference(sx, sy, sz, nx, ny, cfg)
    sx, sy, nx, ny = sx - offset[0], sy - offset[1], nx - offset[0], ny - offset[1]
    pk = pykrige_params(cfg["model"], cfg["sill"], cfg["range"], cfg["nugget"])
    for label, angle, scaling in (
        ("pykrige angle=90-az scaling=1/ratio", 90.0 - az, 1.0 / ratio),
        ("pykrige angle=az scaling=1/ratio", az, 1.0 / ratio),
        ("pykrige angle=90-az scaling=ratio", 90.0 - az, ratio),
    ):
        ok = OrdinaryKriging(sx, sy, sz, variogram_model=cfg["model"], variogram_parameters=pk,
                             anisotropy_scaling=scaling, anisotropy_angle=angle)
        p, _ = ok.execute("points", nx, ny)
        log(f"  anisotropy mapping {label:40s} max |pred - numpy| = {np.abs(p - ref).max():.2e}")
    for label, angles, anis in (
        ("gstools angles=rad(90-az) anis=ratio", math.radians(90.0 - az), ratio),
        ("gstools angles=rad(az) anis=ratio", math.radians(az), ratio),
    ):
        m = getattr(gs, GS_CLASS[cfg["model"]])(
            dim=2, var=cfg["sill"], len_scale=gstools_len_scale(cfg["model"], cfg["range"]),
            nugget=cfg["nugget"], anis=anis, angles=angles)
        p, _ = gs.krige.Ordinary(m, [sx, sy], sz, exact=True, pseudo_inv=False)(
            (nx, ny), mesh_type="unstructured")
        log(f"  anisotropy mapping {label:40s} max |pred - numpy| = {np.abs(p - ref).max():.2e}")


# ---------------------------------------------------------------------------------------------
# Cases


def cell_centres(x0, x1, y0, y1, n_x, n_y):
    dx = (x1 - x0) / n_x
    dy = (y1 - y0) / n_y
    gx = x0 + (np.arange(n_x) + 0.5) * dx
    gy = y0 + (np.arange(n_y) + 0.5) * dy
    xx, yy = np.meshgrid(gx, gy)  # row-major: x fastest, y increasing
    grid = {
        "nx": n_x, "ny": n_y, "x0": float(gx[0]), "y0": float(gy[0]), "dx": dx, "dy": dy,
        "count": n_x * n_y,
        "order": "row-major: node j = iy * nx + ix at (x0 + ix*dx, y0 + iy*dy), cell centres of "
                 "the box; then the sample nodes",
    }
    return xx.ravel(), yy.ravel(), grid


def load_meuse(path):
    raw = Path(path).read_bytes()
    sha = hashlib.sha256(raw).hexdigest()
    if sha != MEUSE_SHA256:
        sys.exit(f"{path}: sha256 {sha} != {MEUSE_SHA256} (scikit-gstat {SKGSTAT_VERSION})")
    rows = list(csv.reader(raw.decode("utf-8").splitlines()))
    header, data = rows[0], rows[1:]
    assert header[:2] == ["x", "y"] and header[5] == "zinc", header
    x = np.array([float(r[0]) for r in data])
    y = np.array([float(r[1]) for r in data])
    z = np.log(np.array([float(r[5]) for r in data]))
    assert len(x) == 155
    return x, y, z, sha


def meuse_case(path, log):
    sx, sy, sz, sha = load_meuse(path)
    gx, gy, grid = cell_centres(sx.min(), sx.max(), sy.min(), sy.max(), 40, 40)
    # 5 samples spread over the data (indices chosen once; no distance ties at k = 20/21).
    sample_index = [0, 38, 77, 116, 154]
    nx = np.concatenate([gx, sx[sample_index]])
    ny = np.concatenate([gy, sy[sample_index]])
    sample_nodes = {
        "node_index": list(range(len(gx), len(gx) + len(sample_index))),
        "sample_index": sample_index,
    }
    grid["count"] = len(gx)
    # ln(zinc): variance 0.52; gstat's classic fit exp(psill 0.6, range 300 -> a = 900).
    configs = config_list(
        zmean=5.9, c=0.6, a_exp=900.0, a_sph=1000.0, a_gau=300.0, a_gau_nug=900.0,
        aniso=[120.0, 0.5], tag="meuse",
    )
    anisotropy_mapping_demo(sx, sy, sz, nx, ny, configs[11], MEUSE_OFFSET, log)
    entries, failures = run_case("meuse", sx, sy, sz, nx, ny, sample_nodes, configs,
                                 MEUSE_OFFSET, log)
    case = {
        "description": "Meuse topsoil zinc (R sp), z = ln(zinc); samples not stored (GPL): "
                       "load them from the file named in source (scripts/fetch_meuse.sh, "
                       "env GEOFIELD_MEUSE)",
        "source": {
            "package": "scikit-gstat",
            "version": SKGSTAT_VERSION,
            "path": "skgstat/data/samples/meuse.txt",
            "sha256": sha,
            "parse": "CSV, one header line then 155 data rows, fields separated by ','; "
                     "x = field 1, y = field 2, zinc = field 6 (1-based; header names "
                     "\"x\",\"y\",...,\"zinc\"), plain decimal numbers; sample i = data row i "
                     "(0-based); z = ln(zinc)",
            "n": int(len(sz)),
            "z_sum": float(np.sum(sz)),
            "z_min": float(sz.min()),
            "z_max": float(sz.max()),
        },
        "column": "zinc",
        "transform": "ln",
        "peer_offset": list(MEUSE_OFFSET),
        "nodes": {"x": nx.tolist(), "y": ny.tolist(), "grid": grid, "sample_nodes": sample_nodes},
        "configs": entries,
    }
    return case, failures


def synthetic_samples():
    rng = np.random.default_rng(SYNTH_SEED)
    pts = []
    while len(pts) < 60:
        p = rng.uniform(0.0, 1000.0, size=2)
        if all(math.hypot(p[0] - q[0], p[1] - q[1]) >= 10.0 for q in pts):
            pts.append(p)
    pts = np.array(pts)
    noise = rng.standard_normal(len(pts))
    x = np.round(500000.0 + pts[:, 0], 3)
    y = np.round(5200000.0 + pts[:, 1], 3)
    z = np.sin((x - 500000.0) / 150.0) + np.cos((y - 5200000.0) / 200.0) + 0.05 * noise
    return x, y, z


def synthetic_case(log):
    sx, sy, sz = synthetic_samples()
    gx, gy, grid = cell_centres(500000.0, 501000.0, 5200000.0, 5201000.0, 30, 30)
    sample_index = [0, 15, 30, 45, 59]
    nx = np.concatenate([gx, sx[sample_index]])
    ny = np.concatenate([gy, sy[sample_index]])
    sample_nodes = {
        "node_index": list(range(len(gx), len(gx) + len(sample_index))),
        "sample_index": sample_index,
    }
    configs = config_list(
        zmean=0.0, c=1.0, a_exp=300.0, a_sph=400.0, a_gau=150.0, a_gau_nug=300.0,
        aniso=[60.0, 0.4], tag="synthetic",
    )
    anisotropy_mapping_demo(sx, sy, sz, nx, ny, configs[11], SYNTH_OFFSET, log)
    entries, failures = run_case("synthetic", sx, sy, sz, nx, ny, sample_nodes, configs,
                                 SYNTH_OFFSET, log)
    d = np.hypot(sx[:, None] - sx[None, :], sy[:, None] - sy[None, :])
    np.fill_diagonal(d, np.inf)
    case = {
        "description": "ours: 60 samples uniform in [0, 1000]^2 (>= 10 m apart), "
                       "z = sin(x/150) + cos(y/200) + 0.05 N(0,1), at x + 5e5, y + 5.2e6 (mm)",
        "samples": {
            "x": sx.tolist(), "y": sy.tolist(), "z": sz.tolist(), "seed": SYNTH_SEED,
            "generator": "scripts/kriging_peers.py: synthetic_samples()",
            "min_separation": float(d.min()),
        },
        "peer_offset": list(SYNTH_OFFSET),
        "nodes": {"x": nx.tolist(), "y": ny.tolist(), "grid": grid, "sample_nodes": sample_nodes},
        "configs": entries,
    }
    return case, failures


def to_json(obj, depth=0):
    """Indented JSON, but a list of numbers on one line (floats as Python's repr: exact)."""
    pad = " " * (depth + 1)
    if isinstance(obj, dict):
        if not obj:
            return "{}"
        items = [f"{pad}{json.dumps(k)}: {to_json(v, depth + 1)}" for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * depth + "}"
    if isinstance(obj, list) and any(isinstance(v, (dict, list)) for v in obj):
        items = [pad + to_json(v, depth + 1) for v in obj]
        return "[\n" + ",\n".join(items) + "\n" + " " * depth + "]"
    return json.dumps(obj, allow_nan=False, separators=(", ", ": "))


def verify(path, meuse_path):
    """Re-checks a written JSON: shapes, the peers' agreement recomputed from the stored arrays,
    exactness at the sample nodes (against the data), variances >= 0, tie margins recorded."""
    doc = json.loads(Path(path).read_text())
    problems = []
    for case in ("meuse", "synthetic"):
        c = doc[case]
        n_nodes = len(c["nodes"]["x"])
        if case == "meuse":
            sx, sy, sz, _ = load_meuse(meuse_path)
            if c["source"]["z_sum"] != float(np.sum(sz)):
                problems.append("meuse: z_sum differs")
        else:
            sx, sy, sz = (np.array(c["samples"][k]) for k in "xyz")
        ni = c["nodes"]["sample_nodes"]["node_index"]
        si = c["nodes"]["sample_nodes"]["sample_index"]
        nx, ny = np.array(c["nodes"]["x"]), np.array(c["nodes"]["y"])
        if not (np.array_equal(nx[ni], sx[si]) and np.array_equal(ny[ni], sy[si])):
            problems.append(f"{case}: sample nodes are not at the samples")
        by_name = {}
        for e in c["configs"]:
            by_name.setdefault(e["name"], {})[e["peer"]] = e
            p, v = np.array(e["prediction"]), np.array(e["variance"])
            tag = f"{case}/{e['name']}/{e['peer']}"
            if len(p) != n_nodes or len(v) != n_nodes or not np.all(np.isfinite(p + v)):
                problems.append(f"{tag}: bad arrays")
            # PyKrige does not clamp (about -1e-15 at the samples); GSTools clamps at 0.
            if np.any(v < -1e-12 * (e["sill"] + e["nugget"])):
                problems.append(f"{tag}: negative variance")
            if e["nugget_mode"] == "exact":
                dp = np.abs(p[ni] - sz[si]).max()
                dv = np.abs(v[ni]).max()
                if dp > 1e-12 * np.abs(sz).max() or dv > 1e-12 * (e["sill"] + e["nugget"]):
                    problems.append(f"{tag}: not exact ({dp:.2e}, {dv:.2e})")
            elif np.abs(v[ni]).min() <= 0.0 or np.abs(p[ni] - sz[si]).min() <= 0.0:
                # Measurement error: smoothed at the samples, variance > 0 there.
                problems.append(f"{tag}: exact at a sample although the nugget is noise")
            if e["neighbors"] is not None and not e.get("tie_margin", 0) >= 1e-6:
                problems.append(f"{tag}: tie margin")
        s_z = float(np.std(sz))
        for name, peers in by_name.items():
            if len(peers) == 2:
                a, b = peers["pykrige"], peers["gstools"]
                d = diff((np.array(a["prediction"]), np.array(a["variance"])),
                         (np.array(b["prediction"]), np.array(b["variance"])),
                         s_z, a["sill"] + a["nugget"])
                if d != {k: a["agreement"][k] for k in d}:
                    problems.append(f"{case}/{name}: stored agreement differs from recomputed")
                if max(d["prediction_max_rel"], d["variance_max_rel"]) > doc["peer_tolerance"]:
                    problems.append(f"{case}/{name}: peers disagree {d}")
            print(f"{case:9s} {name:42s} peers: {', '.join(sorted(peers))}")
    if problems:
        print("verify FAILED:", *problems, sep="\n  ")
        return 1
    print(f"verify: {path} OK")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--meuse", help="meuse.txt (default: the installed scikit-gstat's)")
    ap.add_argument("--out", default=str(DEFAULT_OUT))
    ap.add_argument("--verify", metavar="FILE", help="re-check a written JSON and exit")
    args = ap.parse_args()
    if args.verify:
        meuse = args.meuse
        if meuse is None:
            import skgstat

            meuse = os.path.join(os.path.dirname(skgstat.__file__), "data/samples/meuse.txt")
        sys.exit(verify(args.verify, meuse))

    import gstools
    import pykrige

    global PEER_VERSIONS
    PEER_VERSIONS = {"pykrige": pykrige.__version__, "gstools": gstools.__version__}
    meuse = args.meuse
    if meuse is None:
        import skgstat

        meuse = os.path.join(os.path.dirname(skgstat.__file__), "data/samples/meuse.txt")

    def log(msg):
        print(msg, flush=True)

    log(f"pykrige {pykrige.__version__}, gstools {gstools.__version__}, numpy {np.__version__}")
    m, f1 = meuse_case(meuse, log)
    s, f2 = synthetic_case(log)
    doc = {
        "schema_version": 1,
        "generator": "scripts/kriging_peers.py",
        "versions": {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "scipy": scipy.__version__,
            "pykrige": pykrige.__version__,
            "gstools": gstools.__version__,
        },
        "metrics": METRICS,
        "peer_tolerance": PEER_TOL,
        "meuse": m,
        "synthetic": s,
    }
    failures = f1 + f2
    if failures:
        print("FAILED checks:", *failures, sep="\n  ", file=sys.stderr)
        sys.exit(1)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(to_json(doc) + "\n")
    log(f"wrote {out} ({out.stat().st_size / 1e6:.2f} MB)")


PEER_VERSIONS: dict = {}

if __name__ == "__main__":
    main()
