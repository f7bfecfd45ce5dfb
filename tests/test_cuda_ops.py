"""The CUDA kernels (in Numba's simulator without a GPU) against chapter 2's Python loops, on random layouts."""
import importlib.util
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import cuda
from tensor_strategies import as_numpy, broadcast_shapes, tensor_data

import minitorch
from minitorch import CudaOps, IndexingError, TensorBackend, cuda_available, mm_practice, operators, sum_practice, tensor
from minitorch import cuda_ops
from minitorch.cuda_ops import (MAX_BLOCKS, MAX_DIMS, REDUCE_THREADS, TILE, CudaStorage, count_transfers, cuda_map,
                                cuda_matrix_multiply, cuda_reduce, cuda_scan, cuda_zip, map_launch,
                                matrix_multiply_launch, quick_thread_switches, reduce_launch, scan_launch)
from minitorch.nn import Linear, ReLU, Sequential, cross_entropy
from minitorch.optim import SGD
from minitorch.tensor_data import TensorData, shape_broadcast
from minitorch.tensor_ops import tensor_map, simple_matrix_multiply, tensor_reduce, tensor_scan, tensor_zip

pytestmark = pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU and NUMBA_ENABLE_CUDASIM unset")


def empty(shape):
    "A contiguous zero `TensorData` of `shape`."
    return TensorData(np.zeros(int(np.prod(shape))), shape)


def run(kernel, grid, *arguments):
    "Launch `kernel[grid]` on host arrays (Numba copies them to the GPU and back)."
    with quick_thread_switches():
        kernel[grid](*arguments)


@cuda.jit
def shared_sums_kernel(out, values):
    "Each block of 4 threads stores its values and their doubles in two shared arrays; thread 0 sums both."
    single = cuda.shared.array(4, numba.float64)
    double = cuda.shared.array(4, numba.float64)
    thread = cuda.threadIdx.x
    single[thread] = values[cuda.grid(1)]
    double[thread] = 2 * values[cuda.grid(1)]
    cuda.syncthreads()
    if thread == 0:
        out[cuda.blockIdx.x] = (single[0] + single[1] + single[2] + single[3]
                                + double[0] + double[1] + double[2] + double[3])


@pytest.mark.skipif(not cuda_ops.SIMULATED, reason="a race in Numba's CUDA simulator")
def test_simulated_threads_of_a_block_share_one_shared_array(monkeypatch):
    "A thread switch while the simulator creates a shared array must not give a thread an array of its own."
    values = np.arange(1.0, 9.0)
    create = np.empty

    def slow_create(*args, **kwargs):  # another thread runs while the array is being made
        time.sleep(0.005)
        return create(*args, **kwargs)

    monkeypatch.setattr(np, "empty", slow_create)
    out = np.zeros(2)
    run(shared_sums_kernel, (2, 4), out, values)
    monkeypatch.undo()
    np.testing.assert_array_equal(out, [3 * values[:4].sum(), 3 * values[4:].sum()])


@pytest.mark.skipif(not cuda_ops.SIMULATED, reason="a race in Numba's CUDA simulator")
def test_device_functions_run_while_other_code_changes_their_globals():
    "The simulator swaps its `cuda` into a device function's globals at each call: a name added meanwhile must not fail it."
    namespace = {"cuda": cuda, **{f"name_{number}": number for number in range(5000)}}  # a long walk through them
    exec("def twice(value):\n    return 2 * value\n", namespace)
    twice = cuda.jit(device=True)(namespace["twice"])

    @cuda.jit
    def kernel(out):
        total = 0.0
        for _ in range(50):
            total += twice(1.0)
        out[cuda.grid(1)] = total

    stop = threading.Event()

    def churn():  # another thread adds a name, then removes it, then adds it... all the while
        while not stop.is_set():
            if namespace.pop("coming_and_going", None) is None:
                namespace["coming_and_going"] = 1

    churner = threading.Thread(target=churn)
    churner.start()
    try:
        out = np.zeros(8)
        with quick_thread_switches():
            kernel[2, 4](out)
    finally:
        stop.set()
        churner.join()
    np.testing.assert_array_equal(out, np.full(8, 100.0))


