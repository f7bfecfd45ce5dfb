"""PyTorch's everyday names: `sqrt`, `abs`, `clamp` and real powers (values and gradients, NaN, inf and the edges
at 0 included, float32 and float64, permuted inputs), `expand`, in-place updates, `var`, `std` and `clone`, and the
constructors `full`, `zeros_like`, `ones_like`, `arange`, `linspace`, `randn`."""
import math

import numpy as np
import pytest
from backends import BACKENDS
from hypothesis import given, settings
from hypothesis import strategies as st

import minitorch
from minitorch import IndexingError, arange, full, linspace, ones_like, randint, randn, tensor, zeros_like

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.parametrize("backend", BACKENDS)
DTYPES = {"float64": (minitorch.float64, torch.float64), "float32": (minitorch.float32, torch.float32)}
SPECIAL = [math.nan, math.inf, -math.inf, 0.0, -0.0]
shapes = st.lists(st.integers(0, 4), min_size=1, max_size=3)


def twins(backend, values: np.ndarray, dtype: str, permuted: bool):
    "A minitorch leaf and its torch twin of `dtype`, both seen through the reversing permutation if `permuted`."
    ours = tensor(values, backend=backend, dtype=DTYPES[dtype][0], requires_grad=True)
    theirs = torch.tensor(values, dtype=DTYPES[dtype][1], requires_grad=True)
    if not permuted:
        return ours, theirs, ours, theirs
    order = tuple(reversed(range(values.ndim)))
    return ours, theirs, ours.permute(*order), theirs.permute(*order)


def planted(shape: list[int], seed: int) -> np.ndarray:
    "Normal values of `shape` scaled by 3, with NaN, infinities and signed zeros planted at random places."
    rng = np.random.default_rng(seed)
    values = rng.normal(size=shape) * 3.0
    flat = values.reshape(-1)
    for special in SPECIAL:
        if flat.size and rng.random() < 0.6:
            flat[rng.integers(flat.size)] = special
    return values


def same(ours, theirs):
    "Assert equal values (NaN where NaN, signs of infinities) and shapes, as torch computes them in that dtype."
    expected = theirs.detach().numpy()
    assert ours.shape == (tuple(expected.shape) or (1,))
    rtol = 1e-6 if expected.dtype == np.float32 else 1e-12
    np.testing.assert_allclose(ours.to_numpy(), expected.reshape(ours.shape), rtol=rtol, atol=0.0)


@settings(max_examples=30)
@given(shapes, st.sampled_from(sorted(DTYPES)), st.booleans(), st.sampled_from(["sqrt", "abs"]), st.integers(0, 2**16))
@pytest.mark.task("2.7")
def test_sqrt_and_abs_as_torch(backend, shape, dtype, permuted, name, seed):
    leaf, their_leaf, x, theirs = twins(backend, planted(shape, seed), dtype, permuted)
    ours_out, their_out = getattr(x, name)(), getattr(theirs, name)()
    same(ours_out, their_out)
    assert ours_out.dtype == leaf.dtype
    weights = np.random.default_rng(seed + 1).normal(size=ours_out.shape)
    (ours_out * tensor(weights, backend=backend, dtype=leaf.dtype)).sum().backward()
    (their_out * torch.tensor(weights, dtype=DTYPES[dtype][1])).sum().backward()
    same(leaf.grad, their_leaf.grad)


@settings(max_examples=30)
@given(st.data(), shapes, st.sampled_from(sorted(DTYPES)), st.booleans(), st.booleans(), st.integers(0, 2**16))
def test_reductions_over_a_tuple_of_dims_as_torch(backend, data, shape, dtype, permuted, keepdim, seed):
    "`sum`, `mean`, `var` and `std` over several dims, as `x.mean((0, 2))`: values, shapes and gradients."
    dims = data.draw(st.lists(st.integers(0, len(shape) - 1), min_size=1, max_size=len(shape), unique=True))
    dims = tuple(dim - len(shape) if data.draw(st.booleans()) else dim for dim in dims)   # negative ones too
    tolerance = {"rtol": 1e-5, "atol": 1e-5} if dtype == "float32" else {"rtol": 1e-10, "atol": 1e-12}
    for name in ("sum", "mean", "var", "std"):
        leaf, their_leaf, x, theirs = twins(backend, np.random.default_rng(seed).normal(size=shape), dtype, permuted)
        ours_out, their_out = getattr(x, name)(dims, keepdim=keepdim), getattr(theirs, name)(dims, keepdim=keepdim)
        assert ours_out.shape == (tuple(their_out.shape) or (1,)) and ours_out.dtype == leaf.dtype, (name, dims)
        np.testing.assert_allclose(ours_out.to_numpy().ravel(), their_out.detach().numpy().ravel(), **tolerance)
        weights = np.random.default_rng(seed + 1).normal(size=ours_out.shape)
        (ours_out * tensor(weights, backend=backend, dtype=leaf.dtype)).sum().backward()
        (their_out * torch.tensor(weights, dtype=DTYPES[dtype][1]).reshape(their_out.shape)).sum().backward()
        np.testing.assert_allclose(leaf.grad.to_numpy(), their_leaf.grad.numpy(), **tolerance)


