"""Run exactly the checks of one exercise task: its pytest tests and its notebook cells.

Notebook cells belong to a task through the directive `#| task 0.1`. A notebook that holds
such cells is run with its untagged cells (definitions, prose demos) and the cells of the
task, in order, up to the task's last cell; cells of other tasks are skipped.

    python tools/course/check.py 0.1                    # one task
    python tools/course/check.py 0.1 --notebooks-only   # only its notebook cells (pytest already ran)
    python tools/course/check.py 0.1 --first-failure    # stop at the first failing check (pytest -x)
    python tools/course/check.py 0.1 --notebook 00_operators.ipynb   # only its cells in that notebook
    python tools/course/check.py --list                 # every task id found in the course

A failing cell is reported with its notebook, its number (as JupyterLab's status bar counts, from 1)
and id, its source with the failing line marked, and where the error was raised when that was
elsewhere (a function of the package or of an earlier cell), before the traceback.
"""
import linecache
import os
import re
import subprocess
import sys
import traceback
from pathlib import Path

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

ROOT = Path(__file__).resolve().parents[2]
TASK_ID = re.compile(r"^\d+\.\d+$")
SKIP_FLAGS = {"notest", "slow", "cuda"}
CELL_FILE = re.compile(r"^<ipython-input-\d+-[0-9a-f]+>$")  # how IPython names the code of the cell it ran
CONTEXT_LINES = 3


def task_key(task: str) -> tuple[int, ...]:
    "Sort key for task ids such as 1.10 after 1.9."
    return tuple(int(part) for part in task.split("."))


def cell_directives(cell) -> dict[str, list[str]]:
    "The `#|` directives at the top of a cell, with the values of repeated ones joined (nbdev keeps only the last)."
    directives: dict[str, list[str]] = {}
    for line in cell.source.splitlines():
        if not line.startswith("#|"):
            if line.strip():
                break
            continue
        name, *values = line[2:].split()
        directives.setdefault(name, []).extend(values)
    return directives


def cell_tasks(cell) -> list[str]:
    "Task ids a cell is tagged with: every `#| task` line counts."
    return cell_directives(cell).get("task", []) if cell.cell_type == "code" else []


def load(path: Path):
    """The notebook at `path`, its cells' sources joined into strings. Read as plain JSON (execnb's reader): a check
    runs in a process of its own, and importing nbformat (its schema validator) would take about 1.6 s of it."""
    from execnb.nbio import read_nb
    return read_nb(path)


def notebook_tasks() -> dict[Path, set[str]]:
    "Task ids tagged in each notebook."
    found = {}
    for path in sorted((ROOT / "nbs").glob("[!_]*.ipynb")):
        tasks = {task for cell in load(path).cells for task in cell_tasks(cell)}
        if tasks:
            found[path] = tasks
    return found


def pytest_tasks() -> set[str]:
    "Task ids used by `@pytest.mark.task(...)` in tests/."
    pattern = re.compile(r"""mark\.task\(\s*["'](\d+\.\d+)["']""")
    return {task for path in (ROOT / "tests").glob("test_*.py") for task in pattern.findall(path.read_text())}


def skipped(cell, task: str) -> bool:
    "Whether `cell` is not part of the run for `task`."
    if cell.cell_type != "code":
        return True
    directives = cell_directives(cell)
    if directives.get("eval:", [""])[0].lower() == "false":
        return True
    if SKIP_FLAGS & directives.keys():
        return True
    tasks = cell_tasks(cell)
    return bool(tasks) and task not in tasks


def cells_to_run(nb, task: str) -> list[int]:
    "The indices of the cells of `nb` that a check of `task` runs: every cell not skipped, up to the task's last cell."
    tagged = [index for index, cell in enumerate(nb.cells) if task in cell_tasks(cell)]
    return [index for index in range(tagged[-1] + 1 if tagged else 0) if not skipped(nb.cells[index], task)]


