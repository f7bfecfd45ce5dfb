"""Empty tensors (a dimension of size 0) on every backend, as NumPy and PyTorch float64 treat them: construction,
elementwise functions with broadcasting, reductions, matmul, views and their gradients."""
import math
import warnings

import numpy as np
import pytest
from backends import BACKENDS
from hypothesis import given, settings
from hypothesis import strategies as st
from tensor_strategies import tensors

import minitorch
from minitorch import IndexingError, TensorData, ones, rand, tensor, zeros
from minitorch import nn
from minitorch.cuda_ops import CudaStorage, launch, map_launch, reduce_launch

try:
    import torch
except ImportError:  # the parity tests below skip; the others run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed (pip install -e '.[torch]')")
with_backends = pytest.mark.parametrize("backend", BACKENDS)
bounded = st.floats(min_value=-2, max_value=2, allow_nan=False)


@st.composite
def empty_shapes(draw) -> tuple[int, ...]:
    "A shape of 1 to 4 dims, each 0 to 3, at least one of them 0."
    shape = draw(st.lists(st.integers(min_value=0, max_value=3), min_size=1, max_size=4))
    shape[draw(st.integers(min_value=0, max_value=len(shape) - 1))] = 0
    return tuple(shape)


@st.composite
def empty_broadcast_pairs(draw) -> tuple[tuple[int, ...], tuple[int, ...]]:
    "An empty shape and a shape that broadcasts with it (leading dims dropped, some dims 1), in either order."
    big = draw(empty_shapes())
    dropped = draw(st.integers(min_value=0, max_value=len(big) - 1))
    small = tuple(1 if draw(st.booleans()) else size for size in big[dropped:])
    return (big, small) if draw(st.booleans()) else (small, big)


@st.composite
def empty_matmul_shapes(draw) -> tuple[tuple[int, ...], tuple[int, ...]]:
    "Shapes of `a @ b`, 2-D or batched, with at least one of batch, rows, inner and cols 0."
    sizes = [draw(st.integers(min_value=0, max_value=3)) for _ in range(4)]
    sizes[draw(st.integers(min_value=0, max_value=3))] = 0
    batch, rows, inner, cols = sizes
    return draw(st.sampled_from([
        ((rows, inner), (inner, cols)), ((batch, rows, inner), (batch, inner, cols)),
        ((1, rows, inner), (batch, inner, cols)), ((batch, rows, inner), (inner, cols))]))


def leaf(backend, data, shape):
    "A leaf tracking gradients, of `shape`, over random strided storage (a permuted layout) on `backend`."
    return data.draw(tensors(backend, shape, bounded)).requires_grad_(True)


def elementwise(x, y):
    "Maps and zips of every kind, for minitorch and torch tensors alike."
    return ((x * y + x).sigmoid() - (y * 0.1).exp() / (x * x + 1.0)).relu() + (x < y) * 1.0 - (x * x + 1.0).log()


def grad_of(value):
    "The gradient of a leaf as an array (zeros of its shape when none arrived, as torch fills them)."
    return np.zeros(value.shape) if value.grad is None else value.grad.to_numpy()


# --- construction -------------------------------------------------------------------------------------------------
@with_backends
def test_constructors_make_empty_tensors(backend):
    assert tensor([], backend=backend).shape == (0,)
    assert tensor([[], []], backend=backend).shape == (2, 0)
    assert tensor(np.zeros((0, 3)), backend=backend).shape == (0, 3)
    for make in (zeros, ones, rand):
        made = make((0, 3), backend=backend)
        assert made.shape == (0, 3) and made.size == 0 and made.to_numpy().shape == (0, 3)
    assert zeros(0, backend=backend).shape == (0,)
    assert repr(zeros((0, 3), backend=backend)) == "tensor([], shape=(0, 3))"
    assert str(zeros((2, 0, 4), backend=backend, requires_grad=True)) == "tensor([], shape=(2, 0, 4), requires_grad=True)"


def test_tensor_data_takes_a_zero_and_refuses_negative_sizes():
    data = TensorData(np.zeros(0), (3, 0))
    assert data.shape == (3, 0) and data.size == 0 and data.strides == (0, 1) and list(data.indices()) == []
    assert data.permute(1, 0).shape == (0, 3) and data.to_string() == "[]"
    with pytest.raises(IndexingError, match=r"shape \(2, -1\) has entries that are not integers >= 0: \[-1\]"):
        TensorData(np.zeros(4), (2, -1))
    with pytest.raises(IndexingError, match=r"shape \(-3,\)"):
        zeros((-3,))


