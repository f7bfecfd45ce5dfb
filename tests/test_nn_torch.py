"""PyTorch parity for chapter 4: conv, pooling, max, softmax and losses, values and gradients in float64."""
import math

import numpy as np
import pytest
from backends import BACKENDS
from hypothesis import given, settings
from hypothesis import strategies as st

import minitorch
from minitorch import tensor

torch = pytest.importorskip("torch")
functional = torch.nn.functional

pytestmark = pytest.mark.parametrize("backend", BACKENDS)


def close(ours, theirs):
    "Assert that a minitorch tensor equals a torch tensor to 1e-6 relative tolerance."
    expected = theirs.detach().numpy()
    scale = max(1.0, float(np.abs(expected).max(initial=0.0)))
    np.testing.assert_allclose(ours.to_numpy(), expected.reshape(ours.shape), rtol=1e-6, atol=1e-9 * scale)


def pairs(backend, *arrays):
    "For each array, a minitorch leaf and a torch leaf over the same float64 values."
    return [(tensor(values, backend=backend, requires_grad=True), torch.tensor(values, requires_grad=True))
            for values in arrays]


def compare(backend, ours_fn, theirs_fn, *arrays, seed=0):
    "Run both functions on the arrays; compare outputs, then the gradients of a random weighted sum of them."
    leaves = pairs(backend, *arrays)
    ours, theirs = ours_fn(*(leaf for leaf, _ in leaves)), theirs_fn(*(leaf for _, leaf in leaves))
    close(ours, theirs)
    weights = np.random.default_rng(seed).normal(size=tuple(theirs.shape))
    ours.backward(tensor(weights.reshape(ours.shape), backend=backend))
    theirs.backward(torch.tensor(weights))
    for our_leaf, their_leaf in leaves:
        close(our_leaf.grad, their_leaf.grad)


def distinct(shape, seed):
    "Values of `shape` without ties, so that max and max pooling have one maximum."
    rng = np.random.default_rng(seed)
    return rng.permutation(math.prod(shape)).reshape(shape) / 10.0 + rng.uniform(0, 0.05)


CONV2D_CASES = [((2, 3, 7, 6), (4, 3, 3, 2), 1, 0), ((1, 2, 5, 5), (3, 2, 3, 3), 2, 1),
                ((2, 1, 6, 9), (2, 1, 2, 4), (1, 3), (2, 0)), ((1, 4, 4, 4), (2, 4, 4, 4), 3, 2),
                ((3, 2, 8, 8), (5, 2, 1, 1), 1, 0)]


@pytest.mark.parametrize("input_shape, weight_shape, stride, padding", CONV2D_CASES)
@pytest.mark.parametrize("with_bias", [True, False])
def test_conv2d(backend, input_shape, weight_shape, stride, padding, with_bias):
    rng = np.random.default_rng(sum(input_shape))
    arrays = [rng.normal(size=input_shape), rng.normal(size=weight_shape)] + [rng.normal(size=weight_shape[0])] * with_bias
    compare(backend, lambda *args: minitorch.conv2d(*args, stride=stride, padding=padding),
            lambda *args: functional.conv2d(*args, stride=stride, padding=padding), *arrays)


@pytest.mark.parametrize("input_shape, weight_shape, stride, padding",
                         [((2, 3, 9), (4, 3, 3), 1, 0), ((1, 2, 7), (3, 2, 4), 2, 1), ((2, 1, 5), (2, 1, 2), 3, 2),
                          ((3, 2, 6), (1, 2, 1), 1, 0)])
@pytest.mark.parametrize("with_bias", [True, False])
def test_conv1d(backend, input_shape, weight_shape, stride, padding, with_bias):
    rng = np.random.default_rng(sum(input_shape))
    arrays = [rng.normal(size=input_shape), rng.normal(size=weight_shape)] + [rng.normal(size=weight_shape[0])] * with_bias
    compare(backend, lambda *args: minitorch.conv1d(*args, stride=stride, padding=padding),
            lambda *args: functional.conv1d(*args, stride=stride, padding=padding), *arrays)


@pytest.mark.task("4.3")
@pytest.mark.parametrize("shape, kernel", [((2, 3, 4, 6), 2), ((1, 2, 6, 6), (3, 2)), ((2, 1, 4, 4), 4), ((1, 1, 3, 5), (1, 5)),
                                           ((2, 2, 7, 5), 2), ((1, 3, 5, 9), (2, 4)), ((1, 1, 3, 3), 3)])
