"""Time the CUDA backend on a GPU against the fast CPU backend and PyTorch on the same GPU (`make bench-gpu`).

Needs a CUDA GPU with its driver and the `numba-cuda[cu12]` wheels (`make bench-gpu` installs them into
`.venv-cuda`); PyTorch is timed when it imports and sees the GPU. Without a GPU it prints why and exits
with status 0, timing nothing. Under Numba's simulator (NUMBA_ENABLE_CUDASIM=1) it runs tiny sizes to
check itself: those figures measure the simulator, not a GPU.

Every case is timed on a synchronised wall clock (the GPU is drained before the clock starts and before
it stops), as the median of repeats after one warm-up call that also compiles the kernels. The operations
compute in float64 and chapter 5's GPT step in float32, as the course trains it. Figures: milliseconds, then
GFLOP/s (matmul, conv2d, the GPT step's 6 x parameters x tokens) or GB/s of tensor data read and written
(elementwise, reduction), and the ratio to the fast CPU backend.
"""
import argparse
import os
import statistics
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
from numba import config as numba_config
from numba import cuda


@dataclass
class Case:
    "One benchmark: its name, the size it runs, and the work one call does (flops or bytes)."
    name: str
    size: str
    flops: float = 0.0
    bytes_moved: float = 0.0


def median_seconds(run: Callable[[], Any], synchronise: Callable[[], None], min_seconds: float,
                   min_repeats: int) -> float:
    "The median wall-clock time of `run()`, the GPU drained before and after each call, after one warm-up."
    run()
    synchronise()
    times, spent = [], 0.0
    while len(times) < min_repeats or spent < min_seconds:
        synchronise()
        started = time.perf_counter()
        run()
        synchronise()
        times.append(time.perf_counter() - started)
        spent += times[-1]
    return statistics.median(times)


def minitorch_cases(minitorch: Any, backend: Any, sizes: dict[str, Any]) -> list[tuple[Case, Callable[[], Any]]]:
    "The benchmark calls on a minitorch backend."
    from minitorch.nn import Linear, ReLU, Sequential, cross_entropy
    from minitorch.optim import SGD
    cases = []
    for side in sizes["matmul"]:
        a, b = minitorch.rand((side, side), backend=backend, seed=1), minitorch.rand((side, side), backend=backend, seed=2)
        cases.append((Case("matmul", f"{side}x{side}", flops=2.0 * side ** 3), lambda a=a, b=b: a @ b))
    for count in sizes["elementwise"]:
        a, b = minitorch.rand(count, backend=backend, seed=3), minitorch.rand(count, backend=backend, seed=4)
        cases.append((Case("add", f"{count:,}", bytes_moved=3.0 * 8 * count), lambda a=a, b=b: a + b))
    for rows, cols in sizes["reduction"]:
        a = minitorch.rand((rows, cols), backend=backend, seed=5)
        cases.append((Case("sum(dim=1)", f"{rows}x{cols}", bytes_moved=8.0 * rows * (cols + 1)),
                       lambda a=a: a.sum(1)))
    batch, features, hidden, classes = sizes["mlp"]
    model = Sequential(Linear(features, hidden, backend=backend, seed=1), ReLU(),
                       Linear(hidden, classes, backend=backend, seed=2))
    inputs = minitorch.rand((batch, features), backend=backend, seed=6)
    labels = np.random.default_rng(7).integers(0, classes, size=batch)
    optimizer = SGD(model.parameters(), lr=0.01)

    def mlp_step() -> None:
        optimizer.zero_grad()
        cross_entropy(model(inputs), labels).backward()
        optimizer.step()

    flops = 6.0 * batch * (features * hidden + hidden * classes)  # forward 2, backward 4 per multiply-add
    cases.append((Case("MLP step", f"{batch}x{features}-{hidden}-{classes}", flops=flops), mlp_step))
    samples, channels, side, out_channels, kernel = sizes["conv2d"]
    images = minitorch.rand((samples, channels, side, side), backend=backend, seed=8, requires_grad=True)
    weight = minitorch.rand((out_channels, channels, kernel, kernel), backend=backend, seed=9, requires_grad=True)
    out_side = side - kernel + 1
    flops = 3 * 2.0 * samples * out_channels * channels * kernel * kernel * out_side * out_side  # forward + 2 grads
    cases.append((Case("conv2d fwd+bwd", f"{samples}x{channels}x{side}x{side}, {out_channels}x{kernel}x{kernel}",
                       flops=flops), lambda: minitorch.conv2d(images, weight).sum().backward()))
    cases.append(gpt_case(minitorch, backend, *sizes["gpt"]))
    return cases


