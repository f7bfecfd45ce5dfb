"""Chapter-4 network functions and layers on every backend: values against NumPy, gradients by grad_check, bad input."""
import math

import numpy as np
import pytest
from backends import BACKENDS
from hypothesis import given, settings
from hypothesis import strategies as st

import minitorch
from minitorch import (AvgPool2d, Conv1d, Conv2d, Dropout, Flatten, IndexingError, Linear, MaxPool2d, Sequential,
                       argmax, avgpool2d, cross_entropy, dropout, grad_check, kaiming_normal, kaiming_uniform,
                       logsoftmax, maxpool2d, nll_loss, softmax, tensor, tile, xavier_normal, xavier_uniform,
                       zeros_init)

pytestmark = pytest.mark.parametrize("backend", BACKENDS)


def distinct(shape, seed):
    "Values of `shape` without ties (a shuffled range, scaled), so max and argmax have one answer."
    rng = np.random.default_rng(seed)
    return (rng.permutation(math.prod(shape)).reshape(shape) + rng.uniform(0.1, 0.4)) / 7.0


small_shapes = st.lists(st.integers(1, 3), min_size=1, max_size=3).map(tuple)


def test_max_reduce_of_the_backend(backend):
    values = distinct((3, 4, 2), 0)
    for dim in range(3):
        np.testing.assert_array_equal(backend.max_reduce(tensor(values, backend=backend), dim).to_numpy(),
                                      values.max(dim, keepdims=True))


@pytest.mark.task("4.3")
@settings(max_examples=25)
@given(shape=small_shapes, seed=st.integers(0, 1000), data=st.data())
def test_max_and_argmax_along_a_dim(backend, shape, seed, data):
    values = distinct(shape, seed)
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = tensor(values, backend=backend)
    np.testing.assert_array_equal(minitorch.max(x, dim, keepdim=True).to_numpy(), values.max(dim, keepdims=True))
    np.testing.assert_array_equal(minitorch.max(x, dim).to_numpy().reshape(values.max(dim).shape), values.max(dim))
    np.testing.assert_array_equal(argmax(x, dim).to_numpy().reshape(values.argmax(dim).shape), values.argmax(dim))
    grad_check(lambda t: minitorch.max(t, dim) * 2.0, x)


@pytest.mark.task("4.3")
def test_max_splits_the_gradient_between_ties_and_argmax_takes_the_first(backend):
    x = tensor([[3.0, 1.0, 3.0, 3.0], [0.0, 2.0, 2.0, -1.0]], backend=backend, requires_grad=True)
    minitorch.max(x, 1).sum().backward()
    np.testing.assert_allclose(x.grad.to_numpy(), [[1 / 3, 0, 1 / 3, 1 / 3], [0, 0.5, 0.5, 0]])
    assert argmax(x, 1).to_numpy().tolist() == [0.0, 1.0]


