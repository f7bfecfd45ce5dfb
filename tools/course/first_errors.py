"""Run every numbered notebook of an untouched exercise edition top to bottom and say where each first fails.

In an edition nobody has worked on, a notebook may only stop at a stub, a `NotImplementedError` of a
task of its own chapter or of an earlier one (or run to the end). Any other first error (an import of something a later
notebook builds, a name that is not defined, a stub of a later chapter) is a fault of the course.
Each notebook runs in a fresh process, as after a kernel restart, with the edition first on the
import path. Cells flagged `notest`, `slow` or `cuda` are skipped, as `nbdev_test` skips them, unless
`--all-cells` is given (JupyterLab's Run All runs them too).

With `--chapters`, the opposite check: for each chapter, a copy of the edition with the solutions of that
chapter and the earlier ones put back (from `solutions/solutions.json`) must run each notebook of that
chapter to the end, although every later task is still a stub.

    python tools/course/first_errors.py EDITION [--all-cells] [--chapters] [NOTEBOOK_PREFIX ...]
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat

SKIP_FLAGS = {"notest", "slow", "cuda"}
STUB = re.compile(r"NotImplementedError: (?:.*: )?Task (\d+)\.(\d+) is not done yet")  # the CUDA simulator prefixes thread ids

RUNNER = r'''
import os, sys
import nbformat
from execnb.shell import CaptureShell
path, all_cells, skip = sys.argv[1], sys.argv[2] == "1", set(sys.argv[3].split(","))
nb = nbformat.read(path, as_version=4)
shell = CaptureShell(path)
os.chdir(os.path.dirname(path))
for number, cell in enumerate(nb.cells, 1):
    if cell.cell_type != "code":
        continue
    flags = {word for line in cell.source.splitlines() if line.startswith("#|") for word in line[2:].split()}
    if not all_cells and flags & skip:
        continue
    shell.run(cell.source)
    if shell.exc is not None:
        print(f"cell {number}: {type(shell.exc).__name__}: {str(shell.exc).splitlines()[0][:200]}")
        sys.exit(1)
print("ran to the end")
'''


def chapter(notebook: str) -> int:
    "The chapter of a notebook named like `23_tensor_functions.ipynb`: its first digit."
    return int(notebook[0])


def first_error(edition: Path, notebook: Path, all_cells: bool) -> tuple[bool, str]:
    "Run `notebook` of `edition` in a fresh process; whether its first error is allowed, and what it was."
    env = {**os.environ, "PYTHONPATH": str(edition), "NUMBA_ENABLE_CUDASIM": "1"}
    result = subprocess.run([sys.executable, "-c", RUNNER, str(notebook), "1" if all_cells else "0", ",".join(SKIP_FLAGS)],
                            cwd=edition, env=env, capture_output=True, text=True)
    lines = result.stdout.strip().splitlines() or [f"no output: {result.stderr.strip()[-300:]}"]
    outcome = lines[-1]
    stub = STUB.search(outcome)
    allowed = outcome == "ran to the end" or bool(stub) and int(stub[1]) <= chapter(notebook.name)
    return allowed, outcome


def solve_through(edition: Path, last_chapter: int) -> None:
    "Put the solutions of every task of chapters up to `last_chapter` back into `edition`, and export it."
    for region in json.loads((edition / "solutions" / "solutions.json").read_text()):
        if int(region["task"].split(".")[0]) > last_chapter:
            continue
        path = edition / region["notebook"]
        nb = nbformat.read(path, as_version=4)
        cell = next(cell for cell in nb.cells if cell.get("id") == region["cell"])
        lines = cell.source.split("\n")
        start = next(start for start in range(len(lines) - 1) if lines[start:start + 2] == region["stub"])
        cell.source = "\n".join(lines[:start] + region["code"] + lines[start + 2:])
        nbformat.write(nb, path)
    subprocess.run([str(Path(sys.executable).parent / "nbdev_export")], cwd=edition, check=True)


def check_chapters(edition: Path, notebooks: list[Path], all_cells: bool) -> int:
    "For each chapter, solve it and the earlier ones in a copy of `edition` and run its notebooks; the count of faults."
    faults = 0
    for last_chapter in sorted({chapter(notebook.name) for notebook in notebooks}):
        with tempfile.TemporaryDirectory(prefix="minitorch-chapters-") as tmp:
            copy = Path(tmp) / "edition"
            shutil.copytree(edition, copy)
            solve_through(copy, last_chapter)
            for notebook in notebooks:
                if chapter(notebook.name) == last_chapter:
                    _, outcome = first_error(copy, copy / "nbs" / notebook.name, all_cells)
                    finished = outcome == "ran to the end"
                    faults += not finished
                    print(f"{'ok   ' if finished else 'FAULT'} {notebook.name} with chapters 0-{last_chapter} solved: {outcome}",
                          flush=True)
    return faults


def main(arguments: list[str]) -> int:
    "Report each notebook's first error; the exit code says whether every one was a stub of its chapter or earlier."
    all_cells, chapters = "--all-cells" in arguments, "--chapters" in arguments
    arguments = [argument for argument in arguments if argument not in ("--all-cells", "--chapters")]
    if not arguments:
        raise SystemExit("usage: python tools/course/first_errors.py EDITION [--all-cells] [--chapters] [NOTEBOOK_PREFIX ...]")
    edition, prefixes = Path(arguments[0]).resolve(), arguments[1:]
    notebooks = [path for path in sorted((edition / "nbs").glob("[0-9]*.ipynb"))
                 if not path.name.startswith("99") and (not prefixes or path.name.startswith(tuple(prefixes)))]
    if chapters:
        faults = check_chapters(edition, notebooks, all_cells)
        print(f"{len(notebooks)} notebooks, {faults} that do not run to the end with their chapter and the earlier ones solved")
        return 1 if faults else 0
    faults = 0
    for notebook in notebooks:
        allowed, outcome = first_error(edition, notebook, all_cells)
        faults += not allowed
        print(f"{'ok   ' if allowed else 'FAULT'} {notebook.name}: {outcome}", flush=True)
    print(f"{len(notebooks)} notebooks, {faults} whose first error is not a stub of their chapter or an earlier one")
    return 1 if faults else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
