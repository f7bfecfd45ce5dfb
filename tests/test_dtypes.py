"""Dtypes on every backend: float64 (the default), float32, int64 and bool tensors, made, computed, promoted and
differentiated as PyTorch does (values against NumPy and PyTorch, property-based over shapes and strided layouts)."""
import numpy as np
import pytest
from backends import BACKENDS
from hypothesis import given, settings
from hypothesis import strategies as st
from tensor_strategies import broadcast_shapes, shapes, tensor_data

import minitorch
from minitorch import Tensor, TensorData, bool_, float32, float64, int64, nn, ones, rand, tensor, zeros

try:
    import torch
except ImportError:  # the parity tests skip; the others run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed (pip install -e '.[torch]')")
with_backends = pytest.mark.parametrize("backend", BACKENDS)
float_dtypes = pytest.mark.parametrize("dtype", [float32, float64], ids=["float32", "float64"])
TORCH_DTYPES = {"float32": "float32", "float64": "float64", "int64": "int64", "bool": "bool"}
small = st.floats(min_value=-3, max_value=3, allow_nan=False, width=32)


def torch_dtype(dtype: np.dtype):
    "PyTorch's dtype of the same name."
    return getattr(torch, TORCH_DTYPES[dtype.name])


def strided(draw, backend, dtype: np.dtype, shape=None, elements=small) -> Tensor:
    "A tensor of `dtype` on `backend` over a randomly permuted layout (a non-contiguous view, usually)."
    data = draw(tensor_data(shape, elements))
    storage = data._storage.astype(dtype)
    return Tensor(TensorData(storage, data.shape, data.strides), backend=backend)


def tolerance(dtype: np.dtype) -> dict:
    "Tolerances for comparing results of `dtype` computed in another order or precision."
    return dict(rtol=1e-5, atol=1e-5) if dtype == float32 else dict(rtol=1e-10, atol=1e-10)


# --- names, constructors, errors ------------------------------------------------------------------------
def test_dtype_names_are_numpy_dtypes_with_pytorch_names():
    assert (minitorch.float32, minitorch.float64, minitorch.int64) == (np.dtype("float32"), np.dtype("float64"),
                                                                          np.dtype("int64"))
    assert minitorch.DTYPES == (float64, float32, int64, bool_)
    assert minitorch.as_dtype("float32") is float32 and minitorch.as_dtype(np.int64) is int64
    assert minitorch.bool is bool_ == np.dtype(bool) and minitorch.as_dtype(bool) is bool_ and minitorch.as_dtype("bool") is bool_
    star = {}
    exec("from minitorch import *", star)   # torch.bool's name, kept out of `import *`: Python's bool stays bool
    assert "bool" not in minitorch.__all__ and "bool" not in star and star["bool_"] is bool_


@pytest.mark.parametrize("bad", ["float16", "complex64", None, "tensor", 3.5, np.uint8])
def test_a_dtype_that_does_not_exist_is_refused_with_the_choices(bad):
    if bad is None:   # a factory's dtype=None is the default dtype, as in PyTorch
        assert zeros(2, dtype=bad).dtype == minitorch.get_default_dtype()
    else:
        with pytest.raises(TypeError, match=r"is not a tensor dtype: use one of float64, float32, int64, bool"):
            zeros(2, dtype=bad)
    with pytest.raises(TypeError, match="is not a tensor dtype"):
        tensor([1.0]).to(bad)


@with_backends
@pytest.mark.parametrize("dtype", [float32, float64, int64], ids=["float32", "float64", "int64"])
def test_constructors_make_the_dtype_asked_for(backend, dtype):
    made = [tensor([[1, 2], [3, 4]], backend=backend, dtype=dtype), zeros((2, 2), backend=backend, dtype=dtype),
            ones((2, 2), backend=backend, dtype=dtype), tensor(np.arange(4).reshape(2, 2), backend=backend, dtype=dtype)]
    for made_tensor in made:
        assert made_tensor.dtype == dtype and made_tensor.to_numpy().dtype == dtype
        assert made_tensor.zeros().dtype == dtype and made_tensor.zeros((3,)).dtype == dtype
    assert type(made[0][1, 1]) is (int if dtype == int64 else float) and made[0][1, 1] == 4
    assert made[2].sum().item() == 4


