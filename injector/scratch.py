"""Scratch copies of the project: where mutants are written, so the user's tree never is.

A campaign copies the project once per job slot into one scratch folder. Three rules keep the
user's files safe and the copies honest:

- A source file that is a symbolic link is copied as a regular file: a mutant written into a
  copy must never reach the file the link points to (which may be outside the project).
- Every write into a copy replaces the file (write a sibling, then rename), so even a link
  that appears later is replaced, not written through, and a write that would land outside
  the slot is refused.
- No bytecode is trusted: a copy starts without `__pycache__`, and each write removes the
  cached bytecode of the file, so no process can import a stale module.

The scratch folder holds an `owner` file (pid and start time). A campaign that was killed
with SIGKILL cannot clean up; the next campaign removes every scratch folder whose owner is
gone.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from trainwreck import processes
from trainwreck.errors import TrainwreckError

PREFIX = "trainwreck-"
NOT_COPIED = {
    ".git",
    ".hg",
    ".svn",
    "__pycache__",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    ".tox",
    ".nox",
    "node_modules",
    "trainwreck-report",
    ".venv",
    "venv",
    ".trainwreck-cache",
}


class ScratchError(TrainwreckError):
    """A scratch copy cannot be made or written."""


def create() -> Path:
    """A new scratch folder owned by this process (stale ones from killed campaigns go first)."""
    remove_stale()
    folder = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-"))
    (folder / "owner").write_text(processes.identity(os.getpid()) or str(os.getpid()))
    return folder


def remove_stale(directory: str | None = None) -> list[Path]:
    """Delete scratch folders whose owning campaign no longer runs; returns what was removed."""
    removed: list[Path] = []
    base = Path(directory or tempfile.gettempdir())
    try:
        entries = list(base.glob(f"{PREFIX}*"))
    except OSError:
        return removed
    for entry in entries:
        try:
            owner = entry / "owner"
            pid, written = owner.read_text().split()[0], owner.stat().st_mtime
        except (OSError, IndexError):
            continue  # not one of ours, or not readable: leave it
        if not pid.isdigit() or _still_owned(int(pid), written):
            continue
        shutil.rmtree(entry, ignore_errors=True)
        removed.append(entry)
    return removed


def _still_owned(pid: int, written: float) -> bool:
    """Whether process `pid` is the campaign that wrote its owner file at time `written`: it runs,
    and it started before then (a pid reused by a younger process is not the owner). Only the
    pid of the file is read, so folders written by any version of trainwreck are judged alike."""
    started = processes.start_time(pid)
    return started is not None and started <= written + 1.0


def not_copied(folder: str | Path, names: list[str], exclude: tuple[Path, ...] = ()) -> set[str]:
    """Which of `names` (entries of `folder`) a scratch copy leaves out: tool caches,
    virtualenvs, reports, and the paths in `exclude` (a cache folder given by the user)."""
    skipped = {n for n in names if n in NOT_COPIED or n.endswith(".egg-info")}
    skipped.update(n for n in names if (Path(folder) / n / "pyvenv.cfg").exists())
    if exclude:
        skipped.update(n for n in names if Path(os.path.abspath(Path(folder) / n)) in exclude)
    return skipped


def copy_project(root: Path, target: Path, exclude: tuple[Path, ...] = ()) -> None:
    """Copy the project to `target`, without what `not_copied` leaves out. Links stay links
    (a data folder is not copied), pointed at the same place the original points to; links
    to Python files become regular files."""
    exclude = tuple(Path(os.path.abspath(p)) for p in exclude)

    def ignore(folder: str, names: list[str]) -> set[str]:
        return not_copied(folder, names, exclude)

    real_root = os.path.join(os.path.realpath(root), "")
    try:
        shutil.copytree(root, target, ignore=ignore, symlinks=True)
        for folder, dirs, names in os.walk(target):
            for name in dirs + names:
                path = Path(folder) / name
                if not path.is_symlink():
                    continue
                original = root / path.relative_to(target)
                if name.endswith(".py") and original.is_file():
                    replace_file(path, original.read_bytes())
                    continue
                pointed = os.readlink(path)
                resolved = os.path.realpath(original)
                if not os.path.isabs(pointed) and not os.path.join(resolved, "").startswith(real_root):
                    path.unlink()
                    path.symlink_to(resolved)  # relative to the original place, not the copy
    except (OSError, shutil.Error) as error:
        raise ScratchError(f"cannot copy the project to a scratch folder: {error}") from None


def replace_file(path: Path, data: bytes) -> None:
    """Give `path` the content `data` by renaming a new file over it (links are replaced)."""
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


class Snapshot:
    """The files of a slot as copied, so that what a guard run leaves behind (a checkpoint, a
    config file written into the project, a changed file) can be undone before the next run:
    each mutant meets the project as a fresh copy would have it."""

    def __init__(self, slot: Path, root: Path) -> None:
        self.slot, self.root = slot, root
        self.files = self._scan()

    def _scan(self) -> dict[str, tuple[int, int]]:
        found = {}
        for folder, dirs, names in os.walk(self.slot):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for name in names:
                path = os.path.join(folder, name)
                try:
                    stat = os.lstat(path)
                except OSError:
                    continue
                found[os.path.relpath(path, self.slot)] = (stat.st_size, stat.st_mtime_ns)
        return found

    def restore(self, keep: tuple[str, ...] = ()) -> None:
        """Delete what appeared since the copy and copy back what changed (but `keep`)."""
        now = self._scan()
        for relative in now.keys() - self.files.keys():
            (self.slot / relative).unlink(missing_ok=True)
        for folder, dirs, _ in os.walk(self.slot, topdown=False):
            for name in dirs:
                path = Path(folder) / name
                if (
                    not path.is_symlink()
                    and not any(path.iterdir())
                    and not (self.root / path.relative_to(self.slot)).is_dir()
                ):
                    path.rmdir()
        for relative, before in self.files.items():
            if relative in keep and relative in now:
                self.files[relative] = now[relative]
                continue
            if now.get(relative) == before:
                continue
            source = self.root / relative
            target = self.slot / relative
            if source.is_file() and not target.is_symlink():
                target.parent.mkdir(parents=True, exist_ok=True)
                replace_file(target, source.read_bytes())
                stat = os.lstat(target)
                self.files[relative] = (stat.st_size, stat.st_mtime_ns)


def _unfold_folders(slot: Path, relative: Path) -> None:
    """Replace each linked folder on the way to `slot/relative` by a real folder of links to
    its entries, so the file at the end can be replaced inside the slot."""
    current = slot
    for part in relative.parts:
        current = current / part
        if current.is_symlink() and current.is_dir():
            target = current.resolve()
            current.unlink()
            current.mkdir()
            for entry in target.iterdir():
                (current / entry.name).symlink_to(entry)


def write_source(slot: Path, relative: str, text: str) -> Path:
    """Write `text` as `slot/relative`, never outside the slot, and drop its cached bytecode."""
    if Path(relative).is_absolute() or ".." in Path(relative).parts:
        raise ScratchError(f"refusing to write {relative}: not a path inside the project")
    path = slot / relative
    _unfold_folders(slot, Path(relative).parent)
    real_slot = os.path.join(os.path.realpath(slot), "")
    if not os.path.join(os.path.realpath(path.parent), "").startswith(real_slot):
        raise ScratchError(f"refusing to write {relative}: its folder lies outside the scratch copy")
    replace_file(path, text.encode())
    cache = path.parent / "__pycache__"
    if cache.is_dir():
        for stale in cache.glob(f"{path.stem}.*.pyc"):
            stale.unlink(missing_ok=True)
    return path
