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
def traps():
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    blocks = [np.ones(2**18 + 1000 * k) for k in range(20)]
    del blocks
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
print(*[traps() for _ in range(3)])
"""

glibc_only = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")


def page_traps(**settings: str) -> list[int]:
    "Page traps of three rounds of allocating and freeing 40 MB in a fresh process importing minitorch."
    env = {name: value for name, value in os.environ.items() if not name.startswith(("MALLOC_", "GLIBC_"))}
    run = subprocess.run([sys.executable, "-c", PROBE], env={**env, **settings}, capture_output=True, text=True,
                         check=True, timeout=120)
    return [int(count) for count in run.stdout.split()]


@glibc_only
def test_freed_blocks_are_reused_without_page_traps():
    first, *later = page_traps()
    assert first > 5000 and max(later) < 100, (first, later)


@glibc_only
@pytest.mark.parametrize("variable", ["MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_"])
def test_the_users_allocator_settings_win(variable):
    assert min(page_traps(**{variable: "131072"})) > 5000


@pytest.mark.parametrize("variable", ["MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES"])
def test_nothing_is_changed_when_the_user_chose(variable):
    assert fast_ops.keep_freed_memory({variable: "1"}) is False
