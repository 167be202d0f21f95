"""A campaign: every mutant against the project's guards, in scratch copies, with a report.

The user's tree is only ever read: the guards run in scratch copies (one per job slot) made
before the first mutant and deleted afterwards, and mutants reach the copies through the
warm worker (`injector.worker`), never through the user's files. An interrupted or killed
campaign therefore leaves the project byte-identical.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from injector.errors import TrainwreckError, UsageError
from injector.mutants import LineIndex, Mutant
from injector import __version__
from injector.outcomes import Baseline, Outcome, Report, ordered

NOT_COPIED = {".git", ".hg", ".svn", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache",
              ".tox", ".nox", "node_modules", "trainwreck-report", ".venv", "venv"}


class CampaignError(TrainwreckError):
    """The campaign cannot start or cannot go on (a failing baseline, a missing guard...)."""


@dataclass(frozen=True)
class Guard:
    """What must fail on a mutant: a pytest run (run warm, in-process) or any command."""

    text: str
    mode: str  # "pytest" or "command"
    pytest_args: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str, root: Path) -> Guard:
        try:
            argv = shlex.split(text)
        except ValueError as error:
            raise UsageError(f"cannot read the guard command {text!r}: {error}") from None
        if not argv:
            raise UsageError("the guard command is empty")
        python = ("python", "python3", Path(sys.executable).name)
        pytest_args = None
        if argv[0] == "pytest" or argv[0].endswith("/pytest"):
            pytest_args = tuple(argv[1:])
        elif Path(argv[0]).name in python and argv[1:3] == ["-m", "pytest"]:
            pytest_args = tuple(argv[3:])
        if pytest_args is not None:
            if importlib.util.find_spec("pytest") is None:
                raise UsageError("the guard runs pytest, which is not installed in this environment")
            return cls(text, "pytest", pytest_args)
        if shutil.which(argv[0], path=os.environ.get("PATH")) is None and not (root / argv[0]).is_file():
            raise UsageError(f"the guard command {argv[0]!r} was not found")
        return cls(text, "command")

    def pytest_options(self, root: Path) -> list[str]:
        """The guard's pytest options without its test paths (fresh runs name the tests)."""
        options = []
        for arg in self.pytest_args:
            if not arg.startswith("-") and (root / arg.split("::")[0]).exists():
                continue
            options.append(arg)
        return options


@dataclass(frozen=True)
class Settings:
    root: Path
    guard: Guard
    jobs: int = 1
    timeout_factor: float = 3.0
    repeat: int = 1
    baseline_timeout: float = 600.0


def select_shard(mutants: list[Mutant], shard: tuple[int, int]) -> list[Mutant]:
    """Shard `index` of `count` (1-based), split by stable id so every runner agrees."""
    index, count = shard
    return [m for m in mutants if int(m.id, 16) % count == index - 1]


def changed_lines(root: Path, ref: str) -> dict[str, set[int]]:
    """Lines (new numbering) changed since `ref`, by path relative to `root`; untracked files
    count as changed throughout."""
    def git(*args: str) -> str:
        try:
            result = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True,
                                    errors="replace")
        except FileNotFoundError:
            raise UsageError("--since needs git, which is not installed") from None
        if result.returncode != 0:
            message = (result.stderr.strip().splitlines() or ["git failed"])[0]
            raise UsageError(f"--since {ref}: {message}")
        return result.stdout

    top = Path(git("rev-parse", "--show-toplevel").strip())
    prefix = root.resolve().relative_to(top.resolve()).as_posix()
    prefix = "" if prefix == "." else prefix + "/"
    changed: dict[str, set[int]] = {}
    current = None
    for line in git("diff", "--unified=0", "--no-color", "--no-ext-diff", ref, "--", ".").splitlines():
        if line.startswith("+++ "):
            name = line[4:].removeprefix("b/")
            current = name.removeprefix(prefix) if name != "/dev/null" else None
        elif line.startswith("@@") and current is not None:
            new = line.split("+", 1)[1].split(" ", 1)[0]
            start, _, count = new.partition(",")
            length = int(count) if count else 1
            changed.setdefault(current, set()).update(range(int(start), int(start) + max(length, 1)))
    for name in git("ls-files", "--others", "--exclude-standard", "--", ".").splitlines():
        changed[name.removeprefix(prefix)] = {0}  # every line
    return changed