# --- elementwise --------------------------------------------------------------------------------------------------
@with_backends
def test_broadcasting_an_empty_dim_against_1_is_empty_and_against_2_an_error(backend):
    assert (zeros((0, 3), backend=backend) + ones((1, 3), backend=backend)).shape == (0, 3)
    assert (ones((3,), backend=backend) * zeros((2, 0, 1), backend=backend)).shape == (2, 0, 3)
    with pytest.raises(IndexingError, match=r"shapes \(0, 3\) and \(2, 3\) do not broadcast"):
        zeros((0, 3), backend=backend) + ones((2, 3), backend=backend)


@with_backends
@settings(max_examples=40)
@given(data=st.data())
def test_elementwise_functions_of_empty_tensors_match_numpy(backend, data):
    shape_x, shape_y = data.draw(empty_broadcast_pairs())
    x, y = leaf(backend, data, shape_x), leaf(backend, data, shape_y)
    out = elementwise(x, y)
    assert out.shape == np.broadcast_shapes(shape_x, shape_y) and out.size == 0
    out.sum().backward()
    for value in (x, y):  # nothing flowed back: zeros of each input's shape (empty, or the broadcast one's)
        np.testing.assert_array_equal(grad_of(value), np.zeros(value.shape))


# --- reductions ---------------------------------------------------------------------------------------------------
@with_backends
def test_reductions_over_an_empty_dim(backend):
    empty = zeros((0, 3), backend=backend)
    assert empty.sum(0).to_numpy().tolist() == [0.0, 0.0, 0.0] and empty.sum().item() == 0.0
    assert empty.all(0).to_numpy().tolist() == [1.0, 1.0, 1.0] and empty.all().item() == 1.0
    assert np.isnan(empty.mean(0).to_numpy()).all() and math.isnan(empty.mean().item())
    assert empty.sum(1, keepdim=True).shape == (0, 1) and empty.mean(1).shape == (0,)
    assert empty.sum(0, keepdim=True).shape == (1, 3)


@with_backends
@pytest.mark.parametrize("name", ["max", "argmax"])
def test_max_over_an_empty_dim_is_an_error_and_over_another_dim_empty(backend, name):
    empty = zeros((2, 0, 3), backend=backend)
    with pytest.raises(IndexingError, match=rf"{name}\(\): expected reduction dim 1 to have non-zero size.*\(2, 0, 3\)"):
        getattr(nn, name)(empty, -2)
    assert getattr(nn, name)(empty, 2, keepdim=True).shape == (2, 0, 1) and getattr(nn, name)(empty, 0).shape == (0, 3)


