"""Numba's OpenMP threads spin only briefly when idle (`fast_ops.start_threads_spinning_briefly`), unless the user chose a
wait policy. Speed is measured by `make bench` (the rows "... after NumPy"), never here."""
import os
import subprocess
import sys

import numba
import pytest

from minitorch import fast_ops

POLICY_VARIABLES = ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")

PROBE = """
import ctypes, os, sys
import numpy as np
import minitorch, numba
np.ones((64, 64)) @ np.ones((64, 64))
@numba.njit(parallel=True)
def on_every_thread(n):
    total = 0.0
    for step in numba.prange(n):
        total += step
    return total
on_every_thread(10**6)
print(numba.threading_layer(), os.environ.get("GOMP_SPINCOUNT", "-"), flush=True)
if numba.threading_layer() == "omp":
    ctypes.CDLL("libgomp.so.1").omp_display_env(1)
"""


def libgomp_spin(**settings: str) -> tuple[str, str, str]:
    """In a fresh process importing NumPy, then minitorch, with `settings` as the only wait policy: the threading
    layer, GOMP_SPINCOUNT in os.environ after the import, and the spin count libgomp itself reports."""
    env = {name: value for name, value in os.environ.items() if name not in POLICY_VARIABLES}
    result = subprocess.run([sys.executable, "-c", PROBE], env={**env, **settings}, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    layer, environ_value = result.stdout.split()
    spins = [line.split("=", 1)[1].strip(" '") for line in result.stderr.splitlines()
             if line.strip().startswith("GOMP_SPINCOUNT")]
    return layer, environ_value, spins[0] if spins else "-"


numba.get_num_threads()  # the pool is started (importing minitorch starts it, unless a wait policy is set)
needs_libgomp = pytest.mark.skipif(not sys.platform.startswith("linux") or numba.threading_layer() != "omp",
                                   reason="GOMP_SPINCOUNT applies to Numba's omp threading layer (libgomp) only")


@needs_libgomp
def test_numba_pool_starts_with_a_short_spin_and_leaves_the_environment_alone():
    assert libgomp_spin() == ("omp", "-", str(fast_ops.SPIN_COUNT))


@needs_libgomp
@pytest.mark.parametrize("setting, spins", [({"GOMP_SPINCOUNT": "50000"}, "50000"),
                                            ({"OMP_WAIT_POLICY": "passive"}, "0")])
def test_a_users_own_wait_policy_wins(setting, spins):
    layer, environ_value, libgomp = libgomp_spin(**setting)
    assert (layer, libgomp) == ("omp", spins)
    assert environ_value == setting.get("GOMP_SPINCOUNT", "-")


def test_the_variable_is_set_only_while_the_pool_starts(monkeypatch):
    seen = []
    monkeypatch.setattr(fast_ops, "thread_pool_started", lambda: False)
    monkeypatch.setattr(fast_ops.numba, "get_num_threads", lambda: seen.append(dict(environ)) or 2)
    environ = {"PATH": "/bin"}
    assert fast_ops.start_threads_spinning_briefly(environ)
    assert seen == [{"PATH": "/bin", "GOMP_SPINCOUNT": str(fast_ops.SPIN_COUNT)}] and environ == {"PATH": "/bin"}


@pytest.mark.parametrize("environ", [{"GOMP_SPINCOUNT": "7"}, {"OMP_WAIT_POLICY": "active"}])
def test_nothing_is_changed_when_the_user_set_a_policy(monkeypatch, environ):
    monkeypatch.setattr(fast_ops, "thread_pool_started", lambda: False)
    monkeypatch.setattr(fast_ops.numba, "get_num_threads", lambda: pytest.fail("the pool must not start here"))
    before = dict(environ)
    assert not fast_ops.start_threads_spinning_briefly(environ) and environ == before


def test_too_late_once_the_pool_has_started():
    assert fast_ops.thread_pool_started()
    environ = {}
    assert not fast_ops.start_threads_spinning_briefly(environ) and environ == {}
