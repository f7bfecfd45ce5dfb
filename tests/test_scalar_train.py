"""SGD and the scalar network: the update rule, and the chapter's training claim on Xor."""
import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

import minitorch
from minitorch import SGD, Parameter, Scalar
from minitorch.scalar_train import ScalarLinear, ScalarNetwork, accuracy, classify, train

task = pytest.mark.task("1.8")
values = st.floats(min_value=-10, max_value=10)


@task
@given(values, values, st.floats(min_value=1e-3, max_value=1.0))
def test_sgd_step_moves_against_the_derivative(start, slope, lr):
    weight, untouched = Parameter(Scalar(start)), Parameter(Scalar(1.0))
    (weight.value * slope).backward()
    SGD([weight, untouched], lr=lr).step()
    assert math.isclose(weight.value.data, start - lr * slope, rel_tol=1e-12, abs_tol=1e-12)
    assert weight.value.is_leaf() and weight.value.derivative is None and untouched.value.data == 1.0


def test_zero_grad_clears_derivatives_and_grads():
    class HasGrad:
        grad = 1.0
    scalar, tensor_like = Parameter(Scalar(2.0)), Parameter(HasGrad())
    (scalar.value * 3.0).backward()
    SGD([scalar, tensor_like], lr=0.1).zero_grad()
    assert scalar.value.derivative is None and tensor_like.value.grad is None


@task
@given(st.lists(values, min_size=3, max_size=3), st.integers(0, 100))
def test_linear_forward_is_an_affine_map(inputs, seed):
    layer = ScalarLinear(3, 2, random.Random(seed))
    outputs = layer.forward(inputs)
    for j, output in enumerate(outputs):
        expected = layer.biases[j].value.data + sum(layer.weights[i][j].value.data * inputs[i] for i in range(3))
        assert math.isclose(output.data, expected, rel_tol=1e-9, abs_tol=1e-9)
    assert len(layer.parameters()) == 3 * 2 + 2


@task
@pytest.mark.full_depth  # 26 s; 15_scalar_train's short run always runs
def test_xor_reaches_95_percent_in_500_epochs():
    data = minitorch.datasets["Xor"](50, seed=1)
    model = ScalarNetwork(hidden=10, seed=0)
    losses = train(model, data, epochs=500, lr=1.0, progress=False)
    assert losses[-1] < losses[0] and accuracy(classify(model, data.X), data.y) >= 0.95
