"""Verifying suggested guards: each must pass on the unmutated code and kill its survivor.

All of it runs in a scratch copy of the project (the user's tree is only read): the drafts are
written where they would be written, run once on the unmutated copy with pytest (a draft's
tests that fail there, or take longer than the limit, are dropped), and then one campaign runs
each survivor's mutant against its own draft's remaining tests with the campaign machinery
(warm worker, line reach, time limit). The test that kills it is the suggestion.
"""

from __future__ import annotations

import os
import resource
import shlex
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from injector import campaign, config, discovery, scratch
from injector.cache import FOLDER as CACHE_FOLDER
from injector.generate import mutants_for_files
from injector.guards.faults import WATCHED
from injector.mutants import Mutant
from injector.operators import select
from injector.outcomes import KILLED, SURVIVED, Outcome, Report
from injector.suggest.timing import ENV as TIMES_ENV
from injector.suggest.timing import read as read_times
from injector.suggest.write import Draft, draft, only
from trainwreck.errors import UsageError

MAX_SECONDS = 2.0  # a suggested test taking more CPU seconds than this on the unmutated code is dropped
PREFILTER_TIMEOUT = 600.0


@dataclass(frozen=True)
class Verdict:
    """What `suggest` found for one survivor."""

    outcome: Outcome
    draft: Draft  # the suggested file (only the killing test when verified)
    verified: bool
    note: str  # one line: which test killed it and how fast, or why there is none
    test: str | None = None  # the killing test's function name
    seconds: float | None = None  # its CPU seconds on the unmutated code (with its child processes)


Progress = Callable[[str, Verdict | None], None]


def survivors(report: Report, wanted: list[str] | None = None) -> list[Outcome]:
    """The survivors of `report`, or those whose ids start with one of `wanted`."""
    alive = [o for o in report.outcomes if o.status == SURVIVED]
    if not wanted:
        return alive
    chosen = []
    for prefix in wanted:
        found = [o for o in alive if o.mutant_id.startswith(prefix)]
        if not found:
            raise UsageError(f"no survivor of the report has id {prefix!r}")
        if len(found) > 1:
            raise UsageError(f"id {prefix!r} is ambiguous: {', '.join(o.mutant_id for o in found)}")
        chosen.append(found[0])
    return list(dict.fromkeys(chosen))


def default_folder(outcomes: list[Outcome]) -> str:
    """Where suggestions go: beside the reaching tests (their conftest fixtures apply there)."""
    from injector.suggest.write import test_files

    for outcome in outcomes:
        for file, _ in test_files(outcome):
            return (Path(file).parent / "trainwreck_guards").as_posix()
    return "tests/trainwreck_guards"  # guard commands: a tests/ folder of its own


def mutants_of(root: Path, report: Report, outcomes: list[Outcome]) -> tuple[dict[str, Mutant], dict[str, str]]:
    """The survivors' mutants made afresh from the project, and the project's sources."""
    settings = config.load(root)
    paths = [root / p for p in settings.paths] or [root]
    files, _ = discovery.collect(paths, root, settings.exclude_paths)
    sources = {file.relative: file.text for file in files}
    for outcome in outcomes:
        known = report.sources.get(outcome.file)
        if outcome.file not in sources:
            raise UsageError(f"{outcome.file} (of mutant {outcome.mutant_id}) is not in the project {root}")
        if known is not None and known != sources[outcome.file]:
            raise UsageError(f"{outcome.file} changed since the report: run the campaign again")
    made = mutants_for_files([f for f in files if f.relative in {o.file for o in outcomes}], select())
    by_id = {m.id: m for m in made.mutants}
    missing = [o.mutant_id for o in outcomes if o.mutant_id not in by_id]
    if missing:
        raise UsageError(f"mutant {missing[0]} of the report is not a mutant of {root}: run the campaign again")
    return by_id, sources


