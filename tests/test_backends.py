"""Backends by name, the storage every constructor goes through, and the wrappers `KernelOps` writes once."""
from pathlib import Path

import numpy as np
import pytest

import minitorch
from minitorch import (CudaBackend, CudaStorage, FastBackend, FastOps, HostStorage, KernelOps, SimpleBackend, SimpleOps,
                       TensorBackend, backend, cuda_available, tensor)
from minitorch.cuda_ops import CudaOps
from minitorch.fused import FusedBackend, FusedOps
from minitorch.fast_ops import CourseBackend


def test_backends_have_names():
    assert backend("simple") is SimpleBackend and backend("fast") is FastBackend
    assert backend("course") is CourseBackend and backend("cuda") is CudaBackend


def test_a_bad_backend_name_lists_the_names():
    with pytest.raises(ValueError, match=r"no backend called 'gpu': the backends are 'simple', 'fast', 'course', 'cuda'"):
        backend("gpu")


@pytest.mark.parametrize("ops", [SimpleOps, FastOps, CudaOps])
def test_every_backend_is_a_kernel_table_over_the_same_wrappers(ops):
    assert issubclass(ops, KernelOps)
    for wrapper in ("map", "zip", "reduce", "matrix_multiply"):
        assert wrapper not in vars(ops), f"{ops.__name__} writes its own {wrapper}"


GPU_OPERATIONS = {"conv", "maxpool2d", "dropout_mask", "adam", "softmax", "softmax_rows", "softmax_rows_backward",
                  "layer_norm", "layer_norm_rows", "layer_norm_rows_backward", "gelu"}
FUSED_OPERATIONS = {"softmax", "layer_norm", "gelu", "causal_attention", "adamw", "clip_grad_norm", "linear"}   # 61_fused, host
HOST_ONLY = {"causal_attention", "adamw", "clip_grad_norm", "linear"}   # host kernels only: on the GPU, the composed ways


def test_whole_operations_are_entries_of_the_backends_table_and_no_layer_asks_for_the_device():
    assert set(CudaOps.operations) == GPU_OPERATIONS   # registered by chapters 4 and 5 in their own modules
    assert SimpleOps.operations == FastOps.operations == CourseBackend.ops.operations == {}
    assert set(FusedOps.operations) == FUSED_OPERATIONS and backend("fused") is FusedBackend
    for name in FUSED_OPERATIONS - HOST_ONLY:  # the same function on the host and the GPU; the row kernels differ
        assert FusedBackend.operation(name) is CudaOps.operations[name]
    assert not HOST_ONLY & set(CudaOps.operations)
    for name in GPU_OPERATIONS:  # a backend built the classic way finds the same entries: they belong to its ops
        assert CudaBackend.operation(name) is TensorBackend(CudaOps).operation(name) is CudaOps.operations[name]
        assert FastBackend.operation(name) is None and SimpleBackend.operation(name, print) is print
    package = Path(minitorch.__file__).parent
    asking = [path.name for path in package.glob("*.py") if "on_cuda" in path.read_text()]
    assert asking == [], f"modules that ask which device a tensor is on: {asking}"


@pytest.mark.parametrize("chosen", [SimpleBackend, FastBackend] + ([CudaBackend] if cuda_available() else []))
def test_the_shared_wrappers_check_shapes_and_fill_reduce_outputs(chosen):
    a = tensor(np.arange(6.0).reshape(2, 3), backend=chosen)
    with pytest.raises(minitorch.IndexingError, match="cannot reduce dim 2"):
        chosen.add_reduce(a, 2)
    assert chosen.max_reduce(a, 1).to_numpy().tolist() == [[2.0], [5.0]]
    assert chosen.mul_reduce(a + 1.0, 0).to_numpy().tolist() == [[4.0, 10.0, 18.0]]
    out = minitorch.zeros((2, 3), backend=chosen)
    assert chosen.ops.map(minitorch.operators.neg)(tensor([1.0, 2.0, 3.0], backend=chosen), out) is out
    assert out.to_numpy().tolist() == [[-1.0, -2.0, -3.0]] * 2
    assert chosen.ops.matrix_multiply(a, a.permute(1, 0)).to_numpy().tolist() == [[5.0, 14.0], [14.0, 50.0]]


def test_host_constructors_use_host_storage():
    for made in (minitorch.zeros((2,)), minitorch.ones((2,)), minitorch.rand((2,)), tensor([1.0, 2.0])):
        assert type(made._tensor._storage) is np.ndarray and made.backend.storage is HostStorage


