"""Which lines of the project a guard runs: the map that lets a mutant run only the tests
that can kill it, and that tells `no_coverage` apart from a survivor.

Reach is recorded per line, as (file relative to the project, line number). A line says more
than a function does: a step function nested in a factory, or an `if use_amp:` branch the CPU
never takes, is covered only where a test really executes it. Code run as a script is also
recorded under the key (file, `<main>`), so a mutant in `if __name__ == "__main__":` is only
run by the tests that ran the file as a script.

The recorder is a trace function that only turns on line events for frames of project code,
and only during the baseline. Processes the guard forks or starts (`mp.spawn`, torchrun,
`subprocess.run([sys.executable, ...])`) record too: forked ones through an at-fork hook,
started ones through `sitecustomize` on PYTHONPATH. Each process appends what it reaches to
its own file, so a rank ended by `os._exit` or a kill has still left its record.
"""

from __future__ import annotations

import ast
import bisect
import io
import json
import os
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

Line = tuple[str, int]
MAIN = "<main>"
ENV_DIR, ENV_ROOTS = "TRAINWRECK_REACH_DIR", "TRAINWRECK_REACH_ROOTS"
SITE = Path(__file__).parent / "reach_site"


@dataclass
class Reach:
    """What one guard test ran: project lines, and the files it ran as a script."""

    lines: set[Line] = field(default_factory=set)
    scripts: set[str] = field(default_factory=set)

    def update(self, other: Reach) -> None:
        self.lines |= other.lines
        self.scripts |= other.scripts

    def to_json(self) -> dict[str, list]:
        return {"lines": sorted(self.lines), "scripts": sorted(self.scripts)}

    @classmethod
    def from_json(cls, data: dict) -> Reach:
        return cls({(f, n) for f, n in data.get("lines", ())}, set(data.get("scripts", ())))


class Tracer:
    """Records the project lines that run, until `take()` hands them over."""

    def __init__(self, roots: list[str], sink_dir: str | None = None) -> None:
        self.roots = tuple(os.path.join(os.path.realpath(r), "") for r in roots)
        self.reach = Reach()
        self._relative: dict[str, str | None] = {}
        self._seen: dict[object, set[int]] = {}  # code object -> lines already recorded
        self._sink: io.TextIOWrapper | None = None
        if sink_dir is not None:
            self.sink_to(sink_dir)

    def sink_to(self, directory: str) -> None:
        """Also append each new line to `directory/<pid>.jsonl` the moment it runs."""
        self.reach, self._seen = Reach(), {}
        self._sink = open(os.path.join(directory, f"{os.getpid()}.jsonl"), "a", buffering=1)  # noqa: SIM115

    def follow_forks(self, directory: str) -> None:
        """In every process forked from here, record into that process's own file."""
        os.register_at_fork(after_in_child=lambda: self.sink_to(directory))

    def start(self) -> None:
        threading.settrace(self._call)
        sys.settrace(self._call)

    def stop(self) -> None:
        sys.settrace(None)
        threading.settrace(None)

    def take(self) -> Reach:
        reach, self.reach, self._seen = self.reach, Reach(), {}
        return reach

    def _call(self, frame, event, arg):
        code = frame.f_code
        relative = self._relative.get(code.co_filename, "")
        if relative == "":
            relative = self._relative[code.co_filename] = self._under_roots(code.co_filename)
        if relative is None:
            return None  # library code: no line events at all
        seen = self._seen.get(code)
        if seen is None:
            seen = self._seen[code] = set()
            if code.co_name == "<module>" and frame.f_globals.get("__name__") == "__main__":
                self.reach.scripts.add(relative)
                self._write(["script", relative])

        def line(frame, event, arg):
            if event == "line" and frame.f_lineno not in seen:
                seen.add(frame.f_lineno)
                self.reach.lines.add((relative, frame.f_lineno))
                self._write([relative, frame.f_lineno])
            return line

        return line

    def _write(self, record: list) -> None:
        if self._sink is not None:
            self._sink.write(json.dumps(record) + "\n")

    def _under_roots(self, filename: str) -> str | None:
        path = os.path.realpath(filename)
        for root in self.roots:
            if path.startswith(root):
                return path[len(root) :].replace(os.sep, "/")
        return None


def mutant_lines(source: str, edits) -> set[int]:
    """The lines a test must run for a mutant to take effect: the lines its edits touch, and
    the whole of each simple statement they touch (Python reports a multi-line statement on
    the lines of its parts, not always on the line an edit falls on)."""
    starts = [0]
    for index, char in enumerate(source):
        if char == "\n":
            starts.append(index + 1)

    def line_of(offset: int) -> int:
        return bisect.bisect_right(starts, offset)

    lines: set[int] = set()
    spans = []
    for edit in edits:
        first, last = line_of(edit.start), line_of(max(edit.start, edit.end - 1))
        lines.update(range(first, last + 1))
        spans.append((first, last))
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return lines
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.stmt)
            and not hasattr(node, "body")
            and node.end_lineno is not None
            and any(node.lineno <= last and first <= node.end_lineno for first, last in spans)
        ):
            lines.update(range(node.lineno, node.end_lineno + 1))
    return lines


def subprocess_environment(directory: Path, roots: list[str]) -> dict[str, str]:
    """Variables that make Python processes started by a guard record what they reach."""
    path = os.environ.get("PYTHONPATH")
    return {
        ENV_DIR: str(directory),
        ENV_ROOTS: os.pathsep.join(roots),
        "PYTHONPATH": str(SITE) + (os.pathsep + path if path else ""),
    }


def collect_subprocess_reach(directory: Path) -> Reach:
    """What processes started or forked by the guard recorded (and forget it)."""
    found = Reach()
    for file in directory.glob("*.jsonl"):
        try:
            lines = file.read_text().splitlines()
        except OSError:
            continue
        for text in lines:
            try:
                first, second = json.loads(text)
            except ValueError:
                continue  # a line cut short by a kill
            if first == "script":
                found.scripts.add(second)
            else:
                found.lines.add((first, int(second)))
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
