"""The Transformer block (chapter 5): rsqrt, layer_norm, gelu, the MLP and the block against PyTorch."""
import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import minitorch
from minitorch.module import Module
from minitorch.tensor_indexing import Embedding
from minitorch.transformer import GELU, MLP, Block, LayerNorm, Rsqrt, gelu, gpt_init_, layer_norm, renew_, rsqrt
from minitorch.fused import Gelu, LayerNormFun, fused_layer_norm

from backends import BACKENDS
from tensor_strategies import arrays

pytestmark = pytest.mark.usefixtures("fast_default_backend")   # as the chapter's notebooks set it

try:
    import torch
except ImportError:   # the parity tests skip without PyTorch
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")

DTYPES = [pytest.param((minitorch.float64, "float64", 1e-6), id="float64"),
          pytest.param((minitorch.float32, "float32", 1e-4), id="float32")]
"Each dtype with its NumPy name and the tolerance of a comparison with PyTorch."

leading_shapes = st.lists(st.integers(1, 3), min_size=0, max_size=2).map(tuple)


def torch_of(values: np.ndarray, grad: bool = True) -> "torch.Tensor":
    "`values` as a PyTorch tensor of their own dtype, tracking gradients."
    return torch.tensor(values, requires_grad=grad)


def ours(values: np.ndarray, backend, dtype, grad: bool = True) -> minitorch.Tensor:
    "`values` as a minitorch tensor on `backend` in `dtype`."
    return minitorch.tensor(values, backend=backend, dtype=dtype, requires_grad=grad)


def close(actual: minitorch.Tensor, expected: "torch.Tensor", tolerance: float, name: str = "") -> None:
    "Assert that our tensor and PyTorch's hold the same numbers, to `tolerance` relative and absolute."
    np.testing.assert_allclose(actual.to_numpy(), expected.detach().numpy(), rtol=tolerance, atol=tolerance,
                               err_msg=name)


# --- rsqrt ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_rsqrt_values_edges_and_gradient(backend):
    values = minitorch.tensor([0.25, 4.0, 0.0, -1.0, math.inf], backend=backend)
    out = rsqrt(values).to_numpy()
    np.testing.assert_allclose(out[:3], [2.0, 0.5, math.inf])
    assert math.isnan(out[3]) and out[4] == 0.0
    assert values.rsqrt().shape == (5,) and Rsqrt.apply(values).shape == (5,)
    minitorch.grad_check(rsqrt, minitorch.tensor(np.random.default_rng(0).uniform(0.3, 3.0, size=(2, 3)), backend=backend))
    assert rsqrt(values.float()).dtype == minitorch.float32
    assert rsqrt(minitorch.tensor([4, 1], backend=backend, dtype=minitorch.int64)).dtype == minitorch.float64


@needs_torch
@settings(max_examples=25)
@given(values=st.lists(st.floats(1e-3, 1e3), min_size=1, max_size=12))
def test_rsqrt_against_torch(values):
    a = minitorch.tensor(values, backend=minitorch.FastBackend, requires_grad=True)
    rsqrt(a).sum().backward()
    expected = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    torch.rsqrt(expected).sum().backward()
    close(rsqrt(a.detach()), torch.rsqrt(expected), 1e-12)
    np.testing.assert_allclose(a.grad.to_numpy(), expected.grad.numpy(), rtol=1e-12)


# --- layer_norm -----------------------------------------------------------------------------------------------

