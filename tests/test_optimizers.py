"""Optimisers: SGD with momentum, Adam and AdamW step by step against torch.optim, state kept per parameter, bad
settings; the learning-rate schedule and gradient clipping."""
import math

import numpy as np
import pytest
from backends import BACKENDS
from hypothesis import given, settings
from hypothesis import strategies as st
from tensor_strategies import arrays

import minitorch
from minitorch import SGD, Adam, Parameter, Scalar, tensor
from minitorch.adam import AdamW, clip_grad_norm_, lr_schedule, weight_decay_groups
from minitorch.module import Module
from minitorch.nn import Linear
from minitorch.tensor_indexing import Embedding

try:
    import torch
except ImportError:   # the parity tests skip without PyTorch
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
DTYPES = [pytest.param((minitorch.float64, "float64", 1e-6), id="float64"),
          pytest.param((minitorch.float32, "float32", 1e-4), id="float32")]
"Each dtype with its NumPy name and the tolerance of a comparison with PyTorch."
WITH_FUSED = BACKENDS + [pytest.param(minitorch.backend("fused"), id="fused")]
"The backends, and the fused one, whose AdamW and clipping are kernels of their own (61_fused)."

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


@pytest.fixture(scope="module", name="torch")
def torch_or_skip():
    return pytest.importorskip("torch")


def close(actual: minitorch.Tensor, expected: "torch.Tensor", tolerance: float, name: str = "") -> None:
    "Assert that our tensor and PyTorch's hold the same numbers, to `tolerance` relative and absolute."
    np.testing.assert_allclose(actual.to_numpy(), expected.detach().numpy(), rtol=tolerance, atol=tolerance,
                               err_msg=name)


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


# --- AdamW ----------------------------------------------------------------------------------------------------

class TwoLayers(Module):
    "A tiny model with every kind of parameter that weight_decay_groups sorts: Linear weights and biases, an Embedding."

    def __init__(self, backend, dtype):
        super().__init__()
        self.embedding = Embedding(5, 4, seed=1, backend=backend, dtype=dtype)
        self.first = Linear(4, 3, seed=2, backend=backend)
        self.second = Linear(3, 2, seed=3, backend=backend)
        for parameter in self.parameters():
            parameter.update(parameter.value.detach().to(dtype))

    def forward(self, ids):
        return self.second(self.first(self.embedding(ids)).tanh())


def torch_two_layers(model: TwoLayers) -> dict:
    "PyTorch leaf tensors with the model's parameter values, by name."
    return {name: torch.tensor(parameter.value.to_numpy(), requires_grad=True)
            for name, parameter in model.named_parameters()}


def torch_forward(weights: dict, ids: np.ndarray) -> "torch.Tensor":
    "TwoLayers' forward pass written with PyTorch's functions."
    hidden = weights["embedding.weight"][torch.tensor(ids)] @ weights["first.weight"].T + weights["first.bias"]
    return hidden.tanh() @ weights["second.weight"].T + weights["second.bias"]


@needs_torch
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("backend", WITH_FUSED)
@pytest.mark.parametrize("grouped", [False, True], ids=["one decay", "groups"])
def test_adamw_against_torch(backend, dtype, grouped):
    dtype, _, tolerance = dtype
    model = TwoLayers(backend, dtype)
    weights = torch_two_layers(model)
    settings = dict(lr=0.05, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.3)
    if grouped:
        groups = weight_decay_groups(model, 0.3)
        names = {parameter: name for name, parameter in model.named_parameters()}
        optimizer = AdamW(groups, **settings)
        reference = torch.optim.AdamW([{"params": [weights[names[parameter]] for parameter in group["params"]],
                                        "weight_decay": group["weight_decay"]} for group in groups], **settings)
    else:
        optimizer = AdamW(model.parameters(), **settings)
        reference = torch.optim.AdamW(weights.values(), **settings)
    rng = np.random.default_rng(0)
    for step in range(4):
        ids, targets = rng.integers(0, 5, size=(3,)), rng.normal(size=(3, 2))
        out = model(minitorch.tensor(ids, backend=backend, dtype=minitorch.int64))
        error = out - minitorch.tensor(targets, backend=backend, dtype=out.dtype)
        optimizer.zero_grad()
        (error * error).sum().backward()
        optimizer.step()
        reference.zero_grad()
        ((torch_forward(weights, ids) - torch.tensor(targets, dtype=weights["first.weight"].dtype)) ** 2).sum().backward()
        reference.step()
        for name, parameter in model.named_parameters():
            close(parameter.value, weights[name], tolerance, f"{name} after step {step + 1}")


