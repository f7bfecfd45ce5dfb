"""Views with an offset: basic indexing (ints, slices, None, ...) shares storage, matches NumPy, and sends gradients
back to the right places (as PyTorch does) on every backend; kernels, `out=`, conv, pooling and Adam read views."""
import math

import numpy as np
import pytest
from backends import BACKENDS
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import minitorch
from minitorch import Adam, IndexingError, Parameter, TensorData, conv2d, maxpool2d, tensor, zeros
from minitorch.adam import AdamMoments
from minitorch.tensor_data import index_view

pytestmark = pytest.mark.parametrize("backend", BACKENDS)

Key = tuple


@st.composite
def dim_entries(draw, size: int) -> int | slice:
    "An int index (negatives included) or a slice with a positive (or no) step for a dim of `size`."
    if size and draw(st.booleans()):  # a dim of size 0 takes only slices
        return draw(st.integers(-size, size - 1))
    bound = st.none() | st.integers(-size - 1, size + 1)
    return slice(draw(bound), draw(bound), draw(st.none() | st.integers(1, 3)))


@st.composite
def basic_keys(draw, shape: tuple[int, ...]) -> Key:
    "A basic index for `shape`: entries for some leading (and, around `...`, trailing) dims, and a few `None`s."
    named = draw(st.integers(0, len(shape)))
    ellipsis = draw(st.booleans())
    front = draw(st.integers(0, named)) if ellipsis else named
    entries = [draw(dim_entries(size)) for size in shape[:front]]
    if ellipsis:
        entries += [Ellipsis] + [draw(dim_entries(size)) for size in shape[len(shape) - (named - front):]]
    for _ in range(draw(st.integers(0, 2))):
        entries.insert(draw(st.integers(0, len(entries))), None)
    return tuple(entries)


@st.composite
def arrays_and_keys(draw, max_dims: int = 3, max_size: int = 4) -> tuple[np.ndarray, Key]:
    "Random values of a random shape and a basic index into them (it may pick nothing in a dim: an empty view)."
    shape = tuple(draw(st.lists(st.integers(1, max_size), min_size=1, max_size=max_dims)))
    key = draw(basic_keys(shape))
    values = np.random.default_rng(draw(st.integers(0, 2**16))).normal(size=shape)
    return values, key


def picked(a, key: Key):
    "`a[key]` as NumPy values (a view tensor's values, or a float for one element)."
    result = a[key]
    return result if isinstance(result, float) else result.to_numpy()


@given(arrays_and_keys())
def test_basic_indexing_matches_numpy_and_shares_storage(backend, case):
    values, key = case
    t = tensor(values, backend=backend)
    expected = values[key]
    result = t[key]
    if expected.shape == ():
        assert isinstance(result, float) and result == float(expected)
        return
    assert result.shape == expected.shape
    np.testing.assert_array_equal(result.to_numpy(), expected)
    assert result._tensor._storage is t._tensor._storage


@given(arrays_and_keys(), st.data())
def test_views_of_views_match_numpy(backend, case, data):
    values, key = case
    first = tensor(values, backend=backend)[key]
    assume(not isinstance(first, float))
    second_key = data.draw(basic_keys(first.shape))
    expected = values[key][second_key]
    result = first[second_key]
    np.testing.assert_array_equal(np.asarray(picked(first, second_key)), expected)
    if not isinstance(result, float):
        assert result._tensor._storage is first._tensor._storage


@given(arrays_and_keys())
@settings(max_examples=40)
def test_operations_on_views_match_numpy(backend, case):
    values, key = case
    view = tensor(values, backend=backend)[key]
    assume(not isinstance(view, float))
    expected = values[key]
    np.testing.assert_allclose((view * 2.0 + view.exp()).to_numpy(), expected * 2.0 + np.exp(expected))
    np.testing.assert_allclose((view + tensor(expected, backend=backend)).to_numpy(), 2 * expected)
    for dim in range(view.dims):
        np.testing.assert_allclose(view.sum(dim, keepdim=True).to_numpy(), expected.sum(axis=dim, keepdims=True), atol=1e-12)
    order = tuple(reversed(range(view.dims)))
    np.testing.assert_array_equal(view.permute(*order).to_numpy(), expected.transpose(order))
    copy = view.contiguous()
    assert copy._tensor.is_contiguous()
    np.testing.assert_array_equal(copy.view(view.size).to_numpy(), expected.ravel())


