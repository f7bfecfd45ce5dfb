"""Speed benchmarks of minitorch against reference implementations (run with `make bench`).

Each benchmark is a function returning a list of `Result`s; `main()` runs them and prints one table
of name / ours / reference / ratio, where the figures are throughputs (higher is better) and the
ratio is ours divided by the reference. Everything runs in one process, so ratios compare like with like.

- chapter 1: scalar autodiff against a closure-based engine (graph nodes per second);
- chapter 3: the fast backend against NumPy and PyTorch (calls per second). The bars of issue 5:
  matmul at least 0.2x NumPy, elementwise and sum at least 0.5x NumPy, the MLP step at least 0.2x PyTorch;
- chapter 4: conv2d forward + backward against PyTorch (float64 and float32; bar: 0.1x).
Benchmarks against PyTorch are left out (with a note) when torch is not installed.

    python tests/benchmark.py                 # every benchmark
    python tests/benchmark.py --only scalar   # benchmarks whose name contains "scalar"
"""
import argparse
import gc
import random
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

import minitorch


@dataclass
class Result:
    "One benchmark's outcome: throughputs of ours and of the reference, in `unit`."
    name: str
    ours: float
    reference: float
    unit: str
    reference_name: str

    @property
    def ratio(self) -> float:
        "How many times faster ours is than the reference."
        return self.ours / self.reference


def mean_time(run: Callable[[], object], repeats: int, garbage_collector: bool = True) -> float:
    """Mean seconds per call over `repeats` back-to-back calls of `run` after a warm-up, as in a training loop.

    With `garbage_collector=False` automatic collection is off during the loop and one explicit collection at
    the end is timed with it, so an engine that leaves reference cycles still pays once for freeing them."""
    run()
    gc.collect()
    if not garbage_collector:
        gc.disable()
    try:
        start = time.perf_counter()
        for _ in range(repeats):
            run()
        gc.collect()
        return (time.perf_counter() - start) / repeats
    finally:
        gc.enable()


class Value:
    "A minimal closure-based scalar engine in the style micrograd popularised: the reference for scalar autodiff."

    def __init__(self, data: float, children: tuple = ()):
        self.data, self.grad = data, 0.0
        self.children = children
        self.backward_step = lambda: None

    def __add__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data + other.data, (self, other))

        def backward_step():
            self.grad += out.grad
            other.grad += out.grad
        out.backward_step = backward_step
        return out

    def __mul__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        out = Value(self.data * other.data, (self, other))

        def backward_step():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad
        out.backward_step = backward_step
        return out

    def relu(self):
        out = Value(self.data if self.data > 0 else 0.0, (self,))

        def backward_step():
            self.grad += (out.data > 0) * out.grad
        out.backward_step = backward_step
        return out

    def __neg__(self):
        return self * -1.0

    def __sub__(self, other):
        return self + (-other)

    def __radd__(self, other):
        return self + other

    def __rmul__(self, other):
        return self * other

    def backward(self):
        "Order the graph (iteratively, so deep graphs work) and run every node's backward step."
        order, seen, stack = [], set(), [(self, False)]
        while stack:
            node, expanded = stack.pop()
            if expanded:
                order.append(node)
            elif id(node) not in seen:
                seen.add(id(node))
                stack.append((node, True))
                stack.extend((child, False) for child in node.children)
        self.grad = 1.0
        for node in reversed(order):
            node.backward_step()


def mlp_loss(make: Callable[[float], object], points: list, labels: list, seed: int, hidden: int = 10):
    "Mean squared error of a 2-`hidden`-1 ReLU MLP whose weights are made by `make`, and the weights."
    rng = random.Random(seed)
    w1 = [[make(rng.uniform(-1, 1)) for _ in range(2)] for _ in range(hidden)]
    b1 = [make(0.0) for _ in range(hidden)]
    w2 = [make(rng.uniform(-1, 1)) for _ in range(hidden)]
    b2 = make(0.0)
    total = 0.0
    for (x1, x2), label in zip(points, labels):
        units = [(w[0] * x1 + w[1] * x2 + b).relu() for w, b in zip(w1, b1)]
        out = b2
        for weight, unit in zip(w2, units):
            out = out + weight * unit
        error = out - float(label)
        total = error * error + total
    return total * (1.0 / len(points))


