"""Ripley's K against spatstat itself (R's `Kest`), run through `Rscript`.

spatstat is GPL R code; it is run, not copied. The module skips when R or spatstat is missing,
unless GEOFIELD_REQUIRE_SPATSTAT=1 (CI installs Debian's r-cran-spatstat and sets it).

Tolerance: both sum the same pair terms in f64 (spatstat in C, geofield in Rust) with the same
edge weights (the border's reduced sample, the translation weights |W| / |W ∩ (W + d)|, Ripley's
isotropic arc fractions); the sums differ only in order, about n² · 1e-16 relative, 1e-9 leaves
room and still catches any wrong weight (those differ by percent).
"""
import os
import shutil
import subprocess

import numpy as np
import pytest

import geofield

REQUIRE = os.environ.get("GEOFIELD_REQUIRE_SPATSTAT") == "1"


def _have_spatstat():
    if shutil.which("Rscript") is None:
        return False
    r = subprocess.run(["Rscript", "-e", "suppressMessages(library(spatstat))"],
                       capture_output=True)
    return r.returncode == 0


if not _have_spatstat():
    if REQUIRE:
        raise RuntimeError("GEOFIELD_REQUIRE_SPATSTAT=1 but R's spatstat is not available")
    pytest.skip("R's spatstat is not installed", allow_module_level=True)

WINDOW = (0.0, 0.0, 100.0, 60.0)
CORRECTIONS = ("none", "border", "translate", "isotropic")
COLUMNS = ("un", "border", "trans", "iso")


def _backends():
    out = ["cpu"]
    if geofield.info()["cuda_available"]:
        out.append("cuda")
    return out


def _clustered(seed, parents=30, children=10):
    """A Thomas-like clustered stem map clipped to the window."""
    rng = np.random.default_rng(seed)
    par = rng.uniform([0, 0], [100, 60], (parents, 2))
    pts = np.concatenate([p + rng.normal(0, 3, (children, 2)) for p in par])
    keep = (pts[:, 0] > 0) & (pts[:, 0] < 100) & (pts[:, 1] > 0) & (pts[:, 1] < 60)
    return pts[keep]


def _kest(tmp_path, pts, r):
    """spatstat's Kest with every correction at the radii r (None: spatstat's own)."""
    np.savetxt(tmp_path / "pts.csv", pts, delimiter=",", header="x,y", comments="")
    rr = "NULL" if r is None else "c(" + ",".join(repr(float(v)) for v in r) + ")"
    script = f"""
suppressMessages(library(spatstat))
d <- read.csv("pts.csv")
X <- ppp(d$x, d$y, window=owin(c({WINDOW[0]}, {WINDOW[2]}), c({WINDOW[1]}, {WINDOW[3]})))
K <- Kest(X, r={rr}, correction=c("none","border","translate","isotropic"), nlarge=Inf)
write.csv(as.data.frame(K), "k.csv", row.names=FALSE)
"""
    (tmp_path / "k.R").write_text(script)
    subprocess.run(["Rscript", "k.R"], cwd=tmp_path, check=True, capture_output=True)
    data = np.genfromtxt(tmp_path / "k.csv", delimiter=",", names=True)
    return {c: np.asarray(data[c], dtype=float) for c in data.dtype.names}


def _close(ours, theirs, what):
    scale = np.maximum(np.abs(theirs), 1e-12)
    both = np.isfinite(theirs)
    assert np.array_equal(np.isfinite(ours), both), what
    worst = np.max(np.abs(ours[both] - theirs[both]) / scale[both])
    assert worst <= 1e-9, f"{what}: worst relative difference {worst:.3e}"


@pytest.mark.parametrize("backend", _backends())
def test_ripley_k_equals_spatstat_kest(tmp_path, backend):
    pts = _clustered(3)
    r = np.linspace(0.0, 15.0, 61)
    theirs = _kest(tmp_path, pts, r)
    ours = geofield.ripley_k(pts, WINDOW, r, CORRECTIONS, backend=backend)
    np.testing.assert_array_equal(ours["r"], theirs["r"])
    for c in COLUMNS:
        # r = 0: both 0 (no pair at distance 0)
        _close(ours[c][1:], theirs[c][1:], f"K {c}")
    # and the clustering is real: K well above pi r^2 at 10 m (so the comparison is not of zeros)
    assert ours["iso"][40] > 1.2 * np.pi * r[40] ** 2


