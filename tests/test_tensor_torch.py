"""PyTorch parity: random expressions in float64, forward values and the gradient of every input match torch."""
import math

import numpy as np
import pytest
from backends import BACKENDS
from hypothesis import given, settings
from hypothesis import strategies as st
from tensor_strategies import broadcast_shapes, tensors

from minitorch import tensor

torch = pytest.importorskip("torch")

pytestmark = [pytest.mark.task("2.7"), pytest.mark.parametrize("backend", BACKENDS)]
bounded = st.floats(min_value=-2, max_value=2, allow_nan=False)

UNARY = {
    "neg": lambda v: -v,
    "sigmoid": lambda v: v.sigmoid(),
    "relu": lambda v: (v + 0.3).relu(),
    "exp": lambda v: (v * 0.1).exp(),
    "erf": lambda v: (v * 0.7).erf(),
    "log": lambda v: (v * v + 1.0).log(),
    "inv": lambda v: 1.0 / (v * v + 0.5),
    "rsub": lambda v: 2.0 - v,
    "scale": lambda v: v / 3.0,
    "view": lambda v: v.contiguous().view(math.prod(v.shape)).view(*v.shape),
    "positive part": lambda v: v * (v > 0.1),
    "masked_fill": lambda v: v.masked_fill(v < -0.5, 0.25),
    "or": lambda v: v * ((v > 1.0) | (v < -1.0)) + 0.5 * (v > 0.0).float(),
}
BINARY = {
    "add": lambda v, w: v + w,
    "sub": lambda v, w: w - v,
    "mul": lambda v, w: v * w,
    "div": lambda v, w: v / (w * w + 1.0),
    "mask": lambda v, w: v * ((v < w) * 1.0) + w * ((v > w) * 1.0),
    "bool promote": lambda v, w: (v <= w) + v - (w != 0.3).double() * w,
    "masked_fill broadcast": lambda v, w: v.masked_fill(w > 0.2, -1.5),
    "and": lambda v, w: w * (v > -1.0) * ((v < w) & (w < 1.5)),
}
REDUCE = {
    "sum": lambda v, dim: v.sum(dim, keepdim=True),
    "mean": lambda v, dim: v.mean(dim, keepdim=True),
    "cumsum": lambda v, dim: v.cumsum(dim),
    # the defaults, PyTorch's keepdim=False: the dim dropped (kept when it is the last one: (1,) here, () in torch)
    "sum, dim dropped": lambda v, dim: v.sum(dim, keepdim=len(v.shape) == 1),
    "mean, dim dropped": lambda v, dim: v.mean(dim, keepdim=len(v.shape) == 1),
    "var, dim dropped": lambda v, dim: v.var(dim, correction=0, keepdim=len(v.shape) == 1),
    "sum, NumPy's keepdims": lambda v, dim: v.sum(dim, keepdims=True),
}


def close(ours, theirs):
    "Assert that a minitorch tensor equals a torch tensor to 1e-6 relative tolerance."
    expected = theirs.detach().numpy()
    scale = max(1.0, float(np.abs(expected).max()))
    np.testing.assert_allclose(ours.to_numpy(), expected.reshape(ours.shape), rtol=1e-6, atol=1e-9 * scale)


def close_grad(ours, theirs):
    "Assert that two leaf gradients agree; torch's `None` (input not used, or only compared) agrees with ours of zeros."
    if theirs is None:   # a comparison passes zero gradients in minitorch, none in torch
        assert ours is None or not ours.to_numpy().any(), ours
    else:
        close(ours, theirs)


def leaf_pair(backend, raw, permuted):
    "A minitorch leaf and its torch twin, both seen through the reversing permutation if `permuted`."
    ours = tensor(raw, backend=backend, requires_grad=True)
    theirs = torch.tensor(raw, dtype=torch.float64, requires_grad=True)
    if not permuted:
        return ours, theirs, ours, theirs
    order = tuple(reversed(range(raw.ndim)))
    return ours, theirs, ours.permute(*order), theirs.permute(*order)


@st.composite
def programs(draw):
    "A random sequence of operations applied to a running value, combining it with the inputs."
    steps = []
    for _ in range(draw(st.integers(min_value=1, max_value=6))):
        kind = draw(st.sampled_from(["unary", "binary", "reduce"]))
        names = {"unary": UNARY, "binary": BINARY, "reduce": REDUCE}[kind]
        steps.append((kind, draw(st.sampled_from(sorted(names))), draw(st.integers(min_value=0, max_value=3))))
    return steps


