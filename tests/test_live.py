"""Live notebooks (tools/course/live.py): an exported cell, once run in a Jupyter kernel, is the package's code."""
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("live", ROOT / "tools" / "course" / "live.py")
live = importlib.util.module_from_spec(spec)
spec.loader.exec_module(live)


def test_a_class_updated_in_place_keeps_its_identity_and_its_instances():
    class Base:
        def hello(self):
            return "base"

    class Old(Base):
        def hello(self):
            return "old"

        def gone(self):
            return "gone"

    instance = Old()

    class New(Base):
        def hello(self):
            return "new and " + super().hello()

        @property
        def twice(self):
            return self.hello() * 2

    live.update_class(Old, New)
    assert instance.hello() == "new and base" and Old().hello() == "new and base"
    assert isinstance(instance, Old) and not hasattr(instance, "gone") and instance.twice.count("new") == 2


def test_slotted_classes_keep_their_own_slots():
    class Old:
        __slots__ = ("value",)

    class New:
        __slots__ = ("value",)

        def doubled(self):
            return 2 * self.value

    instance = Old()
    live.update_class(Old, New)
    instance.value = 4
    assert instance.doubled() == 8
    assert not live.same_layout(Old, type("Other", (), {"__slots__": ("value", "grad")}))


def write_package(folder: Path, files: dict[str, str]) -> Path:
    "A package `pkg` in `folder` with the given module sources."
    package = folder / "pkg"
    package.mkdir()
    for name, source in files.items():
        (package / f"{name}.py").write_text(textwrap.dedent(source))
    return package


def test_reload_order_is_the_module_then_what_imports_it_each_after_its_imports(tmp_path):
    package = write_package(tmp_path, {
        "__init__": "from .c import C\nfrom .b import B\n",
        "a": "X = 1\n",
        "b": "from .a import X\nB = X + 1\n",
        "c": "from typing import TYPE_CHECKING\nfrom pkg import b\nif TYPE_CHECKING:\n    from .d import D\nC = 3\n",
        "d": "D = 4\n",
    })
    assert live.reload_order({"pkg.a"}, "pkg", package) == ["pkg.a", "pkg.b", "pkg.c", "pkg"]
    assert live.reload_order({"pkg.d"}, "pkg", package) == ["pkg.d", "pkg"]


def test_a_reload_leaves_no_reference_to_the_classes_it_made_and_replaced(tmp_path, monkeypatch):
    write_package(tmp_path, {
        "__init__": "",
        "ops": """
            class Storage:
                pass

            class Ops:
                storage = Storage

                @classmethod
                def run(cls):
                    return cls

            class Backend:
                def __init__(self, ops):
                    self.storage, self.run = ops.storage, ops.run

            DEFAULT = Backend(Ops)
            """,
    })
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [name for name in sys.modules if name == "pkg" or name.startswith("pkg.")]:
        monkeypatch.delitem(sys.modules, name)
    ops = importlib.import_module("pkg.ops")
    storage, op_class = ops.Storage, ops.Ops
    live.reload_in_place(ops)
    assert ops.Storage is storage and ops.Ops is op_class  # the classes kept their identity
    assert ops.Ops.storage is storage and ops.DEFAULT.storage is storage  # and so does what refers to them
    assert ops.DEFAULT.run.__self__ is op_class and ops.DEFAULT.run() is op_class


def test_a_cell_that_registers_its_own_object_leaves_the_registry_holding_the_module_s(tmp_path, monkeypatch):
    write_package(tmp_path, {"__init__": "", "registry": "BACKENDS = {}\n",
                             "ops": "from .registry import BACKENDS\nDEFAULT = object()\nBACKENDS['default'] = DEFAULT\n"})
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [name for name in sys.modules if name == "pkg" or name.startswith("pkg.")]:
        monkeypatch.delitem(sys.modules, name)
    ops, registry = importlib.import_module("pkg.ops"), importlib.import_module("pkg.registry")
    course = object.__new__(live.LiveCourse)  # the hook's state, without a kernel: a notebook namespace and a package
    course.shell, course.package = type("Shell", (), {"user_ns": {}})(), "pkg"
    notebook_copy = object()  # what the cell `DEFAULT = object(); BACKENDS['default'] = DEFAULT` made and registered
    course.shell.user_ns["DEFAULT"], registry.BACKENDS["default"] = notebook_copy, notebook_copy
    course.share(ops, {"DEFAULT", "BACKENDS"})
    assert course.shell.user_ns["DEFAULT"] is ops.DEFAULT and registry.BACKENDS["default"] is ops.DEFAULT


def test_the_names_a_cell_defines():
    source = "#| export\nimport math\nfrom typing import Any as A\nx, (y, z) = 1, (2, 3)\nw: int = 4\n" \
             "def f():\n    inner = 1\nclass K:\n    pass\n"
    assert live.defined_names(source) == {"math", "A", "x", "y", "z", "w", "f", "K"}
    assert live.is_exported(source) and not live.is_exported("x = 1\n#| export")