@pytest.mark.parametrize("with_stride", [False, True])
def test_pooling(backend, shape, kernel, with_stride):
    "Values and gradients as torch's; rows and columns that fill no block are dropped; a stride equal to the kernel."
    stride = {"stride": kernel} if with_stride else {}
    compare(backend, lambda x: minitorch.avgpool2d(x, kernel, **stride),
            lambda x: functional.avg_pool2d(x, kernel, **stride), distinct(shape, 1))
    compare(backend, lambda x: minitorch.maxpool2d(x, kernel, **stride),
            lambda x: functional.max_pool2d(x, kernel, **stride), distinct(shape, 2))
    for ours, theirs in [(minitorch.MaxPool2d(kernel, **stride), torch.nn.MaxPool2d(kernel, **stride)),
                         (minitorch.AvgPool2d(kernel, **stride), torch.nn.AvgPool2d(kernel, **stride))]:
        compare(backend, ours, theirs, distinct(shape, 3))


@pytest.mark.task("4.3")
@pytest.mark.parametrize("shape, dim", [((5,), 0), ((3, 4), 1), ((3, 4), 0), ((2, 3, 4), 1), ((2, 3, 4), -1)])
def test_max_and_argmax_along_a_dim(backend, shape, dim):
    values = distinct(shape, 3)
    compare(backend, lambda x: minitorch.max(x, dim), lambda x: torch.max(x, dim)[0], values)
    expected = torch.argmax(torch.tensor(values), dim).numpy()
    positions = minitorch.argmax(tensor(values, backend=backend), dim)
    assert positions.dtype == expected.dtype   # int64, as PyTorch's
    np.testing.assert_array_equal(positions.to_numpy().reshape(expected.shape), expected)


@pytest.mark.task("4.4")
@pytest.mark.parametrize("shape, dim", [((5,), 0), ((3, 4), 1), ((3, 4), 0), ((2, 3, 4), 1), ((2, 3, 4), -1)])
@pytest.mark.parametrize("scale", [1.0, 300.0])
def test_softmax_and_logsoftmax(backend, shape, dim, scale):
    values = np.random.default_rng(4).normal(size=shape) * scale
    compare(backend, lambda x: minitorch.softmax(x, dim), lambda x: torch.softmax(x, dim), values)
    compare(backend, lambda x: minitorch.logsoftmax(x, dim), lambda x: torch.log_softmax(x, dim), values)


@pytest.mark.task("4.3")
@pytest.mark.task("4.4")
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3), data=st.data(), keepdim=st.booleans(),
       nan=st.booleans(), seed=st.integers(0, 2**16))
@settings(max_examples=30)
def test_softmax_log_softmax_and_argmax_methods_as_torch(backend, shape, data, keepdim, nan, seed):
    "The methods as torch.Tensor's: argmax drops the dim unless keepdim, and without a dim looks at every element."
    dim = data.draw(st.none() | st.integers(-len(shape), len(shape) - 1))
    values = distinct(shape, seed)
    if nan:
        values.reshape(-1)[np.random.default_rng(seed).integers(values.size)] = math.nan   # the maximum, as in torch
    if dim is not None:
        compare(backend, lambda x: x.softmax(dim), lambda x: x.softmax(dim), np.nan_to_num(values))
        compare(backend, lambda x: x.log_softmax(dim), lambda x: x.log_softmax(dim), np.nan_to_num(values))
    ours = tensor(values, backend=backend).argmax(dim, keepdim=keepdim)
    theirs = torch.tensor(values).argmax(dim, keepdim=keepdim)
    assert ours.dtype == theirs.numpy().dtype and ours.shape == (tuple(theirs.shape) or (1,))
    np.testing.assert_array_equal(ours.to_numpy(), theirs.numpy().reshape(ours.shape))


@pytest.mark.task("4.3")
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3), data=st.data(), keepdim=st.booleans(),
       nan=st.booleans(), seed=st.integers(0, 2**16))