@pytest.mark.skipif(not cuda_available(), reason="needs a GPU or NUMBA_ENABLE_CUDASIM=1")
def test_every_constructor_on_the_cuda_backend_makes_gpu_storage():
    made = {"zeros": minitorch.zeros((2, 3), backend=CudaBackend), "ones": minitorch.ones((2, 3), backend=CudaBackend),
            "rand": minitorch.rand((2, 3), backend=CudaBackend, seed=0),
            "tensor": tensor([[1.0, 2.0, 3.0]], backend=CudaBackend)}
    made["sum"] = made["ones"].sum(1)
    for name, value in made.items():
        assert isinstance(value._tensor._storage, CudaStorage), name
    assert made["ones"].to_numpy().tolist() == [[1.0] * 3] * 2 and made["sum"].to_numpy().tolist() == [3.0, 3.0]
    np.testing.assert_array_equal(made["rand"].to_numpy(), minitorch.rand((2, 3), seed=0).to_numpy())


def test_the_cuda_backend_is_built_at_first_use():
    lazy = type(CudaBackend)(CudaOps)
    assert "add_zip" not in vars(lazy) and repr(lazy) == "TensorBackend(CudaOps)"
    if cuda_available():
        assert callable(lazy.add_zip) and lazy.storage is CudaStorage
        with pytest.raises(AttributeError, match="no attribute 'no_such_function'"):
            lazy.no_such_function


def test_the_classic_construction_still_works():
    classic = TensorBackend(FastOps)
    a = tensor([1.0, 2.0], backend=classic)
    assert FastOps.map(minitorch.operators.neg)(a).to_numpy().tolist() == [-1.0, -2.0]


def test_one_default_backend_that_factories_layers_and_models_follow():
    "Simple until `set_default_backend` chooses another (by name or object); a call that names a backend wins."
    from minitorch.nn import Conv2d, Linear
    from minitorch.tensor_indexing import Embedding
    from minitorch.transformer import LayerNorm

    def made():
        return [tensor([1.0]), minitorch.zeros((2,)), minitorch.ones(2), minitorch.full((2,), 1.0), minitorch.rand((2,)),
                minitorch.randn((2,)), minitorch.arange(3), minitorch.linspace(0, 1, 3), minitorch.randint(0, 3, (2,)),
                Linear(2, 3).weight.value, Embedding(3, 2).weight.value, LayerNorm(4).weight.value,
                Conv2d(1, 1, 3).weight.value]

    assert minitorch.get_default_backend() is SimpleBackend and {t.backend for t in made()} == {SimpleBackend}
    minitorch.set_default_backend("fast")
    assert minitorch.get_default_backend() is FastBackend and {t.backend for t in made()} == {FastBackend}
    assert tensor([1.0], backend="simple").backend is SimpleBackend and Linear(2, 3, backend=SimpleBackend).weight.value.backend is SimpleBackend
    minitorch.set_default_backend(SimpleBackend)
    assert {t.backend for t in made()} == {SimpleBackend}
    with pytest.raises(ValueError, match="no backend called 'gpu'"):
        minitorch.set_default_backend("gpu")
    with pytest.raises(TypeError, match="set_default_backend takes a backend"):
        minitorch.set_default_backend(3)
    assert minitorch.get_default_backend() is SimpleBackend


# --- the profiler (60_profiler) listens to every backend's kernels --------------------------------------------

@pytest.mark.parametrize("name", ["simple", "fast", "fused", "cuda"])
def test_the_profiler_books_ops_backwards_and_kernels_and_puts_everything_back(name):
    from minitorch.profiler import ACTIVE, profile
    chosen = backend(name)
    before = dict(vars(chosen))
    x = tensor(np.arange(12.0).reshape(3, 4) / 10, backend=chosen)
    w = tensor(np.ones((4, 2)), backend=chosen, requires_grad=True)
    with profile() as prof:
        loss = minitorch.softmax((x @ w).relu(), 1).sum()
        loss.backward()
    assert prof.event("MatMul", "op").calls == 1 and prof.event("MatMul", "backward").calls == 1
    product = prof.event("matrix_multiply", "kernel")
    assert product.calls == 2 and product.flops == 2 * (2 * 3 * 4 * 2) and product.bytes > 0   # x @ w, and x.T @ grad
    if name in ("fused", "cuda"):
        assert prof.event("softmax (whole)", "kernel").calls == 1
    else:
        assert prof.event("Exp", "op").calls >= 1   # softmax composed of tensor operations
    for event in prof.events.values():
        assert 0 <= event.self_ns <= event.total_ns and event.calls >= 1
    assert sum(event.self_ns for event in prof.events.values()) <= prof.wall_ns
    assert dict(vars(chosen)) == before and not ACTIVE and minitorch.Function.apply.__func__.__name__ == "apply"
    with pytest.raises(ValueError, match="sort_by must be one of"):
        prof.table(sort_by="time")
    assert prof.key_averages().table(sort_by="calls", row_limit=3).count("\n") == 4   # header, 3 rows, summary


