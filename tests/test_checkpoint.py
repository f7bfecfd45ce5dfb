"""Checkpoints: round trips on every backend, atomic writes under a crash, refusal of pickles, named mismatches."""
import os
import pickle

import numpy as np
import pytest
from backends import BACKENDS
from hypothesis import given, settings
from hypothesis import strategies as st

from minitorch import Module, Parameter, Scalar, load_checkpoint, save_checkpoint, tensor
import minitorch.checkpoint as checkpoint
from minitorch.tensor_train import TensorNetwork

pytestmark = pytest.mark.task("4.7")


def values_of(module: Module) -> dict[str, np.ndarray]:
    "Every parameter of `module` as a NumPy array."
    return {name: np.asarray(value.to_numpy() if hasattr(value, "to_numpy") else value.data)
            for name, value in module.state_dict().items()}


class ScalarModel(Module):
    def __init__(self, start: float):
        super().__init__()
        self.slope = Parameter(Scalar(start))
        self.offset = Parameter(Scalar(-start))


@pytest.mark.parametrize("backend", BACKENDS)
def test_round_trip_loads_bit_for_bit_onto_the_module_backend(tmp_path, backend):
    saved = TensorNetwork(hidden=5, seed=1)
    path = save_checkpoint(saved, tmp_path / "model.npz")
    fresh = TensorNetwork(hidden=5, seed=9)
    for parameter in fresh.parameters():
        parameter.update(tensor(parameter.value.to_numpy(), backend=backend))
    assert load_checkpoint(path, fresh) is fresh
    for name, array in values_of(saved).items():
        assert np.array_equal(values_of(fresh)[name], array)
    assert all(parameter.value.backend is backend and parameter.value.requires_grad for parameter in fresh.parameters())


def test_without_a_module_load_returns_float64_arrays_by_name(tmp_path):
    saved = TensorNetwork(hidden=3, seed=2)
    arrays = load_checkpoint(save_checkpoint(saved, tmp_path / "model.npz"))
    assert list(arrays) == [name for name, _ in saved.named_parameters()]
    assert all(array.dtype == np.float64 for array in arrays.values())
    assert arrays["layer1.weight"].shape == (2, 3) and arrays["layer2.bias"].shape == (1,)


def test_scalar_parameters_round_trip(tmp_path):
    path = save_checkpoint(ScalarModel(0.75), tmp_path / "scalars.npz")
    loaded = load_checkpoint(path, ScalarModel(0.0))
    assert isinstance(loaded.slope.value, Scalar) and loaded.slope.value.data == 0.75 and loaded.offset.value.data == -0.75


@settings(max_examples=25)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple),
       values=st.lists(st.floats(allow_nan=False, allow_infinity=True, width=64), min_size=64, max_size=64))
def test_any_float64_values_survive_exactly(tmp_path_factory, shape, values):
    array = np.array(values[: int(np.prod(shape))]).reshape(shape)
    path = save_checkpoint({"weight": tensor(array)}, tmp_path_factory.mktemp("property") / "w.npz")
    assert np.array_equal(load_checkpoint(path)["weight"], array)