@settings(max_examples=30)
def test_max_and_min_methods_as_torch(backend, shape, data, keepdim, nan, seed):
    "`x.max(dim)` and `x.min(dim)` give torch's (values, indices), the dim dropped unless keepdim; without a dim, one value."
    dim = data.draw(st.none() | st.integers(-len(shape), len(shape) - 1))
    name = data.draw(st.sampled_from(["max", "min"]))
    values = distinct(shape, seed) - 1.0
    if dim is None:
        compare(backend, lambda x: getattr(x, name)(), lambda x: getattr(x, name)().reshape(1), values)
        return
    compare(backend, lambda x: getattr(x, name)(dim, keepdim).values, lambda x: getattr(x, name)(dim, keepdim).values,
            values)
    if nan:
        values.reshape(-1)[np.random.default_rng(seed).integers(values.size)] = math.nan   # the extreme, as in torch
    ours, theirs = getattr(tensor(values, backend=backend), name)(dim, keepdim), getattr(torch.tensor(values), name)(dim, keepdim)
    values_out, indices_out = ours   # unpacks as torch's does
    assert indices_out.dtype == minitorch.int64 and indices_out.shape == (tuple(theirs.indices.shape) or (1,))
    np.testing.assert_array_equal(indices_out.to_numpy(), theirs.indices.numpy().reshape(indices_out.shape))
    np.testing.assert_array_equal(values_out.to_numpy(), theirs.values.numpy().reshape(values_out.shape))


@pytest.mark.task("4.4")
@pytest.mark.parametrize("batch, classes", [(1, 2), (4, 3), (6, 10)])
def test_cross_entropy_and_nll_loss(backend, batch, classes):
    rng = np.random.default_rng(batch * classes)
    logits, labels = rng.normal(size=(batch, classes)) * 3, rng.integers(0, classes, size=batch)
    torch_labels = torch.tensor(labels)
    compare(backend, lambda x: minitorch.cross_entropy(x, labels), lambda x: functional.cross_entropy(x, torch_labels),
            logits)
    compare(backend, lambda x: minitorch.nll_loss(minitorch.logsoftmax(x, 1), list(labels)),
            lambda x: functional.nll_loss(torch.log_softmax(x, 1), torch_labels), logits)


@given(shape=st.lists(st.integers(0, 4), min_size=1, max_size=3), reduction=st.sampled_from(["mean", "sum", "none"]),
       seed=st.integers(0, 2**16))
@settings(max_examples=30, deadline=None)
def test_mse_loss_as_torch(backend, shape, reduction, seed):
    "Values and gradients in both arguments, each reduction, empty shapes included (whose mean is nan, as PyTorch's)."
    rng = np.random.default_rng(seed)
    compare(backend, lambda x, y: minitorch.mse_loss(x, y, reduction), lambda x, y: functional.mse_loss(x, y, reduction=reduction),
            rng.normal(size=shape), rng.normal(size=shape), seed=seed)
    module = minitorch.nn.MSELoss(reduction)
    ones = tensor(np.ones(shape), backend=backend)
    assert np.nansum(module(ones, ones).to_numpy()) == 0.0 and "MSELoss" in repr(module)   # nan: the mean of nothing


def test_mse_loss_refuses_shapes_that_would_broadcast(backend):
    predictions, targets = tensor(np.zeros((3, 1)), backend=backend), tensor(np.zeros(3), backend=backend)
    with pytest.raises(ValueError, match=r"input's shape \(3, 1\), got shape \(3,\): different shapes would broadcast"):
        minitorch.mse_loss(predictions, targets)
    with pytest.raises(ValueError, match=r"got a list"):
        minitorch.mse_loss(predictions, [0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match=r"reduction must be one of 'mean', 'sum', 'none', got 'max'"):
        minitorch.mse_loss(predictions, predictions, "max")


@pytest.mark.task("4.4")
@given(batch=st.integers(0, 6), classes=st.integers(1, 5), ignore_index=st.sampled_from([-100, -1, 0]),
       reduction=st.sampled_from(["mean", "sum", "none"]), as_tensor=st.booleans(), seed=st.integers(0, 2**16))
@settings(max_examples=30, deadline=None)
def test_losses_reduce_and_ignore_as_torch(backend, batch, classes, ignore_index, reduction, as_tensor, seed):
    "`reduction` and `ignore_index` as PyTorch's, labels as a list or an int64 tensor; a nan in an ignored row stays out."
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(batch, classes)) * 3
    labels = np.where(rng.random(batch) < 0.3, ignore_index, rng.integers(0, classes, size=batch))
    if batch and (labels == ignore_index).any():
        logits[np.argmax(labels == ignore_index), 0] = math.nan   # only in an ignored row
    given_labels = tensor(labels, backend=backend, dtype=minitorch.int64) if as_tensor else labels.tolist()
    compare(backend, lambda x: minitorch.cross_entropy(x, given_labels, ignore_index=ignore_index, reduction=reduction),
            lambda x: functional.cross_entropy(x, torch.tensor(labels), ignore_index=ignore_index,
                                               reduction=reduction), logits)


