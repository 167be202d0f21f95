"""Which files of a project to mutate: Python sources, minus tests, virtualenvs and ignored files."""

from __future__ import annotations

import os
import tokenize
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path

import pathspec

from trainwreck.errors import UsageError

SKIPPED_FOLDERS = {
    "tests",
    "test",
    "testing",
    "__pycache__",
    "node_modules",
    "site-packages",
    "venv",
    "env",
    "build",
    "dist",
}
MAX_BYTES = 5_000_000  # no hand-written training file is this large


@dataclass(frozen=True)
class SourceFile:
    path: Path
    relative: str  # posix path from the project root: part of every mutant's id
    text: str


@dataclass(frozen=True)
class Skipped:
    """A file that could not be used, and why (with the line, for a parse error)."""

    relative: str
    reason: str
    line: int | None = None

    def __str__(self) -> str:
        return f"{self.relative}:{self.line}: {self.reason}" if self.line else f"{self.relative}: {self.reason}"


def is_test_file(name: str) -> bool:
    return name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"


def collect(paths: list[Path], root: Path, exclude: tuple[str, ...] = ()) -> tuple[list[SourceFile], list[Skipped]]:
    """Read the Python files named by `paths` (files, or folders walked recursively).

    A named path that does not exist, or a named file that is not text, is a `UsageError`;
    files met while walking that cannot be read are returned as `Skipped`.
    """
    excluded = pathspec.GitIgnoreSpec.from_lines(exclude)
    files: dict[Path, SourceFile] = {}
    skipped: list[Skipped] = []
    for path in paths:
        if not path.exists():
            raise UsageError(f"no such file or folder: {path}")
        if path.is_file():
            found = _read(path, _relative(path, root))
            if isinstance(found, Skipped):
                raise UsageError(f"{path}: {found.reason}")
            files[path.resolve()] = found
            continue
        for file in _walk(path, root):
            relative = _relative(file, root)
            if excluded.match_file(relative):
                continue
            found = _read(file, relative)
            if isinstance(found, Skipped):
                skipped.append(found)
            else:
                files.setdefault(file.resolve(), found)
    return sorted(files.values(), key=lambda f: f.relative), skipped


def _relative(path: Path, root: Path) -> str:
    """`path` relative to `root`, by where it stands rather than where a link points: a file
    that is a link to somewhere outside the project is still the project's file."""
    standing = Path(os.path.abspath(path))
    for base in (Path(os.path.abspath(root)), root.resolve()):
        if standing.is_relative_to(base):
            return standing.relative_to(base).as_posix()
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def _walk(folder: Path, root: Path):
    folder = folder.resolve()
    ignores = _ignores_above(folder)
    for current, dirs, names in os.walk(folder):
        here = Path(current)
        # Keep the .gitignore files of this folder's ancestors, then add its own.
        ignores = [(base, spec) for base, spec in ignores if base in here.parents]
        if (here / ".gitignore").is_file():
            ignores.append((here, _spec(here / ".gitignore")))
        dirs[:] = sorted(d for d in dirs if not _skip_folder(here / d, ignores))
        for name in sorted(names):
            file = here / name
            if name.endswith(".py") and not is_test_file(name) and not _ignored(file, ignores):
                yield file


def _skip_folder(folder: Path, ignores) -> bool:
    name = folder.name
    return (
        name.startswith(".")
        or name in SKIPPED_FOLDERS
        or name.endswith(".egg-info")
        or (folder / "pyvenv.cfg").exists()
        or _ignored(folder, ignores, is_dir=True)
    )


def _ignored(path: Path, ignores, is_dir: bool = False) -> bool:
    for base, spec in ignores:
        relative = path.relative_to(base).as_posix() + ("/" if is_dir else "")
        if spec.match_file(relative):
            return True
    return False


def _ignores_above(folder: Path) -> list[tuple[Path, pathspec.GitIgnoreSpec]]:
    """The .gitignore files in the folders above `folder`, up to its repository's root."""
    found = []
    for parent in folder.parents:
        if (parent / ".gitignore").is_file():
            found.append((parent, _spec(parent / ".gitignore")))
        if (parent / ".git").exists():
            break
    return found


def _spec(file: Path) -> pathspec.GitIgnoreSpec:
    try:
        return pathspec.GitIgnoreSpec.from_lines(file.read_text(encoding="utf-8", errors="replace").splitlines())
    except OSError:
        return pathspec.GitIgnoreSpec.from_lines([])


def _read(path: Path, relative: str) -> SourceFile | Skipped:
    try:
        if path.stat().st_size > MAX_BYTES:
            return Skipped(relative, f"larger than {MAX_BYTES // 1_000_000} MB, not a source file")
        data = path.read_bytes()
    except OSError as error:
        return Skipped(relative, f"cannot read: {error.strerror}")
    if b"\0" in data[:8192]:
        return Skipped(relative, "binary file, not Python source")
    try:
        encoding, _ = tokenize.detect_encoding(BytesIO(data).readline)
        text = data.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError):
        return Skipped(relative, "not valid UTF-8 (or its declared encoding)")
    return SourceFile(path, relative, text)