def cell_of(filename: str, nb) -> int | None:
    "The index of the cell of `nb` whose code IPython ran under `filename` (it keeps that code in linecache)."
    if not CELL_FILE.match(filename):
        return None
    code = "".join(linecache.getlines(filename)).rstrip()
    return next((index for index, cell in enumerate(nb.cells) if cell.source.rstrip() == code), None)


def marked_source(source: str, line: int | None) -> str:
    "The lines of `source` around `line` (all of a short cell), numbered, the failing one marked with -->."
    lines = source.splitlines()
    first, last = 1, len(lines)
    if line is not None and len(lines) > 2 * CONTEXT_LINES + 6:
        first, last = max(1, line - CONTEXT_LINES), min(len(lines), line + CONTEXT_LINES)
    shown = [f"{'-->' if number == line else '   '} {number:3d} | {lines[number - 1]}" for number in range(first, last + 1)]
    return "\n".join((["    ..."] if first > 1 else []) + shown + (["    ..."] if last < len(lines) else []))


def place_of(filename: str, path: Path, nb) -> str:
    "Where code ran from: a cell of the notebook at `path`, a file of the course (relative), or any other file."
    index = cell_of(filename, nb)
    if index is not None:
        return f"{path.name} cell {index + 1}"
    return os.path.relpath(filename, ROOT) if filename.startswith(str(ROOT)) else filename


def failure_report(path: Path, nb, index: int, error: BaseException, kind: str) -> str:
    "Which cell of `nb` failed and how: its source with the failing line marked, where the error came from, the traceback."
    frames = traceback.extract_tb(error.__traceback__)
    in_cell = [frame for frame in frames if cell_of(frame.filename, nb) == index]
    line = in_cell[0].lineno if in_cell else None
    where = f"{path.name} cell {index + 1} of {len(nb.cells)} (id {nb.cells[index].get('id')}; {kind})"
    report = [f"{where} failed: {type(error).__name__}: {error}",
              f"  the cell{f', line {line}' if line else ''}:", marked_source(nb.cells[index].source, line)]
    origin = frames[-1] if frames else None
    if origin and cell_of(origin.filename, nb) != index:
        report.append(f"  raised in `{origin.name}`, {place_of(origin.filename, path, nb)} line {origin.lineno}: "
                      f"{(origin.line or '').strip()}")
    cell_frames = [frame for frame in traceback.format_exception(type(error), error, error.__traceback__)
                   if "IPython/core" not in frame and "execnb" not in frame]
    report.append("  traceback:\n" + "".join(cell_frames).rstrip())
    return "\n".join(report)


STUB = re.compile(r"Task (\d+\.\d+) is not done yet: implement `(\w+)`")


def stub_list(found: list[tuple[str, str]], task: str) -> str:
    "The stubbed functions found as (task, name), each once, in order; another task's marked as such."
    unique = dict.fromkeys(found)
    return ", ".join(f"`{name}`" + ("" if stub_task == task else f" (task {stub_task})") for stub_task, name in unique)


def still_to_do(errors: list[BaseException]) -> list[tuple[str, str]]:
    "The (task, function) of each stub that raised, in the order the checks met them."
    return [STUB.search(str(error)).groups() for error in errors
            if isinstance(error, NotImplementedError) and STUB.search(str(error))]