@pytest.mark.task("4.4")
def test_loss_options_are_checked(backend):
    logits = tensor(np.zeros((2, 3)), backend=backend)
    with pytest.raises(ValueError, match="reduction must be one of 'mean', 'sum', 'none', got 'average'"):
        minitorch.cross_entropy(logits, [0, 1], reduction="average")
    with pytest.raises(ValueError, match=r"label -1 at position 1 is not a class.*ignore_index=-100"):
        minitorch.cross_entropy(logits, [0, -1])
    assert repr(minitorch.CrossEntropyLoss(ignore_index=-1)) == "CrossEntropyLoss()"


@pytest.mark.task("4.5")
def test_a_sequential_model_with_copied_weights(backend):
    ours = minitorch.Sequential(minitorch.Conv2d(2, 3, 3, padding=1, backend=backend), minitorch.nn.ReLU(),
                                minitorch.MaxPool2d(2), minitorch.Flatten(), minitorch.Linear(12, 4, backend=backend))
    theirs = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                                 torch.nn.Flatten(), torch.nn.Linear(12, 4)).double()
    their_parameters = dict(theirs.named_parameters())
    assert [name for name, _ in ours.named_parameters()] == list(their_parameters)
    for name, parameter in ours.named_parameters():
        assert parameter.value.shape == tuple(their_parameters[name].shape), name
        parameter.update(tensor(their_parameters[name].detach().numpy(), backend=backend))
    values = np.random.default_rng(5).normal(size=(2, 2, 4, 4))
    labels = [1, 3]
    loss = minitorch.cross_entropy(ours(tensor(values, backend=backend)), labels)
    their_loss = functional.cross_entropy(theirs(torch.tensor(values)), torch.tensor(labels))
    close(loss, their_loss.reshape(1))
    loss.backward()
    their_loss.backward()
    for name, parameter in ours.named_parameters():
        close(parameter.value.grad, their_parameters[name].grad)


@pytest.mark.task("4.5")
def test_a_module_list_names_and_runs_as_torch(backend):
    "ModuleList holds layers under PyTorch's names; a forward that loops over it gives PyTorch's values."
    ours = minitorch.nn.ModuleList([minitorch.Linear(3, 3, backend=backend, seed=seed) for seed in range(2)])
    ours.append(minitorch.nn.ReLU())
    theirs = torch.nn.ModuleList([torch.nn.Linear(3, 3) for _ in range(2)]).double()
    theirs.append(torch.nn.ReLU())
    their_parameters = dict(theirs.named_parameters())
    assert [name for name, _ in ours.named_parameters()] == list(their_parameters) and len(ours) == len(theirs) == 3
    for name, parameter in ours.named_parameters():
        parameter.update(tensor(their_parameters[name].detach().numpy(), backend=backend))
    values = np.random.default_rng(2).normal(size=(4, 3))
    out, their_out = tensor(values, backend=backend), torch.tensor(values)
    for layer, their_layer in zip(ours, theirs):
        out, their_out = layer(out), their_layer(their_out)
    close(out, their_out)
    assert isinstance(ours[2], minitorch.nn.ReLU) and "(2): ReLU()" in repr(ours)
    with pytest.raises(TypeError, match="ModuleList holds modules, got int$"):
        ours.append(3)
    with pytest.raises(TypeError, match=r"holds modules, got ReLU: ReLU there is the autodiff Function; .* nn\.ReLU\(\)"):
        minitorch.nn.Sequential(minitorch.ReLU())   # classic MiniTorch's top-level ReLU is the Function
    with pytest.raises(NotImplementedError):
        ours(tensor(values, backend=backend))
    assert minitorch.nn.Embedding is minitorch.Embedding and minitorch.nn.LayerNorm is minitorch.LayerNorm


# --- minitorch.nn.functional: PyTorch's names and signatures (90_functional) -----------------------------------