def run(program, x, y):
    "Evaluate `program` on the inputs with minitorch or torch (the same code)."
    value = x
    for kind, name, argument in program:
        if kind == "unary":
            value = UNARY[name](value)
        elif kind == "binary":
            other = (x, y)[argument % 2]
            try:   # a dim dropped by a reduction may leave shapes that no longer broadcast: skip the step
                np.broadcast_shapes(tuple(value.shape), tuple(other.shape))
            except ValueError:
                continue
            value = BINARY[name](value, other)
        else:
            value = REDUCE[name](value, argument % len(value.shape))
    return value


@settings(max_examples=60)
@given(st.data())
def test_random_expressions_with_broadcasting_and_permuted_inputs(backend, data):
    shape_x, shape_y = data.draw(broadcast_shapes())
    leaves = []
    for shape in (shape_x, shape_y):
        permuted = data.draw(st.booleans())
        stored_shape = tuple(reversed(shape)) if permuted else shape
        raw = data.draw(tensors(backend, stored_shape, bounded)).to_numpy()
        leaves.append(leaf_pair(backend, raw, permuted))
    (x_leaf, x_torch_leaf, x, x_torch), (y_leaf, y_torch_leaf, y, y_torch) = leaves
    program = data.draw(programs())
    ours, theirs = run(program, x, y), run(program, x_torch, y_torch)
    assert ours.shape == tuple(theirs.shape), program
    close(ours, theirs)
    grad_values = np.random.default_rng(len(program)).normal(size=theirs.shape)
    ours.backward(tensor(grad_values, backend=backend))
    theirs.backward(torch.tensor(grad_values))
    close_grad(x_leaf.grad, x_torch_leaf.grad)
    close_grad(y_leaf.grad, y_torch_leaf.grad)


@settings(max_examples=30)
@given(st.data())
def test_batched_matmul(backend, data):
    batch, rows, inner, cols = (data.draw(st.integers(min_value=1, max_value=4)) for _ in range(4))
    a_shape, b_shape = data.draw(st.sampled_from([
        ((rows, inner), (inner, cols)), ((batch, rows, inner), (batch, inner, cols)),
        ((1, rows, inner), (batch, inner, cols)), ((batch, rows, inner), (1, inner, cols)),
        ((batch, rows, inner), (inner, cols)), ((rows, inner), (batch, inner, cols))]))
    pairs = []
    for shape in (a_shape, b_shape):
        permuted = data.draw(st.booleans())
        stored_shape = tuple(reversed(shape)) if permuted else shape
        pairs.append(leaf_pair(backend, data.draw(tensors(backend, stored_shape, bounded)).to_numpy(), permuted))
    (a_leaf, a_torch_leaf, a, a_torch), (b_leaf, b_torch_leaf, b, b_torch) = pairs
    ours, theirs = (a @ b).sigmoid(), (a_torch @ b_torch).sigmoid()
    close(ours, theirs)
    ours.sum().backward()
    theirs.sum().backward()
    close(a_leaf.grad, a_torch_leaf.grad)
    close(b_leaf.grad, b_torch_leaf.grad)


@pytest.mark.parametrize("shape, dim", [((2000,), 0), ((3, 700), 1), ((700, 3), 0), ((2, 300, 2), 1), ((500, 4), None)])
@pytest.mark.parametrize("keepdim", [True, False])
def test_reductions_over_long_dimensions(backend, shape, dim, keepdim):
    raw = np.random.default_rng(sum(shape)).normal(size=shape)
    ours_leaf = tensor(raw, backend=backend, requires_grad=True)
    theirs_leaf = torch.tensor(raw, requires_grad=True)
    for reduction in ("sum", "mean"):
        if dim is None:
            ours, theirs = getattr(ours_leaf, reduction)(), getattr(theirs_leaf, reduction)()
        else:
            ours = getattr(ours_leaf, reduction)(dim, keepdim=keepdim)
            theirs = getattr(theirs_leaf, reduction)(dim, keepdim=keepdim)
        close(ours, theirs)
        weights = np.linspace(-1, 1, theirs.numel()).reshape(theirs.shape)
        ours.backward(tensor(weights, backend=backend).view(*ours.shape))
        theirs.backward(torch.tensor(weights))
    close(ours_leaf.grad, theirs_leaf.grad)


@settings(max_examples=30)
@given(st.data())
def test_matmul_with_a_vector_as_torch(backend, data):
    "A 1-D operand is a row on the left, a column on the right, that dim dropped from the product (v @ w: a dot)."
    n = data.draw(st.integers(min_value=1, max_value=3))
    shapes = data.draw(st.sampled_from([((n,), (n,)), ((n,), (n, 3)), ((n,), (2, n, 3)), ((3, n), (n,)), ((2, 3, n), (n,))]))
    pairs = [leaf_pair(backend, data.draw(tensors(backend, shape, bounded)).to_numpy(), False) for shape in shapes]
    (a_leaf, a_torch_leaf, a, a_torch), (b_leaf, b_torch_leaf, b, b_torch) = pairs
    ours, theirs = a @ b, a_torch @ b_torch
    assert ours.shape == (tuple(theirs.shape) or (1,))
    close(ours, theirs.reshape(ours.shape))
    ours.sum().backward()
    theirs.sum().backward()
    close(a_leaf.grad, a_torch_leaf.grad)
    close(b_leaf.grad, b_torch_leaf.grad)


