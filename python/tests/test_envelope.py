"""CSR envelopes from Python: the observed curve is the library's K/L/g of the points, the band
is ordered, a clustered pattern leaves it where it clusters, and the seed fixes it."""
import numpy as np
import pytest

import geofield
from geofield import GeofieldValueError

WINDOW = (0.0, 0.0, 90.0, 60.0)


def _clumps():
    a = np.arange(10) * 0.628
    centres = [(15 + 30 * (c % 3), 15 + 30 * (c // 3)) for c in range(6)]
    return np.array([(cx + 1.5 * np.cos(t), cy + 1.5 * np.sin(t)) for cx, cy in centres
                     for t in a])


@pytest.mark.parametrize("fun", ["K", "L", "g"])
def test_envelope_of_a_clustered_pattern(fun):
    pts = _clumps()
    r = np.array([0.0, 1.0, 2.0, 3.0, 5.0, 8.0])
    e = geofield.csr_envelope(pts, WINDOW, r, fun=fun, nsim=39, seed=5, backend="cpu")
    assert e["alpha"] == pytest.approx(2 / 40)
    if fun == "g":
        obs = geofield.pair_correlation(pts, WINDOW, r, "translate")["trans"]
    else:
        k = geofield.ripley_k(pts, WINDOW, r, "translate", backend="cpu")
        obs = k["trans"] if fun == "K" else k["L_trans"]
    np.testing.assert_allclose(e["obs"][1:], obs[1:], rtol=1e-12)
    ok = np.isfinite(e["lo"])
    assert (e["lo"][ok] <= e["mean"][ok]).all() and (e["mean"][ok] <= e["hi"][ok]).all()
    # clumps of radius 1.5: far above every random pattern at r = 2 and 3
    assert e["obs"][2] > e["hi"][2] and e["obs"][3] > e["hi"][3]
    again = geofield.csr_envelope(pts, WINDOW, r, fun=fun, nsim=39, seed=5, backend="cpu")
    np.testing.assert_array_equal(again["hi"], e["hi"])


def test_envelope_refusals():
    pts = _clumps()
    with pytest.raises(GeofieldValueError):
        geofield.csr_envelope(pts, WINDOW, fun="F")
    with pytest.raises(Exception):
        geofield.csr_envelope(pts, WINDOW, nsim=9, nrank=5)


def test_global_envelope_and_deviation_tests():
    pts = _clumps()
    r = np.array([0.0, 1.0, 2.0, 3.0, 5.0, 8.0])
    for use_theory in (True, False):
        e = geofield.csr_envelope(pts, WINDOW, r, fun="L", nsim=39, nrank=1, seed=5,
                                  backend="cpu", global_=True, ginterval=(1.0, 8.0),
                                  use_theory=use_theory)
        assert e["global"] and e["alpha"] == pytest.approx(1 / 40)
        assert e["ginterval"] == (1.0, 8.0) and e["use_theory"] == use_theory
        assert np.isnan(e["lo"][0]) and np.isnan(e["hi"][0]), "r = 0 is outside the interval"
        # constant width about the centre (the theory L = r, or the simulations' mean)
        np.testing.assert_allclose(e["hi"][1:] - e["lo"][1:], 2 * e["width"], rtol=1e-12)
        np.testing.assert_allclose((e["hi"][1:] + e["lo"][1:]) / 2, e["centre"][1:],
                                   rtol=1e-12)
        if use_theory:
            np.testing.assert_array_equal(e["centre"], r)
        assert (e["obs"][1:] > e["hi"][1:]).any(), "the clumps leave the band"
        for test in (geofield.mad_test, geofield.dclf_test):
            t = test(pts, WINDOW, r, fun="L", nsim=39, seed=5, backend="cpu",
                     use_theory=use_theory)
            assert t["p_value"] == pytest.approx(1 / 40) and t["rank"] == 1
            assert len(t["sim_statistics"]) == 39 and t["statistic"] > t["sim_statistics"].max()
    # the patterns are the simulations': simulation 3's L is the 4th simulated curve's
    sims = geofield.csr_patterns(pts, WINDOW, nsim=5, seed=5)
    again = geofield.csr_patterns(pts, WINDOW, nsim=2, seed=5, first=3)
    np.testing.assert_array_equal(sims[3], again[0])
    assert sims[0].shape[1] == 2 and not np.array_equal(sims[0], sims[1])


def test_global_refusals():
    pts = _clumps()
    r = np.array([0.0, 1.0, 2.0, 3.0])
    for kw in (dict(nsim=0), dict(ginterval=(1.0, 9.0)), dict(ginterval=(2.0, 1.0)),
               dict(ginterval=(1.2, 1.8)), dict(ginterval=(1.0,))):
        with pytest.raises(GeofieldValueError):
            geofield.csr_envelope(pts, WINDOW, r, **{"nsim": 9, "global_": True, **kw})
    with pytest.raises(GeofieldValueError):
        geofield.mad_test(pts, WINDOW, r, nsim=9, rinterval=(-1.0, 2.0))
    with pytest.raises(GeofieldValueError):
        geofield.dclf_test(pts, WINDOW, r, nsim=0)
