"""Attention (chapter 5): scaled dot-product attention and CausalSelfAttention against PyTorch, masks, gradients by
central differences, the errors, and Linear on (*, in_features) inputs."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minitorch
from minitorch.attention import CausalSelfAttention, attention_weights, scaled_dot_product_attention
from minitorch.fast_ops import ELEMENT_WORK, PARALLEL_WORK
from minitorch.fused import (CausalAttentionFun, FusedBackend, LinearFun, SoftmaxFun, float32_exp_nonpositive,
                             fused_causal_attention, fused_softmax)
from minitorch.nn import Linear, softmax
from minitorch.tensor_functions import GetItem, View
from minitorch.tensor_indexing import tril
from backends import BACKENDS
from tensor_strategies import arrays

pytestmark = pytest.mark.usefixtures("fast_default_backend")   # as the chapter's notebooks set it

try:
    import torch
except ImportError:   # the parity tests skip without PyTorch
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")

DTYPES = [pytest.param((minitorch.float64, np.float64, 1e-6), id="float64"),
          pytest.param((minitorch.float32, np.float32, 1e-4), id="float32")]


def made(values: np.ndarray, backend, dtype, requires_grad: bool = False) -> minitorch.Tensor:
    "`values` as a minitorch tensor of `dtype` on `backend`."
    return minitorch.tensor(values, backend=backend, dtype=dtype, requires_grad=requires_grad)


def close(ours: minitorch.Tensor | np.ndarray, theirs, tolerance: float, what: str = "") -> None:
    "Assert that a minitorch tensor (or array) and a torch tensor agree to `tolerance`, relative and absolute."
    ours = ours.to_numpy() if isinstance(ours, minitorch.Tensor) else ours
    theirs = theirs.detach().numpy() if torch is not None and isinstance(theirs, torch.Tensor) else theirs
    np.testing.assert_allclose(ours, theirs, rtol=tolerance, atol=tolerance, err_msg=what)


@st.composite
def attention_cases(draw):
    "Shapes (batch dims, L, S, E, Ev), a mask kind and a scale for one attention."
    batch = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    length, source = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    features, value_features = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    mask = draw(st.sampled_from(["none", "causal", "full", "broadcast"]))
    scale = draw(st.one_of(st.none(), st.floats(0.1, 2.0)))
    return batch, length, source, features, value_features, mask, scale, draw(st.integers(0, 2 ** 16))


@pytest.mark.task("5.4")
@needs_torch
@pytest.mark.parametrize("dtypes", DTYPES)
@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=30, deadline=None)
@given(case=attention_cases())
def test_attention_against_torch(backend, dtypes, case):
    dtype, np_dtype, tolerance = dtypes
    batch, length, source, features, value_features, mask_kind, scale, seed = case
    rng = np.random.default_rng(seed)
    arrays = [rng.normal(size=(*batch, length, features)), rng.normal(size=(*batch, source, features)),
              rng.normal(size=(*batch, source, value_features))]
    upstream = rng.normal(size=(*batch, length, value_features))
    mask = None
    if mask_kind in ("full", "broadcast"):
        mask = rng.random(batch + (length, source) if mask_kind == "full" else (length, source)) < 0.6
        mask[..., 0] = True   # every query sees at least one key: no row of NaN
    ours = [made(array, backend, dtype, requires_grad=True) for array in arrays]
    out = scaled_dot_product_attention(*ours, attn_mask=None if mask is None else minitorch.tensor(mask, backend=backend),
                                       is_causal=mask_kind == "causal", scale=scale)
    (out * made(upstream, backend, dtype)).sum().backward()
    theirs = [torch.tensor(array.astype(np_dtype), requires_grad=True) for array in arrays]
    expected = torch.nn.functional.scaled_dot_product_attention(
        *theirs, attn_mask=None if mask is None else torch.tensor(mask), is_causal=mask_kind == "causal", scale=scale)
    (expected * torch.tensor(upstream.astype(np_dtype))).sum().backward()
    assert out.shape == tuple(expected.shape) and out.dtype == dtype
    close(out, expected, tolerance, "values")
    for name, mine, reference in zip(["query", "key", "value"], ours, theirs):
        close(mine.grad, reference.grad, tolerance, f"gradient of the {name}")


class TorchCausalSelfAttention(torch.nn.Module if torch is not None else object):
    "nanoGPT's CausalSelfAttention in PyTorch, the reference: c_attn makes q, k, v (thirds), c_proj mixes the heads."

    def __init__(self, n_embd: int, n_head: int, bias: bool, dtype):
        super().__init__()
        self.n_head = n_head
        self.c_attn = torch.nn.Linear(n_embd, 3 * n_embd, bias=bias, dtype=dtype)
        self.c_proj = torch.nn.Linear(n_embd, n_embd, bias=bias, dtype=dtype)

    def forward(self, x):
        batch, time, channels = x.shape
        q, k, v = self.c_attn(x).split(channels, dim=2)
        q, k, v = (part.view(batch, time, self.n_head, channels // self.n_head).transpose(1, 2) for part in (q, k, v))
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).contiguous().view(batch, time, channels))


def torch_twin(block: CausalSelfAttention, np_dtype) -> "TorchCausalSelfAttention":
    "The PyTorch reference with `block`'s weights copied in."
    twin = TorchCausalSelfAttention(block.n_embd, block.n_head, block.qkv.bias is not None, getattr(torch, np_dtype.__name__))
    names = {"qkv": "c_attn", "proj": "c_proj"}
    with torch.no_grad():
        for name, parameter in block.named_parameters():
            layer, kind = name.split(".")
            getattr(getattr(twin, names[layer]), kind).copy_(torch.tensor(parameter.value.to_numpy().astype(np_dtype)))
    return twin


@pytest.mark.task("5.5")
@needs_torch
@pytest.mark.parametrize("dtypes", DTYPES)
@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=20, deadline=None)
@given(batch=st.integers(1, 2), time=st.integers(1, 5), n_head=st.integers(1, 3), head_size=st.integers(1, 3),
       bias=st.booleans(), seed=st.integers(0, 1000))
def test_causal_self_attention_against_torch(backend, dtypes, batch, time, n_head, head_size, bias, seed):
    dtype = dtypes[0]
    n_embd = n_head * head_size
    block = CausalSelfAttention(n_embd, n_head, bias=bias, seed=seed, backend=backend, dtype=dtype)
    assert all(parameter.value.dtype == dtype for parameter in block.parameters())
    rng = np.random.default_rng(seed)
    x, upstream = rng.normal(size=(2, batch, time, n_embd))
    agrees_with_torch(block, backend, dtypes, x, upstream)


def agrees_with_torch(block: CausalSelfAttention, backend, dtypes, x: np.ndarray, upstream: np.ndarray) -> None:
    "Assert that `block` on `backend` and its PyTorch twin agree on the output and every gradient for `x`."
    dtype, np_dtype, tolerance = dtypes
    batch, time, n_embd = x.shape
    inputs = made(x, backend, dtype, requires_grad=True)
    out = block(inputs)
    (out * made(upstream, backend, dtype)).sum().backward()
    twin = torch_twin(block, np_dtype)
    torch_inputs = torch.tensor(x.astype(np_dtype), requires_grad=True)
    expected = twin(torch_inputs)
    (expected * torch.tensor(upstream.astype(np_dtype))).sum().backward()
    assert out.shape == (batch, time, n_embd) and out.dtype == dtype
    close(out, expected, tolerance, "values")
    close(inputs.grad, torch_inputs.grad, tolerance, "gradient of the input")
    names = {"qkv": "c_attn", "proj": "c_proj"}
    for name, parameter in block.named_parameters():
        layer, kind = name.split(".")
        close(parameter.value.grad, getattr(getattr(twin, names[layer]), kind).grad, tolerance, f"gradient of {name}")


def central_differences(loss, values: np.ndarray, epsilon: float = 1e-6) -> np.ndarray:
    "d loss / d values at every element, by central differences (`loss` takes the array)."
    gradient = np.zeros_like(values)
    for index in np.ndindex(values.shape):
        original = values[index]
        values[index] = original + epsilon
        above = loss(values)
        values[index] = original - epsilon
        below = loss(values)
        values[index] = original
        gradient[index] = (above - below) / (2 * epsilon)
    return gradient


@pytest.mark.task("5.5")
@pytest.mark.parametrize("n_head", [1, 2])
def test_block_gradients_against_central_differences(n_head):
    backend = minitorch.FastBackend
    block = CausalSelfAttention(4, n_head, seed=7, backend=backend)
    rng = np.random.default_rng(3)
    x, upstream = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 3, 4))
    parameters = dict(block.named_parameters())
    values = {"input": x, **{name: parameter.value.to_numpy().copy() for name, parameter in parameters.items()}}

    def loss(arrays: dict) -> float:
        for name, parameter in parameters.items():
            parameter.update(minitorch.tensor(arrays[name], backend=backend))
        return float((block(minitorch.tensor(arrays["input"], backend=backend)).to_numpy() * upstream).sum())

    loss(values)
    inputs = minitorch.tensor(x, backend=backend, requires_grad=True)
    (block(inputs) * minitorch.tensor(upstream, backend=backend)).sum().backward()
    analytic = {"input": inputs.grad.to_numpy(),
                **{name: parameter.value.grad.to_numpy() for name, parameter in parameters.items()}}
    for name, array in values.items():
        numeric = central_differences(lambda changed: loss({**values, name: changed}), array.copy())
        np.testing.assert_allclose(analytic[name], numeric, rtol=1e-6, atol=1e-7, err_msg=name)
    minitorch.grad_check(lambda t: block(t), minitorch.tensor(x, backend=backend), samples=10)


@pytest.mark.task("5.5")
@pytest.mark.parametrize("backend", BACKENDS)
def test_causal_self_attention_is_causal(backend):
    block = CausalSelfAttention(6, 3, seed=1, backend=backend)
    x = np.random.default_rng(0).normal(size=(1, 4, 6))
    out = block(minitorch.tensor(x, backend=backend)).to_numpy()
    x[0, 2] += 5.0
    changed = block(minitorch.tensor(x, backend=backend)).to_numpy()
    np.testing.assert_array_equal(changed[0, :2], out[0, :2])
    assert (np.abs(changed[0, 2:] - out[0, 2:]) > 0).all()
    query, key, value = block.split_heads(minitorch.tensor(x, backend=backend))
    assert query.shape == key.shape == value.shape == (1, 3, 4, 2)
    projected = block.qkv(minitorch.tensor(x, backend=backend)).to_numpy()
    for part, head_values in enumerate([query, key, value]):   # q, k, v are the thirds of qkv, cut into heads
        for head in range(3):
            np.testing.assert_array_equal(head_values.to_numpy()[0, head],
                                          projected[0, :, part * 6 + head * 2:part * 6 + head * 2 + 2])


@pytest.mark.task("5.4")
@pytest.mark.parametrize("backend", BACKENDS)
def test_masks_mean_may_attend(backend):
    rng = np.random.default_rng(5)
    query, key, value = (minitorch.tensor(rng.normal(size=(2, 4, 3)), backend=backend) for _ in range(3))
    mask = np.ones((4, 4), dtype=bool)
    mask[:, 2] = False
    mask[2, 2] = True   # True: may attend, as in PyTorch
    weights = attention_weights(query, key, attn_mask=minitorch.tensor(mask, backend=backend)).to_numpy()
    assert (weights[:, [0, 1, 3], 2] == 0).all() and (weights[:, 2, 2] > 0).all()
    np.testing.assert_allclose(weights.sum(-1), 1.0, rtol=1e-12)
    additive = minitorch.tensor(np.where(mask, 0.0, -np.inf), backend=backend)   # a float mask is added
    np.testing.assert_array_equal(attention_weights(query, key, attn_mask=additive).to_numpy(), weights)
    ones = attention_weights(query, key, attn_mask=minitorch.tensor(mask * 1.0, backend=backend)).to_numpy()
    assert (ones[:, :, 2] > 0).all()   # 1.0 and 0.0 are added, not read as may/may not: no key hidden
    as_ints = minitorch.tensor(mask, backend=backend, dtype=minitorch.int64)
    with pytest.raises(TypeError, match=r"attn_mask must be bool .* or float .*got int64"):
        attention_weights(query, key, attn_mask=as_ints)
    with pytest.raises(TypeError, match=r"got float64"):   # as PyTorch: float64 mask, float32 queries
        attention_weights(query.float(), key.float(), attn_mask=additive)
    triangle = tril(minitorch.ones((4, 4), backend=backend)) > 0
    np.testing.assert_allclose(attention_weights(query, key, attn_mask=triangle).to_numpy(),
                               attention_weights(query, key, is_causal=True).to_numpy(), rtol=1e-12)
    causal = attention_weights(query, key, is_causal=True).to_numpy()
    assert (np.triu(causal[0], 1) == 0).all() and causal[0, 0, 0] == 1.0
    out = scaled_dot_product_attention(query[:, :1], key, value, is_causal=True)   # L = 1: the first key only
    np.testing.assert_allclose(out.to_numpy(), value.to_numpy()[:, :1], rtol=1e-12)


@pytest.mark.task("5.4")
@needs_torch
@pytest.mark.parametrize("mask_shape", [(2, 3, 4, 5), (4, 5), (1, 5)])
def test_float_mask_is_added_as_in_torch(mask_shape):
    "A float attn_mask is added to the scores: values and gradients (the mask's too) as PyTorch's, F's the same."
    from minitorch.nn import functional as F
    rng = np.random.default_rng(11)
    arrays = [rng.normal(size=(2, 3, 4, 6)), rng.normal(size=(2, 3, 5, 6)), rng.normal(size=(2, 3, 5, 7)),
              rng.normal(size=mask_shape)]
    arrays[3][..., 1] = -np.inf   # a hidden key, as a float mask hides one
    upstream = rng.normal(size=(2, 3, 4, 7))
    theirs = [torch.tensor(array, requires_grad=True) for array in arrays]
    expected = torch.nn.functional.scaled_dot_product_attention(*theirs[:3], attn_mask=theirs[3], scale=0.7)
    (expected * torch.tensor(upstream)).sum().backward()
    for function in (scaled_dot_product_attention, F.scaled_dot_product_attention):
        ours = [minitorch.tensor(array, requires_grad=True) for array in arrays]
        out = function(*ours[:3], attn_mask=ours[3], scale=0.7)
        (out * minitorch.tensor(upstream)).sum().backward()
        close(out, expected, 1e-10, "values")
        for name, mine, reference in zip(["query", "key", "value", "attn_mask"], ours, theirs):
            close(mine.grad, reference.grad, 1e-10, f"gradient of the {name}")
    out = scaled_dot_product_attention(*ours[:3], attn_mask=ours[3].detach().float(), scale=0.7)
    close(out, expected, 1e-6, "a float32 mask")
    assert out.dtype == minitorch.float64


@pytest.mark.task("5.4")
def test_dropout_of_the_weights_is_seeded():
    backend = minitorch.FastBackend
    rng = np.random.default_rng(6)
    query, key, value = (minitorch.tensor(rng.normal(size=(2, 5, 3)), backend=backend) for _ in range(3))
    weights = attention_weights(query, key, is_causal=True).to_numpy()
    keep = np.random.default_rng(9).random(weights.shape) >= 0.4
    expected = (weights * keep / 0.6) @ value.to_numpy()
    out = scaled_dot_product_attention(query, key, value, dropout_p=0.4, is_causal=True, rng=9)
    np.testing.assert_allclose(out.to_numpy(), expected, rtol=1e-12)
    assert not scaled_dot_product_attention(query, key, value, dropout_p=1.0).to_numpy().any()


@pytest.mark.task("5.5")
def test_dropout_only_in_training():
    backend = minitorch.FastBackend
    x = minitorch.tensor(np.random.default_rng(1).normal(size=(2, 6, 8)), backend=backend)
    block, twin, plain = (CausalSelfAttention(8, 2, dropout=dropout, seed=4, backend=backend)
                          for dropout in (0.5, 0.5, 0.0))
    trained = block(x).to_numpy()
    np.testing.assert_array_equal(twin(x).to_numpy(), trained)   # the same seed, the same masks
    assert not np.allclose(trained, plain(x).to_numpy())
    assert not np.allclose(block(x).to_numpy(), trained)   # a new mask on every call
    block.eval()
    np.testing.assert_array_equal(block(x).to_numpy(), plain(x).to_numpy())


def test_attention_errors_name_the_shapes():
    backend = minitorch.FastBackend
    q, k = minitorch.rand((2, 4, 3), backend=backend), minitorch.rand((2, 5, 3), backend=backend)
    v = minitorch.rand((2, 5, 6), backend=backend)
    cases = [
        (ValueError, r"keys must have the queries' 3 features", lambda: scaled_dot_product_attention(
            q, minitorch.rand((2, 5, 2), backend=backend), v)),
        (ValueError, r"one value per key.*value \(2, 4, 6\)", lambda: scaled_dot_product_attention(
            q, k, minitorch.rand((2, 4, 6), backend=backend))),
        (ValueError, r"leading \(batch\) dims", lambda: scaled_dot_product_attention(
            q, minitorch.rand((3, 5, 3), backend=backend), minitorch.rand((3, 5, 6), backend=backend))),
        (ValueError, r"\(\.\.\., L, E\) queries", lambda: scaled_dot_product_attention(
            minitorch.rand((3,), backend=backend), k, v)),
        (ValueError, r"not both", lambda: scaled_dot_product_attention(
            q, k, v, attn_mask=minitorch.ones((4, 5), backend=backend), is_causal=True)),
        (ValueError, r"attn_mask of shape \(5, 4\) does not broadcast to the scores' shape \(2, 4, 5\)",
         lambda: scaled_dot_product_attention(q, k, v, attn_mask=minitorch.ones((5, 4), backend=backend))),
        (ValueError, r"attn_mask is on", lambda: scaled_dot_product_attention(q, k, v, attn_mask=minitorch.ones((4, 5), backend="simple"))),
        (TypeError, r"one dtype, got float64, float32 and float64", lambda: scaled_dot_product_attention(q, k.float(), v)),
        (TypeError, r"value is a ndarray", lambda: scaled_dot_product_attention(q, k, np.zeros((2, 5, 6)))),
        (ValueError, r"n_embd=10 must split into n_head=4", lambda: CausalSelfAttention(10, 4)),
        (ValueError, r"n_embd=0", lambda: CausalSelfAttention(0, 1)),
        (ValueError, r"dropout must be between 0 and 1, got 1.5", lambda: CausalSelfAttention(8, 2, dropout=1.5)),
        (ValueError, r"takes \(B, T, 8\) inputs, got shape \(3, 8\)", lambda: CausalSelfAttention(8, 2)(
            minitorch.rand((3, 8), backend=minitorch.FastBackend))),
        (ValueError, r"takes \(B, T, 8\) inputs, got shape \(1, 3, 6\)", lambda: CausalSelfAttention(8, 2)(
            minitorch.rand((1, 3, 6), backend=minitorch.FastBackend))),
    ]
    for error, message, action in cases:
        with pytest.raises(error, match=message):
            action()


@pytest.mark.task("4.5")
@needs_torch
@pytest.mark.parametrize("dtypes", DTYPES)
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("shape", [(2, 3, 4), (4,), (1, 2, 2, 4), (0, 4)])
def test_linear_on_any_leading_dims_against_torch(backend, dtypes, shape):
    dtype, np_dtype, tolerance = dtypes
    layer = Linear(4, 3, seed=2, backend=backend, dtype=dtype)
    assert layer.weight.value.dtype == layer.bias.value.dtype == dtype
    np.testing.assert_array_equal(layer.weight.value.to_numpy(), Linear(4, 3, seed=2).weight.value.to_numpy().astype(np_dtype))
    rng = np.random.default_rng(0)
    x, upstream = rng.normal(size=shape), rng.normal(size=(*shape[:-1], 3))
    inputs = made(x, backend, dtype, requires_grad=True)
    out = layer(inputs)
    (out * made(upstream, backend, dtype)).sum().backward()
    twin = torch.nn.Linear(4, 3, dtype=getattr(torch, np_dtype.__name__))
    with torch.no_grad():
        twin.weight.copy_(torch.tensor(layer.weight.value.to_numpy()))
        twin.bias.copy_(torch.tensor(layer.bias.value.to_numpy()))
    torch_inputs = torch.tensor(x.astype(np_dtype), requires_grad=True)
    expected = twin(torch_inputs)
    (expected * torch.tensor(upstream.astype(np_dtype))).sum().backward()
    assert out.shape == tuple(expected.shape) and out.dtype == dtype
    close(out, expected, tolerance, "values")
    close(inputs.grad, torch_inputs.grad, tolerance, "gradient of the input")
    close(layer.weight.value.grad, twin.weight.grad, tolerance, "gradient of the weight")
    close(layer.bias.value.grad, twin.bias.grad, tolerance, "gradient of the bias")
    with pytest.raises(ValueError, match=r"takes an \(N, 4\) input, got shape \(2, 3, 5\)"):
        layer(made(np.zeros((2, 3, 5)), backend, dtype))


@settings(max_examples=25, deadline=None)
@given(leading=st.lists(st.integers(0, 7), min_size=1, max_size=3), inner=st.integers(1, 40), outer=st.integers(1, 40),
       dtype=st.sampled_from([minitorch.float64, minitorch.float32]), bias=st.booleans(), seed=st.integers(0, 2**16))
def test_fused_linear_gives_the_composed_numbers_to_the_bit(leading, inner, outer, dtype, bias, seed):
    "On the fused backend a Linear is one LinearFun (bias added in place): the fast backend's values and gradients, exactly."
    rng = np.random.default_rng(seed)
    x, upstream = rng.normal(size=(*leading, inner)), rng.normal(size=(*leading, outer))
    results = []
    for backend in (minitorch.FastBackend, FusedBackend):
        layer = Linear(inner, outer, bias=bias, seed=seed, backend=backend, dtype=dtype)
        inputs = minitorch.tensor(x, backend=backend, dtype=dtype, requires_grad=True)
        out = layer(inputs)   # without a bias: the composed way, on both backends
        rows = out.history.last_fn is View and out.history.inputs[0] if len(leading) > 1 else out   # the 2-D product
        fused = backend is FusedBackend and bias
        assert (rows.history.last_fn is LinearFun) == fused
        (out * minitorch.tensor(upstream, backend=backend, dtype=out.dtype)).sum().backward()
        results.append([out.to_numpy(), inputs.grad.to_numpy()] + [p.value.grad.to_numpy() for p in layer.parameters()])
    composed, fused = results
    assert len(fused) == 3 + bias and all(np.array_equal(ours, theirs) for ours, theirs in zip(fused, composed))


@pytest.mark.task("4.5")
@pytest.mark.parametrize("init", [minitorch.xavier_uniform, minitorch.xavier_normal, minitorch.kaiming_uniform,
                                  minitorch.kaiming_normal, minitorch.zeros_init])
def test_initialisers_take_a_dtype(init):
    in_float32 = init((5, 4), rng=3, dtype=minitorch.float32)
    assert in_float32.dtype == minitorch.float32 and init((5, 4), rng=3).dtype == minitorch.float64
    np.testing.assert_array_equal(in_float32.to_numpy(), init((5, 4), rng=3).to_numpy().astype(np.float32))


# --- fused_softmax ---------------------------------------------------------------------------------------------

@needs_torch
@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # inf - inf, NaN in the simulator
@pytest.mark.parametrize("dtypes", DTYPES)
@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=25, deadline=None)
@given(data=st.data(), shape=st.lists(st.integers(1, 5), min_size=1, max_size=3).map(tuple),
       scale=st.sampled_from([1e-2, 1.0, 30.0]), special=st.booleans())
def test_fused_softmax_against_torch(backend, dtypes, data, shape, scale, special):
    "Values and gradients over every dim, with inf, -inf (masked keys, masked rows) and NaN among the scores."
    dtype, name, tolerance = dtypes
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    values = data.draw(arrays(shape, name.__name__, special=special)) * name(scale)
    upstream = data.draw(arrays(shape, name.__name__))
    scores = made(values, backend, dtype, requires_grad=True)
    out = fused_softmax(scores, dim)
    (out * made(upstream, backend, dtype)).sum().backward()
    expected_scores = torch.tensor(values, requires_grad=True)
    expected = torch.softmax(expected_scores, dim)
    (expected * torch.tensor(upstream)).sum().backward()
    assert out.dtype == dtype and out.shape == shape
    close(out, expected, tolerance, "weights")
    close(scores.grad, expected_scores.grad, tolerance, "gradient of the scores")


@settings(max_examples=20, deadline=None)
@given(data=st.data(), shape=st.lists(st.integers(1, 70), min_size=1, max_size=3).map(tuple)
       .filter(lambda shape: math.prod(shape) * ELEMENT_WORK < PARALLEL_WORK))
def test_fused_softmax_matches_the_composed_one(data, shape):
    "Rows long enough for the kernels' SIMD loops, and softmax and fused_softmax in one float64 tolerance."
    # Below the size at which kernels go parallel: the composed softmax's eight parallel kernels would take more
    # time to compile than the whole test, and test_fast_kernels checks map, zip and reduce on threads.
    dim = data.draw(st.integers(0, len(shape) - 1))
    values, upstream = data.draw(arrays(shape)) * 5, data.draw(arrays(shape))
    results = []
    for norm in (softmax, fused_softmax):
        scores = made(values, minitorch.FastBackend, minitorch.float64, requires_grad=True)
        out = norm(scores, dim)
        (out * made(upstream, minitorch.FastBackend, minitorch.float64)).sum().backward()
        results.append((out.to_numpy(), scores.grad.to_numpy()))
    for fused, composed in zip(results[1], results[0]):
        np.testing.assert_allclose(fused, composed, rtol=1e-10, atol=1e-14)



# --- fused_causal_attention ------------------------------------------------------------------------------------

def attention_results(backend, dtype, x: np.ndarray, upstream: np.ndarray, n_head: int, **options) -> list:
    "The output of a seeded CausalSelfAttention on `backend`, the gradient of its input, then of each parameter."
    block = CausalSelfAttention(x.shape[-1], n_head, seed=5, backend=backend, dtype=dtype, **options)
    inputs = made(x, backend, dtype, requires_grad=True)
    out = block(inputs)
    (out * made(upstream, backend, dtype)).sum().backward()
    return [out.to_numpy(), inputs.grad.to_numpy()] + [p.value.grad.to_numpy() for p in block.parameters()]


@settings(max_examples=20, deadline=None)
@given(batch=st.integers(1, 2), time=st.integers(1, 12), n_head=st.integers(1, 3), head_size=st.integers(1, 9),
       seed=st.integers(0, 1000))
def test_fused_causal_attention_matches_the_composed_one(batch, time, n_head, head_size, seed):
    "The fused backend's attention (one kernel each way) and the composed one of the fast backend, in float64."
    rng = np.random.default_rng(seed)
    x, upstream = rng.normal(size=(2, batch, time, n_head * head_size))
    fused = attention_results(FusedBackend, minitorch.float64, x, upstream, n_head)
    composed = attention_results(minitorch.FastBackend, minitorch.float64, x, upstream, n_head)
    names = ["output", "input", "qkv.weight", "qkv.bias", "proj.weight", "proj.bias"]
    for ours, reference, what in zip(fused, composed, names):
        np.testing.assert_allclose(ours, reference, rtol=1e-10, atol=1e-13, err_msg=what)


@needs_torch
@pytest.mark.parametrize("dtypes", DTYPES)
@settings(max_examples=10, deadline=None)
@given(time=st.one_of(st.integers(1, 8), st.integers(30, 140)), n_head=st.integers(1, 4), head_size=st.integers(1, 40),
       seed=st.integers(0, 1000))
def test_fused_causal_attention_against_torch(dtypes, time, n_head, head_size, seed):
    "Short lengths, and lengths past a product's depth block (128) with the work shared between threads."
    block = CausalSelfAttention(n_head * head_size, n_head, seed=seed, backend=FusedBackend, dtype=dtypes[0])
    x, upstream = np.random.default_rng(seed).normal(size=(2, 2, time, n_head * head_size))
    agrees_with_torch(block, FusedBackend, dtypes, x, upstream)


def test_fused_causal_attention_keeps_the_composed_path_where_it_must():
    "Dropout of the weights in training, and a wrong shape, go through split_heads: the same masks, the same error."
    rng = np.random.default_rng(3)
    x, upstream = rng.normal(size=(2, 2, 6, 8))
    trained = attention_results(FusedBackend, minitorch.float64, x, upstream, 2, dropout=0.5)
    composed = attention_results(minitorch.FastBackend, minitorch.float64, x, upstream, 2, dropout=0.5)
    for ours, reference in zip(trained, composed):
        np.testing.assert_allclose(ours, reference, rtol=1e-10, atol=1e-13)
    with pytest.raises(ValueError, match=r"takes \(B, T, 8\) inputs, got shape \(6, 8\)"):
        CausalSelfAttention(8, 2, seed=0, backend=FusedBackend)(minitorch.tensor(x[0], backend=FusedBackend))
    for bad, heads in ((x, 3), (x[0], 1)):
        with pytest.raises(ValueError, match="causal attention takes float"):
            fused_causal_attention(minitorch.tensor(bad, backend=FusedBackend), heads)


@pytest.mark.parametrize("dim", [0, 1])
def test_fused_softmax_on_threads_matches_numpy(dim):
    "Rows shared between threads (work above PARALLEL_WORK), both ways, against softmax and its gradient in NumPy."
    rng = np.random.default_rng(dim)
    values, upstream = rng.normal(size=(300, 257)) * 5, rng.normal(size=(300, 257))
    assert values.size * ELEMENT_WORK >= PARALLEL_WORK
    scores = made(values, minitorch.FastBackend, minitorch.float64, requires_grad=True)
    out = fused_softmax(scores, dim)
    out.backward(made(upstream, minitorch.FastBackend, minitorch.float64))
    shifted = np.exp(values - values.max(axis=dim, keepdims=True))
    weights = shifted / shifted.sum(axis=dim, keepdims=True)
    gradient = weights * (upstream - (weights * upstream).sum(axis=dim, keepdims=True))
    np.testing.assert_allclose(out.to_numpy(), weights, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(scores.grad.to_numpy(), gradient, rtol=1e-10, atol=1e-13)


def test_fused_softmax_gradient_by_central_differences():
    rng = np.random.default_rng(6)
    mixing = minitorch.tensor(rng.normal(size=(2, 3, 5)), backend=minitorch.FastBackend)
    for dim in (-1, 1):
        minitorch.grad_check(lambda x: fused_softmax(x, dim) * mixing,
                             minitorch.tensor(rng.normal(size=(2, 3, 5)), backend=minitorch.FastBackend), samples=10)


def test_fused_softmax_edges():
    empty = minitorch.tensor(np.zeros((2, 0)), backend=minitorch.FastBackend)
    assert fused_softmax(empty, -1).shape == (2, 0)
    ints = fused_softmax(minitorch.tensor([[0, 1, 2]], dtype=minitorch.int64), 1)
    assert ints.dtype == minitorch.float64 and np.allclose(ints.to_numpy().sum(), 1.0)
    with pytest.raises(Exception, match="dim"):
        fused_softmax(minitorch.tensor([1.0, 2.0]), 1)


def test_float32_exp_nonpositive_to_float32_precision():
    u = np.concatenate([np.linspace(-104.0, 0.0, 20_001), -np.logspace(-8, 0, 50)])
    ours = np.array([float32_exp_nonpositive(value) for value in u])
    normal = np.exp(u) > np.finfo(np.float32).tiny
    np.testing.assert_allclose(ours[normal].astype(np.float32), np.exp(u[normal]), rtol=3e-7, atol=0)
    assert float32_exp_nonpositive(-np.inf) == 0.0 and float32_exp_nonpositive(-106.0) == 0.0
    assert np.isnan(float32_exp_nonpositive(np.nan))


@pytest.mark.parametrize("backend, fused", [(minitorch.FusedBackend, True), (minitorch.FastBackend, False)],
                         ids=["fused", "fast"])
def test_causal_self_attention_runs_one_kernel_on_the_fused_backend(backend, fused):
    attention = CausalSelfAttention(8, 2, dtype=minitorch.float32, backend=backend)
    x = minitorch.tensor(np.random.default_rng(7).normal(size=(2, 5, 8)), backend=backend,
                         dtype=minitorch.float32, requires_grad=True)
    functions, waiting = set(), [attention(x)]
    while waiting:
        node = waiting.pop()
        if node.history is not None and node.history.last_fn is not None:
            functions.add(node.history.last_fn)
            waiting.extend(node.history.inputs)
    assert (CausalAttentionFun in functions) == fused and SoftmaxFun not in functions   # the softmax is inside
    assert (GetItem in functions) != fused   # and no split of the heads
