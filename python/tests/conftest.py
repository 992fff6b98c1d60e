"""Shared fixtures of the geofield pytest suite. Backends: the CPU always; CUDA where a usable
GPU is found (``geofield.info()["cuda_available"]``), so the same tests run on the GPU machine."""

import numpy as np
import pytest

import geofield

BACKENDS = ["cpu"] + (["cuda"] if geofield.info()["cuda_available"] else [])


@pytest.fixture(params=BACKENDS)
def backend(request):
    return request.param


@pytest.fixture
def rng():
    return np.random.default_rng(20261126)