@settings(max_examples=30)
@given(lr=st.floats(1e-4, 0.5), decay=st.floats(0.0, 2.0), values=st.lists(st.floats(-10, 10), min_size=1, max_size=6))
def test_adamw_with_a_zero_gradient_only_decays(lr, decay, values):
    weights = Parameter(minitorch.tensor(values, backend=minitorch.FastBackend))
    optimizer = AdamW([weights], lr=lr, weight_decay=decay)
    for _ in range(3):
        optimizer.zero_grad()
        (weights.value * 0.0).sum().backward()
        optimizer.step()
    np.testing.assert_allclose(weights.value.to_numpy(), np.array(values) * (1 - lr * decay) ** 3, rtol=1e-12,
                               atol=1e-12)


def test_adamw_steps_scalars_and_is_adam_without_decay():
    from minitorch.scalar import Scalar
    number = Parameter(Scalar(2.0))
    optimizer = AdamW([number], lr=0.1, weight_decay=0.5)
    (number.value * 3.0).backward()
    optimizer.step()
    assert math.isclose(number.value.data, 2.0 - 0.1 * 0.5 * 2.0 - 0.1, rel_tol=1e-9)
    plain, decayed = (Parameter(minitorch.tensor([1.0, -2.0])) for _ in range(2))
    adam, adamw = minitorch.Adam([plain], lr=0.1), AdamW([decayed], lr=0.1, weight_decay=0.0)
    for parameter, optimizer in ((plain, adam), (decayed, adamw)):
        (parameter.value * parameter.value).sum().backward()
        optimizer.step()
    np.testing.assert_array_equal(plain.value.to_numpy(), decayed.value.to_numpy())


def test_weight_decay_groups_decay_only_linear_weights():
    model = TwoLayers(minitorch.FastBackend, minitorch.float64)
    decayed, kept = weight_decay_groups(model, 0.1)
    assert decayed["weight_decay"] == 0.1 and kept["weight_decay"] == 0.0
    assert decayed["params"] == [model.first.weight, model.second.weight]
    assert kept["params"] == [model.embedding.weight, model.first.bias, model.second.bias]
    optimizer = AdamW(weight_decay_groups(model, 0.1))
    assert optimizer.weight_decays[model.first.weight] == 0.1 and optimizer.weight_decays[model.first.bias] == 0.0
    assert len(optimizer.parameters) == len(model.parameters())


def test_adamw_errors():
    weight, other = Parameter(minitorch.tensor([1.0])), Parameter(minitorch.tensor([2.0]))
    with pytest.raises(TypeError, match="not a mix"):
        AdamW([weight, {"params": [other]}])
    with pytest.raises(ValueError, match="keys 'params'"):
        AdamW([{"params": [weight], "lr": 0.1}])
    with pytest.raises(ValueError, match="keys 'params'"):
        AdamW([{"weight_decay": 0.1}])
    with pytest.raises(ValueError, match="more than one group"):
        AdamW([{"params": [weight]}, {"params": [weight, other]}])
    with pytest.raises(ValueError, match="weight_decay must be at least 0"):
        AdamW([weight], weight_decay=-0.1)
    with pytest.raises(ValueError, match="Adam needs lr > 0"):
        AdamW([weight], lr=0.0)
    groups = AdamW([{"params": iter([weight])}, {"params": [other], "weight_decay": 0.5}], weight_decay=0.2)
    assert groups.weight_decays == {weight: 0.2, other: 0.5}


# --- the schedule ---------------------------------------------------------------------------------------------

@settings(max_examples=50)
@given(warmup=st.integers(0, 50), decay=st.integers(0, 200), max_lr=st.floats(1e-5, 1.0),
       floor=st.floats(0.0, 1.0), step=st.integers(0, 400))
def test_lr_schedule(warmup, decay, max_lr, floor, step):
    decay_steps, min_lr = warmup + decay, max_lr * floor
    rate = lr_schedule(step, max_lr, warmup, decay_steps, min_lr)
    if step < warmup:
        assert math.isclose(rate, max_lr * (step + 1) / warmup)
    elif step >= decay_steps:
        assert rate == min_lr
    else:
        done = (step - warmup) / decay
        assert math.isclose(rate, min_lr + (max_lr - min_lr) * (1 + math.cos(math.pi * done)) / 2, rel_tol=1e-12)
        assert min_lr <= rate <= max_lr
        assert lr_schedule(step + 1, max_lr, warmup, decay_steps, min_lr) <= rate