@settings(max_examples=30)
@given(st.data(), shapes, st.sampled_from(sorted(DTYPES)), st.booleans(), st.integers(0, 2**16))
def test_all_and_any_as_torch(backend, data, shape, dtype, keepdim, seed):
    "1.0 / 0.0 where torch's `all` / `any` give True / False, over everything, one dim or several; NaN counts as non-zero."
    values = planted(shape, seed) * (np.random.default_rng(seed).random(shape) < 0.5)   # many zeros too
    x, theirs = tensor(values, backend=backend, dtype=DTYPES[dtype][0]), torch.tensor(values, dtype=DTYPES[dtype][1])
    dims = data.draw(st.none() | st.lists(st.integers(0, len(shape) - 1), min_size=1, max_size=len(shape), unique=True))
    for name in ("all", "any"):
        ours = getattr(x, name)() if dims is None else getattr(x, name)(tuple(dims), keepdim=keepdim)
        expected = getattr(theirs, name)() if dims is None else getattr(theirs, name)(tuple(dims), keepdim=keepdim)
        assert ours.shape == (tuple(expected.shape) or (1,)), (name, dims)
        np.testing.assert_array_equal(ours.to_numpy().ravel(), expected.numpy().ravel().astype(float))


def test_a_tuple_of_dims_with_a_repeat_or_none_is_refused(backend):
    x = tensor(np.ones((2, 3)), backend=backend)
    for dims in ((0, -2), (), [1, 1]):
        with pytest.raises(IndexingError, match=r"must name at least one dim, each once \(tensor of shape \(2, 3\)\)"):
            x.sum(dims)
    with pytest.raises(IndexingError, match=r"dim 2 is out of range for a tensor of shape \(2, 3\)"):
        x.mean((0, 2))


@pytest.mark.task("2.6")
def test_sqrt_and_abs_of_int_tensors_and_python_abs(backend):
    ids = tensor([-9, 0, 4], backend=backend, dtype=minitorch.int64)
    assert abs(ids).tolist() == [9, 0, 4] and abs(ids).dtype == minitorch.int64
    roots = ids.abs().sqrt()
    assert roots.dtype == minitorch.float64 and roots.tolist() == [3.0, 0.0, 2.0]
    assert np.isnan(ids.sqrt().to_numpy()[0])


bounds = st.none() | st.floats(-4, 4, allow_nan=False)


@settings(max_examples=30)
@given(shapes, st.sampled_from(sorted(DTYPES)), st.booleans(), bounds, bounds, st.integers(0, 2**16))
def test_clamp_as_torch(backend, shape, dtype, permuted, low, high, seed):
    if low is None and high is None:
        low = -1.0
    leaf, their_leaf, x, theirs = twins(backend, planted(shape, seed), dtype, permuted)
    ours_out, their_out = x.clamp(low, high), theirs.clamp(low, high)
    same(ours_out, their_out)
    weights = np.random.default_rng(seed + 1).normal(size=ours_out.shape)
    (ours_out * tensor(weights, backend=backend, dtype=leaf.dtype)).sum().backward()
    (their_out * torch.tensor(weights, dtype=DTYPES[dtype][1])).sum().backward()
    same(leaf.grad, their_leaf.grad)


