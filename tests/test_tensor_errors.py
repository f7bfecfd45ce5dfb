"""Bad input on every backend: a Python exception whose message names the offending shapes, dims or values."""
import numpy as np
import pytest
from backends import BACKENDS

from minitorch import IndexingError, TensorData, ones, rand, tensor, zeros

pytestmark = pytest.mark.parametrize("backend", BACKENDS)


def test_shapes_that_do_not_broadcast(backend):
    a, b = rand((2, 3), backend=backend), rand((4,), backend=backend)
    for action in (lambda: a + b, lambda: a * b, lambda: a < b, lambda: a == b, lambda: a.is_close(b)):
        with pytest.raises(IndexingError, match=r"shapes \(2, 3\) and \(4,\) do not broadcast"):
            action()


def test_matmul_with_mismatched_inner_dims(backend):
    with pytest.raises(IndexingError, match=r"shapes \(2, 3\) and \(2, 3\): inner dims 3 and 2 differ"):
        rand((2, 3), backend=backend) @ rand((2, 3), backend=backend)
    with pytest.raises(IndexingError, match=r"shapes \(2, 2, 3\) and \(3, 3, 1\).*batch sizes 2 and 3"):
        rand((2, 2, 3), backend=backend) @ rand((3, 3, 1), backend=backend)
    with pytest.raises(IndexingError, match=r"shapes \(3,\) and \(2, 4\): inner dims 3 and 2 differ"):
        rand((3,), backend=backend) @ rand((2, 4), backend=backend)
    with pytest.raises(IndexingError, match=r"shapes \(5, 2\) and \(3,\): inner dims 2 and 3 differ"):
        rand((5, 2), backend=backend) @ rand((3,), backend=backend)


def test_view_to_another_size_or_of_a_non_contiguous_tensor(backend):
    x = rand((2, 3), backend=backend)
    with pytest.raises(IndexingError, match=r"shape \(2, 3\) \(6 elements\) as \(4,\)"):
        x.view(4)
    with pytest.raises(IndexingError, match=r"view size \(6,\) is not compatible with input tensor's size \(3, 2\) "
                                            r"and stride \(1, 3\)"):
        x.permute(1, 0).view(6)


@pytest.mark.parametrize("order", [(0,), (0, 1, 2), (1, 1)])
def test_permute_with_wrong_length_or_repeats(backend, order):
    with pytest.raises(IndexingError, match=r"permute order .* shape \(2, 3\)"):
        rand((2, 3), backend=backend).permute(*order)


@pytest.mark.parametrize("dim", [2, -3, 1.5])
def test_reductions_over_a_dim_out_of_range(backend, dim):
    x = rand((2, 3), backend=backend)
    for reduce in (x.sum, x.mean, x.all):
        with pytest.raises(IndexingError, match=rf"dim {dim} is out of range for a tensor of shape \(2, 3\)"):
            reduce(dim)


def test_ragged_or_non_numeric_data(backend):
    with pytest.raises(ValueError, match=r"ragged data: data\[0\] has shape \(2,\) but data\[1\] has shape \(3,\)"):
        tensor([[1.0, 2.0], [1.0, 2.0, 3.0]], backend=backend)
    with pytest.raises(ValueError, match=r"data\[1\]\[0\] has shape \(\) but data\[1\]\[1\] has shape \(1,\)"):
        tensor([[1.0, 2.0], [1.0, [2.0]]], backend=backend)
    with pytest.raises(TypeError, match=r"data\[0\]\[1\] is 'x' of type str, not a number"):
        tensor([[1.0, "x"]], backend=backend)
    with pytest.raises(TypeError, match=r"None of type NoneType"):
        tensor([None], backend=backend)
    with pytest.raises(TypeError, match=r"dtype <U1"):
        tensor(np.array(["a"]), backend=backend)
    with pytest.raises(TypeError, match=r"cannot combine a tensor of shape \(2,\) with 'a'"):
        ones(2, backend=backend) + "a"


