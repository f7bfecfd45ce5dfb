"""Joining, cutting and selecting (`25_tensor_indexing`): `cat`, `stack`, `split`, `chunk`, `narrow`, `where`, `masked_fill`,
`tril`, `triu` match NumPy's values and PyTorch's values and gradients (float64) on every backend, on empty dims and
on sliced inputs (views with an offset), and `nan`/`inf` in a branch not taken never leak."""
import math

import numpy as np
import pytest
from backends import BACKENDS
from hypothesis import given
from hypothesis import strategies as st
from tensor_strategies import SPECIAL, arrays

import minitorch
from minitorch import IndexingError, backend as backend_named, cat, stack, tensor, tril, triu, where

pytestmark = pytest.mark.parametrize("backend", BACKENDS)



def sizes(low: int = 0, high: int = 3):
    return st.integers(low, high)


@st.composite
def shapes(draw, min_dims: int = 1, max_dims: int = 3, low: int = 0):
    "A shape of small sizes, empty dims included."
    return tuple(draw(st.lists(sizes(low), min_size=min_dims, max_size=max_dims)))


def leaf_and_input(values: np.ndarray, backend, sliced: bool, requires_grad: bool = True):
    "A leaf tensor and the input made from it: the leaf itself, or (sliced) a strided view with an offset into it."
    if not sliced or values.ndim == 0:
        leaf = tensor(values, backend=backend, requires_grad=requires_grad)
        return leaf, leaf, values
    big = np.full((2 * values.shape[0] + 1, *values.shape[1:]), 7.0)
    big[1::2] = values
    leaf = tensor(big, backend=backend, requires_grad=requires_grad)
    return leaf, leaf[1::2], big


def torch_leaf(torch, values: np.ndarray, sliced: bool):
    "The PyTorch twin of `leaf_and_input`."
    leaf = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    return leaf, (leaf[1::2] if sliced and values.ndim else leaf)


def weighted_sum(out, weights: np.ndarray, make):
    "`(out * weights).sum()`: a loss whose gradient is `weights`."
    return (out * make(weights)).sum()


def assert_grads(ours, theirs):
    for mine, reference in zip(ours, theirs):
        expected = np.zeros(reference.shape) if reference.grad is None else reference.grad.numpy()
        got = np.zeros(expected.shape) if mine.grad is None else mine.grad.to_numpy()
        np.testing.assert_allclose(got, expected, rtol=1e-12)


# --- cat and stack ---------------------------------------------------------------------------------------------------
@st.composite
def cat_cases(draw):
    "Values of 1 to 3 tensors that differ only in the size of dim `dim`, and `dim` (maybe negative)."
    shape = draw(shapes())
    dim = draw(st.integers(-len(shape), len(shape) - 1))
    count = draw(st.integers(1, 3))
    parts = [draw(arrays(shape[:dim % len(shape)] + (draw(sizes()),) + shape[dim % len(shape) + 1:]))
             for _ in range(count)]
    return parts, dim, draw(st.lists(st.booleans(), min_size=count, max_size=count))


@pytest.mark.task("2.9")
@given(cat_cases(), st.integers(0, 2**16))
def test_cat_matches_numpy_and_torch(backend, case, seed):
    parts, dim, sliced = case
    made = [leaf_and_input(values, backend, flag) for values, flag in zip(parts, sliced)]
    out = cat([value for _, value, _ in made], dim)
    expected = np.concatenate(parts, dim)
    assert out.shape == expected.shape and out.backend is backend
    np.testing.assert_array_equal(out.to_numpy(), expected)
    torch = pytest.importorskip("torch")
    weights = np.random.default_rng(seed).normal(size=expected.shape)
    weighted_sum(out, weights, lambda w: tensor(w, backend=backend)).backward()
    twins = [torch_leaf(torch, raw, flag) for (_, _, raw), flag in zip(made, sliced)]
    reference = torch.cat([value for _, value in twins], dim)
    (reference * torch.tensor(weights)).sum().backward()
    assert_grads([leaf for leaf, _, _ in made], [leaf for leaf, _ in twins])


DTYPE_NAMES = ["float32", "float64", "int64"]


