"""Flock from Python: deterministic per seed, the same on every backend, state shape/dtype."""

import numpy as np
import pytest

import geofield


def test_state_and_determinism(backend):
    a = geofield.Flock(1024, seed=7, backend=backend)
    b = geofield.Flock(1024, seed=7, backend=backend)
    s0 = a.state
    assert s0.shape == (1024, 6) and s0.dtype == np.float32
    a.step(20)
    b.step(10).step(10)
    np.testing.assert_array_equal(a.state, b.state)
    assert a.steps_taken == 20
    # Agents moved, at OpenSteer's speeds (max speed 9 m/s).
    speed = np.linalg.norm(a.state[:, 3:], axis=1)
    assert (speed > 0).all() and (speed <= 9.0 + 1e-5).all()
    assert not np.array_equal(s0[:, :3], a.state[:, :3])
    st = a.stats()
    assert st["agents"] == 1024 and 0 <= st["polarisation"] <= 1


def test_gpu_steps_equal_cpu_steps():
    if not geofield.info()["cuda_available"]:
        pytest.skip("no GPU")
    a = geofield.Flock(4096, seed=3, backend="cpu").step(30)
    b = geofield.Flock(4096, seed=3, backend="cuda").step(30)
    # nearest-7 steps are bitwise equal on both backends (pinned operation order).
    np.testing.assert_array_equal(a.state, b.state)


@pytest.mark.parametrize("kw, message", [
    ({"n": 0}, "agents|n"), ({"mode": "nearest-seven"}, "mode"), ({"start": "ring"}, "start"),
    ({"index": "kd"}, "index"), ({"backend": "tpu"}, "backend"),
])
def test_bad_arguments(kw, message):
    args = {"n": 16}
    args.update(kw)
    with pytest.raises(ValueError, match=message):
        geofield.Flock(**args)
