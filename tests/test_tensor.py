"""Tensors on every backend: the shared catalogue forward and by grad_check, on random shapes and layouts."""
import numpy as np
import pytest
from backends import BACKENDS
from hypothesis import given, settings
from hypothesis import strategies as st
from tensor_strategies import broadcast_shapes, shapes, tensors

import minitorch
from minitorch import grad_check, ones, rand, tensor, zeros

pytestmark = [pytest.mark.task("2.7"), pytest.mark.parametrize("backend", BACKENDS)]

one_arg = minitorch.math_cases("one")
two_arg = minitorch.math_cases("two")
reductions = minitorch.math_cases("reduction")


def elementwise(reference, *arrays):
    "The float reference applied elementwise to broadcast NumPy arrays."
    return np.vectorize(reference, otypes=[float])(*arrays)


@settings(max_examples=25)
@pytest.mark.parametrize("case", one_arg, ids=[case.name for case in one_arg])
@given(st.data())
def test_one_argument_functions(backend, case, data):
    value = data.draw(tensors(backend))
    expected = elementwise(case.reference, value.to_numpy())
    np.testing.assert_allclose(case.variable(value).to_numpy(), expected, rtol=1e-9, atol=1e-12)
    if not case.near_kink(*value.to_numpy().ravel()):
        grad_check(case.variable, value)


@settings(max_examples=25)
@pytest.mark.parametrize("case", two_arg, ids=[case.name for case in two_arg])
@given(st.data())
def test_two_argument_functions_broadcast(backend, case, data):
    shape_a, shape_b = data.draw(broadcast_shapes())
    a, b = data.draw(tensors(backend, shape_a)), data.draw(tensors(backend, shape_b))
    expected = elementwise(case.reference, a.to_numpy(), b.to_numpy())
    np.testing.assert_allclose(case.variable(a, b).to_numpy(), expected, rtol=1e-9, atol=1e-12)
    if case.differentiable:
        grad_check(case.variable, a, b)


@settings(max_examples=25)
@pytest.mark.parametrize("case", reductions, ids=[case.name for case in reductions])
@given(st.data())
def test_reductions(backend, case, data):
    value = data.draw(tensors(backend))
    array = value.to_numpy()
    if case.name == "mean_full_red":
        expected = np.array([case.reference(list(array.ravel()))])
    else:
        expected = np.apply_along_axis(lambda line: case.reference(list(line)), 0, array)   # dim 0 dropped
    np.testing.assert_allclose(case.variable(value).to_numpy(), expected.reshape(expected.shape or (1,)), rtol=1e-9, atol=1e-9)
    grad_check(case.variable, value)


@settings(max_examples=25)
@given(st.data())
def test_sum_and_mean_over_any_dim(backend, data):
    value = data.draw(tensors(backend))
    dim = data.draw(st.integers(min_value=-value.dims, max_value=value.dims - 1))
    array = value.to_numpy()
    np.testing.assert_allclose(value.sum(dim, keepdim=True).to_numpy(), array.sum(dim, keepdims=True), atol=1e-9)
    dropped = value.mean(dim)
    expected = array.mean(dim)
    np.testing.assert_allclose(dropped.to_numpy(), expected.reshape(expected.shape or (1,)), atol=1e-9)
    grad_check(lambda x: x.mean(dim).sum() * x.sum(dim, keepdim=True), value)


@settings(max_examples=25)
@given(st.data())
def test_permute_view_contiguous(backend, data):
    value = data.draw(tensors(backend))
    order = data.draw(st.permutations(range(value.dims)))
    permuted = value.permute(*order)
    np.testing.assert_array_equal(permuted.to_numpy(), np.transpose(value.to_numpy(), order))
    flat = permuted.contiguous().view(permuted.size)
    np.testing.assert_array_equal(flat.to_numpy(), np.transpose(value.to_numpy(), order).ravel())
    weights = tensor(np.arange(float(value.size)), backend=backend)
    grad_check(lambda x: x.permute(*order).contiguous().view(x.size) * weights, value)


@settings(max_examples=25)
@given(st.data())
def test_matmul_forward_and_gradients(backend, data):
    batch, rows, inner, cols = (data.draw(st.integers(min_value=1, max_value=3)) for _ in range(4))
    a_shape, b_shape = data.draw(st.sampled_from([
        ((rows, inner), (inner, cols)), ((batch, rows, inner), (batch, inner, cols)),
        ((1, rows, inner), (batch, inner, cols)), ((batch, rows, inner), (inner, cols)),
        ((rows, inner), (batch, inner, cols))]))
    a, b = data.draw(tensors(backend, a_shape)), data.draw(tensors(backend, b_shape))
    np.testing.assert_allclose((a @ b).to_numpy(), a.to_numpy() @ b.to_numpy(), rtol=1e-9, atol=1e-9)
    grad_check(lambda x, y: x @ y, a, b)


