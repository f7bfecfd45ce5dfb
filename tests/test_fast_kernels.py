"""The compiled kernels of chapter 3 against the chapter-2 Python-loop kernels, on random layouts and broadcasting."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tensor_strategies import as_numpy, broadcast_shapes, tensor_data

from minitorch import fast_ops, operators, tensor, tensor_ops
from minitorch.tensor_data import TensorData, shape_broadcast

MAP_FUNCTIONS = [operators.neg, operators.sigmoid, operators.relu, operators.exp, operators.id]
ZIP_FUNCTIONS = [operators.add, operators.mul, operators.lt, operators.eq, operators.relu_back]
few_examples = settings(max_examples=40)


def empty(shape):
    "A contiguous zero `TensorData` of `shape`."
    return TensorData(np.zeros(int(np.prod(shape))), shape)


def stale(shape):
    "A contiguous `TensorData` of `shape` full of NaN: a kernel must overwrite every entry, not add to it."
    return TensorData(np.full(int(np.prod(shape)), np.nan), shape)


def both(factory_name, fn, out_shape, *inputs, extra=()):
    "Outputs of the chapter-2 and the fast kernel `factory_name(fn)` over `inputs`, as arrays."
    outputs = []
    for module in (tensor_ops, fast_ops):
        out = empty(out_shape)
        getattr(module, factory_name)(fn)(*out.tuple(), *(part for data in inputs for part in data.tuple()), *extra)
        outputs.append(as_numpy(out))
    return outputs


@pytest.mark.task("3.1")
@few_examples
@given(st.data(), st.sampled_from(MAP_FUNCTIONS))
def test_map_matches_the_simple_kernel(draw, fn):
    small, big = draw.draw(broadcast_shapes())
    data = draw.draw(tensor_data(small))
    expected, fast = both("tensor_map", fn, shape_broadcast(small, big), data)
    np.testing.assert_array_equal(fast, expected)


@pytest.mark.task("3.1")
@few_examples
@given(st.data(), st.sampled_from(ZIP_FUNCTIONS))
def test_zip_matches_the_simple_kernel(draw, fn):
    shape_a, shape_b = draw.draw(broadcast_shapes())
    a, b = draw.draw(tensor_data(shape_a)), draw.draw(tensor_data(shape_b))
    expected, fast = both("tensor_zip", fn, shape_broadcast(shape_a, shape_b), a, b)
    np.testing.assert_array_equal(fast, expected)


@pytest.mark.task("3.1")
@few_examples
@given(st.data(), st.sampled_from([operators.add, operators.mul]))
def test_reduce_matches_the_simple_kernel(draw, fn):
    data = draw.draw(tensor_data())
    dim = draw.draw(st.integers(min_value=0, max_value=data.dims - 1))
    out_shape = tuple(1 if d == dim else size for d, size in enumerate(data.shape))
    expected, fast = both("tensor_reduce", fn, out_shape, data, extra=(dim,))
    np.testing.assert_allclose(fast, expected, rtol=1e-12, atol=1e-9)


@few_examples
@given(st.data(), st.sampled_from([operators.add, operators.max]), st.booleans())
def test_scan_matches_the_simple_kernel(draw, fn, reverse):
    data = draw.draw(tensor_data())
    dim = draw.draw(st.integers(min_value=0, max_value=data.dims - 1))
    expected, fast = both("tensor_scan", fn, data.shape, data, extra=(dim, reverse))
    np.testing.assert_allclose(fast, expected, rtol=1e-12, atol=1e-9)


@pytest.mark.task("3.1")
@few_examples
@given(st.integers(1, 5), st.integers(1, 700), st.sampled_from([np.float32, np.float64]),
       st.sampled_from(["add", "max"]), st.booleans(), st.booleans(), st.integers(0, 2**32 - 1))
def test_long_lanes_fold_as_numpy_does(lines, length, dtype, name, transposed, with_nan, seed):
    "`fold_lane`'s rows of `LANE_WIDTH` partial totals (adjacent lanes) and `reduce_lane` (strided) against NumPy."
    rng = np.random.default_rng(seed)
    values = rng.normal(size=(lines, length)).astype(dtype)
    if with_nan:
        values[rng.integers(lines), rng.integers(length)] = np.nan
    data = TensorData(values.ravel(), values.shape)
    if transposed:  # the same numbers laid out column-major: each lane now steps by `lines`
        data = TensorData(np.ascontiguousarray(values.T).ravel(), (length, lines)).permute(1, 0)
    fn, start, expected = {"add": (operators.add, 0.0, values.sum(1, dtype=np.float64)),
                           "max": (operators.max, -np.inf, values.max(1))}[name]
    out = TensorData(np.full(lines, start, dtype), (lines, 1))
    # the lane code is the same on one thread and on many (test_reduce_matches_the_simple_kernel runs the threaded
    # kernel); the single-threaded twin is the one other tests compile already, for these dtypes and functions
    fast_ops.single_threaded(fast_ops.tensor_reduce(fn))(*out.tuple(), *data.tuple(), 1)
    np.testing.assert_allclose(out._storage, expected, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-4)


@pytest.mark.task("3.1")
def test_contiguous_fast_path_on_large_inputs():
    rng = np.random.default_rng(5)
    a, b = (TensorData(rng.normal(size=300_000), (300, 1000)) for _ in range(2))
    out = empty((300, 1000))
    fast_ops.tensor_zip(operators.add)(*out.tuple(), *a.tuple(), *b.tuple())
    np.testing.assert_array_equal(as_numpy(out), as_numpy(a) + as_numpy(b))
    fast_ops.tensor_map(operators.neg)(*out.tuple(), *a.tuple())
    np.testing.assert_array_equal(as_numpy(out), -as_numpy(a))


def strided(rng, shape, order):
    "A `TensorData` of `shape` holding normal values, laid out in memory with its dims in `order` (outermost first)."
    laid_out = TensorData(rng.normal(size=int(np.prod(shape))), tuple(shape[dim] for dim in order))
    return laid_out.permute(*np.argsort(order).tolist())


@pytest.mark.task("3.1")
@pytest.mark.parametrize("a_shape, a_order, b_shape, b_order", [
    ((3, 5000), (0, 1), (5000,), (0,)),              # a row broadcast: lines of 5000 cut by chunks of 4096
    ((2, 3000, 1), (0, 1, 2), (1,), (0,)),           # a number times a column: one line of 6000, two chunks
    ((12, 64, 1), (0, 1, 2), (12, 64, 1), (0, 1, 2)),  # same layout: the fast path
    ((12, 64, 1), (0, 1, 2), (1,), (0,)),            # a row statistic times a number: one line of 768
    ((70, 130), (1, 0), (70, 130), (1, 0)),          # both transposed: lines of 70 with step 130
    ((70, 130), (1, 0), (1, 130), (0, 1)),           # a transposed input plus a broadcast row
    ((4, 1, 6, 2500), (0, 1, 2, 3), (4, 1, 1, 2500), (2, 0, 1, 3)),  # size-1 dims inside, chunks mid-line
])
def test_lines_merge_dims_and_chunks_split_lines(a_shape, a_order, b_shape, b_order):
    rng = np.random.default_rng(sum(a_shape))
    a, b = strided(rng, a_shape, a_order), strided(rng, b_shape, b_order)
    out_shape = shape_broadcast(a_shape, b_shape)
    for kernel in (fast_ops.tensor_zip(operators.mul), fast_ops.single_threaded(fast_ops.tensor_zip(operators.mul))):
        out = stale(out_shape)
        kernel(*out.tuple(), *a.tuple(), *b.tuple())
        np.testing.assert_array_equal(as_numpy(out), as_numpy(a) * as_numpy(b))
    out = stale(out_shape)
    fast_ops.tensor_map(operators.neg)(*out.tuple(), *b.tuple())
    np.testing.assert_array_equal(as_numpy(out), np.broadcast_to(-as_numpy(b), out_shape))


@pytest.mark.task("3.1")
@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(1, 9), min_size=2, max_size=5), st.integers(33, 70), st.permutations(range(6)),
       st.randoms(use_true_random=False))
def test_permuted_copies_over_many_chunks(outer, last, order, rand):
    "Copies through permuted views of 4097 or more numbers: chunks start mid-line, and `next_line` carries across dims."
    shape = [*outer, last]
    while np.prod(shape) <= fast_ops.SMALLEST_CHUNK:  # at least two chunks
        shape[0] += 1
    order = [dim for dim in order if dim < len(shape)]
    rng = np.random.default_rng(rand.randrange(2**32))
    source = strided(rng, shape, order)
    for kernel in (fast_ops.tensor_map(operators.id), fast_ops.single_threaded(fast_ops.tensor_map(operators.id))):
        out = stale(shape)
        kernel(*out.tuple(), *source.tuple())
        np.testing.assert_array_equal(as_numpy(out), as_numpy(source))
    b = strided(rng, shape[1:], order[:0] + [dim - 1 for dim in order if dim > 0])  # broadcast over dim 0
    out = stale(shape)
    fast_ops.tensor_zip(operators.add)(*out.tuple(), *source.tuple(), *b.tuple())
    np.testing.assert_array_equal(as_numpy(out), as_numpy(source) + as_numpy(b))


@few_examples
@given(st.data())
def test_line_jumps_move_to_each_lines_first_element(draw):
    "Walking the lines with `next_line` and `line_jumps` reaches the positions chapter 2's index arithmetic gives."
    small, big = draw.draw(broadcast_shapes())
    out_shape = np.array(shape_broadcast(small, big))
    data = draw.draw(tensor_data(small))
    first_dim = draw.draw(st.integers(0, len(out_shape)))
    jumps = fast_ops.line_jumps(out_shape, data._shape, data._strides, first_dim)
    out_index, index = np.zeros(len(out_shape), dtype=np.int64), np.zeros(len(small), dtype=np.int64)
    position, lines = 0, int(np.prod(out_shape[:first_dim]))
    for line in range(lines):
        tensor_ops.broadcast_index(out_index, out_shape, data._shape, index)
        assert position == tensor_ops.index_to_position(index, data._strides), (line, out_index)
        if line < lines - 1:
            position += jumps[fast_ops.next_line(out_index, out_shape, first_dim)]


def test_line_start_finds_the_dims_a_tensor_walks_with_one_step():
    def start(out_shape, data):
        return fast_ops.line_start(np.array(out_shape), data._shape, data._strides)

    rng = np.random.default_rng(0)
    assert start((2, 3, 4), strided(rng, (2, 3, 4), (0, 1, 2))) == 0    # contiguous: every dim
    assert start((2, 3, 4), strided(rng, (2, 3, 4), (2, 0, 1))) == 2    # last dim outermost in memory
    assert start((2, 3, 4), strided(rng, (4,), (0,))) == 2              # a row: only the last dim (then step 0)
    assert start((2, 3, 4), strided(rng, (1,), (0,))) == 0              # a number: step 0 everywhere
    assert start((5, 1, 1), strided(rng, (5, 1, 1), (1, 2, 0))) == 0    # dims of size 1 never break a run


@pytest.mark.task("3.2")
@few_examples
@given(st.data())
def test_matrix_multiply_matches_the_simple_kernel(draw):
    batch, rows, inner, cols = (draw.draw(st.integers(min_value=1, max_value=4)) for _ in range(4))
    a_batch, b_batch = draw.draw(st.sampled_from([(batch, batch), (1, batch), (batch, 1)]))
    a = draw.draw(tensor_data((a_batch, rows, inner)))
    b = draw.draw(tensor_data((b_batch, inner, cols)))
    outputs = []
    for kernel in (tensor_ops.simple_matrix_multiply, fast_ops.blocked_matrix_multiply):
        out = stale((batch, rows, cols))
        kernel(*out.tuple(), *a.tuple(), *b.tuple())
        outputs.append(as_numpy(out))
    np.testing.assert_allclose(outputs[1], outputs[0], rtol=1e-12, atol=1e-9)


@pytest.mark.task("3.2")
@pytest.mark.parametrize("a_shape, b_shape", [((1, 17, 130), (3, 130, 270)), ((2, 40, 300), (2, 300, 5)),
                                              ((3, 1, 260), (1, 260, 1))])
@pytest.mark.parametrize("transpose_b", [False, True])
def test_matrix_multiply_across_block_edges(a_shape, b_shape, transpose_b):
    rng = np.random.default_rng(sum(a_shape) + sum(b_shape))
    a = TensorData(rng.normal(size=int(np.prod(a_shape))), a_shape)
    if transpose_b:
        b = TensorData(rng.normal(size=int(np.prod(b_shape))), (b_shape[0], b_shape[2], b_shape[1])).permute(0, 2, 1)
    else:
        b = TensorData(rng.normal(size=int(np.prod(b_shape))), b_shape)
    out = empty((max(a_shape[0], b_shape[0]), a_shape[1], b_shape[2]))
    fast_ops.blocked_matrix_multiply(*out.tuple(), *a.tuple(), *b.tuple())
    np.testing.assert_allclose(as_numpy(out), as_numpy(a) @ as_numpy(b), rtol=1e-10, atol=1e-10)


@few_examples
@given(st.data())
def test_fast_matrix_multiply_matches_numpy(draw):
    batch, rows, cols = (draw.draw(st.integers(min_value=1, max_value=9)) for _ in range(3))
    inner = draw.draw(st.sampled_from([1, 2, 3, 4, 5, 7, 21]))  # past DEPTH_BLOCK: the tests below
    a_batch, b_batch = draw.draw(st.sampled_from([(batch, batch), (1, batch), (batch, 1)]))
    a = draw.draw(tensor_data((a_batch, rows, inner)))
    b = draw.draw(tensor_data((b_batch, inner, cols)))
    for kernel in (fast_ops.fast_matrix_multiply, fast_ops.single_threaded(fast_ops.fast_matrix_multiply)):
        out = stale((batch, rows, cols))
        kernel(*out.tuple(), *a.tuple(), *b.tuple())
        np.testing.assert_allclose(as_numpy(out), as_numpy(a) @ as_numpy(b), rtol=1e-10, atol=1e-9)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("cols_in_tiles", [0.25, 0.5, 0.75, 1, 1.25, 1.5, 2.5])
def test_fast_matrix_multiply_tiles_of_every_width(dtype, cols_in_tiles):
    "Full, half, quarter and narrow register tiles, rows past a whole group of 3 or 4, two depth blocks, strided output columns."
    columns = fast_ops.TILE_BYTES // np.dtype(dtype).itemsize  # a full tile's width for this dtype
    rows, depth, cols = 11, fast_ops.DEPTH_BLOCK + 3, int(cols_in_tiles * columns) + 1
    rng = np.random.default_rng(cols)
    a_values = rng.normal(size=(2, rows, depth)).astype(dtype)
    b_values = rng.normal(size=(1, depth, cols)).astype(dtype)
    a, b = TensorData(a_values.ravel(), a_values.shape), TensorData(b_values.ravel(), b_values.shape)
    expected = a_values @ b_values
    tolerance = 1e-4 if dtype == np.float32 else 1e-10
    for out in (TensorData(np.full(2 * rows * cols, np.nan, dtype), (2, rows, cols)),
                TensorData(np.full(2 * rows * cols, np.nan, dtype), (2, cols, rows)).permute(0, 2, 1)):
        for kernel in (fast_ops.fast_matrix_multiply, fast_ops.single_threaded(fast_ops.fast_matrix_multiply)):
            kernel(*out.tuple(), *a.tuple(), *b.tuple())
            np.testing.assert_allclose(as_numpy(out), expected, rtol=tolerance, atol=tolerance * depth)


@pytest.mark.parametrize("a_shape, b_shape", [((1, 33, 257), (2, 257, 7)), ((2, 64, 784), (1, 784, 130)),
                                              ((3, 1, 5), (3, 5, 1)), ((1, 70, 513), (1, 513, 3)),
                                              ((2, 6, 9), (1, 9, 2 * fast_ops.COLUMN_BLOCK + 3))])
@pytest.mark.parametrize("transposed", ["none", "a", "b"])
def test_fast_matrix_multiply_across_panel_block_and_depth_edges(a_shape, b_shape, transposed):
    rng = np.random.default_rng(sum(a_shape) + sum(b_shape))

    def laid_out(shape, transpose):
        if not transpose:
            return TensorData(rng.normal(size=int(np.prod(shape))), shape)
        return TensorData(rng.normal(size=int(np.prod(shape))), (shape[0], shape[2], shape[1])).permute(0, 2, 1)

    a, b = laid_out(a_shape, transposed == "a"), laid_out(b_shape, transposed == "b")
    out = stale((max(a_shape[0], b_shape[0]), a_shape[1], b_shape[2]))
    fast_ops.fast_matrix_multiply(*out.tuple(), *a.tuple(), *b.tuple())
    np.testing.assert_allclose(as_numpy(out), as_numpy(a) @ as_numpy(b), rtol=1e-10, atol=1e-10)


def test_kernel_factories_compile_once_per_function():
    assert fast_ops.tensor_map(operators.neg) is fast_ops.tensor_map(operators.neg)
    assert fast_ops.tensor_zip(operators.add) is not fast_ops.tensor_zip(operators.mul)


def transposed_view(values, backend):
    "A tensor of `values` whose last two dims are a transposed view (columns not adjacent), as in a backward pass."
    order = (*range(values.ndim - 2), values.ndim - 1, values.ndim - 2)
    return tensor(np.ascontiguousarray(values.transpose(order)), backend=backend).permute(*order)


@pytest.mark.task("3.2")
@pytest.mark.parametrize("a_shape, b_shape", [((5, 7), (7, 3)), ((64, 784), (784, 128)), ((2, 17, 130), (130, 9)),
                                              ((1, 40, 300), (3, 300, 5))])
def test_course_backend_multiplies_with_your_kernel_as_the_tuned_one_does(a_shape, b_shape):
    rng = np.random.default_rng(a_shape[-1])
    a_values, b_values = rng.normal(size=a_shape), rng.normal(size=b_shape)
    for b_of in (lambda backend: tensor(b_values, backend=backend), lambda backend: transposed_view(b_values, backend)):
        yours, tuned = ((tensor(a_values, backend=backend) @ b_of(backend)).to_numpy()
                        for backend in (fast_ops.CourseBackend, fast_ops.FastBackend))
        np.testing.assert_allclose(yours, a_values @ b_values, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(yours, tuned, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("backend, kernel", [(fast_ops.CourseBackend, "blocked_matrix_multiply"),
                                             (fast_ops.FastBackend, "fast_matrix_multiply")])
@pytest.mark.parametrize("size", [4, 128])  # one thread, and every thread
def test_each_backend_runs_its_own_matrix_multiply(monkeypatch, backend, kernel, size):
    asked, kernel_for = [], fast_ops.kernel_for

    def recording(chosen, work):
        asked.append(chosen)
        return kernel_for(chosen, work)

    monkeypatch.setattr(fast_ops, "kernel_for", recording)
    a = tensor(np.ones((size, size)), backend=backend)
    assert np.array_equal((a @ a).to_numpy(), np.full((size, size), float(size)))
    assert asked == [getattr(fast_ops, kernel)]
