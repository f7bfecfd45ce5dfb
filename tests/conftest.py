"""Shared pytest set-up: the `task` marker of the exercise edition, optional PyTorch, and how deep to test.

`MINITORCH_TEST_DEPTH=full` (CI sets it) runs every hypothesis test with the examples it chose, and the tests
marked `full_depth` (long runs checked elsewhere in short); the default, `quick`, runs at most
`QUICK_MAX_EXAMPLES` of them (the chosen counts are the full depth). On the CUDA
simulator every example launches dozens of kernels in Python threads, so there the caps are lower still.
"""
import os

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import pytest
from hypothesis import HealthCheck, settings

from minitorch.cuda_ops import CudaStorage
from minitorch.tensor_ops import set_default_backend

settings.register_profile("minitorch", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("minitorch")

DEPTH = os.environ.get("MINITORCH_TEST_DEPTH", "quick")
QUICK_MAX_EXAMPLES = 10
"Most hypothesis examples per test at the quick depth."
CUDA_MAX_EXAMPLES = {"quick": 4, "full": 8}
"Most hypothesis examples per test on the CUDA backend (in the simulator), at each depth."


def examples(chosen: int, on_cuda: bool, depth: str = DEPTH) -> int:
    "The examples a hypothesis test that chose `chosen` runs at `depth`, on the CUDA simulator or not."
    if depth == "quick":
        chosen = min(chosen, QUICK_MAX_EXAMPLES)
    return min(chosen, CUDA_MAX_EXAMPLES[depth]) if on_cuda else chosen


def pytest_addoption(parser):
    parser.addoption("--task", default=None, help="run only the tests of this exercise task, e.g. 0.1")


def pytest_configure(config):
    if DEPTH not in ("quick", "full"):
        raise pytest.UsageError(f"MINITORCH_TEST_DEPTH must be quick or full, got {DEPTH!r}")
    config.addinivalue_line("markers", "task(id): the test checks exercise task `id` (run with --task id)")
    config.addinivalue_line("markers", "full_depth: a long run made only at MINITORCH_TEST_DEPTH=full (CI) or "
                                       "in a task's check")


def pytest_collection_modifyitems(config, items):
    task = config.getoption("--task")
    if DEPTH == "quick" and task is None:
        long_run = pytest.mark.skip(reason="a long run: MINITORCH_TEST_DEPTH=full (as CI sets it) makes it")
        for item in items:
            if item.get_closest_marker("full_depth"):
                item.add_marker(long_run)
    if task is None:
        return
    selected = [item for item in items if any(task in mark.args for mark in item.iter_markers("task"))]
    config.hook.pytest_deselected(items=[item for item in items if item not in selected])
    items[:] = selected


@pytest.fixture(autouse=True)
def examples_at_this_depth(request):
    "Set the hypothesis examples of this test by `examples` (a CUDA backend: its `backend` parameter keeps `CudaStorage`)."
    callspec = getattr(request.node, "callspec", None)
    test = request.function
    chosen = getattr(test, "_hypothesis_internal_use_settings", None)  # where @settings/@given keep them
    on_cuda = getattr(callspec.params.get("backend"), "storage", None) is CudaStorage if callspec else False
    if chosen is None or examples(chosen.max_examples, on_cuda) == chosen.max_examples:
        yield
        return
    test._hypothesis_internal_use_settings = settings(chosen, max_examples=examples(chosen.max_examples, on_cuda))
    try:
        yield
    finally:
        test._hypothesis_internal_use_settings = chosen


@pytest.fixture(autouse=True)
def simple_default_backend():
    "Every test starts with the package's default backend, simple, whatever the test before it chose."
    set_default_backend("simple")
    yield
    set_default_backend("simple")


@pytest.fixture
def fast_default_backend():
    "The fast backend as the default, as chapters 4 and 5 set it in their first cell (`pytestmark` of their files)."
    set_default_backend("fast")
    yield
