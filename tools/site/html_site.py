"""Execute the course's notebooks and render them to a static site, readable without running anything.

    python tools/site/html_site.py [OUT]          # default OUT: _site

Each notebook (`index.ipynb`, then every `NN_*.ipynb`) runs in nbs/ with nbclient, skipping the
cells `nbdev_test` skips (`#| slow`, `#| cuda`, `#| notest`, `#| eval: false`: shown, not run);
nbconvert's lab template renders it with its images embedded. Links between notebooks point at
the rendered pages, each page gets previous / contents / next links, and OUT/index.html lists the
chapters. The executed notebooks are kept in OUT/notebooks/.

Offline: the pages load nothing from the network. MathJax is Debian's `libjs-mathjax` (MathJax 2.7,
the version nbconvert's templates configure; `make html` installs it as root), copied into OUT/mathjax/
without the parts these pages never load. After the build, headless Chromium (Debian's, driven by
Playwright as in `make e2e`) opens every page with a formula and fails the build unless MathJax typeset
them all: no `$...$` left in the text, no MathJax error, no missing file, no request to the network.
`_screenshots/formula.png` shows the first displayed formula.
"""
import html
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbconvert import HTMLExporter

sys.path.insert(0, str(Path(__file__).resolve().parent))
from nbcells import ROOT, chapter_notebooks, html_links, skip_flags, skipped_tagged, title_and_subtitle  # noqa: E402

MATHJAX_SOURCE = Path(os.environ.get("MATHJAX_DIR", "/usr/share/javascript/mathjax"))
MATHJAX_URL = "mathjax/MathJax.js?config=TeX-AMS_CHTML-full,Safe"
# Parts of Debian's MathJax that pages rendered with the CommonHTML output never load (about 40 of its 54 MB).
MATHJAX_UNUSED = {"unpacked", "test", "jax/output/SVG", "jax/output/HTML-CSS", "fonts/HTML-CSS/TeX/otf",
                  "fonts/HTML-CSS/TeX/svg"}
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
SCREENSHOTS = ROOT / "_screenshots"
MATHJAX_WAIT_MS = 30_000
CODE_SPAN = re.compile(r"```.*?```|`[^`]*`", re.DOTALL)
RAW_TEX = re.compile(r"\$[^$\n]+\$")
# After MathJax's queue has run: the typeset formulas, the errors, and the prose as a reader sees it.
TYPESET_JS = r"""async () => {
  await new Promise(done => MathJax.Hub.Queue(done));
  const prose = [...document.querySelectorAll('.jp-RenderedMarkdown')].map(node => {
    const copy = node.cloneNode(true);
    copy.querySelectorAll('code, pre, script').forEach(code => code.remove());
    return copy.textContent;
  }).join('\n');
  return {formulas: document.querySelectorAll('.MathJax_CHTML').length,
          errors: [...document.querySelectorAll('.mjx-merror, .MathJax_Error')].map(node => node.textContent),
          prose};
}"""
LOCAL_LINK = re.compile(r'href="(?![a-z][a-z0-9+.-]*:)([^"#?]*)(?:#([^"]*))?"')
TIMEOUT = int(os.environ.get("HTML_CELL_TIMEOUT", 600))
# The lab template without require.js and mermaid (loaded from CDNs, used by no page of the course).
TEMPLATE = """{%- extends 'lab/index.html.j2' -%}
{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
"""
STYLE = """<style>
.course-nav { max-width: 1100px; margin: 0.5em auto; padding: 0.4em 1em; font: 15px sans-serif;
              display: flex; justify-content: space-between; border-bottom: 1px solid #ddd; }
.course-nav a { color: #1a5fb4; text-decoration: none; }
</style>"""


def page_name(path: Path) -> str:
    "The HTML file a notebook renders to (the front page would clash with the chapter list)."
    return "start.html" if path.stem == "index" else f"{path.stem}.html"


