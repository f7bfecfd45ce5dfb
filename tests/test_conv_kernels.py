"""The formula kernels of conv1d and conv2d (the exercises) against the NumPy formula and the fast kernels the layers
run by default; on CourseBackend the layers run the formula kernels."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_conv import conv_cases, conv_reference

import minitorch.conv
from minitorch import Conv1dFun, Conv2dFun, FastBackend, conv1d, conv2d, tensor
from minitorch.conv import (conv1d_backward_input_kernel, conv1d_backward_weight_kernel, conv1d_forward_kernel,
                            conv2d_backward_input_kernel, conv2d_backward_weight_kernel, conv2d_forward_kernel,
                            conv_output_size, fast_conv2d, fast_conv2d_backward)
from minitorch.fast_ops import CourseBackend

FORMULA_KERNELS = {1: (conv1d_forward_kernel, conv1d_backward_input_kernel, conv1d_backward_weight_kernel),
                   2: (conv2d_forward_kernel, conv2d_backward_input_kernel, conv2d_backward_weight_kernel)}


def formula_kernels(input, weight, bias, grad_out, stride, padding):
    "Output, input gradient and weight gradient by the formula kernels, with the stride and padding of each dim."
    forward, backward_input, backward_weight = FORMULA_KERNELS[input.ndim - 2]
    out, grad_input, grad_weight = np.zeros(grad_out.shape), np.zeros(input.shape), np.zeros(weight.shape)
    forward(out, input, weight, bias, *stride, *padding)
    backward_input(grad_input, grad_out, weight, *stride, *padding)
    backward_weight(grad_weight, grad_out, input, *stride, *padding)
    return out, grad_input, grad_weight


def fast_path(input, weight, bias, grad_out, stride, padding):
    "The same three arrays by the fast kernels, a 1-D case read as maps of height 1."
    as_maps = (lambda values: values[:, :, None]) if input.ndim == 3 else (lambda values: values)
    stride, padding = ((1, *stride), (0, *padding)) if input.ndim == 3 else (stride, padding)
    out, planes = fast_conv2d(as_maps(input), as_maps(weight), bias, stride, padding)
    grad_input, grad_weight = fast_conv2d_backward(as_maps(grad_out), planes, as_maps(weight), as_maps(input).shape,
                                                   stride, padding)
    return out.reshape(grad_out.shape), grad_input.reshape(input.shape), grad_weight.reshape(weight.shape)


@pytest.mark.parametrize("spatial", [pytest.param(1, marks=pytest.mark.task("4.1")),
                                     pytest.param(2, marks=pytest.mark.task("4.2"))])
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_formula_kernels_match_the_formula_and_the_fast_kernels(spatial, data):
    input, weight, bias, stride, padding = data.draw(conv_cases(spatial))
    out_shape = (input.shape[0], weight.shape[0], *(conv_output_size(size, kernel, step, pad) for size, kernel, step, pad
                                                    in zip(input.shape[2:], weight.shape[2:], stride, padding)))
    grad_out = np.random.default_rng(input.size).normal(size=out_shape)
    by_formula = formula_kernels(input, weight, bias, grad_out, stride, padding)
    np.testing.assert_allclose(by_formula[0], conv_reference(input, weight, bias, stride, padding), rtol=1e-10, atol=1e-12)
    for formula, fast in zip(by_formula, fast_path(input, weight, bias, grad_out, stride, padding)):
        np.testing.assert_allclose(formula, fast, rtol=1e-10, atol=1e-12)


def test_the_gradient_of_an_input_that_does_not_track_is_not_computed(monkeypatch):
    def refuse(*arguments):
        raise AssertionError("the input gradient kernel ran for an input that does not track gradients")

    monkeypatch.setattr(minitorch.conv, "fast_conv2d_backward_input_kernel", refuse)
    rng = np.random.default_rng(0)
    images = tensor(rng.normal(size=(2, 1, 6, 6)), backend=FastBackend)
    weight = tensor(rng.normal(size=(3, 1, 3, 3)), backend=FastBackend, requires_grad=True)
    conv2d(images, weight, padding=1).sum().backward()
    assert images.grad is None and weight.grad.shape == (3, 1, 3, 3)
    with pytest.raises(AssertionError, match="does not track"):
        conv2d(images.detach().requires_grad_(), weight).sum().backward()


def test_conv_functions_take_two_arguments_as_in_the_classic_course():
    rng = np.random.default_rng(1)
    signal, taps = rng.normal(size=(2, 3, 8)), rng.normal(size=(4, 3, 3))
    images, kernels = rng.normal(size=(2, 3, 6, 5)), rng.normal(size=(4, 3, 2, 2))
    # the classic call: no zeros before, K - 1 after, so the output is as wide as the input
    padded_signal = np.pad(signal, ((0, 0), (0, 0), (0, 2)))
    np.testing.assert_allclose(Conv1dFun.apply(tensor(signal), tensor(taps)).to_numpy(),
                               conv_reference(padded_signal, taps, np.zeros(4), (1,), (0,)), rtol=1e-12)
    np.testing.assert_allclose(Conv2dFun.apply(tensor(images), tensor(kernels), stride=2, padding=1).to_numpy(),
                               conv_reference(images, kernels, np.zeros(4), (2, 2), (1, 1)), rtol=1e-12)


def output_and_gradients(convolve, arrays, backend):
    "The output of `convolve(*tensors)` on `backend` and the gradients of all its arguments, for a fixed weighting."
    tensors = [tensor(values, backend=backend, requires_grad=True) for values in arrays]
    out = convolve(*tensors)
    weighting = np.cos(np.arange(out.size)).reshape(out.shape)
    (out * tensor(weighting, backend=backend)).sum().backward()
    return [out.to_numpy()] + [item.grad.to_numpy() for item in tensors]


@pytest.mark.parametrize("spatial", [pytest.param(1, marks=pytest.mark.task("4.1")),
                                     pytest.param(2, marks=pytest.mark.task("4.2"))])
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_course_backend_convolves_with_your_kernels_as_the_fast_path_does(spatial, data):
    input, weight, bias, stride, padding = data.draw(conv_cases(spatial))
    convolve = {1: lambda x, w, b: conv1d(x, w, b, stride=stride[0], padding=padding[0]),
                2: lambda x, w, b: conv2d(x, w, b, stride=stride, padding=padding)}[spatial]
    classic = {1: Conv1dFun.apply, 2: Conv2dFun.apply}[spatial]  # zeros after the input only
    for call in (convolve, classic):
        yours, fast = (output_and_gradients(call, (input, weight, bias), backend)
                       for backend in (CourseBackend, FastBackend))
        for mine, theirs in zip(yours, fast):
            np.testing.assert_allclose(mine, theirs, rtol=1e-10, atol=1e-12)


@pytest.mark.task("4.2")
def test_course_backend_runs_your_kernels_and_skips_gradients_nobody_needs(monkeypatch):
    def refuse(*arguments):
        raise AssertionError("a kernel ran that should not have")

    for name in ("fast_conv2d", "fast_conv2d_backward", "conv2d_backward_input_kernel"):
        monkeypatch.setattr(minitorch.conv, name, refuse)
    rng = np.random.default_rng(2)
    images = tensor(rng.normal(size=(2, 1, 6, 6)), backend=CourseBackend)
    weight = tensor(rng.normal(size=(3, 1, 3, 3)), backend=CourseBackend, requires_grad=True)
    conv2d(images, weight, padding=1).sum().backward()
    assert images.grad is None and weight.grad.shape == (3, 1, 3, 3)
    with pytest.raises(AssertionError, match="should not"):
        conv2d(images.detach().requires_grad_(), weight).sum().backward()
