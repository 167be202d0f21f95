"""The project's other modules, where an operator needs to read one.

A training script mostly builds its model from a class of another module of the same project
(`from model import QNetwork`). Whether switching that model's mode changes anything depends on
the class's definition there, so operators can ask for the module a file imports: `Neighbours`
finds it the way Python would from the file's folder or the project's root, reads and parses it
once, and answers None for anything outside the project (an installed package, a missing file,
one that does not parse).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from pathlib import Path

from injector.source import ParseError, Source

Reader = Callable[[str], "str | None"]  # a posix path relative to the project root -> its text, or None

MAX_BYTES = 2_000_000  # a module this large is data, not a model's definition


def folder_reader(root: Path) -> Reader:
    """Read project files from the file system under `root` (nothing outside it)."""
    base = root.resolve()

    def read(relative: str) -> str | None:
        path = (base / relative).resolve()
        if not path.is_relative_to(base) or not path.is_file():
            return None
        try:
            if path.stat().st_size > MAX_BYTES:
                return None
            return path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    return read


def mapping_reader(files: dict[str, str]) -> Reader:
    """Read project files from a mapping of relative paths to texts (tests, the corpus)."""
    return files.get


class Neighbours:
    """The modules a file at `relative` (posix, from the project root) can import from the project."""

    def __init__(self, relative: str, read: Reader, cache: dict[str, Source | None] | None = None) -> None:
        self.folder = posixpath.dirname(relative)
        self.read = read
        self._cache = cache if cache is not None else {}

    def module(self, name: str, level: int = 0) -> Source | None:
        """The parsed module `from <level dots><name> import ...` names, or None outside the project."""
        parts = [p for p in name.split(".") if p]
        if level:
            folder = self.folder
            for _ in range(level - 1):
                folder = posixpath.dirname(folder)
            bases = [folder]
        else:
            bases = [self.folder, "", "src"]  # beside the file (a script), the root, a src layout
        for base in bases:
            stem = posixpath.join(base, *parts) if parts else base
            for candidate in (f"{stem}.py", posixpath.join(stem, "__init__.py")):
                source = self._parsed(posixpath.normpath(candidate))
                if source is not None:
                    return source
        return None

    def beside(self, source: Source) -> Neighbours:
        """The neighbours of another module of the project (to follow its own imports)."""
        return Neighbours(source.path, self.read, self._cache)

    def _parsed(self, relative: str) -> Source | None:
        if relative.startswith("../") or relative == "..":
            return None
        if relative not in self._cache:
            text = self.read(relative)
            try:
                self._cache[relative] = Source(text, relative) if text is not None else None
            except ParseError:
                self._cache[relative] = None
        return self._cache[relative]