def test_clamp_of_int_tensors_and_bad_bounds(backend):
    counts = tensor([-5, 0, 7], backend=backend, dtype=minitorch.int64)
    assert counts.clamp(0, 3).tolist() == [0, 0, 3] and counts.clamp(0, 3).dtype == minitorch.int64
    assert counts.clamp(max=0.5).tolist() == torch.tensor([-5, 0, 7]).clamp(max=0.5).tolist()
    with pytest.raises(ValueError, match="clamp needs min, max or both"):
        counts.clamp()
    with pytest.raises(TypeError, match="clamp's max must be a number"):
        counts.clamp(0, math.nan)
    with pytest.raises(TypeError, match="clamp's min must be a number"):
        counts.clamp(tensor([1.0], backend=backend))


@settings(max_examples=40)
@given(st.integers(-20, 20), st.integers(-20, 20), st.integers(-7, 7).filter(bool), st.booleans())
@pytest.mark.task("2.1")
def test_arange_as_torch(backend, start, end, step, fractional):
    if fractional:
        start, end, step = start / 4, end / 3, step / 5
    if (end - start) * step < 0:
        with pytest.raises(ValueError, match="goes the wrong way"):
            arange(start, end, step, backend=backend)
        return
    ours = arange(start, end, step, backend=backend)
    theirs = torch.arange(start, end, step, dtype=torch.float64 if fractional else torch.int64)   # ours: float64
    assert ours.dtype == (minitorch.float64 if fractional else minitorch.int64)
    assert ours.shape == tuple(theirs.shape)
    np.testing.assert_allclose(ours.to_numpy(), theirs.double().numpy(), rtol=1e-12, atol=1e-12)
    assert arange(abs(end), backend=backend).tolist() == torch.arange(abs(end)).tolist()


@settings(max_examples=40)
@given(st.floats(-1e3, 1e3), st.floats(-1e3, 1e3), st.integers(0, 50), st.sampled_from(sorted(DTYPES)))
@pytest.mark.task("2.1")
def test_linspace_as_torch(backend, start, end, steps, dtype):
    ours = linspace(start, end, steps, backend=backend, dtype=DTYPES[dtype][0])
    theirs = torch.linspace(start, end, steps, dtype=torch.float64)
    assert ours.shape == tuple(theirs.shape) and ours.dtype == DTYPES[dtype][0] and ours.backend is backend
    tolerance = 1e-6 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(ours.to_numpy(), theirs.numpy(), rtol=tolerance, atol=tolerance * 1e3)
    if steps:
        assert ours.tolist()[0] == DTYPES[dtype][0].type(start)
    if steps > 1:
        assert ours.tolist()[-1] == DTYPES[dtype][0].type(end)   # both ends included, exactly


@settings(max_examples=10)
@given(st.lists(st.integers(0, 40), min_size=1, max_size=3), st.sampled_from(sorted(DTYPES)), st.integers(0, 2**16))
@pytest.mark.task("2.1")
def test_randn_draws_standard_normals(backend, shape, dtype, seed):
    drawn = randn(shape, backend=backend, dtype=DTYPES[dtype][0], seed=seed)
    assert drawn.shape == tuple(shape) and drawn.dtype == DTYPES[dtype][0] and drawn.backend is backend
    assert drawn.tolist() == randn(shape, backend=backend, dtype=DTYPES[dtype][0], seed=seed).tolist()
    many = randn((100_000,), backend=backend, seed=seed).to_numpy()
    assert abs(many.mean()) < 0.02 and abs(many.std() - 1.0) < 0.02 and abs((np.abs(many) < 1).mean() - 0.6827) < 0.01
    assert randn(4, backend=backend, seed=seed).tolist() != randn(4, backend=backend, seed=seed + 1).tolist()


@settings(max_examples=20)
@given(shapes, st.sampled_from(["float64", "float32", "int64"]), st.integers(-3, 3))
@pytest.mark.task("2.1")
def test_full_zeros_like_and_ones_like_as_torch(backend, shape, dtype, value):
    ours_dtype = getattr(minitorch, dtype)
    filled = full(shape, value, backend=backend, dtype=ours_dtype)
    assert filled.tolist() == torch.full(shape, value, dtype=getattr(torch, dtype)).tolist()
    assert filled.dtype == ours_dtype and filled.backend is backend
    for ours, theirs in [(zeros_like(filled), torch.zeros(shape)), (ones_like(filled), torch.ones(shape))]:
        assert ours.shape == tuple(shape) and ours.dtype == ours_dtype and ours.backend is backend
        assert ours.tolist() == theirs.tolist()
    assert zeros_like(filled, dtype=minitorch.float32).dtype == minitorch.float32
    if ours_dtype == minitorch.int64:
        with pytest.raises(TypeError):
            ones_like(filled, requires_grad=True)   # an index has no gradient
    else:
        assert ones_like(filled, requires_grad=True).requires_grad


