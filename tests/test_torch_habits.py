"""PyTorch spellings that read or rearrange a tensor, against torch: `t.size()` and `t.size(dim)` beside classic
MiniTorch's `t.size`, `unbind`, `repeat`, `mT`, `sort` and `argsort` (values, positions and gradients, NaN and
infinities included, float32, float64 and int64, permuted inputs), the comparison methods (`lt`, ..., `ne`),
`type_as`, `view_as`, `reshape_as`, `logsumexp`, the layout (`stride()`, `storage_offset()`, `is_contiguous()`) of random
views, and a comparison used as a mask."""
import math

import numpy as np
import pytest
from backends import BACKENDS
from hypothesis import given, settings
from hypothesis import strategies as st

import minitorch
from minitorch import IndexingError, tensor
from test_torch_names import DTYPES, twins

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.parametrize("backend", BACKENDS)
shapes = st.lists(st.integers(0, 4), min_size=1, max_size=3)


def backward_both(backend, ours, theirs, seed: int) -> None:
    "Backward from the sum of each output times the same random weights."
    weights = np.random.default_rng(seed).normal(size=ours.shape)
    (ours * tensor(weights, backend=backend, dtype=ours.dtype)).sum().backward()
    (theirs * torch.tensor(weights, dtype=theirs.dtype).reshape(theirs.shape)).sum().backward()


def same(ours, theirs) -> None:
    "Equal shapes and values (NaN where NaN), to float32's or float64's precision (sums of a few O(1) terms)."
    expected = theirs.detach().numpy()
    assert ours.shape == (tuple(expected.shape) or (1,))
    tolerance = 1e-5 if expected.dtype == np.float32 else 1e-12
    np.testing.assert_allclose(ours.to_numpy(), expected.reshape(ours.shape), rtol=tolerance, atol=tolerance)


@pytest.mark.task("2.1")
@given(shapes)
def test_size_is_the_count_and_called_the_shape_as_torch(backend, shape):
    ours, theirs = minitorch.zeros(tuple(shape), backend=backend), torch.zeros(shape)
    assert ours.size == theirs.numel() == math.prod(shape) and isinstance(ours.size, int)
    assert ours.size() == tuple(theirs.size()) == tuple(shape)
    for dim in range(-len(shape), len(shape)):
        assert ours.size(dim) == theirs.size(dim)
    for dim in (len(shape), -len(shape) - 1, 1.0, True):
        with pytest.raises(IndexError, match="no such dim among"):
            ours.size(dim)


@pytest.mark.task("2.7")
@settings(max_examples=30)
@given(shapes, st.sampled_from(sorted(DTYPES)), st.booleans(), st.data(), st.integers(0, 2**16))
def test_repeat_as_torch(backend, shape, dtype, permuted, data, seed):
    "Copies (not views) with the values of torch's `repeat`, and the gradient summed back over the copies."
    leaf, their_leaf, x, theirs = twins(backend, np.random.default_rng(seed).normal(size=shape), dtype, permuted)
    counts = data.draw(st.lists(st.integers(0, 3), min_size=x.dims, max_size=x.dims + 2))
    repeated, their_repeated = x.repeat(*counts), theirs.repeat(*counts)
    same(repeated, their_repeated)
    assert x.repeat(counts).shape == repeated.shape and repeated._tensor.is_contiguous()
    backward_both(backend, repeated, their_repeated, seed + 1)
    same(leaf.grad, their_leaf.grad)


@pytest.mark.task("2.7")
def test_repeat_and_mt_refuse_what_torch_refuses(backend):
    x = tensor(np.ones((2, 3)), backend=backend)
    for counts in ((2,), (2, -1), (2, 1.5)):
        with pytest.raises(IndexingError, match="whole number >= 0 for each of the 2 dims"):
            x.repeat(*counts)
    with pytest.raises(IndexingError, match="last two dims"):
        x[0].mT


@pytest.mark.task("2.7")
@settings(max_examples=30)
@given(st.lists(st.integers(0, 4), min_size=2, max_size=4), st.sampled_from(sorted(DTYPES)), st.booleans(),
       st.integers(0, 2**16))
def test_mt_as_torch(backend, shape, dtype, permuted, seed):
    "A view with the last two dims swapped, as torch's `.mT`, and its gradient."
    leaf, their_leaf, x, theirs = twins(backend, np.random.default_rng(seed).normal(size=shape), dtype, permuted)
    swapped, their_swapped = x.mT, theirs.mT
    same(swapped, their_swapped)
    assert swapped._tensor._storage is leaf._tensor._storage
    backward_both(backend, swapped, their_swapped, seed + 1)
    same(leaf.grad, their_leaf.grad)


