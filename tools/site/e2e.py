"""Run every chapter notebook in JupyterLab in a real browser, as a learner does, and screenshot it.

    python tools/site/e2e.py [NOTEBOOK ...]        # default: nbs/index.ipynb and every nbs/NN_*.ipynb
    E2E_ONLY=01_module,43 python tools/site/e2e.py  # only notebooks whose names start with one of these
    E2E_SKIP_FLAGS="slow cuda" python tools/site/e2e.py  # leave cells with these flags unrun (default: none)
    E2E_SKIP_FLAGS=slow E2E_KEEP_FLAGGED=54 python tools/site/e2e.py  # ... but in notebooks 54* run them all

Notebooks run as a learner runs them: every cell, the flagged ones (`#| slow`, `#| cuda`, `#| notest`)
included. A flagged cell that needs what the machine lacks (a GPU, the MNIST files) checks for it itself
and prints why it skips; a `#| slow` cell prints first how long it takes. Only cells that are not meant
to run at all (`#| eval: false`, `nbdev_export()` calls) become raw cells, shown but never run.

JupyterLab runs headless on a free 127.0.0.1 port with a random token, with the course's settings
(`jupyter/`, installed into .venv by `make venv`), serving a temporary copy of the course: its `nbs/`
is copied (with the unrun cells made raw); every other top-level entry is a symlink to this repository,
so relative paths and `import minitorch` behave as in `nbs/`. The repository's notebooks are never
opened, so they cannot be modified.

Chromium (Debian's, /usr/bin/chromium) driven by Playwright opens each notebook, clicks
Run > Run All Cells, waits until the kernel is idle and no cell is queued, and fails on any error
output. A screenshot of each executed notebook goes to `_screenshots/`, and `lab-start.png` shows
the first page some seconds after JupyterLab opened: the run fails if JupyterLab's news pop-up
("Would you like to get notified about official Jupyter news?") or any other notification shows.
"""
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))
from nbcells import ROOT, chapter_notebooks, is_skipped, skipped_as_raw  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SCREENSHOTS = ROOT / "_screenshots"
NOTEBOOK_TIMEOUT = float(os.environ.get("E2E_NOTEBOOK_TIMEOUT", 900))
FLAGS = ("slow", "cuda", "notest")
NEWS_QUESTION = "Would you like to get notified about official Jupyter news?"
WIDTH, TALLEST = 1280, 16000
RUNNING_LAB: list[subprocess.Popen] = []  # for the SIGTERM handler
# What this run needs on top of the course's settings (jupyter/overrides.json, which is not repeated here).
LAB_SETTINGS = {
    # Render every cell (JupyterLab 4 otherwise only renders cells near the viewport).
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
}
COURSE_SETTINGS = ROOT / ".venv" / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
# Toasts JupyterLab shows (the news question is one), read from the page.
TOASTS_JS = r"""() => [...document.querySelectorAll('.Toastify__toast, .jp-Notification-Toast')]
                       .map(toast => toast.textContent.trim())"""

# State of the current notebook, read from JupyterLab's own models and from the rendered DOM.
STATE_JS = r"""() => {
  const panel = window.jupyterapp.shell.currentWidget;
  const kernel = panel.sessionContext.session && panel.sessionContext.session.kernel;
  const cells = [];
  const model = panel.content.model;
  for (let i = 0; i < model.cells.length; i++) {
    const cell = model.cells.get(i);
    if (cell.type !== 'code') continue;
    const errors = [];
    for (let j = 0; j < cell.outputs.length; j++) {
      const out = cell.outputs.get(j).toJSON();
      if (out.output_type === 'error') errors.push(`${out.ename}: ${out.evalue}`);
    }
    cells.push({index: i, count: cell.executionCount, errors,
                first_line: cell.sharedModel.getSource().split('\n')[0]});
  }
  const prompts = [...panel.node.querySelectorAll('.jp-CodeCell .jp-InputPrompt')].map(p => p.textContent);
  const tracebacks = [...panel.node.querySelectorAll(
      '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')]
      .map(o => o.textContent).filter(t => t.includes('Traceback'));
  return {status: kernel ? kernel.status : 'none', queued: prompts.filter(p => p.includes('*')).length,
          cells, tracebacks};
}"""


class BrowserGone(Exception):
    "The browser or its Playwright driver stopped (after Ctrl-C, for instance)."


def free_port() -> int:
    "A TCP port on 127.0.0.1 that nothing listens on now."
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def skipped_flags() -> set[str]:
    "The flags whose cells this run leaves unrun: $E2E_SKIP_FLAGS (default: none, as a learner runs)."
    return set(os.environ.get("E2E_SKIP_FLAGS", "").replace(",", " ").split())