@pytest.mark.task("2.1")
def test_constructors_refuse_bad_arguments(backend):
    with pytest.raises(ValueError, match="arange's step must not be 0"):
        arange(0, 5, 0, backend=backend)
    with pytest.raises(ValueError, match="arange needs finite numbers"):
        arange(0, math.inf, backend=backend)
    with pytest.raises(TypeError, match="fill_value 2.5 is not a whole number: dtype int64"):
        full(3, 2.5, backend=backend, dtype=minitorch.int64)
    with pytest.raises(TypeError, match="fill_value must be a number"):
        full(3, "one", backend=backend)
    with pytest.raises(ValueError, match="linspace's steps must be a whole number >= 0, got -1"):
        linspace(0, 1, -1, backend=backend)
    with pytest.raises(ValueError, match="linspace needs finite numbers"):
        linspace(math.nan, 1, 3, backend=backend)
    with pytest.raises(TypeError, match="randn draws real numbers: dtype int64"):
        randn(3, backend=backend, dtype=minitorch.int64)
    assert np.isnan(full(2, math.nan, backend=backend).to_numpy()).all()


IN_PLACE = {"+=": lambda x, y: x.__iadd__(y), "-=": lambda x, y: x.__isub__(y), "*=": lambda x, y: x.__imul__(y),
            "/=": lambda x, y: x.__itruediv__(y)}


@settings(max_examples=30)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=3), st.sampled_from(sorted(IN_PLACE)), st.booleans(),
       st.booleans(), st.booleans(), st.integers(0, 2**16))
@pytest.mark.task("2.7")
def test_in_place_arithmetic_as_torch(backend, shape, operator, permuted, broadcast, number, seed):
    "`x op= y` into a tensor or a permuted view of it: the same numbers as torch's, in the same storage."
    rng = np.random.default_rng(seed)
    values = rng.normal(size=shape)
    base, their_base = tensor(values, backend=backend), torch.tensor(values)
    order = tuple(reversed(range(len(shape)))) if permuted else tuple(range(len(shape)))
    x, theirs = base.permute(*order), their_base.permute(*order)
    if number:
        y, their_y = 2.5, 2.5
    else:
        y_values = rng.normal(size=x.shape[-1:] if broadcast else x.shape) + 3.0   # away from 0, for /=
        y, their_y = tensor(y_values, backend=backend), torch.tensor(y_values)
    storage = base._tensor._storage
    result = IN_PLACE[operator](x, y)
    IN_PLACE[operator](theirs, their_y)
    assert result is x and base._tensor._storage is storage
    np.testing.assert_allclose(base.to_numpy(), their_base.numpy(), rtol=1e-12)


@pytest.mark.task("2.5")
def test_in_place_rules_as_torch(backend):
    "Refused on a tensor that tracks gradients while recording; wrong shapes and dtypes refused; fill_ and zero_."
    w = tensor([1.0, 2.0], backend=backend, requires_grad=True)
    for change in (lambda: w.__iadd__(1.0), lambda: w.zero_(), lambda: w.__setitem__(0, 5.0),
                   lambda: w.__setitem__(slice(None), 5.0)):
        with pytest.raises(RuntimeError, match="changes x in place, which records no history, and x tracks gradients"):
            change()
    with minitorch.no_grad():
        w -= 0.5
    assert w.tolist() == [0.5, 1.5] and w.requires_grad and w.is_leaf()
    with pytest.raises(IndexingError, match=r"cannot turn x of shape \(2,\) into a result of shape \(3, 2\)"):
        tensor([0.0, 0.0], backend=backend).__iadd__(tensor(np.ones((3, 2)), backend=backend))
    ids = tensor([1, 2], backend=backend, dtype=minitorch.int64)
    with pytest.raises(TypeError, match="cannot store a float64 result in x of dtype int64"):
        ids.__imul__(0.5)
    with pytest.raises(TypeError, match="cannot store 2.5 in x of dtype int64"):
        ids[0] = 2.5
    ids += 3
    assert ids.tolist() == [4, 5] and ids.dtype == minitorch.int64
    single = tensor([1.0, 2.0], backend=backend, dtype=minitorch.float32)
    single += tensor([0.5, 0.5], backend=backend)             # float64 into float32: stored as float32
    assert single.dtype == minitorch.float32 and single.tolist() == [1.5, 2.5]
    assert single.fill_(math.inf).tolist() == [math.inf] * 2 and single.zero_().tolist() == [0.0, 0.0]


