"""The pure helpers behind `make e2e` and `make html` (tools/site/nbcells.py, tools/site/html_site.py)."""
import importlib.util
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
SITE_TOOLS = ROOT / "tools" / "site"


def load(name: str):
    "Import the script `tools/site/<name>.py` as a module."
    sys.path.insert(0, str(SITE_TOOLS))
    try:
        spec = importlib.util.spec_from_file_location(f"ci_{name}", SITE_TOOLS / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(SITE_TOOLS))


nbcells = load("nbcells")
FLAGS = {"notest", "slow", "cuda"}


def notebook(*sources: str) -> nbformat.NotebookNode:
    "A notebook with a title cell and one code cell per source."
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Title\n> The subtitle.")]
    nb.cells += [nbformat.v4.new_code_cell(source) for source in sources]
    return nb


@pytest.mark.parametrize("source, skipped", [
    ("x = 1", False),
    ("#| slow\ntrain(epochs=500)", True),
    ("#| cuda\nrun_on_gpu()", True),
    ("#|notest\nx = 1", True),
    ("#| eval: false\nx = 1", True),
    ("#| export\ndef f(): pass", False),
    ("#| task 0.1\nassert f() == 1", False),
    ("x = 1\n#| slow", False),                      # a directive counts only before the code
    ("from nbdev import nbdev_export\nnbdev_export()", True),
])
def test_cells_are_skipped_like_nbdev_test(source, skipped):
    assert nbcells.is_skipped(nbformat.v4.new_code_cell(source), FLAGS) == skipped


def test_markdown_is_never_skipped():
    assert not nbcells.is_skipped(nbformat.v4.new_markdown_cell("#| slow"), FLAGS)


def test_skipped_cells_become_raw_cells_with_the_same_source():
    nb = notebook("a = 1", "#| slow\nb = 2", "c = 3")
    assert nbcells.skipped_as_raw(nb, FLAGS) == 1
    assert [cell.cell_type for cell in nb.cells] == ["markdown", "code", "raw", "code"]
    assert nb.cells[2].source == "#| slow\nb = 2"
    nbformat.validate(nb)


def test_skipped_cells_are_tagged_once():
    nb = notebook("a = 1", "#| cuda\nb = 2")
    assert nbcells.skipped_tagged(nb, FLAGS) == 1
    nbcells.skipped_tagged(nb, FLAGS)
    assert nb.cells[2].metadata["tags"] == [nbcells.SKIP_TAG] and "tags" not in nb.cells[1].metadata


def test_skip_flags_come_from_settings():
    assert {"slow", "cuda"} <= nbcells.skip_flags()


def test_chapters_in_reading_order_without_scratch_notebooks(tmp_path):
    for name in ["10_scalar.ipynb", "index.ipynb", "_scratch.ipynb", "00_operators.ipynb", "notes.ipynb"]:
        (tmp_path / name).write_text("{}")
    assert [path.name for path in nbcells.chapter_notebooks(tmp_path)] == \
        ["index.ipynb", "00_operators.ipynb", "10_scalar.ipynb"]


def test_title_and_subtitle_from_the_first_markdown_cell():
    assert nbcells.title_and_subtitle(notebook("x = 1")) == ("Title", "The subtitle.")
    assert nbcells.title_and_subtitle(nbformat.v4.new_notebook()) == ("", "")


@pytest.mark.parametrize("text, expected", [
    ('<a href="02_datasets.ipynb">', '<a href="02_datasets.html">'),
    ('<a href="./02_datasets.ipynb#Spiral">', '<a href="./02_datasets.html#Spiral">'),
    ("see [the datasets](02_datasets.ipynb)", "see [the datasets](02_datasets.html)"),
    ('<a href="https://example.org/nb/02_datasets.ipynb">', '<a href="https://example.org/nb/02_datasets.ipynb">'),
    ("02_datasets.ipynb in plain text", "02_datasets.ipynb in plain text"),
])
def test_links_between_notebooks_point_at_pages(text, expected):
    assert nbcells.html_links(text) == expected


def test_broken_links_are_found(tmp_path):
    html_site = load("html_site")
    (tmp_path / "a.html").write_text('<h1 id="Top">A</h1><a href="b.html#Top">b</a><a href="#Top">self</a>'
                                     '<a href="https://example.org/x.html">out</a>')
    (tmp_path / "b.html").write_text('<a href="a.html#Nowhere">a</a><a href="c.html">c</a>')
    assert sorted(html_site.broken_links(tmp_path)) == \
        ["a.html: link to missing anchor b.html#Top", "b.html: link to missing anchor a.html#Nowhere",
         "b.html: link to missing c.html"]


def browser_missing() -> str:
    "Why the headless-browser checks cannot run here ('' when they can)."
    html_site = load("html_site")
    if importlib.util.find_spec("playwright") is None:
        return "Playwright is not installed (make e2e installs it)"
    if not Path(html_site.CHROMIUM).exists():
        return f"no Chromium at {html_site.CHROMIUM}"
    if not (html_site.MATHJAX_SOURCE / "MathJax.js").exists():
        return f"no MathJax at {html_site.MATHJAX_SOURCE} (Debian's libjs-mathjax)"
    return ""


