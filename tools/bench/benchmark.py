"""Speed of minitorch against NumPy, PyTorch and a closure-based scalar engine (run with `make bench`).

Every row times ours and its reference in this one process, interleaved (ours, reference, ours, reference, ...)
after a warm-up, so that a change in the machine's load hits both sides alike; each sample starts after a short
untimed pause, so that the other side's idle threads have stopped spinning (the rows "... after NumPy" instead
run NumPy products right before each of our calls, untimed and with no pause, as a learner's loop does, and
compare with ours alone). Each sample is a block of
back-to-back calls long enough to time reliably; a row prints the median time per call of each side with its
spread (the interquartile range as a percentage of the median), the speed ratio (reference median / ours: above
1 we are faster), the throughput where the work has a size (GFLOP/s for matrix products and convolutions, GB/s
for elementwise work and reductions, images/s for training), and the bar that issue 11 sets for the row.

Before and after the rows it prints the machine, the threads each library uses and the load average; a
WARNING says when the machine was not idle, because such figures must not be quoted. Tensors are float64 except in
the rows named float32.

    python tools/bench/benchmark.py                    # every row, a few minutes
    python tools/bench/benchmark.py --quick            # fewer and shorter samples
    python tools/bench/benchmark.py --only matmul      # rows whose name contains "matmul" (case-insensitive)
    python tools/bench/benchmark.py --threads 1        # numba, NumPy's BLAS and PyTorch on one thread each

A full run (every row: no --quick, no --only) also writes its table to tools/bench/RESULTS.md, the project's current
figures, with the date, the machine, the commit and the flags; partial runs leave that file alone.
"""
import argparse
import datetime
import gc
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

if "--torch-first" in sys.argv[1:]:  # a child run of the rows "..., PyTorch imported first": before minitorch
    import torch  # noqa: F401

import minitorch

Call = Callable[[], object]


@dataclass(frozen=True)
class Bar:
    """A target of issue 11 (or 20): a least speed ratio against the reference, or a most time per call of ours;
    optionally also a most spread of ours (interquartile range / median)."""
    least_ratio: float | None = None
    most_micros: float | None = None
    most_spread: float | None = None

    def __str__(self) -> str:
        main = f">= {self.least_ratio}x" if self.least_ratio is not None else f"<= {self.most_micros:g} us"
        return main + (f", ±<={self.most_spread:.0%}" if self.most_spread is not None else "")

    def met(self, ratio: float | None, ours_seconds: float, ours_spread: float = 0.0) -> bool:
        "Whether a measured speed ratio (or, for a time bar, ours' seconds per call) and ours' spread meet the bar."
        if self.most_spread is not None and ours_spread > self.most_spread:
            return False
        if self.least_ratio is not None:
            return ratio is not None and ratio >= self.least_ratio
        return ours_seconds * 1e6 <= self.most_micros


@dataclass
class Row:
    "One comparison: ours and the reference as calls without arguments, and the size of one call's work."
    ours: Call
    reference: Call | None
    reference_name: str
    bar: Bar | None = None
    flops: float = 0.0
    bytes: float = 0.0
    images: int = 0
    collector: str = "on"
    max_repeats: int | None = None
    sample_scale: float = 1.0
    prelude: Call | None = None
    "Untimed work run right before each call of ours, with no pause (NumPy's products, for the rows after NumPy)."


@dataclass(frozen=True)
class Spec:
    """A row's name (what `--only` matches) and how to build it; building is left until the row is selected. A row
    with `torch_first` is the row of that name measured in a child process that imports PyTorch before minitorch."""
    name: str
    build: Callable[[], Row] | None
    torch_first: str | None = None


@dataclass(frozen=True)
class Summary:
    "Median seconds per call and the interquartile range as a fraction of the median."
    median: float
    spread: float


def summarise(seconds: list[float]) -> Summary:
    "Median and relative interquartile range of the timed samples (zero spread for a single sample)."
    median = statistics.median(seconds)
    if len(seconds) < 2:
        return Summary(median, 0.0)
    lower, _, upper = statistics.quantiles(seconds, n=4, method="inclusive")
    return Summary(median, (upper - lower) / median)


# ---------------------------------------------------------------- timing

def run_block(call: Call, number: int, collector: str, prelude: Call | None = None) -> float:
    """Seconds per call over `number` back-to-back calls of `call`.

    collector "on": Python's garbage collector runs as usual. "clean": the same, after an untimed full collection,
    so that neither side of a row pays for garbage the other left. "off": no automatic collection during the block,
    then one timed collection of the young generation, so an engine that leaves reference cycles pays once to free them.
    prelude: untimed work right before each call, with no pause; only the calls themselves are timed."""
    if prelude is not None:
        return sum(timed_after(prelude, call) for _ in range(number)) / number
    if collector == "clean":
        gc.collect()
    if collector == "off":
        gc.disable()
    try:
        start = time.perf_counter()
        for _ in range(number):
            call()
        if collector == "off":
            gc.collect(0)
        return (time.perf_counter() - start) / number
    finally:
        gc.enable()


def timed_after(prelude: Call, call: Call) -> float:
    "Seconds of one call of `call` run right after an untimed `prelude`."
    prelude()
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def calls_per_sample(call: Call, sample_seconds: float, collector: str, prelude: Call | None = None) -> int:
    "How many calls make a sample of about `sample_seconds` of timed calls (at least one), judged from one timed call."
    return max(1, round(sample_seconds / run_block(call, 1, collector, prelude)))


