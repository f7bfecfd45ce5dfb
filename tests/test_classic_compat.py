"""The classic MiniTorch course's names and calls, as its test files and guides use them (nbs/99_api lists them)."""
from typing import Sequence

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minitorch
from minitorch import (Context, Conv1dFun, Conv2dFun, MathTest, MathTestVariable, Scalar, ScalarFunction,
                       ScalarHistory, TensorData, conv1d, conv2d, grad_check, tensor)

TENSOR_DATA_NAMES = ["UserIndex", "UserShape", "UserStrides", "Index", "Shape", "Strides", "OutIndex", "Storage"]
small = st.floats(-10, 10, allow_nan=False).map(lambda value: round(value, 3))


@pytest.mark.parametrize("name", TENSOR_DATA_NAMES)
def test_type_aliases_live_in_tensor_data_and_at_the_top(name):
    assert getattr(minitorch, name) is getattr(minitorch.tensor_data, name)
    assert name in minitorch.__all__


def test_user_types_are_sequences_of_ints_and_kernel_types_are_int_arrays():
    assert all(getattr(minitorch, name) == Sequence[int] for name in ("UserIndex", "UserShape", "UserStrides"))
    assert all(getattr(minitorch, name) == npt.NDArray[np.int64] for name in ("Index", "Shape", "Strides", "OutIndex"))
    assert minitorch.Storage == npt.NDArray[np.float64]


@pytest.mark.task("0.3")
@given(st.lists(st.integers(1, 4), min_size=1, max_size=4))
def test_prod_of_a_shape_is_its_size(shape):
    size = int(minitorch.prod(shape))
    assert minitorch.prod is minitorch.operators.prod and "prod" in minitorch.__all__
    assert size == TensorData([0.0] * size, tuple(shape)).size == int(np.prod(shape))


def test_tests_lists_every_public_function_split_by_its_name():
    one, two, red = MathTest._tests()
    public = {name for name in dir(MathTest) if not name.startswith("_") and callable(getattr(MathTest, name))}
    assert sorted(name for name, _ in one + two + red) == sorted(public)
    assert all(name.endswith("2") for name, _ in two) and all(name.endswith("red") for name, _ in red)
    assert not any(name.endswith(("2", "red")) for name, _ in one)
    assert all(fn is getattr(MathTest, name) for name, fn in one + two + red)


def test_comp_testing_puts_each_reference_beside_its_variable_version():
    groups = MathTestVariable._comp_testing()
    assert len(groups) == 3
    for group, pairs in zip(groups, MathTestVariable._tests()):
        assert [name for name, _, _ in group] == [name for name, _ in pairs]
        for name, reference, variable in group:
            assert reference is getattr(MathTest, name) and variable is getattr(MathTestVariable, name)


class ScaleAndAdd(ScalarFunction):
    "f(x, y) = x * y + x, the classic course's own example."

    @staticmethod
    def forward(ctx: Context, x: float, y: float) -> float:
        ctx.save_for_backward(x, y)
        return x * y + x

    @staticmethod
    def backward(ctx: Context, d_output: float) -> tuple[float, float]:
        x, y = ctx.saved_values
        return d_output * (y + 1), d_output * x


@pytest.mark.task("1.4")
@given(small, small, small)
def test_chain_rule_lists_a_plain_constant_with_its_derivative(constant, value, d_output):
    variable = Scalar(value)
    pairs = ScaleAndAdd.apply(constant, variable).chain_rule(d_output)
    assert len(pairs) == 2
    (wrapped, d_constant), (same, d_variable) = pairs
    assert isinstance(wrapped, Scalar) and wrapped.data == constant and same is variable
    assert d_constant == d_output * (value + 1) and d_variable == d_output * constant


@pytest.mark.task("1.4")
def test_chain_rule_of_a_hand_built_history():
    leaf = Scalar(0.0, ScalarHistory())
    out = Scalar(0.0, ScalarHistory(ScaleAndAdd, ctx=Context(saved_values=(2.0, 3.0)), inputs=[leaf, leaf]))
    assert [(parent is leaf, d) for parent, d in out.chain_rule(d_output=5)] == [(True, 20.0), (True, 10.0)]


@pytest.mark.task("1.6")
@given(small, small)
def test_backward_through_a_plain_constant_reaches_the_variable(constant, value):
    variable = Scalar(value)
    ScaleAndAdd.apply(constant, variable).backward(d_output=5)
    assert variable.derivative == 5 * constant


def test_plain_numbers_alone_give_a_constant_and_explicit_constants_stay_out():
    assert ScaleAndAdd.apply(2.0, 3.0).is_constant()
    frozen = Scalar(4.0, requires_grad=False)
    assert ScaleAndAdd.apply(frozen, 3.0).is_constant()


def test_tensor_storage_is_the_flat_storage_of_its_data():
    values = np.arange(6.0).reshape(2, 3)
    matrix = tensor(values)
    assert matrix._storage is matrix._tensor._storage
    assert matrix._storage.tolist() == values.ravel().tolist()


