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
