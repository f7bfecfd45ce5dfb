"""The tensor backends every chapter-2 tensor test runs on: chapter 3 appends its fast backends here."""
import pytest

from minitorch import CudaOps, FastBackend, SimpleBackend, TensorBackend, cuda_available

BACKENDS = [pytest.param(SimpleBackend, id="simple"), pytest.param(FastBackend, id="fast")]

BACKENDS.append(pytest.param(TensorBackend(CudaOps), id="cuda") if cuda_available() else
                pytest.param(None, id="cuda", marks=pytest.mark.skip(reason="no CUDA GPU and NUMBA_ENABLE_CUDASIM unset")))