@settings(max_examples=30)
@given(shapes, st.sampled_from(sorted(DTYPES)), st.booleans(), st.data(), st.integers(0, 2**16))
def test_unbind_as_torch(backend, shape, dtype, permuted, data, seed):
    "Views of each slice along a dim, as torch's `unbind`, with gradients flowing back into each slice's place."
    leaf, their_leaf, x, theirs = twins(backend, np.random.default_rng(seed).normal(size=shape), dtype, permuted)
    dim = data.draw(st.integers(-x.dims, x.dims - 1))
    pieces, their_pieces = x.unbind(dim), theirs.unbind(dim)
    assert len(pieces) == len(their_pieces) == x.shape[dim]
    for position, (piece, their_piece) in enumerate(zip(pieces, their_pieces)):
        if x.dims > 1:   # a slice of a 1-D tensor is one number: a (1,) tensor here, torch's 0-dim one there
            same(piece, their_piece)
        assert piece._tensor._storage is leaf._tensor._storage
        if position % 2 == 0:   # every other piece joins the loss: the rest get no gradient
            backward_both(backend, piece, their_piece.reshape(piece.shape), seed + position)
    if leaf.grad is not None or their_leaf.grad is not None:
        same(leaf.grad, their_leaf.grad)
    with pytest.raises(IndexingError, match="out of range"):
        x.unbind(x.dims)


def planted(shape: list[int], seed: int, kind: str) -> np.ndarray:
    "Values to sort: normals with NaN and infinities planted, or whole numbers with many ties (`kind` 'int')."
    rng = np.random.default_rng(seed)
    if kind == "int":
        return rng.integers(-3, 4, size=shape)
    values = rng.normal(size=shape)
    flat = values.reshape(-1)
    for special in (math.nan, math.nan, math.inf, -math.inf):
        if flat.size and rng.random() < 0.5:
            flat[rng.integers(flat.size)] = special
    return values


@pytest.mark.task("4.3")
@settings(max_examples=40)
@given(shapes, st.sampled_from(["float64", "float32", "int"]), st.booleans(), st.booleans(), st.data(),
       st.integers(0, 2**16))
def test_sort_and_argsort_as_torch(backend, shape, kind, descending, permuted, data, seed):
    "torch's stable sort: the same values and positions (NaN last, or first when descending; ties in order)."
    values = planted(shape, seed, kind)
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    if kind == "int":
        x, theirs = tensor(values, backend=backend, dtype=minitorch.int64), torch.tensor(values)
        if permuted:
            x, theirs = x.permute(*reversed(range(x.dims))), theirs.permute(*reversed(range(x.dims)))
    else:
        leaf, their_leaf, x, theirs = twins(backend, values, kind, permuted)
    ours, expected = x.sort(dim, descending=descending), torch.sort(theirs, dim=dim, descending=descending, stable=True)
    np.testing.assert_array_equal(ours.indices.to_numpy(), expected.indices.numpy())
    np.testing.assert_array_equal(ours.values.to_numpy(), expected.values.detach().numpy())
    assert ours.indices.dtype == minitorch.int64 and ours.values.dtype == x.dtype
    np.testing.assert_array_equal(minitorch.argsort(x, dim, descending).to_numpy(), expected.indices.numpy())
    if kind != "int":
        backward_both(backend, ours.values, expected.values, seed + 1)
        same(leaf.grad, their_leaf.grad)


def test_a_comparison_is_a_bool_mask_as_torch(backend):
    x = tensor([1.0, -2.0, 3.0], backend=backend)
    assert (x > 0).dtype == minitorch.bool and x[x > 0].tolist() == [1.0, 3.0]
    assert minitorch.where(x > 0, x, 0.0).tolist() == [1.0, 0.0, 3.0]
    with pytest.raises(TypeError, match=r"the index must be int64, got float64: convert ids with .long\(\)"):
        x[(x > 0).double()]


