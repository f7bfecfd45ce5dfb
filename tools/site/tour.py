"""Write the README tour's images from what the course itself produces.

    python tools/site/tour.py

Needs the executed notebooks of `make html` (_site/notebooks/) and the browser screenshots of
`make e2e` (_screenshots/); `make tour-images` runs both first. The images go to nbs/images/.
"""
import base64
import io
import sys
from pathlib import Path

import nbformat
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent))
from nbcells import ROOT  # noqa: E402

OUT = ROOT / "nbs" / "images"
MAX_BYTES = 150_000
FIGURES = {"tour-activations.png": "00_operators", "tour-datasets.png": "02_datasets"}  # first plot of each
SCREENSHOTS = {"tour-jupyterlab.png": "01_module-plot.png"}                          # a notebook in the browser


def first_figure(notebook: Path) -> bytes:
    "The first PNG output of an executed notebook."
    nb = nbformat.read(notebook, as_version=4)
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            if "image/png" in output.get("data", {}):
                return base64.b64decode(output["data"]["image/png"])
    raise SystemExit(f"{notebook.name} has no PNG output: run `make html` first, or pick another notebook")


def save_small(image: Image.Image, path: Path, width: int) -> int:
    "Save `image` at most `width` pixels wide with a 128-colour palette; return the file size."
    if image.width > width:
        image = image.resize((width, round(image.height * width / image.width)), Image.LANCZOS)
    image.convert("RGB").quantize(colors=128).save(path, optimize=True)
    return path.stat().st_size


def main() -> None:
    "Write every tour image and report its size."
    OUT.mkdir(parents=True, exist_ok=True)
    sources = {name: Image.open(io.BytesIO(first_figure(ROOT / "_site" / "notebooks" / f"{stem}.ipynb")))
               for name, stem in FIGURES.items()}
    for name, shot in SCREENSHOTS.items():
        if not (ROOT / "_screenshots" / shot).exists():
            raise SystemExit(f"_screenshots/{shot} is missing: run `make e2e` first")
        sources[name] = Image.open(ROOT / "_screenshots" / shot)
    for name, image in sources.items():
        size = save_small(image, OUT / name, width=960)
        print(f"  {OUT.relative_to(ROOT) / name}: {size // 1000} KB")
        if size > MAX_BYTES:
            raise SystemExit(f"{name} is {size} bytes, over {MAX_BYTES}: make it smaller")


if __name__ == "__main__":
    main()