@pytest.mark.skipif(not cuda_ops.SIMULATED, reason="a race in Numba's CUDA simulator")
def test_a_device_function_keeps_the_simulated_cuda_module_until_its_last_caller_leaves():
    "Two simulated threads in one device function: the first to leave must not put the real `cuda` back under the other."
    from numba.cuda.simulator import kernel, kernelapi

    namespace = {"cuda": cuda}
    exec("def synced():\n    cuda.syncthreads()\n", namespace)
    fake = object()
    first, second = (kernelapi.swapped_cuda_module(namespace["synced"], fake) for _ in range(2))
    first.__enter__()
    second.__enter__()   # a thread released by the same barrier enters the next call before the first has left
    first.__exit__(None, None, None)
    assert namespace["cuda"] is fake   # the second still looks `cuda.syncthreads` up through the fake module
    second.__exit__(None, None, None)
    assert namespace["cuda"] is cuda and kernel.swapped_cuda_module is kernelapi.swapped_cuda_module


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
    assert map_launch(10 ** 9)[0] == MAX_BLOCKS   # a big map gets the largest grid, and its threads loop
    result = empty(source.shape)
    run(cuda_map(operators.neg), (2, 4), *result.tuple(), *source.tuple())   # 8 threads for 300 elements
    np.testing.assert_array_equal(as_numpy(result), -as_numpy(source))


