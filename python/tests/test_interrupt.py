"""Long calls are interruptible (Ctrl-C raises KeyboardInterrupt within a fraction of a second,
the worker thread is joined, the process stays usable) and draw an optional progress bar
(``progress=True``) without changing their results."""

import os
import signal
import sys
import threading
import time
import types

import numpy as np
import pytest

import geofield
from geofield import _progress

# The calling thread polls every 50 ms (python/src/interrupt.rs, POLL); the library checks its
# token at least once per tile of nodes / chunk of cells (crates/geofield/src/cancel.rs): for
# the calls below ~0.1 s of one slow core (a tile of 256 nodes × 1000² flops of the kriging
# variance) and ~1 ms (64 cells × 3000 trees of exact dispersal). 1 s bounds poll + check +
# join with a loaded 2-core machine's scheduling, while the calls run for minutes uncancelled.
LATENCY_BOUND_S = 1.0
SIGNAL_AFTER_S = 0.5


def samples(n, seed=0):
    rng = np.random.default_rng(seed)
    x, y = rng.uniform(0, 1000, (2, n))
    return x, y, np.sin(x / 200.0) + np.cos(y / 300.0)


def big_krige():
    # 1e6 nodes from 1000 samples with variance: minutes on 2 cores.
    x, y, z = samples(1000)
    geofield.krige(x, y, z, "exponential", sill=1.0, range=300.0, extent=(0, 0, 1000, 1000),
                   cell_size=1.0, variance=True, backend="cpu")


def big_disperse():
    # Exact sums of 3000 trees into 4e6 cells: tens of seconds on 2 cores.
    rng = np.random.default_rng(1)
    trees = {"x_m": rng.uniform(0, 1000, 3000), "y_m": rng.uniform(0, 1000, 3000),
             "dbh_cm": rng.uniform(15, 60, 3000), "species": np.zeros(3000, dtype=np.int64)}
    species = {"fir": {"kernel": "weibull", "d": 1.32e-4, "theta": 3.0, "str": 2.5,
                       "beta": 2.0, "eta": 350.0, "min_dbh_cm": 10.0}}
    geofield.disperse(trees, species, (0, 0, 1000, 1000), 0.5, method="exact", backend="cpu")


def small_krige():
    x, y, z = samples(50, seed=3)
    return geofield.krige_points(x, y, z, "exponential", sill=1.0, range=300.0,
                                 points=(np.array([10.0, 500.0]), np.array([20.0, 600.0])),
                                 backend="cpu")


