"""`topk` (41_nn) as PyTorch's: the same values (nan counted largest) and, without ties, the same indices and gradients,
on every backend, in float32, float64 and int64, on empty dims and on strided views with an offset; ties go to the
earlier position; a bad k is refused with its range."""
import numpy as np
import pytest
from backends import BACKENDS
from hypothesis import given
from hypothesis import strategies as st
from tensor_strategies import arrays

import minitorch
from minitorch import IndexingError, tensor, topk
from minitorch.tensor_data import float32, int64

pytestmark = [pytest.mark.task("4.3"), pytest.mark.parametrize("backend", BACKENDS)]


@st.composite
def cases(draw, dtypes=("float64", "float32", "int64"), special: bool = True):
    "Values of a small shape (empty dims too), a dim (maybe negative), a k for it, largest or not, a sliced flag."
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=1, max_size=3)))
    dim = draw(st.integers(-len(shape), len(shape) - 1))
    dtype = draw(st.sampled_from(dtypes))
    if dtype == "int64":
        values = np.random.default_rng(draw(st.integers(0, 2**16))).integers(-3, 4, size=shape)  # ties likely
    else:
        values = draw(arrays(shape, dtype, special=special, share=0.2))
    return values, dim, draw(st.integers(0, shape[dim])), draw(st.booleans()), draw(st.booleans())


def made(values: np.ndarray, backend, sliced: bool, requires_grad: bool = False):
    "The leaf, and the input: the leaf itself, or (sliced) a view every other row of a bigger leaf, from offset 1."
    if not sliced:
        leaf = tensor(values, backend=backend, dtype=values.dtype, requires_grad=requires_grad)
        return leaf, leaf
    big = np.zeros((2 * values.shape[0] + 1, *values.shape[1:]), dtype=values.dtype)
    big[1::2] = values
    leaf = tensor(big, backend=backend, dtype=values.dtype, requires_grad=requires_grad)
    return leaf, leaf[1::2]


@given(cases())
def test_values_match_torch_and_indices_point_at_them(backend, case):
    torch = pytest.importorskip("torch")
    values, dim, k, largest, sliced = case
    _, input = made(values, backend, sliced)
    out, indices = input.topk(k, dim, largest=largest)
    assert out.shape == indices.shape and out.dtype == values.dtype and indices.dtype == int64
    expected = torch.topk(torch.tensor(values), k, dim, largest=largest)
    np.testing.assert_array_equal(out.to_numpy(), expected.values.numpy())        # nan where PyTorch has nan
    picked = np.take_along_axis(values, indices.to_numpy(), dim)
    np.testing.assert_array_equal(picked, out.to_numpy())
    ranked = indices.to_numpy()
    assert (np.diff(np.sort(ranked, axis=dim), axis=dim) > 0).all()                # each position picked once
    with np.errstate(invalid="ignore"):                                           # inf - inf
        tied = np.diff(picked, axis=dim) == 0
    assert (np.diff(ranked, axis=dim) > 0)[tied].all()                            # of equal values, the earlier first


@given(cases(dtypes=("float64", "float32"), special=False), st.integers(0, 2**16))
def test_gradients_match_torch_without_ties(backend, case, seed):
    torch = pytest.importorskip("torch")
    values, dim, k, largest, sliced = case
    values = (np.random.default_rng(seed).permutation(values.size).reshape(values.shape) - 3.5).astype(values.dtype)
    leaf, input = made(values, backend, sliced, requires_grad=True)
    out, indices = topk(input, k, dim, largest)
    twin = torch.tensor(values, requires_grad=True)
    expected = torch.topk(twin, k, dim, largest=largest)
    np.testing.assert_array_equal(indices.to_numpy(), expected.indices.numpy())   # no ties: the same positions
    weights = np.random.default_rng(seed + 1).normal(size=out.shape).astype(values.dtype)
    (out * tensor(weights, backend=backend, dtype=values.dtype)).sum().backward()
    (expected.values * torch.tensor(weights)).sum().backward()
    grad = np.zeros(leaf.shape, values.dtype) if leaf.grad is None else leaf.grad.to_numpy()
    np.testing.assert_array_equal(grad[1::2] if sliced else grad, twin.grad.numpy())


def test_nan_counts_largest_and_ties_go_to_the_earlier_position(backend):
    scores = tensor([[1.0, np.nan, 3.0, np.inf, 3.0]], backend=backend)
    assert scores.topk(3).indices.tolist() == [[1, 3, 2]]
    assert scores.topk(3, largest=False).indices.tolist() == [[0, 2, 4]]
    assert tensor([5, 1, 9, 9], backend=backend, dtype=int64).topk(3).indices.tolist() == [2, 3, 0]


@pytest.mark.parametrize("k", [-1, 4, 1.5, True, None])
def test_a_bad_k_is_named_with_its_range(backend, k):
    with pytest.raises(IndexingError, match=f"k={k!r} must be a whole number from 0 to 3"):
        tensor([1.0, 2.0, 3.0], backend=backend).topk(k)


def test_a_bad_dim_is_named(backend):
    with pytest.raises(IndexingError, match="dim"):
        minitorch.topk(tensor([[1.0, 2.0]], backend=backend, dtype=float32), 1, dim=2)


def test_float32_stays_float32(backend):
    out = tensor([[0.5, 0.25]], backend=backend, dtype=float32).topk(1)
    assert out.values.dtype == float32 and out.values.tolist() == [[0.5]] and out.indices.dtype == int64
