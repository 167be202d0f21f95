"""A campaign: every mutant against the project's guards, in scratch copies, with a report.

The user's tree is only ever read: the guards run in scratch copies (`injector.scratch`), one
per job slot, made before the first mutant and deleted afterwards. Each slot has a warm worker
(`injector.worker`) that runs the commands this module sends it: the baseline (in slot 0),
then one mutant at a time. This module is the scheduler: it decides which tests can kill each
mutant (from the baseline's line reach), their order and time limit, hands mutants to idle
workers, and re-runs a timeout alone before believing it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import selectors
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections import deque
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Literal

from injector import __version__, fingerprint, protocol, pytest_config, reach, scratch
from injector.cache import Cache
from injector.mutants import LineIndex, Mutant
from injector.outcomes import IGNORED, KILLED, NO_COVERAGE, TIMEOUT, Baseline, Outcome, Report, ordered
from injector.worker.guards import PYTHON_NAMES, PythonCommand
from trainwreck import diffs
from trainwreck.errors import TrainwreckError, UsageError

TIMEOUT_CONSTANT = 5.0  # seconds added to every mutant's time limit


class CampaignError(TrainwreckError):
    """The campaign cannot start or cannot go on (a failing baseline, a missing guard...)."""


@dataclass(frozen=True)
class Guard:
    """What must fail on a mutant: a pytest run (run warm, in-process) or any command."""

    text: str
    mode: Literal["pytest", "command"]
    pytest_args: tuple[str, ...] = ()
    argv: tuple[str, ...] = ()
    # A command that runs a Python script or module with this interpreter: it runs warm,
    # in a forked child of a worker that has imported the script's libraries.
    warm: bool = False

    @classmethod
    def parse(cls, text: str, root: Path) -> Guard:
        try:
            argv = shlex.split(text)
        except ValueError as error:
            raise UsageError(f"cannot read the guard command {text!r}: {error}") from None
        if not argv:
            raise UsageError("the guard command is empty")
        pytest_args = None
        if argv[0] == "pytest" or argv[0].endswith("/pytest"):
            pytest_args = tuple(argv[1:])
        elif Path(argv[0]).name in PYTHON_NAMES and argv[1:3] == ["-m", "pytest"]:
            pytest_args = tuple(argv[3:])
        if pytest_args is not None:
            if importlib.util.find_spec("pytest") is None:
                raise UsageError("the guard runs pytest, which is not installed in this environment")
            return cls(text, "pytest", pytest_args)
        found = shutil.which(argv[0], path=os.environ.get("PATH"))
        if found is None and not (root / argv[0]).is_file():
            raise UsageError(f"the guard command {argv[0]!r} was not found")
        python = argv[1] if argv[0] == "env" and len(argv) > 1 else argv[0]
        same_python = os.path.realpath(shutil.which(python) or python) == os.path.realpath(sys.executable)
        warm = same_python and PythonCommand.parse(text) is not None
        return cls(text, "command", argv=tuple(argv), warm=warm)

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
    fresh: bool = False  # run a Python command guard in a new interpreter per mutant, never warm
    exclude: tuple[Path, ...] = ()  # paths in the project that scratch copies leave out (the cache)
    # `--calibrate`: keep each failing run's guard output (`Campaign.logs`); every mutant is run,
    # since a verdict from the cache has no log
    keep_logs: bool = False

    @property
    def threads(self) -> int:
        """Each slot's share of the CPUs (the baseline gets the same, so numerics match)."""
        return max(1, len(os.sched_getaffinity(0)) // max(1, self.jobs))


@dataclass(frozen=True)
class Reuse:
    """The outcome cache as one campaign uses it: the digests its keys are made of."""

    cache: Cache
    settings: str  # fingerprint.settings_digest of this campaign
    tree: fingerprint.TreeDigest


def settings_digest(settings: Settings, gpus: int) -> str:
    """What a verdict depends on outside the project, for the cache's keys."""
    guard = settings.guard
    return fingerprint.settings_digest(
        guard=f"{guard.mode}\0{guard.text}\0{guard.warm}",
        timeout_factor=settings.timeout_factor,
        repeat=settings.repeat,
        fresh=settings.fresh,
        threads=settings.threads,
        device=device_name(gpus),
    )


def device_name(gpus: int) -> str:
    return f"cuda ({gpus} GPU{'s' if gpus != 1 else ''})" if gpus else "cpu"


def select_shard(mutants: list[Mutant], shard: tuple[int, int]) -> list[Mutant]:
    """Shard `index` of `count` (1-based), split by stable id so every runner agrees."""
    index, count = shard
    return [m for m in mutants if int(m.id, 16) % count == index - 1]


def changed_lines(root: Path, ref: str) -> dict[str, set[int]]:
    """Lines (new numbering) changed since `ref`, by path relative to `root`; untracked files
    count as changed throughout."""

    def git(*args: str) -> str:
        try:
            result = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, errors="replace")
        except FileNotFoundError:
            raise UsageError("--since needs git, which is not installed") from None
        if result.returncode != 0:
            message = (result.stderr.strip().splitlines() or ["git failed"])[0]
            raise UsageError(f"--since {ref}: {message}")
        return result.stdout

    top = Path(git("rev-parse", "--show-toplevel").strip())
    prefix = root.resolve().relative_to(top.resolve()).as_posix()
    prefix = "" if prefix == "." else prefix + "/"
    diff = git("diff", "--unified=0", "--no-color", "--no-ext-diff", ref, "--", ".")
    try:
        by_file = diffs.changed_lines(diff)
    except diffs.DiffError as exc:
        raise UsageError(f"--since {ref}: git diff gave {exc}") from None
    changed = {name.removeprefix(prefix): lines for name, lines in by_file.items()}
    for name in git("ls-files", "--others", "--exclude-standard", "--", ".").splitlines():
        changed[name.removeprefix(prefix)] = {0}  # every line
    return changed


