"""The exercise-edition tooling: solution regions become stubs that name their task."""
import importlib.util
import os
import sys
from pathlib import Path

import pytest

spec = importlib.util.spec_from_file_location("exercises", Path(__file__).parent.parent / "tools" / "course" / "exercises.py")
exercises = importlib.util.module_from_spec(spec)
spec.loader.exec_module(exercises)

SOURCE = '''def mul(x, y):
    "Multiply."
    # BEGIN SOLUTION 0.1
    product = x * y
    return product
    # END SOLUTION
'''


def test_stub_replaces_the_region_and_names_the_task():
    stubbed, tasks = exercises.stub_source(SOURCE, "demo")
    assert tasks == ["0.1"] and "product" not in stubbed
    namespace = {}
    exec(stubbed, namespace)
    with pytest.raises(NotImplementedError, match=r"Task 0\.1 .*`mul`"):
        namespace["mul"](2, 3)


@pytest.mark.parametrize("broken, message", [
    ("def f():\n    # BEGIN SOLUTION 0.1\n    return 1\n", "without END"),
    ("def f():\n    return 1\n    # END SOLUTION\n", "without BEGIN"),
    ("# BEGIN SOLUTION 0.1\nx = 1\n# END SOLUTION\n", "not inside a function"),
])
def test_malformed_regions_are_reported(broken, message):
    with pytest.raises(SystemExit, match=message):
        exercises.stub_source(broken, "demo")


ROOT = Path(__file__).parent.parent
check_spec = importlib.util.spec_from_file_location("check", Path(__file__).parent.parent / "tools" / "course" / "check.py")
check = importlib.util.module_from_spec(check_spec)
check_spec.loader.exec_module(check)


def test_every_task_line_of_a_cell_counts():
    import nbformat
    cell = nbformat.v4.new_code_cell("#| task 4.8\n#| task 4.2 4.3\n#| slow\nx = 1\n#| task 9.9")
    assert check.cell_tasks(cell) == ["4.8", "4.2", "4.3"]
    assert check.skipped(cell, "4.2") and not check.skipped(nbformat.v4.new_code_cell("#| task 4.2\nx = 1"), "4.2")
    assert check.skipped(nbformat.v4.new_code_cell("#| task 4.2\nx = 1"), "4.3")


def write_notebook(path: Path, *sources: str) -> Path:
    "A notebook at `path` with one code cell per source."
    import nbformat
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Demo")] + [nbformat.v4.new_code_cell(source) for source in sources]
    nbformat.write(nb, path)
    return path


def test_a_failing_check_shows_its_cell_its_marked_line_and_where_the_error_was_raised(tmp_path):
    path = write_notebook(tmp_path / "07_demo.ipynb",
                          "def double(x):\n    raise NotImplementedError('Task 9.1 is not done yet')",
                          "#| task 9.1\nassert 1 + 1 == 2\nassert double(2) == 4\nassert True")
    passed, report = check.run_notebook(path, "9.1")
    assert not passed
    assert report.startswith("07_demo.ipynb cell 3 of 3 (id ")
    assert "check of task 9.1) failed: NotImplementedError: Task 9.1 is not done yet" in report
    assert "-->   3 | assert double(2) == 4" in report and "      2 | assert 1 + 1 == 2" in report
    assert "raised in `double`, 07_demo.ipynb cell 2 line 2" in report


def test_a_failing_assert_marks_its_line_and_a_setup_cell_says_so(tmp_path):
    path = write_notebook(tmp_path / "demo.ipynb", "#| task 9.2\nvalues = [1, 2]\nassert sum(values) == 4, values")
    passed, report = check.run_notebook(path, "9.2")
    assert not passed and "AssertionError: [1, 2]" in report and "-->   3 | assert sum(values) == 4" in report
    assert "raised in" not in report
    path = write_notebook(tmp_path / "setup.ipynb", "import no_such_module_here", "#| task 9.2\nassert True")
    passed, report = check.run_notebook(path, "9.2")
    assert not passed and "cell 2 of 3" in report and "setup cell (untagged)" in report
    assert "-->   1 | import no_such_module_here" in report