@pytest.mark.task("5.6")
@needs_torch
@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # inf - inf in the simulator's kernels
@pytest.mark.parametrize("norm", [layer_norm, fused_layer_norm], ids=["composed", "fused"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=20)
@given(data=st.data(), leading=st.lists(st.integers(0, 3), min_size=0, max_size=2).map(tuple),
       features=st.integers(1, 9), affine=st.booleans(), scale=st.sampled_from([1e-2, 1.0, 30.0]),
       special=st.booleans())
def test_layer_norm_against_torch(norm, backend, dtype, data, leading, features, affine, scale, special):
    dtype, name, tolerance = dtype
    shape = (*leading, features)
    if name == "float32":   # one float32 feature is a constant row: PyTorch's rounding of x - mean, / sqrt(eps)
        assume(features > 1)
    values = (data.draw(arrays(shape, name, special=special)) + np.array(3.0, dtype=name)) * np.array(scale, dtype=name)
    upstream = data.draw(arrays(shape, name))   # a weighted sum of the outputs, so that gradients are not 0
    weight, bias = (data.draw(arrays((features,), name)) for _ in range(2))
    x = ours(values, backend, dtype)
    w, b = (ours(weight, backend, dtype), ours(bias, backend, dtype)) if affine else (None, None)
    out = norm(x, features, w, b)
    (out * ours(upstream, backend, dtype, grad=False)).sum().backward()

    expected_x = torch_of(values)
    expected_w, expected_b = (torch_of(weight), torch_of(bias)) if affine else (None, None)
    expected = torch.nn.functional.layer_norm(expected_x, (features,), expected_w, expected_b)
    (expected * torch.tensor(upstream)).sum().backward()
    assert out.dtype == dtype and out.shape == shape
    close(out, expected, tolerance, "output")
    close(x.grad, expected_x.grad, tolerance * 10 if name == "float32" else tolerance, "input gradient")
    if affine:
        close(w.grad, expected_w.grad, tolerance * 10 if name == "float32" else tolerance, "weight gradient")
        close(b.grad, expected_b.grad, tolerance, "bias gradient")


@pytest.mark.task("5.6")
@needs_torch
@settings(max_examples=20)
@given(data=st.data(), leading=leading_shapes, normalized=st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple))
def test_layer_norm_over_several_dims_against_torch(data, leading, normalized):
    values = data.draw(arrays((*leading, *normalized)))
    weight, bias, upstream = (data.draw(arrays(shape)) for shape in (normalized, normalized, values.shape))
    tensors = [ours(array, minitorch.FastBackend, minitorch.float64) for array in (values, weight, bias)]
    out = layer_norm(tensors[0], normalized, tensors[1], tensors[2], eps=1e-3)
    (out * minitorch.tensor(upstream, backend=minitorch.FastBackend)).sum().backward()
    expected = [torch_of(array) for array in (values, weight, bias)]
    reference = torch.nn.functional.layer_norm(expected[0], normalized, expected[1], expected[2], eps=1e-3)
    (reference * torch.tensor(upstream)).sum().backward()
    close(out, reference, 1e-6)
    for name, tensor, expected_tensor in zip(("input", "weight", "bias"), tensors, expected):
        close(tensor.grad, expected_tensor.grad, 1e-6, name)


@pytest.mark.task("5.6")
def test_layer_norm_gradients_by_central_differences():
    rng = np.random.default_rng(3)
    mixing = minitorch.tensor(rng.normal(size=(2, 3, 5)), backend=minitorch.FastBackend)
    minitorch.grad_check(lambda x, w, b: layer_norm(x, 5, w, b) * mixing,
                         *(minitorch.tensor(rng.normal(size=shape), backend=minitorch.FastBackend)
                           for shape in [(2, 3, 5), 5, 5]), samples=10)
    minitorch.grad_check(lambda x: layer_norm(x, (3, 5)) * mixing,
                         minitorch.tensor(rng.normal(size=(2, 3, 5)), backend=minitorch.FastBackend), samples=10)


@pytest.mark.task("5.6")
@pytest.mark.parametrize("backend", BACKENDS)
def test_layer_norm_module(backend):
    norm = LayerNorm(4, backend=backend, dtype=minitorch.float32)
    assert [name for name, _ in norm.named_parameters()] == ["weight", "bias"]
    np.testing.assert_array_equal(norm.weight.value.to_numpy(), np.ones(4))
    np.testing.assert_array_equal(norm.bias.value.to_numpy(), np.zeros(4))
    assert norm.weight.value.dtype == minitorch.float32 and norm.weight.value.backend is backend
    values = np.array([[1.0, 2.0, 3.0, 6.0], [5.0, 5.0, 5.0, 5.0]])
    out = norm(minitorch.tensor(values, backend=backend, dtype=minitorch.float32)).to_numpy()
    centred = values - values.mean(1, keepdims=True)
    np.testing.assert_allclose(out, centred / np.sqrt(values.var(1, keepdims=True) + 1e-5), rtol=1e-5, atol=1e-6)
    assert LayerNorm((2, 3), bias=False).bias is None and len(LayerNorm((2, 3), bias=False).parameters()) == 1
    assert repr(LayerNorm(4, eps=1e-6)) == "LayerNorm((4,), eps=1e-06, bias=True)"