def gpt_case(minitorch: Any, backend: Any, sizes: dict[str, Any], batch: int) -> tuple[Case, Callable[[], Any]]:
    "One float32 training step of chapter 5's GPT (AdamW, clipping; the loss read back) on `backend`."
    from minitorch.gpt import GPT, GPTConfig, parameter_count, train_step
    config = GPTConfig(**sizes)
    from minitorch.adam import AdamW, weight_decay_groups
    model = GPT(config, seed=0, backend=backend, dtype=minitorch.float32)
    optimizer = AdamW(weight_decay_groups(model, 0.1), lr=1e-4, betas=(0.9, 0.99))
    ids, targets = (minitorch.tensor(values, backend=backend, dtype=minitorch.int64)
                    for values in gpt_batch(config, batch))
    tokens = batch * config.block_size
    case = Case("GPT step", f"{config.n_layer}x{config.n_embd}, {batch}x{config.block_size} tokens",
                flops=6.0 * parameter_count(model) * tokens)
    return case, lambda: train_step(model, optimizer, ids, targets)


def gpt_batch(config: Any, batch: int) -> np.ndarray:
    "The inputs and targets every GPT step trains on, the same for every backend."
    return np.random.default_rng(0).integers(0, config.vocab_size, (2, batch, config.block_size))


def torch_cases(torch: Any, sizes: dict[str, Any]) -> list[Callable[[], Any]]:
    "The same calls in PyTorch on the GPU, in the order of `minitorch_cases`."
    device, dtype = torch.device("cuda"), torch.float64
    generator = torch.Generator(device=device).manual_seed(0)

    def rand(*shape: int, grad: bool = False) -> Any:
        return torch.rand(*shape, device=device, dtype=dtype, generator=generator, requires_grad=grad)

    calls = []
    for side in sizes["matmul"]:
        a, b = rand(side, side), rand(side, side)
        calls.append(lambda a=a, b=b: a @ b)
    for count in sizes["elementwise"]:
        a, b = rand(count), rand(count)
        calls.append(lambda a=a, b=b: a + b)
    for rows, cols in sizes["reduction"]:
        a = rand(rows, cols)
        calls.append(lambda a=a: a.sum(1, keepdim=True))
    batch, features, hidden, classes = sizes["mlp"]
    model = torch.nn.Sequential(torch.nn.Linear(features, hidden), torch.nn.ReLU(),
                                torch.nn.Linear(hidden, classes)).to(device=device, dtype=dtype)
    inputs = rand(batch, features)
    labels = torch.randint(0, classes, (batch,), device=device, generator=generator)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

    def mlp_step() -> None:
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(inputs), labels).backward()
        optimizer.step()

    calls.append(mlp_step)
    samples, channels, side, out_channels, kernel = sizes["conv2d"]
    images, weight = rand(samples, channels, side, side, grad=True), rand(out_channels, channels, kernel, kernel, grad=True)
    calls.append(lambda: torch.nn.functional.conv2d(images, weight).sum().backward())
    calls.append(torch_gpt_step(torch, *sizes["gpt"]))
    return calls


def torch_gpt_step(torch: Any, sizes: dict[str, Any], batch: int) -> Callable[[], Any] | None:
    "The GPT step in PyTorch on the GPU (the twin from tests/test_gpt.py), or None where that module cannot load."
    from minitorch.gpt import GPTConfig
    sys.path.insert(0, str(Path(__file__).parents[2] / "tests"))
    try:
        from test_gpt import torch_gpt   # needs pytest and hypothesis beside PyTorch
    except ImportError:
        return None
    config = GPTConfig(**sizes)
    twin = torch_gpt(config).to(device="cuda", dtype=torch.float32)
    optimizer = torch.optim.AdamW(twin.parameters(), lr=1e-4, betas=(0.9, 0.99), weight_decay=0.1)
    ids, targets = (torch.tensor(values, device="cuda") for values in gpt_batch(config, batch))

    def step() -> float:
        optimizer.zero_grad()
        logits = twin(ids)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, config.vocab_size), targets.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(twin.parameters(), 1.0)
        optimizer.step()
        return loss.item()

    return step


