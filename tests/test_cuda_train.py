"""A training step on the CUDA backend stays on the GPU: conv, pooling, dropout and Adam kernels against the host's."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minitorch
from minitorch import FastBackend, TensorBackend, cuda_available, tensor
from minitorch.conv import conv1d, conv2d
from minitorch.cuda_ops import count_transfers
from minitorch.module import Parameter
from minitorch.nn import (Conv2d, CrossEntropyLoss, Dropout, Flatten, Linear, MaxPool2d, ReLU, Sequential, avgpool2d,
                          dropout, dropout_uniform, maxpool2d)
from minitorch.optim import SGD
from minitorch.adam import Adam

pytestmark = pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU and NUMBA_ENABLE_CUDASIM unset")

GPU = minitorch.backend("cuda")
EXAMPLES = settings(max_examples=6, deadline=None)
"Few examples: in the simulator every GPU thread is a Python thread."


def pair(values: np.ndarray) -> tuple[minitorch.Tensor, minitorch.Tensor]:
    "The same values as a tracking tensor on the fast backend and on the CUDA backend."
    return tensor(values, backend=FastBackend, requires_grad=True), tensor(values, backend=GPU, requires_grad=True)


def assert_same(gpu: minitorch.Tensor, host: minitorch.Tensor) -> None:
    "The GPU tensor lives on the GPU and holds the host tensor's values."
    assert gpu.is_cuda and not host.is_cuda
    np.testing.assert_allclose(gpu.to_numpy(), host.to_numpy(), rtol=1e-10, atol=1e-12)


@st.composite
def conv_case(draw, dims: int):
    "Random small shapes, stride and padding (or the classic call's `None`) that fit together."
    batch, in_channels, out_channels = draw(st.integers(1, 2)), draw(st.integers(1, 2)), draw(st.integers(1, 2))
    kernel = tuple(draw(st.integers(1, 3)) for _ in range(dims))
    size = tuple(draw(st.integers(k, k + 3)) for k in kernel)
    stride = tuple(draw(st.integers(1, 2)) for _ in range(dims))
    padding = draw(st.sampled_from([None, 0, 1]))
    rng = np.random.default_rng(draw(st.integers(0, 1000)))
    return (rng.normal(size=(batch, in_channels, *size)), rng.normal(size=(out_channels, in_channels, *kernel)),
            rng.normal(size=out_channels), stride if dims == 2 else stride[0], padding)


def check_conv_parity(case, convolve, fun) -> None:
    "Values and the gradients of input, weight and bias on the CUDA backend equal the fast backend's."
    input, weight, bias, stride, padding = case
    results = []
    for backend in (FastBackend, GPU):
        tensors = [tensor(values, backend=backend, requires_grad=True) for values in (input, weight, bias)]
        out = (convolve(*tensors, stride=stride, padding=padding) if padding is not None
               else fun.apply(*tensors, stride=stride))
        (out * out).sum().backward()
        results.append([out, *(t.grad for t in tensors)])
    for host, gpu in zip(*results):
        assert_same(gpu, host)


@EXAMPLES
@given(conv_case(1))
def test_conv1d_forward_and_backward_on_the_gpu_match_the_host(case):
    check_conv_parity(case, conv1d, minitorch.Conv1dFun)


@EXAMPLES
@given(conv_case(2))
def test_conv2d_forward_and_backward_on_the_gpu_match_the_host(case):
    check_conv_parity(case, conv2d, minitorch.Conv2dFun)


def test_conv_without_bias_or_input_gradient_on_the_gpu():
    rng = np.random.default_rng(1)
    images, weight = rng.normal(size=(2, 1, 4, 4)), rng.normal(size=(2, 1, 3, 3))
    outs, grads = [], []
    for backend in (FastBackend, GPU):
        kernels = tensor(weight, backend=backend, requires_grad=True)
        out = conv2d(tensor(images, backend=backend), kernels, padding=1)
        out.sum().backward()
        outs.append(out), grads.append(kernels.grad)
    assert_same(outs[1], outs[0])
    assert_same(grads[1], grads[0])


def test_conv_and_maxpool_on_the_gpu_read_strided_views_where_they_lie():
    rng = np.random.default_rng(2)
    transposed, weight = rng.normal(size=(2, 2, 6, 4)), rng.normal(size=(3, 2, 3, 3))
    results = []
    for backend in (FastBackend, GPU):
        maps = tensor(transposed, backend=backend, requires_grad=True)
        kernels = tensor(weight, backend=backend, requires_grad=True)
        view = maps.permute(0, 1, 3, 2)  # (2, 2, 4, 6), not contiguous
        convolved = conv2d(view, kernels, stride=(1, 2), padding=1)  # (2, 3, 4, 3)
        out = maxpool2d(convolved.permute(0, 1, 3, 2), (3, 2))  # pools a strided view too
        (out * out).sum().backward()
        results.append([out, maps.grad, kernels.grad])
    for host, gpu in zip(*results):
        assert_same(gpu, host)


@st.composite
def pool_case(draw):
    "Random small maps and a kernel that tiles them (ties are rare: normal values)."
    kernel = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 2)), kernel[0] * draw(st.integers(1, 2)),
             kernel[1] * draw(st.integers(1, 2)))
    return np.random.default_rng(draw(st.integers(0, 1000))).normal(size=shape), kernel


@EXAMPLES
@given(pool_case())
def test_maxpool2d_forward_and_backward_on_the_gpu_match_the_host(case):
    values, kernel = case
    host, gpu = pair(values)
    weights = np.arange(1.0, 1.0 + values.size // (kernel[0] * kernel[1])).reshape(
        values.shape[0], values.shape[1], values.shape[2] // kernel[0], values.shape[3] // kernel[1])
    outs = [maxpool2d(x, kernel) for x in (host, gpu)]
    for out, x in zip(outs, (host, gpu)):
        (out * tensor(weights, backend=x.backend)).sum().backward()
    assert_same(outs[1], outs[0])
    assert_same(gpu.grad, host.grad)


def test_maxpool2d_on_the_gpu_sends_a_tie_to_the_first_maximum_as_the_host_does():
    host, gpu = pair(np.array([[[[1.0, 1.0], [0.0, 1.0]]]]))
    for x in (host, gpu):
        maxpool2d(x, 2).sum().backward()
    assert gpu.grad.to_numpy().ravel().tolist() == host.grad.to_numpy().ravel().tolist() == [1.0, 0.0, 0.0, 0.0]


@pytest.mark.task("4.3")
@EXAMPLES
@given(pool_case())
def test_avgpool2d_on_the_gpu_matches_the_host_and_copies_nothing_back(case):
    values, kernel = case
    host, gpu = pair(values)
    avgpool2d(gpu, kernel)  # the first call uploads its shapes
    with count_transfers() as copies:
        on_gpu = avgpool2d(gpu, kernel)  # tile and mean: backend operations, run by the CUDA backend's kernels
        on_gpu.sum().backward()
    assert copies.to_host_calls == 0
    on_host = avgpool2d(host, kernel)
    on_host.sum().backward()
    assert_same(on_gpu, on_host)
    assert_same(gpu.grad, host.grad)


@EXAMPLES
@given(st.integers(1, 40), st.sampled_from([0.1, 0.5, 0.9]), st.integers(0, 2 ** 31))
def test_dropout_mask_on_the_gpu_is_the_hash_of_seed_and_position(size, rate, seed):
    gpu = tensor(np.full(size, 2.0), backend=GPU)
    dropped = dropout(gpu, rate, rng=seed)
    assert dropped.is_cuda
    drawn = int(np.random.default_rng(seed).integers(2 ** 32))
    expected = [2.0 / (1.0 - rate) if dropout_uniform(drawn, position) >= rate else 0.0 for position in range(size)]
    np.testing.assert_allclose(dropped.to_numpy(), expected)


def test_dropout_on_the_gpu_drops_the_rate_and_passes_gradients_through_the_mask():
    x = tensor(np.ones((8, 16)), backend=GPU, requires_grad=True)
    with count_transfers() as copies:
        dropped = dropout(x, 0.25, rng=np.random.default_rng(0))
        dropped.sum().backward()
    assert copies.to_host_calls == 0 and copies.to_device_bytes < 8 * x.size  # no mask uploaded: shapes and a seed
    values = dropped.to_numpy()
    assert 0.1 < (values == 0).mean() < 0.4
    np.testing.assert_array_equal(x.grad.to_numpy(), values)


@pytest.mark.task("4.6")
@pytest.mark.parametrize("make", [lambda ps: Adam(ps, lr=0.05, betas=(0.8, 0.99)), lambda ps: SGD(ps, lr=0.1, momentum=0.9)],
                         ids=["adam", "sgd-momentum"])
def test_optimiser_steps_on_the_gpu_match_the_host_and_copy_nothing_back(make):
    start = np.random.default_rng(3).normal(size=(3, 4))
    runs = []
    for backend in (FastBackend, GPU):
        weight = Parameter(tensor(start, backend=backend))
        optimizer = make([weight])
        for _ in range(4):
            optimizer.zero_grad()
            (weight.value * weight.value * weight.value).sum().backward()
            with count_transfers() as copies:
                optimizer.step()
            assert copies.to_host_calls == 0
        runs.append(weight.value)
    assert_same(runs[1], runs[0])


def lenet(backend: TensorBackend) -> Sequential:
    "A LeNet-like classifier of 1 x 6 x 6 images into 3 classes, tiny for the simulator."
    return Sequential(Conv2d(1, 2, 3, padding=1, backend=backend, seed=1), ReLU(), MaxPool2d(2), Flatten(),
                      Dropout(0.25, seed=0), Linear(2 * 3 * 3, 3, backend=backend, seed=2))


@pytest.mark.task("4.6")
def test_a_lenet_step_with_adam_on_the_gpu_copies_only_the_loss_to_the_host():
    model, loss_of = lenet(GPU), CrossEntropyLoss()
    rng = np.random.default_rng(0)
    images, labels = tensor(rng.normal(size=(4, 1, 6, 6)), backend=GPU), np.array([0, 1, 2, 1])
    optimizer = Adam(model.parameters(), lr=0.01)

    def step() -> float:
        optimizer.zero_grad()
        loss = loss_of(model(images), labels)
        loss.backward()
        optimizer.step()
        return loss.item()

    losses = [step()]  # the first step uploads each shape once
    with count_transfers() as copies:
        losses += [step() for _ in range(2)]
    assert (copies.to_host_calls, copies.to_host_bytes) == (2, 16)  # loss.item(): 8 bytes a step, nothing else
    assert all(p.value.is_cuda for p in model.parameters())
    assert all(moments.mean.is_cuda and moments.square.is_cuda for moments in optimizer.moments.values())
    assert np.isfinite(losses).all()