def run_notebook(path: Path, task: str, first_failure: bool = False) -> tuple[bool, str]:
    """Run the cells of `path` that belong to `task`; return success and a report.

    A failing check does not stop the run (unless `first_failure`): the task's later checks still run, so
    the report can list every function of the task that is still a stub. A failing untagged cell stops it."""
    from execnb.shell import CaptureShell
    nb = load(path)
    shell = CaptureShell(path)
    sys.path.insert(0, str(ROOT))
    cwd, in_test = os.getcwd(), os.environ.get("IN_TEST")
    os.chdir(path.parent)
    os.environ["IN_TEST"] = "1"  # as under nbdev_test: a notebook's own `nbdev_export()` call exports nothing
    failures: list[tuple[int, BaseException]] = []
    try:
        for index in cells_to_run(nb, task):
            cell = nb.cells[index]
            shell.run(cell.source)
            if shell.exc is None:
                continue
            is_check = task in cell_tasks(cell)
            if not is_check and not failures:
                return False, failure_report(path, nb, index, shell.exc, "setup cell (untagged)")
            failures.append((index, shell.exc))
            if first_failure or not is_check:
                break
    finally:
        os.chdir(cwd)
        if in_test is None:
            os.environ.pop("IN_TEST", None)
        else:
            os.environ["IN_TEST"] = in_test
    if not failures:
        return True, f"{path.name}: cells of task {task} passed"
    index, error = failures[0]
    report = [failure_report(path, nb, index, error, f"check of task {task}")]
    if len(failures) > 1:
        report.append(f"  {len(failures)} checks of task {task} failed: "
                      + ", ".join(f"cell {index + 1}" for index, _ in failures))
    to_do = still_to_do([error for _, error in failures])
    if to_do:
        report.append(f"  still to implement: {stub_list(to_do, task)}")
    return False, "\n".join(report)


def run_pytest(task: str, first_failure: bool = False) -> tuple[bool, str]:
    "Run the pytest tests marked with `task` (stopping at the first failure if asked)."
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(ROOT / "tests"), "--task", task,
               *(["-x"] if first_failure else [])]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    summary = (result.stdout.strip().splitlines() or ["(no output)"])[-1]
    passed = result.returncode in (0, 5)
    if not passed:
        print(result.stdout[-4000:], result.stderr[-2000:], sep="\n")
        to_do = STUB.findall(result.stdout)
        if to_do:
            summary += f"; still to implement: {stub_list(to_do, task)}"
    return passed, f"pytest: {summary}"


def check(task: str, with_pytest: bool = True, first_failure: bool = False, notebook: str | None = None) -> bool:
    "Run the checks of `task` (its cells, in `notebook` if named, and its tests if `with_pytest`); return success."
    notebooks = [path for path, tasks in notebook_tasks().items() if task in tasks and notebook in (None, path.name)]
    if notebook is not None and not notebooks:
        raise SystemExit(f"task {task!r} has no checks in a notebook named {notebook!r}")
    has_tests = task in pytest_tasks()
    if not notebooks and not has_tests:
        raise SystemExit(f"task {task!r} has no checks: known tasks are {', '.join(all_tasks())}")
    results = []
    for path in notebooks:
        results.append(run_notebook(path, task, first_failure))
        if first_failure and not results[-1][0]:
            break
    if has_tests and with_pytest and not (first_failure and results and not all(ok for ok, _ in results)):
        results.append(run_pytest(task, first_failure))
    for ok, report in results:
        print(f"  {'PASS' if ok else 'FAIL'}  {report}")
    passed = all(ok for ok, _ in results)
    print(f"task {task}: {'PASSED' if passed else 'FAILED'}")
    return passed


def all_tasks() -> list[str]:
    "Every task id found in notebooks and tests."
    tasks = set(pytest_tasks()).union(*notebook_tasks().values())
    return sorted(tasks, key=task_key)


if __name__ == "__main__":
    arguments = sys.argv[1:]
    notebook = None
    if "--notebook" in arguments:
        at = arguments.index("--notebook")
        notebook = arguments[at + 1] if at + 1 < len(arguments) else ""
        del arguments[at:at + 2]
    options = {"--notebooks-only", "--first-failure"}
    chosen = options.intersection(arguments)
    arguments = [argument for argument in arguments if argument not in options]
    if len(arguments) != 1 or notebook == "":
        raise SystemExit("usage: python tools/course/check.py TASK [--notebooks-only] [--first-failure] "
                         "[--notebook NAME] | --list")
    if arguments[0] == "--list":
        print(" ".join(all_tasks()))
    elif not TASK_ID.match(arguments[0]):
        raise SystemExit(f"TASK must look like 0.1, got {arguments[0]!r}")
    else:
        passed = check(arguments[0], with_pytest="--notebooks-only" not in chosen and notebook is None,
                       first_failure="--first-failure" in chosen, notebook=notebook)
        sys.exit(0 if passed else 1)