# data given to `tensor` without a dtype, our dtype and PyTorch's (whose default float is float32, ours float64)
INFERRED = [([4, 0, 4], int64, "int64"), (7, int64, "int64"), ([[1, -2], [3, 4]], int64, "int64"),
            ([1.5, 2], float64, "float32"), (2.5, float64, "float32"), ([], float64, "float32"),
            (np.arange(3), int64, "int64"), (np.arange(3, dtype=np.int32), int64, "int32"),
            (np.zeros(2, np.uint8), int64, "uint8"), (np.ones(3, np.float32), float32, "float32"),
            (np.ones(3), float64, "float64")]


@with_backends
@pytest.mark.parametrize("data, ours, theirs", INFERRED, ids=lambda value: repr(value)[:24])
def test_whole_numbers_make_int64_and_floats_the_default_float(backend, data, ours, theirs):
    made = tensor(data, backend=backend)
    assert made.dtype == ours and made.to_numpy().tolist() == np.asarray(data, dtype=ours).reshape(made.shape).tolist()
    if torch is not None:
        assert str(torch.tensor(data).dtype) == f"torch.{theirs}"   # the table is PyTorch's, integer widths aside


@with_backends
def test_default_dtype_is_float64_and_float_arrays_keep_theirs(backend):
    assert tensor([1.0, 2], backend=backend).dtype == float64 and zeros(2, backend=backend).dtype == float64
    assert tensor([1, 2], backend=backend, dtype=float64).dtype == float64   # classic MiniTorch's float tensor of ints
    assert tensor(np.ones(3, np.float32), backend=backend).dtype == float32
    assert rand(3, backend=backend, dtype=float32, seed=1).dtype == float32
    assert "dtype=float32" in repr(zeros(2, dtype=float32)) and "dtype" not in repr(zeros(2))
    assert "dtype=int64" in repr(tensor([3, 4], dtype=int64)) and "[3, 4]" in repr(tensor([3, 4], dtype=int64))


def test_integer_tensors_refuse_gradients_and_random_values():
    with pytest.raises(TypeError, match="only float tensors can require gradients, this one is int64"):
        tensor([1, 2], dtype=int64, requires_grad=True)
    with pytest.raises(TypeError, match=r"only float tensors can require gradients.*make it from floats \(1.0, not 1\)"):
        tensor([1, 2], requires_grad=True)   # as PyTorch: whole numbers make an int64 tensor
    with pytest.raises(OverflowError, match="too large for int64"):
        tensor([2 ** 63])
    with pytest.raises(TypeError, match="rand draws fractions"):
        rand(3, dtype=int64)


# --- elementwise functions and promotion against PyTorch ------------------------------------------------
UNARY = {"neg": lambda t: -t, "sigmoid": lambda t: t.sigmoid(), "relu": lambda t: t.relu(),
         "exp": lambda t: t.exp(), "log": lambda t: (t * t + 0.5).log(), "inv": lambda t: 1.0 / (t * t + 0.5),
         "square": lambda t: t ** 2, "fifth power": lambda t: t ** 5, "inverse square": lambda t: (t * t + 0.5) ** -2}


@needs_torch
@with_backends
@float_dtypes
@pytest.mark.parametrize("name", UNARY)
@settings(max_examples=15)
@given(data=st.data())
def test_elementwise_functions_match_torch_in_values_gradients_and_dtype(backend, dtype, name, data):
    x = strided(data.draw, backend, dtype).requires_grad_()
    ours = UNARY[name](x)
    ours.sum().backward()
    reference = torch.tensor(x.to_numpy(), requires_grad=True)
    expected = UNARY[name](reference)
    expected.sum().backward()
    assert ours.dtype == dtype and x.grad.dtype == dtype and expected.dtype == torch_dtype(dtype)
    np.testing.assert_allclose(ours.to_numpy(), expected.detach().numpy(), **tolerance(dtype))
    np.testing.assert_allclose(x.grad.to_numpy(), reference.grad.numpy(), **tolerance(dtype))


