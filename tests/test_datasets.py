"""The toy datasets (seeded, labelled by their rule, inside the unit square) and the data files' plumbing."""
import gzip
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import minitorch
from minitorch import data_files
from minitorch.data_files import (DataNotFoundError, cache_folder, data_folders, fetch_from_mirrors, find_data,
                                  pip_download, write_atomic)


@pytest.mark.parametrize("name", list(minitorch.datasets))
@given(size=st.integers(min_value=1, max_value=60), seed=st.integers(min_value=0, max_value=10**6))
def test_datasets_are_seeded_and_well_formed(name, size, seed):
    graph = minitorch.datasets[name](size, seed=seed)
    assert graph == minitorch.datasets[name](size, seed=seed)
    assert graph.N == size == len(graph.X) == len(graph.y)
    assert set(graph.y) <= {0, 1}
    assert all(0.0 <= value <= 1.0 for point in graph.X for value in point)


@pytest.mark.parametrize("name, rule", [
    ("Simple", lambda x1, x2: x1 < 0.5),
    ("Diag", lambda x1, x2: x1 + x2 < 0.5),
    ("Split", lambda x1, x2: x1 < 0.2 or x1 > 0.8),
    ("Xor", lambda x1, x2: (x1 < 0.5) != (x2 < 0.5)),
    ("Circle", lambda x1, x2: (x1 - 0.5) ** 2 + (x2 - 0.5) ** 2 > 0.1),
])
def test_labels_follow_the_rule(name, rule):
    graph = minitorch.datasets[name](200, seed=7)
    assert graph.y == [int(rule(x1, x2)) for x1, x2 in graph.X]
    assert 0 < sum(graph.y) < 200


def test_spiral_has_balanced_arms():
    graph = minitorch.datasets["Spiral"](101, seed=0)
    assert graph.y.count(0) == 50 and graph.y.count(1) == 51


# Data files (09_data_files): where the readers of chapters 4 and 5 look, and how they download.

def test_data_is_looked_for_in_minitorch_data_then_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("MINITORCH_DATA", raising=False)
    cache = tmp_path / "cache" / "minitorch" / "text"
    assert data_folders("text") == [cache] == [cache_folder("text")]
    monkeypatch.setenv("MINITORCH_DATA", str(tmp_path / "shared"))
    assert data_folders("text") == [tmp_path / "shared" / "text", cache]
    for folder in data_folders("text"):
        write_atomic(folder / "a.txt", b"a")
    assert find_data("text", ["a.txt"]) == tmp_path / "shared" / "text"          # the shared folder first
    write_atomic(cache / "b.txt", b"b")
    assert find_data("text", ["a.txt", "b.txt"]) == cache and find_data("text", ["c.txt"]) is None
    with pytest.raises(ValueError, match="plain folder name"):
        data_folders("../text")


def test_write_atomic_leaves_the_whole_file_or_nothing(tmp_path, monkeypatch):
    assert write_atomic(tmp_path / "new" / "f.bin", b"abc").read_bytes() == b"abc"
    write_atomic(tmp_path / "new" / "f.bin", b"replaced")

    def interrupted(source, target):
        raise KeyboardInterrupt

    monkeypatch.setattr(data_files.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_atomic(tmp_path / "new" / "f.bin", b"half")
    assert [path.name for path in (tmp_path / "new").iterdir()] == ["f.bin"]      # no temporary file left
    assert (tmp_path / "new" / "f.bin").read_bytes() == b"replaced"


def test_fetch_from_mirrors_takes_the_first_copy_that_passes_the_check(tmp_path):
    def gzipped(data, source):
        if data[:2] != b"\x1f\x8b":
            raise ValueError(f"{source} is not gzip")

    write_atomic(tmp_path / "wrong" / "f.gz", b"<html>not found</html>")
    write_atomic(tmp_path / "good" / "f.gz", gzip.compress(b"x"))
    mirrors = [(tmp_path / name).as_uri() + "/" for name in ("absent", "wrong", "good")]
    data, failures = fetch_from_mirrors("f.gz", mirrors, gzipped, timeout=5.0)
    assert gzip.decompress(data) == b"x" and len(failures) == 2
    assert mirrors[0] + "f.gz" in failures[0] and "is not gzip" in failures[1]
    assert fetch_from_mirrors("f.gz", mirrors[:2], gzipped) == (None, failures)
    assert fetch_from_mirrors("f.gz", [], gzipped) == (None, [])


def test_pip_download_places_only_a_complete_archive(tmp_path, monkeypatch):
    failure = pip_download("not a requirement!", "none.tar.gz", tmp_path / "text")
    assert failure.startswith("pip download not a requirement! failed") and "Invalid requirement" in failure
    assert list((tmp_path / "text").iterdir()) == []                             # pip's temporary folder is gone

    def pip(command, **options):
        folder = Path(command[command.index("-d") + 1])
        assert folder.parent == tmp_path / "text" and command[-3] == "names==0.3.0"
        (folder / "names-0.3.0.tar.gz").write_bytes(b"archive")
        return subprocess.CompletedProcess(command, 0)

    monkeypatch.setattr(data_files.subprocess, "run", pip)
    assert pip_download("names==0.3.0", "names-0.3.0.tar.gz", tmp_path / "text") is None
    assert [path.name for path in (tmp_path / "text").iterdir()] == ["names-0.3.0.tar.gz"]
    failure = pip_download("names==0.3.0", "other.tar.gz", tmp_path / "text")
    assert failure == "pip download names==0.3.0 did not write other.tar.gz"
    assert [path.name for path in (tmp_path / "text").iterdir()] == ["names-0.3.0.tar.gz"]


def test_the_readers_errors_are_one_error():
    assert issubclass(minitorch.MNISTNotFoundError, DataNotFoundError)
    assert issubclass(minitorch.TextDataNotFoundError, DataNotFoundError)
    assert issubclass(DataNotFoundError, FileNotFoundError)   # callers catching FileNotFoundError still do