THREADS_PARK_SECONDS = 0.15
"""Untimed pause before each sample. After a call, idle worker threads (OpenBLAS's, OpenMP's) keep spinning for a
while before they sleep, holding a core. On the 2-core machine, our (2,512,512) product right after a block of
NumPy's ran at 76-85 GFLOP/s, and at 128-151 GFLOP/s alone or after a pause of 0.15 s (0.05 s was not enough)."""


def wait(seconds: float) -> None:
    "Wait `seconds` on this thread without sleeping: a sleeping process may find its core slowed down when it wakes."
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def interleaved(ours: Call, reference: Call | None, repeats: int, sample_seconds: float,
                collector: str, pause: float = THREADS_PARK_SECONDS,
                prelude: Call | None = None) -> tuple[list[float], list[float]]:
    """Seconds per call of `repeats` samples of each side, taken alternately (ours, reference, ...) after a warm-up,
    each after an untimed `pause` in which the other side's idle threads stop spinning. `prelude`: untimed work
    right before each call of ours, with no pause (the reference runs without it)."""
    sides = [(call, preceded) for call, preceded in ((ours, prelude), (reference, None)) if call is not None]
    for call, preceded in sides:
        if preceded is not None:
            preceded()
        call()
    numbers = [calls_per_sample(call, sample_seconds, collector, preceded) for call, preceded in sides]
    samples: list[list[float]] = [[] for _ in sides]
    for _ in range(repeats):
        for (call, preceded), number, seconds in zip(sides, numbers, samples):
            wait(pause)
            seconds.append(run_block(call, number, collector, preceded))
    return samples[0], samples[1] if reference is not None else []


# ---------------------------------------------------------------- the machine

def cpu_model() -> str:
    "The processor's name from /proc/cpuinfo, or what the platform module says."
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def usable_cores() -> int:
    "The number of cores this process may run on."
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def idle_warning(load: float, cores: int) -> str | None:
    "A warning when the 1-minute load average exceeds half a task per core, else None."
    if load <= 0.5 * cores:
        return None
    return (f"WARNING: the machine is not idle (load average {load:.2f} on {cores} cores, above 0.5 per core): "
            "absolute figures and ratios are unreliable; do not quote them, re-run on an idle machine "
            "(meanwhile --threads 1 keeps threads from waiting on each other)")


def try_torch():
    "The torch module, or None when it is not installed."
    try:
        import torch
    except ImportError:
        return None
    return torch


def blas_description() -> str:
    "NumPy's BLAS library, version and thread count, as threadpoolctl reports them."
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "unknown (threadpoolctl is not installed)"
    pools = [pool for pool in threadpool_info() if pool.get("user_api") == "blas"]
    return ", ".join(f"{pool['internal_api']} {pool.get('version')}: {pool['num_threads']}" for pool in pools) or "none found"


def thread_description() -> str:
    "The version and thread count of numba, NumPy's BLAS and PyTorch."
    import numba

    torch = try_torch()
    torch_part = f"PyTorch {torch.__version__}: {torch.get_num_threads()}" if torch else "PyTorch not installed"
    return f"numba {numba.__version__}: {numba.get_num_threads()}; NumPy {np.__version__} BLAS {blas_description()}; {torch_part}"


def set_threads(count: int) -> None:
    "Run numba, NumPy's BLAS and PyTorch on `count` threads each."
    import numba

    numba.set_num_threads(min(count, numba.config.NUMBA_NUM_THREADS))
    torch = try_torch()
    if torch is not None:
        torch.set_num_threads(count)
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        print("note: threadpoolctl is not installed, NumPy's BLAS keeps its own thread count")
        return
    threadpool_limits(count)


THREAD_VARIABLES = ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def threads_line() -> str:
    "The threads of numba, NumPy's BLAS and PyTorch, with the environment variables that set them."
    settings = [f"{name}={os.environ[name]}" for name in THREAD_VARIABLES if name in os.environ]
    return f"threads (library version: threads): {thread_description()}" + (f" ({', '.join(settings)})" if settings else "")


def print_machine() -> None:
    "The machine, the date and the threads (with the environment variables that set them), for the record."
    cores = usable_cores()
    print(f"machine: {cpu_model()}, {cores} usable cores of {os.cpu_count()}, {platform.system()} "
          f"{platform.release()}, Python {platform.python_version()}")
    print(threads_line())
    print(f"date:    {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC")


def say(line: str, record: list[str] | None = None) -> None:
    "Print `line` (at once), and keep it in `record` when one is given: the lines that go into RESULTS.md."
    print(line, flush=True)
    if record is not None:
        record.append(line)


def print_load(moment: str, own_share: float = 0.0, record: list[str] | None = None) -> bool:
    "Print the load average; return whether the machine looked idle once this process's own share is taken off."
    loads = os.getloadavg()
    own = f", of which this benchmark's own threads about {own_share:.2f}" if own_share else ""
    say(f"load average {moment}: {loads[0]:.2f} {loads[1]:.2f} {loads[2]:.2f} (1, 5, 15 min{own})", record)
    warning = idle_warning(max(0.0, loads[0] - own_share), usable_cores())
    if warning:
        say(warning, record)
    return warning is None


# ---------------------------------------------------------------- tensors against NumPy

CLASSIC = "TensorBackend(FastOps)"
BACKENDS = {"FastBackend": lambda: minitorch.FastBackend, CLASSIC: lambda: minitorch.TensorBackend(minitorch.FastOps)}