def test_a_check_ends_at_its_tasks_last_cell_and_leaves_the_environment_as_it_was(tmp_path, monkeypatch):
    monkeypatch.delenv("IN_TEST", raising=False)
    path = write_notebook(tmp_path / "demo.ipynb", "import os\nassert os.environ['IN_TEST'] == '1'\nx = 1",
                          "#| task 9.1\nassert x == 1", "#| task 9.2\nassert False", "raise RuntimeError('a later cell')")
    passed, report = check.run_notebook(path, "9.1")
    assert passed, report
    assert "IN_TEST" not in os.environ   # else a later `nbdev_export` in this process or its children exports nothing
    assert check.cells_to_run(check.load(path), "9.1") == [1, 2]
    passed, report = check.run_notebook(path, "9.2")
    assert not passed and "AssertionError" in report


def test_the_round_trip_checks_tasks_with_the_same_cells_once_and_leaves_prefixes_to_the_learner_loop(tmp_path):
    roundtrip_spec = importlib.util.spec_from_file_location(
        "roundtrip", Path(__file__).parent.parent / "tools" / "course" / "roundtrip.py")
    roundtrip = importlib.util.module_from_spec(roundtrip_spec)
    roundtrip_spec.loader.exec_module(roundtrip)
    (tmp_path / "nbs").mkdir()
    write_notebook(tmp_path / "nbs" / "01_a.ipynb", "x = 1", "#| task 9.3\nassert x", "#| task 9.1 9.2\nassert x",
                   "#| slow\n#| task 9.4\nassert x", "#| task 9.5\nassert x")
    write_notebook(tmp_path / "nbs" / "02_b.ipynb", "#| task 9.2\nassert True")
    units = roundtrip.notebook_checks(tmp_path, ["9.1", "9.2", "9.3", "9.4", "9.5"])
    # 9.1 and 9.2 leave out 9.3's cell, in the same way; 9.3 and 02_b's 9.2 run prefixes (as does 9.4, whose
    # only cell is never tested); 9.5 leaves out 9.1-9.3's cells, but not 9.4's (a slow cell is never run)
    assert units == {("9.1", "01_a.ipynb"): ["9.1", "9.2"], ("9.5", "01_a.ipynb"): ["9.5"]}


def test_long_cells_show_only_the_lines_around_the_failure():
    source = "\n".join(f"x{number} = {number}" for number in range(1, 41))
    shown = check.marked_source(source, 20)
    assert "-->  20 | x20 = 20" in shown and "x17 = 17" in shown and "x23 = 23" in shown
    assert "x10 = 10" not in shown and "x30 = 30" not in shown and shown.startswith("    ...")


def test_solutions_are_collected_with_the_stub_they_replace():
    solutions = []
    stubbed, _ = exercises.stub_source(SOURCE, "demo", solutions)
    assert solutions == [{"task": "0.1", "function": "mul", "code": ["    product = x * y", "    return product"],
                          "stub": stubbed.splitlines()[2:4]}]
    assert stubbed.splitlines()[2] == "    # TODO: task 0.1"


def test_the_learner_loop_types_a_solution_back_as_the_course_wrote_it(tmp_path, monkeypatch):
    "Its markers and the cell's final newline included, so the solved edition exports the course's modules."
    import nbformat
    path = write_notebook(tmp_path / "00_a.ipynb", SOURCE)
    solutions = []
    for cell in nbformat.read(path, as_version=4).cells[1:]:
        stubbed, _ = exercises.stub_source(cell.source, "demo", solutions)
    nb = nbformat.read(path, as_version=4)
    nb.cells[1].source = stubbed
    nbformat.write(nb, path)
    assert stubbed.endswith("\n")
    loop_spec = importlib.util.spec_from_file_location("learner_loop", ROOT / "tools" / "course" / "learner_loop.py")
    loop = importlib.util.module_from_spec(loop_spec)
    loop_spec.loader.exec_module(loop)
    solution_spec = importlib.util.spec_from_file_location("solution", ROOT / "tools" / "course" / "solution.py")
    solution = importlib.util.module_from_spec(solution_spec)
    solution_spec.loader.exec_module(solution)
    monkeypatch.setattr(solution, "ROOT", tmp_path)
    region = {**solutions[0], "notebook": path.name, "cell": nb.cells[1].get("id")}
    assert solution.apply(loop.with_markers(region))
    assert nbformat.read(path, as_version=4).cells[1].source == SOURCE


def test_the_readme_of_the_edition_starts_with_the_first_task(tmp_path):
    (tmp_path / "README.md").write_text("# minitorch\nThe course.\n")
    exercises.write_readme(tmp_path, {"10_derivatives.ipynb": ["1.1"], "00_operators.ipynb": ["0.2", "0.1", "0.1"],
                                      "99_api.ipynb": []})
    readme = (tmp_path / "README.md").read_text()
    assert readme.startswith("# minitorch: exercise edition") and readme.endswith("# minitorch\nThe course.\n")
    assert "**task 0.1** in `nbs/00_operators.ipynb`" in readme
    assert "make check TASK=0.1" in readme and "make solution TASK=0.1" in readme and "make lab" in readme
    assert "* `nbs/00_operators.ipynb`: tasks 0.1, 0.2\n* `nbs/10_derivatives.ipynb`: tasks 1.1\n" in readme
    assert "99_api" not in readme


