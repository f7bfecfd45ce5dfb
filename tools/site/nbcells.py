"""Notebook helpers shared by `make e2e` and `make html`: which cells a run skips, which notebooks
are chapters, what a chapter is called, and links between chapters.

A code cell is skipped by the same rule as `nbdev_test`: it carries a flag from `tst_flags` in
settings.ini (`#| slow`, `#| cuda`, `#| notest`), or `#| eval: false`, or calls `nbdev_export(`.
"""
import copy
import re
from configparser import ConfigParser
from pathlib import Path

import nbformat
from nbdev.process import extract_directives

ROOT = Path(__file__).resolve().parents[2]
SKIP_TAG = "skip-execution"  # nbclient leaves cells with this tag unexecuted
NOTEBOOK_LINK = re.compile(r"""(?P<prefix>href=["']|\]\()(?P<name>(?:\./)?[\w-]+)\.ipynb(?P<anchor>#[^"')\s]*)?(?=["')])""")


def skip_flags(root: Path = ROOT) -> set[str]:
    "The flags `nbdev_test` skips, from `tst_flags` in settings.ini."
    config = ConfigParser(delimiters=["="])
    config.read(root / "settings.ini", encoding="utf-8")
    return set(config["DEFAULT"].get("tst_flags", "").split())


def is_skipped(cell, flags: set[str]) -> bool:
    "Whether `cell` is a code cell that a test run leaves out."
    if cell.cell_type != "code":
        return False
    if "nbdev_export(" in cell.source:
        return True
    directives = extract_directives(copy.deepcopy(cell), remove=False)
    if directives.get("eval:", [""])[0].lower() == "false":
        return True
    return bool(flags & directives.keys())


def skipped_as_raw(nb, flags: set[str]) -> int:
    "Turn the skipped cells of `nb` into raw cells (shown, never run); return how many."
    count = 0
    for index, cell in enumerate(nb.cells):
        if is_skipped(cell, flags):
            raw = nbformat.v4.new_raw_cell(cell.source)
            raw.id = cell.get("id", raw.id)
            nb.cells[index] = raw
            count += 1
    return count


def skipped_tagged(nb, flags: set[str]) -> int:
    "Tag the skipped cells of `nb` so nbclient shows them without running them; return how many."
    count = 0
    for cell in nb.cells:
        if is_skipped(cell, flags):
            tags = cell.metadata.setdefault("tags", [])
            if SKIP_TAG not in tags:
                tags.append(SKIP_TAG)
            count += 1
    return count


def chapter_notebooks(nbs: Path) -> list[Path]:
    "The course's notebooks in reading order: `index.ipynb`, then `NN_*.ipynb` (never `_*.ipynb`)."
    chapters = sorted(path for path in nbs.glob("[0-9]*.ipynb"))
    index = [nbs / "index.ipynb"] if (nbs / "index.ipynb").exists() else []
    return index + chapters


def title_and_subtitle(nb) -> tuple[str, str]:
    "The `# Title` and `> subtitle` of a notebook's first markdown cell."
    first = next((cell.source for cell in nb.cells if cell.cell_type == "markdown"), "")
    title = next((line[2:].strip() for line in first.splitlines() if line.startswith("# ")), "")
    subtitle = next((line[1:].strip() for line in first.splitlines() if line.startswith(">")), "")
    return title, subtitle


def html_links(text: str) -> str:
    "Point links to notebooks (`02_datasets.ipynb#x`) at the rendered pages (`02_datasets.html#x`)."
    return NOTEBOOK_LINK.sub(lambda m: f"{m['prefix']}{m['name']}.html{m['anchor'] or ''}", text)