def fast_tensor(values: np.ndarray, backend_name: str = "FastBackend", requires_grad: bool = False):
    "A minitorch tensor of `values` on the named fast backend, made as a learner makes one."
    return minitorch.tensor(values, backend=BACKENDS[backend_name](), requires_grad=requires_grad)


def matmul_row(a_shape: tuple[int, ...], b_shape: tuple[int, ...], permuted: str = "",
               backend_name: str = "FastBackend", bar: float | None = 0.3, dtype: str = "float64",
               reference: str = "NumPy") -> Callable[[], Row]:
    """A product of operands of `a_shape` and `b_shape` in `dtype`; `permuted` ("a" or "b") names an operand given
    as a transposed view (`permute`) of a contiguous tensor, as a backward pass produces them. `reference`: NumPy
    or PyTorch (a row without a bar when PyTorch is missing)."""

    def build() -> Row:
        rng = np.random.default_rng(0)
        operands = []
        for name, shape in (("a", a_shape), ("b", b_shape)):
            if name == permuted:
                stored = rng.normal(size=shape[::-1]).astype(dtype)
                operands.append((fast_tensor(stored, backend_name).permute(1, 0), stored.T))
            else:
                values = rng.normal(size=shape).astype(dtype)
                operands.append((fast_tensor(values, backend_name), values))
        (a, a_values), (b, b_values) = operands
        *batch, rows, inner = a_shape
        flops = 2.0 * np.prod(batch or [1]) * rows * inner * b_shape[-1]
        if reference == "PyTorch":
            torch = try_torch()
            if torch is None:
                return torch_missing(None if bar is None else Bar(bar))
            torch_a, torch_b = torch.from_numpy(np.ascontiguousarray(a_values)), torch.from_numpy(np.ascontiguousarray(b_values))
            return Row(lambda: a @ b, lambda: torch_a @ torch_b, f"PyTorch {dtype}", None if bar is None else Bar(bar),
                       flops=flops)
        return Row(lambda: a @ b, lambda: a_values @ b_values, "NumPy" if dtype == "float64" else f"NumPy {dtype}",
                   Bar(bar), flops=flops)

    return build


def add_row(shape: tuple[int, ...], backend_name: str = "FastBackend", bar: Bar = Bar(0.5),
            dtype: str = "float64") -> Callable[[], Row]:
    "`a + b` on two tensors of `shape` in `dtype`: two reads and one write per element."

    def build() -> Row:
        rng = np.random.default_rng(1)
        a_values, b_values = rng.normal(size=shape).astype(dtype), rng.normal(size=shape).astype(dtype)
        a, b = fast_tensor(a_values, backend_name), fast_tensor(b_values, backend_name)
        return Row(lambda: a + b, lambda: a_values + b_values, "NumPy" if dtype == "float64" else f"NumPy {dtype}",
                   bar, bytes=3 * a_values.nbytes)

    return build


NUMPY_PRODUCTS = 3
"NumPy (64,784) @ (784,128) products run right before each of our calls in the rows after NumPy."


def after_numpy_row(build_ours: Callable[[], Row], bar: Bar) -> Callable[[], Row]:
    """Ours of the row `build_ours` makes, each call right after `NUMPY_PRODUCTS` NumPy products with no pause (NumPy's
    BLAS threads still spinning, as in a learner's loop), against ours alone: the ratio is alone / after NumPy."""

    def build() -> Row:
        row = build_ours()
        rng = np.random.default_rng(4)
        a_values, b_values = rng.normal(size=(64, 784)), rng.normal(size=(784, 128))

        def numpy_products() -> None:
            for _ in range(NUMPY_PRODUCTS):
                a_values @ b_values

        return Row(row.ours, row.ours, "ours alone", bar, flops=row.flops, bytes=row.bytes, prelude=numpy_products)

    return build


def sum_row(dtype: str = "float64") -> Callable[[], Row]:
    "`a.sum(1)` over a (1000, 10000) tensor in `dtype`: each element read once."

    def build() -> Row:
        values = np.random.default_rng(2).normal(size=(1000, 10000)).astype(dtype)
        a = fast_tensor(values)
        return Row(lambda: a.sum(1), lambda: values.sum(1), "NumPy" if dtype == "float64" else f"NumPy {dtype}",
                   Bar(0.5), bytes=values.nbytes + values.itemsize * 1000)

    return build


def gather_row() -> Row:
    "An embedding lookup: a (64, 256) batch of ids into a (65, 128) float32 table, as `table[ids]` (no bar)."
    rng = np.random.default_rng(5)
    table_values, ids_values = rng.normal(size=(65, 128)).astype(np.float32), rng.integers(0, 65, size=(64, 256))
    table, ids = fast_tensor(table_values), minitorch.tensor(ids_values, backend=minitorch.FastBackend,
                                                             dtype=minitorch.int64)
    return Row(lambda: table[ids], lambda: table_values[ids_values], "NumPy float32", None,
               bytes=2 * 4 * 64 * 256 * 128)


def cat_row() -> Row:
    "`cat` of four (64, 64, 128) float32 tensors along dim 1 (no bar)."
    rng = np.random.default_rng(6)
    values = [rng.normal(size=(64, 64, 128)).astype(np.float32) for _ in range(4)]
    tensors = [fast_tensor(array) for array in values]
    return Row(lambda: minitorch.cat(tensors, 1), lambda: np.concatenate(values, 1), "NumPy float32", None,
               bytes=2 * sum(array.nbytes for array in values))