def test_a_cell_is_written_to_its_module_exactly_as_nbdev_exports_it():
    notebook = ROOT / "nbs" / "00_operators.ipynb"
    cells = live.notebook_cells(notebook)
    index = next(index for index, cell in enumerate(cells) if "def mul(" in live.cell_text(cell))
    source = live.cell_text(cells[index])
    assert live.find_cell(ROOT / "nbs", cells[index]["id"], "") == (notebook, index)
    assert live.find_cell(ROOT / "nbs", None, source) == (notebook, index)
    texts = live.exported_modules(notebook, index, source, ROOT / "minitorch")
    assert texts == {ROOT / "minitorch" / "operators.py": (ROOT / "minitorch" / "operators.py").read_text()}
    changed = live.exported_modules(notebook, index, source.replace("def mul(", "def mul_changed("), ROOT / "minitorch")
    assert "def mul_changed(" in changed[ROOT / "minitorch" / "operators.py"]


def test_a_module_that_later_notebooks_add_to_is_written_whole(tmp_path):
    "A later notebook adding to an earlier one's module (`#| export b`): either notebook writes it all, as nbdev does."
    from nbdev.export import nb_export

    notebooks, package = tmp_path / "nbs", tmp_path / "package"
    notebooks.mkdir()
    package.mkdir()
    later = ["#| default_exp d", "#| export\nx = 1\n", "#| export b\ndef parse_idx():\n    return 2\n"]
    for name, sources in (("02_b.ipynb", ["#| default_exp b", "#| export\ndef simple():\n    return 1\n"]),
                          ("04_d.ipynb", later)):
        cells = [{"cell_type": "code", "execution_count": None, "id": f"c{index}", "metadata": {}, "outputs": [],
                  "source": source} for index, source in enumerate(sources)]
        (notebooks / name).write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    for notebook in sorted(notebooks.glob("*.ipynb")):
        nb_export(notebook, package)
    for notebook, needle in ((notebooks / "04_d.ipynb", "def parse_idx("), (notebooks / "02_b.ipynb", "def simple(")):
        cells = live.notebook_cells(notebook)
        index = next(index for index, cell in enumerate(cells) if needle in live.cell_text(cell))
        texts = live.exported_modules(notebook, index, live.cell_text(cells[index]), package)
        assert texts[package / "b.py"] == (package / "b.py").read_text()
        assert "def parse_idx(" in texts[package / "b.py"] and "def simple(" in texts[package / "b.py"]


def test_an_exporti_cell_is_live_too_and_stays_out_of_all():
    "`#| exporti` (a helper: written into the module, left out of its `__all__`) is exported like `#| export`."
    assert live.is_exported("#| exporti\nTILE_BYTES = 256\n")
    notebook, module = ROOT / "nbs" / "30_fast_ops.ipynb", ROOT / "minitorch" / "fast_ops.py"
    cells = live.notebook_cells(notebook)
    index = next(index for index, cell in enumerate(cells) if "def panel_height(" in live.cell_text(cell))
    source = live.cell_text(cells[index])
    assert "exporti" in live.directives(source)
    assert live.exported_modules(notebook, index, source, ROOT / "minitorch") == {module: module.read_text()}
    edited = source.replace("def panel_height(", "def panel_height_changed(")
    changed = live.exported_modules(notebook, index, edited, ROOT / "minitorch")[module]
    names = changed.split("# %%")[1]  # nbdev's `__all__`, the first block of the module
    assert "def panel_height_changed(" in changed and "panel_height" not in names and "FastOps" in names


def test_a_later_notebook_adding_helpers_with_exporti_contributes_to_the_module(tmp_path):
    for name, source in (("01_a.ipynb", "#| default_exp a\n"), ("02_b.ipynb", "#| exporti a\nx = 1\n"),
                         ("03_c.ipynb", "#| export c\ny = 2\n")):
        (tmp_path / name).write_text(json.dumps({"cells": [{"cell_type": "code", "source": source}]}))
    assert live.contributors(tmp_path, "a", tmp_path / "01_a.ipynb") == [tmp_path / "01_a.ipynb", tmp_path / "02_b.ipynb"]

class Kernel:
    "A real IPython kernel, as JupyterLab starts one, that runs code the way JupyterLab sends it (with a cell id)."

    def __init__(self, course: Path):
        from jupyter_client import KernelManager
        env = {**os.environ, "PYTHONPATH": str(course), "NUMBA_ENABLE_CUDASIM": "1"}
        env.pop("IN_TEST", None)
        self.manager = KernelManager(kernel_name="python3")
        self.manager.start_kernel(env=env, cwd=str(course / "nbs"))
        self.client = self.manager.client()
        self.client.start_channels()
        self.client.wait_for_ready(timeout=60)

    def run(self, code: str, cell_id: str | None = None) -> str:
        "Run `code`; its printed output, or an AssertionError with the kernel's error."
        content = {"code": code, "silent": False, "store_history": True, "user_expressions": {},
                   "allow_stdin": False, "stop_on_error": True}
        message = self.client.session.msg("execute_request", content, metadata={"cellId": cell_id} if cell_id else {})
        self.client.shell_channel.send(message)
        output, errors, error = [], [], None
        while True:
            reply = self.client.get_iopub_msg(timeout=120)
            if reply["parent_header"].get("msg_id") != message["header"]["msg_id"]:
                continue
            kind = reply["msg_type"]
            if kind == "stream":
                (errors if reply["content"]["name"] == "stderr" else output).append(reply["content"]["text"])
            elif kind == "error":
                error = f"{reply['content']['ename']}: {reply['content']['evalue']}"
            elif kind == "status" and reply["content"]["execution_state"] == "idle":
                break
        self.last_stderr = "".join(errors)
        if error:
            raise AssertionError(error)
        return "".join(output)

    def close(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)


