"""Check the exercise edition end to end.

On the course itself every task's notebook check must pass (its pytest tests already ran in
`make pytest`). In a freshly written exercise edition the package must still import, and every
task's check must fail on its own task (not on a broken untagged cell). Checks run two at a time.

    python tools/course/roundtrip.py
"""
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


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
    for task, result in run_checks(ROOT, tasks, "--notebooks-only").items():
        if result.returncode != 0:
            problems.append(f"task {task} fails on the solutions:\n{result.stdout}{result.stderr[-2000:]}")
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
    for problem in problems:
        print("PROBLEM:", problem)
    print(f"exercise round trip: {len(tasks)} tasks, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