# ---------------------------------------------------------------- training steps against PyTorch

def torch_missing(bar: Bar) -> Row:
    "A row that cannot run because PyTorch is not installed."
    return Row(lambda: None, None, "PyTorch is not installed", bar)


def mlp_values(seed: int = 3) -> dict[str, np.ndarray]:
    "A batch of 64 inputs, one-hot targets and initial weights of a 784-128-10 MLP."
    rng = np.random.default_rng(seed)
    return {"x": rng.normal(size=(64, 784)), "y": np.eye(10)[rng.integers(0, 10, size=64)],
            "w1": rng.normal(scale=784**-0.5, size=(784, 128)), "b1": np.zeros(128),
            "w2": rng.normal(scale=128**-0.5, size=(128, 10)), "b2": np.zeros(10)}


class TwoLayers(minitorch.Module):
    "The 784-128-10 MLP as a learner writes it: `Parameter`s holding tensors, a ReLU between two affine maps."

    def __init__(self, values: dict[str, np.ndarray], backend_name: str):
        super().__init__()
        for name in ("w1", "b1", "w2", "b2"):
            self.add_parameter(name, fast_tensor(values[name], backend_name))

    def forward(self, x):
        hidden = (x @ self.w1.value + self.b1.value).relu()
        return hidden @ self.w2.value + self.b2.value


def mlp_step_row(backend_name: str) -> Callable[[], Row]:
    "One SGD step (forward, mean squared error, backward, update) of the MLP, against PyTorch float64."

    def build() -> Row:
        torch = try_torch()
        if torch is None:
            return torch_missing(Bar(0.3))
        values = mlp_values()
        model = TwoLayers(values, backend_name)
        optimizer = minitorch.SGD(model.parameters(), lr=0.1)
        x, y = fast_tensor(values["x"], backend_name), fast_tensor(values["y"], backend_name)
        torch_params = [torch.tensor(values[name], requires_grad=True) for name in ("w1", "b1", "w2", "b2")]
        torch_optimizer = torch.optim.SGD(torch_params, lr=0.1)
        torch_x, torch_y = torch.tensor(values["x"]), torch.tensor(values["y"])

        def ours() -> float:
            optimizer.zero_grad()
            error = model(x) - y
            loss = (error * error).mean()
            loss.backward()
            optimizer.step()
            return loss.item()

        def reference() -> float:
            w1, b1, w2, b2 = torch_params
            torch_optimizer.zero_grad()
            error = (torch_x @ w1 + b1).relu() @ w2 + b2 - torch_y
            loss = (error * error).mean()
            loss.backward()
            torch_optimizer.step()
            return loss.item()

        same_work(ours, reference, "the MLP steps")
        return Row(ours, reference, "PyTorch float64", Bar(0.3))

    return build


def gpt_step_row() -> Row:
    """One training step of chapter 5's default GPT (float32, batch 12 x 64, AdamW, clipping) against the same in
    PyTorch, which runs in a process of its own (`torch_gpt_worker.py`): in this one it would share the libgomp
    Numba loaded, with minitorch's spin, and run slower than it does alone. A step of the reference includes a
    line each way through a pipe (tens of microseconds, in the reference's disfavour)."""
    torch = try_torch()
    if torch is None:
        return torch_missing(Bar(0.5))
    import atexit
    import subprocess
    import tempfile
    from pathlib import Path
    from minitorch.gpt import GPT, GPTConfig, train_step
    from minitorch.adam import AdamW, weight_decay_groups
    config = GPTConfig(vocab_size=84)
    model = GPT(config, backend="fused", dtype=minitorch.float32)  # as `python -m minitorch.gpt` trains
    optimizer = AdamW(weight_decay_groups(model, 0.1), lr=1e-4, betas=(0.9, 0.99))
    decayed = {id(p.value) for p in weight_decay_groups(model, 0.1)[0]["params"]}
    weights = {name: p.value.to_numpy() for name, p in model.named_parameters()}
    decayed_names = np.array([name for name, p in model.named_parameters() if id(p.value) in decayed])
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "weights.npz"
        np.savez(path, decayed=decayed_names, **weights)
        worker = subprocess.Popen([sys.executable, str(Path(__file__).with_name("torch_gpt_worker.py")), str(path),
                                   str(torch.get_num_threads())], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True)
        atexit.register(worker.kill)

        def reference() -> float:
            worker.stdin.write("step\n")
            worker.stdin.flush()
            return float(worker.stdout.readline())

        ids, targets = np.random.default_rng(0).integers(0, 84, (2, 12, 64))
        ours_ids, ours_targets = (minitorch.tensor(v, backend="fused", dtype=minitorch.int64)
                                  for v in (ids, targets))

        def ours() -> float:
            return train_step(model, optimizer, ours_ids, ours_targets)

        same_work(ours, reference, "the GPT steps", rtol=1e-4)  # the worker has read the weights by now
    # a step takes 40-90 ms and single steps swing by 2x on a shared machine: samples of about 3 steps, 15 of them
    return Row(ours, reference, "PyTorch float32, own process", Bar(0.5), sample_scale=3.0)