def test_the_edition_readme_says_once_how_a_task_is_done_and_gives_no_instructor_instructions(tmp_path):
    course_readme = (Path(__file__).parent.parent / "README.md").read_text()
    (tmp_path / "README.md").write_text(course_readme)
    exercises.write_readme(tmp_path, {"00_operators.ipynb": ["0.1"]})
    readme = (tmp_path / "README.md").read_text()
    step = "1. Find the cell that raises `NotImplementedError` naming your task and write the code in its place."
    assert course_readme.count(step) == 1 and readme.count(step) == 1 and readme.count("## Doing a task") == 1
    assert "## Two commands" in readme and "## The chapters" in readme and "MAINTAINERS.md" in readme
    for false_there in ["hold complete solutions", "extend earlier notebooks", "BEGIN SOLUTION", "make exercises"]:
        assert false_there not in readme


def test_a_readme_without_the_task_section_is_kept_whole():
    text = "# minitorch\n\n## Two commands\nmake lab\n"
    assert exercises.without_section(text, "Doing a task") == text
    assert exercises.without_section(text + "## Doing a task\nsteps\n\n## Next\nmore\n", "Doing a task") == \
        text + "## Next\nmore\n"


solution_spec = importlib.util.spec_from_file_location("solution", Path(__file__).parent.parent / "tools" / "course" / "solution.py")
solution = importlib.util.module_from_spec(solution_spec)
solution_spec.loader.exec_module(solution)


def test_a_solution_is_put_back_only_where_the_stub_is_untouched(tmp_path, monkeypatch):
    import nbformat
    (tmp_path / "nbs").mkdir()
    source = SOURCE + "\n\ndef twice(x):\n    # BEGIN SOLUTION 0.1\n    return 2 * x\n    # END SOLUTION\n"
    path = write_notebook(tmp_path / "nbs" / "00_demo.ipynb", source)
    nb = nbformat.read(path, as_version=4)
    regions = []
    nb.cells[1].source, _ = exercises.stub_source(source, "demo", regions)
    nb.cells[1].source = nb.cells[1].source.replace("implement `twice`", "implement `twice` (edited)")
    nbformat.write(nb, path)
    regions = [{**region, "notebook": "nbs/00_demo.ipynb", "cell": nb.cells[1].id} for region in regions]
    monkeypatch.setattr(solution, "ROOT", tmp_path)
    assert solution.apply(regions[0]) and not solution.apply(regions[1])
    namespace = {}
    exec(nbformat.read(path, as_version=4).cells[1].source, namespace)
    assert namespace["mul"](2, 3) == 6
    with pytest.raises(NotImplementedError, match="edited"):
        namespace["twice"](1)
    assert "--- task 0.1: `mul` in nbs/00_demo.ipynb" in solution.describe(regions[0])
    with pytest.raises(SystemExit, match="tasks are 0.1"):
        solution.regions_of("0.2", regions)


def test_the_course_itself_has_no_solution_file_to_show():
    with pytest.raises(SystemExit, match="not an exercise edition"):
        solution.main(["0.1"])


def test_a_check_lists_every_function_of_the_task_still_to_implement(tmp_path):
    stubs = "\n\n".join(f"def {name}(x):\n    raise NotImplementedError('Task {task} is not done yet: implement `{name}`')"
                        for name, task in (("double", "9.1"), ("half", "9.1"), ("given", "8.1")))
    path = write_notebook(tmp_path / "demo.ipynb", stubs, "#| task 9.1\nassert double(2) == 4",
                          "#| task 9.1\nassert half(4) == 2", "#| task 9.1\nassert given(1) == 1", "#| task 9.1\nassert True")
    passed, report = check.run_notebook(path, "9.1")
    assert not passed and report.startswith("demo.ipynb cell 3 of 6")
    assert "3 checks of task 9.1 failed: cell 3, cell 4, cell 5" in report
    assert "still to implement: `double`, `half`, `given` (task 8.1)" in report
    passed, report = check.run_notebook(path, "9.1", first_failure=True)
    assert "still to implement: `double`" in report and "half" not in report