def suggest(
    report: Report,
    root: Path,
    outcomes: list[Outcome],
    folder: str,
    progress: Progress,
    max_seconds: float = MAX_SECONDS,
    made: tuple[dict[str, Mutant], dict[str, str]] | None = None,
) -> list[Verdict]:
    """Draft, then verify, a guard for each of `outcomes` (survivors of `report` on `root`);
    `made` is `mutants_of`'s answer when the caller already has it."""
    mutants, sources = made or mutants_of(root, report, outcomes)
    drafts = [draft(o, root, folder, WATCHED) for o in outcomes]
    work = scratch.create()
    try:
        copy = work / "project"
        scratch.copy_project(root, copy, exclude=(root / CACHE_FOLDER,))
        (copy / folder).mkdir(parents=True, exist_ok=True)
        runnable = [d for d in drafts if d.stub is None and d.candidates]
        for d in runnable:
            (copy / folder / d.module).write_text(d.text, encoding="utf-8")
        progress("prefilter", None)
        originals = sorted({c.source_test for d in runnable for c in d.candidates if "::" in c.source_test})
        timing = _run_unmutated(copy, [f"{folder}/{d.module}" for d in runnable] + originals, work / "unmutated.xml")
        for command in {c.source_test for d in runnable for c in d.candidates if "::" not in c.source_test}:
            timing[("", command)] = (True, _time_command(copy, command))
        # The first tests of a session pay for lazy imports: a passing test over the limit is
        # timed once more, and its faster time counts.
        slow = [
            f"{folder}/{d.module}::{c.name}"
            for d in runnable
            for c in d.candidates
            if timing.get((d.module.removesuffix(".py"), c.name), (False, 0.0))[0]
            and timing[(d.module.removesuffix(".py"), c.name)][1]
            > max(max_seconds, 1.5 * _own_time(c.source_test, timing))
        ]
        if slow:
            again = _run_unmutated(copy, slow, work / "again.xml")
            for key, (ok, seconds) in again.items():
                if ok and key in timing:
                    timing[key] = (True, min(seconds, timing[key][1]))
        verdicts = _verify_all(drafts, outcomes, mutants, sources, copy, folder, timing, max_seconds)
        for verdict in verdicts:
            progress("verdict", verdict)
        return verdicts
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _verify_all(
    drafts: list[Draft],
    outcomes: list[Outcome],
    mutants: dict[str, Mutant],
    sources: dict[str, str],
    copy: Path,
    folder: str,
    timing: dict[tuple[str, str], tuple[bool, float]],
    max_seconds: float,
) -> list[Verdict]:
    """Every survivor against its own suggested tests, in one campaign: its worker pays the
    guard's start-up (torch, collection, the baseline) once for all of them, and each mutant
    runs only the tests of its own draft. Should that campaign fail as a whole (a draft that
    passed the prefilter fails its baseline), each survivor gets a campaign of its own."""
    kept: dict[int, Draft] = {}
    verdicts: dict[int, Verdict] = {}
    for index, (d, outcome) in enumerate(zip(drafts, outcomes, strict=True)):
        chosen = _fast_passing(d, outcome, timing, max_seconds)
        if isinstance(chosen, Verdict):
            verdicts[index] = chosen
        else:
            kept[index] = chosen
    if kept:
        for d in kept.values():
            (copy / folder / d.module).write_text(d.text, encoding="utf-8")
        try:
            found = _campaign(copy, folder, kept, outcomes, mutants, sources)
        except campaign.CampaignError:
            found = {}
            for index, d in kept.items():
                try:
                    found.update(_campaign(copy, folder, {index: d}, outcomes, mutants, sources))
                except campaign.CampaignError as error:
                    verdicts[index] = Verdict(outcomes[index], d, False, f"not verified: {error}")
        for index, d in kept.items():
            if index not in verdicts:
                verdicts[index] = _judged(d, outcomes[index], found[outcomes[index].mutant_id], timing)
    return [verdicts[index] for index in range(len(drafts))]


def _fast_passing(
    d: Draft, outcome: Outcome, timing: dict[tuple[str, str], tuple[bool, float]], max_seconds: float
) -> Draft | Verdict:
    """The draft cut to its tests that pass on the unmutated code within the limit, or why none."""
    if d.stub is not None or not d.candidates:
        return Verdict(outcome, d, False, f"stub: {d.stub or 'no test to copy'}")
    stem = d.module.removesuffix(".py")
    passing = {c.name for c in d.candidates if timing.get((stem, c.name), (False, 0.0))[0]}
    # A copy costs what its test costs: the limit is max_seconds or, for a slower test of the
    # project's own (a subprocess, DDP ranks), half as much again as that test.
    limits = {c.name: max(max_seconds, 1.5 * _own_time(c.source_test, timing)) for c in d.candidates}
    fast = {name for name in passing if timing[(stem, name)][1] <= limits[name]}
    if not passing:
        return Verdict(outcome, d, False, "not verified: every suggested test fails on the unmutated code")
    if not fast:
        return Verdict(
            outcome, only(d, passing), False, f"not verified: the suggested tests take over {max_seconds:g} s"
        )
    return only(d, fast)