def test_the_profiler_restores_after_an_error_and_refuses_to_nest():
    from minitorch.profiler import profile
    apply = minitorch.Function.__dict__["apply"]
    with pytest.raises(ZeroDivisionError):
        with profile():
            1 / 0
    assert minitorch.Function.__dict__["apply"] is apply
    with profile():
        with pytest.raises(RuntimeError, match="do not nest"):
            with profile():
                pass


# --- devices, as PyTorch names places ----------------------------------------------------------------------------

def test_devices_name_backends_as_torch_does():
    from minitorch.tensor_ops import chosen_backend, device
    assert chosen_backend("cpu") is SimpleBackend and chosen_backend("cuda:0") is CudaBackend
    minitorch.set_default_backend("fast")
    assert chosen_backend("cpu") is FastBackend and device("cpu").backend is FastBackend
    x = tensor([1.0, 2.0])
    assert x.device == "cpu" and x.device == device("fast") and str(x.device) == "cpu" and x.device != "cuda"
    assert minitorch.zeros(2, 3, device=x.device).backend is FastBackend
    assert minitorch.arange(0, 3, dtype=minitorch.long, device="cpu").backend is FastBackend
    assert minitorch.ones(2, device=SimpleBackend).backend is SimpleBackend   # a backend is a device too
    with pytest.raises(ValueError, match="no backend called 'tpu'"):
        minitorch.zeros(2, device="tpu")


@pytest.mark.skipif(not cuda_available(), reason="needs a GPU or Numba's simulator")
def test_to_a_device_moves_values_and_gradients_and_modules():
    x = tensor([1.0, -2.0, 3.0], requires_grad=True)
    on_gpu = x.to("cuda")
    assert on_gpu.is_cuda and on_gpu.device == "cuda" and x.to(on_gpu).is_cuda and not x.is_cuda
    (on_gpu * on_gpu).sum().backward()
    np.testing.assert_array_equal(x.grad.to_numpy(), [2.0, -4.0, 6.0])   # back on the input's backend
    assert x.grad.backend is x.backend and on_gpu.cpu().device == "cpu"
    layer = minitorch.Linear(3, 2)
    layer.register_buffer("scale", tensor([2.0]))
    assert layer.to("cuda", minitorch.float32) is layer
    assert layer.weight.is_cuda and layer.weight.dtype == minitorch.float32 and layer.scale.is_cuda
    assert layer(minitorch.ones(4, 3, device="cuda", dtype=minitorch.float32)).shape == (4, 2)
    layer.to("cpu")
    assert layer.weight.device == "cpu" and layer.bias.device == "cpu"


def test_layers_take_device_and_dtype_as_torch():
    from minitorch.attention import CausalSelfAttention
    from minitorch.transformer import Block
    nn = minitorch.nn
    layers = [nn.Linear(3, 2, device="cpu", dtype=minitorch.float32), nn.Conv1d(1, 2, 3, device="cpu", dtype=minitorch.float32),
              nn.Conv2d(1, 2, 3, device="cpu", dtype=minitorch.float32), nn.Embedding(4, 3, device="cpu", dtype=minitorch.float32),
              nn.LayerNorm(3, device="cpu", dtype=minitorch.float32), CausalSelfAttention(4, 2, device="cpu", dtype=minitorch.float32),
              Block(4, 2, device="cpu", dtype=minitorch.float32)]
    for layer in layers:
        assert all(p.device == "cpu" and p.dtype == minitorch.float32 for p in layer.parameters()), layer
    assert nn.Linear(3, 2, device="cpu").weight.device == "cpu" and nn.Linear(3, 2).weight.dtype == minitorch.float64
    assert nn.Linear(3, 2, device=SimpleBackend).weight.value.backend is SimpleBackend   # a backend is a device too
    minitorch.set_default_backend("fast")
    assert nn.Linear(3, 2, device="cpu").weight.value.backend is FastBackend   # "cpu": the default host backend
    assert nn.Conv2d(1, 2, 3, device=minitorch.device("fast")).bias.value.backend is FastBackend
    with pytest.raises(ValueError, match="no backend called 'tpu'"):
        nn.Linear(3, 2, device="tpu")


@pytest.mark.skipif(not cuda_available(), reason="needs a GPU or Numba's simulator")
def test_layers_made_on_cuda_with_device():
    nn = minitorch.nn
    for layer in [nn.Linear(3, 2, device="cuda"), nn.Conv1d(1, 2, 3, device="cuda"), nn.Conv2d(1, 2, 3, device="cuda:0"),
                  nn.Embedding(4, 3, device="cuda"), nn.LayerNorm(3, device="cuda")]:
        assert all(p.is_cuda and p.device == "cuda" for p in layer.parameters()), layer