def computed_nodes(loss) -> int:
    "The number of operation results in minitorch's graph ending at `loss`."
    return sum(1 for node in minitorch.topological_sort(loss) if not node.is_leaf())


def scalar_mlp(points: int, repeats: int, garbage_collector: bool) -> tuple[float, float]:
    "Graph nodes per second of forward + backward of the 2-10-1 MLP over `points` Xor points: ours, reference."
    data = minitorch.datasets["Xor"](points, seed=0)

    def ours():
        mlp_loss(minitorch.Scalar, data.X, data.y, seed=1).backward()

    def reference():
        mlp_loss(Value, data.X, data.y, seed=1).backward()

    nodes = computed_nodes(mlp_loss(minitorch.Scalar, data.X, data.y, seed=1))
    return (nodes / mean_time(ours, repeats, garbage_collector),
            nodes / mean_time(reference, repeats, garbage_collector))


def bench_scalar_mlp(points: int = 100, repeats: int = 20) -> list[Result]:
    "The scalar MLP as a training loop runs it, garbage collector on: graph nodes per second."
    ours, reference = scalar_mlp(points, repeats, garbage_collector=True)
    return [Result(f"scalar MLP 2-10-1, {points} pts, fwd+bwd", ours, reference, "nodes/s", "closure engine")]


def bench_scalar_mlp_no_gc(points: int = 100, repeats: int = 20) -> list[Result]:
    "The same with automatic garbage collection off and one collection at the end: the interpreter overhead."
    ours, reference = scalar_mlp(points, repeats, garbage_collector=False)
    return [Result(f"scalar MLP 2-10-1, {points} pts, one gc", ours, reference, "nodes/s", "closure engine")]


def try_torch():
    "The torch module, or None when it is not installed."
    try:
        import torch
    except ImportError:
        return None
    return torch


def compare(name: str, ours: Callable[[], object], references: dict[str, Callable[[], object]],
            repeats: int) -> list[Result]:
    "Results of `ours` against each reference, in calls per second."
    ours_rate = 1 / mean_time(ours, repeats)
    return [Result(name, ours_rate, 1 / mean_time(run, repeats), "calls/s", reference)
            for reference, run in references.items()]


def bench_matmul() -> list[Result]:
    "A batched (2, 512, 512) @ (2, 512, 512) product."
    rng = np.random.default_rng(0)
    a_values, b_values = rng.normal(size=(2, 512, 512)), rng.normal(size=(2, 512, 512))
    a, b = minitorch.tensor(a_values, backend=minitorch.FastBackend), minitorch.tensor(b_values, backend=minitorch.FastBackend)
    references = {"numpy": lambda: a_values @ b_values}
    torch = try_torch()
    if torch is not None:
        a_torch, b_torch = torch.tensor(a_values), torch.tensor(b_values)
        references["torch"] = lambda: a_torch @ b_torch
    return compare("matmul (2,512,512)@(2,512,512)", lambda: a @ b, references, repeats=10)


def bench_add() -> list[Result]:
    "`a + b` over 10^7 contiguous values."
    rng = np.random.default_rng(1)
    a_values, b_values = rng.normal(size=10**7), rng.normal(size=10**7)
    a, b = minitorch.tensor(a_values, backend=minitorch.FastBackend), minitorch.tensor(b_values, backend=minitorch.FastBackend)
    references = {"numpy": lambda: a_values + b_values}
    torch = try_torch()
    if torch is not None:
        a_torch, b_torch = torch.tensor(a_values), torch.tensor(b_values)
        references["torch"] = lambda: a_torch + b_torch
    return compare("add 10^7", lambda: a + b, references, repeats=10)


def bench_sum() -> list[Result]:
    "`a.sum(1)` over a (1000, 10000) tensor."
    values = np.random.default_rng(2).normal(size=(1000, 10000))
    a = minitorch.tensor(values, backend=minitorch.FastBackend)
    references = {"numpy": lambda: values.sum(1)}
    torch = try_torch()
    if torch is not None:
        a_torch = torch.tensor(values)
        references["torch"] = lambda: a_torch.sum(1)
    return compare("sum(1) of (1000,10000)", lambda: a.sum(1), references, repeats=10)