def test_default_radii_are_spatstats(tmp_path):
    pts = np.random.default_rng(8).uniform([0, 0], [100, 60], (400, 2))
    theirs = _kest(tmp_path, pts, None)
    ours = geofield.ripley_k(pts, WINDOW, None, CORRECTIONS, backend="cpu")
    assert len(ours["r"]) == len(theirs["r"]) == 513
    np.testing.assert_allclose(ours["r"], theirs["r"], rtol=1e-12, atol=0)
    for c in COLUMNS:
        _close(ours[c][1:], theirs[c][1:], f"K {c} (default radii)")


def _pcf(tmp_path, pts, r, divisor):
    np.savetxt(tmp_path / "pts.csv", pts, delimiter=",", header="x,y", comments="")
    rr = "c(" + ",".join(repr(float(v)) for v in r) + ")"
    script = f"""
suppressMessages(library(spatstat))
d <- read.csv("pts.csv")
X <- ppp(d$x, d$y, window=owin(c({WINDOW[0]}, {WINDOW[2]}), c({WINDOW[1]}, {WINDOW[3]})))
g <- pcf(X, r={rr}, correction=c("translate","isotropic"), divisor="{divisor}")
write.csv(as.data.frame(g), "g.csv", row.names=FALSE)
writeLines(format(attr(g, "bw"), digits=17), "bw.txt")
"""
    (tmp_path / "g.R").write_text(script)
    subprocess.run(["Rscript", "g.R"], cwd=tmp_path, check=True, capture_output=True)
    data = np.genfromtxt(tmp_path / "g.csv", delimiter=",", names=True)
    bw = float((tmp_path / "bw.txt").read_text())
    return {c: np.asarray(data[c], dtype=float) for c in data.dtype.names}, bw


@pytest.mark.parametrize("divisor", ["r", "d"])
def test_pair_correlation_equals_spatstat_pcf(tmp_path, divisor):
    pts = _clustered(3)
    r = np.linspace(0.0, 15.0, 151)
    theirs, bw = _pcf(tmp_path, pts, r, divisor)
    ours = geofield.pair_correlation(pts, WINDOW, r, ("translate", "isotropic"),
                                     divisor=divisor)
    # the same default bandwidth (Stoyan's rule), to the digits R prints
    assert abs(ours["bw"] - bw) <= 1e-12 * bw
    # spatstat sums the kernel through R's density(): the distances are binned linearly onto
    # 2n = 1024 points spanning [-4 bw, rmax + 4 bw] and the result interpolated back, which
    # errs by about (delta / h)^2 of g (delta the grid step, h the kernel's half-width; 2.5e-3
    # here, measured 1.1e-3). Ours is the exact sum. Twice that bound, from r = h on (below it
    # the division by r magnifies the binning error).
    h = ours["half_width"]
    delta = (r[-1] + 8 * bw) / 512
    tol = 2 * (delta / h) ** 2
    keep = r >= h
    for c in ("trans", "iso"):
        a, b = ours[c][keep], theirs[c][keep]
        worst = np.max(np.abs(a - b) / np.maximum(np.abs(b), 1.0))
        assert worst <= tol, f"g {c}: worst {worst:.2e} > {tol:.2e}"
    # and the pattern is clustered at the clusters' scale, so the comparison is of signal
    assert ours["iso"][20] > 2.0


# Global envelopes and the MAD / DCLF tests against spatstat's envelope(global=TRUE), mad.test
# and dclf.test, fed geofield's own simulated patterns (simulate = a list of ppp): the same
# patterns, radii and correction on both sides, so everything must agree to rounding (the K
# sums' 1e-9, above) and the p-values exactly (no ties: checked).
ENV_R = np.linspace(0.0, 12.0, 25)


