"""OpenSteer's boids (the FLAME GPU paper's benchmark) on geofield's neighbour search."""

from __future__ import annotations

import json
import os

from . import _native, _progress


class Flock:
    """A flock of ``n`` boids. On the GPU the state stays on the device between :meth:`step`
    calls; :attr:`state` copies it out.

    Parameters
    ----------
    n : int
        Number of agents.
    mode : {"nearest7", "nearestK", "radius"}
        Steer by the up to 7 (or K) nearest others within the neighbour radius (the paper's),
        or by every other within it (OpenSteer's original).
    start : {"dense", "uniform"}
        OpenSteer's dense ball at the centre, or uniform over the world.
    seed : int
        Seed of the start (the same seed gives the same flock on every backend).
    backend : {"auto", "cpu", "cuda", "cuda:N"}
    world_radius : float, optional
        Radius of the spherical world (default grows with n as the CLI's).
    index : {"uniform", "dynamic", "brute"}
        The neighbour index rebuilt every step.
    scene : str, os.PathLike or dict, optional
        Obstacles and predators: the path of a JSON scene file (``geofield flock --scene``'s
        format), one of OpenSteer's boids worlds (``"opensteer:outside-spheres"``, see
        ``geofield flock --help``) or the file's content as a dict (``{"obstacles": [...],
        "predators": [...], "evasion": {...}, "avoidance": {...}}``).
    obstacles : list of dict, optional
        Obstacles in the scene file's format, e.g. ``{"sphere": {"centre": [0, 0, 0],
        "radius": 25, "seen_from": "outside"}}``, ``{"box": {"centre": ..., "size": [w, h,
        d]}}``, ``{"rectangle": {...}}``, ``{"plane": {"point": ..., "normal": ...}}``; added to
        the scene's. OpenSteer's obstacle avoidance (1 s look-ahead) overrides flocking.
    predators : int or list of dict, optional
        Predators, e.g. ``{"start": [40, 0, 0], "max_speed": 12}``, or a number of them with
        default limits placed on a circle of 0.8 world radii; added to the scene's. Each
        pursues its nearest boid; boids within 20 m flee it.
    """

    def __init__(self, n, mode="nearest7", start="dense", seed=0, backend="auto",
                 world_radius=None, index="uniform", scene=None, obstacles=None,
                 predators=None):
        path, doc, count = None, None, 0
        if isinstance(predators, int) and not isinstance(predators, bool):
            count, predators = int(predators), None
        if isinstance(scene, str) and scene.startswith("opensteer:"):
            path = scene
            if obstacles is not None or predators is not None:
                raise ValueError("obstacles=/predators= lists cannot extend an opensteer: preset; "
                                 "use predators=<count>")
        elif isinstance(scene, (str, os.PathLike)):
            path = os.fspath(scene)
            if obstacles is not None or predators is not None:
                with open(path, encoding="utf-8") as f:
                    doc = json.load(f)
                path = None
        elif scene is not None:
            doc = dict(scene)
        if obstacles is not None or predators is not None:
            doc = dict(doc or {})
            doc["obstacles"] = list(doc.get("obstacles", [])) + list(obstacles or [])
            doc["predators"] = list(doc.get("predators", [])) + list(predators or [])
        self._sim = _native.Flock(int(n), mode, start, int(seed), backend,
                                  None if world_radius is None else float(world_radius), index,
                                  scene_path=path,
                                  scene_json=None if doc is None else json.dumps(doc),
                                  n_predators=count)

    def step(self, n=1, progress=False):
        """Advance ``n`` steps of 1/60 s. ``progress=True`` shows a bar of the steps done.
        Interruptible: Ctrl-C raises ``KeyboardInterrupt`` at the next step boundary (within a
        fraction of a second); the flock keeps the steps it finished (:attr:`steps_taken`)."""
        with _progress.bar(progress, "flock") as bar:
            self._sim.step(int(n), progress=bar)
        return self

    @property
    def state(self):
        """(n, 6) float32 array: x, y, z, vx, vy, vz (agents in id order)."""
        return self._sim.state

    @property
    def predators(self):
        """(m, 6) float32 array of the predators: x, y, z, vx, vy, vz (scene order)."""
        return self._sim.predators

    def collisions(self):
        """Number of boids now inside a solid obstacle (0 when avoidance works)."""
        return self._sim.collisions()

    def predator_distances(self):
        """Each predator's distance to its nearest boid, m."""
        return list(self._sim.predator_distances())

    @property
    def steps_taken(self):
        return self._sim.steps_taken

    @property
    def backend(self):
        """"cpu" or "cuda:N"."""
        return self._sim.backend

    @property
    def world_radius(self):
        return self._sim.world_radius

    def stats(self):
        """Polarisation, local alignment, mean nearest-neighbour distance, mean speed and mean
        radius fraction of the current state."""
        return dict(self._sim.stats())
