"""`Module.register_buffer` as PyTorch's: state that is not trained, found by attribute, walked by `named_buffers()`,
saved and loaded with the parameters when persistent, converted by `model.to(dtype)`; bad names are refused."""
import tempfile
from pathlib import Path

import numpy as np
import pytest

import minitorch
from minitorch import Module, Parameter, load_checkpoint, save_checkpoint, tensor


class Attention(Module):
    "nanoGPT's way of keeping a causal mask: a buffer next to a parameter."

    def __init__(self, size: int = 3):
        super().__init__()
        self.weight = Parameter(tensor(np.arange(size * size, dtype=float).reshape(size, size)))
        self.register_buffer("bias", minitorch.tril(minitorch.ones((size, size))))
        self.register_buffer("scratch", minitorch.zeros(size), persistent=False)


class Model(Module):
    def __init__(self):
        super().__init__()
        self.first, self.second = Attention(), Attention()
        self.register_buffer("steps", tensor([0], dtype=minitorch.int64))


@pytest.mark.task("0.4")
def test_buffers_are_attributes_outside_the_parameters():
    model = Model()
    assert model.first.bias.tolist() == [[1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [1.0, 1.0, 1.0]]
    assert [name for name, _ in model.named_buffers()] == ["steps", "first.bias", "first.scratch", "second.bias",
                                                           "second.scratch"]
    assert len(model.buffers()) == 5 and [name for name, _ in model.named_parameters()] == ["first.weight",
                                                                                           "second.weight"]
    model.steps = model.steps + 1                      # a new value stays a buffer
    assert model.named_buffers()[0][1].tolist() == [1] and "steps" not in model.__dict__


@pytest.mark.task("0.4")
def test_a_buffer_name_becomes_a_parameter_or_module_when_assigned_one():
    model = Model()
    model.steps = Parameter(tensor([2.0]))
    assert "steps" not in dict(model.named_buffers()) and "steps" in dict(model.named_parameters())


@pytest.mark.task("0.4")
@pytest.mark.parametrize("name", ["weight", "", "a.b", 3])
def test_a_name_that_is_taken_or_malformed_is_refused(name):
    with pytest.raises(KeyError, match=repr(name)):
        Attention().register_buffer(name, tensor([1.0]))


@pytest.mark.task("4.7")
def test_persistent_buffers_are_saved_and_loaded_with_the_parameters():
    source, target = Model(), Model()
    source.second.bias = minitorch.zeros((3, 3))
    source.steps = tensor([7], dtype=minitorch.int64)
    state = source.state_dict()
    assert list(state) == ["first.weight", "second.weight", "steps", "first.bias", "second.bias"]  # no scratch
    target.load_state_dict(state)
    assert target.second.bias.tolist() == [[0.0] * 3] * 3 and target.steps.tolist() == [7]
    assert target.steps.dtype == minitorch.int64 and target.second.bias is not source.second.bias
    with tempfile.TemporaryDirectory() as folder:
        path = save_checkpoint(source, Path(folder) / "model.npz")
        loaded = load_checkpoint(path, Model())
    assert loaded.second.bias.tolist() == [[0.0] * 3] * 3 and isinstance(loaded.steps, minitorch.Tensor)


@pytest.mark.task("4.7")
def test_a_missing_or_misshaped_buffer_is_named():
    state = Model().state_dict()
    del state["steps"]
    state["first.bias"] = minitorch.ones((2, 2))
    with pytest.raises(ValueError, match=r"missing: steps.*wrong shape: first.bias \(model \(3, 3\), state \(2, 2\)\)"):
        Model().load_state_dict(state)


@pytest.mark.task("2.6")
def test_to_converts_floating_buffers_only():
    model = Model().to(minitorch.float32)
    assert model.first.bias.dtype == minitorch.float32 and model.first.scratch.dtype == minitorch.float32
    assert model.steps.dtype == minitorch.int64 and model.first.weight.value.dtype == minitorch.float32