def execute(path: Path) -> nbformat.NotebookNode:
    "The notebook at `path`, executed in its folder without the cells a test run skips."
    nb = nbformat.read(path, as_version=4)
    skipped_tagged(nb, skip_flags())
    NotebookClient(nb, timeout=TIMEOUT, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    return nb


def navigation(pages: list[tuple[str, str]], position: int) -> str:
    "Links to the previous page, the chapter list and the next page."
    def link(index: int, arrow: str) -> str:
        if not 0 <= index < len(pages):
            return "<span></span>"
        name, title = pages[index]
        return f'<a href="{name}">{arrow} {html.escape(title)}</a>' if arrow == "&larr;" else \
            f'<a href="{name}">{html.escape(title)} {arrow}</a>'
    return (f'<nav class="course-nav">{link(position - 1, "&larr;")}<a href="index.html">Contents</a>'
            f'{link(position + 1, "&rarr;")}</nav>')


def render(nb: nbformat.NotebookNode, exporter: HTMLExporter, nav: str) -> str:
    "The page of an executed notebook, with chapter links pointing at pages and navigation added."
    body, _ = exporter.from_notebook_node(nb)
    body = html_links(body).replace("href=\"index.html\"", "href=\"start.html\"")
    body = body.replace("</head>", f"{STYLE}\n</head>", 1)
    start = body.index(">", body.index("<body")) + 1
    end = body.rindex("</body>")
    return body[:start] + nav + body[start:end] + nav + body[end:]


def copy_mathjax(out: Path) -> None:
    "Copy the parts of Debian's MathJax that the pages load into `out`/mathjax (fonts are links there: followed)."
    if not (MATHJAX_SOURCE / "MathJax.js").is_file():
        raise SystemExit(f"html: MathJax is missing from {MATHJAX_SOURCE}: install Debian's libjs-mathjax "
                         f"(sudo apt-get install libjs-mathjax; make html does it as root), or set MATHJAX_DIR")

    def unused(folder: str, names: list[str]) -> list[str]:
        relative = Path(folder).relative_to(MATHJAX_SOURCE)
        return [name for name in names if (relative / name).as_posix() in MATHJAX_UNUSED]
    shutil.copytree(MATHJAX_SOURCE, out / "mathjax", ignore=unused)


def has_formula(nb: nbformat.NotebookNode) -> bool:
    "Whether a markdown cell of `nb` holds TeX between dollar signs (outside code)."
    return any(cell.cell_type == "markdown" and RAW_TEX.search(CODE_SPAN.sub("", cell.source)) for cell in nb.cells)


def formula_problems(site: Path, names: list[str], screenshot: Path | None = None) -> list[str]:
    "Open the pages `names` of `site` in headless Chromium; what keeps their formulas from rendering offline."
    from playwright.sync_api import sync_playwright
    problems = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            for name in names:
                problems += page_formula_problems(browser, site / name, screenshot)
                if screenshot and screenshot.exists():
                    screenshot = None
        finally:
            browser.close()
    return problems


def page_formula_problems(browser, path: Path, screenshot: Path | None) -> list[str]:
    "What keeps the formulas of the page at `path` from rendering offline; screenshot its first display formula."
    page = browser.new_page(viewport={"width": 1100, "height": 900})
    outside, failed = [], []
    page.on("request", lambda request: None if request.url.startswith(("file:", "data:")) else outside.append(request.url))
    page.on("requestfailed", lambda request: failed.append(request.url))
    try:
        page.goto(path.as_uri())
        page.wait_for_function("() => window.MathJax && window.MathJax.Hub", timeout=MATHJAX_WAIT_MS)
        state = page.evaluate(TYPESET_JS)
        left = RAW_TEX.findall(state["prose"])
        problems = [f"{path.name}: no formula typeset by MathJax"] if not state["formulas"] else []
        problems += [f"{path.name}: TeX left as text: {json.dumps(left[:3])}"] if left else []
        problems += [f"{path.name}: MathJax error: {error}" for error in state["errors"]]
        display = page.locator(".jp-RenderedMarkdown:has(.MJXc-display)")
        if screenshot and display.count():
            screenshot.parent.mkdir(exist_ok=True)
            display.first.screenshot(path=str(screenshot))
    except Exception as error:  # MathJax never loaded, for instance
        problems = [f"{path.name}: {type(error).__name__}: {str(error).splitlines()[0]}"]
    finally:
        page.close()
    return problems + [f"{path.name}: request to the network: {url}" for url in outside] + \
        [f"{path.name}: file not found: {url}" for url in failed]


def inline_code(text: str) -> str:
    "`text` escaped for HTML, with `backticked` spans as code."
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text))