@pytest.mark.task("2.6")
@settings(max_examples=30)
@given(shapes, st.booleans(), st.integers(0, 2**16))
def test_comparison_methods_as_torch(backend, shape, broadcast, seed):
    "torch's `lt`, `gt`, `eq`, `le`, `ge`, `ne`: bool tensors of True / False (NaN unequal to all), broadcasting."
    values = planted(shape, seed, "float64")
    others = planted(shape[1:] if broadcast and len(shape) > 1 else shape, seed + 1, "float64")
    shared = min(values.size, others.size) // 2
    others.reshape(-1)[:shared] = values.reshape(-1)[:shared]   # equal pairs too
    x, y = tensor(values, backend=backend), tensor(others, backend=backend)
    for name in ("lt", "gt", "eq", "le", "ge", "ne"):
        expected = getattr(torch.tensor(values), name)(torch.tensor(others)).numpy()
        ours = getattr(x, name)(y)
        assert ours.dtype == minitorch.bool and expected.dtype == np.bool_
        np.testing.assert_array_equal(ours.to_numpy(), expected, err_msg=name)


def test_type_as_view_as_and_reshape_as_as_torch(backend):
    ids = tensor([[1, 2, 3], [4, 5, 6]], backend=backend, dtype=minitorch.int64)
    target = tensor(np.zeros((3, 2)), backend=backend, dtype=minitorch.float32)
    their_ids, their_target = torch.tensor([[1, 2, 3], [4, 5, 6]]), torch.zeros((3, 2))
    assert ids.type_as(target).dtype == minitorch.float32 and their_ids.type_as(their_target).dtype == torch.float32
    assert ids.view_as(target).tolist() == their_ids.view_as(their_target).tolist()
    assert ids.T.reshape_as(target).tolist() == their_ids.T.reshape_as(their_target).tolist()
    assert ids.T.view_as(target).stride() == their_ids.T.view_as(their_target).stride() == (1, 3)   # the same shape
    with pytest.raises(IndexingError, match="not compatible with input tensor's size"):
        ids.T.view_as(ids)


@st.composite
def view_steps(draw, shape: tuple[int, ...]) -> list:
    "Up to four views to take one after another, each written so that ours and torch's read the same."
    steps = []
    for _ in range(draw(st.integers(0, 4))):
        dims = len(shape)
        kind = draw(st.sampled_from(["permute", "slice", "index", "none", "expand", "view"] if dims > 1 else
                                    ["slice", "none", "expand", "view"]))
        if kind == "permute":
            order = tuple(draw(st.permutations(range(dims))))
            steps.append(("permute", order)); shape = tuple(shape[dim] for dim in order)
        elif kind == "slice":
            dim = draw(st.integers(0, dims - 1))
            start, step = draw(st.integers(0, shape[dim])), draw(st.integers(1, 3))
            key = (slice(None),) * dim + (slice(start, None, step),)
            steps.append(("key", key)); shape = shape[:dim] + (len(range(start, shape[dim], step)),) + shape[dim + 1:]
        elif kind == "index":
            dim = draw(st.integers(0, dims - 1))
            if shape[dim] == 0:
                continue
            steps.append(("key", (slice(None),) * dim + (draw(st.integers(0, shape[dim] - 1)),)))
            shape = shape[:dim] + shape[dim + 1:]
        elif kind == "none":
            dim = draw(st.integers(0, dims))
            steps.append(("key", (slice(None),) * dim + (None,))); shape = shape[:dim] + (1,) + shape[dim:]
        elif kind == "expand":
            sizes = tuple(draw(st.sampled_from([1, 3])) if size == 1 else size for size in shape)
            steps.append(("expand", sizes)); shape = sizes
        else:   # contiguous() then a view of another shape: a copy when needed, as in torch
            steps.append(("view", (-1,))); shape = (math.prod(shape),)
    return steps


@pytest.mark.task("2.7")
@settings(max_examples=60)
@given(st.lists(st.integers(0, 4), min_size=1, max_size=3).map(tuple).flatmap(
    lambda shape: st.tuples(st.just(shape), view_steps(shape))))
