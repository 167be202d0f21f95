"""Running a guard: pytest tests in this (warm) process, a Python script or module in this
process as `python` would run it, or any command in a fresh process.

"Warm" runs happen inside a forked child of a worker that has already imported the guard's
libraries (torch, the test modules), so a mutant pays only for the guard's own work.
"""

from __future__ import annotations

import atexit
import importlib.abc
import os
import runpy
import shlex
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from injector.worker.output import MESSAGE_LIMIT, report_message
from trainwreck import imports

PYTHON_NAMES = ("python", "python3", Path(sys.executable).name)
# Interpreter options a warm run can honour (they change nothing a forked child must redo).
HARMLESS_FLAGS = ("-u", "-B")


@dataclass(frozen=True)
class Sequence:
    """How a run of pytest items went: how many ran, the first failure (if any), its message."""

    ran: int
    seconds: float
    failed: str | None = None
    message: str | None = None
    skipped: bool = False


def run_items(items: list, stop_at_failure: bool = True, transcript: list[str] | None = None) -> Sequence:
    """Run pytest items in order in this process (fixtures set up and torn down as pytest does).

    With `transcript`, what the run printed is appended to it as pytest would show it: each
    test's captured output and, for a failure, its traceback (`E   ` lines)."""
    import time

    from _pytest.runner import runtestprotocol

    spent = 0.0
    for index, item in enumerate(items):
        following = items[index + 1] if index + 1 < len(items) else None
        started = time.perf_counter()
        reports = runtestprotocol(item, log=False, nextitem=following)
        spent += time.perf_counter() - started
        failed = next((r for r in reports if r.failed), None)
        if transcript is not None:
            transcript.append(item_transcript(item.nodeid, reports))
        if failed is not None and stop_at_failure:
            return Sequence(index + 1, spent, item.nodeid, report_message(failed))
    return Sequence(len(items), spent)


def item_transcript(nodeid: str, reports: list) -> str:
    """One test's part of a pytest run's output: its captured output, phase by phase, and for
    a failure the traceback pytest prints and its `FAILED` summary line."""
    parts = []
    failed = None
    for report in reports:
        # A report carries the sections of the phases before it too: keep each phase's own.
        for title, content in report.sections:
            if title.endswith(f" {report.when}") and content:
                parts.append(f"{f' {title} ':-^72}\n{content.rstrip()}\n")
        if report.failed and failed is None:
            failed = report
    status = "FAILED" if failed is not None else "PASSED"
    head = f"{nodeid} {status}\n"
    if failed is None:
        return head + "".join(parts)
    trace = f"{f' {nodeid} ':_^72}\n{failed.longreprtext.rstrip()}\n"
    return head + "".join(parts) + trace + f"FAILED {nodeid} - {report_message(failed)}\n"


def item_outcome(item, following) -> tuple[str, str | None]:
    """'passed', 'failed' or 'skipped' for one pytest item run here, and a failure's message."""
    from _pytest.runner import runtestprotocol

    reports = runtestprotocol(item, log=False, nextitem=following)
    failed = next((r for r in reports if r.failed), None)
    if failed is not None:
        return "failed", report_message(failed)
    return ("skipped" if any(r.skipped for r in reports) else "passed"), None


@dataclass(frozen=True)
class PythonCommand:
    """A guard of the form `python [-u] script.py ARGS` or `python [-u] -m module ARGS`."""

    target: str
    is_module: bool
    args: tuple[str, ...]

    @classmethod
    def parse(cls, text: str) -> PythonCommand | None:
        """The command as a script or module run, or None if it is anything else."""
        try:
            argv = shlex.split(text)
        except ValueError:
            return None
        if argv[:1] == ["env"]:
            argv = argv[1:]
        if not argv or Path(argv[0]).name not in PYTHON_NAMES:
            return None
        rest = argv[1:]
        while rest and rest[0] in HARMLESS_FLAGS:
            rest = rest[1:]
        if len(rest) >= 2 and rest[0] == "-m":
            if rest[1] == "pytest" or rest[1].startswith("torch.distributed"):
                return None
            return cls(rest[1], True, tuple(rest[2:]))
        if rest and not rest[0].startswith("-") and rest[0].endswith(".py"):
            return cls(rest[0], False, tuple(rest[1:]))
        return None

    def run_here(self, cwd: Path) -> int:
        """Run it in this process as `python` would; returns the exit code it would have."""
        os.chdir(cwd)
        if self.is_module:
            sys.argv = [self.target, *self.args]  # runpy sets argv[0] to the module's file
            sys.path[0] = str(cwd)
        else:
            script = (cwd / self.target).resolve() if not Path(self.target).is_absolute() else Path(self.target)
            sys.argv = [self.target, *self.args]
            sys.path[0] = str(script.parent)
        code = 0
        try:
            if self.is_module:
                runpy.run_module(self.target, run_name="__main__", alter_sys=True)
            else:
                runpy.run_path(str(script), run_name="__main__")
        except SystemExit as leaving:
            code = _exit_code(leaving.code)
        except BaseException:
            sys.excepthook(*sys.exc_info())
            code = 1
        try:
            threading._shutdown()  # type: ignore[attr-defined]  # wait for non-daemon threads, as python does
            atexit._run_exitfuncs()
        except BaseException:
            code = code or 1
        sys.stdout.flush()
        sys.stderr.flush()
        return code


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def redirect_output(path: Path) -> None:
    """Send this process's stdout and stderr (Python's and the file descriptors) to `path`."""
    log = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    sys.stdout = open(1, "w", closefd=False, buffering=1)  # noqa: SIM115
    sys.stderr = open(2, "w", closefd=False, buffering=1)  # noqa: SIM115


def run_fresh(argv: list[str], cwd: Path) -> tuple[int, str]:
    """Run a command in a new process; its exit code and output."""
    result = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, errors="replace", stdin=subprocess.DEVNULL)
    return result.returncode, result.stdout + result.stderr


def pytest_argv(options: list[str], tests: list[str]) -> list[str]:
    return [sys.executable, "-m", "pytest", *options, "-x", "-q", "-rf", "-p", "no:cacheprovider", *tests]


class ImportWatch(importlib.abc.MetaPathFinder):
    """Notices when importing one file raises: a mutant that does not import is an error of
    the mutant, not a kill by the guard."""

    def __init__(self, path: Path) -> None:
        self.path = os.path.realpath(path)
        self.failure: str | None = None

    def install(self) -> None:
        sys.meta_path.insert(0, self)

    def find_spec(self, name, path=None, target=None):
        spec = imports.spec_elsewhere(self, name, path, target)
        if spec is not None and spec.origin and os.path.realpath(spec.origin) == self.path and spec.loader is not None:
            spec.loader = _WatchedLoader(spec.loader, self)
        return spec


class _WatchedLoader(importlib.abc.Loader):
    def __init__(self, loader, watch: ImportWatch) -> None:
        self.loader = loader
        self.watch = watch

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module) -> None:
        try:
            self.loader.exec_module(module)
        except BaseException as error:
            self.watch.failure = f"{type(error).__name__}: {error}"[:MESSAGE_LIMIT]
            raise

    def __getattr__(self, name):
        return getattr(self.loader, name)
