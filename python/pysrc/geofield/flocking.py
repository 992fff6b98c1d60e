"""OpenSteer's boids (the FLAME GPU paper's benchmark) on geofield's neighbour search."""

from __future__ import annotations

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
    """

    def __init__(self, n, mode="nearest7", start="dense", seed=0, backend="auto",
                 world_radius=None, index="uniform"):
        self._sim = _native.Flock(int(n), mode, start, int(seed), backend,
                                  None if world_radius is None else float(world_radius), index)

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
