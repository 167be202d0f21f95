"""Fingerprints of what a mutant's verdict depends on, for the outcome cache.

Three layers, from coarse to fine:

- the **settings**: this trainwreck's own code, the Python and the installed packages, the
  guard, and every campaign setting that can change a verdict (timeout factor, baseline
  repetitions, warm or fresh, each slot's thread count, the device);
- the **tree**: every file a scratch copy of the project gets. Its `whole` digest changes with
  any byte; its `shared` digest covers what every mutant depends on: the files that are not
  Python (configuration, data), the code of every Python module that runs at import (imports,
  constants, class attributes; not the functions), the functions that code may call, and
  every `conftest.py` whole (its hooks run while pytest collects, where nothing is traced);
- the **units**: each outermost function (methods included) of every Python file, compared as
  syntax trees, so comments, blank lines and line shifts do not count as changes.

A mutant's cache key joins the settings, the shared digest, the mutant's id, the names of the
guard tests that reach it, the import-time code of their test modules, and the units those
tests ran in the baseline (the mutant's own function among them): change one function, or add
a test, and only the mutants whose tests run it run again. A test module's import-time code is
its own tests' business only while it just imports and defines (pytest's marks allowed); one
that calls anything else at import (a seed, a patch) is shared by every key.

What the key cannot see: inputs from outside the project (environment variables, files the
links in the project point to, the network), and code a mutant makes run that no test ran
on the unmutated project. `--no-cache` runs everything afresh.
"""

from __future__ import annotations

import ast
import bisect
import hashlib
import os
import platform
import site
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path

import trainwreck
from injector import __version__
from injector.scratch import not_copied

SCHEMA = "trainwreck.cache/1"
PACKAGE = Path(__file__).parent


def _hash(*parts: str | bytes) -> str:
    digest = hashlib.blake2b(digest_size=16)
    for part in parts:
        digest.update(part.encode() if isinstance(part, str) else part)
        digest.update(b"\0")
    return digest.hexdigest()


@dataclass(frozen=True)
class Unit:
    """One outermost function of a file: its lines (decorators included) and its digest."""

    first: int
    last: int
    digest: str
    name: str = ""
    refs: frozenset[str] = frozenset()  # the names its body uses (what it may call)


@dataclass(frozen=True)
class SourceDigest:
    """A Python file as the cache sees it: its import-time code, and its functions."""

    skeleton: str
    units: tuple[Unit, ...] = ()
    starts: tuple[int, ...] = field(default=(), repr=False)
    at_import: frozenset[str] = frozenset()  # names the import-time code uses (what it may call)
    quiet: bool = False  # its import-time code only imports and defines (calls pytest at most)

    def unit_at(self, line: int) -> Unit | None:
        """The function that holds `line` (None: module-level code)."""
        index = bisect.bisect_right(self.starts, line) - 1
        if index >= 0 and self.units[index].first <= line <= self.units[index].last:
            return self.units[index]
        return None


@dataclass(frozen=True)
class TreeDigest:
    """The project as the guard sees it in a scratch copy."""

    whole: str
    shared: str
    sources: dict[str, SourceDigest] = field(default_factory=dict, compare=False)


