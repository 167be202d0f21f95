"""A campaign: every mutant against the project's guards, in scratch copies, with a report.

The user's tree is only ever read: the guards run in scratch copies (one per job slot) made
before the first mutant and deleted afterwards, and mutants reach the copies through the
warm worker (`injector.worker`), never through the user's files. An interrupted or killed
campaign therefore leaves the project byte-identical.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from injector.errors import TrainwreckError, UsageError
from injector.mutants import LineIndex, Mutant
from injector.outcomes import Baseline, Outcome, Report

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
        if argv[0] == "pytest" or argv[0].endswith("/pytest"):
            return cls(text, "pytest", tuple(argv[1:]))
        if Path(argv[0]).name in python and argv[1:3] == ["-m", "pytest"]:
            return cls(text, "pytest", tuple(argv[3:]))
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


def run(settings: Settings, mutants: list[Mutant], sources: dict[str, str], progress=None) -> Report:
    """Run the campaign; `progress` gets `(event, data)` calls as it goes."""
    started = time.monotonic()
    gpus = gpu_count()
    device = f"cuda ({gpus} GPU{'s' if gpus != 1 else ''})" if gpus else "cpu"
    scratch = Path(tempfile.mkdtemp(prefix="trainwreck-"))
    try:
        slots = []
        for slot in range(max(1, settings.jobs)):
            target = scratch / f"slot{slot}"
            _copy_project(settings.root, target)
            slots.append(str(target))
        plan = {
            "mode": settings.guard.mode,
            "command": settings.guard.text,
            "pytest_args": list(settings.guard.pytest_args),
            "pytest_options": settings.guard.pytest_options(settings.root),
            "slots": slots,
            "extra_roots": [str(settings.root.resolve())],
            "scratch": str(scratch),
            "repeat": settings.repeat,
            "timeout_factor": settings.timeout_factor,
            "baseline_timeout": settings.baseline_timeout,
            "gpus": gpus,
            "mutants": [{"id": m.id, "file": m.file, "function": m.function,
                         "function_line": m.function_line, "in_main": m.in_main,
                         "edits": [[e.start, e.end, e.text] for e in m.edits]} for m in mutants],
        }
        (scratch / "plan.json").write_text(json.dumps(plan))
        results, baseline = _drive(scratch, progress)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
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
    return Report(
        project=settings.root.name, guard=settings.guard.text, device=device,
        baseline=Baseline(baseline["tests"], round(baseline["duration"], 3), tuple(baseline["flaky"]),
                          settings.repeat),
        outcomes=tuple(outcomes), duration=round(time.monotonic() - started, 3),
        sources={file: text for file, text in sources.items() if any(m.file == file for m in mutants)},
    )


def _drive(scratch: Path, progress) -> tuple[dict[str, dict], dict]:
    """Start the worker, follow its events, and end it (and all it started) however we leave."""
    read, write = os.pipe()
    log = open(scratch / "worker.log", "wb")  # noqa: SIM115 - closed in finally
    worker = subprocess.Popen(
        [sys.executable, "-m", "injector.worker", str(scratch / "plan.json"), str(write)],
        cwd=scratch, pass_fds=(write,), stdin=subprocess.DEVNULL, stdout=log, stderr=log,
        start_new_session=True)
    os.close(write)
    results: dict[str, dict] = {}
    baseline: dict | None = None
    fatal = None
    try:
        with os.fdopen(read, "rb") as events:
            for raw in events:
                event = json.loads(raw)
                kind = event.pop("event")
                if kind == "fatal":
                    fatal = event["message"]
                elif kind == "baseline":
                    baseline = event
                elif kind == "outcome":
                    results[event["id"]] = event
                if progress is not None:
                    progress(kind, event)
        worker.wait()
    finally:
        if worker.poll() is None:
            worker.terminate()  # the worker ends every mutant's process tree on SIGTERM
            try:
                worker.wait(timeout=10)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait()
        log.close()
    if fatal:
        raise CampaignError(fatal)
    if baseline is None or worker.returncode not in (0, None):
        tail = (scratch / "worker.log").read_text(errors="replace").strip().splitlines()[-1:]
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