@pytest.mark.task("2.7")
def test_a_tensor_changed_after_it_was_saved_is_refused_by_backward(backend):
    a = tensor([2.0, 3.0], backend=backend, requires_grad=True)
    b = tensor([4.0, 5.0], backend=backend, requires_grad=True)
    product = (a * b).sum(0)
    with minitorch.no_grad():
        a[0] = 7.0                                           # through the other name of a's storage: counted too
    with pytest.raises(RuntimeError, match="that Mul saved for the gradient was changed in place after it was saved"):
        product.backward()
    fresh = (a * b).sum(0)                                   # recorded after the change: fine
    fresh.backward()
    assert b.grad.tolist() == [7.0, 3.0]


@pytest.mark.task("2.7")
@pytest.mark.parametrize("spelling", ["no_grad", "data"])
def test_a_training_loop_from_scratch_as_torch(backend, spelling):
    "The PyTorch loop that updates weights in place, four steps of a tiny regression, gives torch's weights."
    rng = np.random.default_rng(5)
    inputs, targets, start = rng.normal(size=(8, 3)), rng.normal(size=(8, 1)), rng.normal(size=(3, 1))
    w, their_w = tensor(start, backend=backend, requires_grad=True), torch.tensor(start, requires_grad=True)
    x, their_x = tensor(inputs, backend=backend), torch.tensor(inputs)
    y, their_y = tensor(targets, backend=backend), torch.tensor(targets)
    for _ in range(4):
        loss = ((x @ w - y) * (x @ w - y)).mean()
        w.grad = None
        loss.backward()
        if spelling == "no_grad":
            with minitorch.no_grad():
                w -= 0.1 * w.grad
        else:
            w.data += -0.1 * w.grad
        their_loss = ((their_x @ their_w - their_y) ** 2).mean()
        their_w.grad = None
        their_loss.backward()
        with torch.no_grad():
            their_w -= 0.1 * their_w.grad
    assert w.requires_grad and w.is_leaf()
    np.testing.assert_allclose(w.to_numpy(), their_w.detach().numpy(), rtol=1e-12)


@pytest.mark.task("2.7")
@settings(max_examples=25)
@given(st.data())
def test_assignment_into_basic_indices_as_torch(backend, data):
    "`x[key] = value` and `x[key] += value` with ints, slices and negative indices, as torch's."
    shape = data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=3))
    key = tuple(data.draw(st.integers(-size, size - 1) | st.just(slice(None, None, 2)) | st.just(slice(1, None)))
                for size in shape[:data.draw(st.integers(1, len(shape)))])
    values = np.random.default_rng(len(key)).normal(size=shape)
    ours, theirs = tensor(values, backend=backend), torch.tensor(values)
    ours[key] = 9.0
    theirs[key] = 9.0
    ours[key] += 1.0
    theirs[key] += 1.0
    np.testing.assert_array_equal(ours.to_numpy(), theirs.numpy())
    with pytest.raises(IndexingError, match="t\\[ids\\] = value is not supported"):
        ours[tensor([0], backend=backend, dtype=minitorch.int64)] = 1.0


@pytest.mark.task("2.7")
@settings(max_examples=30)
@given(st.lists(st.integers(1, 5), min_size=1, max_size=3), st.data(), st.booleans(), st.integers(0, 2),
       st.sampled_from(["var", "std"]), st.integers(0, 2**16))
