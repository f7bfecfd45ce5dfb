"""Work through a fresh exercise edition as a learner does, in real Jupyter kernels, and report.

1. Untouched: each numbered notebook, run top to bottom in a fresh kernel, must stop first at a stub
   (`NotImplementedError` of a task) of its own chapter or an earlier one, never at another kind of error.
2. Solved: every solution typed into the notebooks (the files, as a learner's saved work; nothing exported),
   then every numbered notebook run in order, each in a fresh kernel, and the front page (`index`) last:
   all must run clean. Only the live notebooks (tools/course/live.py) carry the learner's code into the
   package here. Typed in (with the course's solution comments), the notebooks are the course's own
   (checked), so this is also the course's notebook test: `make test` runs no other. The solved edition
   shares Numba's cache of compiled kernels with the course's package (and so with `make pytest` beside it):
   Numba loads a cached kernel only for a module whose text is the one it was compiled from, which the solved
   notebooks write.

The two halves run at once, on two editions. Cells that `nbdev_test` skips (`#| slow`, `#| cuda`,
`#| eval: false`) are skipped here too.

    python tools/course/learner_loop.py [--keep DIR]
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools" / "site"))
from nbcells import skip_flags, skipped_as_raw  # noqa: E402

STUB = re.compile(r"Task (\d+)\.(\d+) is not done yet")
TIMEOUT_SECONDS = 900


def chapter_of(notebook: Path) -> int:
    "The chapter a numbered notebook belongs to: the first digit of its number."
    return int(notebook.name[0])


def numbered_notebooks(edition: Path) -> list[Path]:
    "The edition's chapters in reading order (not index, not scratch notebooks)."
    return sorted((edition / "nbs").glob("[0-9][0-9]_*.ipynb"))


def run_notebook(path: Path, edition: Path, env: dict[str, str] | None = None) -> str | None:
    "Run the notebook at `path` in a fresh kernel, the edition first on the import path (and `env` set); the error, or None."
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError
    nb = nbformat.read(path, as_version=4)
    skipped_as_raw(nb, skip_flags(edition))
    env = {**os.environ, "PYTHONPATH": str(edition), "NUMBA_ENABLE_CUDASIM": "1", **(env or {})}
    env.pop("IN_TEST", None)
    client = NotebookClient(nb, timeout=TIMEOUT_SECONDS, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    try:
        client.execute(env=env)
    except CellExecutionError as error:
        return f"{error.ename}: {error.evalue}"
    return None


def write_edition(destination: Path) -> None:
    "Write a fresh exercise edition of the course to `destination`."
    subprocess.run([sys.executable, str(ROOT / "tools" / "course" / "exercises.py"), str(destination)],
                   check=True, stdout=subprocess.DEVNULL)


def with_markers(region: dict) -> dict:
    "The solution region with the course's BEGIN/END SOLUTION comments around its code, at the stub's indent."
    indent = region["stub"][0][:len(region["stub"][0]) - len(region["stub"][0].lstrip())]
    return {**region, "code": [f"{indent}# BEGIN SOLUTION {region['task']}", *region["code"], f"{indent}# END SOLUTION"]}


def type_every_solution(edition: Path) -> int:
    """Put every solution back into the edition's notebooks (not exporting), with the course's solution markers
    (comments), so that each notebook is the course's own; return how many regions."""
    sys.path.insert(0, str(edition / "tools" / "course"))
    import solution
    solution.ROOT = edition
    regions = json.loads((edition / "solutions" / "solutions.json").read_text())
    missed = [region for region in regions if not solution.apply(with_markers(region))]
    if missed:
        raise SystemExit(f"could not put back {len(missed)} solution regions, e.g. {missed[0]['function']}")
    return len(regions)


def unlike_the_course(edition: Path) -> list[str]:
    "The notebooks of `edition` whose cells differ from the course's, trailing spaces aside."
    def lines(path: Path) -> list[list[str]]:
        return [[line.rstrip() for line in cell.source.splitlines()] for cell in nbformat.read(path, as_version=4).cells]
    return [path.name for path in sorted((ROOT / "nbs").glob("[!_]*.ipynb"))
            if not (edition / "nbs" / path.name).exists() or lines(path) != lines(edition / "nbs" / path.name)]


def untouched_problems(edition: Path) -> list[str]:
    "Run each notebook of an untouched edition; the notebooks whose first error is not a stub of their chapter or earlier."
    problems = []
    for path in numbered_notebooks(edition):
        started = time.perf_counter()
        error = run_notebook(path, edition)
        stub = STUB.search(error or "")
        verdict = "ran clean" if error is None else error.splitlines()[0][:120]
        print(f"  untouched {path.name}: {verdict} ({time.perf_counter() - started:.0f} s)", flush=True)
        if error is not None and (stub is None or int(stub[1]) > chapter_of(path)):
            problems.append(f"untouched {path.name} stops at {error.splitlines()[0][:300]}")
    return problems


def share_compiled_kernels(edition: Path) -> dict[str, str]:
    """Point the edition's Numba cache at the course's (`minitorch/__pycache__`), so that both load what either
    compiled; Numba loads a cached kernel only for a module whose text is the one it was compiled from. Python's
    own bytecode goes elsewhere: return the environment that says where."""
    course, folder = ROOT / "minitorch" / "__pycache__", edition / "minitorch" / "__pycache__"
    course.mkdir(exist_ok=True)
    shutil.rmtree(folder, ignore_errors=True)
    folder.symlink_to(course, target_is_directory=True)
    return {"PYTHONPYCACHEPREFIX": str(edition / ".bytecode")}


def solved_problems(edition: Path) -> list[str]:
    "Type every solution in, then run each notebook in order in a fresh kernel; the notebooks that fail."
    print(f"  typed {type_every_solution(edition)} solution regions into the notebooks, exported nothing")
    problems = [f"solved {name} is not the course's notebook" for name in unlike_the_course(edition)]
    env = share_compiled_kernels(edition)
    for path in [*numbered_notebooks(edition), edition / "nbs" / "index.ipynb"]:   # the front page uses chapter 0
        started = time.perf_counter()
        error = run_notebook(path, edition, env)
        print(f"  solved {path.name}: {'clean' if error is None else 'FAILED: ' + error[:300]}"
              f" ({time.perf_counter() - started:.0f} s)", flush=True)
        if error is not None:
            problems.append(f"solved {path.name} fails: {error[:2000]}")
    return problems


def main() -> int:
    "Run both halves of the loop on fresh editions; return an exit code."
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="write the editions (untouched/, solved/) here and keep them "
                                                  "(default: a temporary folder)")
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="minitorch-learner-") as scratch:
        folder = (arguments.keep or Path(scratch)).resolve()
        untouched, solved = folder / "untouched", folder / "solved"
        for edition in (untouched, solved):
            write_edition(edition)
        count = len(numbered_notebooks(solved))
        with ThreadPoolExecutor(2) as pool:
            halves = [pool.submit(untouched_problems, untouched), pool.submit(solved_problems, solved)]
            problems = [problem for half in halves for problem in half.result()]
    for problem in problems:
        print("PROBLEM:", problem)
    print(f"learner loop: {count} notebooks, untouched and solved, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