def mlp_values(seed: int = 3) -> dict[str, np.ndarray]:
    "Inputs, one-hot targets and initial weights of a 784-128-10 MLP on a batch of 64."
    rng = np.random.default_rng(seed)
    return {"x": rng.normal(size=(64, 784)), "y": np.eye(10)[rng.integers(0, 10, size=64)],
            "w1": rng.normal(scale=784**-0.5, size=(784, 128)), "b1": np.zeros(128),
            "w2": rng.normal(scale=128**-0.5, size=(128, 10)), "b2": np.zeros(10)}


def minitorch_mlp_step(values: dict[str, np.ndarray], rate: float = 0.1) -> Callable[[], float]:
    "One SGD step of the MLP on the fast backend: forward, mean squared error, backward, update."
    x, y = (minitorch.tensor(values[name], backend=minitorch.FastBackend) for name in ("x", "y"))
    params = {name: minitorch.tensor(values[name], backend=minitorch.FastBackend, requires_grad=True)
              for name in ("w1", "b1", "w2", "b2")}

    def step() -> float:
        hidden = (x @ params["w1"] + params["b1"]).relu()
        error = hidden @ params["w2"] + params["b2"] - y
        loss = (error * error).mean()
        loss.backward()
        for name, param in params.items():
            params[name] = (param - param.grad * rate).detach().requires_grad_(True)
        return loss.item()

    return step


def torch_mlp_step(torch, values: dict[str, np.ndarray], rate: float = 0.1) -> Callable[[], float]:
    "The same SGD step in PyTorch (float64, as ours)."
    x, y = (torch.tensor(values[name]) for name in ("x", "y"))
    params = {name: torch.tensor(values[name], requires_grad=True) for name in ("w1", "b1", "w2", "b2")}

    def step() -> float:
        hidden = (x @ params["w1"] + params["b1"]).relu()
        error = hidden @ params["w2"] + params["b2"] - y
        loss = (error * error).mean()
        loss.backward()
        with torch.no_grad():
            for param in params.values():
                param -= param.grad * rate
                param.grad = None
        return loss.item()

    return step


def bench_mlp_step() -> list[Result]:
    "One SGD step of a 784-128-10 MLP on a batch of 64, against PyTorch."
    torch = try_torch()
    if torch is None:
        return []
    values = mlp_values()
    ours, reference = minitorch_mlp_step(values), torch_mlp_step(torch, values)
    assert abs(ours() - reference()) < 1e-9, "the two MLP steps do not compute the same loss"
    return compare("mlp step 784-128-10, batch 64", ours, {"torch": reference}, repeats=50)


def conv2d_steps(batch: int, channels: int, size: int, kernels: int, kernel_size: int, dtype_name: str):
    "One forward + backward of conv2d for minitorch and for PyTorch in `dtype_name`, on the same values."
    import torch

    rng = np.random.default_rng(0)
    out_size = size - kernel_size + 1
    values = [rng.normal(size=shape) for shape in [(batch, channels, size, size),
                                                   (kernels, channels, kernel_size, kernel_size),
                                                   (kernels,), (batch, kernels, out_size, out_size)]]
    input, weight, bias = (minitorch.tensor(array, requires_grad=True) for array in values[:3])
    grad_output = minitorch.tensor(values[3])
    dtype = getattr(torch, dtype_name)
    torch_input, torch_weight, torch_bias = (torch.tensor(array, dtype=dtype, requires_grad=True) for array in values[:3])
    torch_grad_output = torch.tensor(values[3], dtype=dtype)

    def ours():
        for leaf in (input, weight, bias):
            leaf.zero_grad_()
        minitorch.conv2d(input, weight, bias).backward(grad_output)

    def reference():
        for leaf in (torch_input, torch_weight, torch_bias):
            leaf.grad = None
        torch.nn.functional.conv2d(torch_input, torch_weight, torch_bias).backward(torch_grad_output)

    return ours, reference


def bench_conv2d(dtype_name: str = "float64", repeats: int = 20) -> list[Result]:
    "conv2d forward + backward on (16, 4, 28, 28) with (8, 4, 3, 3) kernels: batches per second against PyTorch."
    try:
        ours, reference = conv2d_steps(16, 4, 28, 8, 3, dtype_name)
    except ImportError:
        print("conv2d benchmark skipped: torch is not installed")
        return []
    return [Result("conv2d (16,4,28,28)*(8,4,3,3), fwd+bwd", 1 / mean_time(ours, repeats),
                   1 / mean_time(reference, repeats), "batches/s", f"PyTorch {dtype_name}")]


