"""Speed of the fast backend (chapter 3a) against NumPy and PyTorch, as ratios of throughputs.

Same shape as chapter 1's `tests/benchmark.py` (to be folded into it): each benchmark returns
`Result`s, `main()` prints one table of name / ours / reference / ratio, where the figures are calls
per second (higher is better) and the ratio is ours divided by the reference. The issue's bars:
matmul at least 0.2x NumPy, elementwise and sum at least 0.5x NumPy, the MLP step at least 0.2x PyTorch.

    python tests/benchmark_fast.py                 # every benchmark
    python tests/benchmark_fast.py --only matmul   # benchmarks whose name contains "matmul"
"""
import argparse
import gc
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

import minitorch

BACKEND = minitorch.FastBackend


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


def mean_time(run: Callable[[], object], repeats: int) -> float:
    "Mean seconds per call over `repeats` back-to-back calls of `run`, after a warm-up call."
    run()
    gc.collect()
    start = time.perf_counter()
    for _ in range(repeats):
        run()
    return (time.perf_counter() - start) / repeats


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
    a, b = minitorch.tensor(a_values, backend=BACKEND), minitorch.tensor(b_values, backend=BACKEND)
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
    a, b = minitorch.tensor(a_values, backend=BACKEND), minitorch.tensor(b_values, backend=BACKEND)
    references = {"numpy": lambda: a_values + b_values}
    torch = try_torch()
    if torch is not None:
        a_torch, b_torch = torch.tensor(a_values), torch.tensor(b_values)
        references["torch"] = lambda: a_torch + b_torch
    return compare("add 10^7", lambda: a + b, references, repeats=10)


def bench_sum() -> list[Result]:
    "`a.sum(1)` over a (1000, 10000) tensor."
    values = np.random.default_rng(2).normal(size=(1000, 10000))
    a = minitorch.tensor(values, backend=BACKEND)
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
    x, y = (minitorch.tensor(values[name], backend=BACKEND) for name in ("x", "y"))
    params = {name: minitorch.tensor(values[name], backend=BACKEND, requires_grad=True)
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


BENCHMARKS = {"matmul": bench_matmul, "add": bench_add, "sum": bench_sum, "mlp": bench_mlp_step}


def main(argv: list[str] | None = None) -> list[Result]:
    "Run the selected benchmarks and print one table."
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="run only benchmarks whose name contains this")
    args = parser.parse_args(argv)
    results = [result for name, bench in BENCHMARKS.items() if args.only in name for result in bench()]
    print(f"{'benchmark':34} {'reference':9} {'ours':>12} {'reference':>12} {'ratio':>7}")
    for result in results:
        print(f"{result.name:34} {result.reference_name:9} {result.ours:12.2f} {result.reference:12.2f} "
              f"{result.ratio:7.3f}")
    return results


if __name__ == "__main__":
    main()
