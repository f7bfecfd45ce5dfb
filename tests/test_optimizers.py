"""Optimisers: SGD with momentum and Adam step by step against torch.optim, state kept per parameter, bad settings."""
import numpy as np
import pytest
from backends import BACKENDS

from minitorch import SGD, Adam, Parameter, Scalar, tensor

pytestmark = pytest.mark.task("4.6")

STEPS = 8
SGD_CASES = [dict(lr=0.1, momentum=0.0), dict(lr=0.1, momentum=0.5), dict(lr=0.05, momentum=0.9),
             dict(lr=0.1, weight_decay=0.3), dict(lr=0.05, momentum=0.9, weight_decay=0.5)]
ADAM_CASES = [dict(), dict(lr=0.05, betas=(0.8, 0.99)), dict(lr=0.1, betas=(0.5, 0.9), eps=1e-6),
              dict(lr=0.05, weight_decay=0.4)]
CASES = [pytest.param(SGD, "SGD", case, id=f"sgd-{case}") for case in SGD_CASES] + \
        [pytest.param(Adam, "Adam", case, id=f"adam-{case}") for case in ADAM_CASES]

rng = np.random.default_rng(7)
POINTS = rng.normal(size=(5, 3))
TARGETS = rng.normal(size=(5, 2))
START = {"weight": rng.normal(size=(3, 2)), "bias": rng.normal(size=(2,)), "gain": rng.normal(size=(1,))}


def tensor_loss(values: dict, points, targets, step: int):
    "A smooth loss of three parameters; `gain` is only used on even steps (no gradient on odd ones)."
    scores = (points @ values["weight"] + values["bias"]).sigmoid()
    loss = ((scores - targets) * (scores - targets)).sum() + (values["weight"] * values["weight"]).sum() * 0.1
    if step % 2 == 0:
        loss = loss + (values["gain"] * values["gain"] * values["gain"]).sum() * 0.3
    return loss


def assert_close(ours: np.ndarray, theirs: np.ndarray):
    "Equal to 1e-6 relative tolerance (float64 on both sides)."
    np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-12)


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("ours_class, torch_name, settings", CASES)
def test_tensor_parameters_match_torch_step_by_step(torch, backend, ours_class, torch_name, settings):
    ours = {name: Parameter(tensor(value, backend=backend)) for name, value in START.items()}
    theirs = {name: torch.tensor(value, dtype=torch.float64, requires_grad=True) for name, value in START.items()}
    ours_optimizer = ours_class(list(ours.values()), **settings)
    theirs_optimizer = getattr(torch.optim, torch_name)(list(theirs.values()), **settings)
    points, targets = tensor(POINTS, backend=backend), tensor(TARGETS, backend=backend)
    torch_points, torch_targets = torch.tensor(POINTS), torch.tensor(TARGETS)
    for step in range(STEPS):
        ours_optimizer.zero_grad()
        theirs_optimizer.zero_grad()
        tensor_loss({name: parameter.value for name, parameter in ours.items()}, points, targets, step).backward()
        tensor_loss(theirs, torch_points, torch_targets, step).backward()
        ours_optimizer.step()
        theirs_optimizer.step()
        for name in START:
            assert_close(ours[name].value.to_numpy(), theirs[name].detach().numpy())
    assert all(parameter.value.backend is backend for parameter in ours.values())


@pytest.mark.parametrize("ours_class, torch_name, settings", CASES)
def test_scalar_parameters_match_torch_step_by_step(torch, ours_class, torch_name, settings):
    ours = [Parameter(Scalar(0.8)), Parameter(Scalar(-1.3))]
    theirs = [torch.tensor(0.8, dtype=torch.float64, requires_grad=True),
              torch.tensor(-1.3, dtype=torch.float64, requires_grad=True)]
    ours_optimizer = ours_class(ours, **settings)
    theirs_optimizer = getattr(torch.optim, torch_name)(theirs, **settings)

    def loss(u, v):
        product = u * v - 1.0
        return product * product + (u * 2.0).sigmoid() + v * v * 0.5

    for _ in range(STEPS):
        ours_optimizer.zero_grad()
        theirs_optimizer.zero_grad()
        loss(ours[0].value, ours[1].value).backward()
        loss(theirs[0], theirs[1]).backward()
        ours_optimizer.step()
        theirs_optimizer.step()
        assert_close(np.array([p.value.data for p in ours]), np.array([p.item() for p in theirs]))


def tied_model(framework):
    "An embedding whose table also scores the output (tied weights, as GPT's wte and lm_head), written as PyTorch."
    nn = framework.nn
    model = nn.Module()
    model.embed, model.head = nn.Module(), nn.Module()
    model.embed.weight = nn.Parameter(framework.tensor(START["weight"].T.copy()))   # 2 rows of 3
    model.head.weight = model.embed.weight
    model.gain = nn.Parameter(framework.tensor(START["gain"]))
    return model


def tied_loss(model, ids, targets):
    "Squared error of the scores (sigmoids) of the embedded ids, by the same table."
    scores = ((model.embed.weight[ids] * model.gain) @ model.head.weight.T).sigmoid()
    return ((scores - targets) * (scores - targets)).sum()