@pytest.mark.task("2.7")
def test_classic_reductions_keep_their_dim_with_keepdim_true():
    "The classic tests' reductions, spelled with `keepdim=True` (the classic default; here, as in PyTorch, the dim drops)."
    t = tensor([[2, 3], [4, 6], [5, 7]], dtype=minitorch.float64)   # classic: lists of ints made float64 tensors
    assert t.sum(0, keepdim=True).is_close(tensor([[11.0, 16.0]])).all().item() == 1.0
    assert t.sum(1, keepdim=True).is_close(tensor([[5.0], [10.0], [12.0]])).all().item() == 1.0
    assert t.sum(1).tolist() == [5.0, 10.0, 12.0] and t.sum().tolist() == [27.0]   # everything: shape (1,), as classic
    q = minitorch.softmax(minitorch.rand((1, 1, 4, 4), seed=0), 3)
    assert abs(q.sum(dim=3, keepdim=True)[0, 0, 0, 0] - 1.0) < 1e-12   # classic test_softmax's check
    assert minitorch.max(t, 1, keepdim=True).shape == minitorch.argmax(t, 1, keepdim=True).shape == (3, 1)
    assert t.mean(0, keepdim=True).shape == t.all(0, keepdim=True).shape == (1, 2)


@pytest.mark.task("2.1")
def test_classic_integer_data_makes_int64_and_asks_for_floats_to_track_gradients():
    "Classic MiniTorch made float64 of `tensor([1, 2])`; here, as in PyTorch, it is int64, and gradients need floats."
    assert tensor([0, 1, 2, 3]).dtype == minitorch.int64 and tensor([0, 1, 2, 3], dtype=minitorch.float64).dtype == minitorch.float64
    with pytest.raises(TypeError, match=r"only float tensors can require gradients.*\(1.0, not 1\)"):
        tensor([1], requires_grad=True)   # classic test_grad_size
    a, b = tensor([1.0], requires_grad=True), tensor([[1.0, 1.0]], requires_grad=True)
    c = (a * b).sum()
    c.backward()
    assert c.shape == (1,) and a.grad.shape == a.shape and b.grad.shape == b.shape


def classic_conv(input: np.ndarray, weight: np.ndarray) -> np.ndarray:
    "The classic course's convolution in NumPy: each window starts at its output position, zeros past the end."
    spatial = input.ndim - 2
    padded = np.pad(input, [(0, 0), (0, 0)] + [(0, size - 1) for size in weight.shape[2:]])
    out = np.zeros((input.shape[0], weight.shape[0], *input.shape[2:]))
    for position in np.ndindex(*input.shape[2:]):
        window = padded[(slice(None), slice(None)) + tuple(
            slice(start, start + size) for start, size in zip(position, weight.shape[2:]))]
        out[(slice(None), slice(None)) + position] = np.tensordot(
            window, weight, axes=(list(range(1, spatial + 2)), list(range(1, spatial + 2))))
    return out


@st.composite
def classic_conv_cases(draw, spatial):
    "An input and a weight that fits in it, with `spatial` dims, from a random seed."
    batch, in_channels, out_channels = (draw(st.integers(1, 2)) for _ in range(3))
    kernel = tuple(draw(st.integers(1, 3)) for _ in range(spatial))
    sizes = tuple(draw(st.integers(size, 5)) for size in kernel)
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    return rng.normal(size=(batch, in_channels, *sizes)), rng.normal(size=(out_channels, in_channels, *kernel))


@pytest.mark.task("4.1")
@given(classic_conv_cases(1))
def test_conv1d_fun_with_two_arguments_is_the_classic_convolution(case):
    input, weight = case
    out = Conv1dFun.apply(tensor(input), tensor(weight))
    np.testing.assert_allclose(out.to_numpy(), classic_conv(input, weight), rtol=1e-10, atol=1e-12)
    grad_check(Conv1dFun.apply, tensor(input), tensor(weight))


@pytest.mark.task("4.2")
@given(classic_conv_cases(2))
def test_conv2d_fun_with_two_arguments_is_the_classic_convolution(case):
    input, weight = case
    out = Conv2dFun.apply(tensor(input), tensor(weight))
    np.testing.assert_allclose(out.to_numpy(), classic_conv(input, weight), rtol=1e-10, atol=1e-12)
    grad_check(Conv2dFun.apply, tensor(input), tensor(weight))


@pytest.mark.task("4.2")
def test_conv_fun_with_every_argument_is_conv():
    rng = np.random.default_rng(0)
    input, weight, bias = tensor(rng.normal(size=(2, 2, 5, 6))), tensor(rng.normal(size=(3, 2, 3, 2))), tensor(
        rng.normal(size=3))
    direct = Conv2dFun.apply(input, weight, bias, stride=(2, 1), padding=1)
    assert np.array_equal(direct.to_numpy(), conv2d(input, weight, bias, stride=(2, 1), padding=1).to_numpy())
    row, taps = tensor(rng.normal(size=(1, 2, 7))), tensor(rng.normal(size=(2, 2, 3)))
    assert np.array_equal(Conv1dFun.apply(row, taps, padding=0).to_numpy(), conv1d(row, taps).to_numpy())


def test_conv_fun_names_bad_arguments():
    with pytest.raises(ValueError, match=r"conv1d takes a 3-D input"):
        Conv1dFun.apply(tensor([[1.0, 2.0]]), tensor([[[1.0]]]))
    with pytest.raises(ValueError, match=r"the input has 1 channels"):
        Conv2dFun.apply(tensor(np.zeros((1, 1, 3, 3))), tensor(np.zeros((1, 2, 2, 2))))
    with pytest.raises(ValueError, match=r"kernel \(5, 2\) is larger than the input \(3, 3\) padded by \(0, 0\) "):
        Conv2dFun.apply(tensor(np.zeros((1, 1, 3, 3))), tensor(np.zeros((1, 1, 5, 2))), padding=0)
