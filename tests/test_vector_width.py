"""Numba compiles with 512-bit vectors preferred on processors with AVX-512 (`fast_ops.prefer_wide_vectors`), unless the
user chose Numba's processor, and only while its compiler has not been set up; the product's register tile is four of
the widest vector registers of the processor it compiles for."""

import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from minitorch import fast_ops

HOST_WITH_AVX512 = "+avx,+avx2,+avx512f,+fma,-amx-tile"
HOST_WITHOUT = "+avx,+avx2,-avx512f,+fma"


def fresh_config(**settings: object) -> types.SimpleNamespace:
    "A stand-in for `numba.config` with nothing chosen by the user, then `settings`."
    return types.SimpleNamespace(**{"CPU_NAME": None, "CPU_FEATURES": None, **settings})


@pytest.fixture
def compiler_not_started(monkeypatch):
    monkeypatch.setattr(fast_ops, "compiler_started", lambda: False)


def test_wide_vectors_are_added_to_the_hosts_features(monkeypatch, compiler_not_started):
    monkeypatch.setattr(fast_ops, "get_host_cpu_features", lambda: HOST_WITH_AVX512)
    config = fresh_config()
    assert fast_ops.prefer_wide_vectors(config)
    assert config.CPU_FEATURES == HOST_WITH_AVX512 + ",-prefer-256-bit"


@pytest.mark.parametrize("features", [HOST_WITHOUT, "+neon,+fp-armv8", ""])
def test_nothing_changes_without_avx512(monkeypatch, compiler_not_started, features):
    monkeypatch.setattr(fast_ops, "get_host_cpu_features", lambda: features)
    config = fresh_config()
    assert not fast_ops.prefer_wide_vectors(config) and config.CPU_FEATURES is None


@pytest.mark.parametrize("chosen", [{"CPU_NAME": "skylake-avx512"}, {"CPU_FEATURES": "+avx2"}, {"CPU_FEATURES": ""}])
def test_a_users_choice_of_processor_wins(monkeypatch, compiler_not_started, chosen):
    monkeypatch.setattr(fast_ops, "get_host_cpu_features", lambda: HOST_WITH_AVX512)
    config = fresh_config(**chosen)
    assert not fast_ops.prefer_wide_vectors(config)
    assert vars(config) == {**vars(fresh_config()), **chosen}


def test_too_late_once_the_compiler_is_set_up(monkeypatch):
    monkeypatch.setattr(fast_ops, "get_host_cpu_features", lambda: HOST_WITH_AVX512)
    assert fast_ops.compiler_started()  # importing minitorch compiles its first kernels
    config = fresh_config()
    assert not fast_ops.prefer_wide_vectors(config) and config.CPU_FEATURES is None


def environment_without_a_chosen_processor() -> dict[str, str]:
    "This process's environment without `NUMBA_CPU_NAME` and `NUMBA_CPU_FEATURES`."
    return {name: value for name, value in os.environ.items() if name not in ("NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES")}


def compiled_features(**settings: str) -> str:
    "The features Numba's compiler was set up with in a fresh process that imports minitorch with `settings`."
    check = ("import minitorch\nfrom numba.core.registry import cpu_target\n"
             "print(cpu_target.target_context.codegen()._tm_features)")
    env = environment_without_a_chosen_processor()
    return subprocess.run([sys.executable, "-c", check], env={**env, **settings}, capture_output=True, text=True,
                          check=True).stdout.strip()


def test_a_fresh_process_compiles_as_set_up():
    host = fast_ops.get_host_cpu_features()
    assert compiled_features() == (fast_ops.wide_vector_features(host) or host)
    assert compiled_features(NUMBA_CPU_FEATURES=host) == host


@pytest.mark.parametrize("features, width", [("+avx,+avx2,+avx512f,+fma", 64), ("+avx,+avx2,-avx512f,+fma", 32),
                                             ("+avx2", 32), ("+avx,+avx512f,-avx512f", 32), ("-avx512f,+avx512f", 64),
                                             ("+sse4.2,-avx", 16), ("+neon,+fp-armv8", 16), ("", 16)])
def test_vector_bytes_from_the_feature_list(features, width):
    assert fast_ops.vector_bytes(features) == width


@pytest.mark.parametrize("chosen", ["+avx2", ""])
def test_target_features_are_the_chosen_ones_else_the_hosts(monkeypatch, chosen):
    monkeypatch.setattr(fast_ops, "get_host_cpu_features", lambda: HOST_WITH_AVX512)
    assert fast_ops.target_features(fresh_config(CPU_FEATURES=chosen)) == chosen
    assert fast_ops.target_features(fresh_config()) == HOST_WITH_AVX512


def test_a_tile_row_is_four_of_the_widest_registers():
    assert fast_ops.VECTOR_BYTES == fast_ops.vector_bytes(fast_ops.target_features())
    assert fast_ops.TILE_BYTES == 4 * fast_ops.VECTOR_BYTES


@pytest.mark.parametrize("vector_bytes, itemsize, rows", [(32, 4, 3), (32, 8, 4), (64, 4, 4), (64, 8, 4), (16, 4, 4)])
def test_full_tiles_have_three_rows_only_for_float32_with_avx2(vector_bytes, itemsize, rows):
    "AVX2's 16 registers hold 3 rows of 4 float32 vectors with room to spare; 4 rows would take them all."
    assert fast_ops.full_tile_rows(vector_bytes, itemsize) == rows


def without_avx512(features: str) -> str:
    "LLVM's feature list `features` with AVX-512 and what builds on it switched off: a processor with AVX2 at most."
    return ",".join(f"-{feature[1:]}" if feature[1:].startswith(("avx512", "avx10", "evex512")) else feature
                    for feature in features.split(","))


@pytest.mark.full_depth  # 20 s: compiles the kernels afresh in a second process
@pytest.mark.skipif("+avx2" not in fast_ops.get_host_cpu_features().split(","), reason="needs a processor with AVX2")
def test_products_with_the_tiles_of_an_avx2_processor(tmp_path):
    "A fresh process compiled as for a Haswell (16 registers of 32 bytes) gets 128-byte tiles that multiply right."
    env = environment_without_a_chosen_processor()
    env.update(NUMBA_CPU_NAME="haswell", NUMBA_CPU_FEATURES=without_avx512(fast_ops.get_host_cpu_features()),
               NUMBA_CACHE_DIR=str(tmp_path))
    tile = ("import numpy as np; from minitorch import fast_ops; "
            "print(fast_ops.TILE_BYTES, *(fast_ops.full_rows(np.empty(1, t)) for t in (np.float32, np.float64)))")
    width = subprocess.run([sys.executable, "-c", tile], env=env, capture_output=True, text=True, check=True)
    assert width.stdout.strip() == "128 3 4"  # 128-byte tile rows; a full float32 tile of 3 rows, float64 of 4
    tiles = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "tiles_of_every_width",
                            str(Path(__file__).with_name("test_fast_kernels.py"))], env=env, capture_output=True, text=True)
    assert tiles.returncode == 0 and "\n14 passed" in tiles.stdout, tiles.stdout[-3000:]
