"""Shared pytest set-up: the `task` marker of the exercise edition and optional PyTorch."""
import os

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("minitorch", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("minitorch")


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