def torch_style_gpt_row() -> Row:
    """One AdamW step of a 2-layer, 32-wide GPT written for PyTorch (the one `tests/test_written_as_pytorch.py` runs),
    on minitorch with the fast backend as the default, against the same code on PyTorch in this process; float32."""
    torch = try_torch()
    if torch is None:
        return torch_missing(Bar(0.67))
    import importlib.util
    from pathlib import Path
    import minitorch.nn.functional as ours_functional
    path = Path(__file__).resolve().parents[2] / "tests" / "test_written_as_pytorch.py"
    spec = importlib.util.spec_from_file_location("written_as_pytorch", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    previous_default = minitorch.get_default_backend()
    minitorch.set_default_backend("fast")
    sizes = dict(vocab_size=65, block_size=32, n_layer=2, n_head=2, n_embd=32)
    minitorch.manual_seed(0)
    ours_model = module.gpt_written_for(minitorch, minitorch.nn, ours_functional)(**sizes).float()
    theirs = module.gpt_written_for(torch, torch.nn, torch.nn.functional)(**sizes)
    theirs.load_state_dict({name: torch.tensor(value.to_numpy()) for name, value in ours_model.state_dict().items()})
    ids, targets = np.random.default_rng(0).integers(0, 65, size=(2, 8, 32))
    ours_batch = [minitorch.tensor(values, dtype=minitorch.int64) for values in (ids, targets)]
    their_batch = [torch.tensor(values) for values in (ids, targets)]
    ours_optimizer, their_optimizer = (model.configure_optimizers(0.1, 1e-3, (0.9, 0.99)) for model in (ours_model, theirs))

    def step(model, optimizer, batch) -> float:
        optimizer.zero_grad(set_to_none=True)
        _, loss = model(*batch)
        loss.backward()
        optimizer.step()
        return loss.item()

    def ours() -> float:
        previous = minitorch.get_default_backend()
        minitorch.set_default_backend("fast")   # as a PyTorch user sets it once; put back for the other rows
        try:
            return step(ours_model, ours_optimizer, ours_batch)
        finally:
            minitorch.set_default_backend(previous)

    minitorch.set_default_backend(previous_default)
    same_work(ours, lambda: step(theirs, their_optimizer, their_batch), "the steps of the GPT written for PyTorch",
              rtol=1e-4)
    return Row(ours, lambda: step(theirs, their_optimizer, their_batch), "PyTorch float32, same code", Bar(0.67))


def same_work(ours: Call, reference: Call, what: str, rtol: float = 1e-6) -> None:
    "Raise unless two steps started from the same weights compute the same loss (so the timings compare like work)."
    ours_loss, reference_loss = ours(), reference()
    if not np.isclose(ours_loss, reference_loss, rtol=rtol, atol=1e-9):
        raise AssertionError(f"{what} do not compute the same loss: ours {ours_loss}, reference {reference_loss}")


def conv_row(dims: int, batch: int, channels: int, size: int, kernels: int, kernel_size: int) -> Callable[[], Row]:
    "Forward and backward of a `dims`-dimensional convolution (no padding, stride 1), against PyTorch float64."

    def build() -> Row:
        torch = try_torch()
        if torch is None:
            return torch_missing(Bar(0.3))
        rng = np.random.default_rng(0)
        out_size = size - kernel_size + 1
        shapes = [(batch, channels) + (size,) * dims, (kernels, channels) + (kernel_size,) * dims, (kernels,),
                  (batch, kernels) + (out_size,) * dims]
        values = [rng.normal(size=shape) for shape in shapes]
        leaves = [fast_tensor(array, requires_grad=True) for array in values[:3]]
        grad_output = fast_tensor(values[3])
        torch_leaves = [torch.tensor(array, requires_grad=True) for array in values[:3]]
        torch_grad_output = torch.tensor(values[3])
        ours_conv = minitorch.conv2d if dims == 2 else minitorch.conv1d
        torch_conv = torch.nn.functional.conv2d if dims == 2 else torch.nn.functional.conv1d

        def ours() -> None:
            for leaf in leaves:
                leaf.zero_grad_()
            ours_conv(*leaves).backward(grad_output)

        def reference() -> None:
            for leaf in torch_leaves:
                leaf.grad = None
            torch_conv(*torch_leaves).backward(torch_grad_output)

        forward_flops = 2.0 * batch * kernels * out_size**dims * channels * kernel_size**dims
        return Row(ours, reference, "PyTorch float64", Bar(0.3), flops=3 * forward_flops)

    return build


MNIST_BATCH = 64


def mnist_row(batches: int) -> Callable[[], Row]:
    """`batches` training steps of `python -m minitorch.mnist_train`'s default model and optimiser (LeNet, Adam, batch 64),
    against the same model in PyTorch float64 starting from the same weights; images are random."""

    def build() -> Row:
        torch = try_torch()
        if torch is None:
            return torch_missing(Bar(0.15))
        from minitorch import mnist_train

        defaults = mnist_train.parser().parse_args([])
        backend = minitorch.backend(defaults.backend)
        model = mnist_train.build_model(defaults.model, 28, backend, seed=defaults.seed)
        optimizer = minitorch.Adam(model.parameters(), lr=defaults.lr)
        torch_model = torch_lenet(torch, model)
        torch_optimizer = torch.optim.Adam(torch_model.parameters(), lr=defaults.lr)
        rng = np.random.default_rng(0)
        images = rng.normal(size=(batches * defaults.batch_size, 1, 28, 28))
        labels = rng.integers(0, 10, size=batches * defaults.batch_size)
        torch_images, torch_labels = torch.tensor(images), torch.tensor(labels)
        starts = range(0, len(labels), defaults.batch_size)

        def ours() -> float:
            for start in starts:
                batch = slice(start, start + defaults.batch_size)
                loss = mnist_train.train_step(model, optimizer, images[batch], labels[batch], backend)
            return loss

        def reference() -> float:
            for start in starts:
                batch = slice(start, start + defaults.batch_size)
                torch_optimizer.zero_grad()
                loss = torch.nn.functional.cross_entropy(torch_model(torch_images[batch]), torch_labels[batch])
                loss.backward()
                torch_optimizer.step()
            return loss.item()

        same_work(ours, reference, "the MNIST training steps")
        return Row(ours, reference, "PyTorch float64", Bar(0.15), images=len(labels), max_repeats=7)

    return build


def torch_lenet(torch, model: minitorch.Module):
    "PyTorch's copy of minitorch.mnist_train's LeNet, holding the same weights as `model`."
    layers = torch.nn
    copy = layers.Sequential(
        layers.Conv2d(1, 6, 5, padding=2), layers.ReLU(), layers.MaxPool2d(2), layers.Conv2d(6, 16, 5), layers.ReLU(),
        layers.MaxPool2d(2), layers.Flatten(), layers.Linear(400, 120), layers.ReLU(), layers.Linear(120, 10),
    ).double()
    weights = {name: torch.tensor(parameter.value.to_numpy()) for name, parameter in model.named_parameters()}
    copy.load_state_dict(weights)
    return copy


# ---------------------------------------------------------------- chapter 1: scalars against closures

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


def scalar_mlp_loss(make: Callable[[float], object], points: list, labels: list, seed: int, hidden: int = 10):
    "Mean squared error of a 2-`hidden`-1 ReLU MLP over the points, with weights made by `make`."
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


def scalar_row(collector: str, points: int = 100) -> Callable[[], Row]:
    "Forward + backward of the 2-10-1 MLP over `points` Xor points: minitorch.Scalar against the closure engine."

    def build() -> Row:
        data = minitorch.datasets["Xor"](points, seed=0)
        ours_loss = scalar_mlp_loss(minitorch.Scalar, data.X, data.y, seed=1)
        reference_loss = scalar_mlp_loss(Value, data.X, data.y, seed=1)
        if not np.isclose(ours_loss.data, reference_loss.data, rtol=1e-12):
            raise AssertionError(f"the scalar MLPs disagree: ours {ours_loss.data}, closures {reference_loss.data}")

        def ours() -> None:
            scalar_mlp_loss(minitorch.Scalar, data.X, data.y, seed=1).backward()

        def reference() -> None:
            scalar_mlp_loss(Value, data.X, data.y, seed=1).backward()

        if collector == "off":
            return Row(ours, reference, "closure engine", Bar(1.0), collector=collector)
        return Row(ours, reference, "closure engine", Bar(1.0), collector=collector, max_repeats=7, sample_scale=10.0)

    return build


# ---------------------------------------------------------------- the rows

def rows(mnist_batches: int) -> list[Spec]:
    "Every row, in the order they print; the bars are issue 11's (issue 20's for the rows after NumPy)."
    specs = [Spec(f"matmul 2x512x512 @ 2x512x512, {name}", matmul_row((2, 512, 512), (2, 512, 512), "", name, 0.5))
             for name in BACKENDS]
    for a_shape, b_shape in (((64, 784), (784, 128)), ((784, 64), (64, 128)), ((64, 10), (10, 128))):
        shapes = f"{a_shape[0]}x{a_shape[1]} @ {b_shape[0]}x{b_shape[1]}"
        specs += [Spec(f"matmul {shapes}{f', {side} permuted' if side else ''}", matmul_row(a_shape, b_shape, side))
                  for side in ("", "a", "b")]
    specs.append(Spec("add 1e7", add_row((10**7,))))
    specs.append(Spec("matmul 64x784 @ 784x128 after NumPy", after_numpy_row(matmul_row((64, 784), (784, 128)), Bar(0.5))))
    specs.append(Spec("add 1e7 after NumPy", after_numpy_row(add_row((10**7,)), Bar(0.5, most_spread=0.25))))
    specs += [Spec(f"{name}, PyTorch imported first", None, torch_first=name)
              for name in ("matmul 64x784 @ 784x128 after NumPy", "add 1e7 after NumPy")]
    specs += [Spec(f"add 10x10 (per-op overhead), {name}", add_row((10, 10), name, Bar(most_micros=15)))
              for name in BACKENDS]
    specs.append(Spec("sum(1) 1000x10000", sum_row()))
    # float32 (issue 20): the batched product at least 0.7x NumPy's, elementwise work and reductions 0.5x
    specs.append(Spec("float32 matmul 2x512x512 @ 2x512x512", matmul_row((2, 512, 512), (2, 512, 512), bar=0.7,
                                                                      dtype="float32")))
    specs.append(Spec("float32 matmul 64x784 @ 784x128", matmul_row((64, 784), (784, 128), dtype="float32")))
    specs += [Spec(f"float32 matmul {name} vs PyTorch", matmul_row(a_shape, b_shape, bar=None, dtype="float32",
                                                                  reference="PyTorch"))
              for name, a_shape, b_shape in (("2x512x512 @ 2x512x512", (2, 512, 512), (2, 512, 512)),
                                             ("64x784 @ 784x128", (64, 784), (784, 128)))]
    specs.append(Spec("float32 add 1e7", add_row((10**7,), dtype="float32")))
    specs.append(Spec("float32 sum(1) 1000x10000", sum_row("float32")))
    specs.append(Spec("float32 gather: 64x256 ids into a 65x128 table", gather_row))
    specs.append(Spec("float32 cat of 4 x 64x64x128 along dim 1", cat_row))
    specs += [Spec(f"MLP SGD step 784-128-10 batch 64, {name}", mlp_step_row(name)) for name in BACKENDS]
    specs.append(Spec("conv2d fwd+bwd 16x4x28x28 * 8x4x3x3", conv_row(2, 16, 4, 28, 8, 3)))
    specs.append(Spec("conv1d fwd+bwd 16x4x784 * 8x4x9", conv_row(1, 16, 4, 784, 8, 9)))
    specs.append(Spec(f"MNIST train (default model), {mnist_batches} batches of {MNIST_BATCH}", mnist_row(mnist_batches)))
    specs.append(Spec("GPT training step (4 layers, 4 heads, width 128, batch 12x64), float32", gpt_step_row))
    specs.append(Spec("GPT written for PyTorch, AdamW step (2 layers, width 32, batch 8x32), fast default",
                      torch_style_gpt_row))
    specs += [Spec(f"scalar MLP 2-10-1 x 100 points fwd+bwd, gc {mode}", scalar_row(collector))
              for mode, collector in (("on", "clean"), ("off", "off"))]
    return specs


# ---------------------------------------------------------------- printing

def readable_time(seconds: float) -> str:
    "A duration in s, ms or us with three significant digits."
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds * 1e9:.3g} ns"