@pytest.mark.skipif(bool(browser_missing()), reason=browser_missing() or "ready")
def test_formulas_render_offline_with_the_local_mathjax(tmp_path):
    html_site = load("html_site")
    source = Path(__file__).resolve().parent.parent / "nbs" / "10_derivatives.ipynb"
    nb = nbformat.read(source, as_version=4)
    assert html_site.has_formula(nb)
    shot = tmp_path / "formula.png"
    assert html_site.render_site({source: nb}, tmp_path / "site", shot) == []
    page = (tmp_path / "site" / "10_derivatives.html").read_text()
    assert 'src="mathjax/MathJax.js?config=TeX-AMS_CHTML-full,Safe"' in page and "cdnjs" not in page
    assert shot.stat().st_size > 1000


@pytest.mark.skipif(bool(browser_missing()), reason=browser_missing() or "ready")
def test_a_page_without_mathjax_fails_the_formula_check(tmp_path, monkeypatch):
    html_site = load("html_site")
    monkeypatch.setattr(html_site, "MATHJAX_WAIT_MS", 3000)
    site = tmp_path / "site"
    site.mkdir()
    (site / "raw.html").write_text('<html><head><script src="mathjax/MathJax.js"></script></head><body>'
                                   '<div class="jp-RenderedMarkdown"><p>the derivative $f\'(x)$</p></div></body></html>')
    problems = html_site.formula_problems(site, ["raw.html"])
    assert any("file not found" in problem and "MathJax.js" in problem for problem in problems)
    assert any("raw.html: TimeoutError" in problem for problem in problems)


e2e = load("e2e")


def test_e2e_only_picks_notebooks_by_prefix(tmp_path):
    notebooks = [tmp_path / name for name in ["index.ipynb", "01_module.ipynb", "43_checkpoint.ipynb", "45_mnist_train.ipynb"]]
    assert e2e.chosen(notebooks, "") == notebooks
    assert [path.name for path in e2e.chosen(notebooks, "01_module, 43")] == ["01_module.ipynb", "43_checkpoint.ipynb"]
    with pytest.raises(SystemExit, match="matches no notebook"):
        e2e.chosen(notebooks, "99_nothing")


def test_e2e_runs_flagged_cells_and_leaves_only_unrunnable_ones_raw(tmp_path, monkeypatch):
    nbs = tmp_path / "nbs"
    nbs.mkdir()
    nb = notebook("a = 1", "#| slow\nb = 2", "#| cuda\nc = 3", "#| eval: false\nd = 4", "nbdev_export()")
    nbformat.write(nb, nbs / "05_demo.ipynb")
    monkeypatch.setattr(e2e, "ROOT", tmp_path)
    monkeypatch.delenv("E2E_SKIP_FLAGS", raising=False)
    assert e2e.flagged_cells(nbs / "05_demo.ipynb") == 2
    (tmp_path / "work").mkdir()
    copy = e2e.course_copy(tmp_path / "work", [nbs / "05_demo.ipynb"])
    kinds = [cell.cell_type for cell in nbformat.read(copy / "05_demo.ipynb", as_version=4).cells]
    assert kinds == ["markdown", "code", "code", "code", "raw", "raw"]
    monkeypatch.setenv("E2E_SKIP_FLAGS", "slow,cuda")
    (tmp_path / "again").mkdir()
    copy = e2e.course_copy(tmp_path / "again", [nbs / "05_demo.ipynb"])
    kinds = [cell.cell_type for cell in nbformat.read(copy / "05_demo.ipynb", as_version=4).cells]
    assert kinds == ["markdown", "code", "raw", "raw", "raw", "raw"]
    monkeypatch.setenv("E2E_KEEP_FLAGGED", "05,07")
    (tmp_path / "kept").mkdir()
    copy = e2e.course_copy(tmp_path / "kept", [nbs / "05_demo.ipynb"])
    kinds = [cell.cell_type for cell in nbformat.read(copy / "05_demo.ipynb", as_version=4).cells]
    assert kinds == ["markdown", "code", "code", "code", "raw", "raw"]


def test_the_course_jupyterlab_settings_are_valid_and_quiet():
    import json
    folder = ROOT / "jupyter"
    overrides = json.loads((folder / "overrides.json").read_text())
    assert overrides["@jupyterlab/apputils-extension:notification"] == {"fetchNews": "false", "checkForUpdates": False}
    assert overrides["@jupyterlab/notebook-extension:tracker"]["codeCellConfig"]["lineNumbers"] is True
    page_config = json.loads((folder / "page_config.json").read_text())
    assert page_config["disabledExtensions"]["@jupyterlab/apputils-extension:announcements"] is True


@pytest.mark.skipif(not e2e.COURSE_SETTINGS.exists(), reason="the course settings are not installed (make venv)")
def test_make_lab_starts_jupyterlab_with_the_course_settings(tmp_path):
    import secrets
    import urllib.request
    nbs = tmp_path / "nbs"
    nbs.mkdir()
    port, token = e2e.free_port(), secrets.token_hex(8)
    lab = e2e.start_lab(tmp_path, nbs, port, token)
    try:
        base = f"http://127.0.0.1:{port}"
        assert e2e.course_settings_problems(base, token) == []
        with urllib.request.urlopen(f"{base}/lab?token={token}", timeout=10) as response:
            page = response.read().decode()
        assert '"@jupyterlab/apputils-extension:announcements"' in page.split('"disabledExtensions"', 1)[1][:400]
    finally:
        e2e.stop_lab(lab)


def test_the_test_depth_caps_hypothesis_examples():
    import conftest
    assert [conftest.examples(30, False, "quick"), conftest.examples(30, False, "full")] == [10, 30]
    assert [conftest.examples(30, True, "quick"), conftest.examples(30, True, "full")] == [4, 8]
    assert conftest.examples(3, True, "full") == 3 and conftest.examples(5, False, "quick") == 5
