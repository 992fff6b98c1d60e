"""geofield: spatial simulations of the environment on GPUs and CPUs.

The same library as the ``geofield`` command line, from numpy, pandas and xarray:

- :func:`disperse`: seed density maps from a stem map (SORTIE-ND-style kernels).
- :func:`forest.simulate`: the forest year by year (seed production, dispersal, establishment,
  growth, mortality) from a stem map and a species file, or a SORTIE-ND parameter file.
- :func:`krige`, :func:`krige_points`, :func:`variogram`, :func:`cross_validate`: kriging;
  :func:`indicator_krige`: probability maps; :func:`simulate`: conditional Gaussian simulation (realisations honouring the samples);
  :func:`krige3d`, :func:`variogram3d`: 3-D kriging (NetCDF-ready xarray); :func:`cokrige`:
  cokriging with a linear model of coregionalisation;
  :mod:`geofield.pykrige` is a drop-in for PyKrige's ``OrdinaryKriging``/``UniversalKriging`` and
  their 3-D versions.
- :class:`NeighborIndex`: exact neighbour searches, a drop-in for scipy's ``cKDTree`` (k-NN,
  radius queries, pairs, pair counts, p = 1/2/inf, periodic boxes); :func:`ripley_k`: Ripley's K; :func:`pair_correlation`: g(r);
  :func:`csr_envelope`: their envelopes under randomness (pointwise or global);
  :func:`mad_test`, :func:`dclf_test`: the MAD and DCLF tests; :func:`csr_patterns`: the
  simulated patterns.
- :class:`Flock`: OpenSteer's boids, state resident on the GPU between steps.
- :func:`wind`: a mass-consistent 3-D wind field over terrain from stations.

Every function takes ``backend="auto"`` (CUDA when a usable GPU is found, else the CPU),
``"cpu"`` or ``"cuda"``/``"cuda:N"``; both compute the same function. :func:`info` says which
backend ``"auto"`` picks and why. Errors are :class:`GeofieldError` subclasses that are also
``ValueError``, ``OSError`` or ``RuntimeError``.

Long calls release the GIL and are interruptible: Ctrl-C raises ``KeyboardInterrupt`` within a
fraction of a second, and the process stays usable. ``progress=True`` shows a progress bar
(tqdm if installed, else a text bar on stderr).
"""

from . import _native
from ._errors import GeofieldError, GeofieldIOError, GeofieldRuntimeError, GeofieldValueError
from .dispersal import disperse
from .flocking import Flock
from .kriging3d import cokrige, krige3d, variogram3d
from .kriging import (cross_validate, indicator_krige, krige, krige_points, simulate, variogram,
                      variogram_map)
from .neighbors import (NeighborIndex, csr_envelope, csr_patterns, dclf_test, mad_test,
                        pair_correlation, ripley_k)
from .wind import wind
from . import forest, pykrige

__version__ = _native.__version__

__all__ = [
    "GeofieldError",
    "GeofieldIOError",
    "GeofieldRuntimeError",
    "GeofieldValueError",
    "Flock",
    "NeighborIndex",
    "cokrige",
    "cross_validate",
    "disperse",
    "forest",
    "indicator_krige",
    "krige",
    "krige3d",
    "simulate",
    "krige_points",
    "variogram",
    "variogram_map",
    "variogram3d",
    "wind",
    "info",
    "pykrige",
    "csr_envelope",
    "csr_patterns",
    "dclf_test",
    "mad_test",
    "pair_correlation",
    "ripley_k",
]


def info(device: int = 0) -> dict:
    """The version, whether CUDA is usable (and why not), the GPU, and what ``backend="auto"``
    picks: ``{"version", "cpu_threads", "cuda_available", "cuda_unavailable_reason",
    "cuda_driver_version", "nvrtc_version", "device", "auto_backend"}``."""
    return dict(_native.info(device))