@with_backends
def test_whole_powers_as_torch(backend):
    "int64 powers stay exact int64; x ** 0 is 1 even for nan; a fractional power is pow's; negative int powers are refused."
    ids = tensor([3, -2, 0], backend=backend, dtype=int64)
    assert (ids ** 3).dtype == int64 and (ids ** 3).to_numpy().tolist() == [27, -8, 0]
    assert (tensor([2**20], backend=backend, dtype=int64) ** 3).item() == 2**60   # past float64's 53 bits
    odd = tensor([np.nan, np.inf, 0.0], backend=backend)
    assert (odd ** 0).to_numpy().tolist() == [1.0, 1.0, 1.0] and (odd ** 1).to_numpy()[1] == np.inf
    assert (odd ** -1).to_numpy()[2] == np.inf
    assert (odd ** 0.5).to_numpy()[1:].tolist() == [np.inf, 0.0] and np.isnan((odd ** 0.5).to_numpy()[0])
    with pytest.raises(TypeError, match="integers to negative powers are not allowed"):
        ids ** -1


PAIRS = [(float32, float32), (float32, float64), (float64, float32), (int64, float32), (float32, int64),
         (int64, float64), (int64, int64), (bool_, bool_), (bool_, int64), (float32, bool_), (bool_, float64)]


@needs_torch
@with_backends
@pytest.mark.parametrize("dtypes", PAIRS, ids=lambda pair: f"{pair[0].name}-{pair[1].name}")
@settings(max_examples=3)
@given(data=st.data(), shape_pair=broadcast_shapes())
def test_binary_operations_promote_as_torch(backend, data, dtypes, shape_pair):
    "Each pair of dtypes a test of its own: on the fast backend each compiles its kernels (the cost), on any core."
    elements = {int64: st.integers(min_value=-5, max_value=5).map(float), bool_: st.integers(0, 1).map(float)}
    a, b = (strided(data.draw, backend, dtype, shape, elements.get(dtype, small))
            for dtype, shape in zip(dtypes, shape_pair))
    torch_a, torch_b = torch.tensor(a.to_numpy()), torch.tensor(b.to_numpy())
    pairs = [(a + b, torch_a + torch_b), (a * b, torch_a * torch_b)]
    if bool_ not in dtypes:   # torch refuses `-` with a bool; minitorch only between two bools (below)
        pairs.append((a - b, torch_a - torch_b))
    for ours, expected in pairs:
        assert ours.dtype.name == str(expected.dtype).removeprefix("torch.")
        np.testing.assert_allclose(ours.to_numpy(), expected.numpy(), rtol=1e-6, atol=1e-6)
    for ours, expected in ((a < b, torch_a < torch_b), (a == b, torch_a == torch_b), (a <= b, torch_a <= torch_b),
                           (a >= b, torch_a >= torch_b), (a != b, torch_a != torch_b), (a > b, torch_a > torch_b)):
        assert ours.dtype == bool_ and expected.dtype == torch.bool
        np.testing.assert_array_equal(ours.to_numpy(), expected.numpy())
    quotient, expected = a / b, torch_a / torch_b   # ints and bools divide into minitorch's default float64, PyTorch's float32
    floats = any(dtype.kind == "f" for dtype in dtypes)
    assert quotient.dtype.name == ("float64" if not floats else str(expected.dtype).removeprefix("torch."))
    divisor = np.broadcast_to(b.to_numpy(), expected.shape)
    usual = (np.abs(divisor) >= 1e-6) | (divisor == 0)   # a / b is a * (1 / b): 1 / a subnormal b overflows
    np.testing.assert_allclose(quotient.to_numpy()[usual], expected.numpy()[usual], rtol=1e-6, atol=1e-6)


@with_backends
def test_a_number_takes_the_tensors_dtype(backend):
    x, ids = tensor([1.5, 2.5], backend=backend, dtype=float32), tensor([2, 3], backend=backend, dtype=int64)
    assert (x * 0.5).dtype == float32 and (2.0 - x).dtype == float32 and (x / 3).dtype == float32
    assert (ids + 1).dtype == int64 and (ids * 2).to_numpy().tolist() == [4, 6]
    assert (ids * 0.5).dtype == float64 and (ids * 0.5).to_numpy().tolist() == [1.0, 1.5]
    assert ids.exp().dtype == float64 and ids.sigmoid().dtype == float64 and (1 / ids).dtype == float64
    assert (-ids).dtype == int64 and ids.relu().dtype == int64
    mask = tensor([1, 0], backend=backend, dtype=bool_)   # a number of a higher kind than bool wins, as in PyTorch
    assert (mask + 1).dtype == int64 and (mask + 1).tolist() == [2, 1] and (mask * 0.5).dtype == float64
    assert (mask + True).dtype == bool_ and (mask * False).tolist() == [False, False] and (x * True).dtype == float32
    assert (ids + True).dtype == int64 and (ids + True).tolist() == [3, 4]


