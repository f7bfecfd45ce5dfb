"""`tools/course/nbtest.py`, which `make nbtest` runs: every notebook in a fresh process, cells skipped as nbdev does."""
import subprocess
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent


def write_notebook(path: Path, *sources: str) -> Path:
    "Write a notebook with one code cell per source."
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    nbformat.write(nb, path)
    return path


def nbtest(pattern: str, *options: str) -> subprocess.CompletedProcess:
    "Run the runner from the repository root (it reads settings.ini there)."
    return subprocess.run([sys.executable, "tools/course/nbtest.py", "--path", pattern, *options],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_a_notebook_never_sees_what_an_earlier_one_patched(tmp_path):
    write_notebook(tmp_path / "a.ipynb", "import json\njson.patched_by_a = True")
    write_notebook(tmp_path / "b.ipynb", "import json\nassert not hasattr(json, 'patched_by_a'), 'a leaked into b'")
    run = nbtest(str(tmp_path / "*.ipynb"), "--workers", "1")
    assert run.returncode == 0, run.stderr
    assert "All 2 notebooks passed." in run.stdout


def test_a_failing_cell_fails_the_run_and_names_the_notebook(tmp_path):
    write_notebook(tmp_path / "good.ipynb", "x = 1")
    write_notebook(tmp_path / "bad.ipynb", "x = 1", "assert x == 2, 'the check below the cell'")
    run = nbtest(str(tmp_path / "*.ipynb"))
    assert run.returncode == 1
    assert "the check below the cell" in run.stderr and "\tbad.ipynb" in run.stderr and "good.ipynb" not in run.stderr


def test_flagged_cells_are_skipped_unless_forced(tmp_path):
    write_notebook(tmp_path / "slow.ipynb", "#| slow\nraise RuntimeError('the slow cell ran')")
    assert nbtest(str(tmp_path / "slow.ipynb")).returncode == 0
    forced = nbtest(str(tmp_path / "slow.ipynb"), "--flags", "slow")
    assert forced.returncode == 1 and "the slow cell ran" in forced.stderr


def test_a_pattern_matching_nothing_is_an_error(tmp_path):
    run = nbtest(str(tmp_path / "none*.ipynb"))
    assert run.returncode == 2 and "no notebooks match" in run.stderr
