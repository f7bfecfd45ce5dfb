"""The CUDA kernels (in Numba's simulator without a GPU) against chapter 2's Python loops, on random layouts."""
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tensor_strategies import as_numpy, broadcast_shapes, tensor_data

from minitorch import CudaOps, IndexingError, TensorBackend, cuda_available, mm_practice, operators, sum_practice, tensor
from minitorch.cuda_ops import (MAX_DIMS, REDUCE_THREADS, TILE, cuda_map, cuda_matrix_multiply, cuda_reduce, cuda_zip,
                                map_launch, matrix_multiply_launch, quick_thread_switches, reduce_launch)
from minitorch.tensor_data import TensorData, shape_broadcast
from minitorch.tensor_ops import tensor_map, tensor_matrix_multiply, tensor_reduce, tensor_zip

pytestmark = pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU and NUMBA_ENABLE_CUDASIM unset")


def empty(shape):
    "A contiguous zero `TensorData` of `shape`."
    return TensorData(np.zeros(int(np.prod(shape))), shape)


def run(kernel, grid, *arguments):
    "Launch `kernel[grid]` on host arrays (Numba copies them to the GPU and back)."
    with quick_thread_switches():
        kernel[grid](*arguments)


@pytest.mark.task("3.3")
@settings(max_examples=10)
@given(st.integers(min_value=1, max_value=100))
def test_sum_practice_sums_each_block_of_32(size):
    values = np.random.default_rng(size).normal(size=size)
    expected = [values[start:start + 32].sum() for start in range(0, size, 32)]
    np.testing.assert_allclose(sum_practice(tensor(values)).to_numpy(), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.task("3.3")
@settings(max_examples=8)
@given(st.integers(min_value=1, max_value=7), st.booleans())
def test_mm_practice_multiplies_square_matrices(side, transposed):
    rng = np.random.default_rng(side)
    left, right = rng.normal(size=(side, side)), rng.normal(size=(side, side))
    b = tensor(right.T).permute(1, 0) if transposed else tensor(right)
    np.testing.assert_allclose(mm_practice(tensor(left), b).to_numpy(), left @ right, rtol=1e-12, atol=1e-12)


def test_practice_kernels_reject_shapes_they_cannot_handle():
    with pytest.raises(IndexingError, match=r"1-D tensor, got shape \(2, 3\)"):
        sum_practice(tensor(np.zeros((2, 3))))
    with pytest.raises(IndexingError, match=r"side <= 32, got shapes \(2, 2\) and \(3, 3\)"):
        mm_practice(tensor(np.zeros((2, 2))), tensor(np.zeros((3, 3))))
    with pytest.raises(IndexingError, match=r"got shapes \(33, 33\) and \(33, 33\)"):
        mm_practice(tensor(np.zeros((33, 33))), tensor(np.zeros((33, 33))))


@pytest.mark.task("3.4")
@settings(max_examples=15)
@given(st.data())
def test_map_kernel_matches_the_loops_with_broadcasting(data):
    small, big = data.draw(broadcast_shapes())
    big = shape_broadcast(small, big)
    source = data.draw(tensor_data(small))
    expected, result = empty(big), empty(big)
    tensor_map(operators.sigmoid)(*expected.tuple(), *source.tuple())
    run(cuda_map(operators.sigmoid), map_launch(result.size), *result.tuple(), *source.tuple())
    np.testing.assert_allclose(as_numpy(result), as_numpy(expected), rtol=1e-15)


@pytest.mark.task("3.4")
@settings(max_examples=15)
@given(st.data())
def test_zip_kernel_matches_the_loops_with_broadcasting(data):
    shape_a, shape_b = data.draw(broadcast_shapes())
    a, b = data.draw(tensor_data(shape_a)), data.draw(tensor_data(shape_b))
    out_shape = shape_broadcast(shape_a, shape_b)
    expected, result = empty(out_shape), empty(out_shape)
    tensor_zip(operators.add)(*expected.tuple(), *a.tuple(), *b.tuple())
    run(cuda_zip(operators.add), map_launch(result.size), *result.tuple(), *a.tuple(), *b.tuple())
    np.testing.assert_array_equal(as_numpy(result), as_numpy(expected))


@pytest.mark.task("3.4")
def test_map_walks_past_the_grid_with_a_grid_stride_loop():
    source = TensorData(np.arange(300.0), (3, 100)).permute(1, 0)
    blocks, threads = map_launch(source.size)
    assert blocks * threads < source.size or not cuda_available()
    result = empty(source.shape)
    run(cuda_map(operators.neg), (blocks, threads), *result.tuple(), *source.tuple())
    np.testing.assert_array_equal(as_numpy(result), -as_numpy(source))


@pytest.mark.task("3.5")
@settings(max_examples=15)
@given(st.data())
def test_reduce_kernel_matches_the_loops_on_every_dim(data):
    source = data.draw(tensor_data())
    dim = data.draw(st.integers(min_value=0, max_value=source.dims - 1))
    fn, start = data.draw(st.sampled_from([(operators.add, 0.0), (operators.mul, 1.0)]))
    reduced = tuple(1 if d == dim else size for d, size in enumerate(source.shape))
    expected, result = empty(reduced), empty(reduced)
    expected._storage[:] = start
    tensor_reduce(fn)(*expected.tuple(), *source.tuple(), dim)
    run(cuda_reduce(fn), reduce_launch(result.size, source.shape[dim]), *result.tuple(), *source.tuple(), dim, start)
    np.testing.assert_allclose(as_numpy(result), as_numpy(expected), rtol=1e-12, atol=1e-9)


@pytest.mark.task("3.5")
@pytest.mark.parametrize("shape, dim", [((1500,), 0), ((2, 2100), 1), ((2100, 2), 0)])
def test_reduce_over_a_dimension_longer_than_a_block(shape, dim):
    values = np.random.default_rng(len(shape)).normal(size=shape)
    source = TensorData(values.ravel(), shape)
    _, (lanes, _) = reduce_launch(1, shape[dim])
    assert lanes == REDUCE_THREADS < 1024 < shape[dim]
    reduced = tuple(1 if d == dim else size for d, size in enumerate(shape))
    result = empty(reduced)
    run(cuda_reduce(operators.add), reduce_launch(result.size, shape[dim]), *result.tuple(), *source.tuple(), dim, 0.0)
    np.testing.assert_allclose(as_numpy(result), values.sum(dim, keepdims=True), rtol=1e-10, atol=1e-10)


@pytest.mark.task("3.5")
def test_reduce_with_more_outputs_than_the_grid_holds():
    source = TensorData(np.arange(120.0), (40, 3))
    blocks, (lanes, slots) = reduce_launch(40, 3)
    assert blocks * slots < 40
    result = empty((40, 1))
    run(cuda_reduce(operators.add), (blocks, (lanes, slots)), *result.tuple(), *source.tuple(), 1, 0.0)
    np.testing.assert_array_equal(as_numpy(result)[:, 0], np.arange(120.0).reshape(40, 3).sum(1))


@pytest.mark.task("3.6")
@settings(max_examples=12)
@given(st.data())
def test_tiled_matrix_multiply_matches_the_loops(data):
    batch = data.draw(st.integers(min_value=1, max_value=2))
    rows, inner, cols = (data.draw(st.integers(min_value=1, max_value=2 * TILE + 1)) for _ in range(3))
    a_batch, b_batch = data.draw(st.sampled_from([(batch, batch), (1, batch), (batch, 1)]))
    a = data.draw(tensor_data((a_batch, rows, inner)))
    b = data.draw(tensor_data((b_batch, inner, cols)))
    expected, result = empty((batch, rows, cols)), empty((batch, rows, cols))
    tensor_matrix_multiply(*expected.tuple(), *a.tuple(), *b.tuple())
    run(cuda_matrix_multiply, matrix_multiply_launch(result.shape), *result.tuple(), *a.tuple(), *b.tuple())
    np.testing.assert_allclose(as_numpy(result), as_numpy(expected), rtol=1e-12, atol=1e-9)


def test_launch_checks_dims_and_grid_limits():
    backend = TensorBackend(CudaOps)
    deep = tensor(np.zeros((1,) * (MAX_DIMS + 1)), backend=backend)
    with pytest.raises(IndexingError, match=rf"at most {MAX_DIMS} dims, got shapes \[\(1, 1,"):
        -deep
    with pytest.raises(IndexingError, match=r"shape \(70000, 1, 1\) needs a grid of \(1, 1, 70000\) blocks"):
        matrix_multiply_launch((70000, 1, 1))


def test_without_gpu_or_simulator_the_backend_says_how_to_enable_the_simulator():
    probe = ("import minitorch\n"
             "from numba import cuda\n"
             "if cuda.is_available():\n"
             "    print('GPU present')\n"
             "else:\n"
             "    for attempt in (lambda: minitorch.TensorBackend(minitorch.CudaOps),\n"
             "                    lambda: minitorch.sum_practice(minitorch.ones(3))):\n"
             "        try:\n"
             "            attempt()\n"
             "        except minitorch.CudaUnavailableError as error:\n"
             "            print('refused:', error)\n")
    environment = {name: value for name, value in os.environ.items() if name != "NUMBA_ENABLE_CUDASIM"}
    answer = subprocess.run([sys.executable, "-c", probe], env=environment, capture_output=True, text=True, timeout=120)
    assert answer.returncode == 0, answer.stderr
    if "GPU present" in answer.stdout:
        pytest.skip("a CUDA GPU is present: the backend works without the simulator")
    refusals = [line for line in answer.stdout.splitlines() if line.startswith("refused:")]
    assert len(refusals) == 2, answer.stdout
    assert all("NUMBA_ENABLE_CUDASIM=1" in line and "before minitorch or numba is imported" in line for line in refusals)