def test_the_layout_of_views_as_torch(backend, shape_and_steps):
    "The strides, offset and contiguity of a chain of views (torch's strides differ only where a dim has size 0)."
    shape, steps = shape_and_steps
    ours, theirs = tensor(np.zeros(shape), backend=backend), torch.zeros(shape, dtype=torch.float64)
    for kind, argument in steps:
        if kind == "key":
            ours, theirs = ours[argument], theirs[argument]
        elif kind == "view":
            ours, theirs = ours.contiguous().view(*argument), theirs.contiguous().view(*argument)
        else:
            ours, theirs = getattr(ours, kind)(*argument), getattr(theirs, kind)(*argument)
    assert ours.shape == tuple(theirs.shape) and ours.is_contiguous() == theirs.is_contiguous()
    if ours.size and 0 not in shape:   # torch counts a dim of size 0 as size 1 in strides: so then do offsets
        assert ours.storage_offset() == theirs.storage_offset()
        used = [dim for dim, size in enumerate(ours.shape) if size > 1]   # a dim of size 1 never uses its stride
        assert [ours.stride(dim) for dim in used] == [theirs.stride(dim) for dim in used]
        assert len(ours.stride()) == ours.dims
    if ours.is_contiguous():   # a contiguous view can be viewed as anything of its size, as torch's
        assert ours.view(-1).shape == tuple(theirs.view(-1).shape)


@pytest.mark.task("4.4")
@settings(max_examples=40)
@given(shapes, st.sampled_from(sorted(DTYPES)), st.booleans(), st.booleans(), st.booleans(), st.data(),
       st.integers(0, 2**16))
def test_logsumexp_as_torch(backend, shape, dtype, permuted, keepdim, special, data, seed):
    "torch's values (infinities and NaN included, scores of 1000 too) and, for finite inputs, its gradients."
    values = planted(shape, seed, dtype) if special else np.random.default_rng(seed).normal(size=shape) * 300.0
    leaf, their_leaf, x, theirs = twins(backend, values, dtype, permuted)
    dim = data.draw(st.integers(-x.dims, x.dims - 1))
    ours, expected = x.logsumexp(dim, keepdim=keepdim), torch.logsumexp(theirs, dim, keepdim=keepdim)
    assert ours.shape == (tuple(expected.shape) or (1,)) and ours.dtype == x.dtype
    tolerance = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(ours.to_numpy().ravel(), expected.detach().numpy().ravel(), rtol=tolerance, atol=tolerance)
    if np.isfinite(values).all():
        backward_both(backend, ours, expected, seed + 1)
        np.testing.assert_allclose(leaf.grad.to_numpy(), their_leaf.grad.numpy(), rtol=tolerance, atol=tolerance)


@pytest.mark.task("2.7")
def test_reductions_drop_their_dim_by_default_as_torch(backend):
    "Issue 46's silent difference: `x.sum(1) - y` is (3,) - (3,) here too, and no reduction keeps its dim unasked."
    x, y = np.arange(6.0).reshape(3, 2), np.array([1.0, 2.0, 3.0])
    ours = ((tensor(x, backend=backend).sum(1) - tensor(y, backend=backend)) ** 2).mean()
    assert ours.item() == ((torch.tensor(x).sum(1) - torch.tensor(y)) ** 2).mean().item() == 15.0
    kept = ((tensor(x, backend=backend).sum(1, keepdim=True) - tensor(y, backend=backend)) ** 2).mean()
    assert abs(kept.item() - 183 / 9) < 1e-12   # the classic default: (3, 1) - (3,) is a (3, 3) table, no error
    values = tensor(x, backend=backend)
    for name, reduced in {"sum": values.sum(1), "mean": values.mean(1), "var": values.var(1), "std": values.std(1),
                          "all": values.all(1), "any": values.any(1), "max": minitorch.max(values, 1),
                          "argmax": minitorch.argmax(values, 1), "method max": values.max(1).values,
                          "method argmax": values.argmax(1), "logsumexp": values.logsumexp(1)}.items():
        assert reduced.shape == (3,), name
    assert values.sum(1, keepdim=True).shape == values.sum(1, keepdims=True).shape == (3, 1)   # NumPy's spelling too
    assert values.mean(keepdim=True).shape == (1, 1) and values.sum().shape == (1,)   # everything: (1,), torch's ()


def test_keepdim_is_a_bool_given_once(backend):
    "Positional mistakes that PyTorch refuses are refused here, rather than read as keepdim."
    values = tensor(np.ones((2, 3)), backend=backend)
    with pytest.raises(TypeError, match=r"keepdim must be True or False, got 0: several dims are one tuple"):
        values.sum(1, 0)
    with pytest.raises(TypeError, match="got both keepdim and keepdims"):
        values.mean(1, keepdim=True, keepdims=True)
    with pytest.raises(TypeError):
        values.var(1, True)   # torch: unbiased=True; here correction and keepdim are keywords
    assert values.std(1, correction=0, keepdim=True).shape == (2, 1)