@given(st.lists(st.sampled_from(DTYPE_NAMES), min_size=1, max_size=4), st.integers(0, 2**16))
def test_cat_promotes_dtypes_as_torch(backend, names, seed):
    "Tensors of mixed dtypes join in the dtype torch.cat gives them, and each float input's gradient keeps its own."
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(seed)
    parts = [rng.integers(-9, 9, (int(rng.integers(0, 3)), 2)).astype(name) for name in names]
    made = [tensor(values, backend=backend, dtype=name, requires_grad=name != "int64")
            for values, name in zip(parts, names)]
    out = cat(made)
    twins = [torch.tensor(values, requires_grad=name != "int64") for values, name in zip(parts, names)]
    reference = torch.cat(twins)
    assert str(out.dtype) == str(reference.dtype).removeprefix("torch.")
    np.testing.assert_array_equal(out.to_numpy(), reference.detach().numpy())
    if out.dtype.kind == "f":
        out.sum().backward()
        reference.sum().backward()
        for mine, theirs in zip(made, twins):
            if theirs.requires_grad:
                assert str(mine.grad.dtype) == str(theirs.grad.dtype).removeprefix("torch.")
                np.testing.assert_array_equal(mine.grad.to_numpy(), theirs.grad.numpy())


@given(shapes(), st.integers(1, 3), st.data())
def test_stack_matches_numpy_and_torch(backend, shape, count, data):
    dim = data.draw(st.integers(-len(shape) - 1, len(shape)))
    parts = [data.draw(arrays(shape)) for _ in range(count)]
    sliced = data.draw(st.booleans())
    made = [leaf_and_input(values, backend, sliced) for values in parts]
    out = stack([value for _, value, _ in made], dim)
    expected = np.stack(parts, dim)
    assert out.shape == expected.shape
    np.testing.assert_array_equal(out.to_numpy(), expected)
    torch = pytest.importorskip("torch")
    weights = data.draw(arrays(expected.shape))
    weighted_sum(out, weights, lambda w: tensor(w, backend=backend)).backward()
    twins = [torch_leaf(torch, raw, sliced) for _, _, raw in made]
    (torch.stack([value for _, value in twins], dim) * torch.tensor(weights)).sum().backward()
    assert_grads([leaf for leaf, _, _ in made], [leaf for leaf, _ in twins])


