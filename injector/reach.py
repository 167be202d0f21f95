"""Which of the project's functions a guard reaches: the map that lets a mutant run only
the tests that can kill it.

A function is named as a mutant names it: (file relative to the project, co_qualname,
co_firstlineno). Code run at import is `<module>`; a file run as a script is `<main>`.
Recording uses a global trace function that only looks at 'call' events and never traces
lines, so the cost is one check per Python call, and only during the baseline.
Processes the guard starts (`mp.spawn`, torchrun) record too, through `sitecustomize`.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path

Key = tuple[str, str, int]
MODULE, MAIN = "<module>", "<main>"
ENV_DIR, ENV_ROOTS = "TRAINWRECK_REACH_DIR", "TRAINWRECK_REACH_ROOTS"
SITE = Path(__file__).parent / "reach_site"


def mutant_key(file: str, function: str | None, function_line: int | None, in_main: bool) -> Key:
    """The key a mutant needs some guard test to reach."""
    if in_main:
        return (file, MAIN, 0)
    if function is None:
        return (file, MODULE, 0)
    return (file, function, function_line or 0)


class Tracer:
    """Records the functions under `roots` that run, until `take()` hands them over."""

    def __init__(self, roots: list[str], sink_dir: str | None = None) -> None:
        self.roots = tuple(os.path.join(os.path.realpath(r), "") for r in roots)
        self.seen: set[object] = set()  # code objects already recorded since the last take
        self.found: set[Key] = set()
        self._relative: dict[str, str | None] = {}
        self._sink = None
        if sink_dir is not None:
            self.sink_to(sink_dir)

    def sink_to(self, directory: str) -> None:
        """Also append each new function to `directory/<pid>.jsonl` the moment it is reached,
        so what a process reached survives `os._exit` and kills (forked ranks end that way)."""
        self.seen, self.found = set(), set()
        self._sink = open(os.path.join(directory, f"{os.getpid()}.jsonl"), "a", buffering=1)  # noqa: SIM115

    def follow_forks(self, directory: str) -> None:
        """In every process forked from here, record into that process's own file."""
        os.register_at_fork(after_in_child=lambda: self.sink_to(directory))

    def start(self) -> None:
        sys.settrace(self._trace)
        threading.settrace(self._trace)

    def stop(self) -> None:
        sys.settrace(None)
        threading.settrace(None)  # type: ignore[arg-type]

    def take(self) -> set[Key]:
        found, self.found, self.seen = self.found, set(), set()
        return found

    def _trace(self, frame, event, arg):
        code = frame.f_code
        if code in self.seen:
            return None
        self.seen.add(code)
        relative = self._relative.get(code.co_filename, "")
        if relative == "":
            relative = self._relative[code.co_filename] = self._under_roots(code.co_filename)
        if relative is not None:
            if code.co_name == "<module>":
                main = frame.f_globals.get("__name__") == "__main__"
                key = (relative, MAIN, 0) if main else (relative, MODULE, 0)
            else:
                key = (relative, code.co_qualname, code.co_firstlineno)
            self.found.add(key)
            if self._sink is not None:
                self._sink.write(json.dumps(key) + "\n")
        return None

    def _under_roots(self, filename: str) -> str | None:
        path = os.path.realpath(filename)
        for root in self.roots:
            if path.startswith(root):
                return path[len(root):].replace(os.sep, "/")
        return None


def subprocess_environment(directory: Path, roots: list[str]) -> dict[str, str]:
    """Variables that make Python processes started by a guard record what they reach."""
    path = os.environ.get("PYTHONPATH")
    return {
        ENV_DIR: str(directory),
        ENV_ROOTS: os.pathsep.join(roots),
        "PYTHONPATH": str(SITE) + (os.pathsep + path if path else ""),
    }


def collect_subprocess_reach(directory: Path) -> set[Key]:
    """What processes started or forked by the guard recorded (and forget it)."""
    found: set[Key] = set()
    for file in directory.glob("*.jsonl"):
        try:
            lines = file.read_text().splitlines()
        except OSError:
            continue
        for line in lines:
            try:
                found.add(tuple(json.loads(line)))  # type: ignore[arg-type]
            except ValueError:
                pass  # a line cut short by a kill
        file.unlink(missing_ok=True)
    return found


def start_in_subprocess() -> None:
    """Called from sitecustomize in a process the guard started."""
    directory = os.environ.get(ENV_DIR)
    roots = os.environ.get(ENV_ROOTS)
    if not directory or not roots:
        return
    tracer = Tracer(roots.split(os.pathsep), sink_dir=directory)
    tracer.follow_forks(directory)
    tracer.start()
