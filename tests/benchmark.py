"""Speed benchmarks of minitorch against reference implementations (run with `make bench`).

Each benchmark is a function returning a `Result`; `main()` runs them and prints one table of
name / ours / reference / ratio, where the figures are throughputs (higher is better) and the ratio
is ours divided by the reference. Later chapters add benchmarks against NumPy and PyTorch here; those
against PyTorch are skipped (with a note) when torch is not installed.

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


def bench_scalar_mlp(points: int = 100, repeats: int = 20) -> Result:
    "The scalar MLP as a training loop runs it, garbage collector on: graph nodes per second."
    ours, reference = scalar_mlp(points, repeats, garbage_collector=True)
    return Result(f"scalar MLP 2-10-1, {points} pts, fwd+bwd", ours, reference, "nodes/s", "closure engine")


def bench_scalar_mlp_no_gc(points: int = 100, repeats: int = 20) -> Result:
    "The same with automatic garbage collection off and one collection at the end: the interpreter overhead."
    ours, reference = scalar_mlp(points, repeats, garbage_collector=False)
    return Result(f"scalar MLP 2-10-1, {points} pts, one gc", ours, reference, "nodes/s", "closure engine")


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


def bench_conv2d(dtype_name: str = "float64", repeats: int = 20) -> Result | None:
    "conv2d forward + backward on (16, 4, 28, 28) with (8, 4, 3, 3) kernels: batches per second against PyTorch."
    try:
        ours, reference = conv2d_steps(16, 4, 28, 8, 3, dtype_name)
    except ImportError:
        print("conv2d benchmark skipped: torch is not installed")
        return None
    return Result("conv2d (16,4,28,28)*(8,4,3,3), fwd+bwd", 1 / mean_time(ours, repeats),
                  1 / mean_time(reference, repeats), "batches/s", f"PyTorch {dtype_name}")


def bench_conv2d_float32() -> Result | None:
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

    A full epoch (8,000 images) takes about a minute here, so `batches` batches stand for it: images per second,
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
              "conv2d": bench_conv2d, "conv2d_float32": bench_conv2d_float32, "mnist_epoch": bench_mnist_epoch}


def main() -> None:
    "Run the selected benchmarks and print the table."
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="run only benchmarks whose name contains this")
    selected = [bench for name, bench in BENCHMARKS.items() if parser.parse_args().only in name]
    results = []
    for outcome in (bench() for bench in selected):
        results.extend(outcome if isinstance(outcome, list) else [outcome] if outcome is not None else [])
    print(f"{'benchmark':<44} {'ours':>12} {'reference':>12} {'ratio':>6}  unit / reference")
    for result in results:
        print(f"{result.name:<44} {result.ours:>12,.0f} {result.reference:>12,.0f} {result.ratio:>6.2f}  "
              f"{result.unit} / {result.reference_name}")


if __name__ == "__main__":
    main()