def repo_path(root: Path) -> str:
    """`root`'s folder within its git repository ("" at its top, or outside any repository)."""
    try:
        found = subprocess.run(
            ["git", "rev-parse", "--show-prefix"], cwd=root, capture_output=True, text=True, errors="replace"
        )
    except OSError:
        return ""
    return found.stdout.strip().strip("/") if found.returncode == 0 else ""


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
        touched: set[int] = set()
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
    except Exception:
        return 0
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        count = min(count, len([d for d in visible.split(",") if d.strip()]))
    return count


@dataclass
class _Slot:
    """A worker process and its pipes, and the mutant it is running."""

    index: int
    process: subprocess.Popen
    commands: int
    events: int
    log: IO[bytes]
    buffer: bytearray = field(default_factory=bytearray)
    ready: protocol.Ready | None = None
    job: _Job | None = None


@dataclass
class _Job:
    """One mutant's run: which tests, in which order, and whether it must run alone."""

    mutant: Mutant
    tests: tuple[str, ...]
    limit: float
    alone: bool = False  # a timeout being confirmed: nothing else runs meanwhile
    shared: bool = False  # another mutant ran at the same time at some point
    first: protocol.Result | None = None  # the first run's result, when this run confirms it
    key: str | None = None  # its outcome cache key


@dataclass
class _Test:
    name: str
    outcomes: tuple[str, ...]
    duration: float
    lines: frozenset = field(default_factory=frozenset)
    writes_state: bool = False

    @property
    def usable(self) -> bool:
        """Passed in every baseline run: neither failing, skipped nor flaky."""
        return bool(self.outcomes) and all(o == "passed" for o in self.outcomes)