@needs_torch
def test_lr_schedule_decay_is_cosine_annealing():
    warmup, decay_steps, max_lr, min_lr = 10, 60, 0.3, 0.01
    parameter = torch.zeros(1, requires_grad=True)
    optimizer = torch.optim.SGD([parameter], lr=max_lr)
    annealing = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=decay_steps - warmup, eta_min=min_lr)
    for step in range(warmup, decay_steps + 1):
        assert math.isclose(lr_schedule(step, max_lr, warmup, decay_steps, min_lr), optimizer.param_groups[0]["lr"],
                            rel_tol=1e-9), step
        optimizer.step()
        annealing.step()


def test_lr_schedule_ends_and_errors():
    assert lr_schedule(0, 1.0, 4, 10) == 0.25 and lr_schedule(3, 1.0, 4, 10) == lr_schedule(4, 1.0, 4, 10) == 1.0
    assert lr_schedule(0, 0.5, 0, 0, 0.1) == 0.1 and lr_schedule(5, 0.5, 5, 5, 0.1) == 0.1
    for arguments in [(-1, 1.0, 2, 5), (0, 1.0, -1, 5), (0, 1.0, 6, 5), (0, 1.0, 2, 5, 2.0), (0, 1.0, 2, 5, -0.1)]:
        with pytest.raises(ValueError, match="lr_schedule needs"):
            lr_schedule(*arguments)


# --- clipping -------------------------------------------------------------------------------------------------

@needs_torch
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("backend", WITH_FUSED)
@settings(max_examples=20)
@given(data=st.data(), shapes=st.lists(st.lists(st.integers(1, 3), min_size=1, max_size=2).map(tuple), min_size=1,
                                       max_size=3),
       max_norm=st.sampled_from([0.0, 0.1, 1.0, 100.0]))
def test_clip_grad_norm_against_torch(backend, dtype, data, shapes, max_norm):
    dtype, name, tolerance = dtype
    gradients = [data.draw(arrays(shape, name)) for shape in shapes]
    parameters = [Parameter(minitorch.tensor(np.zeros(shape), backend=backend, dtype=dtype)) for shape in shapes]
    for parameter, gradient in zip(parameters, gradients):
        parameter.value.grad = minitorch.tensor(gradient, backend=backend, dtype=dtype)
    parameters.append(Parameter(minitorch.tensor([1.0], backend=backend, dtype=dtype)))   # no gradient: skipped
    expected = [torch.zeros(shape, dtype=getattr(torch, name), requires_grad=True) for shape in shapes]
    for reference, gradient in zip(expected, gradients):
        reference.grad = torch.tensor(gradient)
    norm = clip_grad_norm_(parameters, max_norm)
    assert isinstance(norm, minitorch.Tensor) and norm.shape == (1,) and norm.backend is backend
    norm = norm.item()
    assert math.isclose(norm, torch.nn.utils.clip_grad_norm_(expected, max_norm).item(), rel_tol=tolerance,
                        abs_tol=tolerance)
    for parameter, reference in zip(parameters, expected):
        close(parameter.value.grad, reference.grad, tolerance)
    assert parameters[-1].value.grad is None


@needs_torch
@pytest.mark.parametrize("backend", BACKENDS)
@given(data=st.data(), names=st.lists(st.sampled_from(["float32", "float64"]), min_size=1, max_size=3))
def test_clip_grad_norm_of_transposed_gradients_of_mixed_dtypes(backend, data, names):
    "Gradients that are transposed views, in float32 and float64 together: clipped as PyTorch does, each in its dtype."
    gradients = [data.draw(arrays((2, 3), name)) * 10 for name in names]
    parameters = [Parameter(minitorch.tensor(np.zeros((3, 2)), backend=backend, dtype=name)) for name in names]
    for parameter, gradient, name in zip(parameters, gradients, names):
        parameter.value.grad = minitorch.tensor(gradient, backend=backend, dtype=name).permute(1, 0)
    expected = [torch.zeros((3, 2), dtype=getattr(torch, name), requires_grad=True) for name in names]
    for reference, gradient in zip(expected, gradients):
        reference.grad = torch.tensor(gradient).T
    norm = clip_grad_norm_(parameters, 1.0).item()
    assert math.isclose(norm, torch.nn.utils.clip_grad_norm_(expected, 1.0).item(), rel_tol=1e-5)
    for parameter, reference, name in zip(parameters, expected, names):
        assert parameter.value.grad.shape == (3, 2) and str(parameter.value.grad.dtype) == name
        close(parameter.value.grad, reference.grad, 1e-5)