@with_backends
@settings(max_examples=40)
@given(data=st.data())
def test_reductions_of_empty_tensors_match_numpy(backend, data):
    shape = data.draw(empty_shapes())
    dim = data.draw(st.integers(min_value=0, max_value=len(shape) - 1))
    x = leaf(backend, data, shape)
    expected_values = np.zeros(shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy warns about the mean of nothing
        expected = {"sum": expected_values.sum(dim, keepdims=True), "mean": expected_values.mean(dim, keepdims=True),
                    "all": expected_values.all(dim, keepdims=True) * 1.0}
    for name, values in expected.items():
        np.testing.assert_array_equal(getattr(x, name)(dim, keepdim=True).to_numpy(), values)
    for name in ("sum", "mean"):
        x.zero_grad_()
        getattr(x, name)(dim).sum().backward()
        assert grad_of(x).shape == shape
    np.testing.assert_array_equal(x.sum().to_numpy(), [0.0])
    assert math.isnan(x.mean().item()) and x.all().item() == 1.0


@with_backends
def test_softmax_and_logsoftmax_of_empty_tensors_are_empty(backend):
    for shape, dim in (((0, 3), 1), ((3, 0), 1), ((0, 3), 0), ((2, 0, 2), -1)):
        x = zeros(shape, backend=backend, requires_grad=True)
        for function in (nn.softmax, nn.logsoftmax):
            out = function(x, dim)
            assert out.shape == shape
            out.sum().backward()
            assert x.grad.shape == shape


# --- matmul -------------------------------------------------------------------------------------------------------
@with_backends
def test_matmul_with_an_empty_dim(backend):
    a, b = zeros((2, 0), backend=backend, requires_grad=True), zeros((0, 3), backend=backend, requires_grad=True)
    product = a @ b
    assert product.to_numpy().tolist() == [[0.0] * 3] * 2
    product.sum().backward()
    assert a.grad.shape == (2, 0) and b.grad.shape == (0, 3)
    assert (zeros((0, 4), backend=backend) @ rand((4, 3), backend=backend)).shape == (0, 3)
    assert (zeros((0, 2, 4), backend=backend) @ rand((1, 4, 3), backend=backend)).shape == (0, 2, 3)
    np.testing.assert_array_equal((rand((3, 2, 0), backend=backend) @ rand((0, 5), backend=backend)).to_numpy(),
                                  np.zeros((3, 2, 5)))


@with_backends
@settings(max_examples=40)
@given(data=st.data())
def test_matmul_of_empty_tensors_matches_numpy(backend, data):
    a_shape, b_shape = data.draw(empty_matmul_shapes())
    a, b = leaf(backend, data, a_shape), leaf(backend, data, b_shape)
    product = a @ b
    expected = a.to_numpy() @ b.to_numpy()
    np.testing.assert_allclose(product.to_numpy(), expected, rtol=1e-12, atol=1e-12)
    weights = np.random.default_rng(product.size).normal(size=expected.shape)
    product.backward(tensor(weights, backend=backend).contiguous().view(*product.shape))
    grad_a, grad_b = weights @ np.swapaxes(b.to_numpy(), -1, -2), np.swapaxes(a.to_numpy(), -1, -2) @ weights
    for value, grad in ((a, grad_a), (b, grad_b)):  # summed over the batch a leaf was broadcast over
        grad = grad.sum(0) if grad.ndim > value.dims else grad.sum(0, keepdims=True) if value.shape != grad.shape else grad
        np.testing.assert_allclose(grad_of(value), grad, rtol=1e-12, atol=1e-12)


# --- views --------------------------------------------------------------------------------------------------------
@with_backends
@settings(max_examples=40)
@given(data=st.data())
def test_views_of_empty_tensors(backend, data):
    shape = data.draw(empty_shapes())
    order = data.draw(st.permutations(range(len(shape))))
    x = leaf(backend, data, shape)
    moved = x.permute(*order)
    assert moved.shape == tuple(shape[dim] for dim in order)
    flat = moved.contiguous().view(0)
    assert flat.shape == (0,) and flat.view(*moved.shape).shape == moved.shape
    (flat.view(*moved.shape).contiguous() * 2.0).sum().backward()
    assert grad_of(x).shape == shape


# --- nn on an empty batch -----------------------------------------------------------------------------------------
@with_backends
def test_linear_and_cross_entropy_on_a_batch_of_none(backend):
    layer = nn.Linear(3, 2, backend=backend)
    out = layer(zeros((0, 3), backend=backend))
    assert out.shape == (0, 2)
    loss = nn.cross_entropy(out, [])
    assert loss.shape == (1,) and math.isnan(loss.item())  # the mean of no losses, as torch's mean reduction
    out.sum().backward()
    np.testing.assert_array_equal(layer.weight.value.grad.to_numpy(), np.zeros((2, 3)))
    np.testing.assert_array_equal(layer.bias.value.grad.to_numpy(), np.zeros(2))


# --- CUDA launches ------------------------------------------------------------------------------------------------
class NeverLaunched:
    "A stand-in kernel that fails the test if `launch` configures it."

    def __getitem__(self, grid):
        raise AssertionError(f"a kernel was launched on the grid {grid} with nothing to write")


def test_cuda_launch_skips_an_empty_output():
    if not minitorch.cuda_available():
        pytest.skip("no CUDA GPU and NUMBA_ENABLE_CUDASIM unset")
    assert map_launch(0) == (0, 1) and reduce_launch(0, 5)[0] == 0
    empty = zeros((0, 3), backend=minitorch.backend("cuda"))
    assert isinstance(empty._tensor._storage, CudaStorage) and len(empty._tensor._storage) == 0
    launch(NeverLaunched(), map_launch(0), (empty._tensor, empty._tensor))
    assert ones((0, 3), backend=minitorch.backend("cuda")).size == 0


def test_cuda_practice_kernels_skip_an_empty_grid(monkeypatch):
    if not minitorch.cuda_available():
        pytest.skip("no CUDA GPU and NUMBA_ENABLE_CUDASIM unset")
    monkeypatch.setattr(minitorch.cuda_ops, "sum_practice_kernel", NeverLaunched())
    monkeypatch.setattr(minitorch.cuda_ops, "mm_practice_kernel", NeverLaunched())
    gpu = minitorch.backend("cuda")
    assert minitorch.sum_practice(zeros((0,), backend=gpu)).shape == (0,)
    assert minitorch.mm_practice(zeros((0, 0), backend=gpu), zeros((0, 0), backend=gpu)).shape == (0, 0)


# --- PyTorch parity -----------------------------------------------------------------------------------------------
def twins(backend, data, *shapes):
    "For each shape, a minitorch leaf on `backend` (see `leaf`) and a torch leaf with its values."
    leaves = [leaf(backend, data, shape) for shape in shapes]
    return [(ours, torch.tensor(ours.to_numpy(), dtype=torch.float64, requires_grad=True)) for ours in leaves]


def assert_like_torch(ours, theirs):
    "Same shape and values (nan where torch has nan)."
    assert ours.shape == tuple(theirs.shape), (ours.shape, tuple(theirs.shape))
    np.testing.assert_allclose(ours.to_numpy(), theirs.detach().numpy(), rtol=1e-9, atol=1e-12)


def assert_grads_like_torch(pairs):
    "Each minitorch leaf's gradient equals its torch twin's (torch's None: no gradient, counted as zeros)."
    for ours, theirs in pairs:
        expected = np.zeros(tuple(theirs.shape)) if theirs.grad is None else theirs.grad.numpy()
        np.testing.assert_allclose(grad_of(ours), expected, rtol=1e-9, atol=1e-12)


@needs_torch
@with_backends
@settings(max_examples=30)
@given(data=st.data())
def test_elementwise_and_reductions_match_torch(backend, data):
    (x, x_torch), (y, y_torch) = pairs = twins(backend, data, *data.draw(empty_broadcast_pairs()))
    ours, theirs = elementwise(x, y), elementwise(x_torch, y_torch)
    assert_like_torch(ours, theirs)
    dim = data.draw(st.integers(min_value=0, max_value=ours.dims - 1))
    name = data.draw(st.sampled_from(["sum", "mean"]))
    keepdim = data.draw(st.booleans()) or ours.dims == 1   # dropped from one dim: (1,) here, () in torch
    ours, theirs = getattr(ours, name)(dim, keepdim=keepdim), getattr(theirs, name)(dim, keepdim=keepdim)
    assert_like_torch(ours, theirs)
    (ours.sum() + x.sum() * 2.0).backward()
    (theirs.sum() + x_torch.sum() * 2.0).backward()
    assert_grads_like_torch(pairs)


@needs_torch
@with_backends
@settings(max_examples=30)
@given(data=st.data())
def test_matmul_matches_torch(backend, data):
    (a, a_torch), (b, b_torch) = pairs = twins(backend, data, *data.draw(empty_matmul_shapes()))
    ours, theirs = (a @ b).sigmoid(), (a_torch @ b_torch).sigmoid()
    assert_like_torch(ours, theirs)
    ours.sum().backward()
    theirs.sum().backward()
    assert_grads_like_torch(pairs)


@needs_torch
@with_backends
@settings(max_examples=30)
@given(data=st.data())
def test_views_max_and_softmax_match_torch(backend, data):
    shape = data.draw(empty_shapes())
    order = data.draw(st.permutations(range(len(shape))))
    [(x, x_torch)] = pairs = twins(backend, data, shape)
    moved, moved_torch = x.permute(*order), x_torch.permute(*order)
    assert_like_torch(moved.contiguous().view(0), moved_torch.contiguous().view(0))
    dim = data.draw(st.integers(min_value=0, max_value=len(shape) - 1))
    if moved.shape[dim] == 0:
        with pytest.raises(IndexError):
            torch.amax(moved_torch, dim)
        with pytest.raises(IndexingError, match="non-zero size"):
            nn.max(moved, dim)
    else:
        assert_like_torch(nn.max(moved, dim), torch.amax(moved_torch, dim))
        assert_like_torch(nn.argmax(moved, dim), torch.argmax(moved_torch, dim).double())
    ours, theirs = nn.logsoftmax(moved, dim) + nn.softmax(moved, dim), (torch.log_softmax(moved_torch, dim)
                                                                         + torch.softmax(moved_torch, dim))
    assert_like_torch(ours, theirs)
    ours.sum().backward()
    theirs.sum().backward()
    assert_grads_like_torch(pairs)


@needs_torch
@with_backends
def test_linear_and_cross_entropy_on_a_batch_of_none_match_torch(backend):
    layer = nn.Linear(3, 2, backend=backend)
    twin = torch.nn.Linear(3, 2, dtype=torch.float64)
    with torch.no_grad():
        twin.weight.copy_(torch.tensor(layer.weight.value.to_numpy()))
        twin.bias.copy_(torch.tensor(layer.bias.value.to_numpy()))
    ours, theirs = nn.cross_entropy(layer(zeros((0, 3), backend=backend)), []), torch.nn.functional.cross_entropy(
        twin(torch.zeros((0, 3), dtype=torch.float64)), torch.zeros(0, dtype=torch.long))
    assert_like_torch(ours, theirs.reshape(1))
    ours.backward()
    theirs.backward()
    assert_grads_like_torch([(layer.weight.value, twin.weight), (layer.bias.value, twin.bias)])  # zeros: no rows