def bench_conv2d_float32() -> list[Result]:
    "The same against PyTorch in float32 (minitorch computes in float64 only)."
    return bench_conv2d("float32")


def mnist_steps(batches: int, batch_size: int, dtype_name: str):
    "`batches` training steps (LeNet-style CNN, cross-entropy, Adam) on 28x28 images: ours, and PyTorch's in `dtype_name`."
    import torch
    from minitorch.train import build_model, train_step

    rng = np.random.default_rng(0)
    images = rng.normal(size=(batches * batch_size, 1, 28, 28))
    labels = rng.integers(0, 10, size=batches * batch_size)
    model = build_model("lenet", 28, minitorch.FastBackend)
    optimizer = minitorch.Adam(model.parameters(), lr=0.002)
    layers = torch.nn
    torch_model = layers.Sequential(
        layers.Conv2d(1, 6, 5, padding=2), layers.ReLU(), layers.MaxPool2d(2), layers.Conv2d(6, 16, 5), layers.ReLU(),
        layers.MaxPool2d(2), layers.Flatten(), layers.Linear(400, 120), layers.ReLU(), layers.Linear(120, 10),
    ).to(getattr(torch, dtype_name))
    torch_optimizer = torch.optim.Adam(torch_model.parameters(), lr=0.002)
    torch_images = torch.tensor(images, dtype=getattr(torch, dtype_name))
    torch_labels = torch.tensor(labels)

    def ours():
        for start in range(0, len(labels), batch_size):
            train_step(model, optimizer, images[start:start + batch_size], labels[start:start + batch_size])

    def reference():
        for start in range(0, len(labels), batch_size):
            torch_optimizer.zero_grad()
            batch = slice(start, start + batch_size)
            torch.nn.functional.cross_entropy(torch_model(torch_images[batch]), torch_labels[batch]).backward()
            torch_optimizer.step()

    return ours, reference


def bench_mnist_epoch(batches: int = 20, batch_size: int = 64, repeats: int = 2) -> list[Result]:
    """Training throughput of the MNIST CNN of `python -m minitorch.train`, against PyTorch (float64, float32).

    A full epoch (8,000 images) takes about half a minute here, so `batches` batches stand for it: images per second,
    whose ratio is the inverse of the ratio of epoch times."""
    results = []
    for dtype_name in ("float64", "float32"):
        try:
            ours, reference = mnist_steps(batches, batch_size, dtype_name)
        except ImportError:
            print("MNIST epoch benchmark skipped: torch is not installed")
            return []
        images = batches * batch_size
        results.append(Result(f"MNIST LeNet train, {batches} x {batch_size} imgs", images / mean_time(ours, repeats),
                              images / mean_time(reference, repeats), "images/s", f"PyTorch {dtype_name}"))
    return results


BENCHMARKS = {"scalar_mlp": bench_scalar_mlp, "scalar_mlp_no_gc": bench_scalar_mlp_no_gc,
              "matmul": bench_matmul, "add": bench_add, "sum": bench_sum, "mlp_step": bench_mlp_step,
              "conv2d": bench_conv2d, "conv2d_float32": bench_conv2d_float32,
              "mnist_epoch": bench_mnist_epoch}


def readable(rate: float) -> str:
    "A throughput with thousands separators when large, three significant digits when small."
    return f"{rate:,.0f}" if rate >= 100 else f"{rate:.3g}"


def main() -> None:
    "Run the selected benchmarks and print the table."
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="run only benchmarks whose name contains this")
    selected = [bench for name, bench in BENCHMARKS.items() if parser.parse_args().only in name]
    results = [result for bench in selected for result in bench()]
    print(f"{'benchmark':<44} {'ours':>12} {'reference':>12} {'ratio':>6}  unit / reference")
    for result in results:
        print(f"{result.name:<44} {readable(result.ours):>12} {readable(result.reference):>12} {result.ratio:>6.2f}  "
              f"{result.unit} / {result.reference_name}")

if __name__ == "__main__":
    main()