def source_digest(text: str) -> SourceDigest:
    """Split a Python source into its import-time code and its outermost functions."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return SourceDigest(_hash("unparsed", text))
    units: list[Unit] = []
    at_import: set[str] = set()
    run_at_import: list[ast.AST] = []  # every expression evaluated at import

    def visit(body: list[ast.stmt]) -> list[ast.stmt]:
        kept: list[ast.stmt] = []
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                # The whole definition is the unit. A function matters to a mutant where its
                # tests run it, and then its unit is in the mutant's key (a new function that
                # shadows an old one too: the new baseline reaches it). Its decorators and
                # defaults run at import, where nothing is traced.
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                units.append(
                    Unit(first, node.end_lineno or node.lineno, _hash(ast.dump(node)), node.name, _names(node.body))
                )
                evaluated = [
                    *node.decorator_list,
                    *node.args.defaults,
                    *(d for d in node.args.kw_defaults if d is not None),
                ]
                at_import.update(_names(evaluated))
                run_at_import.extend(evaluated)
                continue
            if isinstance(node, ast.ClassDef):
                node.body = visit(node.body) or [ast.Pass()]
                at_import.update(_names([*node.decorator_list, *node.bases, *node.keywords]))
                run_at_import.extend([*node.decorator_list, *node.bases, *node.keywords])
            elif not _is_main_block(node):
                # Code run as a script is traced; code run at import is not.
                at_import.update(_names([node]))
                run_at_import.append(node)
            kept.append(node)
        return kept

    tree.body = visit(tree.body)
    units.sort(key=lambda unit: unit.first)
    return SourceDigest(
        _hash(ast.dump(tree)),
        tuple(units),
        tuple(u.first for u in units),
        frozenset(at_import),
        all(_quiet(node) for node in run_at_import),
    )


def _quiet(node: ast.AST) -> bool:
    """Code that changes nothing outside its module when it runs: imports, definitions and
    assignments whose only calls are pytest's (marks, fixtures)."""
    if isinstance(node, (ast.Import, ast.ImportFrom, ast.Pass)):
        return True
    if isinstance(node, ast.ClassDef):
        return True  # its parts are checked one by one
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.Expr, ast.expr, ast.keyword)):
        for inner in ast.walk(node):
            if isinstance(inner, ast.Call) and _root_name(inner.func) != "pytest":
                return False
            if isinstance(inner, (ast.Await, ast.Yield, ast.YieldFrom, ast.NamedExpr)):
                return False
        return True
    return False


def _root_name(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Call)):
        node = node.value if isinstance(node, ast.Attribute) else node.func
    return node.id if isinstance(node, ast.Name) else None


def is_test_module(relative: str) -> bool:
    """A file pytest collects tests from by default (test_*.py, *_test.py)."""
    name = Path(relative).name
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def _names(nodes: list) -> frozenset[str]:
    """Every name and attribute name the code of `nodes` uses."""
    found = set()
    for root in nodes:
        for node in ast.walk(root):
            if isinstance(node, ast.Name):
                found.add(node.id)
            elif isinstance(node, ast.Attribute):
                found.add(node.attr)
    return frozenset(found)


def _is_main_block(node: ast.stmt) -> bool:
    """`if __name__ == "__main__":`"""
    test = getattr(node, "test", None)
    return (
        isinstance(node, ast.If)
        and isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and any(isinstance(c, ast.Constant) and c.value == "__main__" for c in test.comparators)
    )


def run_at_import(sources: dict[str, SourceDigest]) -> list[tuple[str, Unit]]:
    """The functions import-time code may call (the code a test's trace never sees), by name,
    and what those call in turn: a change to them may change every mutant's verdict."""
    by_name: dict[str, list[tuple[str, Unit]]] = {}
    for file, source in sources.items():
        for unit in source.units:
            by_name.setdefault(unit.name, []).append((file, unit))
    wanted = set().union(*(source.at_import for source in sources.values())) if sources else set()
    done: set[str] = set()
    found = []
    while wanted - done:
        name = (wanted - done).pop()
        done.add(name)
        for file, unit in by_name.get(name, ()):
            found.append((file, unit))
            wanted |= unit.refs
    return sorted(found, key=lambda item: (item[0], item[1].first))


def project_files(root: Path, exclude: tuple[Path, ...] = ()) -> list[tuple[str, Path]]:
    """Every file a scratch copy of the project gets, as (relative posix path, path), sorted;
    links to folders are listed as themselves (a copy keeps them as links)."""
    exclude = tuple(Path(os.path.abspath(p)) for p in exclude)
    found = []
    for folder, dirs, names in os.walk(root):
        skipped = not_copied(folder, dirs + names, exclude)
        links = {d for d in dirs if d not in skipped and os.path.islink(os.path.join(folder, d))}
        dirs[:] = sorted(d for d in dirs if d not in skipped and d not in links)
        for name in sorted((set(names) - skipped) | links):
            path = Path(folder) / name
            found.append((path.relative_to(root).as_posix(), path))
    return sorted(found)


