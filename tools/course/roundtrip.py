"""Check the exercise edition end to end.

On the course itself every task's notebook check must pass (its pytest tests run in `make pytest`). A check
that leaves out no other task's cells runs a prefix of its notebook, which the learner loop runs whole, so
only the others run here, and tasks whose checks run exactly the same cells of a notebook are checked there
once. In a freshly written exercise edition the package must still import, and every task's check must fail on
its own task (not on a broken untagged cell). Checks run two at a time.

    python tools/course/roundtrip.py
"""
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools" / "course"))
import check  # noqa: E402

WORKERS = 2


def run_check(course: Path, task: str, *options: str) -> subprocess.CompletedProcess:
    "Run `check.py task` inside `course`, with `course` first on the import path."
    env = {**os.environ, "PYTHONPATH": str(course), "NUMBA_ENABLE_CUDASIM": "1"}
    return subprocess.run([sys.executable, str(course / "tools" / "course" / "check.py"), task, *options],
                          cwd=course, env=env, capture_output=True, text=True)


def run_checks(course: Path, tasks: list[str], *options: str) -> dict[str, subprocess.CompletedProcess]:
    "Run the checks of every task in `course`, `WORKERS` at a time."
    with ThreadPoolExecutor(WORKERS) as pool:
        return dict(zip(tasks, pool.map(lambda task: run_check(course, task, *options), tasks)))


def leaves_out_other_tasks(nb, task: str) -> bool:
    "Whether a check of `task` skips a cell of another task: else it runs a prefix of the notebook's tested cells."
    run = check.cells_to_run(nb, task)
    return any(index not in run and not check.skipped(nb.cells[index], check.cell_tasks(nb.cells[index])[0])
               for index in range(run[-1] + 1 if run else 0) if check.cell_tasks(nb.cells[index]))


def notebook_checks(course: Path, tasks: list[str]) -> dict[tuple[str, str], list[str]]:
    """Each distinct check of a task's cells in one notebook of `course` that leaves out another task's cells,
    as (task, notebook): the tasks it stands for. A check that leaves out none runs a prefix of the notebook,
    which the learner loop's solved half runs whole (the same cells): it would only repeat that."""
    standing_for: dict[tuple[str, tuple[str, ...]], list[tuple[str, str]]] = {}
    for path in sorted((course / "nbs").glob("[!_]*.ipynb")):
        nb = check.load(path)
        for task in tasks:
            if any(task in check.cell_tasks(cell) for cell in nb.cells) and leaves_out_other_tasks(nb, task):
                cells = tuple(nb.cells[index].source for index in check.cells_to_run(nb, task))
                standing_for.setdefault((path.name, cells), []).append((task, path.name))
    return {units[0]: [task for task, _ in units] for units in standing_for.values()}


def run_notebook_checks(course: Path, tasks: list[str]) -> list[str]:
    "Run each distinct notebook check of `course` once, `WORKERS` at a time; the reports of those that fail."
    units = notebook_checks(course, tasks)
    print(f"  {len(tasks)} tasks' notebook checks in {len(units)} runs: those that leave out another task's cells, "
          f"each distinct one once (the others run a prefix of a notebook the learner loop runs whole)")
    with ThreadPoolExecutor(WORKERS) as pool:
        results = pool.map(lambda unit: run_check(course, unit[0], "--notebooks-only", "--notebook", unit[1]), units)
        return [f"task {' '.join(units[unit])} fails in {unit[1]} on the solutions:\n{result.stdout}"
                f"{result.stderr[-2000:]}" for unit, result in zip(units, results) if result.returncode != 0]


def tasks_of(course: Path) -> list[str]:
    "Every task id of `course`."
    listing = subprocess.run([sys.executable, str(course / "tools" / "course" / "check.py"), "--list"],
                             cwd=course, check=True, capture_output=True, text=True)
    return listing.stdout.split()


def main() -> int:
    "Run the round trip and return an exit code."
    problems = []
    tasks = tasks_of(ROOT)
    print(f"{len(tasks)} tasks: {' '.join(tasks)}")
    with tempfile.TemporaryDirectory(prefix="minitorch-exercises-") as tmp:
        edition = Path(tmp)
        subprocess.run([sys.executable, str(ROOT / "tools" / "course" / "exercises.py"), str(edition)], check=True,
                       stdout=subprocess.DEVNULL)
        imported = subprocess.run([sys.executable, "-c", "import minitorch; print(minitorch.__file__)"],
                                  cwd=edition, env={**os.environ, "PYTHONPATH": str(edition)},
                                  capture_output=True, text=True)
        if imported.returncode != 0 or not imported.stdout.startswith(str(edition)):
            problems.append(f"the edition's package does not import from the edition:\n{imported.stdout}{imported.stderr}")
        for task, result in run_checks(edition, tasks, "--first-failure").items():
            if result.returncode == 0:
                problems.append(f"task {task} passes in the exercise edition: its checks do not test its solution")
            elif "setup cell (untagged)" in result.stdout:
                problems.append(f"task {task}: an untagged cell fails in the exercise edition:\n{result.stdout}")
    # the course's own notebook checks last: beside `make pytest` (as in `make test`), the kernels they use are
    # compiled by then, and loaded from Numba's cache instead of compiled twice
    problems += run_notebook_checks(ROOT, tasks)
    for problem in problems:
        print("PROBLEM:", problem)
    print(f"exercise round trip: {len(tasks)} tasks, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
