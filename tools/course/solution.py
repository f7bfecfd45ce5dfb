"""Show the solution of one exercise task, or put it back into the notebook (in the exercise edition).

    python tools/course/solution.py 0.1            # print task 0.1's solution regions and where they go
    python tools/course/solution.py 0.1 --apply    # also replace the task's stubs in the notebooks by them

The regions come from `solutions/solutions.json`, which `make exercises` writes into the edition. With
`--apply`, a stub is replaced only where it is still exactly as the edition wrote it (two lines: the
`# TODO: task 0.1` comment and the `raise NotImplementedError`); where you changed it, the solution is
printed for you to paste. The package is exported again afterwards.
"""
import json
import subprocess
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS = ROOT / "solutions" / "solutions.json"


def regions_of(task: str, solutions: list[dict]) -> list[dict]:
    "The solution regions of `task`, or an exit naming the known tasks."
    regions = [region for region in solutions if region["task"] == task]
    if not regions:
        known = sorted({region["task"] for region in solutions}, key=lambda t: tuple(map(int, t.split("."))))
        raise SystemExit(f"no solution for task {task!r}: tasks are {', '.join(known)}")
    return regions


def describe(region: dict) -> str:
    "Where a region goes, then its code."
    return (f"--- task {region['task']}: `{region['function']}` in {region['notebook']} (cell {region['cell']})\n"
            + "\n".join(region["code"]))


def apply(region: dict) -> bool:
    "Replace the region's stub in its notebook by the solution; False when the stub is not there as written."
    path = ROOT / region["notebook"]
    nb = nbformat.read(path, as_version=4)
    cell = next((cell for cell in nb.cells if cell.get("id") == region["cell"]), None)
    if cell is None:
        return False
    lines = cell.source.split("\n")
    for start in range(len(lines) - 1):
        if lines[start:start + 2] == region["stub"]:
            cell.source = "\n".join(lines[:start] + region["code"] + lines[start + 2:])
            nbformat.write(nb, path)
            return True
    return False


def main(arguments: list[str]) -> int:
    "Print (and with --apply, put back) one task's solution; return an exit code."
    task = next((argument for argument in arguments if not argument.startswith("--")), None)
    if task is None:
        raise SystemExit("usage: python tools/course/solution.py TASK [--apply]")
    if not SOLUTIONS.exists():
        raise SystemExit(f"{SOLUTIONS.relative_to(ROOT)} is missing: this is not an exercise edition "
                         f"(here the notebooks hold every solution; make exercises DEST=dir writes an edition)")
    regions = regions_of(task, json.loads(SOLUTIONS.read_text()))
    for region in regions:
        print(describe(region))
    if "--apply" not in arguments:
        print(f"\n(make solution TASK={task} APPLY=1 puts this into the notebook in place of the stub)")
        return 0
    missed = [region for region in regions if not apply(region)]
    for region in missed:
        print(f"not applied: the stub of `{region['function']}` in {region['notebook']} is no longer as the edition "
              f"wrote it (you changed it): paste the code above yourself")
    applied = len(regions) - len(missed)
    if applied:
        subprocess.run([str(Path(sys.executable).parent / "nbdev_export")], cwd=ROOT, check=True)
        print(f"task {task}: {applied} stub(s) replaced by the solution and the package exported; in JupyterLab, "
              f"File > Reload Notebook from Disk")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