def test_var_and_std_as_torch(backend, shape, data, keepdim, correction, name, seed):
    "Values and gradients of var and std over a dim or everything, PyTorch's `correction` (1 by default) included."
    dim = data.draw(st.none() | st.integers(-len(shape), len(shape) - 1))
    values = np.random.default_rng(seed).normal(size=shape)
    ours_leaf, their_leaf = tensor(values, backend=backend, requires_grad=True), torch.tensor(values, requires_grad=True)
    if dim is None:
        ours, theirs = getattr(ours_leaf, name)(correction=correction), getattr(their_leaf, name)(correction=correction)
    else:
        ours = getattr(ours_leaf, name)(dim, keepdim=keepdim, correction=correction)
        theirs = getattr(their_leaf, name)(dim, keepdim=keepdim, correction=correction)
    expected = theirs.detach().numpy()
    assert ours.shape == (tuple(expected.shape) or (1,))
    np.testing.assert_allclose(ours.to_numpy(), expected.reshape(ours.shape), rtol=1e-9, atol=1e-12)
    if np.isfinite(expected).all() and (name == "var" or (expected > 1e-6).all()):
        weights = np.random.default_rng(seed + 1).normal(size=ours.shape)
        ours.backward(tensor(weights, backend=backend))
        theirs.backward(torch.tensor(weights.reshape(tuple(theirs.shape))))
        np.testing.assert_allclose(ours_leaf.grad.to_numpy(), their_leaf.grad.numpy(), rtol=1e-7, atol=1e-10)


@pytest.mark.task("2.7")
@settings(max_examples=20)
@given(st.lists(st.integers(0, 4), min_size=1, max_size=3), st.booleans(), st.integers(0, 2**16))
def test_clone_as_torch(backend, shape, permuted, seed):
    "A copy with storage of its own, the same values, and the gradient of the original."
    values = np.random.default_rng(seed).normal(size=shape)
    leaf, their_leaf, x, theirs = twins(backend, values, "float64", permuted)
    copy, their_copy = x.clone(), theirs.clone()
    assert copy._tensor._storage is not leaf._tensor._storage
    same(copy, their_copy)
    weights = np.random.default_rng(seed + 1).normal(size=copy.shape)
    copy.backward(tensor(weights, backend=backend))
    their_copy.backward(torch.tensor(weights))
    same(leaf.grad, their_leaf.grad)
    with minitorch.no_grad():
        copy += 1.0
    same(x, theirs)   # the original is untouched


def close(ours, theirs, dtype: str):
    "Assert values as torch's within a tolerance for sums taken in another order (NaN where NaN, infinities alike)."
    expected = theirs.detach().numpy()
    assert ours.shape == (tuple(expected.shape) or (1,))
    tolerance = 1e-5 if dtype == "float32" else 1e-10
    finite = np.abs(expected[np.isfinite(expected)])
    scale = max(1.0, float(finite.max())) if finite.size else 1.0
    np.testing.assert_allclose(ours.to_numpy(), expected.reshape(ours.shape), rtol=tolerance, atol=tolerance * scale)


POWER_NUMBERS = [0.5, -1.5, 1 / 3, 2.5, -0.5, 0.0, 1.0, 2.0, -2.0, 10.0, math.inf, -math.inf, math.nan]


@settings(max_examples=40)
@given(shapes, st.sampled_from(sorted(DTYPES)), st.booleans(), st.sampled_from(["x ** number", "number ** x", "x ** y"]),
       st.sampled_from(POWER_NUMBERS), st.data(), st.integers(0, 2**16))
@pytest.mark.task("2.6")
def test_power_as_torch(backend, shape, dtype, permuted, form, number, data, seed):
    "Real powers in every form, broadcast, with NaN, infinities, zeros and negative bases: values and gradients."
    leaf, their_leaf, x, theirs = twins(backend, planted(shape, seed) / 2, dtype, permuted)
    leaves = [(leaf, their_leaf)]
    if form == "x ** number":   # PyTorch computes x ** 0.5 as sqrt(x) (nan at -inf): minitorch as pow, as below
        ours_out = x ** number
        their_out = theirs ** number if float(number).is_integer() else theirs ** torch.tensor(number, dtype=theirs.dtype)
    elif form == "number ** x":
        ours_out, their_out = number ** x, number ** theirs
    else:
        exponent_shape = [data.draw(st.sampled_from([1, size])) for size in x.shape][data.draw(st.integers(0, x.dims)):]
        exponent = planted(exponent_shape, seed + 2).round(data.draw(st.sampled_from([0, 1])))   # whole or not
        leaves.append((tensor(exponent, backend=backend, dtype=DTYPES[dtype][0], requires_grad=True),
                       torch.tensor(exponent, dtype=DTYPES[dtype][1], requires_grad=True)))
        ours_out, their_out = x ** leaves[1][0], theirs ** leaves[1][1]
    assert ours_out.dtype == leaf.dtype
    close(ours_out, their_out, dtype)
    weights = np.random.default_rng(seed + 1).normal(size=ours_out.shape)
    (ours_out * tensor(weights, backend=backend, dtype=leaf.dtype)).sum().backward()
    (their_out * torch.tensor(weights, dtype=DTYPES[dtype][1])).sum().backward()
    for ours_leaf, their_leaf in leaves:
        close(ours_leaf.grad, their_leaf.grad, dtype)