def test_matrix_multiply_with_sliced_operands(backend):
    rng = np.random.default_rng(0)
    a_values, b_values = rng.normal(size=(5, 6)), rng.normal(size=(2, 4, 7))
    a, b = tensor(a_values, backend=backend), tensor(b_values, backend=backend)
    np.testing.assert_allclose((a[1:4, ::2] @ b[1, 1:, 2:]).to_numpy(), a_values[1:4, ::2] @ b_values[1, 1:, 2:])
    np.testing.assert_allclose((b[:, :, 1::3].permute(0, 2, 1) @ a[None, :4, 2:]).to_numpy(),
                               b_values[:, :, 1::3].transpose(0, 2, 1) @ a_values[None, :4, 2:])


def test_a_slice_that_picks_nothing_is_an_empty_view(backend):
    t = tensor(np.arange(12.0).reshape(3, 4), requires_grad=True, backend=backend)
    assert t[2:2].shape == (0, 4) and t[:, 4:].shape == (3, 0) and t[3:, 1:].to_numpy().shape == (0, 3)
    assert t[:, 4:]._tensor._storage is t._tensor._storage   # it may start at the storage's end
    (t[1:1] * 2.0).sum().backward()
    np.testing.assert_array_equal(t.grad.to_numpy(), np.zeros((3, 4)))


def test_map_writes_through_out_into_a_slice(backend):
    target = zeros((3, 4), backend=backend)
    source = tensor([[1.0, 2.0], [3.0, 4.0]], backend=backend)
    backend.id_map(source, target[1:, ::2])
    np.testing.assert_array_equal(target.to_numpy(), [[0, 0, 0, 0], [1, 0, 2, 0], [3, 0, 4, 0]])
    backend.neg_map(tensor([5.0, 6.0, 7.0, 8.0], backend=backend), target[0])
    np.testing.assert_array_equal(target.to_numpy()[0], [-5, -6, -7, -8])


def test_view_of_a_slice_needs_contiguous_elements(backend):
    t = tensor(np.arange(24.0).reshape(2, 3, 4), backend=backend)
    row = t[1]
    assert row._tensor.is_contiguous() and row._tensor.offset == 12
    np.testing.assert_array_equal(row.view(4, 3).to_numpy(), np.arange(12.0, 24.0).reshape(4, 3))
    assert t[..., ::2].view(12).stride() == (2,)   # every other element: evenly spaced, so one dim, as in torch
    with pytest.raises(IndexingError, match=r"view size \(12,\) is not compatible with input tensor's size "
                                            r"\(2, 3, 2\) and stride \(12, 4, 1\)"):
        t[..., :2].view(12)
    assert t[..., :2].view(6, 2).stride() == (4, 1)   # the first two dims merge: a view, as in torch
    np.testing.assert_array_equal(t[..., :2].contiguous().view(12).to_numpy(), np.arange(24.0).reshape(6, 4)[:, :2].ravel())


