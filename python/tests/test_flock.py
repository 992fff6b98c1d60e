"""Flock from Python: deterministic per seed, the same on every backend, state shape/dtype."""

import json

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


def test_scene_obstacles_and_predators(backend, tmp_path):
    """A container keeps the flock inside (no collisions), a predator closes in, the same scene
    from a dict, a file or lists gives the same bits, and a bad scene names the field."""
    scene = {"obstacles": [{"sphere": {"centre": [0, 0, 0], "radius": 30,
                                       "seen_from": "inside"}}],
             "predators": [{"start": [20, 0, 0], "heading": [-1, 0, 0], "max_speed": 12}]}
    a = geofield.Flock(400, seed=5, backend=backend, world_radius=50, scene=scene)
    d0 = a.predator_distances()[0]
    worst = 0
    for _ in range(30):
        a.step(10)
        worst = max(worst, a.collisions())
    assert worst == 0
    assert a.predators.shape == (1, 6) and a.predators.dtype == np.float32
    assert min(a.predator_distances()) < d0
    r = np.linalg.norm(a.state[:, :3], axis=1)
    assert (r <= 30.0).all()
    path = tmp_path / "scene.json"
    path.write_text(json.dumps(scene))
    b = geofield.Flock(400, seed=5, backend=backend, world_radius=50, scene=path)
    c = geofield.Flock(400, seed=5, backend=backend, world_radius=50,
                       obstacles=scene["obstacles"], predators=scene["predators"])
    b.step(300)
    c.step(300)
    np.testing.assert_array_equal(a.state, b.state)
    np.testing.assert_array_equal(a.state, c.state)
    np.testing.assert_array_equal(a.predators, c.predators)
    # An OpenSteer world and a number of predators.
    d = geofield.Flock(200, seed=1, backend=backend, world_radius=50,
                       scene="opensteer:outside-spheres", predators=2)
    assert d.step(20).predators.shape == (2, 6)
    with pytest.raises(ValueError, match=r"obstacles\[0\]\.sphere\.radius"):
        geofield.Flock(16, obstacles=[{"sphere": {"centre": [0, 0, 0], "radius": -1}}])
    with pytest.raises(ValueError, match="unknown variant"):
        geofield.Flock(16, obstacles=[{"cube": {}}])
    with pytest.raises(ValueError, match="opensteer:cube"):
        geofield.Flock(16, scene="opensteer:cube")