class Campaign:
    """A running campaign. Entering copies the project once per job slot and starts a warm
    worker in each, and slot 0's worker runs the baseline while the caller makes the mutants;
    `run` hands them out. Leaving ends every worker and everything they started, and deletes
    the scratch copies, however the block is left (a signal during the clean-up included)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.scratch: Path | None = None
        self.slots: list[_Slot] = []
        self.selector = selectors.DefaultSelector()
        self.covering: dict[str, tuple[str, ...]] = {}  # mutant id -> the tests that reach it
        self.logs: dict[str, str] = {}  # mutant id -> its failing run's guard output (`keep_logs`)

    def __enter__(self) -> Campaign:
        self.started = time.monotonic()
        self.created = datetime.now(UTC).isoformat(timespec="seconds")
        self.gpus = gpu_count()
        self.scratch = scratch.create()
        try:
            self._start()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _start(self) -> None:
        assert self.scratch is not None
        settings = self.settings
        jobs = max(1, settings.jobs)
        folders = []
        for index in range(jobs):
            target = self.scratch / f"slot{index}"
            scratch.copy_project(settings.root, target, exclude=settings.exclude)
            folders.append(str(target))
        guard = settings.guard
        plan = {
            "mode": guard.mode,
            "command": guard.text,
            "argv": list(guard.argv),
            "warm": guard.warm and not settings.fresh,
            "fresh": settings.fresh,
            "pytest_args": list(guard.pytest_args),
            "pytest_options": guard.pytest_options(settings.root),
            "pytest_config": pytest_config.describe(settings.root) if guard.mode == "pytest" else None,
            "slots": folders,
            "user_root": str(settings.root.resolve()),
            "scratch": str(self.scratch),
            "threads": settings.threads,
            "timeout_factor": settings.timeout_factor,
            "keep_logs": settings.keep_logs,
            "gpus": self.gpus,
        }
        pytest_config.write_empty(self.scratch)
        (self.scratch / "plan.json").write_text(json.dumps(plan))
        for index, folder in enumerate(folders):
            commands_read, commands = os.pipe()
            events, events_write = os.pipe()
            env = dict(os.environ)
            # torch.cuda.is_available() at import (`device = "cuda" if ...`) asks NVML instead of
            # starting the driver, so the worker can still fork children that use the GPU
            env.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")
            if self.gpus > 1:
                env["CUDA_VISIBLE_DEVICES"] = str(index % self.gpus)
            log = open(self.scratch / f"worker{index}.log", "wb")  # noqa: SIM115 - closed in __exit__
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "injector.worker",
                    str(self.scratch / "plan.json"),
                    str(index),
                    str(commands_read),
                    str(events_write),
                ],
                cwd=folder,
                pass_fds=(commands_read, events_write),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
                env=env,
            )
            os.close(commands_read)
            os.close(events_write)
            slot = _Slot(index, process, commands, events, log)
            self.slots.append(slot)
            self.selector.register(events, selectors.EVENT_READ, slot)
        # The baseline starts as soon as slot 0's worker is warm, while the mutants are made.
        self._send(self.slots[0], protocol.Baseline(settings.repeat, settings.baseline_timeout))

    def __exit__(self, *exc) -> None:
        # A second Ctrl-C or a SIGTERM must not cut the clean-up short.
        previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            for slot in self.slots:
                self._send(slot, protocol.Stop())
            for slot in self.slots:
                _end(slot.process)
                for fd in (slot.commands, slot.events):
                    with contextlib.suppress(OSError):
                        os.close(fd)
                slot.log.close()
            self.slots = []
            if self.scratch is not None:
                shutil.rmtree(self.scratch, ignore_errors=True)
                self.scratch = None
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    # ---- the campaign ----

    def run(
        self,
        mutants: list[Mutant],
        sources: dict[str, str],
        progress=None,
        reuse: Reuse | None = None,
        within: dict[str, str] | None = None,
    ) -> Report:
        """Run every mutant; `progress` gets `(event, data)` calls as it goes. With `reuse`,
        a mutant whose cache key is known takes its outcome from the cache, and the outcomes
        found are added to it. `within` (mutant id -> a test id prefix) keeps a mutant to the
        guard tests under that prefix (`injector suggest`: each survivor to its own draft).

        With no mutant (a PR that changes no training code), the workers are stopped at once:
        nothing is run, not even the baseline."""
        self.progress = progress or (lambda kind, data: None)
        self.reuse = reuse
        self.cached: set[str] = set()
        ignored = ignored_results(mutants)
        everything, mutants = mutants, [m for m in mutants if not m.ignored]
        if not mutants:
            self.__exit__(None, None, None)
            return self._report(everything, ignored, {"tests": 0, "duration": 0.0, "flaky": []}, sources)
        tests = self._await_baseline()
        usable = [t for t in tests if t.usable]
        baseline = {
            "tests": len(tests),
            "flaky": [t.name for t in tests if len(set(t.outcomes)) > 1],
            "duration": sum(t.duration for t in usable),
            "names": [t.name for t in tests],
            "cold": next((s.ready.cold for s in self.slots if s.ready and s.ready.cold), None) or "",
        }
        self.progress("baseline", baseline)
        results = self._run_mutants(mutants, sources, tests, within or {})
        self.logs = {mutant_id: result.log for mutant_id, result in results.items() if result.log}
        if reuse is not None:
            reuse.cache.record_run(reuse.settings, reuse.tree.whole, baseline, results, self.covering)
        return self._report(everything, {**results, **ignored}, baseline, sources)

    def _await_baseline(self) -> list[_Test]:
        """Wait for every worker to be warm and for slot 0's baseline; check that it passed."""
        self.progress("baseline_run", {"run": 1, "of": self.settings.repeat})
        done: protocol.BaselineDone | None = None
        while done is None or any(slot.ready is None for slot in self.slots):
            for slot, event in self._events():
                if isinstance(event, protocol.Ready):
                    slot.ready = event
                elif isinstance(event, protocol.Modules):
                    for other in self.slots[1:]:
                        self._send(other, protocol.Warm(event.modules))
                elif isinstance(event, protocol.BaselineDone):
                    done = event
        tests = [_Test(r.name, r.outcomes, r.duration, frozenset(r.lines), r.writes_state) for r in done.tests]
        failing = [r for r in done.tests if r.outcomes and all(o == "failed" for o in r.outcomes)]
        if failing:
            shown = ", ".join(r.name for r in failing[:5])
            shown += f" and {len(failing) - 5} more" if len(failing) > 5 else ""
            why = f" ({failing[0].message})" if failing[0].message else ""
            raise CampaignError(f"the unmutated guard fails: {shown}{why}; fix it before a campaign")
        if not any(t.usable for t in tests):
            raise CampaignError("no guard test passed in the baseline (all skipped or flaky)")
        return tests

    def _run_mutants(
        self, mutants: list[Mutant], sources: dict[str, str], tests: list[_Test], within: dict[str, str]
    ) -> dict[str, protocol.Result]:
        factor = self.settings.timeout_factor
        assert self.scratch is not None
        prepared = self.scratch / "prepared.json"
        prepared.write_text(
            json.dumps(
                {
                    "sources": {m.file: sources[m.file] for m in mutants},
                    "collection": [t.name for t in tests if t.usable],
                    "collection_limit": factor * sum(t.duration for t in tests if t.usable) + TIMEOUT_CONSTANT,
                }
            )
        )
        for slot in self.slots:
            self._send(slot, protocol.Prepare(str(prepared)))
        results: dict[str, protocol.Result] = {}
        queue: deque[_Job] = deque()
        reuse = self.reuse
        for mutant in mutants:
            prefix = within.get(mutant.id, "")
            covering = _covering(mutant, sources[mutant.file], [t for t in tests if t.name.startswith(prefix)])
            # reported in collection order: run fastest first, but a report must not reorder
            # its lists because one run's timings differed from another's
            reaching = {t.name for t in covering}
            self.covering[mutant.id] = tuple(t.name for t in tests if t.name in reaching)
            if not covering:
                results[mutant.id] = protocol.Result(mutant.id, NO_COVERAGE)
                self.progress("outcome", {"status": NO_COVERAGE})
                continue
            key = None
            if reuse is not None:
                lines = reach.mutant_lines(sources[mutant.file], mutant.edits)
                key = fingerprint.mutant_key(
                    reuse.settings, reuse.tree, mutant.id, mutant.file, lines, [(t.name, t.lines) for t in covering]
                )
                known = None if self.settings.keep_logs else reuse.cache.get(key)
                if known is not None:
                    results[mutant.id] = replace(known, id=mutant.id)
                    self.cached.add(mutant.id)
                    self.progress("outcome", {"status": known.status, "cached": True})
                    continue
            limit = factor * sum(t.duration for t in covering) + TIMEOUT_CONSTANT
            queue.append(_Job(mutant, tuple(t.name for t in covering), limit, key=key))
        # test order -> (how many pass unmutated in it, the first that fails there or None)
        clean: dict[tuple[str, ...], tuple[int, int | None]] = {}

        while queue or any(slot.job for slot in self.slots):
            busy = [slot for slot in self.slots if slot.job]
            alone_running = any(slot.job.alone for slot in busy if slot.job is not None)
            for slot in self.slots:
                if not queue or slot.job or alone_running:
                    continue
                if queue[0].alone and any(s.job for s in self.slots):
                    break  # a confirmation waits until nothing else runs
                job = queue.popleft()
                running = [s.job for s in self.slots if s.job]
                job.shared = bool(running)
                for other in running:
                    other.shared = True
                slot.job = job
                alone_running = job.alone
                spec = protocol.MutantSpec(
                    job.mutant.id,
                    job.mutant.file,
                    tuple((e.start, e.end, e.text) for e in job.mutant.edits),
                    job.mutant.function,
                    job.mutant.function_line,
                    job.mutant.in_main,
                )
                self._send(slot, protocol.Run(spec, job.tests, job.limit, *clean.get(job.tests, (0, None))))
            for slot, event in self._events():
                if not isinstance(event, protocol.Result) or slot.job is None:
                    continue
                job, slot.job = slot.job, None
                passing, failing = clean.get(job.tests, (0, None))
                if event.clean_failing is not None:
                    failing = min(failing or event.clean_failing, event.clean_failing)
                clean[job.tests] = (max(passing, event.clean_prefix), failing)
                if job.shared and not job.alone and _suspect(event):
                    # Under load a slow mutant can look hung, and a rank can crash on a
                    # collective's timeout: run it again with nothing beside it.
                    queue.append(_Job(job.mutant, job.tests, job.limit, alone=True, first=event, key=job.key))
                    continue
                if job.first is not None:
                    event = _with_note(
                        event, f"{_describe(job.first)} beside another mutant; this is the result of running it alone"
                    )
                results[job.mutant.id] = event
                if reuse is not None and job.key is not None:
                    reuse.cache.put(job.key, replace(event, clean_prefix=0, clean_failing=None))
                self.progress("outcome", {"status": event.status})
        return results

    # ---- talking to workers ----

    def _send(self, slot: _Slot, message: protocol.Message) -> None:
        data = protocol.encode(message)
        try:
            while data:
                data = data[os.write(slot.commands, data) :]
        except OSError:
            pass  # the worker is gone: its events (or its exit) say why

    def _events(self):
        """The next events from the workers (waits for at least one)."""
        found = []
        while not found:
            for key, _ in self.selector.select(timeout=0.5):
                slot = key.data
                chunk = os.read(slot.events, 1 << 16)
                if not chunk:
                    self.selector.unregister(slot.events)
                    self._worker_gone(slot)
                slot.buffer += chunk
                if b"\n" not in chunk:
                    continue
                *lines, rest = bytes(slot.buffer).split(b"\n")
                slot.buffer = bytearray(rest)
                for line in lines:
                    event = protocol.decode(line)
                    if isinstance(event, protocol.Fatal):
                        raise CampaignError(event.message)
                    found.append((slot, event))
            if not found:
                for slot in self.slots:
                    if slot.process.poll() is not None:
                        self._worker_gone(slot)
        return found

    def _worker_gone(self, slot: _Slot) -> None:
        slot.process.wait()
        assert self.scratch is not None
        try:
            lines = (self.scratch / f"worker{slot.index}.log").read_text(errors="replace").strip().splitlines()
        except OSError:  # the scratch folder itself is gone (removed from outside)
            lines = [f"its scratch folder {self.scratch} was removed while it ran"]
        raise CampaignError("the guard process stopped unexpectedly" + (f": {lines[-1]}" if lines else ""))

    # ---- the report ----

    def _report(
        self, mutants: list[Mutant], results: dict[str, protocol.Result], baseline: dict, sources: dict[str, str]
    ) -> Report:
        return build_report(
            self.settings,
            mutants,
            results,
            baseline,
            sources,
            gpus=self.gpus,
            started=self.started,
            created=self.created,
            cached=getattr(self, "cached", set()),
            covering=self.covering,
        )