@pytest.mark.task("2.6")
def test_powers_of_integers_as_torch(backend):
    ids = tensor([0, 1, 2, 5], backend=backend, dtype=minitorch.int64)
    their_ids = torch.tensor([0, 1, 2, 5])
    for ours, theirs in [(2 ** ids, 2 ** their_ids), (ids ** ids, their_ids ** their_ids), (ids ** 3, their_ids ** 3)]:
        assert ours.dtype == minitorch.int64 and ours.tolist() == theirs.tolist()
    halves = ids ** 0.5
    assert halves.dtype == minitorch.float64   # an int meets a float: float64 here (PyTorch's default float32)
    np.testing.assert_allclose(halves.to_numpy(), their_ids.double() ** 0.5, rtol=1e-15)
    with pytest.raises(ValueError, match="integers to negative integer powers are not allowed"):
        2 ** tensor([1, -1], backend=backend, dtype=minitorch.int64)
    with pytest.raises(TypeError, match="integers to negative powers are not allowed"):
        ids ** -1
    with pytest.raises(TypeError, match="the exponent must be a number or a tensor"):
        ids ** "2"


@pytest.mark.task("2.7")
@settings(max_examples=30)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=3), st.booleans(), st.data(), st.integers(0, 2**16))
def test_expand_as_torch(backend, shape, permuted, data, seed):
    "A view with stride 0 along the repeated dims, the same values as torch's, and the gradient summed back."
    values = np.random.default_rng(seed).normal(size=shape)
    leaf, their_leaf, x, theirs = twins(backend, values, "float64", permuted)
    added = data.draw(st.lists(st.integers(0, 3), max_size=2))
    sizes = added + [data.draw(st.sampled_from([-1, 0, 2, 3] if size == 1 else [-1, size])) for size in x.shape]
    expanded, their_expanded = x.expand(*sizes), theirs.expand(*sizes)
    assert expanded._tensor._storage is leaf._tensor._storage
    same(expanded, their_expanded)
    assert x.expand_as(expanded).shape == expanded.shape
    weights = np.random.default_rng(seed + 1).normal(size=expanded.shape)
    (expanded * tensor(weights, backend=backend)).sum().backward()
    (their_expanded * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(leaf.grad.to_numpy(), their_leaf.grad.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.task("2.7")
def test_expand_refuses_what_torch_refuses(backend):
    row = tensor([[1.0, 2.0, 3.0]], backend=backend)
    with pytest.raises(IndexingError, match=r"dim 1 of shape \(1, 3\) has size 3, not 1, so it cannot become 4"):
        row.expand(2, 4)
    with pytest.raises(IndexingError, match="give one per dim at least"):
        row.expand(3)
    with pytest.raises(IndexingError, match="-1 keeps an existing dim only"):
        row.expand(-1, 1, 3)
    grid = row.expand(2, 3)
    for change in [lambda: grid.fill_(0.0), lambda: grid.__iadd__(1.0), lambda: grid.__setitem__((0, 0), 5.0)]:
        with pytest.raises(RuntimeError, match="into one place of memory: change x.clone"):
            change()
    copy = grid.clone()
    copy += 1.0
    assert copy.tolist() == [[2.0, 3.0, 4.0]] * 2 and row.tolist() == [[1.0, 2.0, 3.0]]
    assert (grid @ tensor([[1.0], [1.0], [1.0]], backend=backend)).tolist() == [[6.0], [6.0]]


@settings(max_examples=20)
@given(st.integers(-5, 5), st.integers(1, 6), st.lists(st.integers(0, 4), min_size=1, max_size=3), st.integers(0, 2**16))
@pytest.mark.task("2.1")
def test_randint_draws_every_whole_number_in_range(backend, low, span, shape, seed):
    drawn = randint(low, low + span, shape, backend=backend, seed=seed)
    assert drawn.shape == tuple(shape) and drawn.dtype == minitorch.int64 and drawn.backend is backend
    values = drawn.to_numpy()
    assert values.size == 0 or (low <= values.min() and values.max() < low + span)
    from_zero = randint(span, (40 * span,), backend=backend, seed=seed).to_numpy()   # randint(high, size): from 0
    assert set(from_zero.tolist()) == set(range(span))
    assert set(randint(low, low + span, (60 * span,), seed=seed).tolist()) == set(range(low, low + span))


@pytest.mark.task("2.1")
def test_multinomial_draws_in_proportion_to_the_weights(backend):
    weights = tensor([[1.0, 0.0, 3.0, 0.0], [0.0, 2.0, 2.0, 4.0]], backend=backend)
    drawn = minitorch.multinomial(weights, 4000, replacement=True, seed=0).to_numpy()
    assert drawn.shape == (2, 4000)
    np.testing.assert_allclose([np.mean(drawn[0] == k) for k in range(4)], [0.25, 0.0, 0.75, 0.0], atol=0.03)
    np.testing.assert_allclose([np.mean(drawn[1] == k) for k in range(4)], [0.0, 0.25, 0.25, 0.5], atol=0.03)
    once = minitorch.multinomial(weights, 2, seed=1).to_numpy()   # without replacement: distinct, non-zero ids
    assert sorted(once[0].tolist()) == [0, 2] and len(set(once[1].tolist())) == 2 and 0 not in once[1]
    generator = np.random.default_rng(5)
    assert len({minitorch.multinomial(weights[1], 1, seed=generator).item() for _ in range(30)}) == 3
    with pytest.raises(ValueError, match="cannot draw 3 ids without replacement from a row with only 2"):
        minitorch.multinomial(weights, 3)
    with pytest.raises(ValueError, match="every row of weights must be finite, >= 0 and not all 0"):
        minitorch.multinomial(tensor([math.nan, 1.0], backend=backend), 1)
    with pytest.raises(ValueError, match="every row of weights must be finite, >= 0 and not all 0"):
        minitorch.multinomial(tensor([0.0, 0.0], backend=backend), 1)
    with pytest.raises(ValueError, match="randint needs whole numbers low < high"):
        randint(3, 3, (2,), backend=backend)


@pytest.mark.task("2.5")
def test_setting_requires_grad_as_torch(backend):
    "x.requires_grad = True makes a leaf track gradients; on a computed tensor True changes nothing, False is refused."
    weight = randn((3, 2), backend=backend, seed=0) * 0.1   # computed, but from a tensor that tracks nothing: a leaf
    weight.requires_grad = True
    assert weight.requires_grad and weight.is_leaf()
    out = weight * 2.0
    out.requires_grad = True   # already tracks: its history stays
    assert not out.is_leaf()
    out.sum().backward()
    assert weight.grad.tolist() == [[2.0, 2.0]] * 3
    with pytest.raises(RuntimeError, match="would cut it from its history: use x.detach"):
        out.requires_grad = False
    weight.requires_grad = False
    assert not weight.requires_grad
    with pytest.raises(TypeError, match="only float tensors can require gradients"):
        randint(3, (2,), backend=backend).requires_grad = True


@pytest.mark.task("2.6")
@pytest.mark.parametrize("exponent", [-1, -2, -3, 2, 3, 0])
def test_whole_powers_at_the_edges_as_torch(backend, exponent):
    "x ** n at 0, -0, the infinities and NaN: PyTorch's values and gradients (no 0 * inf from a chain of products)."
    for dtype in sorted(DTYPES):
        leaf, their_leaf, x, theirs = twins(backend, np.array(SPECIAL + [2.0, -3.0]), dtype, False)
        ours_out, their_out = x ** exponent, theirs ** exponent
        same(ours_out, their_out)
        ours_out.backward(tensor(np.ones(7), backend=backend, dtype=leaf.dtype))
        their_out.sum().backward()
        same(leaf.grad, their_leaf.grad)
