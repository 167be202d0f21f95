"""The packages depend one way: `trainwreck` (shared plumbing) imports neither command,
`injector` never imports `triage`, and `triage` may import `injector`.

Every module's imports are read from its syntax tree (those inside functions included, and
`importlib.import_module("...")` with a literal name), so a cycle cannot creep back in through
a lazy import.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# package -> the top-level packages of this project it must never import
FORBIDDEN = {
    "trainwreck": {"injector", "triage"},
    "trainwreck_templates": {"injector", "triage"},
    "trainwreck_workflows": {"injector", "triage"},
    "injector": {"triage"},
}
# where each package's source lives in the tree
SOURCES = {
    "trainwreck": "trainwreck",
    "trainwreck_templates": "templates",
    "trainwreck_workflows": "workflows",
    "injector": "injector",
    "triage": "triage",
}


def module_name(package: str, path: Path) -> str:
    parts = list(path.relative_to(ROOT / SOURCES[package]).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([package, *parts])


def imported(source: str, module: str, is_package: bool) -> set[str]:
    """Every module name `source` (the text of `module`) imports, relative imports resolved."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            origin = node.module or ""
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                origin = ".".join(base + ([node.module] if node.module else []))
            names.add(origin)
            # `from pkg import sub` may import the submodule pkg.sub
            names.update(f"{origin}.{alias.name}" for alias in node.names if alias.name != "*")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            names.add(node.args[0].value)
    return names


def violations(package: str, modules: dict[str, tuple[str, bool]]) -> list[str]:
    """`module imports name` for each import `package`'s modules must not make."""
    found = []
    for module, (source, is_package) in sorted(modules.items()):
        for name in sorted(imported(source, module, is_package)):
            if name.split(".")[0] in FORBIDDEN.get(package, set()):
                found.append(f"{module} imports {name}")
    return found


def package_modules(package: str) -> dict[str, tuple[str, bool]]:
    folder = ROOT / SOURCES[package]
    # the bundled demo is a user's project, not part of the layering
    files = [p for p in folder.rglob("*.py") if "demo" not in p.relative_to(folder).parts]
    return {module_name(package, p): (p.read_text(encoding="utf-8"), p.name == "__init__.py") for p in files}


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_the_package_imports_only_downward(package):
    modules = package_modules(package)
    assert modules, f"no modules found for {package}"
    assert violations(package, modules) == []


def test_triage_builds_on_the_shared_plumbing():
    # the direction is visible: triage's comment command uses trainwreck's sticky comment
    names = set().union(*(imported(src, m, pkg) for m, (src, pkg) in package_modules("triage").items()))
    assert {"trainwreck.comment", "trainwreck.github", "trainwreck.errors"} <= names


@pytest.mark.parametrize(
    "code",
    [
        "from triage import render",
        "def later():\n    import triage.comment\n",
        "import importlib\nimportlib.import_module('triage.cli')",
        "from ...triage import cli",  # relative, from injector.worker.core: the top-level triage
    ],
)
def test_a_cycle_in_a_lazy_or_indirect_import_is_caught(code):
    found = violations("injector", {"injector.worker.core": (code, False)})
    assert found and all(line.startswith("injector.worker.core imports triage") for line in found)


def test_relative_imports_resolve_to_their_package():
    assert "injector.campaign" in imported("from . import campaign", "injector.cli", False)
    assert "injector.worker.core" in imported("from .core import x", "injector.worker", True)
    assert "trainwreck.triage" in imported("from ..triage import y", "trainwreck.a.b", False)
    assert violations("trainwreck", {"trainwreck.a.b": ("from ...triage import y", False)}) == [
        "trainwreck.a.b imports triage",
        "trainwreck.a.b imports triage.y",
    ]