@with_backends
def test_int64_arithmetic_is_exact_beyond_float64s_53_bits(backend):
    big = tensor([2 ** 53 + 1, -(2 ** 60)], backend=backend, dtype=int64)
    assert (big + 1).to_numpy().tolist() == [2 ** 53 + 2, -(2 ** 60) + 1]
    assert (big * tensor([1], backend=backend, dtype=int64)).to_numpy().tolist() == [2 ** 53 + 1, -(2 ** 60)]
    assert big.sum().item() == 2 ** 53 + 1 - 2 ** 60 and type(big.sum().item()) is int
    assert nn.max(big, 0).item() == 2 ** 53 + 1


@with_backends
@float_dtypes
def test_nan_and_inf_survive_in_float32_too(backend, dtype):
    x = tensor([float("nan"), float("inf"), -float("inf"), 1.0], backend=backend, dtype=dtype)
    assert np.isnan(x.relu().to_numpy()[0]) and x.relu().to_numpy()[1] == np.inf
    assert np.isnan(nn.max(x, 0).item()) and x.exp().to_numpy()[2] == 0.0 and x.dtype == dtype


@with_backends
@float_dtypes
def test_empty_tensors_of_each_dtype(backend, dtype):
    empty = zeros((0, 3), backend=backend, dtype=dtype)
    assert (empty + 1).dtype == dtype and (empty + 1).shape == (0, 3) and empty.sum(0).to_numpy().tolist() == [0, 0, 0]


# --- reductions and matrix products ---------------------------------------------------------------------
@needs_torch
@with_backends
@float_dtypes
@settings(max_examples=15)
@given(data=st.data())
def test_reductions_match_torch(backend, dtype, data):
    x = strided(data.draw, backend, dtype)
    dim = data.draw(st.integers(min_value=0, max_value=x.dims - 1))
    reference = torch.tensor(x.to_numpy())
    for ours, expected in ((x.sum(dim, keepdim=True), reference.sum(dim, keepdim=True)),
                           (x.mean(dim, keepdim=True), reference.mean(dim, keepdim=True)),
                           (nn.max(x, dim, keepdim=True), reference.max(dim, keepdim=True).values)):
        assert ours.dtype == dtype
        np.testing.assert_allclose(ours.to_numpy(), expected.numpy(), **tolerance(dtype))


@st.composite
def matmul_layouts(draw, backend, dtype):
    "`a` and `b` of `dtype` with matching inner dims, 2-D or batched, in random (transposed) layouts."
    batch, rows, inner, cols = (draw(st.integers(1, 4)) for _ in range(4))
    prefix = (batch,) if draw(st.booleans()) else ()
    return (strided(draw, backend, dtype, prefix + (rows, inner)), strided(draw, backend, dtype, prefix + (inner, cols)))


@with_backends
@float_dtypes
@settings(max_examples=15)
@given(data=st.data())
def test_matrix_products_in_each_float_dtype_match_numpy(backend, dtype, data):
    a, b = data.draw(matmul_layouts(backend, dtype))
    product = a @ b
    assert product.dtype == dtype
    np.testing.assert_allclose(product.to_numpy(), a.to_numpy() @ b.to_numpy(), **tolerance(dtype))


@pytest.mark.parametrize("backend", [BACKENDS[1]])
def test_float32_products_of_layer_size_on_the_fast_backend(backend):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((64, 300)).astype(np.float32), rng.standard_normal((300, 260)).astype(np.float32)
    product = tensor(a, backend=backend) @ tensor(b, backend=backend).permute(1, 0).contiguous().permute(1, 0)
    assert product.dtype == float32
    np.testing.assert_allclose(product.to_numpy(), a @ b, rtol=1e-4, atol=1e-4)


@with_backends
def test_a_product_of_two_dtypes_is_refused_as_in_pytorch(backend):
    with pytest.raises(TypeError, match="cannot multiply a float32 tensor by a float64 tensor"):
        zeros((2, 2), backend=backend, dtype=float32) @ zeros((2, 2), backend=backend)


# --- gradients and conversions ---------------------------------------------------------------------------
@with_backends
def test_each_gradient_arrives_in_its_inputs_dtype(backend):
    single = tensor([[1.0, 2.0]], backend=backend, dtype=float32, requires_grad=True)
    double = tensor([[3.0], [4.0]], backend=backend, requires_grad=True)
    (single * double).sum().backward()  # a float64 computation
    assert single.grad.dtype == float32 and double.grad.dtype == float64
    np.testing.assert_array_equal(single.grad.to_numpy(), [[7.0, 7.0]])
    np.testing.assert_array_equal(double.grad.to_numpy(), [[3.0], [3.0]])


