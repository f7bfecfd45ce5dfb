"""Live notebooks: an exported cell, once run, is the code the package runs.

Each chapter's first code cell loads this IPython extension (`%load_ext tools.course.live`). From then on,
whenever a cell marked `#| export` runs without error in a Jupyter kernel, the extension

1. finds the cell in its notebook under `nbs/` (by the cell id JupyterLab sends, else by its source),
2. writes the notebook's module under `minitorch/` as `nbdev_export` would, with the cell as it just ran
   (whether or not the notebook was saved), atomically,
3. reloads that module and every module of the package that imports it, in place: classes keep their
   identity (their methods are replaced), so objects made earlier in the notebook stay instances of them,
4. points the notebook's names at the package's objects, so the notebook and the package share one `Scalar`.

So the checks below the cell, the rest of the notebook and every notebook opened later run the learner's
code, with no export and no restart. Only real Jupyter kernels go live: `nbdev_test` and `make check` (which
run notebooks in execnb's shell) keep testing the exported package as it is on disk.
"""
import ast
import importlib
import json
import os
import re
import sys
import types
from configparser import ConfigParser
from pathlib import Path
from typing import Any, Iterator

ROOT = Path(__file__).resolve().parents[2]
EXPORT_DIRECTIVES = {"export", "exports", "exporti"}  # exporti: in the module, not in its __all__
NOT_COPIED = {"__dict__", "__weakref__"}


def course_settings() -> tuple[str, Path, Path]:
    "The package's name, its folder and the notebooks' folder, from the course's settings.ini."
    config = ConfigParser()
    config.read(ROOT / "settings.ini")
    settings = config["DEFAULT"]
    return settings["lib_name"], ROOT / settings["lib_path"], ROOT / settings["nbs_path"]


def directives(source: str) -> dict[str, list[str]]:
    "The `#|` directives at the top of a cell's source."
    found: dict[str, list[str]] = {}
    for line in source.splitlines():
        if line.startswith("#|"):
            name, *values = line[2:].split()
            found[name] = values
        elif line.strip():
            break
    return found


def is_exported(source: str) -> bool:
    "Whether a cell with this source is exported into the package by nbdev."
    return bool(EXPORT_DIRECTIVES & directives(source).keys())


def notebook_cells(path: Path) -> list[dict]:
    "The cells of the notebook at `path`, as stored on disk."
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def cell_text(cell: dict) -> str:
    "A stored cell's source as one string."
    source = cell.get("source", "")
    return source if isinstance(source, str) else "".join(source)


def find_cell(notebooks: Path, cell_id: str | None, source: str) -> tuple[Path, int] | None:
    "The notebook and index of the cell that ran: by the id JupyterLab sends, else by identical source."
    candidates = sorted(notebooks.glob("[!_]*.ipynb"))
    for matches in (lambda cell: cell_id is not None and cell.get("id") == cell_id,
                    lambda cell: cell_text(cell).rstrip() == source.rstrip()):
        for path in candidates:
            for index, cell in enumerate(notebook_cells(path)):
                if cell.get("cell_type") == "code" and matches(cell):
                    return path, index
    return None


def export_cells(nb: Any) -> Any:
    "nbdev's export processor, run over the notebook `nb`: its cells per target module, and its default module."
    from nbdev.export import ExportModuleProc, black_format
    from nbdev.process import NBProcessor

    exporter = ExportModuleProc()
    NBProcessor(nb=nb, procs=[exporter, black_format]).process()
    return exporter


