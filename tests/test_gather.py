"""Looking up by id (`25_tensor_indexing`, kernels in `21`, `30`, `32`): `gather`, `index_select`, `t[ids]` and
`Embedding` match NumPy's values and PyTorch's values and gradients on every backend, in float32 and float64, on empty
dims, on sliced inputs (views with an offset) and sliced indices, with repeated ids (their gradients add up) and with
nan/inf passed through; bad indices are refused with the value and the size in the message."""
import importlib.util
from pathlib import Path

import numba
import numpy as np
import pytest
from backends import BACKENDS
from hypothesis import assume, given
from hypothesis import strategies as st
from tensor_strategies import arrays

import minitorch
from minitorch import CudaOps, Embedding, IndexingError, TensorBackend, gather, index_select, tensor
from minitorch import cuda_ops
from minitorch.cuda_ops import count_transfers
from minitorch.tensor_data import float32, float64, int64

pytestmark = [pytest.mark.parametrize("backend", BACKENDS),
              pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")]  # inf - inf in a loss

DTYPES = {"float64": float64, "float32": float32}


@st.composite
def shapes(draw, min_dims: int = 1, max_dims: int = 3):
    "A shape of small sizes, empty dims included."
    return tuple(draw(st.lists(st.integers(0, 3), min_size=min_dims, max_size=max_dims)))


def edge_arrays(shape: tuple[int, ...], dtype: np.dtype = float64, special: bool = True):
    "Random values of `shape` in `dtype`, about a fifth of them nan, inf and other edge values when `special`."
    return arrays(shape, dtype, special=special, share=0.2)


@st.composite
def ids(draw, shape: tuple[int, ...], size: int):
    "An int64 array of `shape` with values in `[0, size)`, repeats likely."
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    return rng.integers(0, max(size, 1), size=shape).astype(np.int64)


def made(values: np.ndarray, backend, sliced: bool, requires_grad: bool = False):
    "A leaf tensor of `values`' dtype and the input made from it: the leaf, or (sliced) a strided view with an offset."
    dtype = values.dtype
    if not sliced:
        leaf = tensor(values, backend=backend, dtype=dtype, requires_grad=requires_grad)
        return leaf, leaf, values
    big = np.full((2 * values.shape[0] + 1, *values.shape[1:]), 7, dtype=dtype)
    big[1::2] = values
    leaf = tensor(big, backend=backend, dtype=dtype, requires_grad=requires_grad)
    return leaf, leaf[1::2], big


def torch_made(torch, raw: np.ndarray, sliced: bool):
    "The PyTorch twin of `made` (a leaf that requires grad, and the input)."
    leaf = torch.tensor(raw, requires_grad=True)
    return leaf, (leaf[1::2] if sliced else leaf)


def numpy_gather(values: np.ndarray, dim: int, index: np.ndarray) -> np.ndarray:
    "`out[i] = values[i with entry dim replaced by index[i]]`, element by element."
    out = np.empty(index.shape, dtype=values.dtype)
    for position in np.ndindex(*index.shape):
        source = list(position)
        source[dim] = index[position]
        out[position] = values[tuple(source)]
    return out


def assert_same(ours: np.ndarray, expected: np.ndarray, dtype: np.dtype):
    "Equal up to the rounding of a sum in `dtype` (nan where nan)."
    rtol = 1e-5 if dtype == float32 else 1e-12
    np.testing.assert_allclose(ours, expected, rtol=rtol, atol=rtol)


def check_gradients(backend, out, leaf, reference_out, torch_leaf, weights: np.ndarray, dtype: np.dtype):
    "Backpropagate `(out * weights).sum()` on both sides and compare the leaves' gradients."
    torch = pytest.importorskip("torch")
    (out * tensor(weights, backend=backend, dtype=dtype)).sum().backward()
    (reference_out * torch.tensor(weights)).sum().backward()
    expected = torch_leaf.grad.numpy()
    got = np.zeros(expected.shape, dtype=dtype) if leaf.grad is None else leaf.grad.to_numpy()
    assert got.dtype == dtype
    assert_same(got, expected, dtype)


# --- gather ----------------------------------------------------------------------------------------------------------
@st.composite
def gather_cases(draw):
    "Input values, a dim (maybe negative), an index of the input's dims (no longer in other dims), sliced flags."
    dtype = DTYPES[draw(st.sampled_from(sorted(DTYPES)))]
    shape = draw(shapes())
    dim = draw(st.integers(-len(shape), len(shape) - 1))
    index_shape = tuple((draw(st.integers(0, 4)) if shape[d] else 0) if d == dim % len(shape)
                        else draw(st.integers(0, size)) for d, size in enumerate(shape))
    return (draw(edge_arrays(shape, dtype)), dim, draw(ids(index_shape, shape[dim])), draw(st.booleans()),
            draw(st.booleans()))


@given(gather_cases(), st.integers(0, 2**16))
def test_gather_matches_numpy_and_torch(backend, case, seed):
    values, dim, index, sliced, index_sliced = case
    leaf, input, raw = made(values, backend, sliced, requires_grad=True)
    _, index_tensor, _ = made(index, backend, index_sliced)
    out = gather(input, dim, index_tensor)
    assert out.shape == index.shape and out.dtype == values.dtype and out.backend is backend
    np.testing.assert_array_equal(out.to_numpy(), numpy_gather(values, dim % values.ndim, index))
    np.testing.assert_array_equal(input.gather(dim, index_tensor).to_numpy(), out.to_numpy())
    torch = pytest.importorskip("torch")
    twin, twin_input = torch_made(torch, raw, sliced)
    reference = torch.gather(twin_input, dim, torch.tensor(index))
    np.testing.assert_array_equal(out.to_numpy(), reference.detach().numpy())
    weights = np.random.default_rng(seed).normal(size=index.shape)
    check_gradients(backend, out, leaf, reference, twin, weights, values.dtype)


# --- index_select ----------------------------------------------------------------------------------------------------
@given(st.sampled_from(sorted(DTYPES)), shapes(), st.data())
def test_index_select_matches_numpy_and_torch(backend, dtype_name, shape, data):
    dtype = DTYPES[dtype_name]
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    index = data.draw(ids((data.draw(st.integers(0, 5)) if shape[dim] else 0,), shape[dim]))
    values = data.draw(edge_arrays(shape, dtype))
    sliced, index_sliced = data.draw(st.booleans()), data.draw(st.booleans())
    leaf, input, raw = made(values, backend, sliced, requires_grad=True)
    _, index_tensor, _ = made(index, backend, index_sliced)
    out = input.index_select(dim, index_tensor)
    np.testing.assert_array_equal(out.to_numpy(), np.take(values, index, axis=dim))
    assert out.dtype == dtype and out.shape == np.take(values, index, axis=dim).shape
    torch = pytest.importorskip("torch")
    twin, twin_input = torch_made(torch, raw, sliced)
    reference = torch.index_select(twin_input, dim, torch.tensor(index))
    np.testing.assert_array_equal(out.to_numpy(), reference.detach().numpy())
    check_gradients(backend, out, leaf, reference, twin, data.draw(edge_arrays(out.shape, float64, special=False)), dtype)


# --- t[ids] ----------------------------------------------------------------------------------------------------------
@given(st.sampled_from(sorted(DTYPES)), st.integers(1, 4), st.integers(0, 3), shapes(1, 2), st.data())
def test_indexing_with_ids_matches_numpy_and_torch(backend, dtype_name, rows, width, ids_shape, data):
    dtype = DTYPES[dtype_name]
    table_values = data.draw(edge_arrays((rows, width), dtype))
    batch = data.draw(ids(ids_shape, rows))
    if data.draw(st.booleans()):
        batch = batch - rows * (batch % 2)  # some ids counted from the end
    leaf, table, raw = made(table_values, backend, data.draw(st.booleans()), requires_grad=True)
    listed = len(ids_shape) == 1 and data.draw(st.booleans())   # `t[[4, 0]]`: a list of ids, as in PyTorch
    out = table[batch.tolist() if listed else tensor(batch, backend=backend, dtype=int64)]
    assert out.shape == (*ids_shape, width)
    np.testing.assert_array_equal(out.to_numpy(), table_values[batch])
    columns = data.draw(ids((2,), width))
    if width:
        np.testing.assert_array_equal(table[:, tensor(columns, backend=backend, dtype=int64)].to_numpy(),
                                      table_values[:, columns])
    torch = pytest.importorskip("torch")
    twin, twin_table = torch_made(torch, raw, table is not leaf)
    reference = twin_table[torch.tensor(batch)]
    check_gradients(backend, out, leaf, reference, twin, data.draw(edge_arrays(out.shape, float64, special=False)), dtype)


@given(st.sampled_from(sorted(DTYPES)), shapes(2, 3), st.data())
def test_indexing_with_several_id_tensors_matches_numpy_and_torch(backend, dtype_name, shape, data):
    "`t[rows, columns]`: one id tensor for each of the first dims, broadcast together, negative ids included."
    dtype = DTYPES[dtype_name]
    indexed = data.draw(st.integers(2, len(shape)))
    common = data.draw(shapes(1, 2))
    assume(all(shape[:indexed]))   # an empty indexed dim has no valid id
    batches = []
    for dim in range(indexed):   # each id array broadcasts to `common`: some of its sizes 1, some leading dims dropped
        own_shape = tuple(data.draw(st.sampled_from([1, size])) for size in common)[data.draw(st.integers(0, len(common) - 1)):]
        batch = data.draw(ids(own_shape, shape[dim]))
        if data.draw(st.booleans()):
            batch = batch - shape[dim] * (batch % 2)   # some counted from the end
        batches.append(batch)
    values = data.draw(edge_arrays(shape, dtype))
    leaf, table, raw = made(values, backend, data.draw(st.booleans()), requires_grad=True)
    out = table[tuple(tensor(batch, backend=backend, dtype=int64) for batch in batches)]
    expected = values[tuple(batches)]
    assert out.shape == expected.shape
    np.testing.assert_array_equal(out.to_numpy(), expected)
    torch = pytest.importorskip("torch")
    twin, twin_table = torch_made(torch, raw, table is not leaf)
    reference = twin_table[tuple(torch.tensor(batch) for batch in batches)]
    check_gradients(backend, out, leaf, reference, twin, data.draw(edge_arrays(out.shape, float64, special=False)), dtype)


def test_lookup_of_a_token_batch(backend):
    "A (B, T) batch of ids indexes a (V, C) table into (B, T, C); a row used three times gets three gradients."
    table = tensor(np.arange(15.0).reshape(5, 3), backend=backend, requires_grad=True)
    batch = tensor([[4, 1, 4], [0, 4, 2]], backend=backend, dtype=int64)
    vectors = table[batch]
    assert vectors.shape == (2, 3, 3)
    np.testing.assert_array_equal(vectors.to_numpy(), np.arange(15.0).reshape(5, 3)[batch.to_numpy()])
    vectors.sum().backward()
    np.testing.assert_array_equal(table.grad.to_numpy(), np.repeat([[1.0], [1.0], [1.0], [0.0], [3.0]], 3, axis=1))


def test_index_from_another_backend_is_moved(backend):
    table = tensor(np.arange(6.0).reshape(3, 2), backend=backend)
    picked = table.index_select(0, tensor([2, 2, 0], dtype=int64))  # the index made on the simple backend
    assert picked.backend is backend
    np.testing.assert_array_equal(picked.to_numpy(), [[4.0, 5.0], [4.0, 5.0], [0.0, 1.0]])


# --- Embedding -------------------------------------------------------------------------------------------------------
@pytest.mark.task("2.9")
@pytest.mark.parametrize("dtype_name", sorted(DTYPES))
def test_embedding_matches_torch(backend, dtype_name):
    torch = pytest.importorskip("torch")
    dtype = DTYPES[dtype_name]
    embedding = Embedding(7, 3, seed=1, backend=backend, dtype=dtype)
    weight = embedding.weight.value
    assert weight.shape == (7, 3) and weight.dtype == dtype and weight.requires_grad
    assert [name for name, _ in embedding.named_parameters()] == ["weight"]
    reference = torch.nn.Embedding(7, 3, dtype=torch.float64 if dtype == float64 else torch.float32)
    with torch.no_grad():
        reference.weight.copy_(torch.tensor(weight.to_numpy()))
    batch = np.array([[[1, 6, 1], [0, 1, 2]], [[6, 6, 3], [5, 4, 1]]])  # (2, 2, 3), repeats
    out = embedding(tensor(batch, backend=backend, dtype=int64))
    expected = reference(torch.tensor(batch))
    assert out.shape == (2, 2, 3, 3)
    np.testing.assert_array_equal(out.to_numpy(), expected.detach().numpy())
    weights = np.random.default_rng(0).normal(size=out.shape)
    (out * tensor(weights, backend=backend, dtype=dtype)).sum().backward()
    (expected * torch.tensor(weights)).sum().backward()
    assert_same(weight.grad.to_numpy(), reference.weight.grad.numpy(), dtype)


@pytest.mark.parametrize("padding_idx", [0, 4, -1])
def test_embedding_with_padding_idx_matches_torch(backend, padding_idx):
    "The padding row starts at zeros and gets no gradient; the other rows as without padding (as torch's)."
    torch = pytest.importorskip("torch")
    embedding = Embedding(7, 3, padding_idx=padding_idx, seed=2, backend=backend)
    weight = embedding.weight.value
    reference = torch.nn.Embedding(7, 3, padding_idx=padding_idx, dtype=torch.float64)
    np.testing.assert_array_equal(weight.to_numpy()[padding_idx], reference.weight.detach().numpy()[padding_idx])
    with torch.no_grad():
        reference.weight.copy_(torch.tensor(weight.to_numpy()) + 1.0)   # a padding row that is not zero any more
    with minitorch.no_grad():
        weight += 1.0
    batch = np.array([[1, 6, 0, 4], [4, 4, 6, 2]])
    out, expected = embedding(tensor(batch, backend=backend, dtype=int64)), reference(torch.tensor(batch))
    np.testing.assert_array_equal(out.to_numpy(), expected.detach().numpy())
    weights = np.random.default_rng(1).normal(size=out.shape)
    (out * tensor(weights, backend=backend)).sum().backward()
    (expected * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(weight.grad.to_numpy(), reference.weight.grad.numpy(), rtol=1e-12)
    assert not weight.grad.to_numpy()[padding_idx].any()
    assert f"Embedding(7, 3, padding_idx={padding_idx % 7})" in repr(embedding)
    with pytest.raises(ValueError, match="padding_idx must be an id of the 7 embeddings, got 7"):
        Embedding(7, 3, padding_idx=7)


def test_embedding_initialisation_and_repr(backend):
    embedding = Embedding(1000, 20, seed=3, backend=backend)
    values = embedding.weight.value.to_numpy()
    assert abs(values.mean()) < 0.05 and abs(values.std() - 1.0) < 0.05  # N(0, 1), as PyTorch
    np.testing.assert_array_equal(Embedding(1000, 20, seed=3).weight.value.to_numpy(), values)
    assert "Embedding(1000, 20)" in repr(embedding)


# --- errors ----------------------------------------------------------------------------------------------------------
def test_errors_name_what_was_wrong(backend):
    table = tensor(np.arange(12.0).reshape(4, 3), backend=backend)
    long = lambda values: tensor(values, backend=backend, dtype=int64)  # noqa: E731
    with pytest.raises(IndexingError, match=r"index 4 is out of range for dim 0 of size 4"):
        table.index_select(0, long([0, 4]))
    with pytest.raises(IndexingError, match=r"index -1 is out of range for dim 1 of size 3"):
        gather(table, 1, long([[0], [-1]]))
    with pytest.raises(IndexingError, match=r"index 9 is out of range for dim 0 of size 4"):
        Embedding(4, 3, backend=backend)(long([[1, 9]]))
    with pytest.raises(IndexingError, match=r"index -1 is out of range"):
        Embedding(4, 3, backend=backend)(long([-1]))
    with pytest.raises(IndexingError, match=r"index 4 is out of range for dim 0 of size 4"):
        table[long([4])]
    with pytest.raises(IndexingError, match=r"index -5 is out of range for dim 0 of size 4"):
        table[long([-5])]
    with pytest.raises(TypeError, match="index_select: the index must be int64, got float64"):
        table.index_select(0, tensor([0.0, 1.0], backend=backend))
    with pytest.raises(TypeError, match="gather: the index must be int64, got float32"):
        gather(table, 0, tensor([[1.0]], backend=backend, dtype=float32))
    with pytest.raises(TypeError, match=r"t\[ids\]: the index must be int64, got float64"):
        table[tensor([1.0], backend=backend)]
    with pytest.raises(TypeError, match="Embedding: the index must be int64, got float64"):
        Embedding(4, 3, backend=backend)(tensor([1.0], backend=backend))
    with pytest.raises(TypeError, match="must be an int64 Tensor, got list"):
        table.index_select(0, [0, 1])
    with pytest.raises(TypeError, match=r"an index list must hold ints \(ids\) or bools \(a mask\), got \[0.5, 1\]"):
        table[[0.5, 1]]
    with pytest.raises(IndexingError, match=r"the shape of the mask \(2,\) does not match the shape \(4,\)"):
        table[[True, False]]   # a list of bools is a mask, as in PyTorch: one per row
    with pytest.raises(ValueError, match=r"ragged data: the index list\[0\] has shape \(2,\)"):
        table[[[0, 1], [2]]]
    with pytest.raises(IndexingError, match=r"index 4 is out of range for dim 0 of size 4"):
        table[[0, 4]]
    with pytest.raises(IndexingError, match=r"gather: the index has 1 dims \(shape \(2,\)\), the input 2"):
        gather(table, 0, long([0, 1]))
    with pytest.raises(IndexingError, match=r"has size 4 in dim 1, more than the 3"):
        gather(table, 0, long([[0, 0, 0, 0]]))
    with pytest.raises(IndexingError, match=r"index_select: the index must be 1-D, got shape \(1, 2\)"):
        table.index_select(0, long([[0, 1]]))
    with pytest.raises(IndexingError, match="dim 2 is out of range"):
        table.index_select(2, long([0]))
    with pytest.raises(IndexingError, match=r"one int64 tensor among full slices"):
        table[long([0]), 1]
    with pytest.raises(IndexingError, match=r"or one for each of the first dims \(t\[rows, columns\]\)"):
        table.view(1, 4, 3)[:, long([0]), long([1])]
    with pytest.raises(IndexingError, match=r"index 3 is out of range for dim 1 of size 3"):
        table[long([1]), long([3])]   # flat position 1 * 3 + 3 = 6 would be a valid place of row 2
    with pytest.raises(IndexingError, match=r"index -5 is out of range for dim 0 of size 4"):
        table[long([-5]), long([0])]
    with pytest.raises(TypeError, match=r"t\[ids\]: the index must be int64, got float64"):
        table[long([1]), tensor([1.0], backend=backend)]


def test_a_lookup_copies_two_numbers_on_cuda_unless_its_ids_were_uploaded(backend):
    "On the CUDA backend, uploaded ids were measured on the host; ids made on the GPU copy their least and greatest."
    if not isinstance(backend.storage.zeros(1), minitorch.CudaStorage):
        pytest.skip("only the CUDA backend copies")
    embedding = Embedding(4, 3, backend=backend)
    batch = tensor([[3, 1], [3, 0]], backend=backend, dtype=int64)
    computed = batch + 0   # the same ids, written by a kernel: their range is not known
    for ids in (batch, computed):
        embedding(ids)  # the first lookup uploads each shape and strides once
    with count_transfers() as copies:
        out = embedding(batch)
    assert out.shape == (2, 2, 3)
    assert (copies.to_host_calls, copies.to_device_calls) == (0, 0), copies
    with count_transfers() as copies:
        again = embedding(computed)
    assert (copies.to_host_calls, copies.to_host_bytes) == (1, 16), copies
    np.testing.assert_array_equal(again.to_numpy(), out.to_numpy())
    batch[0, 0] = 7.0   # a write from the host forgets the range: the check finds the 7
    with pytest.raises(IndexingError, match="index 7 is out of range"):
        embedding(batch)
    after_kernel = tensor([[0, 1]], backend=backend, dtype=int64)
    backend.id_map(tensor([[9, 9]], backend=backend, dtype=int64), after_kernel)   # a kernel writes 9s into it
    with pytest.raises(IndexingError, match="index 9 is out of range"):
        embedding(after_kernel)


@pytest.mark.parametrize("dtype_name", sorted(DTYPES))
def test_cuda_kernels_are_launched_with_the_types_cuda_compile_compiles_them_for(backend, dtype_name, monkeypatch):
    "`make cuda-compile` compiles the gather kernels for float64 and float32 storages with an int64 index: as launched."
    if not isinstance(backend.storage.zeros(1), minitorch.CudaStorage):
        pytest.skip("CUDA kernels only")
    path = Path(__file__).parent.parent / "tools" / "bench" / "cuda_compile.py"
    spec = importlib.util.spec_from_file_location("cuda_compile", path)
    cuda_compile = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cuda_compile)
    launches, original = [], cuda_ops.launch

    def recording_launch(kernel, grid, datas, arguments=()):
        if getattr(kernel, "py_func", None) and kernel.py_func.__name__ in ("cuda_gather", "cuda_scatter_add"):
            arrays = [array.copy_to_host() for data in datas for array in cuda_ops.kernel_arguments(data)]
            launches.append((kernel, [*arrays, *arguments]))
        original(kernel, grid, datas, arguments)

    monkeypatch.setattr(CudaOps, "launch", staticmethod(recording_launch))
    on_gpu = TensorBackend(CudaOps)
    table = tensor(np.arange(6.0).reshape(3, 2), backend=on_gpu, dtype=DTYPES[dtype_name], requires_grad=True)
    table[tensor([2, 0, 2], backend=on_gpu, dtype=int64)].sum().backward()
    assert sorted(kernel.py_func.__name__ for kernel, _ in launches) == ["cuda_gather", "cuda_scatter_add"]
    compiled = cuda_compile.module_kernels(minitorch, type(cuda_ops.cuda_matrix_multiply))
    for kernel, values in launches:
        label = f"cuda_ops.{kernel.py_func.__name__} {dtype_name}"
        assert compiled[label] == (kernel, DTYPES[dtype_name]), label
        assert [numba.typeof(value) for value in values] == list(cuda_compile.launch_signature(kernel.py_func, DTYPES[dtype_name])), label
