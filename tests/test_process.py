"""What importing minitorch changes in the process (`minitorch.process`): Numba's OpenMP threads spin only briefly when
idle, on a libgomp of their own when PyTorch brought one first; glibc keeps freed blocks for reuse. A setting of the
user's own wins, and `MINITORCH_PROCESS_SETTINGS=off` changes nothing. Speed is measured by `make bench` (the rows
"... after NumPy", in both import orders), never here."""
import importlib.util
import os
import platform
import subprocess
import sys

import numba
import pytest

from minitorch import process

POLICY_VARIABLES = ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")

SPIN_PROBE = """
import os, sys
if sys.argv[1] == "torch first":
    import torch
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
print(numba.threading_layer(), os.environ.get("GOMP_SPINCOUNT", "-"), *minitorch.process.CHANGED.values(), flush=True)
"""


def fresh_env(**settings: str) -> dict[str, str]:
    "This process's environment without any wait policy, allocator setting or off switch, plus `settings`."
    env = {name: value for name, value in os.environ.items() if name not in POLICY_VARIABLES + (process.OFF_VARIABLE,)
           and not name.startswith(("MALLOC_", "GLIBC_"))}
    return {**env, **settings}


def libgomp_spin(order: str = "minitorch first", **settings: str) -> tuple[str, ...]:
    """In a fresh process importing NumPy (PyTorch first, for `order="torch first"`), then minitorch, with `settings`:
    the threading layer, GOMP_SPINCOUNT in os.environ after the import, `CHANGED`'s two values, and the spin count of
    each libgomp that started, in the order they started."""
    result = subprocess.run([sys.executable, "-c", SPIN_PROBE, order], env=fresh_env(OMP_DISPLAY_ENV="verbose", **settings),
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    spins = [line.split("=", 1)[1].strip(" '") for line in result.stderr.splitlines()
             if line.strip().startswith("GOMP_SPINCOUNT")]
    return (*result.stdout.split(), *spins)


numba.get_num_threads()  # the pool is started (importing minitorch starts it, unless a wait policy is set)
needs_libgomp = pytest.mark.skipif(not sys.platform.startswith("linux") or numba.threading_layer() != "omp",
                                   reason="GOMP_SPINCOUNT applies to Numba's omp threading layer (libgomp) only")
glibc_only = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
SPIN = str(process.SPIN_COUNT)


@needs_libgomp
def test_numba_pool_starts_with_a_short_spin_and_leaves_the_environment_alone():
    assert libgomp_spin() == ("omp", "-", "True", str(platform.libc_ver()[0] == "glibc"), SPIN)


@needs_libgomp
@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="PyTorch is not installed")
def test_with_torch_imported_first_the_pool_gets_a_libgomp_of_its_own_with_our_spin():
    layer, environ_value, spin_changed, _, *spins = libgomp_spin("torch first")
    assert (layer, environ_value, spin_changed) == ("omp", "-", "True")
    assert spins == ["300000", SPIN]  # PyTorch's libgomp (its default), then the pool's own, started with ours


@needs_libgomp
@pytest.mark.parametrize("setting, spins", [({"GOMP_SPINCOUNT": "50000"}, "50000"),
                                            ({"OMP_WAIT_POLICY": "passive"}, "0")])
def test_a_users_own_wait_policy_wins(setting, spins):
    layer, environ_value, spin_changed, _, libgomp = libgomp_spin(**setting)
    assert (layer, spin_changed, libgomp) == ("omp", "False", spins)
    assert environ_value == setting.get("GOMP_SPINCOUNT", "-")


@needs_libgomp
@pytest.mark.parametrize("value", ["off", "0", "False"])
def test_the_off_switch_leaves_libgomp_at_its_default(value):
    assert libgomp_spin(**{process.OFF_VARIABLE: value}) == ("omp", "-", "False", "False", "300000")


def test_the_variable_is_set_only_while_the_pool_starts(monkeypatch):
    seen = []
    monkeypatch.setattr(process, "thread_pool_started", lambda: False)
    monkeypatch.setattr(process, "libgomp_loaded", lambda: False)
    monkeypatch.setattr(process.numba, "get_num_threads", lambda: seen.append((dict(environ), sys.getdlopenflags())) or 2)
    environ, flags = {"PATH": "/bin"}, sys.getdlopenflags()
    assert process.start_threads_spinning_briefly(environ)
    assert seen == [({"PATH": "/bin", "GOMP_SPINCOUNT": SPIN}, flags)] and environ == {"PATH": "/bin"}
    assert sys.getdlopenflags() == flags


@pytest.mark.skipif(not hasattr(os, "RTLD_DEEPBIND"), reason="RTLD_DEEPBIND is glibc's")
def test_a_libgomp_loaded_before_makes_the_pool_load_with_deepbind_only_while_it_starts(monkeypatch):
    seen = []
    monkeypatch.setattr(process, "thread_pool_started", lambda: False)
    monkeypatch.setattr(process, "libgomp_loaded", lambda: True)
    monkeypatch.setattr(process.numba, "get_num_threads", lambda: seen.append(sys.getdlopenflags()) or 2)
    flags = sys.getdlopenflags()
    assert process.start_threads_spinning_briefly({})
    assert seen == [flags | os.RTLD_DEEPBIND] and sys.getdlopenflags() == flags