def exported_modules(notebook: Path, index: int, source: str, package_dir: Path) -> dict[Path, str]:
    """What `nbdev_export` writes for every module `notebook` exports to, with cell `index` replaced by `source`:
    module file -> text. A module some cells of later notebooks add to (`#| export name`) is written whole,
    from each notebook that contributes to it, in name order, as nbdev_export does."""
    from execnb.nbio import read_nb
    from nbdev.maker import ModuleMaker

    edited = read_nb(notebook)
    edited.cells[index].source = source
    exporters = {notebook: export_cells(edited)}
    own = exporters[notebook]
    targets = {own.default_exp if target == "#" else target for target in own.modules}
    texts = {}
    for target in sorted(targets):
        final = ModuleMaker(dest=package_dir, name=target, nb_path=notebook).fname
        scratch = final.with_name(f".{final.stem}.live.py")
        try:
            for contributor in contributors(notebook.parent, target, notebook):
                exporter = exporters.get(contributor) or export_cells(read_nb(contributor))
                for module, cells in exporter.modules.items():
                    name = exporter.default_exp if module == "#" else module
                    if name != target or not any(cell.cell_type == "code" for cell in cells):
                        continue
                    is_new = module == "#"
                    if not is_new and not scratch.exists():
                        continue  # the notebook that owns the module writes it first
                    maker = ModuleMaker(dest=package_dir, name=target, nb_path=contributor, is_new=True)
                    maker.is_new, maker.fname = is_new, scratch
                    maker.make(cells, exporter.in_all[module], lib_path=package_dir)
            if scratch.exists():
                texts[final] = scratch.read_text(encoding="utf-8")
        finally:
            scratch.unlink(missing_ok=True)
    return texts


def contributors(notebooks: Path, target: str, notebook: Path) -> list[Path]:
    "The notebooks, in name order, whose cells nbdev_export writes into the module `target`."
    exports_to = re.compile(rf"#\|\s*(?:default_exp|export[si]?)\s+{re.escape(target)}\b")
    found = {path for path in notebooks.glob("[!_]*.ipynb")
             if any(exports_to.search(cell_text(cell)) for cell in notebook_cells(path))}
    return sorted(found | {notebook}, key=lambda path: path.name)


def write_atomically(path: Path, text: str) -> None:
    "Replace the file at `path` by `text`, so that no reader sees half a file."
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


def module_name(path: Path, package: str, package_dir: Path) -> str:
    "The import name of the module file `path` of the package."
    return package if path.name == "__init__.py" else f"{package}.{path.relative_to(package_dir).with_suffix('').as_posix().replace('/', '.')}"


def run_time_imports(tree: ast.Module) -> Iterator[ast.stmt]:
    "The import statements a module runs when it is imported (not those under `if TYPE_CHECKING:`)."
    statements = list(tree.body)
    while statements:
        statement = statements.pop(0)
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            yield statement
        elif isinstance(statement, ast.If) and "TYPE_CHECKING" not in ast.unparse(statement.test):
            statements += statement.body + statement.orelse
        elif isinstance(statement, ast.Try):
            statements += statement.body + statement.orelse + statement.finalbody
            statements += [line for handler in statement.handlers for line in handler.body]