def select_changed(mutants: list[Mutant], sources: dict[str, str], changed: dict[str, set[int]]) -> list[Mutant]:
    """The mutants whose edits touch a changed line."""
    kept = []
    indexes = {file: LineIndex(text) for file, text in sources.items()}
    for mutant in mutants:
        lines = changed.get(mutant.file)
        if not lines:
            continue
        if 0 in lines:
            kept.append(mutant)
            continue
        index = indexes[mutant.file]
        touched = set()
        for edit in mutant.edits:
            touched.update(range(index.line_of(edit.start), index.line_of(max(edit.start, edit.end - 1)) + 1))
        if touched & lines:
            kept.append(mutant)
    return kept


def gpu_count() -> int:
    """GPUs visible through NVML (0 without a GPU or driver); never initialises CUDA."""
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            count = pynvml.nvmlDeviceGetCount()
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # noqa: BLE001 - no library, no driver, no device: all mean no GPU
        return 0
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        count = min(count, len([d for d in visible.split(",") if d.strip()]))
    return count


class Campaign:
    """A running campaign. Entering copies the project and starts the warm worker, which
    imports the guard, collects its tests and runs the baseline while the caller makes the
    mutants; `run` hands them over. Leaving ends the worker and everything it started, and
    deletes the scratch copies, however the block is left."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.scratch: Path | None = None
        self.worker: subprocess.Popen | None = None

    def __enter__(self) -> Campaign:
        self.started = time.monotonic()
        self.created = datetime.now(timezone.utc).isoformat(timespec="seconds")
        self.gpus = gpu_count()
        self.scratch = Path(tempfile.mkdtemp(prefix="trainwreck-"))
        try:
            self._start()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _start(self) -> None:
        assert self.scratch is not None
        settings = self.settings
        slots = []
        for slot in range(max(1, settings.jobs)):
            target = self.scratch / f"slot{slot}"
            _copy_project(settings.root, target)
            slots.append(str(target))
        plan = {
            "mode": settings.guard.mode,
            "command": settings.guard.text,
            "pytest_args": list(settings.guard.pytest_args),
            "pytest_options": settings.guard.pytest_options(settings.root),
            "slots": slots,
            "extra_roots": [str(settings.root.resolve())],
            "scratch": str(self.scratch),
            "repeat": settings.repeat,
            "timeout_factor": settings.timeout_factor,
            "baseline_timeout": settings.baseline_timeout,
            "gpus": self.gpus,
        }
        (self.scratch / "plan.json").write_text(json.dumps(plan))
        read, write = os.pipe()
        self.events = read
        self.log = open(self.scratch / "worker.log", "wb")  # noqa: SIM115 - closed in __exit__
        self.worker = subprocess.Popen(
            [sys.executable, "-m", "injector.worker", str(self.scratch / "plan.json"), str(write)],
            cwd=self.scratch, pass_fds=(write,), stdin=subprocess.PIPE, stdout=self.log,
            stderr=self.log, start_new_session=True)
        os.close(write)

    def __exit__(self, *exc) -> None:
        if self.worker is not None:
            if self.worker.poll() is None:
                self.worker.terminate()  # the worker ends every mutant's process tree on SIGTERM
                try:
                    self.worker.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.worker.kill()
                    self.worker.wait()
            self.log.close()
            self.worker = None
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = None

    def run(self, mutants: list[Mutant], sources: dict[str, str], progress=None) -> Report:
        """Run every mutant; `progress` gets `(event, data)` calls as it goes.

        With no mutant (a PR that changes no training code), the worker is stopped at once:
        nothing is run, not even the baseline."""
        assert self.scratch is not None and self.worker is not None and self.worker.stdin is not None
        if not mutants:
            self.__exit__(None, None, None)
            return self._report([], {}, {"tests": 0, "duration": 0.0, "flaky": []}, sources)
        batch = self.scratch / "mutants.json"
        batch.write_text(json.dumps([
            {"id": m.id, "file": m.file, "function": m.function, "function_line": m.function_line,
             "in_main": m.in_main, "edits": [[e.start, e.end, e.text] for e in m.edits]}
            for m in mutants]))
        try:
            self.worker.stdin.write(f"{batch}\n".encode())
            self.worker.stdin.flush()
        except BrokenPipeError:
            pass  # the worker already stopped; its events say why
        results, baseline = self._follow(progress)
        return self._report(mutants, results, baseline, sources)

    def _report(self, mutants: list[Mutant], results: dict[str, dict], baseline: dict,
                sources: dict[str, str]) -> Report:
        by_id = {m.id: m for m in mutants}
        outcomes = []
        for mutant_id, data in results.items():
            mutant = by_id[mutant_id]
            outcomes.append(Outcome(
                mutant_id=mutant.id, operator=mutant.operator, file=mutant.file, line=mutant.line,
                description=mutant.description, diff=mutant.diff, status=data["status"],
                test=data.get("test"), message=data.get("message"),
                duration=round(float(data.get("duration", 0.0)), 3), tests_run=int(data.get("tests_run", 0)),
                guard_seconds=round(float(data.get("guard_seconds", 0.0)), 3)))
        device = f"cuda ({self.gpus} GPU{'s' if self.gpus != 1 else ''})" if self.gpus else "cpu"
        return Report(
            project=self.settings.root.name, guard=self.settings.guard.text, device=device,
            baseline=Baseline(baseline["tests"], round(baseline["duration"], 3), tuple(baseline["flaky"]),
                              self.settings.repeat),
            outcomes=ordered(outcomes), duration=round(time.monotonic() - self.started, 3),
            sources={file: sources[file] for file in {m.file for m in mutants}},
            created=self.created, version=__version__,
        )

    def _follow(self, progress) -> tuple[dict[str, dict], dict]:
        """Read the worker's events until it is done."""
        assert self.worker is not None and self.scratch is not None
        results: dict[str, dict] = {}
        baseline: dict | None = None
        fatal = None
        done = False
        with os.fdopen(self.events, "rb") as events:
            for raw in events:
                event = json.loads(raw)
                kind = event.pop("event")
                if kind == "fatal":
                    fatal = event["message"]
                elif kind == "baseline":
                    baseline = event
                elif kind == "outcome":
                    results[event["id"]] = event
                elif kind == "done":
                    done = True
                if progress is not None:
                    progress(kind, event)
        self.worker.wait()
        if fatal:
            raise CampaignError(fatal)
        if baseline is None or not done or self.worker.returncode != 0:
            tail = (self.scratch / "worker.log").read_text(errors="replace").strip().splitlines()[-1:]
            raise CampaignError("the guard process stopped unexpectedly" + (f": {tail[0]}" if tail else ""))
        return results, baseline


def _copy_project(root: Path, target: Path) -> None:
    def ignore(folder: str, names: list[str]) -> set[str]:
        skipped = {n for n in names if n in NOT_COPIED or n.endswith(".egg-info")}
        skipped.update(n for n in names if (Path(folder) / n / "pyvenv.cfg").exists())
        return skipped

    try:
        shutil.copytree(root, target, ignore=ignore, symlinks=True)
    except (OSError, shutil.Error) as error:
        raise CampaignError(f"cannot copy the project to a scratch folder: {error}") from None