@given(arrays_and_keys())
@settings(max_examples=40)
def test_gradients_through_views_match_pytorch(backend, case):
    torch = pytest.importorskip("torch")
    values, key = case
    assume(values[key].shape != ())
    weights = np.random.default_rng(1).normal(size=values[key].shape)
    x = tensor(values, backend=backend, requires_grad=True)
    (x[key] * tensor(weights, backend=backend)).backward(tensor(np.ones(weights.shape), backend=backend))
    reference = torch.tensor(values, requires_grad=True)
    (reference[key] * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(x.grad.to_numpy(), reference.grad.numpy())


def test_gradients_of_views_of_views_and_repeated_views_add_up(backend):
    torch = pytest.importorskip("torch")
    values = np.random.default_rng(2).normal(size=(3, 4, 5))
    x = tensor(values, backend=backend, requires_grad=True)
    out = (x[1:, ::2][..., 1:4].permute(2, 0, 1) * 3.0).sum() + x[-1, None, :, 0].exp().sum() + (x[0] @ x[1].permute(1, 0)[:, 1:3]).sum()
    out.backward()
    reference = torch.tensor(values, requires_grad=True)
    expected = ((reference[1:, ::2][..., 1:4].permute(2, 0, 1) * 3.0).sum() + reference[-1, None, :, 0].exp().sum()
                + (reference[0] @ reference[1].permute(1, 0)[:, 1:3]).sum())
    expected.backward()
    np.testing.assert_allclose(out.item(), expected.item())
    np.testing.assert_allclose(x.grad.to_numpy(), reference.grad.numpy())


@st.composite
def reshaping_cases(draw):
    "Values of a shape with some size-1 (and maybe size-0) dims, a dim order for a permuted view, and the views."
    shape = tuple(draw(st.lists(st.sampled_from([0, 1, 1, 2, 3]), min_size=1, max_size=4)))
    order = draw(st.permutations(range(len(shape))))
    dims = len(shape)
    unsqueeze = draw(st.integers(-dims - 1, dims))
    squeeze = draw(st.none() | st.integers(-dims, dims - 1))
    start = draw(st.integers(-dims, dims - 1))
    end = draw(st.integers(start % dims, dims - 1))
    return np.random.default_rng(draw(st.integers(0, 2**16))).normal(size=shape), order, unsqueeze, squeeze, start, end


@given(reshaping_cases())
@settings(max_examples=40)
def test_unsqueeze_squeeze_flatten_match_pytorch(backend, case):
    "Shapes, values and gradients as torch's, on permuted (non-contiguous) inputs; squeeze keeps one dim at least."
    torch = pytest.importorskip("torch")
    values, order, unsqueeze, squeeze, start, end = case
    x = tensor(values, backend=backend, requires_grad=True)
    reference = torch.tensor(values, requires_grad=True)
    ours_in, their_in = x.permute(*order), reference.permute(*order)
    views = [(ours_in.unsqueeze(unsqueeze), their_in.unsqueeze(unsqueeze)),
             (ours_in.squeeze(squeeze), their_in.squeeze() if squeeze is None else their_in.squeeze(squeeze)),
             (ours_in.flatten(start, end), their_in.flatten(start, end))]
    for number, (ours, theirs) in enumerate(views):
        expected_shape = tuple(theirs.shape) or (1,)   # minitorch has no 0-dim tensors
        assert ours.shape == expected_shape
        np.testing.assert_array_equal(ours.to_numpy(), theirs.detach().numpy().reshape(expected_shape))
        weights = np.random.default_rng(number).normal(size=expected_shape)
        (ours * tensor(weights, backend=backend)).sum().backward()
        (theirs * torch.tensor(weights.reshape(tuple(theirs.shape)))).sum().backward()
    np.testing.assert_allclose(x.grad.to_numpy(), reference.grad.numpy())
    assert ours_in.unsqueeze(unsqueeze)._tensor._storage is x._tensor._storage  # a view, even of a permuted tensor
    assert ours_in.squeeze(squeeze)._tensor._storage is x._tensor._storage


def test_reshaping_errors_name_the_dims(backend):
    t = tensor(np.zeros((2, 3)), backend=backend)
    with pytest.raises(IndexingError, match="unsqueeze: dim 3 is out of range"):
        t.unsqueeze(3)
    with pytest.raises(IndexingError, match="flatten: start_dim 1 comes after end_dim 0"):
        t.flatten(1, 0)
    with pytest.raises(IndexingError, match="dim 2 is out of range"):
        t.squeeze(2)


@given(st.lists(st.integers(0, 3), min_size=1, max_size=2), st.booleans(), st.integers(0, 2**16))
@settings(max_examples=25)
def test_t_numel_dim_and_tolist_as_torch(backend, shape, permuted, seed):
    "`t()`, `.T`, `numel()`, `dim()` and `tolist()` of 1-D and 2-D tensors, permuted or not, as torch's."
    torch = pytest.importorskip("torch")
    values = np.random.default_rng(seed).normal(size=shape)
    x, reference = tensor(values, backend=backend, requires_grad=True), torch.tensor(values, requires_grad=True)
    ours_in, their_in = (x.permute(1, 0), reference.permute(1, 0)) if permuted and len(shape) == 2 else (x, reference)
    assert (ours_in.numel(), ours_in.dim(), ours_in.tolist()) == (their_in.numel(), their_in.dim(), their_in.tolist())
    for ours, theirs in [(ours_in.t(), their_in.t()), (ours_in.T, their_in.t())]:   # torch warns on .T of 1-D
        assert ours.shape == tuple(theirs.shape) and ours.tolist() == theirs.tolist()
        assert ours._tensor._storage is x._tensor._storage   # a view
        weights = np.random.default_rng(seed + 1).normal(size=ours.shape)
        (ours * tensor(weights, backend=backend)).sum().backward()
        (theirs * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(x.grad.to_numpy(), reference.grad.numpy())
    ids = tensor(values.round(), backend=backend, dtype=minitorch.int64)
    assert ids.tolist() == torch.tensor(values.round(), dtype=torch.int64).tolist()
    def flat(nested: list) -> list:
        return [v for row in nested for v in row] if len(shape) == 2 else nested
    assert all(type(v) is int for v in flat(ids.tolist())) and all(type(v) is float for v in flat(x.tolist()))


def test_t_refuses_more_than_two_dims(backend):
    t = tensor(np.zeros((2, 3, 4)), backend=backend)
    for transpose in (lambda: t.t(), lambda: t.T):
        with pytest.raises(IndexingError, match=r"at most 2 dims, this one has shape \(2, 3, 4\): name the dims"):
            transpose()


def test_one_int_per_dim_reads_a_float_as_in_classic_minitorch(backend):
    t = tensor(np.arange(6.0).reshape(2, 3), backend=backend)
    assert t[1, 2] == 5.0 and isinstance(t[1, 2], float) and t[(0, 1)] == 1.0
    assert t[-1, -3] == 3.0 and t[np.int64(1), 0] == 3.0 and t[..., 1, 2] == 5.0
    assert t[1][2] == 5.0 and isinstance(t[1][2], float)
    assert [row.to_numpy().tolist() for row in t] == [[0, 1, 2], [3, 4, 5]] and list(t[0]) == [0.0, 1.0, 2.0]
    t[1, 2] = 50.0
    assert t[1][-1] == 50.0


def test_bad_indices_name_what_was_wrong(backend):
    t = tensor(np.zeros((2, 3)), backend=backend)
    with pytest.raises(IndexingError, match=r"index 3 is out of range for dim 1 of shape \(2, 3\) \(size 3\)"):
        t[:, 3]
    with pytest.raises(IndexingError, match=r"index -3 is out of range for dim 0 of shape \(2, 3\) \(size 2\)"):
        t[-3]
    with pytest.raises(IndexingError, match=r"index \(0, 3\) is out of range for shape \(2, 3\)"):
        t[0, 3]
    with pytest.raises(ValueError, match=r"slice\(None, None, 0\) of dim 1 .*: slice step cannot be zero"):
        t[:, ::0]
    with pytest.raises(ValueError, match=r"has step -1: the step must be greater than zero"):
        t[::-1]
    with pytest.raises(IndexingError, match=r"too many indices for shape \(2, 3\): 3 given, it has 2 dims"):
        t[0, :, 1]
    with pytest.raises(IndexingError, match=r"2 ellipses"):
        t[..., 0, ...]
    for bad, kind in [(1.5, "float"), ("a", "str"), ({0, 1}, "set"), (True, "bool")]:   # a list is ids: test_gather
        with pytest.raises(TypeError, match=rf"index entry .* of type {kind} is not supported: index with ints"):
            t[bad]
    with pytest.raises(TypeError, match=r"t\[ids\]: the index must be int64, got float64"):  # int64 ids: test_gather
        t[tensor([0.0], backend=backend)]
    with pytest.raises(TypeError, match=r"slice\(0.5, None, None\) of dim 0 .* is not a valid index"):
        t[0.5:]


def test_layouts_with_an_offset_are_checked(backend):
    with pytest.raises(IndexingError, match=r"offset -1 must be a non-negative integer"):
        TensorData(np.zeros(6), (2,), offset=-1)
    with pytest.raises(IndexingError, match=r"shape \(2, 2\) with strides \(2, 1\) from offset 3 reaches position 6, "
                                            r"past the storage of size 6"):
        TensorData(np.zeros(6), (2, 2), offset=3)
    data = TensorData(np.arange(6.0), (2, 2), (3, 1), offset=1)
    assert data.get((1, 1)) == 5.0 and data.index((1, 0)) == 4 and data.tuple()[0].tolist() == [1, 2, 3, 4, 5]
    assert data.permute(1, 0).offset == 1 and index_view(data, (1,)).offset == 4
    assert "[[1.0000, 2.0000]" in data.to_string()


def test_printing_converting_and_detaching_a_slice(backend):
    t = tensor(np.arange(12.0).reshape(3, 4), backend=backend)
    corner = t[1:, 2:]
    assert "[[ 6.0000,  7.0000],\n" in repr(corner) and "shape=(2, 2)" in repr(corner)
    np.testing.assert_array_equal(corner.to_numpy(), [[6, 7], [10, 11]])
    np.testing.assert_array_equal(t[2].detach().to_numpy(), [8, 9, 10, 11])


def test_convolution_and_pooling_read_sliced_inputs(backend):
    rng = np.random.default_rng(3)
    images, weight = rng.normal(size=(3, 2, 7, 8)), rng.normal(size=(4, 2, 3, 3))
    x = tensor(images, backend=backend, requires_grad=True)
    sliced = x[1:, :, 1:, ::2]  # an offset and non-contiguous strides
    copy = tensor(images[1:, :, 1:, ::2], backend=backend)
    w = tensor(weight, backend=backend)
    np.testing.assert_allclose(conv2d(sliced, w, padding=1).to_numpy(), conv2d(copy, w, padding=1).to_numpy())
    np.testing.assert_allclose(maxpool2d(sliced, 2).to_numpy(), maxpool2d(copy, 2).to_numpy())
    conv2d(sliced, w).sum().backward()
    assert x.grad.shape == x.shape and np.all(x.grad.to_numpy()[0] == 0) and np.all(x.grad.to_numpy()[:, :, 0] == 0)


def test_adam_steps_a_sliced_gradient_as_its_copy(backend):
    values = np.random.default_rng(4).normal(size=(3, 4))
    sliced, copy = tensor(values, backend=backend)[1:, 1::2], tensor(values[1:, 1::2], backend=backend)
    optimizer = Adam([Parameter(zeros((2, 2), backend=backend))], lr=0.1)
    steps = [optimizer.adam_step(AdamMoments(zeros((2, 2), backend=backend), zeros((2, 2), backend=backend)), gradient)
             for gradient in (sliced, copy)]
    np.testing.assert_allclose(steps[0].to_numpy(), steps[1].to_numpy())


def test_checkpoint_saves_a_slice_as_its_values(backend, tmp_path):
    t = tensor(np.arange(12.0).reshape(3, 4), backend=backend)
    minitorch.save_checkpoint({"row": t[2, 1:]}, tmp_path / "state.npz")
    with np.load(tmp_path / "state.npz") as saved:
        np.testing.assert_array_equal(saved["row"], [9, 10, 11])


def prime_factors(size: int) -> list[int]:
    "The prime factors of `size`, smallest first (none for 1)."
    factors, divisor = [], 2
    while size > 1:
        while size % divisor:
            divisor += 1
        factors.append(divisor)
        size //= divisor
    return factors


@st.composite
def view_chains(draw) -> tuple[tuple[int, ...], list, tuple[int, ...]]:
    "A shape, up to four steps (permute, transpose, split, chunk, narrow, a slice) to take one after another, and a shape to view the result as."
    first_shape = shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=4)))
    steps = []
    for _ in range(draw(st.integers(0, 4))):
        dims, dim = len(shape), draw(st.integers(0, len(shape) - 1))
        kind = draw(st.sampled_from(["permute", "transpose", "split", "chunk", "narrow", "slice"]))
        if kind == "permute":
            order = tuple(draw(st.permutations(range(dims))))
            steps.append((kind, order)); shape = tuple(shape[one] for one in order)
            continue
        if kind == "transpose":
            other = draw(st.integers(0, dims - 1))
            steps.append((kind, (dim, other)))
            shape = tuple(shape[other] if one == dim else shape[dim] if one == other else size
                          for one, size in enumerate(shape))
            continue
        if shape[dim] == 0:
            continue
        if kind in ("split", "chunk"):
            parts = draw(st.integers(1, shape[dim]))
            pieces = [len(range(start, min(start + parts, shape[dim]))) for start in range(0, shape[dim], parts)] \
                if kind == "split" else [len(range(start, min(start + -(-shape[dim] // parts), shape[dim])))
                                         for start in range(0, shape[dim], -(-shape[dim] // parts))]
            piece = draw(st.integers(0, len(pieces) - 1))
            steps.append((kind, (parts, dim, piece))); length = pieces[piece]
        elif kind == "narrow":
            start = draw(st.integers(0, shape[dim]))
            length = draw(st.integers(0, shape[dim] - start))
            steps.append((kind, (dim, start, length)))
        else:
            start, step = draw(st.integers(0, shape[dim] - 1)), draw(st.integers(1, 3))
            steps.append((kind, (slice(None),) * dim + (slice(start, None, step),)))
            length = len(range(start, shape[dim], step))
        shape = shape[:dim] + (length,) + shape[dim + 1:]
    size = math.prod(shape)
    if size == 0:
        new_shape = tuple(draw(st.lists(st.integers(0, 3), min_size=1, max_size=4).filter(lambda sizes: 0 in sizes)))
        return first_shape, steps, draw(st.sampled_from([new_shape, shape]))
    # the factors in the order of the dims, regrouped at random cuts (often a view), or shuffled (rarely one)
    factors = [factor for dim_size in shape for factor in prime_factors(dim_size)]
    if draw(st.booleans()):
        factors = draw(st.permutations(factors))
    cuts = sorted(draw(st.sets(st.integers(1, max(len(factors) - 1, 1)), max_size=3)))
    new_shape = [math.prod(factors[start:end]) for start, end in zip([0, *cuts], [*cuts, len(factors)])]
    for _ in range(draw(st.integers(0, 2))):
        new_shape.insert(draw(st.integers(0, len(new_shape))), 1)
    if draw(st.booleans()):
        new_shape[draw(st.integers(0, len(new_shape) - 1))] = -1
    return first_shape, steps, tuple(new_shape)


def apply_view_step(value, kind: str, argument):
    "One step of `view_chains` on a minitorch or a torch tensor."
    if kind in ("split", "chunk"):
        parts, dim, piece = argument
        return getattr(value, kind)(parts, dim)[piece]
    if kind == "slice":
        return value[argument]
    return getattr(value, kind)(*argument)


@settings(max_examples=80)
@given(view_chains(), st.integers(0, 2**16))
def test_view_after_views_succeeds_where_torch_does_with_its_strides(backend, chain, seed):
    "`view` of permuted, transposed, split, chunked, narrowed and sliced tensors: torch's verdict, strides, values, gradients."
    torch = pytest.importorskip("torch")
    shape, steps, new_shape = chain
    values = np.random.default_rng(seed).normal(size=shape)
    x, reference = tensor(values, backend=backend, requires_grad=True), torch.tensor(values, requires_grad=True)
    ours, theirs = x, reference
    for kind, argument in steps:
        ours, theirs = apply_view_step(ours, kind, argument), apply_view_step(theirs, kind, argument)
    assert ours.shape == tuple(theirs.shape) and ours.stride() == theirs.stride()
    try:
        expected = theirs.view(new_shape)
    except RuntimeError as error:
        assert "view size is not compatible" in str(error) or "is invalid for input" in str(error)
        with pytest.raises(IndexingError, match="not compatible with input tensor's size|cannot view"):
            ours.view(*new_shape)
        reshaped = ours.reshape(*new_shape)   # a copy, then
        assert reshaped.shape == tuple(theirs.reshape(new_shape).shape)
        assert ours.size == 0 or reshaped._tensor._storage is not x._tensor._storage
        return
    viewed = ours.view(*new_shape)
    assert viewed.shape == tuple(expected.shape) and viewed.stride() == expected.stride()
    assert viewed._tensor._storage is x._tensor._storage and viewed.storage_offset() == expected.storage_offset()
    np.testing.assert_array_equal(viewed.to_numpy(), expected.detach().numpy())
    assert ours.reshape(*new_shape).stride() == theirs.reshape(new_shape).stride()   # a view too
    weights = np.random.default_rng(seed + 1).normal(size=viewed.shape)
    (viewed * tensor(weights, backend=backend)).sum().backward()
    (expected * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(x.grad.to_numpy(), reference.grad.numpy())


def test_heads_of_a_split_along_the_last_dim_are_views(backend):
    "nanoGPT's `q.view(B, T, nh, hs)` of a piece that `split` cut along the last dim: a view, as in torch."
    qkv = tensor(np.arange(2 * 3 * 12.0).reshape(2, 3, 12), backend=backend)
    query, key, value = qkv.split(4, dim=2)
    heads = key.view(2, 3, 2, 2).transpose(1, 2)
    assert heads._tensor._storage is qkv._tensor._storage and heads.stride() == (36, 2, 12, 1)
    np.testing.assert_array_equal(heads.to_numpy(), np.arange(72.0).reshape(2, 3, 12)[..., 4:8]
                                  .reshape(2, 3, 2, 2).transpose(0, 2, 1, 3))
    with pytest.raises(IndexingError, match=r"view size \(2, 12\) is not compatible with input tensor's size "
                                            r"\(2, 3, 4\) and stride \(36, 12, 1\).*use .reshape\(...\) instead"):
        value.view(2, 12)
    np.testing.assert_array_equal(value.reshape(2, 12).to_numpy(), np.arange(72.0).reshape(2, 3, 12)[..., 8:].reshape(2, 12))