@pytest.mark.task("5.6")
def test_layer_norm_errors():
    x = minitorch.tensor(np.zeros((2, 3)), backend=minitorch.FastBackend)
    with pytest.raises(ValueError, match=r"shape \(2, 3\) does not end in them"):
        layer_norm(x, 4)
    with pytest.raises(ValueError, match="weight must have the normalized shape"):
        layer_norm(x, 3, weight=minitorch.tensor([1.0, 1.0]))
    with pytest.raises(ValueError, match="bias must have the normalized shape"):
        layer_norm(x, 3, bias=minitorch.tensor([1.0]))
    for bad in (0, (), (3, -1), 2.5, True, "3"):
        with pytest.raises(ValueError, match="normalized_shape must be"):
            layer_norm(x, bad)
    with pytest.raises(TypeError, match="float tensor"):
        layer_norm(minitorch.tensor([1, 2], dtype=minitorch.int64), 2)
    with pytest.raises(ValueError, match="normalized_shape must be"):
        LayerNorm(0)


# --- fused_layer_norm ------------------------------------------------------------------------------------------

@settings(max_examples=15)
@given(data=st.data(), leading=leading_shapes, normalized=st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple))
def test_fused_layer_norm_matches_the_composed_one(data, leading, normalized):
    arrays_ = [data.draw(arrays(shape)) for shape in ((*leading, *normalized), normalized, normalized)]
    upstream = data.draw(arrays(arrays_[0].shape))
    results = []
    for norm in (layer_norm, fused_layer_norm):
        tensors = [ours(array, minitorch.FastBackend, minitorch.float64) for array in arrays_]
        out = norm(tensors[0], normalized, tensors[1], tensors[2], eps=1e-3)
        (out * minitorch.tensor(upstream, backend=minitorch.FastBackend)).sum().backward()
        results.append([out.to_numpy()] + [tensor.grad.to_numpy() for tensor in tensors])
    for fused, composed in zip(results[1], results[0]):
        np.testing.assert_allclose(fused, composed, rtol=1e-9, atol=1e-12)


def test_fused_layer_norm_gradients_by_central_differences():
    rng = np.random.default_rng(4)
    mixing = minitorch.tensor(rng.normal(size=(2, 3, 5)), backend=minitorch.FastBackend)
    minitorch.grad_check(lambda x, w, b: fused_layer_norm(x, 5, w, b) * mixing,
                         *(minitorch.tensor(rng.normal(size=shape), backend=minitorch.FastBackend)
                           for shape in [(2, 3, 5), 5, 5]), samples=10)


def test_layer_norm_module_runs_one_kernel_each_way_on_the_fused_backend():
    norm = LayerNorm(8, dtype=minitorch.float32, backend=minitorch.FusedBackend)
    x = minitorch.tensor(np.random.default_rng(5).normal(size=(4, 8)), backend=minitorch.FusedBackend,
                         dtype=minitorch.float32, requires_grad=True)
    out = norm(x)
    functions = set()
    node = out
    while node.history is not None and node.history.last_fn is not None:
        functions.add(node.history.last_fn)
        node = node.history.inputs[0]
    assert LayerNormFun in functions
    out.sum().backward()
    assert x.grad.shape == (4, 8) and norm.weight.value.grad.shape == (8,)


def test_fused_layer_norm_mixes_dtypes_as_the_composed_one_does():
    x = minitorch.tensor(np.arange(6.0).reshape(2, 3), backend=minitorch.FastBackend, dtype=minitorch.float32)
    w = minitorch.tensor([1.0, 2.0, 3.0], backend=minitorch.FastBackend)
    fused, composed = fused_layer_norm(x, 3, w), layer_norm(x, 3, w)
    assert fused.dtype == composed.dtype == minitorch.float64
    np.testing.assert_allclose(fused.to_numpy(), composed.to_numpy(), rtol=1e-6)
    with pytest.raises(TypeError, match="float tensor"):
        fused_layer_norm(minitorch.tensor([1, 2], dtype=minitorch.int64), 2)
    with pytest.raises(ValueError, match=r"shape \(2, 3\) does not end in them"):
        fused_layer_norm(x, 4)


# --- gelu -----------------------------------------------------------------------------------------------------

@needs_torch
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("backend", BACKENDS + [pytest.param(minitorch.FusedBackend, id="fused")])
@pytest.mark.parametrize("approximate", ["none", "tanh"])
@settings(max_examples=20)
@given(data=st.data(), shape=st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple),
       scale=st.sampled_from([0.5, 2.0, 10.0]))