@pytest.mark.task("4.3")
@pytest.mark.parametrize("kernel", [1, 2, (2, 1), (1, 3), (4, 3)])
def test_tile_and_pooling_against_numpy(backend, kernel):
    kh, kw = (kernel, kernel) if isinstance(kernel, int) else kernel
    values = distinct((2, 3, 4, 6), 1)
    x = tensor(values, backend=backend)
    tiled, height, width = tile(x, kernel)
    blocks = values.reshape(2, 3, 4 // kh, kh, 6 // kw, kw)
    np.testing.assert_array_equal(tiled.to_numpy(), blocks.transpose(0, 1, 2, 4, 3, 5).reshape(tiled.shape))
    assert (height, width) == (4 // kh, 6 // kw)
    np.testing.assert_allclose(avgpool2d(x, kernel).to_numpy(), blocks.mean(axis=(3, 5)))
    np.testing.assert_array_equal(maxpool2d(x, kernel).to_numpy(), blocks.max(axis=(3, 5)))


@pytest.mark.task("4.3")
@pytest.mark.parametrize("pool", [avgpool2d, maxpool2d])
def test_pooling_gradients(backend, pool):
    grad_check(lambda x: pool(x, (2, 2)), tensor(distinct((1, 2, 4, 2), 2), backend=backend))
    grad_check(lambda x: pool(x.permute(0, 1, 3, 2), (1, 2)), tensor(distinct((2, 1, 2, 3), 3), backend=backend))


@pytest.mark.task("4.4")
@settings(max_examples=25)
@given(shape=small_shapes, seed=st.integers(0, 1000), data=st.data())
def test_softmax_and_logsoftmax(backend, shape, seed, data):
    values = np.random.default_rng(seed).normal(size=shape) * 3
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = tensor(values, backend=backend)
    exps = np.exp(values - values.max(dim, keepdims=True))
    expected = exps / exps.sum(dim, keepdims=True)
    np.testing.assert_allclose(softmax(x, dim).to_numpy(), expected, rtol=1e-10)
    np.testing.assert_allclose(logsoftmax(x, dim).to_numpy(), np.log(expected), rtol=1e-10, atol=1e-12)
    grad_check(lambda t: softmax(t, dim) * t, x)
    grad_check(lambda t: logsoftmax(t, dim) * t, x)


@pytest.mark.task("4.4")
@pytest.mark.parametrize("scale", [1000.0, -1000.0, 1e300])
def test_softmax_is_stable_for_huge_inputs(backend, scale):
    x = tensor([[1.0, 0.0, -1.0], [2.0, 2.0, 0.0]], backend=backend) * scale
    probabilities, log_probabilities = softmax(x, 1).to_numpy(), logsoftmax(x, 1).to_numpy()
    assert np.isfinite(probabilities).all() and not np.isnan(log_probabilities).any()
    np.testing.assert_allclose(probabilities.sum(1), 1.0)
    np.testing.assert_allclose(log_probabilities[0], [0.0, -abs(scale), -2 * abs(scale)] if scale > 0
                               else [-2 * abs(scale), -abs(scale), 0.0])


@pytest.mark.task("4.4")
@settings(max_examples=15)
@given(rate=st.floats(0.0, 1.0), seed=st.integers(0, 1000))
def test_dropout(backend, rate, seed):
    x = tensor(np.random.default_rng(seed).uniform(1, 2, size=(20, 30)), backend=backend)
    assert dropout(x, rate, ignore=True) is x
    out = dropout(x, rate, rng=seed).to_numpy()
    np.testing.assert_array_equal(dropout(x, rate, rng=seed).to_numpy(), out)
    kept = out != 0
    assert abs(1 - kept.mean() - rate) < 0.1
    np.testing.assert_allclose(out[kept], x.to_numpy()[kept] / (1 - rate))
    if 0 < rate < 1:  # on a few entries: the CUDA simulator runs a thread per entry in Python
        grad_check(lambda t: dropout(t, rate, rng=seed), tensor(x.to_numpy()[:2, :5], backend=backend))


@pytest.mark.task("4.4")
def test_dropout_module_draws_new_masks_and_is_off_in_eval_mode(backend):
    layer, x = Dropout(0.5, seed=0), tensor(np.ones((10, 10)), backend=backend)
    first, second = layer(x).to_numpy(), layer(x).to_numpy()
    assert (first != second).any()
    np.testing.assert_array_equal(Dropout(0.5, seed=0)(x).to_numpy(), first)
    assert layer.eval()(x) is x
    assert repr(Dropout(p=0.1)) == "Dropout(p=0.1)" and Dropout(0.25).p == 0.25   # PyTorch's name for it


@pytest.mark.task("4.4")
def test_losses_against_numpy_and_grad_check(backend):
    logits_values = np.random.default_rng(3).normal(size=(4, 5))
    labels = [4, 0, 2, 2]
    log_probs = logits_values - np.log(np.exp(logits_values).sum(1, keepdims=True))
    expected = -log_probs[np.arange(4), labels].mean()
    logits = tensor(logits_values, backend=backend)
    np.testing.assert_allclose(cross_entropy(logits, labels).item(), expected)
    np.testing.assert_allclose(nll_loss(tensor(log_probs, backend=backend), np.array(labels)).item(), expected)
    np.testing.assert_allclose(cross_entropy(logits, tensor(labels, backend=backend)).item(), expected)   # int64
    float_labels = tensor(labels, backend=backend, dtype=minitorch.float64)   # as classic MiniTorch made them
    np.testing.assert_allclose(cross_entropy(logits, float_labels).item(), expected)
    grad_check(lambda t: cross_entropy(t, labels), logits)
    grad_check(lambda t: nll_loss(t, labels), logits)


@pytest.mark.parametrize("action, error, message", [
    (lambda b: softmax(tensor(np.zeros((2, 3)), backend=b), 2), IndexingError, r"dim 2 is out of range .* \(2, 3\)"),
    (lambda b: logsoftmax(tensor(np.zeros((2, 3)), backend=b), -3), IndexingError, r"dim -3 .* \(2, 3\)"),
    (lambda b: minitorch.max(tensor(np.zeros((2, 3)), backend=b), 5), IndexingError, r"dim 5 .* \(2, 3\)"),
    (lambda b: cross_entropy(tensor(np.zeros((2, 3)), backend=b), [0, 3]), ValueError,
     r"label 3 at position 1 is not a class: 3 classes means labels 0 to 2"),
    (lambda b: nll_loss(tensor(np.zeros((2, 3)), backend=b), [-1, 0]), ValueError, r"label -1 at position 0"),
    (lambda b: nll_loss(tensor(np.zeros((2, 3)), backend=b), [0.5, 0]), ValueError, r"label 0.5 at position 0"),
    (lambda b: nll_loss(tensor(np.zeros((2, 3)), backend=b), [0, 1, 2]), ValueError, r"expected 2 labels .* \(3,\)"),
    (lambda b: maxpool2d(tensor(np.zeros((1, 1, 2, 2)), backend=b), 3), ValueError,
     r"kernel \(3, 3\) does not fit in the input's 2x2 maps"),
    (lambda b: tile(tensor(np.zeros((1, 1, 4, 6)), backend=b), 4), ValueError,
     r"kernel \(4, 4\) does not tile the input's 4x6 maps"),
    (lambda b: maxpool2d(tensor(np.zeros((1, 1, 4, 4)), backend=b), 2, stride=1), ValueError,
     r"maxpool2d pools non-overlapping blocks: the stride must be the kernel \(2, 2\) .* got \(1, 1\)"),
    (lambda b: avgpool2d(tensor(np.zeros((1, 1, 4, 4)), backend=b), (2, 1), stride=(1, 2)), ValueError,
     r"avgpool2d pools .* kernel \(2, 1\) .* got \(1, 2\)"),
    (lambda b: MaxPool2d(3, stride=2), ValueError, r"MaxPool2d pools .* kernel \(3, 3\) .* got \(2, 2\)"),
    (lambda b: AvgPool2d(2, 3), ValueError, r"AvgPool2d pools .* kernel \(2, 2\) .* got \(3, 3\)"),
    (lambda b: avgpool2d(tensor(np.zeros((4, 6)), backend=b), 2), ValueError, r"4-D input .* \(4, 6\)"),
    (lambda b: dropout(tensor(np.zeros(3), backend=b), -0.1), ValueError, r"between 0 and 1, got -0.1"),
    (lambda b: Linear(3, 2, backend=b)(tensor(np.zeros((4, 5)), backend=b)), ValueError,
     r"Linear\(in_features=3\) takes an \(N, 3\) input, got shape \(4, 5\)"),
    (lambda b: Conv2d(3, 2, 3, backend=b)(tensor(np.zeros((1, 2, 5, 5)), backend=b)), ValueError,
     r"input has 2 channels"),
])
def test_bad_input_names_the_values(backend, action, error, message):
    with pytest.raises(error, match=message):
        action(backend)


@pytest.mark.task("4.5")
@pytest.mark.parametrize("init, std", [
    (xavier_uniform, lambda fan_in, fan_out, gain=1.0: gain * math.sqrt(2 / (fan_in + fan_out))),
    (xavier_normal, lambda fan_in, fan_out, gain=1.0: gain * math.sqrt(2 / (fan_in + fan_out))),
    (kaiming_uniform, lambda fan_in, fan_out, gain=math.sqrt(2): gain / math.sqrt(fan_in)),
    (kaiming_normal, lambda fan_in, fan_out, gain=math.sqrt(2): gain / math.sqrt(fan_in))])
@pytest.mark.parametrize("shape", [(150, 100), (20, 10, 3, 4)])
def test_initialisers(backend, init, std, shape):
    fan_in, fan_out = shape[1] * math.prod(shape[2:]), shape[0] * math.prod(shape[2:])
    weights = init(shape, rng=1, backend=backend)
    assert weights.shape == shape and weights.backend is backend
    assert abs(weights.to_numpy().std() / std(fan_in, fan_out) - 1) < 0.03
    assert abs(init(shape, gain=3.0, rng=1).to_numpy().std() / std(fan_in, fan_out, 3.0) - 1) < 0.03
    np.testing.assert_array_equal(init(shape, rng=1).to_numpy(), weights.to_numpy())
    assert (init(shape, rng=2).to_numpy() != weights.to_numpy()).any()
    assert (zeros_init(shape, backend=backend).to_numpy() == 0).all()


@pytest.mark.task("4.5")
def test_linear_layer(backend):
    layer = Linear(3, 4, seed=5, backend=backend)
    weight, bias = layer.weight.value, layer.bias.value
    assert weight.shape == (4, 3) and bias.shape == (4,) and (bias.to_numpy() == 0).all()
    bound = math.sqrt(6 / 3)
    assert np.abs(weight.to_numpy()).max() <= bound
    np.testing.assert_array_equal(Linear(3, 4, seed=5).weight.value.to_numpy(), weight.to_numpy())
    x = tensor(np.random.default_rng(0).normal(size=(5, 3)), backend=backend)
    np.testing.assert_allclose(layer(x).to_numpy(), x.to_numpy() @ weight.to_numpy().T)
    grad_check(lambda t, w, b: t @ w.permute(1, 0) + b, x, weight.detach(), bias.detach())
    no_bias = Linear(3, 2, bias=False, backend=backend)
    assert [name for name, _ in no_bias.named_parameters()] == ["weight"] and no_bias(x).shape == (5, 2)
    assert "in_features=3, out_features=4, bias=True" in repr(layer)


@pytest.mark.task("4.5")
def test_conv_layers(backend):
    conv = Conv2d(2, 3, (3, 2), stride=(2, 1), padding=1, seed=1, backend=backend)
    assert conv.weight.value.shape == (3, 2, 3, 2) and conv.bias.value.shape == (3,)
    x = tensor(np.random.default_rng(1).normal(size=(2, 2, 5, 4)), backend=backend)
    np.testing.assert_allclose(conv(x).to_numpy(),
                               minitorch.conv2d(x, conv.weight.value, conv.bias.value, (2, 1), 1).to_numpy())
    conv1 = Conv1d(2, 3, 3, stride=2, padding=1, bias=False, backend=backend)
    signal = tensor(np.random.default_rng(2).normal(size=(2, 2, 7)), backend=backend)
    assert conv1(signal).shape == (2, 3, 4) and [name for name, _ in conv1.named_parameters()] == ["weight"]
    np.testing.assert_allclose(conv1(signal).to_numpy(), minitorch.conv1d(signal, conv1.weight.value, None, 2, 1).to_numpy())


@pytest.mark.task("4.5")
def test_sequential_names_trains_and_evaluates(backend):
    model = Sequential(Conv2d(1, 2, 3, padding=1, backend=backend), minitorch.nn.ReLU(), AvgPool2d(2),
                       MaxPool2d((1, 2)), Flatten(), Linear(4, 3, seed=1, backend=backend), Dropout(0.5, seed=0))
    assert [name for name, _ in model.named_parameters()] == ["0.weight", "0.bias", "5.weight", "5.bias"]
    assert len(model) == 7 and isinstance(model[5], Linear)
    x = tensor(np.random.default_rng(4).normal(size=(3, 1, 4, 4)), backend=backend)
    loss = cross_entropy(model(x), [0, 1, 2])
    loss.backward()
    assert all(parameter.value.grad is not None for parameter in model.parameters())
    model.eval()
    assert not model[6].training
    np.testing.assert_array_equal(model(x).to_numpy(), model(x).to_numpy())


def test_module_dict_holds_modules_by_name_as_torch(backend):
    layers = minitorch.nn.ModuleDict({"first": minitorch.Linear(2, 3, backend=backend)})
    layers.update([("second", minitorch.Linear(3, 1, backend=backend))])
    layers["act"] = minitorch.nn.Tanh()
    assert list(layers) == layers.keys() == ["first", "second", "act"] and len(layers) == 3 and "act" in layers
    assert [name for name, _ in layers.named_parameters()] == ["first.weight", "first.bias", "second.weight", "second.bias"]
    assert layers.values()[1] is layers["second"] and layers.items()[0][0] == "first"
    with pytest.raises(KeyError, match="has no module 'third'"):
        layers["third"]
    with pytest.raises(TypeError, match="holds modules, got int"):
        layers["third"] = 3