@needs_torch
@pytest.mark.parametrize("chosen", ["fast", "fused"])
@pytest.mark.parametrize("special", [math.inf, math.nan])
def test_clip_grad_norm_of_a_non_finite_gradient_as_torch(special, chosen):
    gradient = np.array([1.0, special, -2.0])
    parameter = Parameter(minitorch.tensor([0.0, 0.0, 0.0], backend=chosen))
    parameter.value.grad = minitorch.tensor(gradient, backend=chosen)
    expected = torch.zeros(3, dtype=torch.float64, requires_grad=True)
    expected.grad = torch.tensor(gradient)
    norm, expected_norm = clip_grad_norm_([parameter], 1.0).item(), torch.nn.utils.clip_grad_norm_([expected], 1.0).item()
    assert (math.isnan(norm) and math.isnan(expected_norm)) or norm == expected_norm
    np.testing.assert_array_equal(parameter.value.grad.to_numpy(), expected.grad.numpy())


def test_fused_clip_grad_norm_scales_a_shared_gradient_once_for_each_parameter():
    "Two parameters holding one gradient tensor: each gets the scaled gradient, and the shared tensor is left as it was."
    fused = minitorch.backend("fused")
    shared = minitorch.tensor([3.0, 4.0], backend=fused)
    first, second = (Parameter(minitorch.tensor([0.0, 0.0], backend=fused)) for _ in range(2))
    first.value.grad = second.value.grad = shared
    assert clip_grad_norm_([first, second], 1.0).item() == pytest.approx(math.sqrt(50.0))
    for parameter in (first, second):
        np.testing.assert_allclose(parameter.value.grad.to_numpy(), np.array([3.0, 4.0]) / (math.sqrt(50.0) + 1e-6))
    assert shared.to_numpy().tolist() == [3.0, 4.0]
    first.value.grad = minitorch.tensor([0.3, 0.4], backend=fused)
    kept = first.value.grad
    assert clip_grad_norm_([first], 1.0).item() == pytest.approx(0.5) and first.value.grad is kept   # times one


@pytest.mark.parametrize("dtype", [minitorch.float32, minitorch.float64])
@settings(max_examples=20, deadline=None)
@given(data=st.data(), shape=st.lists(st.integers(1, 40), min_size=1, max_size=2).map(tuple),
       decay=st.sampled_from([0.0, 0.1, 2.0]))
def test_fused_adamw_gives_the_composed_numbers(dtype, data, shape, decay):
    "AdamW's kernel of the fused backend and the composed operations of the fast one: the same numbers, to the bit."
    start, gradients = data.draw(arrays(shape)), [data.draw(arrays(shape)) for _ in range(3)]
    results = []
    for chosen in ("fast", "fused"):
        parameter = Parameter(minitorch.tensor(start, backend=chosen, dtype=dtype, requires_grad=True))
        optimizer = AdamW([parameter], lr=0.05, betas=(0.8, 0.99), weight_decay=decay)
        for gradient in gradients:
            parameter.value.grad = minitorch.tensor(gradient, backend=chosen, dtype=dtype)
            optimizer.step()
        moments = optimizer.moments[parameter]
        results.append([parameter.value.to_numpy(), moments.mean.to_numpy(), moments.square.to_numpy()])
    for ours, composed in zip(results[1], results[0]):
        np.testing.assert_array_equal(ours, composed)


def test_clip_grad_norm_without_gradients_and_errors():
    parameter = Parameter(minitorch.tensor([1.0, 2.0]))
    assert clip_grad_norm_([parameter], 1.0).item() == 0.0 and clip_grad_norm_([], 1.0).item() == 0.0
    with pytest.raises(ValueError, match="max_norm must be at least 0"):
        clip_grad_norm_([parameter], -1.0)
    with pytest.raises(ValueError, match="max_norm must be at least 0"):
        clip_grad_norm_([parameter], math.nan)
