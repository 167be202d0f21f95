"""What a campaign produces: one outcome per mutant, and the report that gathers them.

These records cross modules (the worker makes outcomes, the campaign gathers them, the
report renders them, `injector merge` joins shard reports), so they are plain frozen
dataclasses with a JSON form, and the JSON schema is versioned.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from enum import StrEnum

from injector.calibrate import Calibration
from injector.calibrate import merge as merge_calibrations
from trainwreck.errors import UsageError

SCHEMA = "trainwreck.report/1"


class Status(StrEnum):
    """How a mutant fared. Each is also its plain string, which is what JSON and templates see."""

    KILLED = "killed"  # a guard failed on the mutant (and not on the unmutated code in that order)
    TIMEOUT = "timeout"  # the guard ran past its limit on the mutant: counted as caught
    SURVIVED = "survived"  # every guard test that reaches the mutated code passed
    NO_COVERAGE = "no_coverage"  # no guard test runs the mutated code
    ERROR = "error"  # the mutant does not compile or import, or crashed the tool: not scored
    IGNORED = "ignored"  # silenced by the project (a comment or skip-mutants): not run, not scored


KILLED, TIMEOUT, SURVIVED, NO_COVERAGE, ERROR, IGNORED = tuple(Status)
STATUSES = tuple(Status)


def percent(caught: int, covered: int) -> int | None:
    """The mutation score as every surface shows it (console, markdown, HTML, JSON): a whole
    percentage, floored so that no report says 100% while a mutant survives; None when no
    mutant was covered."""
    return caught * 100 // covered if covered else None


@dataclass(frozen=True)
class Suggestion:
    """A guard test `injector suggest` wrote for a survivor, and whether it was verified."""

    path: str  # where the test file was (or would be) written, relative to the project
    test: str  # the test file's text
    verified: bool  # it passes on the unmutated code and kills the survivor
    note: str  # one line: the test that kills it, or why no verified test was found
    seconds: float | None = None  # the verified test's CPU seconds on the unmutated code


@dataclass(frozen=True)
class Outcome:
    """How one mutant fared against the guards."""

    mutant_id: str
    operator: str
    file: str
    line: int
    description: str
    diff: str
    status: str
    test: str | None = None  # the guard test that killed it (or was running at the timeout)
    message: str | None = None  # its first failure line, or what went wrong
    duration: float = 0.0  # seconds from starting the mutant's process to its result
    tests_run: int = 0
    guard_seconds: float = 0.0  # of which the guard's own tests ran
    note: str | None = None  # when the verdict needed a second look (test order, a timeout run alone)
    # the guard tests that run the mutated lines in the baseline (those a run may use)
    covered_by: tuple[str, ...] = ()
    cached: bool = False  # taken from the outcome cache: nothing it depends on changed since it was found
    suggestion: Suggestion | None = None  # a survivor's suggested guard (`injector suggest`)

    def to_json(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class Baseline:
    """The unmutated guards: how long each test takes, and which are flaky."""

    tests: int
    duration: float
    flaky: tuple[str, ...] = ()
    repeat: int = 1
    names: tuple[str, ...] = ()  # every guard test, in collection order
    cold: str = ""  # why every run imported the guard's tests afresh ("": they were imported once)


@dataclass(frozen=True)
class Report:
    """A whole campaign (or a merge of shard campaigns)."""

    project: str
    guard: str
    device: str
    baseline: Baseline
    outcomes: tuple[Outcome, ...]
    duration: float
    shards: tuple[str, ...] = ("1/1",)
    sources: dict[str, str] = field(default_factory=dict, compare=False)  # file -> original text
    created: str = ""  # when the campaign ran (ISO 8601, UTC)
    version: str = ""  # the trainwreck that ran it
    repo_path: str = ""  # the project's folder within its git repository ("" at its top), for links
    calibration: Calibration | None = None  # `--calibrate`: triage's answers on the failing runs

    def counts(self) -> Counter[str]:
        return Counter(outcome.status for outcome in self.outcomes)

    @property
    def covered(self) -> int:
        """Mutants some guard ran against (errors are kept apart, neither kill nor survivor)."""
        counts = self.counts()
        return counts[KILLED] + counts[TIMEOUT] + counts[SURVIVED]

    @property
    def score(self) -> float | None:
        """Killed and timed-out mutants over covered mutants; None when nothing was covered."""
        counts = self.counts()
        return (counts[KILLED] + counts[TIMEOUT]) / self.covered if self.covered else None

    @property
    def percent(self) -> int | None:
        """The score as shown: `percent` of the caught and the covered mutants."""
        counts = self.counts()
        return percent(counts[KILLED] + counts[TIMEOUT], self.covered)

    @property
    def cached(self) -> int:
        """Outcomes taken from the outcome cache rather than run."""
        return sum(1 for outcome in self.outcomes if outcome.cached)

    def by_operator(self) -> dict[str, Counter[str]]:
        table: dict[str, Counter[str]] = {}
        for outcome in self.outcomes:
            table.setdefault(outcome.operator, Counter())[outcome.status] += 1
        return table

    def to_json(self) -> dict[str, object]:
        data = self._to_json()
        if self.calibration is not None:
            data["calibration"] = self.calibration.to_json()
        return data

    def _to_json(self) -> dict[str, object]:
        return {
            "schema": SCHEMA,
            "project": self.project,
            "guard": self.guard,
            "device": self.device,
            "shards": list(self.shards),
            "created": self.created,
            "version": self.version,
            "repo_path": self.repo_path,
            "duration": round(self.duration, 3),
            "baseline": asdict(self.baseline),
            "score": self.score,
            "percent": self.percent,  # the score as the console and the reports show it
            "counts": {status: self.counts()[status] for status in STATUSES},
            "cached": self.cached,
            "outcomes": [o.to_json() for o in sorted(self.outcomes, key=_order)],
            "sources": self.sources,
        }

    @classmethod
    def from_json(cls, data: dict, name: str = "report") -> Report:
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            raise UsageError(f"{name}: not a trainwreck report (expected schema {SCHEMA})")
        try:
            baseline = data["baseline"]
            return cls(
                project=data["project"],
                guard=data["guard"],
                device=data["device"],
                baseline=Baseline(
                    baseline["tests"],
                    baseline["duration"],
                    tuple(baseline.get("flaky", ())),
                    baseline.get("repeat", 1),
                    tuple(baseline.get("names", ())),
                    baseline.get("cold", ""),
                ),
                outcomes=tuple(_outcome(o) for o in data["outcomes"]),
                duration=data["duration"],
                shards=tuple(data.get("shards", ("1/1",))),
                sources=dict(data.get("sources", {})),
                created=data.get("created", ""),
                version=data.get("version", ""),
                repo_path=data.get("repo_path", ""),
                calibration=Calibration.from_json(data["calibration"]) if data.get("calibration") else None,
            )
        except (KeyError, TypeError) as error:
            raise UsageError(f"{name}: malformed trainwreck report ({error})") from None


def _outcome(data: dict) -> Outcome:
    suggestion = data.get("suggestion")
    return Outcome(
        **{
            **data,
            "covered_by": tuple(data.get("covered_by", ())),
            "suggestion": Suggestion(**suggestion) if suggestion is not None else None,
        }
    )


def ordered(outcomes) -> tuple[Outcome, ...]:
    """Outcomes in report order: by file, line, operator and id."""
    return tuple(sorted(outcomes, key=_order))


def _order(outcome: Outcome) -> tuple:
    return (outcome.file, outcome.line, outcome.operator, outcome.mutant_id)


def merge(reports: list[Report]) -> Report:
    """One report from the reports of the shards of one campaign."""
    if not reports:
        raise UsageError("nothing to merge")
    first = reports[0]
    for other in reports[1:]:
        if (other.project, other.guard) != (first.project, first.guard):
            raise UsageError("the reports come from different campaigns (project or guard differ)")
    outcomes: dict[str, Outcome] = {}
    for report in reports:
        for outcome in report.outcomes:
            outcomes.setdefault(outcome.mutant_id, outcome)
    sources: dict[str, str] = {}
    for report in reports:
        sources.update(report.sources)
    flaky = sorted({name for report in reports for name in report.baseline.flaky})
    names = list(dict.fromkeys(name for report in reports for name in report.baseline.names))
    return Report(
        project=first.project,
        guard=first.guard,
        device=first.device,
        baseline=Baseline(
            first.baseline.tests,
            max(r.baseline.duration for r in reports),
            tuple(flaky),
            first.baseline.repeat,
            tuple(names),
            first.baseline.cold,
        ),
        outcomes=tuple(sorted(outcomes.values(), key=_order)),
        duration=max(r.duration for r in reports),
        shards=tuple(sorted({s for r in reports for s in r.shards})),
        sources=sources,
        created=min(r.created for r in reports),
        version=first.version,
        repo_path=first.repo_path,
        calibration=merge_calibrations([r.calibration for r in reports if r.calibration is not None]),
    )
