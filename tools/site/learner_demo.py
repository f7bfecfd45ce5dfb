"""A learner's first task in JupyterLab, in a fresh exercise edition: fill in the stub, run it, run the check.

    python tools/site/learner_demo.py [NOTEBOOK]     # default: the notebook of the edition's first task

The tasks of the notebooks before NOTEBOOK are done first (their solutions put back and exported, as
`make solution TASK=x.y APPLY=1` does), so that NOTEBOOK stops at its own first task. Headless Chromium opens the notebook in JupyterLab (as `make e2e` does) and clicks Run > Run All Cells: the run
must stop at the first task's stub. Then, as a learner would, the script types the solution into the exported
cell with the stub (through the editor's model, as typing does; the notebook is never saved), runs that cell
with Shift+Enter, selects the check cell that failed and runs it with Shift+Enter. The check must now pass, in
the same kernel (no restart) and with nothing exported by hand: the live notebooks (tools/course/live.py)
carried the typed code into the package. Screenshots: `_screenshots/learner-1-stub.png` (the failing check)
and `_screenshots/learner-2-check-passes.png` (the edited cell and the passing check).
"""
import json
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from e2e import (CHROMIUM, CHROMIUM_ARGS, SCREENSHOTS, STATE_JS, WIDTH, free_port, run_all_cells,  # noqa: E402
                 start_lab, stop_lab, wait_until_done)
from nbcells import ROOT  # noqa: E402

KERNEL_ID_JS = "() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.id"


def write_edition(destination: Path) -> list[dict]:
    "Write a fresh exercise edition to `destination`; its solution regions."
    subprocess.run([sys.executable, str(ROOT / "tools" / "course" / "exercises.py"), str(destination)], check=True,
                   stdout=subprocess.DEVNULL)
    return json.loads((destination / "solutions" / "solutions.json").read_text())


def finish_earlier_notebooks(edition: Path, name: str, regions: list[dict]) -> None:
    "Put back the solutions of every notebook before `name` and export the package, as a learner who did them."
    sys.path.insert(0, str(edition / "tools" / "course"))
    import solution
    solution.ROOT = edition
    earlier = [region for region in regions if Path(region["notebook"]).name < name]
    if not all(solution.apply(region) for region in earlier):
        raise SystemExit("learner demo: could not put back the earlier solutions")
    subprocess.run([str(Path(sys.executable).parent / "nbdev_export")], cwd=edition, check=True)


def solved_source(source: str, regions: list[dict]) -> str:
    "`source` with each of the regions' stubs replaced by its solution."
    for region in regions:
        stub, code = "\n".join(region["stub"]), "\n".join(region["code"])
        if stub not in source:
            raise SystemExit(f"learner demo: the stub of `{region['function']}` is not in its cell")
        source = source.replace(stub, code, 1)
    return source


def show_cell(page, index: int) -> None:
    "Make cell `index` the active one, in command mode, scrolled to the middle of the view."
    page.evaluate(f"""() => {{ const notebook = window.jupyterapp.shell.currentWidget.content;
        notebook.mode = 'command'; notebook.activeCellIndex = {index};
        notebook.widgets[{index}].node.scrollIntoView({{block: 'center'}}); }}""")
    page.wait_for_timeout(300)


def run_with_shift_enter(page, index: int, timeout: float = 300) -> dict:
    "Select cell `index`, press Shift+Enter as a learner does, and wait until it has run and the kernel is idle."
    before = cell_state(page.evaluate(STATE_JS), index)["count"]
    show_cell(page, index)
    page.keyboard.press("Shift+Enter")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        page.wait_for_timeout(500)
        state = page.evaluate(STATE_JS)
        if state["status"] == "idle" and state["queued"] == 0 and cell_state(state, index)["count"] not in (None, before):
            return state
    raise TimeoutError(f"cell {index + 1} did not finish within {timeout:.0f} s")


def cell_state(state: dict, index: int) -> dict:
    "The state of code cell `index` in a notebook state."
    return next(cell for cell in state["cells"] if cell["index"] == index)


