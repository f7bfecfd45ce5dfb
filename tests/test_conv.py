"""conv1d and conv2d: random shapes, strides and paddings against a NumPy formula, gradients by grad_check, bad input."""
import numpy as np
import pytest
from backends import BACKENDS
from hypothesis import given, settings
from hypothesis import strategies as st

from minitorch import conv1d, conv2d, grad_check, tensor

pytestmark = pytest.mark.parametrize("backend", BACKENDS)


def conv_reference(input, weight, bias, stride, padding):
    "The convolution formula in NumPy for any number of spatial dims: pad, cut each window, contract."
    spatial = input.ndim - 2
    padded = np.pad(input, [(0, 0), (0, 0)] + [(pad, pad) for pad in padding])
    out_shape = [(padded.shape[2 + dim] - weight.shape[2 + dim]) // stride[dim] + 1 for dim in range(spatial)]
    out = np.empty((input.shape[0], weight.shape[0], *out_shape))
    for position in np.ndindex(*out_shape):
        window = padded[(slice(None), slice(None)) + tuple(
            slice(index * step, index * step + size) for index, step, size in zip(position, stride, weight.shape[2:]))]
        out[(slice(None), slice(None)) + position] = np.tensordot(window, weight, axes=(
            list(range(1, spatial + 2)), list(range(1, spatial + 2)))) + bias
    return out


@st.composite
def conv_cases(draw, spatial):
    "Random input, weight, bias, stride and padding for a convolution with `spatial` dims that fits."
    batch, in_channels, out_channels = (draw(st.integers(1, 3)) for _ in range(3))
    kernel = tuple(draw(st.integers(1, 3)) for _ in range(spatial))
    padding = tuple(draw(st.integers(0, 2)) for _ in range(spatial))
    stride = tuple(draw(st.integers(1, 3)) for _ in range(spatial))
    sizes = tuple(draw(st.integers(max(1, size - 2 * pad), 7)) for size, pad in zip(kernel, padding))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    return (rng.normal(size=(batch, in_channels, *sizes)), rng.normal(size=(out_channels, in_channels, *kernel)),
            rng.normal(size=out_channels), stride, padding)


@settings(max_examples=40)
@given(case=conv_cases(1))
def test_conv1d_matches_the_formula(backend, case):
    input, weight, bias, stride, padding = case
    out = conv1d(tensor(input, backend=backend), tensor(weight, backend=backend), tensor(bias, backend=backend),
                 stride=stride[0], padding=padding[0])
    np.testing.assert_allclose(out.to_numpy(), conv_reference(input, weight, bias, stride, padding), rtol=1e-10, atol=1e-12)


@settings(max_examples=40)
@given(case=conv_cases(2))
def test_conv2d_matches_the_formula(backend, case):
    input, weight, bias, stride, padding = case
    out = conv2d(tensor(input, backend=backend), tensor(weight, backend=backend), tensor(bias, backend=backend),
                 stride=stride, padding=padding)
    np.testing.assert_allclose(out.to_numpy(), conv_reference(input, weight, bias, stride, padding), rtol=1e-10, atol=1e-12)


@settings(max_examples=8)
@given(case=conv_cases(1))
def test_conv1d_gradients(backend, case):
    input, weight, bias = (tensor(values, backend=backend) for values in case[:3])
    stride, padding = case[3:]
    grad_check(lambda x, w, b: conv1d(x, w, b, stride=stride[0], padding=padding[0]).sigmoid(), input, weight, bias)


@settings(max_examples=8)
@given(case=conv_cases(2))
def test_conv2d_gradients(backend, case):
    input, weight, bias = (tensor(values, backend=backend) for values in case[:3])
    stride, padding = case[3:]
    grad_check(lambda x, w, b: conv2d(x, w, b, stride=stride, padding=padding).sigmoid(), input, weight, bias)


def test_conv2d_of_a_permuted_input_and_without_bias(backend):
    values = np.random.default_rng(0).normal(size=(5, 4, 3, 2))
    weight = np.random.default_rng(1).normal(size=(2, 3, 2, 2))
    permuted = tensor(values, backend=backend).permute(3, 2, 1, 0)   # (2, 3, 4, 5), not contiguous
    out = conv2d(permuted, tensor(weight, backend=backend), padding=1)
    expected = conv_reference(values.transpose(3, 2, 1, 0), weight, np.zeros(2), (1, 1), (1, 1))
    np.testing.assert_allclose(out.to_numpy(), expected, rtol=1e-10)


@pytest.mark.parametrize("call, message", [
    (lambda b: conv2d(tensor(np.zeros((1, 3, 5, 5)), backend=b), tensor(np.zeros((2, 4, 3, 3)), backend=b)),
     r"input has 3 channels \(shape \(1, 3, 5, 5\)\) but the weight expects 4 \(shape \(2, 4, 3, 3\)\)"),
    (lambda b: conv1d(tensor(np.zeros((1, 2, 5)), backend=b), tensor(np.zeros((2, 3, 3)), backend=b)),
     r"input has 2 channels .* weight expects 3"),
    (lambda b: conv2d(tensor(np.zeros((1, 1, 4, 4)), backend=b), tensor(np.zeros((1, 1, 7, 3)), backend=b), padding=1),
     r"kernel \(7, 3\) is larger than the input \(4, 4\) padded by \(1, 1\) \(\(6, 6\)\)"),
    (lambda b: conv2d(tensor(np.zeros((1, 1, 4, 4)), backend=b), tensor(np.zeros((2, 1, 3, 3)), backend=b),
                      bias=tensor(np.zeros(3), backend=b)), r"bias must have shape \(2,\) .* got \(3,\)"),
    (lambda b: conv2d(tensor(np.zeros((1, 4, 4)), backend=b), tensor(np.zeros((2, 1, 3, 3)), backend=b)),
     r"4-D input .* got shapes \(1, 4, 4\) and \(2, 1, 3, 3\)"),
    (lambda b: conv1d(tensor(np.zeros((1, 1, 4)), backend=b), tensor(np.zeros((2, 1, 3)), backend=b), stride=0),
     r"stride must be at least 1 .* got stride \(0,\)"),
    (lambda b: conv2d(tensor(np.zeros((1, 1, 4, 4)), backend=b), tensor(np.zeros((2, 1, 3, 3)), backend=b), stride=(1, 2, 3)),
     r"stride must be an int or a pair of ints, got \(1, 2, 3\)"),
    (lambda b: conv1d(tensor(np.zeros((1, 1, 4)), backend=b), tensor(np.zeros((2, 1, 3)), backend=b), stride=1.5),
     r"conv1d: stride and padding must be ints, got stride \(1.5,\), padding \(0,\)"),
])
def test_bad_convolutions_name_the_values(backend, call, message):
    with pytest.raises(ValueError, match=message):
        call(backend)