@with_backends
def test_conversions_copy_and_differentiate(backend):
    x = tensor([[1.7, -2.7]], backend=backend, requires_grad=True)
    assert x.to(float64) is x and x.double() is x
    assert x.long().to_numpy().tolist() == [[1, -2]] and x.long().dtype == int64
    (x.float() * 2.0).sum().backward()
    assert x.grad.dtype == float64 and x.grad.to_numpy().tolist() == [[2.0, 2.0]]
    view = x.detach()[:, 1:]
    assert view.float().to_numpy().tolist() == [[np.float32(-2.7)]]


@needs_torch
@with_backends
def test_float32_layers_compute_in_float32_as_torch(backend):
    rng = np.random.default_rng(1)
    images = rng.standard_normal((2, 1, 6, 6)).astype(np.float32)
    weight = rng.standard_normal((3, 1, 3, 3)).astype(np.float32)
    x = tensor(images, backend=backend, requires_grad=True)
    w = tensor(weight, backend=backend, requires_grad=True)
    out = nn.maxpool2d(minitorch.conv2d(x, w).relu(), 2)
    out.sum().backward()
    torch_x, torch_w = torch.tensor(images, requires_grad=True), torch.tensor(weight, requires_grad=True)
    expected = torch.nn.functional.max_pool2d(torch.nn.functional.conv2d(torch_x, torch_w).relu(), 2)
    expected.sum().backward()
    assert out.dtype == float32 and x.grad.dtype == float32 and w.grad.dtype == float32
    np.testing.assert_allclose(out.to_numpy(), expected.detach().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(w.grad.to_numpy(), torch_w.grad.numpy(), rtol=1e-4, atol=1e-4)
    assert nn.dropout(out, 0.5, rng=0).dtype == float32
    assert nn.cross_entropy(out.view(2, 12), [1, 0]).dtype == float32


def test_a_checkpoint_loads_into_each_parameters_dtype(tmp_path):
    layer = nn.Linear(3, 2)
    layer.weight.update(layer.weight.value.float().detach().requires_grad_())
    minitorch.save_checkpoint(layer, tmp_path / "layer.npz")
    fresh = nn.Linear(3, 2)
    fresh.weight.update(fresh.weight.value.float().detach().requires_grad_())
    minitorch.load_checkpoint(tmp_path / "layer.npz", fresh)
    assert fresh.weight.value.dtype == float32 and fresh.bias.value.dtype == float64
    np.testing.assert_array_equal(fresh.weight.value.to_numpy(), layer.weight.value.to_numpy())


@needs_torch
@with_backends
def test_bool_tensors_compute_as_torch(backend):
    "Masks made, counted, combined, converted, promoted and printed as PyTorch's; `-` on them refused as in PyTorch."
    values = np.array([[0.5, -1.0, 2.0], [3.0, 0.0, -2.5]])
    x, theirs = tensor(values, backend=backend), torch.tensor(values)
    mask, their_mask = x > 0, theirs > 0
    other, their_other = x < 2.5, theirs < 2.5
    pairs = [(mask, their_mask), (mask.sum(), their_mask.sum()), (mask.sum(1, keepdim=False), their_mask.sum(1)),
             (mask.cumsum(1), their_mask.cumsum(1)), (mask.float(), their_mask.float()), (mask.long(), their_mask.long()),
             (mask.all(), their_mask.all()), (mask.any(1, keepdim=False), their_mask.any(1)), (~mask, ~their_mask),
             (mask & other, their_mask & their_other), (mask | other, their_mask | their_other),
             (mask ^ other, their_mask ^ their_other), (mask + other, their_mask + their_other),
             (mask * other, their_mask * their_other), (mask * x, their_mask * theirs), (mask + 1, their_mask + 1),
             (mask ** 2, their_mask ** 2), (mask / 2, their_mask / 2), (x.logical_not(), theirs.logical_not()),
             (x.logical_and(mask), theirs.logical_and(their_mask)), (mask.logical_or(x), their_mask.logical_or(theirs)),
             (x.logical_xor(0.0), theirs.logical_xor(torch.tensor(0.0))), ((x == x).float().mean(), (theirs == theirs).float().mean()),
             (mask.to(float64) @ x.permute(1, 0), their_mask.double() @ theirs.T), (True & mask, True & their_mask)]
    for number, (ours, expected) in enumerate(pairs):
        wanted = str(expected.dtype).removeprefix("torch.")
        assert ours.dtype.name == (wanted if wanted != "float32" or ours.dtype == float32 else "float64"), number
        np.testing.assert_allclose(ours.to_numpy(), expected.numpy().reshape(ours.shape), err_msg=str(number))
    assert mask.sum().item() == 3 and type(mask.sum().item()) is int and mask[0, 2] is True and mask.tolist()[1] == [True, False, False]
    assert repr(mask).startswith("tensor([[ True, False,  True],") and "dtype=bool" in repr(mask)
    made = [tensor([1, 0, 2], backend=backend, dtype=bool_), zeros(3, backend=backend, dtype=bool_),
            ones(3, backend=backend, dtype=bool), minitorch.full(3, True, backend=backend, dtype=bool_)]
    assert [m.tolist() for m in made] == [[True, False, True], [False] * 3, [True] * 3, [True] * 3]
    assert all(m.dtype == bool_ for m in made) and made[0].to(float32).tolist() == [1.0, 0.0, 1.0]
    with pytest.raises(TypeError, match="negation, the `-` operator, on a bool tensor is not supported"):
        -mask
    with pytest.raises(TypeError, match="subtraction, the `-` operator, with two bool tensors is not supported"):
        mask - other
    with pytest.raises(TypeError, match=r"a & b takes two bool tensors \(masks\), got bool and float64"):
        mask & x
    with pytest.raises(TypeError, match=r"~x takes a bool or an int64 tensor, this one is float64"):
        ~x
    with pytest.raises(TypeError, match="only float tensors can require gradients, this one is bool"):
        mask.requires_grad_()
    assert (~tensor([5, -1], backend=backend, dtype=int64)).tolist() == (~torch.tensor([5, -1])).tolist()


@with_backends
def test_comparisons_of_tracked_tensors_pass_zero_gradients(backend):
    "A comparison is flat: a gradient through it (a mask summed, a float mask used) is zero, as before it gave bools."
    x = tensor([[1.0, -2.0], [0.5, 3.0]], backend=backend, requires_grad=True)
    y = tensor([0.0, 1.0], backend=backend, requires_grad=True)
    ((x > y).sum() + (x == y).float().sum() + x.is_close(y).long().sum()).backward()
    assert x.grad.dtype == float64 and x.grad.tolist() == [[0.0, 0.0], [0.0, 0.0]] and y.grad.tolist() == [0.0, 0.0]
    x.zero_grad_()
    ((x > 0) * x).sum().backward()
    assert x.grad.tolist() == [[1.0, 0.0], [1.0, 1.0]]


@with_backends
def test_selection_and_joining_keep_the_values_dtype_as_torch(backend):
    mask = tensor([1.0, 0.0, 1.0], backend=backend)  # a float64 condition does not promote
    single, ids = ones(3, backend=backend, dtype=float32), tensor([4, 5, 6], backend=backend, dtype=int64)
    assert minitorch.where(mask, single, ids).dtype == float32
    assert minitorch.where(mask, 2.5, single).dtype == float32 and minitorch.where(mask, ids, 7).dtype == int64
    assert single.masked_fill(mask, float("-inf")).dtype == float32
    assert ids.masked_fill(mask, 1.5).to_numpy().tolist() == [1, 5, 1]  # stored in the tensor's dtype
    assert minitorch.cat([single, ids]).dtype == float32 and minitorch.stack([ids, ids]).dtype == int64
    assert minitorch.tril(ones((3, 3), backend=backend, dtype=float32)).dtype == float32
    flags = mask == 1.0   # a bool condition, as PyTorch's
    assert minitorch.where(flags, single, ids).dtype == float32 and single.masked_fill(flags, 0.0).tolist() == [0.0, 1.0, 0.0]
    assert minitorch.where(flags, flags, False).dtype == bool_ and minitorch.cat([flags, ids]).dtype == int64
    assert minitorch.cat([flags, flags]).dtype == bool_ and minitorch.stack([flags, single]).dtype == float32


@needs_torch
@with_backends
@pytest.mark.task("4.5")
def test_module_to_converts_parameters_as_torch(backend):
    "model.float()/.double()/.to(dtype): parameters (and gradients) converted in place, same Parameter objects."
    import torch
    model = nn.Sequential(nn.Linear(3, 4, backend=backend, seed=1), nn.ReLU(), nn.Linear(4, 2, backend=backend, seed=2))
    twin = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2)).double()
    with torch.no_grad():
        for (_, ours), theirs in zip(model.named_parameters(), twin.parameters()):
            theirs.copy_(torch.tensor(ours.value.to_numpy()))
    inputs = np.random.default_rng(0).normal(size=(5, 3))
    model(tensor(inputs, backend=backend)).sum().backward()
    twin(torch.tensor(inputs)).sum().backward()
    parameters = model.parameters()
    assert model.float() is model and twin.float() is twin
    assert [id(parameter) for parameter in model.parameters()] == [id(parameter) for parameter in parameters]
    for parameter, theirs in zip(model.parameters(), twin.parameters()):
        assert parameter.value.dtype == float32 and parameter.value.grad.dtype == float32
        assert parameter.value.requires_grad and parameter.value.is_leaf()
        np.testing.assert_allclose(parameter.value.grad.to_numpy(), theirs.grad.numpy(), rtol=1e-6)
    model.zero_grad(), twin.zero_grad(set_to_none=True)
    out, their_out = model(tensor(inputs, backend=backend, dtype=float32)), twin(torch.tensor(inputs).float())
    assert out.dtype == float32
    np.testing.assert_allclose(out.to_numpy(), their_out.detach().numpy(), rtol=1e-5, atol=1e-6)
    out.sum().backward()
    minitorch.SGD(parameters, lr=0.1).step()   # an optimiser made before the conversion still updates them
    assert model.double().to("float64") is model and all(p.value.dtype == float64 for p in model.parameters())
    with pytest.raises(TypeError, match="convert to float32 or float64 only"):
        model.to(int64)