SIZES = {
    "matmul": (256, 1024, 2048),
    "elementwise": (1 << 20, 1 << 24),
    "reduction": ((1024, 4096), (16, 1 << 20)),
    "mlp": (256, 784, 256, 10),
    "conv2d": (32, 8, 28, 16, 5),
    "gpt": ({"vocab_size": 84}, 12),  # the default model (4 layers, width 128), batch 12 x 64
}
"What a GPU runs."
SIMULATOR_SIZES = {
    "matmul": (8,),
    "elementwise": (64,),
    "reduction": ((4, 16),),
    "mlp": (4, 6, 5, 3),
    "conv2d": (1, 1, 6, 2, 3),
    "gpt": ({"vocab_size": 5, "block_size": 3, "n_layer": 1, "n_head": 1, "n_embd": 4}, 2),
}
"What the simulator runs: enough to check the script, nothing to measure."


def optional_torch() -> Any:
    "PyTorch if it imports and sees a CUDA GPU, else None."
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def rate(case: Case, seconds: float) -> str:
    "GFLOP/s or GB/s of one call taking `seconds`."
    if case.flops:
        return f"{case.flops / seconds / 1e9:9.2f} GFLOP/s"
    return f"{case.bytes_moved / seconds / 1e9:9.2f} GB/s   "


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--min-seconds", type=float, default=0.5, help="least time spent timing each case")
    parser.add_argument("--repeats", type=int, default=5, help="least number of timed calls per case")
    parser.add_argument("--only", action="append", help="time only the cases of this name (repeatable), e.g. 'GPT step'")
    arguments = parser.parse_args()
    simulated = bool(numba_config.ENABLE_CUDASIM)
    if not simulated and not cuda.is_available():
        print("bench-gpu: no CUDA GPU here (numba.cuda.is_available() is False: no NVIDIA GPU or no working "
              "driver), so nothing was timed. Run `make bench-gpu` on a machine with an NVIDIA GPU.")
        return 0
    import minitorch
    from minitorch import cuda_ops
    warnings.filterwarnings("ignore", message=".*under-utilization")  # small grids are part of the comparison
    sizes = SIMULATOR_SIZES if simulated else SIZES
    if simulated:
        print("bench-gpu: NUMBA_ENABLE_CUDASIM is set: tiny sizes, to check this script; the figures time the "
              "simulator, not a GPU")
        torch = None
    else:
        device = cuda.get_current_device()
        print(f"bench-gpu: {device.name.decode() if isinstance(device.name, bytes) else device.name}, "
              f"compute capability {device.compute_capability}, {cuda_ops.LIMITS}")
        torch = optional_torch()
    print(f"launch sizes: {cuda_ops.THREADS_PER_BLOCK} threads per map/zip block, {cuda_ops.REDUCE_THREADS} per "
          f"reduce block, up to {cuda_ops.MAX_BLOCKS} blocks, {cuda_ops.TILE}x{cuda_ops.TILE} matmul tiles; "
          f"CPU threads: {os.environ.get('NUMBA_NUM_THREADS', 'all')}; PyTorch: "
          f"{torch.__version__ if torch else 'not timed (not installed, or no GPU for it)'}")
    backends = {"CUDA": minitorch.TensorBackend(minitorch.CudaOps), "fast CPU": minitorch.FastBackend}
    timed = {name: minitorch_cases(minitorch, backend, sizes) for name, backend in backends.items()}
    synchronisers = {"CUDA": cuda.synchronize, "fast CPU": lambda: None}
    if torch:
        timed["PyTorch GPU"] = [(case, call) for (case, _), call in zip(timed["CUDA"], torch_cases(torch, sizes))]
        synchronisers["PyTorch GPU"] = torch.cuda.synchronize
    print(f"{'case':16} {'size':30} {'backend':12} {'ms':>10} {'rate':>17} {'vs fast CPU':>12}")
    for position, (case, _) in enumerate(timed["CUDA"]):
        if arguments.only and case.name not in arguments.only:
            continue
        cpu_seconds = None
        for name in ("fast CPU", "CUDA", "PyTorch GPU"):
            if name not in timed or timed[name][position][1] is None:
                continue
            seconds = median_seconds(timed[name][position][1], synchronisers[name], arguments.min_seconds,
                                     arguments.repeats)
            cpu_seconds = seconds if name == "fast CPU" else cpu_seconds
            print(f"{case.name:16} {case.size:30} {name:12} {seconds * 1e3:10.3f} {rate(case, seconds)} "
                  f"{cpu_seconds / seconds:11.2f}x", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