def ignored_results(mutants: list[Mutant]) -> dict[str, protocol.Result]:
    """Ignored mutants are outcomes at once: the workers never see them."""
    return {m.id: protocol.Result(m.id, IGNORED, message=m.ignored) for m in mutants if m.ignored}


def build_report(
    settings: Settings,
    mutants: list[Mutant],
    results: dict[str, protocol.Result],
    baseline: dict,
    sources: dict[str, str],
    *,
    gpus: int,
    started: float,
    created: str,
    cached: AbstractSet[str] = frozenset(),
    covering: dict[str, tuple[str, ...]] | None = None,
) -> Report:
    """The report of a campaign (or of one answered wholly from the cache): `results` by
    mutant id, `cached` the ids whose outcome came from the cache, `covering` the guard tests
    that reach each mutant."""
    covering = covering or {}
    by_id = {m.id: m for m in mutants}
    outcomes = []
    for mutant_id, data in results.items():
        mutant = by_id[mutant_id]
        outcomes.append(
            Outcome(
                mutant_id=mutant.id,
                operator=mutant.operator,
                file=mutant.file,
                line=mutant.line,
                description=mutant.description,
                diff=mutant.diff,
                status=data.status,
                test=data.test,
                message=data.message,
                duration=round(data.duration, 3),
                tests_run=data.tests_run,
                guard_seconds=round(data.guard_seconds, 3),
                note=data.note,
                cached=mutant_id in cached,
                covered_by=tuple(covering.get(mutant_id, ())),
            )
        )
    return Report(
        project=settings.root.name,
        guard=settings.guard.text,
        device=device_name(gpus),
        baseline=Baseline(
            baseline["tests"],
            round(baseline["duration"], 3),
            tuple(baseline["flaky"]),
            settings.repeat,
            tuple(baseline.get("names", ())),
            baseline.get("cold", ""),
        ),
        outcomes=ordered(outcomes),
        duration=round(time.monotonic() - started, 3),
        sources={file: sources[file] for file in {m.file for m in mutants}},
        created=created,
        version=__version__,
        repo_path=repo_path(settings.root),
    )