@pytest.mark.task("2.9")
def test_cat_and_stack_take_parameters_as_torch(backend):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    values = [rng.normal(size=(2, 3)), rng.normal(size=(2, 3))]
    ours = [minitorch.Parameter(tensor(value, backend=backend)) for value in values]
    theirs = [torch.nn.Parameter(torch.tensor(value)) for value in values]
    weights = rng.normal(size=(2, 2, 3))
    joined, stacked = cat([ours[0], ours[1]], dim=1), stack(ours, dim=1)
    ((joined.view(2, 2, 3) + stacked) * tensor(weights, backend=backend)).sum().backward()
    expected = torch.cat(theirs, dim=1).view(2, 2, 3) + torch.stack(theirs, dim=1)
    (expected * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(joined.view(2, 2, 3).to_numpy() + stacked.to_numpy(), expected.detach().numpy(), rtol=1e-12)
    for mine, reference in zip(ours, theirs):   # the gradients reach the parameters
        np.testing.assert_allclose(mine.grad.to_numpy(), reference.grad.numpy(), rtol=1e-12)
    assert cat([ours[0], tensor(values[1], backend=backend)]).shape == (4, 3)   # parameters and tensors mixed
    with pytest.raises(TypeError, match="takes a sequence of tensors"):
        cat(ours[0])


def test_cat_and_stack_errors(backend):
    other = backend_named("fast" if backend is backend_named("simple") else "simple")
    ones = lambda shape, on=backend: tensor(np.ones(shape), backend=on)  # noqa: E731
    with pytest.raises(ValueError, match="at least one tensor"):
        cat([])
    with pytest.raises(ValueError, match="at least one tensor"):
        stack([])
    with pytest.raises(IndexingError, match=r"tensor 2 \(shape \(2, 4\)\) has size 4 in dim 1"):
        cat([ones((2, 3)), ones((5, 3)), ones((2, 4))])
    with pytest.raises(IndexingError, match="tensor 1 has 1 dims"):
        cat([ones((2, 3)), ones(3)], dim=1)
    with pytest.raises(IndexingError, match="dim 2 is out of range"):
        cat([ones((2, 3))], dim=2)
    with pytest.raises(IndexingError, match=r"tensor 1 has shape \(4,\)"):
        stack([ones(3), ones(4)])
    with pytest.raises(IndexingError, match="dim 2 is out of range"):
        stack([ones(3)], dim=2)
    with pytest.raises(ValueError, match="tensor 1 is on"):
        cat([ones(3), ones(3, on=other)])
    with pytest.raises(TypeError, match="tensor 1 is a list"):
        cat([ones(3), [1.0]])
    with pytest.raises(TypeError, match="sequence of tensors"):
        cat(ones(3))


# --- split and chunk -------------------------------------------------------------------------------------------------
def piece_bounds(sizes_: list[int]) -> list[tuple[int, int]]:
    ends = np.cumsum([0, *sizes_])
    return list(zip(ends[:-1], ends[1:]))


@given(shapes(), st.data())
def test_split_matches_numpy_and_torch(backend, shape, data):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    size = shape[dim]
    if data.draw(st.booleans()):
        step = data.draw(st.integers(1 if size else 0, 4))
        expected_sizes = [min(step, size - start) for start in range(0, size, step)] if size else [0]
        how = step
    else:
        cuts = sorted(data.draw(st.lists(st.integers(0, size), max_size=3)))
        expected_sizes = [int(piece) for piece in np.diff([0, *cuts, size])]
        how = expected_sizes
    values = data.draw(arrays(shape))
    sliced = data.draw(st.booleans())
    leaf, t, raw = leaf_and_input(values, backend, sliced)
    pieces = t.split(how, dim)
    assert [piece.shape[dim] for piece in pieces] == expected_sizes
    for piece, (start, stop) in zip(pieces, piece_bounds(expected_sizes)):
        np.testing.assert_array_equal(piece.to_numpy(), np.take(values, range(start, stop), axis=dim))
        assert piece._tensor._storage is t._tensor._storage
    torch = pytest.importorskip("torch")
    weights = [data.draw(arrays(piece.shape)) for piece in pieces]
    sum((piece * tensor(w, backend=backend)).sum() for piece, w in zip(pieces, weights)).backward()
    twin, twin_input = torch_leaf(torch, raw, sliced)
    twin_pieces = twin_input.split(how, dim)
    assert [p.shape[dim] for p in twin_pieces] == expected_sizes
    sum((p * torch.tensor(w)).sum() for p, w in zip(twin_pieces, weights)).backward()
    assert_grads([leaf], [twin])


@given(shapes(), st.integers(1, 5), st.data())
def test_chunk_matches_torch(backend, shape, chunks, data):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    size = shape[dim]
    values = data.draw(arrays(shape))
    pieces = tensor(values, backend=backend).chunk(chunks, dim)
    step = -(-size // chunks)
    expected_sizes = [min(step, size - start) for start in range(0, size, step)] if size else [0] * chunks
    assert [piece.shape[dim] for piece in pieces] == expected_sizes
    for piece, (start, stop) in zip(pieces, piece_bounds(expected_sizes)):
        np.testing.assert_array_equal(piece.to_numpy(), np.take(values, range(start, stop), axis=dim))
    torch = pytest.importorskip("torch")
    assert [p.shape[dim] for p in torch.tensor(values).chunk(chunks, dim)] == expected_sizes


def test_split_and_chunk_errors(backend):
    t = tensor(np.arange(10.0), backend=backend)
    with pytest.raises(ValueError, match=r"the sizes \[3, 3\] must be whole numbers >= 0 adding up to 10"):
        t.split([3, 3])
    with pytest.raises(ValueError, match="must be positive"):
        t.split(0)
    with pytest.raises(ValueError, match="must be positive"):
        t.split(-2)
    with pytest.raises(ValueError, match="positive int"):
        t.chunk(0)
    with pytest.raises(IndexingError, match="dim 1 is out of range"):
        t.split(2, dim=1)
    with pytest.raises(IndexingError, match=r"narrow: start \(8\) \+ length \(3\) does not fit dim 0 of size 10"):
        t.narrow(0, 8, 3)
    with pytest.raises(IndexingError, match=r"narrow: start 11 .* start from -10 to 10"):
        t.narrow(0, 11, 0)


# --- where and masked_fill -------------------------------------------------------------------------------------------
@st.composite
def broadcast_shapes(draw, shape: tuple[int, ...]):
    "A shape that broadcasts to `shape`: some leading dims dropped, some sizes 1."
    dropped = draw(st.integers(0, len(shape)))
    return tuple(size if draw(st.booleans()) else 1 for size in shape[dropped:])


@given(shapes(), st.data())
def test_where_selects_as_numpy_and_torch(backend, shape, data):
    condition_values = data.draw(arrays(data.draw(broadcast_shapes(shape))))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    condition_values = rng.choice([0.0, 1.0, -2.0, math.nan], size=condition_values.shape)
    operands = []  # each: (our argument, torch argument maker, NumPy values, leaf, raw values, sliced)
    for _ in range(2):
        if data.draw(st.booleans()):
            value = data.draw(st.sampled_from(SPECIAL))
            operands.append((value, None, np.float64(value), None, None, False))
            continue
        values = data.draw(arrays(data.draw(broadcast_shapes(shape)), special=True))  # nan/inf, taken or not
        sliced = data.draw(st.booleans())
        leaf, value, raw = leaf_and_input(values, backend, sliced)
        operands.append((value, None, values, leaf, raw, sliced))
    condition = tensor(condition_values, backend=backend) if condition_values.ndim else None
    if condition is None:
        return
    out = where(condition, operands[0][0], operands[1][0])
    expected = np.where(condition_values != 0, operands[0][2], operands[1][2])
    assert out.shape == np.broadcast_shapes(condition_values.shape, np.shape(operands[0][2]), np.shape(operands[1][2]))
    np.testing.assert_array_equal(out.to_numpy(), np.broadcast_to(expected, out.shape))
    torch = pytest.importorskip("torch")
    leaves = [operand[3] for operand in operands if operand[3] is not None]
    if not leaves:
        return
    weights = data.draw(arrays(out.shape))
    weighted_sum(out, weights, lambda w: tensor(w, backend=backend)).backward()
    twins, arguments = [], []
    for value, _, numbers, leaf, raw, sliced in operands:
        if leaf is None:
            arguments.append(torch.tensor(float(value), dtype=torch.float64))
            continue
        twin, twin_input = torch_leaf(torch, raw, sliced)
        twins.append(twin)
        arguments.append(twin_input)
    reference = torch.where(torch.tensor(condition_values) != 0, *arguments)
    (reference * torch.tensor(weights)).sum().backward()
    assert_grads(leaves, twins)


@given(shapes(), st.sampled_from(SPECIAL), st.booleans(), st.data())
def test_masked_fill_matches_numpy_and_torch(backend, shape, value, larger_mask, data):
    "A bool mask (or 0.0/1.0 floats) that broadcasts to the tensor's shape, or the tensor to the mask's, as in torch."
    smaller = data.draw(broadcast_shapes(shape))
    mask_shape, values_shape = (shape, smaller) if larger_mask else (smaller, shape)
    flags = np.random.default_rng(data.draw(st.integers(0, 2**16))).random(mask_shape) < 0.5
    if flags.ndim == 0 or not values_shape:
        return
    values = data.draw(arrays(values_shape, special=True))
    sliced = data.draw(st.booleans())
    leaf, t, raw = leaf_and_input(values, backend, sliced)
    mask = tensor(flags, backend=backend, dtype=minitorch.bool) if data.draw(st.booleans()) else tensor(flags * 1.0, backend=backend)
    out = t.masked_fill(mask, value)
    assert out.shape == np.broadcast_shapes(mask_shape, values_shape) and out.dtype == t.dtype
    np.testing.assert_array_equal(out.to_numpy(), np.where(flags, value, values))
    torch = pytest.importorskip("torch")
    weights = data.draw(arrays(out.shape))
    weighted_sum(out, weights, lambda w: tensor(w, backend=backend)).backward()
    twin, twin_input = torch_leaf(torch, raw, sliced)
    (twin_input.masked_fill(torch.tensor(flags), value) * torch.tensor(weights)).sum().backward()
    assert_grads([leaf], [twin])


def test_where_of_a_comparison_of_tracked_tensors(backend):
    x = tensor([[-1.0, 2.0], [3.0, -4.0]], backend=backend, requires_grad=True)
    y = tensor([10.0, math.nan], backend=backend, requires_grad=True)
    out = where(x > 0.0, x, y)  # the condition tracks gradients too (it was made from x): it gets none
    np.testing.assert_array_equal(out.to_numpy(), [[10.0, 2.0], [3.0, math.nan]])
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.to_numpy(), [[0.0, 1.0], [1.0, 0.0]])
    np.testing.assert_array_equal(y.grad.to_numpy(), [1.0, 1.0])


def test_where_and_masked_fill_errors(backend):
    t = tensor(np.ones((2, 3)), backend=backend)
    other = backend_named("fast" if backend is backend_named("simple") else "simple")
    with pytest.raises(TypeError, match="condition is a list"):
        where([1.0, 0.0], t, 0.0)
    with pytest.raises(ValueError, match="b is on"):
        where(t, 1.0, tensor([1.0], backend=other))
    with pytest.raises(IndexingError, match=r"\(2, 3\) and \(2,\) do not broadcast"):
        where(t, t, tensor([1.0, 2.0], backend=backend))
    with pytest.raises(TypeError, match="cannot combine"):
        where(t, "a", 0.0)
    with pytest.raises(IndexingError, match=r"mask of shape \(3, 3\) does not broadcast with the tensor's shape"):
        t.masked_fill(tensor(np.ones((3, 3)), backend=backend) > 0, 0.0)
    with pytest.raises(TypeError, match="mask is a ndarray"):
        t.masked_fill(np.ones((2, 3)), 0.0)
    with pytest.raises(TypeError, match="must be a number"):
        t.masked_fill(t, "x")


# --- tril and triu ---------------------------------------------------------------------------------------------------
@given(shapes(min_dims=2), st.integers(-4, 4), st.booleans(), st.data())
def test_tril_and_triu_match_numpy_and_torch(backend, shape, diagonal, lower, data):
    values = data.draw(arrays(shape, special=True))
    sliced = data.draw(st.booleans())
    leaf, t, raw = leaf_and_input(values, backend, sliced)
    out = (tril if lower else triu)(t, diagonal)
    assert out.shape == shape
    np.testing.assert_array_equal(out.to_numpy(), (np.tril if lower else np.triu)(values, diagonal))
    np.testing.assert_array_equal((t.tril if lower else t.triu)(diagonal).to_numpy(), out.to_numpy())
    torch = pytest.importorskip("torch")
    weights = data.draw(arrays(shape))
    weighted_sum(out, weights, lambda w: tensor(w, backend=backend)).backward()
    twin, twin_input = torch_leaf(torch, raw, sliced)
    ((torch.tril if lower else torch.triu)(twin_input, diagonal) * torch.tensor(weights)).sum().backward()
    assert_grads([leaf], [twin])


def test_tril_and_triu_errors(backend):
    with pytest.raises(IndexingError, match=r"at least 2 dims, got shape \(3,\)"):
        tril(tensor([1.0, 2.0, 3.0], backend=backend))
    with pytest.raises(TypeError, match="diagonal must be an int"):
        triu(tensor(np.ones((2, 2)), backend=backend), 0.5)


# --- bool masks: t[mask], t[mask] = value ----------------------------------------------------------------------------
@st.composite
def mask_cases(draw):
    "Values, the dim a mask starts at and how many dims it covers, its True/False values, and whether the input is sliced."
    shape = draw(shapes(low=0))
    dim = draw(st.integers(0, len(shape) - 1))
    covered = draw(st.integers(1, len(shape) - dim))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    flags = rng.random(shape[dim:dim + covered]) < draw(st.sampled_from([0.0, 0.5, 1.0]))
    return draw(arrays(shape, special=True)), dim, flags, draw(st.booleans())


@given(mask_cases(), st.data())
def test_indexing_by_a_bool_mask_matches_torch(backend, case, data):
    "`t[mask]` and `t[:, mask]` (masks of one or more dims): torch's values, in row-major order, and gradients."
    torch = pytest.importorskip("torch")
    values, dim, flags, sliced = case
    leaf, t, raw = leaf_and_input(values, backend, sliced)
    key = (slice(None),) * dim + (tensor(flags, backend=backend, dtype=minitorch.bool),)
    twin, twin_input = torch_leaf(torch, raw, sliced)
    expected = twin_input[(slice(None),) * dim + (torch.tensor(flags),)]
    out = t[key]
    assert out.shape == tuple(expected.shape) and out.dtype == minitorch.float64
    np.testing.assert_array_equal(out.to_numpy(), expected.detach().numpy())
    weights = data.draw(arrays(out.shape))
    weighted_sum(out, weights, lambda w: tensor(w, backend=backend)).backward()
    (expected * torch.tensor(weights)).sum().backward()
    assert_grads([leaf], [twin])
    if dim == 0 and flags.ndim == 1:   # a list of bools is a mask too
        np.testing.assert_array_equal(t[flags.tolist()].to_numpy(), expected.detach().numpy())


@given(mask_cases(), st.sampled_from(["number", "one", "picked", "trailing"]), st.data())
def test_assigning_through_a_bool_mask_matches_torch(backend, case, kind, data):
    "`t[mask] = value` in place, a number, one value, one per picked place, or broadcast over the picked places."
    torch = pytest.importorskip("torch")
    values, dim, flags, sliced = case
    leaf, t, raw = leaf_and_input(values, backend, sliced, requires_grad=False)
    twin_input = torch_leaf(torch, raw, sliced)[1].detach()
    their_mask = torch.tensor(flags)
    picked = tuple(twin_input[(slice(None),) * dim + (their_mask,)].shape)
    value_shape = {"one": (1,), "picked": picked, "trailing": picked[dim + 1:]}.get(kind)
    value = data.draw(st.sampled_from([-math.inf, 0.0, 2.5])) if value_shape is None else data.draw(arrays(value_shape))
    if value_shape == ():
        value = float(value)
    t[(slice(None),) * dim + (tensor(flags, backend=backend, dtype=minitorch.bool),)] = (
        value if isinstance(value, float) else tensor(value, backend=backend))
    twin_input[(slice(None),) * dim + (their_mask,)] = value if isinstance(value, float) else torch.tensor(value)
    np.testing.assert_array_equal(t.to_numpy(), twin_input.numpy())
    if sliced and values.ndim:   # written through the view into the storage it shares, nothing else touched
        np.testing.assert_array_equal(leaf.to_numpy()[1::2], twin_input.numpy())
        assert (leaf.to_numpy()[::2] == 7.0).all()


def test_nanogpt_and_pytorch_habits_with_masks(backend):
    "Top-k filtering, a causal mask from a buffer, `x[x > 0]`, counting and accuracy, as PyTorch code writes them."
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    logits_values, att_values = rng.normal(size=(3, 7)), rng.normal(size=(2, 2, 4, 4))
    ours, theirs = tensor(logits_values, backend=backend), torch.tensor(logits_values)
    v = tensor(np.sort(logits_values, 1)[:, ::-1][:, :3].copy(), backend=backend)
    their_v, _ = torch.topk(theirs, 3)
    ours[ours < v[:, [-1]]] = -float("inf")
    theirs[theirs < their_v[:, [-1]]] = -float("inf")
    np.testing.assert_array_equal(ours.to_numpy(), theirs.numpy())
    bias = tril(tensor(np.ones((4, 4)), backend=backend)).view(1, 1, 4, 4)
    their_bias = torch.tril(torch.ones(4, 4)).view(1, 1, 4, 4)
    att, their_att = tensor(att_values, backend=backend)[..., :3, :3], torch.tensor(att_values)[..., :3, :3]   # T = 3
    masked = att.masked_fill(bias[:, :, :3, :3] == 0, float("-inf"))
    np.testing.assert_array_equal(masked.to_numpy(), their_att.masked_fill(their_bias[:, :, :3, :3] == 0, float("-inf")))
    x, their_x = tensor(logits_values, backend=backend), torch.tensor(logits_values)
    np.testing.assert_array_equal(x[x > 0].to_numpy(), their_x[their_x > 0].numpy())
    assert (x > 0).sum().item() == (their_x > 0).sum().item() and (x > 0).sum().dtype == minitorch.int64
    a, b = tensor([1, 2, 3, 4], backend=backend, dtype=minitorch.int64), tensor([1, 0, 3, 0], backend=backend, dtype=minitorch.int64)
    accuracy = (a == b).float().mean()
    assert accuracy.dtype == minitorch.float32 and accuracy.item() == 0.5


def test_bool_mask_errors(backend):
    t = tensor(np.arange(6.0).reshape(2, 3), backend=backend)
    with pytest.raises(IndexingError, match=r"the shape of the mask \(3,\) does not match the shape \(2,\)"):
        t[tensor([True, False, True], backend=backend, dtype=minitorch.bool)]
    with pytest.raises(IndexingError, match=r"one mask among full slices"):
        t[t > 2, 0]
    with pytest.raises(IndexingError, match=r"a value of shape \(2,\) cannot be broadcast to the shape \(3,\)"):
        t[t > 2] = tensor([1.0, 2.0], backend=backend)
    with pytest.raises(TypeError, match=r"cannot store a float64 result in x of dtype int64"):
        ids = tensor([1, 2, 3], backend=backend, dtype=minitorch.int64)
        ids[ids > 1] = 0.5
    tracked = tensor([1.0, -1.0], backend=backend, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"x\[mask\] = value changes x in place"):
        tracked[tracked > 0] = 0.0
    with pytest.raises(TypeError, match=r"the index must be int64, got bool"):
        minitorch.gather(t, 1, t > 2)