def test_indexing_out_of_range_or_with_the_wrong_number_of_indices(backend):
    x = rand((2, 3), backend=backend)
    with pytest.raises(IndexingError, match=r"index \(0, 3\) is out of range for shape \(2, 3\)"):
        x[0, 3]
    with pytest.raises(IndexingError, match=r"too many indices for shape \(2, 3\): 3 given, it has 2 dims"):
        x[0, 0, 0]
    with pytest.raises(IndexingError, match=r"index \(-3, 0\) is out of range for shape \(2, 3\)"):
        x[-3, 0] = 1.0
    with pytest.raises(IndexingError, match=r"too many indices for shape \(2, 3\): 3 given, it has 2 dims"):
        x[0, 0, 0] = 1.0
    x[1] = 1.0   # a row, as in PyTorch
    assert x.to_numpy()[1].tolist() == [1.0, 1.0, 1.0]
    with pytest.raises(ValueError, match=r"one element, this one has shape \(2, 3\)"):
        x.item()


def test_backward_without_grad_output_needs_one_element(backend):
    x = rand((2, 3), backend=backend, requires_grad=True)
    with pytest.raises(ValueError, match=r"one-element tensor, this one has shape \(2, 3\)"):
        (x * 2.0).backward()
    with pytest.raises(ValueError, match=r"truth value of a tensor of shape \(2, 3\) is ambiguous"):
        bool(x < 0.5)


def test_strides_past_the_storage_and_bad_shape_entries(backend):
    with pytest.raises(IndexingError, match=r"shape \(2, 2\) with strides \(3, 1\) reaches position 4, past .* size 4"):
        TensorData(np.zeros(4), (2, 2), (3, 1))
    for shape, bad in [((2, -1), r"\[-1\]"), ((2.0, 3), r"\[2.0\]"), (("2",), r"\['2'\]"), ((-1,), r"\[-1\]")]:
        with pytest.raises(IndexingError, match=r"not integers >= 0: " + bad):
            zeros(shape, backend=backend)
        with pytest.raises(IndexingError, match=r"not integers >= 0: " + bad):
            rand(shape, backend=backend)


def test_view_with_a_wrong_minus_one(backend):
    x = rand((2, 3), backend=backend)
    with pytest.raises(IndexingError, match=r"only one dimension can be -1"):
        x.view(-1, -1)
    with pytest.raises(IndexingError, match=r"6 elements as \(4, -1\): 6 is not a multiple of 4"):
        x.view(4, -1)
    with pytest.raises(IndexingError, match=r"batch sizes|broadcast"):
        rand((2, 3, 2, 2), backend=backend) @ rand((4, 3, 2, 2), backend=backend)


@pytest.mark.parametrize("make", ["zeros", "ones", "rand", "randn"])
def test_sizes_as_separate_arguments_or_one_tuple(backend, make):
    "PyTorch's `zeros(2, 3)` and `zeros((2, 3))`, and classic MiniTorch's `zeros((2, 3), backend)`, all work."
    import minitorch
    factory = getattr(minitorch, make)
    assert factory(2, 3).shape == factory((2, 3)).shape == factory([2, 3]).shape == (2, 3) and factory(4).shape == (4,)
    assert factory((2, 3), backend).backend is backend and factory(2, 3, backend=backend).backend is backend
    assert factory(2, backend="fast").backend is minitorch.FastBackend   # a name is one
    with pytest.raises(ValueError, match=r"no backend called 'gpu': the backends are 'simple', 'fast'"):
        factory(2, backend="gpu")


@pytest.mark.parametrize("make", ["tensor", "arange", "randint"])
def test_a_number_where_the_backend_goes_is_named(backend, make):
    import minitorch
    arguments = {"tensor": ([1.0], 3), "arange": (0, 4, 1, 3), "randint": (0, 4, (2,), 3)}[make]
    with pytest.raises(TypeError, match=r"backend must be a TensorBackend .* got 3"):
        getattr(minitorch, make)(*arguments)
    assert getattr(minitorch, make)(*arguments[:-1], backend="fast").backend is minitorch.FastBackend
    with pytest.raises(ValueError, match=r"no backend called 'gpu': the backends are 'simple', 'fast'"):
        getattr(minitorch, make)(*arguments[:-1], backend="gpu")
    assert getattr(minitorch, make)(*arguments[:-1], backend=backend).backend is backend


def test_float_and_int_of_a_tensor_need_one_element(backend):
    assert float(tensor([2.5], backend=backend)) == 2.5 and int(tensor([[7.9]], backend=backend)) == 7
    total = rand((2, 3), backend=backend, seed=0).sum()
    assert float(total) == total.item() == pytest.approx(rand((2, 3), seed=0).to_numpy().sum())
    for convert in (float, int):
        with pytest.raises(ValueError, match=r"one element, this one has shape \(2,\)"):
            convert(tensor([1.0, 2.0], backend=backend))