def test_functional_activations_and_softmaxes_match_torch(backend):
    from minitorch.nn import functional as F
    values = np.random.default_rng(3).normal(size=(2, 3, 4))
    for ours_fn, theirs_fn in [(F.relu, functional.relu), (F.sigmoid, torch.sigmoid), (F.tanh, torch.tanh),
                               (lambda x: F.gelu(x, approximate="tanh"), lambda x: functional.gelu(x, approximate="tanh")),
                               (lambda x: F.softmax(x, dim=1), lambda x: functional.softmax(x, dim=1)),
                               (lambda x: F.log_softmax(x, -1), lambda x: functional.log_softmax(x, -1))]:
        compare(backend, ours_fn, theirs_fn, values)
    assert F.softmax(tensor(values, backend=backend), 1, dtype=minitorch.float32).dtype == minitorch.float32


@pytest.mark.parametrize("shape", [(5, 4), (2, 4, 3), (2, 4, 2, 3)], ids=["N,C", "N,C,d", "N,C,d1,d2"])
def test_functional_losses_take_classes_in_dim_1_as_torch(backend, shape):
    from minitorch.nn import functional as F
    rng = np.random.default_rng(4)
    scores, targets = rng.normal(size=shape), rng.integers(0, shape[1], size=(shape[0], *shape[2:]))
    targets.flat[0] = -1
    ids = tensor(targets, backend=backend, dtype=minitorch.int64)
    for reduction in ("mean", "sum", "none"):
        compare(backend, lambda x: F.cross_entropy(x, ids, ignore_index=-1, reduction=reduction),
                lambda x: functional.cross_entropy(x, torch.tensor(targets), ignore_index=-1, reduction=reduction), scores)
        compare(backend, lambda x: F.nll_loss(F.log_softmax(x, 1), ids, ignore_index=-1, reduction=reduction),
                lambda x: functional.nll_loss(functional.log_softmax(x, 1), torch.tensor(targets), ignore_index=-1,
                                              reduction=reduction), scores)
    with pytest.raises(NotImplementedError, match="label_smoothing"):
        F.cross_entropy(tensor(scores, backend=backend), ids, label_smoothing=0.1)
    with pytest.raises(NotImplementedError, match="weight"):
        F.nll_loss(tensor(scores, backend=backend), ids, weight=tensor(np.ones(shape[1]), backend=backend))
    if len(shape) > 2:
        with pytest.raises(ValueError, match="need targets of shape"):
            F.cross_entropy(tensor(scores, backend=backend), ids.contiguous().view(-1))


def test_functional_layers_as_functions_match_torch(backend):
    from minitorch.nn import functional as F
    rng = np.random.default_rng(5)
    x, weight, bias = rng.normal(size=(3, 4)), rng.normal(size=(2, 4)), rng.normal(size=2)
    compare(backend, F.linear, functional.linear, x, weight, bias)
    compare(backend, lambda a, w: F.linear(a, w), lambda a, w: functional.linear(a, w), x, weight)
    ids = rng.integers(0, 6, size=(2, 3))
    compare(backend, lambda table: F.embedding(tensor(ids, backend=backend), table),
            lambda table: functional.embedding(torch.tensor(ids), table), rng.normal(size=(6, 4)))
    hot = F.one_hot(tensor([2, 0], backend=backend), num_classes=3)
    assert hot.dtype == minitorch.int64 and hot.tolist() == functional.one_hot(torch.tensor([2, 0]), 3).tolist()
    images = rng.normal(size=(1, 2, 4, 4))
    compare(backend, lambda a: F.max_pool2d(a, 2), lambda a: functional.max_pool2d(a, 2), images)
    compare(backend, lambda a: F.avg_pool2d(a, 2), lambda a: functional.avg_pool2d(a, 2), images)
    ones = minitorch.ones(200, backend=backend)
    assert F.dropout(ones, 0.5, training=False) is ones and F.dropout(ones, 0.0) is not None
    assert set(np.unique(F.dropout(ones, 0.5, True).to_numpy())) <= {0.0, 2.0}
    with pytest.raises(NotImplementedError, match="inplace"):
        F.dropout(ones, 0.5, True, inplace=True)


def test_activation_layers_are_modules_in_nn(backend):
    values = np.linspace(-3, 3, 7)
    for ours, theirs in [(minitorch.nn.Tanh(), torch.nn.Tanh()), (minitorch.nn.Sigmoid(), torch.nn.Sigmoid())]:
        assert isinstance(ours, minitorch.Module) and repr(ours) == repr(theirs)
        compare(backend, ours, theirs, values)
