"""Write the exercise edition of the course: every solution region becomes a stub.

A solution region sits inside an exported cell:

        # BEGIN SOLUTION 0.1
        return x * y
        # END SOLUTION

and becomes a `raise NotImplementedError` that names task 0.1. Outputs are cleared and the
package is exported again from the stubbed notebooks.

    python .ci/exercises.py DEST
"""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat

BEGIN = re.compile(r"^(?P<indent>[ \t]*)# BEGIN SOLUTION (?P<task>\d+\.\d+)\s*$")
END = re.compile(r"^[ \t]*# END SOLUTION\s*$")
DEF = re.compile(r"^[ \t]*(?:async )?def (\w+)")


def stub_source(source: str, where: str) -> tuple[str, list[str]]:
    "Replace each solution region in `source` by a stub; return the new source and its task ids."
    out, tasks, region = [], [], None
    for number, line in enumerate(source.splitlines(), 1):
        begin = BEGIN.match(line)
        if region is None and begin:
            if not begin["indent"]:
                raise SystemExit(f"{where}: solution region for task {begin['task']} is not inside a function")
            region = begin
            tasks.append(begin["task"])
            names = [DEF.match(prior)[1] for prior in out if DEF.match(prior)]
            name = names[-1] if names else "this code"
            out.append(f"{begin['indent']}# TODO: task {begin['task']}")
            out.append(f'{begin["indent"]}raise NotImplementedError("Task {begin["task"]} is not done yet: implement `{name}`")')
        elif region is not None and END.match(line):
            region = None
        elif region is not None and BEGIN.match(line):
            raise SystemExit(f"{where}, line {number}: solution regions cannot nest")
        elif region is None:
            if END.match(line):
                raise SystemExit(f"{where}, line {number}: END SOLUTION without BEGIN")
            out.append(line)
    if region is not None:
        raise SystemExit(f"{where}: task {region['task']} has BEGIN SOLUTION without END SOLUTION")
    return "\n".join(out), tasks


def stub_notebook(path: Path) -> list[str]:
    "Stub every solution region of the notebook at `path` in place and clear its outputs."
    nb = nbformat.read(path, as_version=4)
    tasks = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        cell.source, cell_tasks = stub_source(cell.source, f"{path.name} cell {index}")
        tasks += cell_tasks
        cell.outputs, cell.execution_count = [], None
    nbformat.write(nb, path)
    return tasks


def course_files(repo: Path) -> list[str]:
    "Files of the course: tracked and untracked-but-not-ignored."
    listing = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                             cwd=repo, check=True, capture_output=True, text=True).stdout
    return [name for name in listing.splitlines() if (repo / name).is_file()]


def write_edition(repo: Path, dest: Path) -> dict[str, list[str]]:
    "Copy the course from `repo` to `dest`, stub it and export the package; return tasks per notebook."
    if dest.exists() and any(dest.iterdir()):
        raise SystemExit(f"{dest} exists and is not empty: choose a new DEST")
    for name in course_files(repo):
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(repo / name, dest / name)
    tasks = {path.name: stub_notebook(path) for path in sorted((dest / "nbs").glob("*.ipynb"))}
    for stale in (dest / "minitorch").glob("*.py"):
        stale.unlink()
    nbdev_export = Path(sys.executable).parent / "nbdev_export"
    subprocess.run([str(nbdev_export)], cwd=dest, check=True)
    return tasks


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python .ci/exercises.py DEST")
    repo, dest = Path(__file__).resolve().parent.parent, Path(sys.argv[1]).resolve()
    dest.mkdir(parents=True, exist_ok=True)
    tasks = write_edition(repo, dest)
    count = sum(len(found) for found in tasks.values())
    print(f"exercise edition written to {dest}: {count} solution regions stubbed")
    for notebook, found in tasks.items():
        if found:
            print(f"  {notebook}: tasks {', '.join(sorted(set(found), key=lambda t: tuple(map(int, t.split('.')))))}")