def _covering(mutant: Mutant, source: str, tests: list[_Test]) -> list[_Test]:
    """The usable tests that can fail on the mutant, in the order to run them.

    Those that run the mutant's lines, fastest first. Code that runs at import (outside any
    function and outside `if __name__ == "__main__":`) is run by every test. Where one of them
    left project module-level state changed in the baseline, the tests after it may read what
    the mutant wrote there: they join, and all run in collection order."""
    usable = [t for t in tests if t.usable]
    if mutant.function is None and not mutant.in_main:
        return sorted(usable, key=lambda t: t.duration)
    lines = {(mutant.file, n) for n in reach.mutant_lines(source, mutant.edits)}
    chosen = [t for t in usable if lines & t.lines]
    names = {t.name for t in chosen}
    writers = [index for index, t in enumerate(usable) if t.writes_state and t.name in names]
    if writers:
        return [t for index, t in enumerate(usable) if t.name in names or index > writers[0]]
    return sorted(chosen, key=lambda t: t.duration)


CRASH = re.compile(
    r"terminated with signal|killed by SIG|Connection (?:closed|reset) by peer|"
    r"[Tt]imed? ?out|ProcessExitedException"
)


def _suspect(result: protocol.Result) -> bool:
    """A result that the load of other mutants beside it could have caused."""
    return result.status == TIMEOUT or (result.status == KILLED and bool(CRASH.search(result.message or "")))


def _describe(result: protocol.Result) -> str:
    return "timed out" if result.status == TIMEOUT else f"crashed ({(result.message or '')[:80]})"


def _with_note(result: protocol.Result, note: str) -> protocol.Result:
    return replace(result, note=f"{result.note}; {note}" if result.note else note)


def _end(process: subprocess.Popen) -> None:
    """Stop a worker: it ends its own tree on SIGTERM; SIGKILL if it does not within 10 s."""
    if process.poll() is None:
        try:
            process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
