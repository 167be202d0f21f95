"""Fingerprints of what a mutant's verdict depends on, for the outcome cache.

Three layers, from coarse to fine:

- the **settings**: this trainwreck's own code, the Python and the installed packages, the
  guard, and every campaign setting that can change a verdict (timeout factor, baseline
  repetitions, warm or fresh, each slot's thread count, the device);
- the **tree**: every file a scratch copy of the project gets. Its `whole` digest changes with
  any byte; its `shared` digest covers what every mutant depends on: the files that are not
  Python (configuration, data), the code of every Python module that runs at import (imports,
  constants, class bodies, function signatures and decorators), and every `conftest.py` whole
  (its hooks run while pytest collects, where nothing is traced);
- the **units**: each outermost function (methods included) of every Python file, compared as
  syntax trees, so comments, blank lines and line shifts do not count as changes.

A mutant's cache key joins the settings, the shared digest, the mutant's id, the names of the
guard tests that reach it, and the units those tests ran in the baseline (the mutant's own
function among them): change one function and only the mutants whose tests run it run again.
"""

from __future__ import annotations

import ast
import bisect
import hashlib
import os
import platform
import sys
from dataclasses import dataclass, field
from pathlib import Path

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


@dataclass(frozen=True)
class SourceDigest:
    """A Python file as the cache sees it: its import-time code, and its functions."""

    skeleton: str
    units: tuple[Unit, ...] = ()
    starts: tuple[int, ...] = field(default=(), repr=False)

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

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                units.append(Unit(first, node.end_lineno or node.lineno, _hash(ast.dump(node))))
                node.body = [ast.Pass()]  # what is left (name, signature, decorators) runs at import
            elif isinstance(node, ast.ClassDef):
                visit(node.body)

    visit(tree.body)
    units.sort(key=lambda unit: unit.first)
    return SourceDigest(_hash(ast.dump(tree)), tuple(units), tuple(u.first for u in units))


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
            kept = _hash(text) if Path(relative).name == "conftest.py" else source.skeleton
            shared.update(relative.encode() + b"\0" + kept.encode() + b"\0")
    return TreeDigest(whole.hexdigest(), shared.hexdigest(), sources)


def tool_digest() -> str:
    """This trainwreck: its version and the code of the injector (not its bundled demo)."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(__version__.encode())
    for path in sorted(PACKAGE.rglob("*.py")):
        if "demo" in path.relative_to(PACKAGE).parts:
            continue
        digest.update(path.relative_to(PACKAGE).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def environment_digest() -> str:
    """The Python and the installed distributions (names and versions, from their
    `.dist-info` folder names: no metadata file is read)."""
    installed = set()
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        installed.update(n for n in names if n.endswith((".dist-info", ".egg-info", ".egg-link", ".pth")))
    return _hash(sys.version, platform.machine(), *sorted(installed))


def settings_digest(*, guard: str, timeout_factor: float, repeat: int, fresh: bool, threads: int,
                    device: str) -> str:
    """Everything outside the project that a verdict depends on."""
    return _hash(SCHEMA, tool_digest(), environment_digest(), guard, repr(float(timeout_factor)),
                 str(repeat), str(fresh), str(threads), device)


def mutant_key(settings: str, tree: TreeDigest, mutant_id: str, file: str, lines: set[int],
               tests: list[tuple[str, frozenset]]) -> str:
    """The cache key of one mutant: the settings and shared code, the mutant, the code it
    mutates (`lines` of `file`), and each guard test that reaches it with the units it ran."""
    units: set[tuple[str, str]] = set()
    own = tree.sources.get(file)
    for line in lines:
        unit = own.unit_at(line) if own is not None else None
        units.add((file, unit.digest if unit is not None else "module"))
    for _, reached in tests:
        for reached_file, line in reached:
            source = tree.sources.get(reached_file)
            unit = source.unit_at(line) if source is not None else None
            if unit is not None:
                units.add((reached_file, unit.digest))
    return _hash(settings, tree.shared, mutant_id, *sorted(name for name, _ in tests),
                 *(f"{f}:{d}" for f, d in sorted(units)))
