"""The tensor backends every chapter-2 tensor test runs on, by name: simple, fast and (in the simulator) cuda."""
import pytest

from minitorch import backend, cuda_available

BACKENDS = [pytest.param(backend("simple"), id="simple"), pytest.param(backend("fast"), id="fast")]

BACKENDS.append(pytest.param(backend("cuda"), id="cuda") if cuda_available() else
                pytest.param(None, id="cuda", marks=pytest.mark.skip(reason="no CUDA GPU and NUMBA_ENABLE_CUDASIM unset")))