def throughput(row: Row, seconds: float) -> str:
    "The work of one call divided by its time, in the row's unit; empty for work without a size."
    if row.flops:
        return f"{row.flops / seconds / 1e9:.3g}"
    if row.bytes:
        return f"{row.bytes / seconds / 1e9:.3g}"
    if row.images:
        return f"{row.images / seconds:,.0f}"
    return ""


def throughput_unit(row: Row) -> str:
    "GFLOP/s, GB/s or images/s, or empty."
    return "GFLOP/s" if row.flops else "GB/s" if row.bytes else "images/s" if row.images else ""


HEADER = (f"{'row':<58} {'ours':>17} {'reference':>17} {'ratio':>7}  {'throughput ours / ref':<27} {'bar':<16} "
          "verdict  reference")


def measured_line(name: str, row: Row, ours: Summary, reference: Summary | None) -> tuple[str, bool | None]:
    "The printed line of one measured row, and whether it met its bar (None without a bar)."
    ratio = reference.median / ours.median if reference else None
    ours_text = f"{readable_time(ours.median)} ±{ours.spread:.0%}"
    reference_text = f"{readable_time(reference.median)} ±{reference.spread:.0%}" if reference else "-"
    ratio_text = f"{ratio:.2f}x" if ratio is not None else "-"
    unit = throughput_unit(row)
    rates = f"{throughput(row, ours.median)} / {throughput(row, reference.median) if reference else '-'} {unit}"
    met = row.bar.met(ratio, ours.median, ours.spread) if row.bar else None
    verdict = "-" if met is None else "met" if met else "NOT MET"
    return (f"{name:<58} {ours_text:>17} {reference_text:>17} {ratio_text:>7}  {rates if unit else '':<27} "
            f"{str(row.bar) if row.bar else '':<16} {verdict:<8} {row.reference_name}"), met