@pytest.fixture
def float32_default():
    "The default dtype float32 for one test, float64 again after it whatever happens."
    minitorch.set_default_dtype(float32)
    try:
        yield
    finally:
        minitorch.set_default_dtype(float64)


@pytest.mark.usefixtures("float32_default")
@with_backends
def test_set_default_dtype_makes_float_factories_and_layers_follow(backend):
    from minitorch.transformer import LayerNorm
    assert minitorch.get_default_dtype() == float32
    made = [tensor([0.5, 1.0], backend=backend), zeros(2, backend=backend), ones(2, backend=backend),
            rand(2, backend=backend), minitorch.randn(2, backend=backend), minitorch.full((2,), 3.0, backend=backend),
            minitorch.arange(0.0, 1.0, 0.5, backend=backend), minitorch.linspace(0, 1, 3, backend=backend)]
    assert [t.dtype for t in made] == [float32] * len(made)
    layers = [nn.Linear(3, 2, backend=backend), nn.Conv1d(1, 2, 3, backend=backend),
              nn.Conv2d(1, 2, 3, backend=backend), nn.Embedding(4, 3, backend=backend), LayerNorm(3, backend=backend)]
    assert {p.value.dtype for layer in layers for p in layer.parameters()} == {float32}
    assert tensor([1, 2], backend=backend).dtype == int64 and zeros(2, dtype=float64, backend=backend).dtype == float64
    assert tensor(np.zeros(2), backend=backend).dtype == float64   # an array keeps its dtype, as in PyTorch
    assert "dtype" not in repr(zeros(2, backend=backend)) and "dtype=float64" in repr(zeros(2, dtype=float64))


@needs_torch
def test_default_dtype_as_torch():
    assert minitorch.get_default_dtype() == float64   # ours (PyTorch's: float32)
    for bad in (int64, bool_, "float16"):
        with pytest.raises(TypeError, match="default dtype|not a tensor dtype"):
            minitorch.set_default_dtype(bad)
        with pytest.raises(TypeError):
            torch.set_default_dtype(torch_dtype(bad) if bad != "float16" else torch.int32)
    assert minitorch.get_default_dtype() == float64 and nn.Linear(2, 2).weight.value.dtype == float64
    previous = torch.get_default_dtype()
    try:
        torch.set_default_dtype(torch.float64)
        minitorch.set_default_dtype(minitorch.float64)
        assert str(torch.get_default_dtype()).endswith(minitorch.get_default_dtype().name)
    finally:
        torch.set_default_dtype(previous)
