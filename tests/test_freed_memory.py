"""glibc keeps freed blocks for reuse once minitorch is imported (`fast_ops.keep_freed_memory`), unless the user set its
allocator up: a training step's activations then reuse the last step's pages instead of trapping on fresh ones."""
import os
import platform
import subprocess
import sys

import pytest

from minitorch import fast_ops

PROBE = """
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

glibc_only = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")


def page_traps(blocks: str = "activations", **settings: str) -> list[int]:
    """Page traps of three rounds of allocating and freeing `blocks` in a fresh process importing minitorch:
    "activations" (twenty 2 MB blocks) or "output" (one 80 MB block, an addition's output of 10^7 float64s)."""
    env = {name: value for name, value in os.environ.items() if not name.startswith(("MALLOC_", "GLIBC_"))}
    run = subprocess.run([sys.executable, "-c", PROBE, blocks], env={**env, **settings}, capture_output=True,
                         text=True, check=True, timeout=120)
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


@glibc_only
@pytest.mark.parametrize("variable", ["MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_"])
def test_the_users_allocator_settings_win(variable):
    assert min(page_traps(**{variable: "131072"})) > 5000


@pytest.mark.parametrize("variable", ["MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES"])
def test_nothing_is_changed_when_the_user_chose(variable):
    assert fast_ops.keep_freed_memory({variable: "1"}) is False