@given(st.data())
def test_comparisons_all_and_is_close(backend, data):
    a = data.draw(tensors(backend))
    b = data.draw(tensors(backend, a.shape))
    np.testing.assert_array_equal((a < b).to_numpy(), a.to_numpy() < b.to_numpy())
    np.testing.assert_array_equal((a > b).to_numpy(), a.to_numpy() > b.to_numpy())
    assert (a < b).dtype == (a == b).dtype == a.is_close(b).dtype == (a < b).all().dtype == minitorch.bool
    assert (a == a).all().item() is True and a.is_close(a + 1e-3).all().item() is True
    assert a.is_close(a + 1.0).all().item() is False and (a < b).sum().item() == np.sum(a.to_numpy() < b.to_numpy())
    np.testing.assert_array_equal((a < b).all(0, keepdim=True).to_numpy(), np.all(a.to_numpy() < b.to_numpy(), 0, keepdims=True))


def test_gradients_accumulate_and_reset(backend):
    x = tensor([1.0, 2.0, 3.0], backend=backend, requires_grad=True)
    (x * x).sum().backward()
    (x * 3.0).sum().backward()
    np.testing.assert_array_equal(x.grad.to_numpy(), [5.0, 7.0, 9.0])
    x.zero_grad_()
    assert x.grad is None
    (x * x).backward(ones(3, backend=backend))
    np.testing.assert_array_equal(x.grad.to_numpy(), [2.0, 4.0, 6.0])


def test_a_tensor_used_twice_and_a_constant_operand(backend):
    x = tensor([[1.0, -2.0]], backend=backend, requires_grad=True)
    constant = tensor([[3.0], [4.0]], backend=backend)
    y = (x * constant + x).sum()
    y.backward()
    assert constant.grad is None and y.item() == (3.0 + 4.0 + 2.0) * (1.0 - 2.0)
    np.testing.assert_array_equal(x.grad.to_numpy(), [[9.0, 9.0]])  # 3 + 4 from the product, 1 + 1 from x broadcast over two rows


def test_detach_and_requires_grad(backend):
    x = tensor([1.0], backend=backend, requires_grad=True)
    assert x.requires_grad and x.is_leaf() and not x.detach().requires_grad
    assert not (x.detach() * 2.0).requires_grad and (x * 2.0).requires_grad
    assert not x.requires_grad_(False).requires_grad


def test_no_grad_records_nothing_and_restores_recording(backend):
    "Inside no_grad() results have no history (as in torch); recording resumes after the block, also after an error."
    weights = tensor([1.0, -2.0, 3.0], backend=backend, requires_grad=True)
    with minitorch.no_grad():
        inside = (weights * 2.0).sigmoid().sum()
        with minitorch.no_grad():   # nested blocks
            nested = weights.view(1, 3) @ weights.view(3, 1)
        after_nested = weights * 1.0
    assert all(result.history is None and not result.requires_grad for result in (inside, nested, after_nested))
    with pytest.raises(ValueError):
        with minitorch.no_grad():
            raise ValueError("stop")
    decorated = minitorch.no_grad()(lambda x: x * x)
    assert not decorated(weights).requires_grad
    (weights * weights).sum().backward()   # recording again: the gradient is 2 * weights
    np.testing.assert_allclose(weights.grad.to_numpy(), [2.0, -4.0, 6.0])


def test_constructors(backend):
    array = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(tensor(array, backend=backend).to_numpy(), array)
    np.testing.assert_array_equal(tensor(array.tolist(), backend=backend).to_numpy(), array)
    np.testing.assert_array_equal(tensor(np.arange(6).reshape(3, 2), backend=backend).to_numpy(),
                                  np.arange(6.0).reshape(3, 2))
    assert tensor(array, backend=backend).backend is backend
    assert zeros((2, 3), backend=backend).to_numpy().tolist() == [[0.0] * 3] * 2
    assert ones(2, backend=backend).to_numpy().tolist() == [1.0, 1.0]
    assert rand((4,), backend=backend, seed=3).to_numpy().tolist() == rand((4,), backend=backend, seed=3).to_numpy().tolist()
    assert rand((4,), backend=backend, seed=3).to_numpy().tolist() != rand((4,), backend=backend, seed=4).to_numpy().tolist()
    assert tensor(7.0, backend=backend).item() == 7.0 and tensor([[7.0]], backend=backend).item() == 7.0


def test_printing(backend):
    x = tensor([[1.0, 2.0], [3.0, 4.5]], backend=backend)
    assert repr(x) == "tensor([[1.0000, 2.0000],\n        [3.0000, 4.5000]], shape=(2, 2))"
    x.requires_grad_()
    x.name = "x"
    assert repr(x).endswith("shape=(2, 2), name='x', requires_grad=True)") and str(x) == repr(x)
    assert "grad_fn=Mul" in repr(x * 2.0)
    long = repr(tensor(np.arange(1000.0), backend=backend))
    assert "..." in long and "999.0000" in long and "500.0000" not in long and "shape=(1000,)" in long


@given(shapes)
def test_to_numpy_round_trip(backend, shape):
    array = np.random.default_rng(len(shape)).normal(size=shape)
    np.testing.assert_array_equal(tensor(array, backend=backend).to_numpy(), array)