def digest_tree(root: Path, exclude: tuple[Path, ...] = ()) -> TreeDigest:
    """The digests of the project at `root` (without `exclude`: the cache, the reports)."""
    whole = hashlib.blake2b(digest_size=16)
    shared = hashlib.blake2b(digest_size=16)
    sources: dict[str, SourceDigest] = {}
    for relative, path in project_files(root, exclude):
        if path.is_symlink() and not path.is_file():
            content = b"link:" + os.readlink(path).encode(errors="surrogateescape")
        else:
            try:
                content = path.read_bytes()
            except OSError as error:
                content = f"unreadable:{error.errno}".encode()
        for digest in (whole, shared) if not relative.endswith(".py") else (whole,):
            digest.update(relative.encode() + b"\0" + _hash(content).encode() + b"\0")
        if relative.endswith(".py"):
            text = content.decode("utf-8", errors="surrogateescape")
            source = source_digest(text)
            sources[relative] = source
            if Path(relative).name == "conftest.py":
                shared.update(relative.encode() + b"\0" + _hash(text).encode() + b"\0")
            elif not (source.quiet and is_test_module(relative)):
                shared.update(relative.encode() + b"\0" + source.skeleton.encode() + b"\0")
            # else: a test module that only imports and defines belongs to its own tests' keys
    for file, unit in run_at_import(sources):
        shared.update(f"import-time {file} {unit.digest}\0".encode())
    return TreeDigest(whole.hexdigest(), shared.hexdigest(), sources)


def tool_digest() -> str:
    """This trainwreck: its version and the code that runs campaigns (the injector, not its
    bundled demo, and the shared `trainwreck` plumbing)."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(__version__.encode())
    for package in (PACKAGE, Path(trainwreck.__file__).parent):
        for path in sorted(package.rglob("*.py")):
            if "demo" in path.relative_to(package).parts:
                continue
            name = f"{package.name}/{path.relative_to(package).as_posix()}"
            digest.update(name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def environment_digest() -> str:
    """The Python and the distributions installed in its site-packages (names and versions,
    from their `.dist-info` folder names: no metadata file is read). The current folder is
    left out: where a command runs from changes no verdict."""
    folders = {sysconfig.get_paths()[name] for name in ("purelib", "platlib")}
    folders.update(site.getsitepackages())
    if site.ENABLE_USER_SITE:
        folders.add(site.getusersitepackages())
    installed: set[str] = set()
    for entry in sorted(folders):
        try:
            names = os.listdir(entry)
        except OSError:
            continue
        installed.update(n for n in names if n.endswith((".dist-info", ".egg-info", ".egg-link", ".pth")))
    return _hash(sys.version, platform.machine(), *sorted(installed))


def settings_digest(*, guard: str, timeout_factor: float, repeat: int, fresh: bool, threads: int, device: str) -> str:
    """Everything outside the project that a verdict depends on."""
    return _hash(
        SCHEMA,
        tool_digest(),
        environment_digest(),
        guard,
        repr(float(timeout_factor)),
        str(repeat),
        str(fresh),
        str(threads),
        device,
    )


def mutant_key(
    settings: str, tree: TreeDigest, mutant_id: str, file: str, lines: set[int], tests: list[tuple[str, frozenset]]
) -> str:
    """The cache key of one mutant: the settings and shared code, the mutant, the code it
    mutates (`lines` of `file`), and each guard test that reaches it with the units it ran."""
    units: set[tuple[str, str]] = set()
    own = tree.sources.get(file)
    for line in lines:
        unit = own.unit_at(line) if own is not None else None
        units.add((file, unit.digest if unit is not None else "module"))
    for name, reached in tests:
        test_file = name.split("::", 1)[0]
        source = tree.sources.get(test_file)
        if source is not None:
            units.add((test_file, "module " + source.skeleton))
        for reached_file, line in reached:
            source = tree.sources.get(reached_file)
            unit = source.unit_at(line) if source is not None else None
            if unit is not None:
                units.add((reached_file, unit.digest))
    return _hash(
        settings, tree.shared, mutant_id, *sorted(name for name, _ in tests), *(f"{f}:{d}" for f, d in sorted(units))
    )
