"""The exercise-edition tooling: solution regions become stubs that name their task."""
import importlib.util
import sys
from pathlib import Path

import pytest

spec = importlib.util.spec_from_file_location("exercises", Path(__file__).parent.parent / ".ci" / "exercises.py")
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


check_spec = importlib.util.spec_from_file_location("check", Path(__file__).parent.parent / ".ci" / "check.py")
check = importlib.util.module_from_spec(check_spec)
check_spec.loader.exec_module(check)


def test_every_task_line_of_a_cell_counts():
    import nbformat
    cell = nbformat.v4.new_code_cell("#| task 4.8\n#| task 4.2 4.3\n#| slow\nx = 1\n#| task 9.9")
    assert check.cell_tasks(cell) == ["4.8", "4.2", "4.3"]
    assert check.skipped(cell, "4.2") and not check.skipped(nbformat.v4.new_code_cell("#| task 4.2\nx = 1"), "4.2")
    assert check.skipped(nbformat.v4.new_code_cell("#| task 4.2\nx = 1"), "4.3")
