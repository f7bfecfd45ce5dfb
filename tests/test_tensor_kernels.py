"""The Python-loop kernels on raw strided storage, against NumPy, with random layouts and broadcasting."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tensor_strategies import as_numpy, broadcast_shapes, tensor_data

from minitorch import operators
from minitorch.tensor_data import TensorData, shape_broadcast
from minitorch.tensor_ops import tensor_map, simple_matrix_multiply, tensor_reduce, tensor_scan, tensor_zip

pytestmark = pytest.mark.task("2.3")


def empty(shape):
    "A contiguous zero `TensorData` of `shape`."
    return TensorData(np.zeros(int(np.prod(shape))), shape)


@given(tensor_data())
def test_map_reads_any_layout(data):
    out = empty(data.shape)
    tensor_map(operators.neg)(*out.tuple(), *data.tuple())
    np.testing.assert_array_equal(as_numpy(out), -as_numpy(data))


@given(st.data())
def test_map_broadcasts_into_a_larger_output(draw):
    small, big = draw.draw(broadcast_shapes())
    big = shape_broadcast(small, big)
    data = draw.draw(tensor_data(small))
    out = empty(big)
    tensor_map(operators.id)(*out.tuple(), *data.tuple())
    np.testing.assert_array_equal(as_numpy(out), np.broadcast_to(as_numpy(data), big))


@given(st.data())
def test_zip_broadcasts_both_inputs(draw):
    shape_a, shape_b = draw.draw(broadcast_shapes())
    a, b = draw.draw(tensor_data(shape_a)), draw.draw(tensor_data(shape_b))
    out = empty(shape_broadcast(shape_a, shape_b))
    tensor_zip(operators.mul)(*out.tuple(), *a.tuple(), *b.tuple())
    np.testing.assert_array_equal(as_numpy(out), as_numpy(a) * as_numpy(b))


@given(st.data())
def test_reduce_folds_one_dim_and_keeps_it(draw):
    data = draw.draw(tensor_data())
    dim = draw.draw(st.integers(min_value=0, max_value=data.dims - 1))
    out = empty(tuple(1 if d == dim else size for d, size in enumerate(data.shape)))
    tensor_reduce(operators.add)(*out.tuple(), *data.tuple(), dim)
    np.testing.assert_allclose(as_numpy(out), as_numpy(data).sum(dim, keepdims=True), rtol=1e-12, atol=1e-9)


@given(st.data(), st.booleans())
def test_scan_writes_running_totals_along_one_dim_either_way(draw, reverse):
    data = draw.draw(tensor_data())
    dim = draw.draw(st.integers(min_value=0, max_value=data.dims - 1))
    out = empty(data.shape)
    tensor_scan(operators.add)(*out.tuple(), *data.tuple(), dim, reverse)
    values = as_numpy(data)
    expected = np.flip(np.cumsum(np.flip(values, dim), dim), dim) if reverse else np.cumsum(values, dim)
    np.testing.assert_allclose(as_numpy(out), expected, rtol=1e-12, atol=1e-9)


@given(st.data())
def test_matrix_multiply_with_broadcast_batches(draw):
    batch, rows, inner, cols = (draw.draw(st.integers(min_value=1, max_value=3)) for _ in range(4))
    a_batch, b_batch = draw.draw(st.sampled_from([(batch, batch), (1, batch), (batch, 1)]))
    a = draw.draw(tensor_data((a_batch, rows, inner)))
    b = draw.draw(tensor_data((b_batch, inner, cols)))
    out = empty((batch, rows, cols))
    simple_matrix_multiply(*out.tuple(), *a.tuple(), *b.tuple())
    np.testing.assert_allclose(as_numpy(out), as_numpy(a) @ as_numpy(b), rtol=1e-12, atol=1e-9)