def run_imports_cell(kernel: Kernel, notebook: Path) -> None:
    "Run the notebook's exported imports (its first exported cell), as a learner does first."
    cell = next(cell for cell in live.notebook_cells(notebook) if live.is_exported(live.cell_text(cell)))
    kernel.run(live.cell_text(cell), cell_id=cell["id"])


@pytest.fixture
def course_copy(tmp_path):
    "A copy of the course's files (what git tracks), as a learner has it."
    listing = subprocess.run(["git", "ls-files"], cwd=ROOT, check=True, capture_output=True, text=True).stdout
    for name in listing.splitlines():
        if (ROOT / name).is_file():
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, tmp_path / name)
    return tmp_path


def test_an_edited_cell_run_in_a_kernel_becomes_the_package_code_without_saving_or_export(course_copy):
    pytest.importorskip("jupyter_client")
    notebook = course_copy / "nbs" / "00_operators.ipynb"
    saved = notebook.read_text()
    cell = next(cell for cell in live.notebook_cells(notebook) if "def mul(" in live.cell_text(cell))
    edited = live.cell_text(cell).replace("def mul(", "def mul_edited(x: float, y: float) -> float:\n"
                                          "    \"Ten times the product.\"\n    return 10 * x * y\n\n\ndef mul(")
    kernel = Kernel(course_copy)
    try:
        kernel.run("%load_ext tools.course.live")
        run_imports_cell(kernel, notebook)
        kernel.run("import minitorch\nfrom minitorch import operators\nold_module = operators")
        kernel.run(edited, cell_id=cell["id"])  # as JupyterLab runs an edited cell: the notebook is not saved
        assert kernel.last_stderr == ""
        shown = kernel.run("print(mul_edited(2, 3), operators.mul_edited(2, 3), minitorch.operators is old_module,"
                           " mul_edited is operators.mul_edited)")
        assert shown.split() == ["60", "60", "True", "True"]
        kernel.run("#| export\ndef not_in_any_notebook():\n    return 1")  # a new, unsaved cell: nothing to write
    finally:
        kernel.close()
    assert notebook.read_text() == saved
    written = (course_copy / "minitorch" / "operators.py").read_text()
    assert "def mul_edited(" in written and "not_in_any_notebook" not in written
    fresh = subprocess.run([sys.executable, "-c", "import minitorch; print(minitorch.operators.mul_edited(1, 2))"],
                           cwd=course_copy, env={**os.environ, "PYTHONPATH": str(course_copy)},
                           capture_output=True, text=True)
    assert fresh.stdout.strip() == "20", fresh.stderr


def test_a_class_cell_updates_the_class_every_module_and_the_notebook_already_hold(course_copy):
    pytest.importorskip("jupyter_client")
    notebook = course_copy / "nbs" / "01_module.ipynb"
    cell = next(cell for cell in live.notebook_cells(notebook) if "class Parameter" in live.cell_text(cell))
    edited = live.cell_text(cell) + "\n\n    def live_mark(self) -> str:\n        return 'live'\n"
    kernel = Kernel(course_copy)
    try:
        kernel.run("%load_ext tools.course.live")
        run_imports_cell(kernel, notebook)
        kernel.run("import minitorch\nfrom minitorch.module import Parameter as Before\nearlier = Before(1.0)")
        kernel.run(edited, cell_id=cell["id"])
        shown = kernel.run("print(Parameter is Before is minitorch.Parameter, earlier.live_mark())")
        assert shown.split() == ["True", "live"]
        kernel.run(live.cell_text(cell), cell_id=cell["id"])  # run as it was: the method is gone again
        assert "live_mark" not in kernel.run("print(dir(earlier))")
        module = (course_copy / "minitorch" / "module.py").read_text()
        kernel.run("only_in_the_notebook = 1")  # a cell that runs here but would break the module is refused
        kernel.run(live.cell_text(cell) + "\n\nbroken = only_in_the_notebook\n", cell_id=cell["id"])
        assert kernel.last_stderr.startswith("minitorch could not take this cell into the package: NameError")
        assert "True" in kernel.run("print(minitorch.Parameter is Before)")
    finally:
        kernel.close()
    assert (course_copy / "minitorch" / "module.py").read_text() == module
