"""Image datasets: the IDX reader, MNIST's fixed splits and facts, the download path (file:// mirrors), digits."""
import gzip
import importlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minitorch
from minitorch.mnist_data import IDX_TYPES, MNIST_FILES, MNISTNotFoundError, parse_idx

from minitorch import data_files
from minitorch import mnist_data as mnist_module

TEST_LABEL_COUNTS = [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]   # the standard MNIST test split


def idx_bytes(array: np.ndarray, code: int) -> bytes:
    "`array` written in IDX format with type `code`."
    header = bytes([0, 0, code, array.ndim]) + b"".join(int(size).to_bytes(4, "big") for size in array.shape)
    return header + array.astype(np.dtype(IDX_TYPES[code])).tobytes()


@pytest.mark.task("4.8")
@settings(max_examples=40)
@given(code=st.sampled_from(sorted(IDX_TYPES)), shape=st.lists(st.integers(0, 4), min_size=1, max_size=3),
       compressed=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_parse_idx_reads_every_type_and_shape(code, shape, compressed, seed):
    dtype = np.dtype(IDX_TYPES[code])
    rng = np.random.default_rng(seed)
    if dtype.kind == "f":
        array = rng.normal(size=shape).astype(dtype)
    else:
        info = np.iinfo(dtype)
        array = rng.integers(info.min, info.max, size=shape, endpoint=True).astype(dtype)
    data = idx_bytes(array, code)
    parsed = parse_idx(gzip.compress(data) if compressed else data)
    assert parsed.shape == tuple(shape) and parsed.dtype == dtype.newbyteorder("=") and np.array_equal(parsed, array)


@pytest.mark.task("4.8")
@pytest.mark.parametrize("broken, complaint", [
    (b"", "not IDX data"),
    (b"\x01\x00\x08\x01" + (1).to_bytes(4, "big") + b"\x00", "not IDX data"),
    (b"\x00\x00\x07\x01" + (1).to_bytes(4, "big") + b"\x00", "not IDX data"),
    (b"\x00\x00\x08\x02" + (2).to_bytes(4, "big"), "promises 2 dimension sizes"),
    (b"\x00\x00\x08\x01" + (3).to_bytes(4, "big") + b"\x00\x01", r"shape \(3,\) of uint8 \(11 bytes in all\)"),
])
def test_parse_idx_refuses_broken_data_naming_the_source(broken, complaint):
    with pytest.raises(ValueError, match=complaint) as caught:
        parse_idx(broken, "labels.idx")
    assert "labels.idx" in str(caught.value)


def test_read_idx_reads_a_file(tmp_path):
    array = np.arange(12, dtype=np.uint8).reshape(3, 4)
    (tmp_path / "small.idx.gz").write_bytes(gzip.compress(idx_bytes(array, 0x08)))
    assert np.array_equal(minitorch.read_idx(tmp_path / "small.idx.gz"), array)


@pytest.fixture(scope="module")
def mnist_folder():
    folder = mnist_module.find_mnist()
    if folder is None:
        pytest.skip("MNIST not found: set MINITORCH_DATA to a folder whose mnist/ holds t10k-images-idx3-ubyte.gz "
                    f"and t10k-labels-idx1-ubyte.gz (CI: ../shared/data), or put them in "
                    f"{data_files.cache_folder('mnist')}")
    return folder


def has_training_files(folder) -> bool:
    return all((folder / name).is_file() for name in MNIST_FILES["train"])


@pytest.mark.task("4.8")
def test_mnist_test_files_hold_the_standard_test_split(mnist_folder):
    images, labels = mnist_module.read_mnist_pair(mnist_folder, "test")
    assert images.shape == (10_000, 28, 28) and images.dtype == np.uint8
    assert np.bincount(labels, minlength=10).tolist() == TEST_LABEL_COUNTS
    assert abs(images.mean() - 33.79) < 0.005
    for name, magic in zip(MNIST_FILES["test"], [2051, 2049]):
        assert int.from_bytes(gzip.decompress((mnist_folder / name).read_bytes())[:4], "big") == magic


@pytest.mark.task("4.8")
def test_train_and_valid_are_a_fixed_disjoint_division(mnist_folder):
    train_images, train_labels = minitorch.mnist("train")
    valid_images, valid_labels = minitorch.mnist("valid")
    total = len(train_labels) + len(valid_labels)
    assert (len(train_labels), len(valid_labels)) == ((50_000, 10_000) if has_training_files(mnist_folder) else (8_000, 2_000))
    assert train_images.dtype == valid_images.dtype == np.float64 and train_labels.dtype == np.int64
    assert train_images.min() == 0.0 and train_images.max() == 1.0
    train_indices, valid_indices = (mnist_module.split_indices(total, split) for split in ("train", "valid"))
    assert np.intersect1d(train_indices, valid_indices).size == 0
    assert np.array_equal(np.union1d(train_indices, valid_indices), np.arange(total))
    raw, labels = mnist_module.read_mnist_pair(mnist_folder, "train" if total == 60_000 else "test")
    assert np.array_equal(raw[valid_indices] / 255.0, valid_images) and np.array_equal(labels[train_indices], train_labels)
    assert np.array_equal(minitorch.mnist("valid")[1], valid_labels)      # the same division every time


def test_the_split_permutation_is_numpys_frozen_randomstate():
    order = np.random.RandomState(mnist_module.MNIST_SPLIT_SEED).permutation(10_000)
    assert np.array_equal(mnist_module.split_indices(10_000, "valid"), np.sort(order[8_000:]))
    assert np.array_equal(mnist_module.split_indices(10_000, "train"), np.sort(order[:8_000]))
    with pytest.raises(ValueError, match="hold 12 images"):
        mnist_module.split_indices(12, "train")


def test_test_split_without_training_files_is_refused(mnist_folder):
    if has_training_files(mnist_folder):
        images, labels = minitorch.mnist("test")
        assert images.shape == (10_000, 28, 28) and np.bincount(labels).tolist() == TEST_LABEL_COUNTS
    else:
        with pytest.raises(ValueError, match="evaluate on 'valid'"):
            minitorch.mnist("test")


def test_unknown_split_is_refused():
    with pytest.raises(ValueError, match="got 'validation'"):
        minitorch.mnist("validation")


@pytest.fixture
def no_mnist(tmp_path, monkeypatch):
    "No MNIST anywhere (no MINITORCH_DATA, an empty cache under tmp_path); splits scaled down for tiny fake files."
    monkeypatch.delenv("MINITORCH_DATA", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(mnist_module, "MNIST_VALID_SIZES", {10: 2, 60: 10})
    return tmp_path / "cache" / "minitorch" / "mnist"


def fake_mirror(folder, sources: dict[str, bytes]) -> str:
    "A file:// mirror in `folder` serving `sources` by file name."
    folder.mkdir()
    for name, data in sources.items():
        (folder / name).write_bytes(data)
    return folder.as_uri() + "/"


def tiny_mnist_files() -> dict[str, bytes]:
    "The four standard files as gzip IDX, with 10 test images (all ink) and 60 training images (blank)."
    files = {}
    for part, size, pixel in [("test", 10, 255), ("train", 60, 0)]:
        images_name, labels_name = MNIST_FILES[part]
        files[images_name] = gzip.compress(idx_bytes(np.full((size, 28, 28), pixel, np.uint8), 0x08))
        files[labels_name] = gzip.compress(idx_bytes(np.arange(size) % 10, 0x08))
    return files


def test_download_into_the_cache_from_the_first_good_mirror(no_mnist, tmp_path, monkeypatch):
    files = tiny_mnist_files()
    broken = fake_mirror(tmp_path / "broken", {name: b"<html>not found</html>" for name in files})
    good = fake_mirror(tmp_path / "good", files)
    monkeypatch.setattr(mnist_module, "MNIST_MIRRORS", [(tmp_path / "absent").as_uri() + "/", broken, good])
    images, labels = minitorch.mnist("test")
    assert images.shape == (10, 28, 28) and (images == 1.0).all() and labels[:3].tolist() == [0, 1, 2]
    assert sorted(path.name for path in no_mnist.iterdir()) == sorted(files)          # no temporary files left
    assert all((no_mnist / name).read_bytes() == data for name, data in files.items())
    train_images, _ = minitorch.mnist("train")
    assert train_images.shape == (50, 28, 28) and (train_images == 0.0).all()          # the training files
    monkeypatch.setattr(mnist_module, "MNIST_MIRRORS", [])                          # cached: no download now
    assert len(minitorch.mnist("valid")[1]) == 10


def test_a_download_with_the_wrong_magic_is_rejected(no_mnist, tmp_path, monkeypatch):
    files = tiny_mnist_files()
    swapped = dict(files)
    swapped["t10k-images-idx3-ubyte.gz"] = files["t10k-labels-idx1-ubyte.gz"]
    monkeypatch.setattr(mnist_module, "MNIST_MIRRORS", [fake_mirror(tmp_path / "swapped", swapped)])
    with pytest.raises(MNISTNotFoundError, match="magic number 2049, expected 2051"):
        minitorch.mnist("train")
    assert not no_mnist.exists() or list(no_mnist.iterdir()) == []


def test_offline_and_absent_says_where_to_put_the_files(no_mnist, monkeypatch):
    def offline(url, timeout):
        raise OSError(f"no network for {url}")

    monkeypatch.setattr(data_files.urllib.request, "urlopen", offline)
    with pytest.raises(MNISTNotFoundError) as caught:
        minitorch.mnist("train")
    message = str(caught.value)
    assert str(no_mnist) in message and "MINITORCH_DATA" in message and "t10k-images-idx3-ubyte.gz" in message
    assert all(mirror in message for mirror in mnist_module.MNIST_MIRRORS) and "no network" in message
    with pytest.raises(MNISTNotFoundError, match="no download was attempted"):
        minitorch.mnist("train", download=False)


def test_minitorch_data_is_searched_before_the_cache_and_never_written(no_mnist, tmp_path, monkeypatch):
    data_root = tmp_path / "shared"
    (data_root / "mnist").mkdir(parents=True)
    for name, data in tiny_mnist_files().items():
        if name in MNIST_FILES["test"]:
            (data_root / "mnist" / name).write_bytes(data)
    monkeypatch.setenv("MINITORCH_DATA", str(data_root))
    monkeypatch.setattr(mnist_module, "MNIST_MIRRORS", [])
    assert mnist_module.find_mnist() == data_root / "mnist"
    assert len(minitorch.mnist("train")[1]) == 8                                        # 8 of the 10 test images
    assert sorted(path.name for path in (data_root / "mnist").iterdir()) == sorted(MNIST_FILES["test"])
    assert not no_mnist.exists()


def test_digits_are_scaled_8x8_images():
    images, labels = minitorch.digits()
    assert images.shape == (1797, 8, 8) and images.dtype == np.float64 and labels.dtype == np.int64
    assert images.min() == 0.0 and images.max() == 1.0 and np.bincount(labels).min() >= 170


def test_the_toy_dictionary_keeps_its_contract():
    assert list(minitorch.datasets) == ["Simple", "Diag", "Split", "Xor", "Circle", "Spiral"]
    assert minitorch.datasets["Xor"](10, seed=0).N == 10


def test_the_readers_are_a_module_of_their_own():
    "44_mnist_data writes them into minitorch/mnist_data.py; the top-level names are as before."
    assert minitorch.mnist is mnist_module.mnist and minitorch.digits is mnist_module.digits
    assert minitorch.read_idx is mnist_module.read_idx
    assert minitorch.MNISTNotFoundError is mnist_module.MNISTNotFoundError
    assert issubclass(MNISTNotFoundError, data_files.DataNotFoundError)   # one error type for every data set
    assert not hasattr(importlib.import_module("minitorch.datasets"), "parse_idx")