@settings(max_examples=8)
@given(st.data(), st.booleans())
def test_scan_kernel_matches_the_loops_on_every_dim(data, reverse):
    source = data.draw(tensor_data())
    dim = data.draw(st.integers(min_value=0, max_value=source.dims - 1))
    expected, result = empty(source.shape), empty(source.shape)
    tensor_scan(operators.add)(*expected.tuple(), *source.tuple(), dim, reverse)
    run(cuda_scan(operators.add), scan_launch(source.size // source.shape[dim], source.shape[dim]), *result.tuple(),
        *source.tuple(), dim, reverse)
    np.testing.assert_allclose(as_numpy(result), as_numpy(expected), rtol=1e-12, atol=1e-9)


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
    run(cuda_reduce(fn, start), reduce_launch(result.size, source.shape[dim]), *result.tuple(), *source.tuple(), dim)
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
    run(cuda_reduce(operators.add, 0.0), reduce_launch(result.size, shape[dim]), *result.tuple(), *source.tuple(), dim)
    np.testing.assert_allclose(as_numpy(result), values.sum(dim, keepdims=True), rtol=1e-10, atol=1e-10)


@pytest.mark.task("3.5")
def test_reduce_with_more_outputs_than_the_grid_holds():
    source = TensorData(np.arange(120.0), (40, 3))
    _, (lanes, _) = reduce_launch(40, 3)
    result = empty((40, 1))
    run(cuda_reduce(operators.add, 0.0), (2, (lanes, 1)), *result.tuple(), *source.tuple(), 1)   # 2 outputs a pass
    np.testing.assert_array_equal(as_numpy(result)[:, 0], np.arange(120.0).reshape(40, 3).sum(1))


@pytest.mark.task("3.6")
@settings(max_examples=12)
@given(st.data())
def test_tiled_matrix_multiply_matches_the_loops(data):
    batch = data.draw(st.integers(min_value=1, max_value=2))
    rows, inner, cols = (data.draw(st.integers(min_value=1, max_value=2 * TILE + 1)) for _ in range(3))
    a_batch, b_batch = data.draw(st.sampled_from([(batch, batch), (1, batch), (batch, 1)]))
    a = data.draw(tensor_data((a_batch, rows, inner), seeded=True))   # on a GPU, TILE is 32: too many values to draw
    b = data.draw(tensor_data((b_batch, inner, cols), seeded=True))
    expected, result = empty((batch, rows, cols)), empty((batch, rows, cols))
    simple_matrix_multiply(*expected.tuple(), *a.tuple(), *b.tuple())
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


def test_tensors_on_the_backend_keep_their_storage_on_the_gpu():
    backend = TensorBackend(CudaOps)
    values = np.arange(12.0).reshape(3, 4)
    with count_transfers() as made:
        x = tensor(values, backend=backend)
        zero = x.zeros((2, 2))
    assert (made.to_device_calls, made.to_device_bytes, made.to_host_calls) == (1, 96, 0)  # zeros: a memset
    assert isinstance(x._tensor._storage, CudaStorage) and isinstance(zero._tensor._storage, CudaStorage)
    ((x * x).sum(1, keepdim=True) + x.permute(1, 0).sum(0).view(3, 1)).sigmoid()  # every layout now cached on the GPU
    with count_transfers() as computed:
        result = ((x * x).sum(1, keepdim=True) + x.permute(1, 0).sum(0).view(3, 1)).sigmoid()
    assert (computed.to_host_calls, computed.to_device_calls) == (0, 0)
    assert isinstance(result._tensor._storage, CudaStorage)
    with count_transfers() as read:
        array = result.to_numpy()
    assert (read.to_host_calls, read.to_host_bytes) == (1, 24)
    expected = 1 / (1 + np.exp(-((values * values).sum(1) + values.sum(1))))
    np.testing.assert_allclose(array[:, 0], expected, rtol=1e-12)
    assert zero.to_numpy().tolist() == [[0.0, 0.0], [0.0, 0.0]]


def test_host_reads_and_writes_through_views_share_the_one_gpu_copy():
    backend = TensorBackend(CudaOps)
    x = tensor(np.arange(6.0).reshape(2, 3), backend=backend)
    transposed = x.permute(1, 0)
    assert transposed._tensor._storage is x._tensor._storage
    with count_transfers() as copies:
        transposed[2, 1] = 50.0
        assert x[1, 2] == 50.0 and x.view(6)[5] == 50.0
    assert (copies.to_device_calls, copies.to_device_bytes) == (1, 8)
    assert (copies.to_host_calls, copies.to_host_bytes) == (2, 16)
    with count_transfers() as printing:
        text = repr(transposed)
    assert "50.0000" in text and (printing.to_host_calls, printing.to_host_bytes) == (1, 48)


def test_moving_between_backends_and_mixing_them():
    backend, fast = TensorBackend(CudaOps), minitorch.FastBackend
    on_gpu = tensor(np.arange(4.0), backend=backend)
    on_cpu = tensor(on_gpu.to_numpy(), backend=fast)
    assert isinstance(on_cpu._tensor._storage, np.ndarray)
    with count_transfers() as copies:
        cpu_sum = on_cpu + on_gpu  # a CPU kernel reads the GPU tensor through a host copy
        gpu_sum = on_gpu + on_cpu  # a GPU kernel reads the CPU tensor through an uploaded copy
    assert copies.to_host_calls == 1 and copies.to_device_calls >= 1
    assert cpu_sum.backend is fast and gpu_sum.backend is backend
    np.testing.assert_array_equal(cpu_sum.to_numpy(), gpu_sum.to_numpy())
    with pytest.raises(TypeError, match=r"output \(shape \(4,\)\) is stored on the host"):
        backend.id_map(on_gpu, on_cpu)


def test_a_training_step_copies_only_the_loss_to_the_host():
    backend = TensorBackend(CudaOps)
    model = Sequential(Linear(4, 8, backend=backend, seed=1), ReLU(), Linear(8, 3, backend=backend, seed=2))
    points = tensor(np.random.default_rng(0).normal(size=(6, 4)), backend=backend)
    labels = np.array([0, 1, 2, 1, 0, 2])
    optimizer = SGD(model.parameters(), lr=0.5)

    def step() -> float:
        optimizer.zero_grad()
        loss = cross_entropy(model(points), labels)
        loss.backward()
        optimizer.step()
        return loss.item()

    losses = [step()]  # the first step uploads each shape and strides once
    with count_transfers() as copies:
        losses += [step(), step()]
    assert (copies.to_host_calls, copies.to_host_bytes) == (2, 16)  # loss.item(): 8 bytes a step, nothing else
    # to the GPU, each step: nll_loss's one-hot labels (6 x 3 floats, built on the host from `labels`) and five
    # float constants made on the host: mean's 1/N and SGD's lr once per parameter (4); backward's seed 1.0 is
    # `ones`, filled on the GPU
    assert (copies.to_device_calls, copies.to_device_bytes) == (2 * 6, 2 * (6 * 3 * 8 + 5 * 8))
    assert all(isinstance(parameter.value._tensor._storage, CudaStorage) for parameter in model.parameters())
    assert losses[2] < losses[1] < losses[0]


def test_kernels_are_launched_with_the_types_cuda_compile_compiles_them_for(monkeypatch):
    spec = importlib.util.spec_from_file_location("cuda_compile", Path(__file__).parent.parent / "tools" / "bench" / "cuda_compile.py")
    cuda_compile = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cuda_compile)
    launches, original = [], cuda_ops.launch

    def recording_launch(kernel, grid, datas, arguments=()):
        arrays = [array.copy_to_host() for data in datas for array in cuda_ops.kernel_arguments(data)]
        chosen = kernel[datas[0].dtype] if isinstance(kernel, cuda_ops.KernelPerDtype) else kernel
        launches.append((chosen, datas[0].dtype, [*arrays, *arguments]))
        original(kernel, grid, datas, arguments)

    monkeypatch.setattr(CudaOps, "launch", staticmethod(recording_launch))
    backend = TensorBackend(CudaOps)
    for dtype in cuda_compile.STORAGE_DTYPES:
        x = tensor(np.arange(6.0).reshape(2, 3), backend=backend, dtype=dtype)
        (x.permute(1, 0) @ x).sum(0).sigmoid() + x.cumsum(1)
    launched = {kernel.py_func.__name__ for kernel, _, _ in launches}
    assert launched == {"cuda_matrix_multiply", "reduce_kernel", "map_kernel", "zip_kernel", "scan_kernel"}
    assert {dtype for _, dtype, _ in launches} == set(cuda_compile.STORAGE_DTYPES)
    for kernel, dtype, values in launches:
        signature = cuda_compile.launch_signature(kernel.py_func, dtype)
        assert [numba.typeof(value) for value in values] == list(signature), (kernel.py_func.__name__, dtype)
    compiled = cuda_compile.backend_kernels(backend, type(cuda_ops.cuda_matrix_multiply), cuda_ops.KernelPerDtype)
    assert {"sigmoid_map:map_kernel float32", "add_reduce:reduce_kernel float32", "add_reduce:reduce_kernel float64",
            "add_scan:scan_kernel float64"} <= set(compiled)


