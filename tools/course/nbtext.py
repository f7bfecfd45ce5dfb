"""Convert notebooks to and from a plain-text form that is easy to edit and review.

Text form: cells separated by marker lines `## %% md` or `## %% code`.
    python tools/course/nbtext.py to-nb  chapter.txt nbs/NN_topic.ipynb
    python tools/course/nbtext.py to-txt nbs/NN_topic.ipynb chapter.txt
Cell ids are derived from the notebook name and the cell position, so they are stable.
"""
import hashlib
import re
import sys
from pathlib import Path

import nbformat

MARKER = re.compile(r"^## %% (md|code)\s*$")


def cell_id(nb_name: str, index: int) -> str:
    "A stable id for the `index`-th cell of notebook `nb_name`."
    return hashlib.sha1(f"{nb_name}:{index}".encode()).hexdigest()[:8]


def text_to_notebook(text: str, nb_name: str) -> nbformat.NotebookNode:
    "Parse the text form into a notebook."
    chunks, kind, lines = [], None, []
    for line in text.splitlines() + ["## %% md"]:
        match = MARKER.match(line)
        if not match:
            lines.append(line)
            continue
        if kind is not None:
            chunks.append((kind, "\n".join(lines).strip("\n")))
        kind, lines = match.group(1), []
    nb = nbformat.v4.new_notebook()
    for index, (kind, source) in enumerate(chunks):
        make = nbformat.v4.new_markdown_cell if kind == "md" else nbformat.v4.new_code_cell
        cell = make(source)
        cell.id = cell_id(nb_name, index)
        nb.cells.append(cell)
    nb.metadata = {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}}
    return nb


def notebook_to_text(nb: nbformat.NotebookNode) -> str:
    "Render a notebook in the text form (outputs are dropped)."
    parts = []
    for cell in nb.cells:
        kind = "md" if cell.cell_type == "markdown" else "code"
        parts.append(f"## %% {kind}\n{cell.source}\n")
    return "\n".join(parts)


if __name__ == "__main__":
    command, source, target = sys.argv[1:4]
    if command == "to-nb":
        nb = text_to_notebook(Path(source).read_text(), Path(target).stem)
        nbformat.write(nb, target)
    elif command == "to-txt":
        Path(target).write_text(notebook_to_text(nbformat.read(source, as_version=4)))
    else:
        sys.exit(f"unknown command {command!r}: use to-nb or to-txt")