def measure_in_child(spec: Spec, repeats: int, sample_seconds: float, threads: int | None) -> tuple[str, bool | None]:
    "The line and verdict of row `spec.torch_first`, measured in a child process that imports PyTorch first."
    if try_torch() is None:
        return f"{spec.name:<58} skipped: PyTorch is not installed", None
    command = [sys.executable, __file__, "--torch-first", "--child-row", spec.torch_first, "--repeats", str(repeats),
               "--sample-seconds", str(sample_seconds)] + (["--threads", str(threads)] if threads else [])
    child = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if child.returncode != 0 or not child.stdout.strip():
        raise RuntimeError(f"the child run failed: {(child.stderr or child.stdout).strip().splitlines()[-1:]}")
    result = json.loads(child.stdout.strip().splitlines()[-1])
    return spec.name.ljust(58) + result["line"][58:], result["met"]


def measure(spec: Spec, repeats: int, sample_seconds: float, record: list[str] | None = None,
            threads: int | None = None) -> bool | None:
    "Build, time and print one row (kept in `record`); return whether it met its bar (None: no bar or not run)."
    if spec.torch_first:
        line, met = measure_in_child(spec, repeats, sample_seconds, threads)
        say(line, record)
        return met
    row = spec.build()
    if row.reference is None:
        say(f"{spec.name:<58} skipped: {row.reference_name}", record)
        return None
    repeats = min(repeats, row.max_repeats or repeats)
    ours_seconds, reference_seconds = interleaved(row.ours, row.reference, repeats, sample_seconds * row.sample_scale,
                                                  row.collector, prelude=row.prelude)
    line, met = measured_line(spec.name, row, summarise(ours_seconds), summarise(reference_seconds))
    say(line, record)
    return met


# ---------------------------------------------------------------- the record of a full run

RESULTS = Path(__file__).resolve().with_name("RESULTS.md")
"Where a full run writes its table: the project's current figures (tracked; partial runs never touch it)."