def _campaign(
    copy: Path,
    folder: str,
    kept: dict[int, Draft],
    outcomes: list[Outcome],
    mutants: dict[str, Mutant],
    sources: dict[str, str],
) -> dict[str, Outcome]:
    """One campaign over `kept`'s drafts: mutant id -> its outcome against its own draft's tests."""
    modules = [f"{folder}/{d.module}" for d in kept.values()]
    guard = campaign.Guard.parse(f"python -m pytest -q -x -p no:cacheprovider {' '.join(modules)}", copy)
    settings = campaign.Settings(root=copy, guard=guard, jobs=1)
    within = {outcomes[index].mutant_id: f"{folder}/{d.module}::" for index, d in kept.items()}
    with campaign.Campaign(settings) as running:
        result = running.run([mutants[mutant_id] for mutant_id in within], sources, within=within)
    return {o.mutant_id: o for o in result.outcomes}


def _judged(
    kept: Draft, outcome: Outcome, verdict: Outcome, timing: dict[tuple[str, str], tuple[bool, float]]
) -> Verdict:
    if verdict.status != KILLED or not verdict.test:
        return Verdict(outcome, kept, False, f"not verified: the mutant {verdict.status} against the suggestion")
    stem = kept.module.removesuffix(".py")
    name = verdict.test.rsplit("::", 1)[-1].split("[", 1)[0]
    seconds = timing.get((stem, name), (True, 0.0))[1]
    why = _reason(verdict.message or "")
    note = f"verified: {name} kills it ({why})" if why else f"verified: {name} kills it"
    return Verdict(outcome, only(kept, {name}), True, note, name, seconds)


def _time_command(copy: Path, command: str) -> float:
    """The guard command's CPU time run afresh, unwatched, in the copy: what its watched copy
    costs at the least (the campaign's warm runs skip the interpreter's start-up)."""
    argv = shlex.split(command)
    if argv and argv[0] in ("python", "python3"):
        argv[0] = sys.executable
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        subprocess.run(argv, cwd=copy, stdin=subprocess.DEVNULL, capture_output=True, timeout=PREFILTER_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired):
        return 0.0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def _reason(message: str) -> str:
    """The line of a failure that says which guard fired (a child's stderr included), shortened."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    for line in lines:
        if "GuardFailure" in line or "trainwreck guard:" in line:
            return line.split("GuardFailure: ", 1)[-1][:160]
    return lines[0][:160] if lines else ""


def _own_time(test: str, timing: dict[tuple[str, str], tuple[bool, float]]) -> float:
    """The unmutated run's time of a reaching test (node id) or guard command; 0 if unknown."""
    if "::" not in test:
        return timing.get(("", test), (True, 0.0))[1]
    file, _, name = test.partition("::")
    return timing.get((Path(file).stem, name), (True, 0.0))[1]


def _run_unmutated(copy: Path, files: list[str], xml: Path) -> dict[tuple[str, str], tuple[bool, float]]:
    """Run the drafts on the unmutated copy once: (module stem, test name) -> (passed, seconds).

    The seconds are CPU seconds (the test's process and the children it waited for, after
    torch's one-off start-up: injector.suggest.timing), so a loaded machine does not drop a
    fast test; wall seconds where the plugin gave none."""
    if not files:
        return {}
    times = xml.with_suffix(".times.json")
    env = dict(os.environ, **{TIMES_ENV: str(times)})
    env.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "injector.suggest.timing",
        f"--junitxml={xml}",
        *files,
    ]
    try:
        subprocess.run(
            command, cwd=copy, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=PREFILTER_TIMEOUT
        )
    except subprocess.TimeoutExpired:
        return {}
    try:
        tree = ET.parse(xml)
    except (OSError, ET.ParseError):
        return {}
    cpu: dict[tuple[str, str], float] = {}
    for node, seconds in read_times(times).items():
        file, _, rest = node.partition("::")
        key = (Path(file).stem, rest.rsplit("::", 1)[-1].split("[", 1)[0])
        cpu[key] = max(seconds, cpu.get(key, 0.0))
    found: dict[tuple[str, str], tuple[bool, float]] = {}
    for case in tree.iter("testcase"):
        stem = case.get("classname", "").rsplit(".", 1)[-1]
        name = case.get("name", "").split("[", 1)[0]
        ok = not any(child.tag in ("failure", "error", "skipped") for child in case)
        seconds = cpu.get((stem, name), float(case.get("time") or 0.0))
        before = found.get((stem, name))
        # a parametrised test passes only if every case does; its time is its slowest case
        found[(stem, name)] = (ok and (before is None or before[0]), max(seconds, before[1] if before else 0.0))
    return found