def skipped_flags_in(path: Path) -> set[str]:
    "The flags left unrun in the notebook at `path`: none where $E2E_KEEP_FLAGGED names it (prefixes), else those above."
    kept = os.environ.get("E2E_KEEP_FLAGGED", "").replace(",", " ").split()
    return set() if any(path.name.startswith(prefix) for prefix in kept) else skipped_flags()


def chosen(notebooks: list[Path], only: str) -> list[Path]:
    "The `notebooks` whose names start with one of the comma- or space-separated prefixes in `only`."
    prefixes = only.replace(",", " ").split()
    picked = [path for path in notebooks if any(path.name.startswith(prefix) for prefix in prefixes)]
    if prefixes and not picked:
        raise SystemExit(f"e2e: E2E_ONLY={only!r} matches no notebook among {', '.join(p.stem for p in notebooks)}")
    return picked if prefixes else notebooks


def flagged_cells(path: Path) -> int:
    "How many code cells of the notebook at `path` carry a flag (`#| slow`, `#| cuda`, `#| notest`)."
    nb = nbformat.read(path, as_version=4)
    return sum(1 for cell in nb.cells if is_skipped(cell, set(FLAGS)) and not is_skipped(cell, set()))


def course_copy(workdir: Path, notebooks: list[Path]) -> Path:
    "A copy of the course under `workdir` whose notebooks leave unrun only what is never meant to run; its nbs/."
    course = workdir / "course"
    course.mkdir()
    for entry in ROOT.iterdir():
        if entry.name not in {"nbs", ".git"}:
            (course / entry.name).symlink_to(entry)
    nbs = course / "nbs"
    shutil.copytree(ROOT / "nbs", nbs, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    for path in notebooks:
        nb = nbformat.read(nbs / path.name, as_version=4)
        if skipped_as_raw(nb, skipped_flags_in(path)):
            nbformat.write(nb, nbs / path.name)
    return nbs


def lab_settings(workdir: Path) -> Path:
    "A fresh JupyterLab user-settings folder with the settings the run needs."
    settings = workdir / "lab-settings"
    for name, values in LAB_SETTINGS.items():
        path = settings / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    return settings


def start_lab(workdir: Path, nbs: Path, port: int, token: str, course: Path = ROOT) -> subprocess.Popen:
    "Start JupyterLab on `port`, serving `nbs` with `course` first on the import path, and wait until it answers."
    command = [str(ROOT / ".venv" / "bin" / "jupyter"), "lab", "--no-browser", "--ip=127.0.0.1",
               f"--port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
               f"--ServerApp.root_dir={nbs}", f"--LabApp.user_settings_dir={lab_settings(workdir)}",
               f"--LabApp.workspaces_dir={workdir / 'workspaces'}", "--expose-app-in-browser"]
    if os.geteuid() == 0:
        command.append("--allow-root")
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1", "JUPYTER_CONFIG_DIR": str(workdir / "jupyter-config"),
           "PYTHONPATH": str(course)}
    log = open(workdir / "jupyter.log", "w")
    lab = subprocess.Popen(command, cwd=nbs, env=env, stdout=log, stderr=subprocess.STDOUT,
                           stdin=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if lab.poll() is not None:
            raise RuntimeError(f"JupyterLab exited with code {lab.returncode}:\n{lab_log(workdir)}")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token={token}", timeout=2)
            return lab
        except OSError:
            time.sleep(0.5)
    stop_lab(lab)
    raise RuntimeError(f"JupyterLab did not answer within 90 s:\n{lab_log(workdir)}")


def lab_log(workdir: Path, lines: int = 40) -> str:
    "The last lines JupyterLab printed."
    path = workdir / "jupyter.log"
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""


def stop_lab(lab: subprocess.Popen) -> None:
    "Stop JupyterLab and its kernels (its own process group)."
    if lab.poll() is None:
        os.killpg(lab.pid, signal.SIGTERM)
        try:
            lab.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(lab.pid, signal.SIGKILL)
            lab.wait()
    try:
        os.killpg(lab.pid, signal.SIGKILL)  # kernels left behind, if any
    except ProcessLookupError:
        pass


def course_settings_problems(base: str, token: str) -> list[str]:
    "Which of the course's settings (overrides.json) the running JupyterLab does not use as its defaults."
    if not COURSE_SETTINGS.exists():
        return [f"the course's JupyterLab settings are not installed at {COURSE_SETTINGS}: run make venv"]
    problems = []
    for plugin, values in json.loads(COURSE_SETTINGS.read_text()).items():
        with urllib.request.urlopen(f"{base}/lab/api/settings/{plugin}?token={token}", timeout=10) as response:
            schema = json.load(response)["schema"]["properties"]
        problems += [f"JupyterLab's default for {plugin} {key} is {schema[key].get('default')!r}, not the course's "
                     f"{value!r}" for key, value in values.items() if schema[key].get("default") != value]
    return problems


def start_page_problems(page) -> list[str]:
    "Screenshot the first page a few seconds after it opened; any notification showing then is a problem."
    page.wait_for_timeout(5000)  # JupyterLab asks its news question shortly after the page is restored
    page.screenshot(path=str(SCREENSHOTS / "lab-start.png"))
    toasts = page.evaluate(TOASTS_JS)
    problems = [f"JupyterLab shows a notification on opening: {text[:200]!r}" for text in toasts]
    if NEWS_QUESTION in page.evaluate("() => document.body.innerText") and not toasts:
        problems.append(f"JupyterLab asks {NEWS_QUESTION!r}")
    return problems


def wait_until_done(page, timeout: float) -> dict:
    "Poll the notebook until the kernel is idle, nothing is queued and the run ended; return its state."
    deadline, settled = time.monotonic() + timeout, 0
    while time.monotonic() < deadline:
        state = page.evaluate(STATE_JS)
        if state["status"] in {"dead", "unknown"}:
            raise RuntimeError(f"the kernel is {state['status']}")
        ran = all(cell["count"] is not None for cell in state["cells"])
        failed = any(cell["errors"] for cell in state["cells"])
        idle = state["status"] == "idle" and state["queued"] == 0 and (ran or failed)
        settled = settled + 1 if idle else 0
        if settled >= 3:
            return state
        time.sleep(0.5)
    raise TimeoutError(f"cells still running after {timeout:.0f} s")


def run_all_cells(page) -> None:
    "Click Run > Run All Cells in JupyterLab's menu bar."
    page.locator("#jp-MainMenu .lm-MenuBar-item", has_text="Run").first.click()
    page.locator(".lm-Menu-item:has(.lm-Menu-itemLabel:text-is('Run All Cells'))").click()


def screenshot(page, stem: str) -> list[Path]:
    "Screenshot the first plot, then the whole notebook in parts of at most TALLEST pixels; return the files."
    files = []
    plot = page.locator(".jp-OutputArea-output img, .jp-OutputArea-output svg").first
    if plot.count():
        plot.evaluate("node => node.scrollIntoView({block: 'center'})")
        page.wait_for_timeout(300)
        page.screenshot(path=str(SCREENSHOTS / f"{stem}-plot.png"))
        files.append(SCREENSHOTS / f"{stem}-plot.png")
    scroller = ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-WindowedPanel-outer"
    page.evaluate(f"""() => {{ const s = document.querySelector('{scroller}');
                              s.scrollTop = s.scrollHeight; }}""")
    page.wait_for_timeout(300)
    content = page.evaluate(f"() => document.querySelector('{scroller}').scrollHeight")
    visible = page.evaluate(f"() => document.querySelector('{scroller}').clientHeight")
    chrome = page.viewport_size["height"] - visible
    height = min(content + chrome, TALLEST)
    page.set_viewport_size({"width": WIDTH, "height": height})
    top, part = 0, 1
    while True:
        page.evaluate(f"() => {{ document.querySelector('{scroller}').scrollTop = {top}; }}")
        page.wait_for_timeout(500)
        name = f"{stem}.png" if part == 1 else f"{stem}-{part}.png"
        page.screenshot(path=str(SCREENSHOTS / name))
        files.append(SCREENSHOTS / name)
        top += height - chrome
        if top >= content:
            return files
        part += 1


def close_without_saving(page) -> None:
    "Shut the notebook's kernel down and close it, discarding the outputs."
    page.evaluate("""async () => {
      const panel = window.jupyterapp.shell.currentWidget;
      panel.context.model.dirty = false;
      await panel.sessionContext.shutdown();
      panel.close();
    }""")


def check_notebook(context, base: str, token: str, name: str, first: bool = False) -> tuple[list[str], list[Path]]:
    "Open notebook `name`, run all its cells through the UI; return the problems and screenshots."
    page = context.new_page()
    page.set_viewport_size({"width": WIDTH, "height": 900})
    try:
        page.goto(f"{base}/lab/tree/{name}?reset&token={token}")
        page.wait_for_function(f"""() => {{ const app = window.jupyterapp;
            const panel = app && app.shell.currentWidget;
            return panel && panel.context && panel.context.path === {json.dumps(name)} && panel.content.model; }}""",
                               timeout=120_000)
        opening = start_page_problems(page) if first else []
        page.evaluate("() => window.jupyterapp.shell.collapseLeft()")
        page.wait_for_function("""() => { const s = window.jupyterapp.shell.currentWidget.sessionContext;
            return s.session && s.session.kernel && s.session.kernel.status === 'idle'; }""", timeout=120_000)
        run_all_cells(page)
        state = wait_until_done(page, NOTEBOOK_TIMEOUT)
        problems = [f"cell {cell['index']} ({cell['first_line'][:60]}): {error}"
                    for cell in state["cells"] for error in cell["errors"]]
        if not problems:
            problems = [f"traceback on stderr: {text.strip().splitlines()[-1][:300]}" for text in state["tracebacks"]]
        if not problems:
            problems = [f"cell {cell['index']} did not run" for cell in state["cells"] if cell["count"] is None]
        shots = screenshot(page, Path(name).stem)
        close_without_saving(page)
        return opening + problems, ([SCREENSHOTS / "lab-start.png"] if first else []) + shots
    except Exception as error:  # a hung kernel or a broken page: report it, save what the page shows
        if "has been closed" in str(error):
            raise BrowserGone(str(error).splitlines()[0]) from None
        try:
            page.screenshot(path=str(SCREENSHOTS / f"{Path(name).stem}-failed.png"))
        except Exception:
            pass
        return [f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"], []
    finally:
        page.close()


def git_status() -> str:
    "`git status --porcelain` of the repository."
    return subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True).stdout


def on_terminate(*_) -> None:
    "On SIGTERM stop JupyterLab at once, then unwind as after Ctrl-C (closing the browser)."
    if RUNNING_LAB:
        stop_lab(RUNNING_LAB[0])
    raise KeyboardInterrupt


def main(names: list[str]) -> int:
    "Check the notebooks `names` (default: every chapter) and print a report; return an exit code."
    from playwright.sync_api import sync_playwright
    if not Path(CHROMIUM).exists():
        print(f"e2e: {CHROMIUM} is missing: install Debian's chromium package (apt-get install chromium)")
        return 2
    notebooks = [ROOT / "nbs" / name for name in names] if names else chapter_notebooks(ROOT / "nbs")
    notebooks = chosen(notebooks, os.environ.get("E2E_ONLY", ""))
    SCREENSHOTS.mkdir(exist_ok=True)
    for old in SCREENSHOTS.glob("*.png"):
        old.unlink()
    status_before, start, results = git_status(), time.monotonic(), {}
    with tempfile.TemporaryDirectory(prefix="minitorch-e2e-") as tmp:
        workdir = Path(tmp)
        nbs = course_copy(workdir, notebooks)
        port, token = free_port(), secrets.token_hex(24)
        lab = start_lab(workdir, nbs, port, token)
        RUNNING_LAB.append(lab)
        try:
            kept = os.environ.get("E2E_KEEP_FLAGGED", "").strip()
            skipped = (f"cells flagged {' '.join(sorted(skipped_flags()))} left unrun"
                       + (f" (but in {kept})" if kept else "")) if skipped_flags() else "flagged cells run too"
            print(f"e2e: JupyterLab on 127.0.0.1:{port}, {len(notebooks)} notebooks, {skipped}")
            settings_problems = course_settings_problems(f"http://127.0.0.1:{port}", token)
            results["course settings"] = settings_problems
            for problem in settings_problems:
                print(f"  FAIL  {problem}")
            with sync_playwright() as playwright:
                context = playwright.chromium.launch_persistent_context(
                    str(workdir / "chromium-profile"), executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
                try:
                    for position, path in enumerate(notebooks):
                        began = time.monotonic()
                        problems, shots = check_notebook(context, f"http://127.0.0.1:{port}", token, path.name,
                                                         first=position == 0)
                        results[path.name] = problems
                        seconds = time.monotonic() - began
                        flagged = flagged_cells(path)
                        print(f"  {'PASS' if not problems else 'FAIL'}  {path.name:28} {seconds:6.1f} s  "
                              f"{f'{flagged} flagged cells  ' if flagged else ''}"
                              f"{', '.join(shot.name for shot in shots)}", flush=True)
                        for problem in problems:
                            print(f"        {problem}")
                finally:
                    try:
                        context.close()
                    except Exception:  # the browser is gone already
                        pass
        except (KeyboardInterrupt, BrowserGone) as error:
            print(f"e2e: interrupted ({type(error).__name__}); JupyterLab is stopped")
            return 130
        finally:
            stop_lab(lab)
        if any(results.values()):
            print("JupyterLab log (last lines):\n" + lab_log(workdir))
    results["git status"] = [] if git_status() == status_before else ["the run changed files in the repository"]
    if results["git status"]:
        print("  FAIL  the run changed files in the repository:\n" + git_status())
    failed = [name for name, problems in results.items() if problems]
    print(f"e2e: {len(notebooks)} notebooks in {time.monotonic() - start:.0f} s; screenshots in {SCREENSHOTS.relative_to(ROOT)}/")
    print(f"e2e: {len(results) - len(failed)} of {len(results)} checks passed (notebooks, course settings, git status)"
          f"{'; failed: ' + ', '.join(failed) if failed else ''}")
    return 1 if failed else 0


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, on_terminate)
    sys.exit(main(sys.argv[1:]))
