"""Strided storage: positions, indices, permutations, broadcasting and layout validation."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tensor_strategies import as_numpy, broadcast_shapes, shapes, tensor_data

from minitorch.tensor_data import (IndexingError, TensorData, broadcast_index, index_to_position,
                                   shape_broadcast, strides_from_shape, to_index)

task_1 = pytest.mark.task("2.1")
task_2 = pytest.mark.task("2.2")


@task_1
@given(shapes)
def test_to_index_and_index_to_position_are_inverse(shape):
    strides = np.array(strides_from_shape(shape))
    out_index = np.zeros(len(shape), dtype=np.int64)
    for ordinal in range(math.prod(shape)):
        to_index(ordinal, np.array(shape), out_index)
        assert tuple(out_index) == np.unravel_index(ordinal, shape)
        assert index_to_position(out_index, strides) == ordinal


@task_1
@given(tensor_data())
def test_get_reads_through_the_strides_as_numpy_does(data):
    expected = as_numpy(data)
    assert all(data.get(index) == expected[index] for index in data.indices())
    assert list(data.indices()) == list(np.ndindex(*data.shape))


@task_1
@given(st.data())
def test_permute_matches_numpy_transpose(draw):
    data = draw.draw(tensor_data())
    order = draw.draw(st.permutations(range(data.dims)))
    permuted = data.permute(*order)
    assert permuted._storage is data._storage
    np.testing.assert_array_equal(as_numpy(permuted), np.transpose(as_numpy(data), order))


@task_1
def test_set_writes_through_a_view():
    data = TensorData(np.zeros(6), (2, 3))
    data.permute(1, 0).set((2, 1), 7.0)
    assert data.get((1, 2)) == 7.0 and data.is_contiguous() and not data.permute(1, 0).is_contiguous()


@task_1
@settings(max_examples=20)
@given(tensor_data())
def test_sample_is_a_valid_index(data):
    index = data.sample()
    assert len(index) == data.dims and data.get(index) == as_numpy(data)[index]


@task_2
@given(broadcast_shapes())
def test_shape_broadcast_matches_numpy(pair):
    assert shape_broadcast(*pair) == np.broadcast_shapes(*pair)


@task_2
@given(shapes, shapes)
def test_shape_broadcast_fails_exactly_when_numpy_does(shape_a, shape_b):
    try:
        expected = np.broadcast_shapes(shape_a, shape_b)
    except ValueError:
        with pytest.raises(IndexingError, match=r"\(.*\) and \(.*\) do not broadcast"):
            shape_broadcast(shape_a, shape_b)
    else:
        assert shape_broadcast(shape_a, shape_b) == expected


@task_2
@given(broadcast_shapes())
def test_broadcast_index_reads_what_numpy_broadcast_to_reads(pair):
    big = shape_broadcast(*pair)
    for small in pair:
        values = np.arange(float(math.prod(small))).reshape(small)
        spread = np.broadcast_to(values, big)
        out_index = np.zeros(len(small), dtype=np.int64)
        for index in np.ndindex(*big):
            broadcast_index(np.array(index), np.array(big), np.array(small), out_index)
            assert values[tuple(out_index)] == spread[index]


@pytest.mark.parametrize("storage_size, shape, strides, message", [
    (6, (2, 3), (4, 1), r"reaches position 6, past the storage of size 6"),
    (6, (2, 3), (3,), r"strides \(3,\) do not match shape \(2, 3\)"),
    (6, (2, 3), (3, -1), r"must be non-negative"),
    (6, (2, -3), None, r"shape \(2, -3\).*not integers >= 0: \[-3\]"),
    (6, (2, 1.5), None, r"not integers >= 0: \[1.5\]"),
])
def test_bad_layouts_are_refused_with_their_values(storage_size, shape, strides, message):
    with pytest.raises(IndexingError, match=message):
        TensorData(np.zeros(storage_size), shape, strides)


@pytest.mark.parametrize("index, message", [
    ((2, 0), r"index \(2, 0\) is out of range for shape \(2, 3\)"),
    ((0, -1), r"index \(0, -1\) is out of range"),
    ((0,), r"index \(0,\) has 1 entries, shape \(2, 3\) needs 2"),
    ((0, 0, 0), r"has 3 entries"),
])
def test_bad_indices_name_index_and_shape(index, message):
    data = TensorData(np.zeros(6), (2, 3))
    with pytest.raises(IndexingError, match=message):
        data.get(index)
    with pytest.raises(IndexingError, match=message):
        data.set(index, 1.0)


@pytest.mark.parametrize("order", [(0,), (0, 0), (0, 2), (1, 0, 2)])
def test_bad_permutations_name_the_order(order):
    with pytest.raises(IndexingError, match=r"permute order .* shape \(2, 3\)"):
        TensorData(np.zeros(6), (2, 3)).permute(*order)


@task_1
def test_long_tensors_print_their_edges():
    printed = TensorData(np.arange(1000.0), (10, 100)).to_string()
    assert "..." in printed and " 99.0000" in printed and "50.0000" not in printed
    assert TensorData(np.arange(6.0), (2, 3)).to_string() == "[[0.0000, 1.0000, 2.0000],\n [3.0000, 4.0000, 5.0000]]"
