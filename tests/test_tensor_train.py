"""The TensorLinear layer and training loop: forward against NumPy, gradients by grad_check, loss decreases."""
import numpy as np
import pytest
from backends import BACKENDS

import minitorch
from minitorch import grad_check, tensor
from minitorch.tensor_train import TensorLinear, TensorNetwork, bce_loss, graph_tensors, train

pytestmark = pytest.mark.task("2.8")


@pytest.mark.parametrize("backend", BACKENDS)
def test_linear_matches_numpy_and_grad_check(backend):
    layer = TensorLinear(3, 4, seed=2)
    inputs = tensor(np.random.default_rng(0).normal(size=(5, 3)), backend=backend)
    weight, bias = layer.weight.value, layer.bias.value
    np.testing.assert_allclose(layer(inputs).to_numpy(), inputs.to_numpy() @ weight.to_numpy() + bias.to_numpy())
    grad_check(lambda x, w, b: (x @ w + b).sigmoid(), inputs, weight.detach(), bias.detach())
    assert [name for name, _ in layer.named_parameters()] == ["weight", "bias"]


def test_training_reduces_the_loss_on_xor():
    data = minitorch.datasets["Xor"](30, seed=2)
    model = TensorNetwork(hidden=6, seed=1)
    points, labels = graph_tensors(data)
    before = bce_loss(model(points), labels).item()
    losses = train(model, data, epochs=40, lr=1.0, progress=False)
    assert losses[0] == pytest.approx(before) and losses[-1] < 0.85 * before


@pytest.mark.parametrize("backend", BACKENDS)
def test_linear_puts_its_parameters_on_the_backend_it_is_given(backend):
    layer = TensorLinear(3, 4, seed=2, backend=backend)
    reference = TensorLinear(3, 4, seed=2)
    for (name, parameter), (_, expected) in zip(layer.named_parameters(), reference.named_parameters()):
        assert parameter.value.backend is backend, name
        np.testing.assert_array_equal(parameter.value.to_numpy(), expected.value.to_numpy())
    inputs = tensor(np.random.default_rng(1).normal(size=(5, 3)), backend=backend)
    out = layer(inputs)
    assert out.backend is backend
    out.sum().backward()
    assert layer.weight.value.grad.shape == (3, 4) and inputs.grad is None


def test_bce_loss_is_finite_and_exact_for_confident_scores():
    values = [-800.0, -40.0, -1.0, 0.0, 2.0, 40.0, 800.0]
    for label in (0.0, 1.0):
        scores = tensor([[value] for value in values], requires_grad=True)
        loss = bce_loss(scores, tensor([[label]] * len(values)))
        margins = [value if label == 0.0 else -value for value in values]
        exact = np.mean([max(m, 0.0) + np.log1p(np.exp(-abs(m))) for m in margins])
        assert loss.item() == pytest.approx(exact, rel=1e-12)
        loss.backward()
        expected = [(minitorch.operators.sigmoid(value) - label) / len(values) for value in values]
        np.testing.assert_allclose(scores.grad.to_numpy().ravel(), expected, rtol=1e-12, atol=1e-18)