def _spatstat_global(tmp_path, pts, sims, fun, nsim, nrank, use_theory, interval):
    np.savetxt(tmp_path / "pts.csv", pts, delimiter=",", header="x,y", comments="")
    rows = np.concatenate([np.column_stack([np.full(len(p), i), p]) for i, p in enumerate(sims)])
    np.savetxt(tmp_path / "sims.csv", rows, delimiter=",", header="sim,x,y", comments="")
    rr = "c(" + ",".join(repr(float(v)) for v in ENV_R) + ")"
    iv = "NULL" if interval is None else f"c({interval[0]!r}, {interval[1]!r})"
    ut = "TRUE" if use_theory else "FALSE"
    script = f"""
suppressMessages(library(spatstat))
W <- owin(c({WINDOW[0]}, {WINDOW[2]}), c({WINDOW[1]}, {WINDOW[3]}))
d <- read.csv("pts.csv")
X <- ppp(d$x, d$y, window=W)
s <- read.csv("sims.csv")
sims <- lapply(split(s, factor(s$sim, levels=sort(unique(s$sim)))),
               function(q) ppp(q$x, q$y, window=W))
E <- envelope(X, {fun}, nsim={nsim}, nrank={nrank}, simulate=sims, global=TRUE,
              use.theory={ut}, ginterval={iv}, correction="translate", r={rr}, verbose=FALSE)
write.csv(as.data.frame(E), "env.csv", row.names=FALSE)
for (tst in c("mad", "dclf")) {{
  f <- if (tst == "mad") mad.test else dclf.test
  T <- f(X, {fun}, nsim={nsim}, simulate=sims[1:{nsim}], use.theory={ut}, rinterval={iv},
         correction="translate", r={rr}, savefuns=TRUE, verbose=FALSE)
  st <- attr(T, "statistics")
  writeLines(format(c(st$data, T$p.value, st$sim), digits=17), paste0(tst, ".txt"))
}}
"""
    (tmp_path / "e.R").write_text(script)
    subprocess.run(["Rscript", "e.R"], cwd=tmp_path, check=True, capture_output=True)
    data = np.genfromtxt(tmp_path / "env.csv", delimiter=",", names=True)
    env = {c: np.asarray(data[c], dtype=float) for c in data.dtype.names}
    tests = {}
    for tst in ("mad", "dclf"):
        v = np.array([float(x) for x in (tmp_path / f"{tst}.txt").read_text().split()])
        tests[tst] = {"statistic": v[0], "p_value": v[1], "sim": v[2:]}
    return env, tests


def _rel(a, b, scale):
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b)) / scale))


@pytest.mark.parametrize("fun,use_theory,interval", [
    ("Kest", True, None),
    ("Lest", True, (2.0, 10.0)),
    ("Kest", False, (1.0, 12.0)),
    ("Lest", False, None),
])
def test_global_envelope_and_deviation_tests_equal_spatstat(tmp_path, fun, use_theory, interval):
    # a random pattern: p-values between the extremes, so the ranks are informative
    pts = np.random.default_rng(4).uniform([0, 0], [100, 60], (150, 2))
    nsim, nrank, seed = 39, 2, 17
    f = fun[0]
    count = nsim if use_theory else 2 * nsim
    sims = geofield.csr_patterns(pts, WINDOW, nsim=count, seed=seed)
    assert len(sims) == count and all(p.shape[1] == 2 and len(p) >= 2 for p in sims)
    theirs, their_tests = _spatstat_global(tmp_path, pts, sims, fun, nsim, nrank, use_theory,
                                           interval)
    ours = geofield.csr_envelope(pts, WINDOW, ENV_R, fun=f, nsim=nsim, nrank=nrank, seed=seed,
                                 backend="cpu", global_=True, ginterval=interval,
                                 use_theory=use_theory)
    assert ours["global"] and ours["alpha"] == pytest.approx(nrank / (nsim + 1))
    ok = np.isfinite(ours["lo"])
    np.testing.assert_array_equal(ours["r"][ok], theirs["r"])
    width = ours["width"]
    centre = theirs["theo"] if use_theory else theirs["mmean"]
    # the band: relative to its half-width where the curve is near 0 (K(0) = 0: lo = -width)
    scale = np.maximum(np.abs(theirs["lo"]), width)
    assert _rel(ours["lo"][ok], theirs["lo"], scale) <= 1e-9
    assert _rel(ours["hi"][ok], theirs["hi"], np.maximum(np.abs(theirs["hi"]), width)) <= 1e-9
    assert _rel(ours["centre"][ok], centre, np.maximum(np.abs(centre), width)) <= 1e-9
    assert _rel(ours["obs"][ok][1:], theirs["obs"][1:], np.abs(theirs["obs"][1:])) <= 1e-9
    for name, test in (("mad", geofield.mad_test), ("dclf", geofield.dclf_test)):
        t = test(pts, WINDOW, ENV_R, fun=f, nsim=nsim, seed=seed, backend="cpu",
                 rinterval=interval, use_theory=use_theory)
        s = their_tests[name]
        assert t["ties"] == 0, "spatstat would break ties at random"
        assert abs(t["statistic"] - s["statistic"]) <= 1e-9 * s["statistic"], (name, t, s)
        assert _rel(t["sim_statistics"], s["sim"], s["sim"]) <= 1e-9, name
        assert t["p_value"] == s["p_value"], (name, t["p_value"], s["p_value"])
        assert 1 / (nsim + 1) < t["p_value"] < 1, f"{name}: an informative p {t['p_value']}"