def git_commit() -> str:
    "The short commit of the checkout, with `+changes` when tracked files differ from it (RESULTS.md aside)."
    root = RESULTS.parents[2]
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True,
                                timeout=30, check=True).stdout.strip()
        # --no-optional-locks: only read, never refresh the index, even if another git command is running
        changes = subprocess.run(["git", "--no-optional-locks", "status", "--porcelain", "--untracked-files=no", "--",
                                  ".", f":(exclude){RESULTS.relative_to(root).as_posix()}"],
                                 cwd=root, capture_output=True, text=True, timeout=30, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown (not a git checkout, or git failed)"
    return commit + ("+changes" if changes else "")


def write_results(started: datetime.datetime, flags: list[str], lines: list[str]) -> Path:
    "Write a full run's table to RESULTS.md atomically (a temporary file in its folder, then os.replace)."
    header = (f"{started:%Y-%m-%d %H:%M} UTC; {cpu_model()}, {usable_cores()} usable cores of {os.cpu_count()}; "
              f"commit {git_commit()}; flags: {' '.join(flags) if flags else 'none'}")
    text = "\n".join([
        "# `make bench`: the current figures",
        "",
        header,
        "",
        "Written by `tools/bench/benchmark.py` at the end of its last full run (every row; `--quick` and `--only` "
        "runs leave this file alone). Do not edit it: run `make bench` on an idle machine and commit the result. "
        "The columns are explained at the top of `benchmark.py`; how to measure: MAINTAINERS.md, *Speed*.",
        "",
        "```text",
        *lines,
        "```",
        "",
    ])
    descriptor, temporary = tempfile.mkstemp(dir=RESULTS.parent, prefix=".RESULTS.", suffix=".tmp")
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            file.write(text)
        os.chmod(temporary, 0o644)  # mkstemp makes it private; the table is for everyone
        os.replace(temporary, RESULTS)
    except BaseException:
        os.unlink(temporary)
        raise
    return RESULTS


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    "The command line."
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", metavar="PATTERN",
                        help="run only the rows whose name contains PATTERN (case-insensitive)")
    parser.add_argument("--quick", action="store_true", help="fewer, shorter samples (a rough check, not figures)")
    parser.add_argument("--repeats", type=int, default=None, help="samples of each side per row (default 15, quick 5)")
    parser.add_argument("--threads", type=int, default=None, help="threads for numba, NumPy's BLAS and PyTorch")
    parser.add_argument("--list", action="store_true", help="print the row names and exit")
    parser.add_argument("--torch-first", action="store_true", help=argparse.SUPPRESS)  # read before `import minitorch`
    parser.add_argument("--child-row", default=None, help=argparse.SUPPRESS)  # measure this row; print it as JSON
    parser.add_argument("--sample-seconds", type=float, default=None, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def child_row(name: str, repeats: int, sample_seconds: float) -> int:
    "Measure the row called `name` and print its line and verdict as JSON (for a parent's row in another process)."
    spec = next(spec for spec in rows(mnist_batches=1) if spec.name == name)
    row = spec.build()
    ours, reference = interleaved(row.ours, row.reference, repeats, sample_seconds * row.sample_scale, row.collector,
                                  prelude=row.prelude)
    line, met = measured_line(name, row, summarise(ours), summarise(reference))
    print(json.dumps({"line": line, "met": met}))
    return 0


def main(argv: list[str] | None = None) -> int:
    "Run the selected rows, print them with the machine and its load, and write RESULTS.md after a full run."
    flags = list(sys.argv[1:] if argv is None else argv)
    options = parse_arguments(argv)
    if options.threads:
        set_threads(options.threads)
    if options.child_row:
        return child_row(options.child_row, options.repeats or 15, options.sample_seconds or 0.1)
    specs = [spec for spec in rows(mnist_batches=1 if options.quick else 4)
             if options.only.lower() in spec.name.lower()]
    if options.list:
        print("\n".join(spec.name for spec in specs))
        return 0
    if not specs:
        print(f"no row matches {options.only!r}; --list shows the names")
        return 1
    repeats = options.repeats or (5 if options.quick else 15)
    sample_seconds = options.sample_seconds or (0.02 if options.quick else 0.1)
    full_run = not (options.quick or options.only)
    table: list[str] | None = [] if full_run else None   # the lines RESULTS.md keeps, printed as they come
    started = datetime.datetime.now(datetime.timezone.utc)
    print_machine()
    if table is not None:
        table.append(threads_line())
    idle_before = print_load("before", record=table)
    started_wall, started_cpu = time.perf_counter(), time.process_time()
    say("ratio = reference median / ours (above 1: ours faster); ± = interquartile range / median; "
        f"{repeats} samples per side, interleaved\n", table)
    say(HEADER, table)
    verdicts, failures = [], []
    for spec in specs:
        try:
            verdicts.append(measure(spec, repeats, sample_seconds, table, options.threads))
        except Exception as error:  # one broken row must not hide the others
            failures.append(spec.name)
            say(f"{spec.name:<58} FAILED: {type(error).__name__}: {error}", table)
    say("", table)
    # the 1-minute load now includes this run's own threads: judge the rest (CPU seconds per second spent here)
    idle_after = print_load("after", (time.process_time() - started_cpu) / (time.perf_counter() - started_wall), table)
    judged = [met for met in verdicts if met is not None]
    say(f"bars met: {sum(judged)} of {len(judged)}" + (f"; rows failed: {', '.join(failures)}" if failures else ""), table)
    if not (idle_before and idle_after):
        say("These figures were taken on a busy machine: do not quote them.", table)
    if table is not None:
        try:
            print(f"wrote {write_results(started, flags, table)}")
        except OSError as error:
            print(f"could not write {RESULTS}: {error}")
            return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
