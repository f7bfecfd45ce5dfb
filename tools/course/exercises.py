"""Write the exercise edition of the course: every solution region becomes a stub.

A solution region sits inside an exported cell:

        # BEGIN SOLUTION 0.1
        return x * y
        # END SOLUTION

and becomes a `raise NotImplementedError` that names task 0.1. Outputs are cleared and the
package is exported again from the stubbed notebooks. The regions themselves go to
`solutions/solutions.json` in the edition, where `make solution TASK=0.1` (`tools/course/solution.py`) finds
them for a learner who wants to see one task's solution or put it back. The edition's README starts
with what a learner needs first: how to start, the first task, how to do and check a task, where
solutions are; the course's README follows, without its section on doing a task (the page above holds it).

    python tools/course/exercises.py DEST
"""
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat

BEGIN = re.compile(r"^(?P<indent>[ \t]*)# BEGIN SOLUTION (?P<task>\d+\.\d+)\s*$")
END = re.compile(r"^[ \t]*# END SOLUTION\s*$")
DEF = re.compile(r"^[ \t]*(?:async )?def (\w+)")


SOLUTIONS = Path("solutions") / "solutions.json"
README_TASK_SECTION = "Doing a task"
"The section of the course's README that the edition's first page replaces (it holds the same steps)."
START_HERE = """# minitorch: exercise edition

This is your copy of the minitorch course with the solutions taken out: every place you write code
raises `NotImplementedError("Task 0.1 is not done yet: implement `mul`")` until you do.

## Start

```bash
make lab          # first time: sets up .venv (a minute), then opens JupyterLab on nbs/
```

On a server: `make lab LAB_FLAGS="--no-browser --ip 127.0.0.1 --port 8890"` and open the printed URL.
Begin with **task {first}** in `nbs/{first_notebook}`: read from the top and run the cells in order
(**Run > Run All Cells** stops at the first cell that needs your code). Where each task's code is written:

{task_list}

## Doing a task

1. Find the cell that raises `NotImplementedError` naming your task and write the code in its place.
2. Run that cell (Shift+Enter): from then on the package uses your code, in this notebook and in every
   notebook you open later; no export and no restart.
3. Run the check cells below it; `make check TASK=x.y` runs every check of a task and lists which of
   its functions still fail.

```bash
make check TASK={first}   # every check of task {first}: its notebook cells and its tests
```

`make check` runs the notebooks as they are saved: save the notebook first. A failure names the notebook
and the cell of the failing check and shows its lines.

## Stuck?

```bash
make solution TASK={first}            # print the solution of that task, and where it goes
make solution TASK={first} APPLY=1    # put it into your notebook in place of the stub
```

After `APPLY=1`, reload the notebook in JupyterLab (**File > Reload Notebook from Disk**) and run the
cell. The solutions of every task are in `solutions/solutions.json`.

The course's own README follows.

"""


def stub_source(source: str, where: str, solutions: list[dict] | None = None) -> tuple[str, list[str]]:
    "Replace each solution region in `source` by a stub, adding the regions to `solutions`; return the new source and its task ids."
    out, tasks, region, kept = [], [], None, []
    for number, line in enumerate(source.split("\n"), 1):  # a final newline stays
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
            region_name, kept = name, []
        elif region is not None and END.match(line):
            if solutions is not None:
                solutions.append({"task": region["task"], "function": region_name, "stub": out[-2:], "code": kept})
            region = None
        elif region is not None and BEGIN.match(line):
            raise SystemExit(f"{where}, line {number}: solution regions cannot nest")
        elif region is not None:
            kept.append(line)
        else:
            if END.match(line):
                raise SystemExit(f"{where}, line {number}: END SOLUTION without BEGIN")
            out.append(line)
    if region is not None:
        raise SystemExit(f"{where}: task {region['task']} has BEGIN SOLUTION without END SOLUTION")
    return "\n".join(out), tasks


def stub_notebook(path: Path, solutions: list[dict]) -> list[str]:
    "Stub every solution region of the notebook at `path` in place, collecting them in `solutions`; clear outputs."
    nb = nbformat.read(path, as_version=4)
    tasks = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        regions: list[dict] = []
        cell.source, cell_tasks = stub_source(cell.source, f"{path.name} cell {index}", regions)
        solutions += [{**region, "notebook": f"nbs/{path.name}", "cell": cell.get("id")} for region in regions]
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
    solutions: list[dict] = []
    tasks = {path.name: stub_notebook(path, solutions) for path in sorted((dest / "nbs").glob("*.ipynb"))}
    (dest / SOLUTIONS).parent.mkdir(exist_ok=True)
    (dest / SOLUTIONS).write_text(json.dumps(solutions, indent=1) + "\n")
    write_readme(dest, tasks)
    for stale in (dest / "minitorch").glob("*.py"):
        stale.unlink()
    nbdev_export = Path(sys.executable).parent / "nbdev_export"
    subprocess.run([str(nbdev_export)], cwd=dest, check=True)
    return tasks


def task_key(task: str) -> tuple[int, ...]:
    "Sort key for task ids such as 1.10 after 1.9."
    return tuple(int(part) for part in task.split("."))


def without_section(markdown: str, heading: str) -> str:
    "`markdown` without the `## heading` section (up to the next `## ` heading or the end), if it has one."
    return re.sub(rf"^## {re.escape(heading)}\n.*?(?=^## |\Z)", "", markdown, count=1, flags=re.M | re.S)


def write_readme(dest: Path, tasks: dict[str, list[str]]) -> None:
    "Put the learner's first steps (start, first task, doing a task, solutions) above the course's README in `dest`."
    where = {task: notebook for notebook, found in tasks.items() for task in found}
    ordered = sorted(where, key=task_key)
    task_list = "\n".join(f"* `nbs/{notebook}`: tasks {', '.join(sorted(set(found), key=task_key))}"
                          for notebook, found in sorted(tasks.items()) if found)
    start = START_HERE.format(first=ordered[0], first_notebook=where[ordered[0]], task_list=task_list)
    readme = dest / "README.md"
    readme.write_text(start + without_section(readme.read_text(), README_TASK_SECTION))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python tools/course/exercises.py DEST")
    repo, dest = Path(__file__).resolve().parents[2], Path(sys.argv[1]).resolve()
    dest.mkdir(parents=True, exist_ok=True)
    tasks = write_edition(repo, dest)
    count = sum(len(found) for found in tasks.values())
    print(f"exercise edition written to {dest}: {count} solution regions stubbed")
    for notebook, found in tasks.items():
        if found:
            print(f"  {notebook}: tasks {', '.join(sorted(set(found), key=task_key))}")