def contents(chapters: list[tuple[str, str, str]]) -> str:
    "The chapter list page."
    items = "\n".join(f'<li><a href="{name}">{inline_code(title)}</a><br><span>{inline_code(subtitle)}</span></li>'
                      for name, title, subtitle in chapters)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>minitorch: contents</title>
<style>body {{ max-width: 820px; margin: 2em auto; font: 16px/1.5 sans-serif; color: #222; }}
li {{ margin: 0.8em 0; }} li a {{ font-weight: bold; color: #1a5fb4; }} li span {{ color: #555; }}</style>
</head><body>
<h1>minitorch</h1>
<p>The course, executed and rendered: every chapter with its outputs and plots. Start with the first
entry; run the notebooks yourself with <code>make lab</code>.</p>
<ul>
{items}
</ul></body></html>
"""


def broken_links(out: Path) -> list[str]:
    "Links between the pages of `out` whose page or anchor does not exist."
    pages = {path.name: path.read_text(encoding="utf-8") for path in out.glob("*.html")}
    broken = []
    for name, text in pages.items():
        for target, anchor in LOCAL_LINK.findall(text):
            target = target or name
            if target not in pages and not (out / target).exists():
                broken.append(f"{name}: link to missing {target}")
            elif anchor and target in pages and f'id="{anchor}"' not in pages[target]:
                broken.append(f"{name}: link to missing anchor {target}#{anchor}")
    return broken


def build(out: Path) -> int:
    "Execute and render every chapter into `out`; return an exit code."
    notebooks = chapter_notebooks(ROOT / "nbs")
    if out.exists():
        shutil.rmtree(out)
    (out / "notebooks").mkdir(parents=True)
    start, executed, failures = time.monotonic(), {}, []
    for path in notebooks:
        began = time.monotonic()
        try:
            executed[path] = execute(path)
            print(f"  ran  {path.name:28} {time.monotonic() - began:6.1f} s", flush=True)
        except Exception as error:  # nbclient's CellExecutionError names the cell and the traceback
            failures.append(path.name)
            print(f"  FAIL {path.name:28} {time.monotonic() - began:6.1f} s\n{error}", flush=True)
    if failures:
        print(f"html: {len(failures)} notebooks failed to execute: {', '.join(failures)}")
        return 1
    problems = render_site(executed, out)
    for problem in problems:
        print(f"  FAIL {problem}")
    if problems:
        return 1
    print(f"html: {len(executed)} pages in {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}/ "
          f"in {time.monotonic() - start:.0f} s, formulas typeset offline; open {out / 'index.html'}")
    return 0


def render_site(executed: dict[Path, nbformat.NotebookNode], out: Path,
                screenshot: Path | None = SCREENSHOTS / "formula.png") -> list[str]:
    "Render the notebooks `executed` into `out` with a local MathJax; return broken links and formula problems."
    (out / "notebooks").mkdir(parents=True, exist_ok=True)
    copy_mathjax(out)
    pages = [(page_name(path), title_and_subtitle(nb)[0] or path.stem) for path, nb in executed.items()]
    with tempfile.TemporaryDirectory() as templates:
        Path(templates, "course").mkdir()
        Path(templates, "course", "conf.json").write_text('{"base_template": "lab", "mimetypes": {"text/html": true}}')
        Path(templates, "course", "index.html.j2").write_text(TEMPLATE)
        exporter = HTMLExporter(template_name="course", extra_template_basedirs=[templates], embed_images=True,
                                mathjax_url=MATHJAX_URL)
        for position, (path, nb) in enumerate(executed.items()):
            (out / pages[position][0]).write_text(render(nb, exporter, navigation(pages, position)), encoding="utf-8")
            nbformat.write(nb, out / "notebooks" / path.name)
    chapters = [(page_name(path), *title_and_subtitle(nb)) for path, nb in executed.items()]
    (out / "index.html").write_text(contents(chapters), encoding="utf-8")
    with_formulas = [pages[position][0] for position, nb in enumerate(executed.values()) if has_formula(nb)]
    return [f"broken link: {problem}" for problem in broken_links(out)] + \
        formula_problems(out, with_formulas, screenshot)


if __name__ == "__main__":
    sys.exit(build(Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else ROOT / "_site"))