def tasks():
    """The threads of this process (Linux), or None."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return None


@pytest.mark.parametrize("call", [big_krige, big_disperse], ids=["krige", "disperse"])
def test_sigint_interrupts_a_long_call_and_the_process_stays_usable(call):
    before = small_krige()
    threads = tasks()
    sent = {}

    def interrupt():
        time.sleep(SIGNAL_AFTER_S)
        sent["t"] = time.perf_counter()
        os.kill(os.getpid(), signal.SIGINT)  # what Ctrl-C does

    t = threading.Thread(target=interrupt)
    t.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            call()
            time.sleep(30)  # not reached: the call runs far longer than the signal's delay
    finally:
        t.join()
    latency = time.perf_counter() - sent["t"]
    print(f"{call.__name__}: interrupted {latency * 1000:.0f} ms after SIGINT")
    assert latency < LATENCY_BOUND_S
    # The worker was joined: no thread is left (rayon's pool existed before, from small_krige).
    if threads is not None:
        assert tasks() == threads
    # The process is usable: the same call gives the same numbers as before.
    after = small_krige()
    np.testing.assert_array_equal(after[0], before[0])
    np.testing.assert_array_equal(after[1], before[1])


def test_interrupt_main_also_interrupts():
    t = threading.Timer(SIGNAL_AFTER_S, lambda: __import__("_thread").interrupt_main())
    t.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            big_krige()
            time.sleep(30)
    finally:
        t.join()
    small_krige()


def test_an_exception_in_the_progress_callable_stops_the_call():
    def boom(fraction):
        if fraction > 0:
            raise RuntimeError("stop here")

    t0 = time.perf_counter()
    x, y, z = samples(1000)
    with pytest.raises(RuntimeError, match="stop here"):
        geofield.krige(x, y, z, "exponential", sill=1.0, range=300.0, extent=(0, 0, 1000, 1000),
                       cell_size=1.0, variance=True, backend="cpu", progress=boom)
    # Stopped after the first band of 65 536 nodes (~0.3 s), not after minutes.
    assert time.perf_counter() - t0 < 60


def record():
    seen = []
    return seen, seen.append


def test_progress_reports_and_results_are_unchanged(capsys):
    x, y, z = samples(300)
    kw = dict(sill=1.0, range=300.0, extent=(0, 0, 1000, 1000), cell_size=2.0, backend="cpu")
    plain = geofield.krige(x, y, z, "exponential", **kw)
    seen, cb = record()
    with_cb = geofield.krige(x, y, z, "exponential", progress=cb, **kw)
    with_bar = geofield.krige(x, y, z, "exponential", progress=True, **kw)
    for ds in (with_cb, with_bar):
        for name in plain.data_vars:
            np.testing.assert_array_equal(ds[name].values, plain[name].values)
    # Fractions in [0, 1], never decreasing, ending at exactly 1.
    assert seen and seen[-1] == 1.0
    assert all(0.0 <= a <= b <= 1.0 for a, b in zip(seen, seen[1:]))
    err = capsys.readouterr().err
    if "tqdm" not in sys.modules:
        assert "kriging [" in err and "100%" in err


def test_every_long_call_takes_progress(backend):
    """Each entry point with progress=a callable gives the plain call's result and ends at 1."""
    x, y, z = samples(80, seed=5)
    vg = dict(sill=1.0, range=300.0)

    def same(f):
        a = f(False)
        seen, cb = record()
        b = f(cb)
        assert seen and seen[-1] == 1.0, f
        return a, b

    a, b = same(lambda p: geofield.krige_points(x, y, z, "exponential", points=(x[:9], y[:9]),
                                                backend=backend, progress=p, **vg))
    np.testing.assert_array_equal(a[0], b[0])
    a, b = same(lambda p: geofield.cross_validate(x, y, z, "exponential", progress=p, **vg))
    np.testing.assert_array_equal(a["z"]["error"] if "z" in a else list(a.values())[0]["error"],
                                  b["z"]["error"] if "z" in b else list(b.values())[0]["error"])
    pts = np.random.default_rng(2).uniform(0, 100, (5000, 3))
    idx = geofield.NeighborIndex(pts, backend=backend)
    a, b = same(lambda p: idx.query(pts[:100], k=4, progress=p))
    np.testing.assert_array_equal(a[1], b[1])
    a, b = same(lambda p: geofield.Flock(256, seed=1, backend=backend).step(5, progress=p).state)
    np.testing.assert_array_equal(a, b)
    from geofield.pykrige import OrdinaryKriging
    ok = OrdinaryKriging(x, y, z, variogram_model="exponential", variogram_parameters=[1, 300, 0])
    gx = np.arange(0.0, 1000.0, 50.0)
    a, b = same(lambda p: ok.execute("grid", gx, gx, device=backend, progress=p))
    np.testing.assert_array_equal(a[0], b[0])
    rng = np.random.default_rng(4)
    trees = {"x_m": rng.uniform(0, 60, 50), "y_m": rng.uniform(0, 60, 50),
             "dbh_cm": rng.uniform(15, 60, 50), "species": np.zeros(50, dtype=np.int64)}
    species = {"fir": {"kernel": "weibull", "d": 1.32e-4, "theta": 3.0, "str": 2.5,
                       "beta": 2.0, "eta": 350.0, "min_dbh_cm": 10.0}}
    a, b = same(lambda p: geofield.disperse(trees, species, (0, 0, 60, 60), 1.0, backend=backend,
                                            progress=p))
    np.testing.assert_array_equal(a["fir"].values, b["fir"].values)
    xr = pytest.importorskip("xarray")
    n, h = 24, 25.0
    cx = (np.arange(n) + 0.5) * h
    dem = xr.DataArray(50 * np.exp(-((cx[None] - 300) ** 2 + (cx[::-1, None] - 300) ** 2) / 2e4),
                       coords={"y": cx[::-1], "x": cx}, dims=("y", "x"))
    st = {"x_m": [100.0], "y_m": [100.0], "height_agl_m": [10.0], "speed_m_per_s": [5.0],
          "direction_deg": [250.0]}
    a, b = same(lambda p: geofield.wind(dem, st, nz=8, dz_m=10.0, backend=backend, progress=p))
    np.testing.assert_array_equal(a["u"].values, b["u"].values)


def test_tqdm_is_used_when_installed(monkeypatch):
    made = []

    class FakeTqdm:
        def __init__(self, total, desc, **_):
            self.total, self.desc, self.n, self.closed = total, desc, 0, False
            made.append(self)

        def update(self, k):
            self.n += k

        def close(self):
            self.closed = True

    auto = types.ModuleType("tqdm.auto")
    auto.tqdm = FakeTqdm
    monkeypatch.setitem(sys.modules, "tqdm", types.ModuleType("tqdm"))
    monkeypatch.setitem(sys.modules, "tqdm.auto", auto)
    small_krige_progress = geofield.krige_points(
        *samples(40), "exponential", sill=1.0, range=300.0, points=([1.0], [2.0]),
        backend="cpu", progress=True)
    assert small_krige_progress[0].shape == (1, 1)
    assert len(made) == 1 and made[0].desc == "kriging"
    assert made[0].n == made[0].total and made[0].closed


def test_text_bar_draws_one_line():
    class Sink:
        text = ""

        def write(self, s):
            Sink.text += s

        def flush(self):
            pass

    bar = _progress._TextBar("job", stream=Sink())
    for f in (0.0, 0.25, 0.25, 1.0):
        bar(f)
    bar.close()
    assert Sink.text.count("\r") == 3  # the repeated 25 % is not redrawn
    assert Sink.text.endswith("] 100%\n") and "#" * 30 in Sink.text
