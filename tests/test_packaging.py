"""The wheel ships every package the source tree has: setuptools is given an explicit list, so a
new sub-package left off it would work from a checkout and fail once installed."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_in_the_tree_is_listed_for_the_wheel():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for top in ("injector", "triage", "trainwreck")
        for init in (ROOT / top).rglob("__init__.py")
        if "demo" not in init.parts or init.parent.name in ("demo", "demo_train", "tests")
    }
    assert found - listed == set()


def test_every_sitecustomize_folder_ships_as_package_data():
    """Our `sitecustomize` folders are no packages (no __init__.py): only package data ships them,
    and without them a campaign's baseline, a watched run's children or `--calibrate` would
    quietly record nothing in the processes a guard starts."""
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    for top in ("injector", "trainwreck"):
        for site in (ROOT / top).rglob("sitecustomize.py"):
            pattern = f"{site.parent.relative_to(ROOT / top).as_posix()}/*.py"
            assert pattern in data[top], site