@settings(max_examples=30)
@given(st.data())
def test_matmul_with_several_batch_dims(backend, data):
    "Two or three batch dims, each broadcast from 1 or not, inputs stored permuted or not, as torch.matmul."
    rows, inner, cols = (data.draw(st.integers(min_value=1, max_value=3)) for _ in range(3))
    batch = data.draw(st.lists(st.integers(min_value=1, max_value=3), min_size=2, max_size=3))
    a_batch = [data.draw(st.sampled_from([size, 1])) for size in batch]
    b_batch = [data.draw(st.sampled_from([size, 1])) for size in batch][data.draw(st.integers(0, len(batch))):]
    pairs = []
    for shape in ((*a_batch, rows, inner), (*b_batch, inner, cols)):
        permuted = data.draw(st.booleans())
        stored_shape = tuple(reversed(shape)) if permuted else shape
        pairs.append(leaf_pair(backend, data.draw(tensors(backend, stored_shape, bounded)).to_numpy(), permuted))
    (a_leaf, a_torch_leaf, a, a_torch), (b_leaf, b_torch_leaf, b, b_torch) = pairs
    ours, theirs = (a @ b).sigmoid(), (a_torch @ b_torch).sigmoid()
    assert ours.shape == tuple(theirs.shape)
    close(ours, theirs)
    ours.sum().backward()
    theirs.sum().backward()
    close(a_leaf.grad, a_torch_leaf.grad)
    close(b_leaf.grad, b_torch_leaf.grad)


@settings(max_examples=30)
@given(st.data())
def test_reshape_transpose_and_view_with_minus_one(backend, data):
    shape = tuple(data.draw(st.lists(st.integers(min_value=1, max_value=3), min_size=2, max_size=4)))
    raw = data.draw(tensors(backend, shape, bounded)).to_numpy()
    ours, theirs = tensor(raw, backend=backend, requires_grad=True), torch.tensor(raw, requires_grad=True)
    dim0, dim1 = data.draw(st.integers(-len(shape), len(shape) - 1)), data.draw(st.integers(-len(shape), len(shape) - 1))
    keep = data.draw(st.integers(0, len(shape) - 1))
    new_shape = (*shape[:keep], -1)
    ours_out = ours.transpose(dim0, dim1).reshape(*new_shape).sigmoid().contiguous().view(-1)
    theirs_out = theirs.transpose(dim0, dim1).reshape(*new_shape).sigmoid().contiguous().view(-1)
    close(ours_out, theirs_out)
    weights = np.arange(ours_out.size, dtype=float)
    ours_out.backward(tensor(weights, backend=backend))
    theirs_out.backward(torch.tensor(weights))
    close(ours.grad, theirs.grad)


@settings(max_examples=30)
@given(st.data())
def test_whole_numbers_make_int64_tensors_that_promote_as_torch(backend, data):
    "`tensor` of Python ints is int64, as torch's; with a float or divided it is a float (ours float64, torch's float32)."
    shape = tuple(data.draw(st.lists(st.integers(min_value=1, max_value=3), min_size=1, max_size=3)))
    values = np.array(data.draw(st.lists(st.integers(-9, 9), min_size=math.prod(shape), max_size=math.prod(shape))))
    ours, theirs = tensor(values.reshape(shape).tolist(), backend=backend), torch.tensor(values.reshape(shape).tolist())
    assert ours.dtype.name == "int64" and theirs.dtype == torch.int64
    dim = data.draw(st.integers(min_value=-len(shape), max_value=len(shape) - 1))
    keepdim = data.draw(st.booleans()) or len(shape) == 1
    for name, fn in {"add 1": lambda v: v + 1, "times 0.5": lambda v: v * 0.5, "divided": lambda v: v / (v * v + 1),
                     "sum": lambda v: v.sum(dim, keepdim=keepdim), "scaled sum": lambda v: (v * 0.25).sum(dim, keepdim=keepdim),
                     "maximum": lambda v: v.max(dim, keepdim=keepdim).values}.items():
        mine, expected = fn(ours), fn(theirs)
        assert mine.dtype.name == ("float64" if expected.dtype.is_floating_point else "int64"), (name, expected.dtype)
        assert mine.shape == tuple(expected.shape), name
        np.testing.assert_allclose(mine.to_numpy(), expected.double().numpy(), rtol=1e-6, err_msg=name)