def test_gelu_against_torch(backend, dtype, approximate, data, shape, scale):
    dtype, name, tolerance = dtype
    values = data.draw(arrays(shape, name)) * np.array(scale, dtype=name)
    upstream = data.draw(arrays(shape, name))
    x = ours(values, backend, dtype)
    out = gelu(x, approximate)
    (out * ours(upstream, backend, dtype, grad=False)).sum().backward()
    expected_x = torch_of(values)
    expected = torch.nn.functional.gelu(expected_x, approximate=approximate)
    (expected * torch.tensor(upstream)).sum().backward()
    assert out.dtype == dtype
    close(out, expected, tolerance)
    close(x.grad, expected_x.grad, tolerance)
    close(GELU(approximate)(x.detach()), expected, tolerance)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_gradient_by_central_differences(approximate):
    values = minitorch.tensor(np.random.default_rng(1).normal(scale=2.0, size=(3, 4)), backend=minitorch.FastBackend)
    minitorch.grad_check(lambda a: gelu(a, approximate), values, samples=12)
    assert Gelu.apply(values, approximate=approximate).shape == (3, 4)


def test_gelu_shape_and_errors():
    assert gelu(minitorch.tensor([0.0, 50.0, -50.0])).to_numpy().tolist() == [0.0, 50.0, -0.0]
    assert gelu(minitorch.tensor([1, 2], dtype=minitorch.int64)).dtype == minitorch.float64
    with pytest.raises(ValueError, match="'none' or 'tanh'"):
        gelu(minitorch.tensor([1.0]), "erf")
    with pytest.raises(ValueError, match="'none' or 'tanh'"):
        GELU("fast")


# --- the MLP and the block ------------------------------------------------------------------------------------

def randomised(module: Module, seed: int) -> Module:
    "`module` with every parameter drawn from N(0, 0.5^2) (LayerNorm gains around 1), so that nothing is special."
    rng = np.random.default_rng(seed)
    for name, parameter in module.named_parameters():
        centre = 1.0 if name.startswith(("ln_", "norm")) and name.endswith("weight") else 0.0
        renew_(parameter, centre + rng.normal(0.0, 0.5, size=parameter.value.shape))
    return module


if torch is not None:
    class TorchAttention(torch.nn.Module):
        "nanoGPT's causal self-attention: one Linear to q, k, v (heads side by side), softmax(q k^T / sqrt(d)) v, proj."

        def __init__(self, n_embd: int, n_head: int, bias: bool):
            super().__init__()
            self.n_head = n_head
            self.qkv = torch.nn.Linear(n_embd, 3 * n_embd, bias=bias)
            self.proj = torch.nn.Linear(n_embd, n_embd, bias=bias)

        def forward(self, x):
            batch, length, n_embd = x.shape
            q, k, v = (part.view(batch, length, self.n_head, n_embd // self.n_head).transpose(1, 2)
                       for part in self.qkv(x).split(n_embd, dim=2))
            mixed = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.proj(mixed.transpose(1, 2).reshape(batch, length, n_embd))

    class TorchMLP(torch.nn.Module):
        "GPT-2's MLP: Linear C -> 4C, GELU, Linear 4C -> C."

        def __init__(self, n_embd: int, bias: bool):
            super().__init__()
            self.fc = torch.nn.Linear(n_embd, 4 * n_embd, bias=bias)
            self.proj = torch.nn.Linear(4 * n_embd, n_embd, bias=bias)

        def forward(self, x):
            return self.proj(torch.nn.functional.gelu(self.fc(x)))

    class TorchBlock(torch.nn.Module):
        "GPT-2's pre-norm block, with the parameter names of ours."

        def __init__(self, n_embd: int, n_head: int, bias: bool):
            super().__init__()
            self.ln_1 = torch.nn.LayerNorm(n_embd, bias=bias)
            self.attn = TorchAttention(n_embd, n_head, bias)
            self.ln_2 = torch.nn.LayerNorm(n_embd, bias=bias)
            self.mlp = TorchMLP(n_embd, bias)

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))


