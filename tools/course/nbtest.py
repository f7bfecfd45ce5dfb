"""Run every notebook as `nbdev_test` does, but each one in a fresh Python process.

`nbdev_test` runs notebooks inside its worker processes, several per process, so a notebook that patches
the package (23 puts a basic `Tensor.__getitem__` in place, which 25 replaces) changes what the next
notebook in that process sees, and which notebooks share a process depends on timing. A learner opens
each notebook in a fresh kernel; so does this runner. Cells are skipped by nbdev's own rule (`tst_flags`
in settings.ini, less `--flags`).

    python tools/course/nbtest.py [--path 'nbs/5*.ipynb'] [--flags slow] [--workers 2]
"""
import argparse
import glob
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from nbdev.config import get_config
from nbdev.test import test_nb

def notebooks(pattern: str | None) -> list[Path]:
    "The notebooks matching `pattern` (a glob), else every notebook in nbs/ but the scratch ones (`_*`)."
    if pattern:
        return sorted(Path(found).absolute() for found in glob.glob(pattern) if found.endswith(".ipynb"))
    return sorted(path.absolute() for path in get_config().nbs_path.glob("*.ipynb") if not path.name.startswith("_"))


def run_one(path: Path, force_flags: list[str]) -> tuple[bool, float]:
    "Test one notebook in its own folder (nbdev's `test_nb`), skipping the cells `tst_flags` marks unless forced."
    config = get_config()
    return test_nb(path, skip_flags=config.tst_flags.split(), force_flags=force_flags, basepath=config.config_path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--path", help="a glob of notebooks (default: every notebook in nbs/)")
    parser.add_argument("--flags", default="", help="space-separated flags of cells to run that are normally skipped")
    parser.add_argument("--workers", type=int, default=2, help="notebooks run at once")
    args = parser.parse_args()
    paths = notebooks(args.path)
    if not paths:
        print(f"no notebooks match {args.path!r}", file=sys.stderr)
        return 2
    # One task per process: no notebook sees another's changes to the package.
    with ProcessPoolExecutor(args.workers, max_tasks_per_child=1) as pool:
        results = list(pool.map(run_one, paths, [args.flags.split()] * len(paths)))
    failed = [path.name for path, (passed, _) in zip(paths, results) if not passed]
    for path, (_, seconds) in sorted(zip(paths, results), key=lambda pair: -pair[1][1]):
        print(f"{path.name}: {seconds:.0f} s")
    if failed:
        print("Notebooks that failed:\n\t" + "\n\t".join(failed), file=sys.stderr)
        return 1
    print(f"All {len(paths)} notebooks passed.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
