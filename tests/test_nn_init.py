"""`minitorch.nn.init` as `torch.nn.init`: the same gains, bounds and spreads, written in place into a Parameter's
tensor or a tensor on every backend, keeping its shape, dtype and gradient tracking; bad arguments are named."""
import math

import numpy as np
import pytest
from backends import BACKENDS

import minitorch
from minitorch import Parameter, nn

pytestmark = pytest.mark.task("4.5")
NONLINEARITIES = ["linear", "conv1d", "conv2d", "sigmoid", "tanh", "relu", "leaky_relu", "selu"]


@pytest.mark.parametrize("nonlinearity", NONLINEARITIES)
@pytest.mark.parametrize("param", [None, 0.2, math.sqrt(5)])
def test_gains_are_torchs(nonlinearity, param):
    torch = pytest.importorskip("torch")
    assert nn.init.calculate_gain(nonlinearity, param) == pytest.approx(torch.nn.init.calculate_gain(nonlinearity, param))


@pytest.mark.parametrize("mode", ["fan_in", "fan_out"])
@pytest.mark.parametrize("a, nonlinearity", [(0.0, "leaky_relu"), (math.sqrt(5), "leaky_relu"), (0.0, "relu"),
                                             (0.0, "tanh")])
def test_kaiming_bounds_and_spreads_are_torchs(mode, a, nonlinearity):
    torch = pytest.importorskip("torch")
    shape = (300, 40, 3)                                 # fan_in 120, fan_out 900
    ours = nn.init.kaiming_uniform_(minitorch.zeros(shape), a, mode, nonlinearity, seed=0).to_numpy()
    theirs = torch.nn.init.kaiming_uniform_(torch.zeros(shape, dtype=torch.float64), a, mode, nonlinearity).numpy()
    assert np.abs(ours).max() == pytest.approx(np.abs(theirs).max(), rel=1e-3)
    ours = nn.init.kaiming_normal_(minitorch.zeros(shape), a, mode, nonlinearity, seed=1).to_numpy()
    theirs = torch.nn.init.kaiming_normal_(torch.zeros(shape, dtype=torch.float64), a, mode, nonlinearity).numpy()
    assert ours.std() == pytest.approx(theirs.std(), rel=0.02)


@pytest.mark.parametrize("name, arguments", [("xavier_uniform_", {"gain": 2.0}), ("xavier_normal_", {"gain": 0.5}),
                                             ("uniform_", {"a": -2.0, "b": 3.0}), ("normal_", {"mean": 1.0, "std": 0.1})])
def test_spreads_are_torchs(name, arguments):
    torch = pytest.importorskip("torch")
    ours = getattr(nn.init, name)(minitorch.zeros((400, 500)), **arguments, seed=3).to_numpy()
    theirs = getattr(torch.nn.init, name)(torch.zeros((400, 500), dtype=torch.float64), **arguments).numpy()
    assert (ours.mean(), ours.std()) == pytest.approx((theirs.mean(), theirs.std()), rel=0.02, abs=0.01)
    if "uniform" in name:                                # the same bounds, met closely by 200,000 draws
        assert (ours.min(), ours.max()) == pytest.approx((theirs.min(), theirs.max()), abs=1e-3)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [minitorch.float32, minitorch.float64])
def test_values_are_written_in_place_keeping_the_tensor(backend, dtype):
    weight = Parameter(minitorch.zeros((6, 5), backend=backend, dtype=dtype))
    value, storage = weight.value, weight.value._tensor._storage
    assert nn.init.normal_(weight, std=0.02, seed=0) is weight
    assert weight.value is value and value._tensor._storage is storage and value.dtype == dtype
    assert value.requires_grad and value.is_leaf() and value.backend is backend and value.to_numpy().std() > 0
    plain = minitorch.zeros((2, 3), backend=backend, dtype=dtype)
    assert nn.init.constant_(plain, 0.5) is plain and plain.tolist() == [[0.5] * 3] * 2
    assert nn.init.ones_(plain).tolist() == [[1.0] * 3] * 2 and nn.init.zeros_(plain).tolist() == [[0.0] * 3] * 2


def test_seeds_repeat_and_manual_seed_repeats_unseeded_draws():
    first = nn.init.xavier_uniform_(minitorch.zeros((3, 4)), seed=5).tolist()
    assert nn.init.xavier_uniform_(minitorch.zeros((3, 4)), seed=5).tolist() == first
    minitorch.manual_seed(8)
    unseeded = nn.init.kaiming_normal_(minitorch.zeros((3, 4))).tolist()
    minitorch.manual_seed(8)
    assert nn.init.kaiming_normal_(minitorch.zeros((3, 4))).tolist() == unseeded


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="unknown nonlinearity 'swish'"):
        nn.init.calculate_gain("swish")
    with pytest.raises(ValueError, match="mode must be 'fan_in' or 'fan_out', got 'fan_avg'"):
        nn.init.kaiming_uniform_(minitorch.zeros((2, 2)), mode="fan_avg")
    with pytest.raises(TypeError, match="nn.init fills a tensor or a Parameter holding one, got float"):
        nn.init.zeros_(Parameter(1.5))
    with pytest.raises(ValueError, match="at least 2 dims"):
        nn.init.xavier_uniform_(minitorch.zeros(3))