@pytest.mark.parametrize("ours_class, torch_name, settings", CASES)
def test_a_tied_model_trains_as_in_torch(torch, ours_class, torch_name, settings):
    "An optimiser over model.parameters() moves a parameter shared by two layers once per step, as torch's does."
    import minitorch
    ours, theirs = tied_model(minitorch), tied_model(torch)
    assert len(ours.parameters()) == len(list(theirs.parameters())) == 2
    ours_optimizer = ours_class(ours.parameters(), **settings)
    theirs_optimizer = getattr(torch.optim, torch_name)(theirs.parameters(), **settings)
    ids, targets = [1, 0, 1], rng.normal(size=(3, 2))
    for _ in range(STEPS):
        ours_optimizer.zero_grad()
        theirs_optimizer.zero_grad()
        tied_loss(ours, tensor(ids, dtype=minitorch.int64), tensor(targets)).backward()
        tied_loss(theirs, torch.tensor(ids), torch.tensor(targets)).backward()
        ours_optimizer.step()
        theirs_optimizer.step()
        assert_close(ours.embed.weight.value.to_numpy(), theirs.embed.weight.detach().numpy())
        assert_close(ours.gain.value.to_numpy(), theirs.gain.detach().numpy())
    assert ours.head.weight is ours.embed.weight and np.isfinite(ours.embed.weight.value.to_numpy()).all()


def run_with_reordering(optimizer_class, reorder: bool, **settings) -> list[float]:
    "Final values after 6 steps on two Scalars; with `reorder`, the parameter list is reversed after step 3."
    parameters = [Parameter(Scalar(1.0)), Parameter(Scalar(-2.0))]
    optimizer = optimizer_class(parameters, **settings)
    for step in range(6):
        if reorder and step == 3:
            optimizer.parameters = optimizer.parameters[::-1]
        optimizer.zero_grad()
        u, v = parameters[0].value, parameters[1].value
        (u * u * 3.0 + v * v * v * 0.1).backward()
        optimizer.step()
    return [parameter.value.data for parameter in parameters]


@pytest.mark.parametrize("optimizer_class, settings", [(SGD, dict(lr=0.05, momentum=0.9)), (Adam, dict(lr=0.1))])
def test_state_is_kept_per_parameter_not_per_position(optimizer_class, settings):
    assert run_with_reordering(optimizer_class, True, **settings) == run_with_reordering(optimizer_class, False, **settings)


def test_parameters_without_gradient_are_left_alone():
    used, unused = Parameter(Scalar(1.0)), Parameter(Scalar(5.0))
    for optimizer in [SGD([used, unused], lr=0.1, momentum=0.9), Adam([used, unused], lr=0.1)]:
        optimizer.zero_grad()
        (used.value * 2.0).backward()
        optimizer.step()
        assert unused.value.data == 5.0
    assert unused not in optimizer.moments and optimizer.moments[used].count == 1


def test_plain_sgd_keeps_no_velocity():
    weight = Parameter(Scalar(1.0))
    optimizer = SGD([weight], 0.5)
    (weight.value * 2.0).backward()
    optimizer.step()
    assert weight.value.data == 0.0 and optimizer.velocities == {}


@pytest.mark.parametrize("settings, named", [
    (dict(lr=0.0), "lr=0.0"), (dict(betas=(0.9, 1.0)), "betas=(0.9, 1.0)"), (dict(eps=-1.0), "eps=-1.0"),
])
def test_adam_rejects_bad_settings_by_value(settings, named):
    with pytest.raises(ValueError, match=named.replace("(", r"\(").replace(")", r"\)")):
        Adam([Parameter(Scalar(1.0))], **settings)


@pytest.mark.parametrize("momentum", [-0.1, 1.0])
def test_sgd_rejects_momentum_outside_unit_interval(momentum):
    with pytest.raises(ValueError, match=f"got {momentum}"):
        SGD([Parameter(Scalar(1.0))], lr=0.1, momentum=momentum)


@pytest.mark.parametrize("optimizer_class", [SGD, Adam])
@pytest.mark.parametrize("weight_decay", [-0.1, float("nan")])
def test_weight_decay_must_be_at_least_zero(optimizer_class, weight_decay):
    with pytest.raises(ValueError, match=f"weight_decay must be at least 0, got {weight_decay}"):
        optimizer_class([Parameter(Scalar(1.0))], lr=0.1, weight_decay=weight_decay)


@pytest.mark.parametrize("backend", BACKENDS)
def test_zero_grad_set_to_none_as_torch(torch, backend):
    "zero_grad() leaves None (PyTorch's default); set_to_none=False leaves zeros of the gradient's shape."
    weight = Parameter(tensor([[1.0, 2.0]], backend=backend))
    scalar = Parameter(Scalar(3.0))
    optimizer = SGD([weight, scalar], lr=0.1)
    (weight.value * weight.value).sum().backward()
    (scalar.value * 2.0).backward()
    optimizer.zero_grad(set_to_none=False)
    assert weight.value.grad.tolist() == [[0.0, 0.0]] and scalar.value.derivative == 0.0
    optimizer.zero_grad()
    assert weight.value.grad is None and scalar.value.derivative is None
    twin = torch.tensor([[1.0, 2.0]], requires_grad=True)
    (twin * twin).sum().backward()
    torch.optim.SGD([twin], lr=0.1).zero_grad(set_to_none=False)
    assert twin.grad.tolist() == [[0.0, 0.0]]