def test_gradients_flow_between_backends_with_broadcasting():
    backend, fast = TensorBackend(CudaOps), minitorch.FastBackend
    on_gpu = tensor(np.arange(6.0).reshape(2, 3), backend=backend, requires_grad=True)
    on_cpu = tensor([[1.0, 2.0, 3.0]], backend=fast, requires_grad=True)
    ((on_gpu * on_cpu).sum() + (on_cpu * on_gpu).sum()).backward()
    np.testing.assert_array_equal(on_cpu.grad.to_numpy(), 2 * np.arange(6.0).reshape(2, 3).sum(0, keepdims=True))
    np.testing.assert_array_equal(on_gpu.grad.to_numpy(), 2 * np.array([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]]))
    assert on_cpu.grad.backend is fast and on_gpu.grad.backend is backend


def test_gpu_storage_refuses_slices_from_the_host():
    storage = CudaStorage.from_host(np.arange(3.0))
    with pytest.raises(TypeError, match=r"one element at a time, got position slice\(None, None, None\)"):
        storage[:] = 1.0
    with pytest.raises(TypeError, match=r"got position slice\(0, 2, None\): copy it all with to_host\(\)"):
        storage[0:2]
    assert storage[2] == 2.0 and storage.to_host().tolist() == [0.0, 1.0, 2.0]


def test_practice_kernels_run_on_tensors_in_gpu_memory():
    backend = TensorBackend(CudaOps)
    values = np.random.default_rng(3).normal(size=40)
    block_sums = sum_practice(tensor(values, backend=backend))
    assert isinstance(block_sums._tensor._storage, CudaStorage)
    np.testing.assert_allclose(block_sums.to_numpy(), [values[:32].sum(), values[32:].sum()], rtol=1e-12)
    left, right = np.arange(9.0).reshape(3, 3), np.eye(3) * 2
    product = mm_practice(tensor(left, backend=backend), tensor(right.T, backend=backend).permute(1, 0))
    np.testing.assert_allclose(product.to_numpy(), left @ right, rtol=1e-12)
