"""Install minitorch from the metadata in settings.ini (no pkg_resources)."""
from configparser import ConfigParser
from pathlib import Path

import setuptools

config = ConfigParser(delimiters=["="])
config.read(Path(__file__).parent / "settings.ini", encoding="utf-8")
cfg = config["DEFAULT"]

requirements = cfg.get("requirements", "").split()
dev_requirements = cfg.get("dev_requirements", "").split()

setuptools.setup(
    name=cfg["lib_name"],
    version=cfg["version"],
    description=cfg["description"],
    long_description=(Path(__file__).parent / "README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    author=cfg["author"],
    author_email=cfg["author_email"],
    license="MIT",
    keywords=cfg["keywords"].split(),
    python_requires=">=" + cfg["min_python"],
    packages=setuptools.find_packages(include=["minitorch", "minitorch.*"]),
    include_package_data=True,
    install_requires=requirements,
    extras_require={"dev": dev_requirements, "torch": ["torch==2.13.0"], "e2e": ["playwright>=1.40"]},
    zip_safe=False,
)