def torch_copy(module: Module, reference: "torch.nn.Module", torch_dtype) -> "torch.nn.Module":
    "`reference` in `torch_dtype` holding `module`'s parameter values, loaded by name (every name must match)."
    reference = reference.to(torch_dtype)
    state = {name: torch.tensor(parameter.value.to_numpy()) for name, parameter in module.named_parameters()}
    reference.load_state_dict(state, strict=True)
    return reference


def compare_with_torch(module: Module, reference: "torch.nn.Module", values: np.ndarray, backend, dtype, name: str,
                       tolerance: float) -> None:
    "Forward and backward of a weighted sum of the outputs, ours against PyTorch's: output, input and parameter grads."
    upstream = np.random.default_rng(7).normal(size=values.shape).astype(name)
    x = ours(values, backend, dtype)
    out = module(x)
    (out * ours(upstream, backend, dtype, grad=False)).sum().backward()
    expected_x = torch_of(values)
    expected = reference(expected_x)
    (expected * torch.tensor(upstream)).sum().backward()
    assert out.shape == values.shape and out.dtype == dtype
    close(out, expected, tolerance, "output")
    close(x.grad, expected_x.grad, tolerance, "input gradient")
    gradients = dict(reference.named_parameters())
    for parameter_name, parameter in module.named_parameters():
        close(parameter.value.grad, gradients[parameter_name].grad, tolerance, parameter_name)


@needs_torch
@pytest.mark.task("5.6", "5.7")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=10)
@given(data=st.data(), leading=st.lists(st.integers(1, 3), min_size=1, max_size=2).map(tuple),
       n_embd=st.integers(1, 6), bias=st.booleans(), seed=st.integers(0, 100))
def test_mlp_against_torch(backend, dtype, data, leading, n_embd, bias, seed):
    dtype, name, tolerance = dtype
    mlp = randomised(MLP(n_embd, bias=bias, seed=seed, backend=backend, dtype=dtype), seed)
    reference = torch_copy(mlp, TorchMLP(n_embd, bias), getattr(torch, name))
    compare_with_torch(mlp, reference, data.draw(arrays((*leading, n_embd), name)), backend, dtype, name, tolerance)


@pytest.mark.task("5.5", "5.6", "5.7")
@needs_torch
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=10)
@given(data=st.data(), batch=st.integers(1, 2), length=st.integers(1, 4), n_head=st.integers(1, 2),
       head_size=st.integers(1, 3), bias=st.booleans(), seed=st.integers(0, 100))
def test_block_against_torch(backend, dtype, data, batch, length, n_head, head_size, bias, seed):
    dtype, name, tolerance = dtype
    n_embd = n_head * head_size
    block = randomised(Block(n_embd, n_head, bias=bias, seed=seed, backend=backend, dtype=dtype), seed)
    reference = torch_copy(block, TorchBlock(n_embd, n_head, bias), getattr(torch, name))
    values = data.draw(arrays((batch, length, n_embd), name))
    compare_with_torch(block, reference, values, backend, dtype, name, tolerance * 10 if name == "float32" else tolerance)


@pytest.mark.task("5.5", "5.6", "5.7")
def test_block_gradients_by_central_differences():
    rng = np.random.default_rng(4)
    block = randomised(Block(6, 2, seed=1, backend=minitorch.FastBackend), 1)
    mixing = minitorch.tensor(rng.normal(size=(2, 3, 6)), backend=minitorch.FastBackend)
    minitorch.grad_check(lambda x: block(x) * mixing,
                         minitorch.tensor(rng.normal(size=(2, 3, 6)), backend=minitorch.FastBackend), samples=12)
    inputs = minitorch.tensor(rng.normal(size=(2, 3, 6)), backend=minitorch.FastBackend)
    for layer in (block.ln_1, block.attn.qkv, block.mlp.fc, block.mlp.proj):   # a weight as the argument
        def through(weight, layer=layer):
            layer.weight.update(weight)
            return block(inputs) * mixing
        minitorch.grad_check(through, layer.weight.value.detach(), samples=6)