def imported_modules(path: Path, package: str, known: set[str]) -> set[str]:
    "The modules of the package that the module file at `path` imports when it is imported."
    found = set()
    for statement in run_time_imports(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(statement, ast.Import):
            found |= {alias.name for alias in statement.names}
            continue
        base = package if statement.level else (statement.module or "")
        base = f"{base}.{statement.module}" if statement.level and statement.module else base
        found |= {base} | {f"{base}.{alias.name}" for alias in statement.names}
    return (found & known) - {package}  # the package's __init__ is what imports them all


def reload_order(changed: set[str], package: str, package_dir: Path) -> list[str]:
    "The changed modules and every module that imports them, directly or not, each after what it imports."
    files = {module_name(path, package, package_dir): path for path in package_dir.glob("*.py")}
    imports = {name: imported_modules(path, package, set(files)) for name, path in files.items()}
    imports[package] = set(files) - {package}  # the package's __init__ gathers every module
    order: list[str] = []

    def visit(name: str, seen: set[str]) -> None:
        if name in order or name in seen:
            return
        for needed in imports.get(name, ()):
            visit(needed, seen | {name})
        order.append(name)

    for name in sorted(files):
        visit(name, set())
    affected = set(changed)
    for name in order:
        if imports.get(name, set()) & affected:
            affected.add(name)
    return [name for name in order if name in affected]


def functions_of(value: Any) -> list[types.FunctionType]:
    "The plain functions inside a class attribute (a method, a static or class method, a property)."
    if isinstance(value, (staticmethod, classmethod)):
        value = value.__func__
    if isinstance(value, property):
        return [part for part in (value.fget, value.fset, value.fdel) if isinstance(part, types.FunctionType)]
    return [value] if isinstance(value, types.FunctionType) else []


def same_layout(old: type, new: type) -> bool:
    "Whether instances of `old` can take the methods of `new`: the same slots and an equally shaped base."
    return (getattr(old, "__slots__", None) == getattr(new, "__slots__", None)
            and old.__base__.__name__ == new.__base__.__name__ and type(old) is type(new))


def update_class(old: type, new: type) -> None:
    "Give the class `old` the attributes of `new`, so that `old` (and every instance of it) behaves as `new`."
    for name in set(old.__dict__) - set(new.__dict__) - NOT_COPIED:
        try:
            delattr(old, name)
        except (AttributeError, TypeError):
            pass
    for name, value in new.__dict__.items():
        if name in NOT_COPIED or isinstance(value, types.MemberDescriptorType):
            continue  # a slot's descriptor belongs to its class's memory layout: `old` keeps its own
        for function in functions_of(value):  # zero-argument super() looks its class up in a `__class__` cell
            if "__class__" in function.__code__.co_freevars:
                cell = function.__closure__[function.__code__.co_freevars.index("__class__")]
                if cell.cell_contents is new:
                    cell.cell_contents = old
        try:
            setattr(old, name, value)
        except (AttributeError, TypeError):
            pass


def kept_version(value: Any, kept: dict[type, type]) -> Any:
    "`value` with the kept class for a class the reload made (also as the `self` of a bound class method)."
    if isinstance(value, type):
        return kept.get(value, value)
    if isinstance(value, types.MethodType) and isinstance(value.__self__, type) and value.__self__ in kept:
        return types.MethodType(value.__func__, kept[value.__self__])
    return value


def repoint_attributes(holder: Any, kept: dict[type, type]) -> None:
    "Point the attributes of `holder` (a class or an object) that name a reloaded class at the kept one."
    attributes = vars(holder) if isinstance(holder, type) or hasattr(holder, "__dict__") else {}
    for name, value in list(attributes.items()):
        replacement = kept_version(value, kept)
        if replacement is not value:
            try:
                setattr(holder, name, replacement)
            except (AttributeError, TypeError):
                pass


def reload_in_place(module: types.ModuleType) -> dict[int, tuple[Any, Any]]:
    "Run the module's file again in its namespace, keeping its classes; return {id(old): (old, new)} of other names."
    before = dict(module.__dict__)
    importlib.reload(module)
    namespace, kept = module.__dict__, {}
    for name, value in list(namespace.items()):
        previous = before.get(name)
        if (isinstance(value, type) and isinstance(previous, type) and value is not previous
                and value.__module__ == previous.__module__ == module.__name__ and same_layout(previous, value)):
            update_class(previous, value)
            namespace[name] = kept[value] = previous
    for value in namespace.values():  # objects the module made of its own classes while it ran
        if type(value) in kept:
            try:
                object.__setattr__(value, "__class__", kept[type(value)])  # frozen dataclasses too
            except TypeError:
                pass
    for value in [*kept.values(), *namespace.values()]:  # what they hold of the reloaded classes, too
        repoint_attributes(value, kept)
    return {id(before[name]): (before[name], value) for name, value in namespace.items()
            if name in before and before[name] is not value}


def repoint_registries(swapped: dict[int, tuple[Any, Any]], package: str) -> None:
    "In the package's module-level dicts, put the module's object where a cell registered its own copy of it."
    for name, loaded in list(sys.modules.items()):
        if name != package and not name.startswith(package + "."):
            continue
        for registry in [value for value in vars(loaded).values() if isinstance(value, dict)]:
            for key, entry in list(registry.items()):
                pair = swapped.get(id(entry))
                if pair is not None and pair[0] is entry:
                    registry[key] = pair[1]


def defined_names(source: str) -> set[str]:
    "Names a cell binds at its top level."
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    names = set()
    for statement in tree.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(statement.name)
        elif isinstance(statement, (ast.Import, ast.ImportFrom)):
            names |= {(alias.asname or alias.name).split(".")[0] for alias in statement.names}
        elif isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            names |= {node.id for target in targets for node in ast.walk(target) if isinstance(node, ast.Name)}
    return names


class LiveCourse:
    "After an exported cell runs in a notebook of the course, install its code into the package."

    def __init__(self, shell: Any):
        self.shell = shell
        self.package, self.package_dir, self.notebooks = course_settings()

    def after_cell(self, result: Any) -> None:
        "IPython's post_run_cell hook."
        source = result.info.raw_cell or ""
        if result.error_before_exec or result.error_in_exec or not is_exported(source):
            return
        try:
            self.install(source, getattr(result.info, "cell_id", None))
        except Exception as error:  # the cell itself ran: say why the package did not follow, never hide it
            print(f"minitorch could not take this cell into the package: {type(error).__name__}: {error}\n"
                  "The checks below will run the package's previous code. Fix the cell and run it again.",
                  file=sys.stderr)

    def install(self, source: str, cell_id: str | None) -> None:
        "Write the cell's module as nbdev would, reload it and what imports it, and share its objects."
        place = find_cell(self.notebooks, cell_id, source)
        if place is None:
            return  # a cell of no course notebook (a scratch notebook, or one not saved yet): nothing to export
        for path, text in exported_modules(*place, source, self.package_dir).items():
            name = module_name(path, self.package, self.package_dir)
            previous = path.read_text(encoding="utf-8") if path.exists() else None
            if text != previous:
                write_atomically(path, text)
            try:
                if name not in sys.modules:
                    importlib.invalidate_caches()
                    importlib.import_module(name)
                elif text != previous:
                    self.reload(name)
            except Exception:
                if previous is not None and text != previous:  # never leave a module that fails to import
                    write_atomically(path, previous)
                    if name in sys.modules:
                        self.reload(name)
                raise
            self.share(sys.modules[name], defined_names(source))

    def reload(self, changed: str) -> None:
        "Reload the changed module and the loaded modules that import it, and re-point the notebook's names."
        importlib.invalidate_caches()
        replaced: dict[int, tuple[Any, Any]] = {}
        for name in reload_order({changed}, self.package, self.package_dir):
            if name in sys.modules:
                replaced |= reload_in_place(sys.modules[name])
        namespace = self.shell.user_ns
        for name, value in list(namespace.items()):
            old_and_new = replaced.get(id(value))
            if old_and_new is not None and old_and_new[0] is value:
                namespace[name] = old_and_new[1]

    def share(self, module: types.ModuleType, names: set[str]) -> None:
        "Point the notebook's names that the cell defined, and the package's registries, at the module's objects."
        swapped = {}
        for name in names & module.__dict__.keys():
            mine, theirs = self.shell.user_ns.get(name), module.__dict__[name]
            if mine is not None and mine is not theirs:
                swapped[id(mine)] = (mine, theirs)
            self.shell.user_ns[name] = theirs
        if swapped:
            repoint_registries(swapped, self.package)


def load_ipython_extension(shell: Any) -> None:
    "Go live in a real Jupyter kernel (JupyterLab, nbclient); stay off in nbdev_test's and make check's shells."
    if os.environ.get("IN_TEST") or type(shell).__name__ != "ZMQInteractiveShell":
        return
    shell.events.register("post_run_cell", LiveCourse(shell).after_cell)
