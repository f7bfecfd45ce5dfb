"""Shared pytest set-up: the `task` marker of the exercise edition and optional PyTorch."""
import os

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import pytest
from hypothesis import HealthCheck, settings

from minitorch.cuda_ops import CudaStorage

settings.register_profile("minitorch", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("minitorch")

CUDA_MAX_EXAMPLES = 8
"Most hypothesis examples per test on the CUDA backend: in the simulator every example launches dozens of kernels."


def pytest_addoption(parser):
    parser.addoption("--task", default=None, help="run only the tests of this exercise task, e.g. 0.1")


def pytest_configure(config):
    config.addinivalue_line("markers", "task(id): the test checks exercise task `id` (run with --task id)")


def pytest_collection_modifyitems(config, items):
    task = config.getoption("--task")
    if task is None:
        return
    selected = [item for item in items if any(task in mark.args for mark in item.iter_markers("task"))]
    config.hook.pytest_deselected(items=[item for item in items if item not in selected])
    items[:] = selected


@pytest.fixture(autouse=True)
def fewer_examples_on_cuda(request):
    "Cap the hypothesis examples of a test run with a CUDA backend (its `backend` parameter keeps `CudaStorage`)."
    callspec = getattr(request.node, "callspec", None)
    test = request.function
    chosen = getattr(test, "_hypothesis_internal_use_settings", None)  # where @settings/@given keep them
    on_cuda = getattr(callspec.params.get("backend"), "storage", None) is CudaStorage if callspec else False
    if chosen is None or not on_cuda:
        yield
        return
    test._hypothesis_internal_use_settings = settings(chosen, max_examples=min(chosen.max_examples, CUDA_MAX_EXAMPLES))
    try:
        yield
    finally:
        test._hypothesis_internal_use_settings = chosen