@pytest.mark.parametrize("failure", [OSError("disk full"), KeyboardInterrupt()])
def test_a_crash_mid_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path, monkeypatch, failure):
    path = save_checkpoint(TensorNetwork(hidden=3, seed=0), tmp_path / "model.npz")
    before = path.read_bytes()

    def crash(file, arrays):
        file.write(before[: len(before) // 3])
        raise failure

    monkeypatch.setattr(checkpoint, "write_npz", crash)
    with pytest.raises(type(failure)):
        save_checkpoint(TensorNetwork(hidden=3, seed=4), path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["model.npz"]


def test_a_non_numeric_entry_is_refused_by_name_before_any_file_exists(tmp_path):
    with pytest.raises(TypeError, match="'head.names'"):
        save_checkpoint({"weight": np.zeros(2), "head.names": ["cat", "dog"]}, tmp_path / "model.npz")
    assert os.listdir(tmp_path) == []


class Payload:
    "Unpickling this creates the file `marker`: stands in for any code a malicious file could run."
    marker = None

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def test_an_npz_holding_pickled_objects_is_refused_and_runs_nothing(tmp_path):
    Payload.marker = tmp_path / "code-ran"
    path = tmp_path / "evil.npz"
    np.savez(path, weight=np.zeros(3), payload=np.array([Payload()], dtype=object))
    with pytest.raises(ValueError, match="'payload' holds pickled Python objects"):
        load_checkpoint(path)
    with pytest.raises(ValueError, match="pickled"):
        load_checkpoint(path, TensorNetwork(hidden=3))
    assert not Payload.marker.exists()


def test_a_pickle_file_and_a_single_npy_array_are_not_checkpoints(tmp_path):
    Payload.marker = tmp_path / "code-ran"
    (tmp_path / "model.pkl").write_bytes(pickle.dumps({"weight": Payload()}))
    with pytest.raises(ValueError, match="not a checkpoint"):
        load_checkpoint(tmp_path / "model.pkl")
    assert not Payload.marker.exists()
    np.save(tmp_path / "weight.npy", np.zeros(3))
    with pytest.raises(ValueError, match="single .npy array"):
        load_checkpoint(tmp_path / "weight.npy")


def test_missing_extra_and_misshaped_entries_are_all_named(tmp_path):
    arrays = load_checkpoint(save_checkpoint(TensorNetwork(hidden=4, seed=0), tmp_path / "model.npz"))
    del arrays["layer2.bias"]
    arrays["layer3.weight"] = np.zeros((1, 1))
    path = save_checkpoint(arrays, tmp_path / "edited.npz")
    target = TensorNetwork(hidden=5, seed=3)
    before = values_of(target)
    with pytest.raises(ValueError) as caught:
        load_checkpoint(path, target)
    message = str(caught.value)
    assert "missing: layer2.bias" in message and "unexpected: layer3.weight" in message
    assert "layer1.weight (model (2, 5), state (2, 4))" in message and "layer2.weight" in message
    assert all(np.array_equal(values_of(target)[name], array) for name, array in before.items())


def test_non_strict_loading_skips_names_but_still_checks_shapes(tmp_path):
    arrays = load_checkpoint(save_checkpoint(TensorNetwork(hidden=4, seed=0), tmp_path / "model.npz"))
    partial = {"layer1.weight": arrays["layer1.weight"], "extra": np.ones(2)}
    saved = save_checkpoint(partial, tmp_path / "partial.npz")
    target = load_checkpoint(saved, TensorNetwork(hidden=4, seed=6), strict=False)
    assert np.array_equal(target.layer1.weight.value.to_numpy(), arrays["layer1.weight"])
    with pytest.raises(ValueError, match="wrong shape: layer1.weight"):
        load_checkpoint(tmp_path / "partial.npz", TensorNetwork(hidden=7), strict=False)


def test_saved_file_is_a_plain_npz_readable_by_numpy(tmp_path):
    path = save_checkpoint(TensorNetwork(hidden=2, seed=0), tmp_path / "model.npz")
    with np.load(path, allow_pickle=False) as archive:
        assert sorted(archive.files) == sorted(name for name, _ in TensorNetwork(hidden=2).named_parameters())
    assert path.stat().st_mode & 0o777 == 0o644


def saved_bytes(tmp_path) -> bytes:
    "The bytes of a small real checkpoint."
    return save_checkpoint(TensorNetwork(hidden=3, seed=0), tmp_path / "good.npz").read_bytes()


@settings(max_examples=20, deadline=None)
@given(fraction=st.floats(0.0, 0.99))
def test_a_truncated_checkpoint_is_named_and_called_damaged(tmp_path_factory, fraction):
    folder = tmp_path_factory.mktemp("truncated")
    whole = saved_bytes(folder)
    path = folder / "cut.npz"
    path.write_bytes(whole[: int(len(whole) * fraction)])
    with pytest.raises(checkpoint.CheckpointError) as caught:
        load_checkpoint(path, TensorNetwork(hidden=3, seed=1))
    message = str(caught.value)
    assert str(path) in message and "is not a checkpoint" in message and "save the model again" in message
    assert any(words in message for words in ("damaged or truncated", "the file is empty", "not an .npz archive"))


def test_a_checkpoint_cut_inside_its_zip_directory_is_damaged_not_bad_zip(tmp_path):
    path = tmp_path / "cut.npz"
    path.write_bytes(saved_bytes(tmp_path)[:-10])
    with pytest.raises(ValueError, match=r"cut\.npz is not a checkpoint: the archive is damaged or truncated \(BadZipFile"):
        load_checkpoint(path)


@pytest.mark.parametrize("text", ["weights: see the lab book\n", "{\"layer1.weight\": [1, 2]}", "(dp0\nS'w'\n"])
def test_a_text_file_is_not_an_npz_archive_and_is_not_called_a_pickle(tmp_path, text):
    path = tmp_path / "model.npz"
    path.write_text(text)
    with pytest.raises(checkpoint.CheckpointError) as caught:
        load_checkpoint(path)
    message = str(caught.value)
    assert f"{path} is not a checkpoint: it is not an .npz archive" in message
    assert "pickled" not in message and "save_checkpoint(model, path)" in message


def test_an_empty_file_and_a_missing_file_name_their_path(tmp_path):
    (tmp_path / "empty.npz").write_bytes(b"")
    with pytest.raises(checkpoint.CheckpointError, match="empty.npz is not a checkpoint: the file is empty"):
        load_checkpoint(tmp_path / "empty.npz")
    with pytest.raises(FileNotFoundError, match="absent.npz"):
        load_checkpoint(tmp_path / "absent.npz")


def test_a_compressed_archive_with_a_corrupted_member_is_damaged(tmp_path):
    path = tmp_path / "compressed.npz"
    np.savez_compressed(path, weight=np.arange(1000.0))
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle:middle + 64] = bytes(64)
    path.write_bytes(bytes(data))
    with pytest.raises(checkpoint.CheckpointError, match="damaged or truncated"):
        load_checkpoint(path)
