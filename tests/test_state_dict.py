"""Module.state_dict / load_state_dict: names, detached tensors, strictness, shape checks, all-or-nothing."""
import numpy as np
import pytest

from minitorch import Module, Parameter, tensor

pytestmark = pytest.mark.task("4.7")


class Block(Module):
    def __init__(self, rows: int, columns: int, fill: float = 0.0):
        super().__init__()
        self.weight = Parameter(tensor(np.full((rows, columns), fill)))
        self.bias = Parameter(tensor(np.full((columns,), fill)))


class Model(Module):
    def __init__(self, fill: float = 0.0, hidden: int = 3):
        super().__init__()
        self.first = Block(2, hidden, fill)
        self.second = Block(hidden, 1, fill)


def test_state_dict_names_every_parameter_and_detaches_tensors():
    model = Model(fill=1.5)
    state = model.state_dict()
    assert list(state) == ["first.weight", "first.bias", "second.weight", "second.bias"]
    assert all(not value.requires_grad and value is not model.first.weight.value for value in state.values())
    assert state["first.weight"].to_numpy().tolist() == [[1.5] * 3] * 2


def test_load_state_dict_copies_values_into_fresh_leaves():
    source, target = Model(fill=2.0), Model()
    target.load_state_dict(source.state_dict())
    assert target.second.bias.value.to_numpy().tolist() == [2.0]
    assert target.first.weight.value.is_leaf() and target.first.weight.value is not source.first.weight.value


def test_every_problem_is_reported_at_once_and_nothing_is_loaded():
    target = Model()
    state = Model(fill=1.0, hidden=4).state_dict()
    del state["second.bias"]
    state["third.weight"] = tensor([1.0])
    with pytest.raises(ValueError) as caught:
        target.load_state_dict(state)
    message = str(caught.value)
    assert "missing: second.bias" in message and "unexpected: third.weight" in message
    assert "first.weight (model (2, 3), state (2, 4))" in message and "second.weight (model (3, 1), state (4, 1))" in message
    assert "first.bias" in message and "cannot load the state into Model" in message
    assert target.first.weight.value.to_numpy().sum() == 0.0


def test_non_strict_loading_ignores_names_only():
    target = Model()
    target.load_state_dict({"first.bias": tensor([7.0, 7.0, 7.0]), "other": tensor([1.0])}, strict=False)
    assert target.first.bias.value.to_numpy().tolist() == [7.0, 7.0, 7.0]
    with pytest.raises(ValueError, match=r"wrong shape: first.bias \(model \(3,\), state \(2,\)\)"):
        target.load_state_dict({"first.bias": tensor([1.0, 2.0])}, strict=False)


def test_values_are_copied_into_the_kind_the_parameter_holds():
    import minitorch
    target = Model().to(minitorch.float32)
    state = Model(fill=0.5).state_dict()
    target.load_state_dict({**state, "first.weight": np.full((2, 3), 0.25)})       # float64 tensors and an array
    assert all(value.dtype == minitorch.float32 for value in target.state_dict().values())
    assert target.first.weight.value.to_numpy().tolist() == [[0.25] * 3] * 2
    assert target.first.bias.value._tensor._storage is not state["first.bias"]._tensor._storage
    target.first.bias.value.to_numpy()                                               # a tensor, not an array
    assert isinstance(target.first.weight.value, minitorch.Tensor) and target.first.weight.value.is_leaf()


def test_scalar_parameters_take_numbers_and_zero_dim_arrays():
    from minitorch import Scalar

    class Line(Module):
        def __init__(self):
            super().__init__()
            self.slope, self.offset = Parameter(Scalar(0.0)), Parameter(Scalar(0.0))

    line = Line()
    line.load_state_dict({"slope": np.array(2.5), "offset": Scalar(-1.0)})
    assert isinstance(line.slope.value, Scalar) and line.slope.value.data == 2.5 and line.offset.value.data == -1.0


def tied(fill: float = 0.0) -> Model:
    "A Model whose second block's weight is its first block's (tied weights), its bias as it was."
    model = Model(fill=fill, hidden=2)
    model.second.weight = model.first.weight
    return model


def test_a_tied_parameter_is_stored_under_both_names_as_torch():
    "named_parameters() lists a shared parameter once; state_dict keeps each of its names, as torch's does."
    model = tied(fill=1.5)
    assert [name for name, _ in model.named_parameters()] == ["first.weight", "first.bias", "second.bias"]
    state = model.state_dict()
    assert list(state) == ["first.weight", "first.bias", "second.weight", "second.bias"]
    assert state["second.weight"].to_numpy().tolist() == state["first.weight"].to_numpy().tolist()
    untied = Model(hidden=2)
    untied.second.weight = Parameter(tensor(np.zeros((2, 2))))
    untied.load_state_dict(state)                        # both names load, into a model that does not tie them
    assert untied.second.weight.value.to_numpy().tolist() == [[1.5, 1.5]] * 2
    again = tied()
    again.load_state_dict(state)                         # and into one that does: one parameter, loaded twice
    assert again.second.weight is again.first.weight and again.first.weight.value.to_numpy().tolist() == [[1.5] * 2] * 2
    torch = pytest.importorskip("torch")
    twin = torch.nn.Module()
    twin.first, twin.second = torch.nn.Linear(2, 2), torch.nn.Linear(2, 1)
    twin.second.weight = twin.first.weight
    assert [name for name, _ in twin.named_parameters()] == ["first.weight", "first.bias", "second.bias"]
    assert list(twin.state_dict()) == list(state)
