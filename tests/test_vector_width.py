"""Numba compiles with 512-bit vectors preferred on processors with AVX-512 (`fast_ops.prefer_wide_vectors`), unless the
user chose Numba's processor, and only while its compiler has not been set up."""

import os
import subprocess
import sys
import types

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


def compiled_features(**settings: str) -> str:
    "The features Numba's compiler was set up with in a fresh process that imports minitorch with `settings`."
    check = ("import minitorch\nfrom numba.core.registry import cpu_target\n"
             "print(cpu_target.target_context.codegen()._tm_features)")
    env = {name: value for name, value in os.environ.items() if name not in ("NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES")}
    return subprocess.run([sys.executable, "-c", check], env={**env, **settings}, capture_output=True, text=True,
                          check=True).stdout.strip()


def test_a_fresh_process_compiles_as_set_up():
    host = fast_ops.get_host_cpu_features()
    assert compiled_features() == (fast_ops.wide_vector_features(host) or host)
    assert compiled_features(NUMBA_CPU_FEATURES=host) == host