@pytest.mark.task("5.5", "5.6", "5.7")
@settings(max_examples=15)
@given(data=st.data(), length=st.integers(2, 5))
def test_block_without_positions_sees_the_past_as_a_set(data, length):
    block = randomised(Block(4, 2, backend=minitorch.FastBackend), data.draw(st.integers(0, 100)))
    values = data.draw(arrays((1, length, 4)))
    order = data.draw(st.permutations(range(length - 1)))
    last = [block(minitorch.tensor(sequence, backend=minitorch.FastBackend)).to_numpy()[0, -1]
            for sequence in (values, values[:, [*order, length - 1]])]
    np.testing.assert_allclose(last[0], last[1], rtol=1e-10, atol=1e-12)
    positions = Embedding(length, 4, seed=3, backend=minitorch.FastBackend)
    where = positions(minitorch.tensor(np.arange(length), backend=minitorch.FastBackend, dtype=minitorch.int64))
    with_positions = [block(minitorch.tensor(sequence, backend=minitorch.FastBackend) + where).to_numpy()[0, -1]
                      for sequence in (values, values[:, [*order, length - 1]])]
    moved = any(position != index for index, position in enumerate(order))
    assert moved == (np.abs(with_positions[0] - with_positions[1]).max() > 1e-9)


@pytest.mark.task("5.5", "5.6", "5.7")
def test_block_dropout_is_off_in_eval_mode_and_errors():
    block, plain = (Block(8, 2, dropout=rate, seed=5, backend=minitorch.FastBackend) for rate in (0.5, 0.0))
    values = minitorch.tensor(np.random.default_rng(0).normal(size=(2, 3, 8)), backend=minitorch.FastBackend)
    np.testing.assert_array_equal(block.eval()(values).to_numpy(), plain(values).to_numpy())
    assert not np.allclose(block.train()(values).to_numpy(), plain(values).to_numpy())
    assert block.mlp.dropout.p == 0.5
    with pytest.raises(ValueError, match=r"takes a \(B, T, 8\) input, got shape \(3, 8\)"):
        plain(minitorch.tensor(np.zeros((3, 8)), backend=minitorch.FastBackend))
    with pytest.raises(ValueError, match=r"got shape \(1, 3, 4\)"):
        plain(minitorch.tensor(np.zeros((1, 3, 4)), backend=minitorch.FastBackend))
    names = [name for name, _ in Block(4, 2, bias=False).named_parameters()]
    assert names == ["ln_1.weight", "attn.qkv.weight", "attn.proj.weight", "ln_2.weight", "mlp.fc.weight",
                     "mlp.proj.weight"]


# --- initialisation -------------------------------------------------------------------------------------------

@pytest.mark.task("5.5", "5.6", "5.7")
@pytest.mark.parametrize("n_layer", [1, 4])
def test_gpt_init(n_layer):
    stack = minitorch.Sequential(Embedding(50, 64, backend=minitorch.FastBackend, dtype=minitorch.float32),
                                 *(Block(64, 4, seed=layer, backend=minitorch.FastBackend, dtype=minitorch.float32)
                                   for layer in range(n_layer)))
    for parameter in stack.parameters():   # biases and norms away from their defaults, to see that they are reset
        renew_(parameter, parameter.value.to_numpy() + 1.0)
    assert gpt_init_(stack, n_layer, seed=3) is stack
    residual_std = 0.02 / math.sqrt(2 * n_layer)
    for name, parameter in stack.named_parameters():
        values = parameter.value.to_numpy()
        assert parameter.value.dtype == minitorch.float32 and parameter.value.backend is minitorch.FastBackend
        if name.endswith("proj.weight"):
            assert abs(values.mean()) < 0.1 * residual_std and abs(values.std() / residual_std - 1) < 0.05, name
        elif name.startswith("0.") or name.endswith(("fc.weight", "qkv.weight")):
            assert abs(values.mean()) < 0.002 and abs(values.std() / 0.02 - 1) < 0.05, name
        elif name.split(".")[-2].startswith("ln_"):   # LayerNorms are left as they were
            np.testing.assert_array_equal(values, 2.0 if name.endswith("weight") else 1.0, err_msg=name)
        else:
            np.testing.assert_array_equal(values, 0.0, err_msg=name)   # Linear biases
    again = gpt_init_(minitorch.Sequential(Block(64, 4, seed=9, backend=minitorch.FastBackend)), n_layer, seed=3)
    first = gpt_init_(minitorch.Sequential(Block(64, 4, seed=1, backend=minitorch.FastBackend)), n_layer, seed=3)
    for (name, one), (_, other) in zip(again.named_parameters(), first.named_parameters()):
        np.testing.assert_array_equal(one.value.to_numpy(), other.value.to_numpy(), err_msg=name)
    with pytest.raises(ValueError, match="n_layer >= 1"):
        gpt_init_(stack, 0)