def test_libgomp_loaded_reads_the_maps_and_is_false_without_them(tmp_path):
    maps = tmp_path / "maps"
    maps.write_text("7f00-7f01 r-xp 0 08:01 1 /usr/lib/x86_64-linux-gnu/libgomp.so.1.0.0\n")
    assert process.libgomp_loaded(str(maps))
    maps.write_text("7f00-7f01 r-xp 0 08:01 1 /usr/lib/libc.so.6\n")
    assert not process.libgomp_loaded(str(maps))
    assert not process.libgomp_loaded(str(tmp_path / "missing"))


@pytest.mark.parametrize("environ", [{"GOMP_SPINCOUNT": "7"}, {"OMP_WAIT_POLICY": "active"}])
def test_nothing_is_changed_when_the_user_set_a_policy(monkeypatch, environ):
    monkeypatch.setattr(process, "thread_pool_started", lambda: False)
    monkeypatch.setattr(process.numba, "get_num_threads", lambda: pytest.fail("the pool must not start here"))
    before = dict(environ)
    assert not process.start_threads_spinning_briefly(environ) and environ == before


def test_too_late_once_the_pool_has_started():
    assert process.thread_pool_started()
    environ = {}
    assert not process.start_threads_spinning_briefly(environ) and environ == {}


def test_apply_changes_nothing_when_turned_off(monkeypatch):
    monkeypatch.setattr(process, "start_threads_spinning_briefly", lambda environ: pytest.fail("turned off"))
    monkeypatch.setattr(process, "keep_freed_memory", lambda environ: pytest.fail("turned off"))
    assert process.apply({process.OFF_VARIABLE: "OFF"}) == {"threads spin briefly": False, "freed memory kept": False}
    assert process.turned_off({process.OFF_VARIABLE: " no "}) and not process.turned_off({process.OFF_VARIABLE: "on"})


TRAPS_PROBE = """
import resource
import numpy as np
import minitorch
import sys
def traps(sizes):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    blocks = [np.ones(size) for size in sizes]
    del blocks
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
sizes = [2**18 + 1000 * k for k in range(20)] if sys.argv[1] == "activations" else [10**7]
print(*[traps(sizes) for _ in range(3)])
"""


def page_traps(blocks: str = "activations", **settings: str) -> list[int]:
    """Page traps of three rounds of allocating and freeing `blocks` in a fresh process importing minitorch:
    "activations" (twenty 2 MB blocks) or "output" (one 80 MB block, an addition's output of 10^7 float64s)."""
    # NumPy asks for huge pages for big arrays where the kernel allows it: counts would then depend on free memory
    run = subprocess.run([sys.executable, "-c", TRAPS_PROBE, blocks], env=fresh_env(NUMPY_MADVISE_HUGEPAGE="0", **settings),
                         capture_output=True, text=True, check=True, timeout=120)
    return [int(count) for count in run.stdout.split()]


@glibc_only
def test_freed_blocks_are_reused_without_page_traps():
    first, *later = page_traps()
    assert first > 5000 and max(later) < 100, (first, later)


@glibc_only
def test_an_80_mb_block_is_reused_too():
    first, *later = page_traps("output")
    assert first > 100 and max(later) < 100, (first, later)
    assert min(page_traps("output", MALLOC_MMAP_THRESHOLD_=str(32 * 2**20))) > 100  # mapped afresh each time
    assert min(page_traps("output", **{process.OFF_VARIABLE: "off"})) > 100  # glibc's default: the same


@glibc_only
@pytest.mark.parametrize("variable", ["MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_"])
def test_the_users_allocator_settings_win(variable):
    assert min(page_traps(**{variable: "131072"})) > 5000


@pytest.mark.parametrize("variable", ["MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES"])
def test_nothing_is_changed_when_the_user_chose(variable):
    assert process.keep_freed_memory({variable: "1"}) is False


@pytest.mark.parametrize("argv, module", [
    (["python", "-m", "minitorch.gpt", "--steps", "10"], "minitorch.gpt"),
    (["python", "-X", "dev", "-W", "error", "-mminitorch.mnist_train"], "minitorch.mnist_train"),
    (["python", "-u", "-m"], None),
    (["python", "train.py", "-m", "minitorch.gpt"], None),
    (["python", "-c", "import minitorch", "-m", "minitorch.gpt"], None),
    (["python"], None)])
def test_started_as_module_reads_the_interpreters_own_options_only(argv, module):
    assert process.started_as_module(argv) == module


def test_only_our_training_commands_spin_longer():
    assert [process.spin_count(["python", "-m", name]) for name in process.COMMANDS] == [process.COMMAND_SPIN_COUNT] * 2
    assert process.spin_count(["python", "-m", "ipykernel_launcher", "-f", "kernel.json"]) == process.SPIN_COUNT
    assert process.spin_count(["python", "-m", "pytest"]) == process.spin_count([]) == process.SPIN_COUNT
    assert process.spin_count() == process.SPIN_COUNT  # this process: pytest


@needs_libgomp
def test_a_training_command_starts_its_pool_with_the_command_spin():
    result = subprocess.run([sys.executable, "-m", "minitorch.mnist_train", "--help"],
                            env=fresh_env(OMP_DISPLAY_ENV="verbose"), capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    spins = [line.split("=", 1)[1].strip(" '") for line in result.stderr.splitlines()
             if line.strip().startswith("GOMP_SPINCOUNT")]
    assert spins == [str(process.COMMAND_SPIN_COUNT)]