def demo(page, edition: Path, name: str, regions: list[dict]) -> list[str]:
    "Run the notebook, fill in its first stubbed cell, run it and the failing check; return the problems."
    saved = (edition / "nbs" / name).read_text()
    run_all_cells(page)
    state = wait_until_done(page, 600)
    failing = [cell for cell in state["cells"] if cell["errors"]]
    if not failing or "is not done yet" not in failing[0]["errors"][0]:
        return [f"Run All did not stop at a stub: {failing[:1]}"]
    check = failing[0]["index"]
    show_cell(page, check)
    page.screenshot(path=str(SCREENSHOTS / "learner-1-stub.png"))
    kernel = page.evaluate(KERNEL_ID_JS)
    ids = page.evaluate("""() => { const cells = window.jupyterapp.shell.currentWidget.content.model.cells;
        return Array.from({length: cells.length}, (_, i) => cells.get(i).id); }""")
    stubbed = next(index for index, cell_id in enumerate(ids[:check]) if cell_id in {r["cell"] for r in regions})
    cell_regions = [region for region in regions if region["cell"] == ids[stubbed]]
    source = page.evaluate(f"() => window.jupyterapp.shell.currentWidget.content.model.cells.get({stubbed})"
                           ".sharedModel.getSource()")
    page.evaluate(f"""() => window.jupyterapp.shell.currentWidget.content.model.cells.get({stubbed})
        .sharedModel.setSource({json.dumps(solved_source(source, cell_regions))})""")
    problems = []
    state = run_with_shift_enter(page, stubbed)
    if cell_state(state, stubbed)["errors"]:
        problems.append(f"the filled-in cell fails: {cell_state(state, stubbed)['errors']}")
    state = run_with_shift_enter(page, check)
    show_cell(page, check)
    page.evaluate(f"""() => window.jupyterapp.shell.currentWidget.content.widgets[{check}].node
        .scrollIntoView({{block: 'end'}})""")  # the check at the bottom, the end of the filled-in cell above it
    page.wait_for_timeout(300)
    page.screenshot(path=str(SCREENSHOTS / "learner-2-check-passes.png"))
    if cell_state(state, check)["errors"]:
        problems.append(f"the check still fails: {cell_state(state, check)['errors']}")
    if page.evaluate(KERNEL_ID_JS) != kernel:
        problems.append("the kernel was restarted")
    if (edition / "nbs" / name).read_text() != saved:
        problems.append("the notebook was saved")
    functions = ", ".join(f"`{region['function']}`" for region in cell_regions)
    print(f"learner demo: {name}: Run All stopped at check cell {check + 1}; filled in {functions} in cell "
          f"{stubbed + 1}, ran it and the check with Shift+Enter: {'PASSED' if not problems else 'FAILED'}")
    return problems


def main(arguments: list[str]) -> int:
    "Run the demo; return an exit code."
    from playwright.sync_api import sync_playwright
    SCREENSHOTS.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="minitorch-learner-") as tmp:
        workdir = Path(tmp)
        edition = workdir / "edition"
        regions = write_edition(edition)
        name = arguments[0] if arguments else Path(regions[0]["notebook"]).name
        finish_earlier_notebooks(edition, name, regions)
        regions = [region for region in regions if Path(region["notebook"]).name == name]
        port, token = free_port(), secrets.token_hex(24)
        lab = start_lab(workdir, edition / "nbs", port, token, course=edition)
        try:
            with sync_playwright() as playwright:
                context = playwright.chromium.launch_persistent_context(
                    str(workdir / "chromium-profile"), executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
                page = context.new_page()
                page.set_viewport_size({"width": WIDTH, "height": 900})
                page.goto(f"http://127.0.0.1:{port}/lab/tree/{name}?reset&token={token}")
                page.wait_for_function("""() => { const panel = window.jupyterapp && window.jupyterapp.shell.currentWidget;
                    const session = panel && panel.sessionContext && panel.sessionContext.session;
                    return session && session.kernel && session.kernel.status === 'idle'; }""", timeout=120_000)
                page.evaluate("() => window.jupyterapp.shell.collapseLeft()")
                started = time.monotonic()
                problems = demo(page, edition, name, regions)
                context.close()
        finally:
            stop_lab(lab)
    for problem in problems:
        print(f"PROBLEM: {problem}")
    print(f"learner demo: {len(problems)} problems in {time.monotonic() - started:.0f} s; screenshots in "
          f"{SCREENSHOTS.relative_to(ROOT)}/learner-*.png")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
