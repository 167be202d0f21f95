"""The messages between a campaign and its workers, as typed records.

A campaign starts one worker per job slot. Commands go to a worker as JSON lines on its
standard input; the worker answers with events, JSON lines on a pipe of their own (the guard's
output never mixes in). Each message is a frozen dataclass; `encode` and `decode` turn them
into lines and back, keyed by the class name.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields

from injector.outcomes import Status


@dataclass(frozen=True)
class MutantSpec:
    """What a worker needs to apply one mutant (edits are `[start, end, text]` on the original)."""

    id: str
    file: str
    edits: tuple[tuple[int, int, str], ...]
    function: str | None = None
    function_line: int | None = None
    in_main: bool = False


# ---- commands: campaign -> worker ----


@dataclass(frozen=True)
class Baseline:
    """Run every guard test `repeat` times on the unmutated project, recording reach."""

    repeat: int = 1
    limit: float = 600.0


@dataclass(frozen=True)
class Warm:
    """Import these library modules now (the guard imported them lazily in the baseline)."""

    modules: tuple[str, ...] = ()


@dataclass(frozen=True)
class Prepare:
    """After the baseline: a JSON file with `sources` (the original text of every file mutants
    are made of; never read back from a slot), `collection` (every usable test in collection
    order, the fallback order) and `collection_limit`. A file, not a line: it can be large, and
    a pipe would block while the worker is busy."""

    path: str


@dataclass(frozen=True)
class Run:
    """Run one mutant against `tests`, in that order, to the first failure.

    What is known of `tests` in this order on the unmutated code: the first `clean_prefix`
    pass, and the `clean_failing`-th (1-based) fails (None: not known). The worker finds out
    more when a kill needs it.
    """

    mutant: MutantSpec
    tests: tuple[str, ...]
    limit: float
    clean_prefix: int = 0
    clean_failing: int | None = None


@dataclass(frozen=True)
class Stop:
    """Leave now."""


# ---- events: worker -> campaign ----


@dataclass(frozen=True)
class Ready:
    """The worker is warm: the guard's tests (in collection order) and what start-up cost;
    `cold`: why every run collects the tests afresh instead (None: they were collected once)."""

    tests: tuple[str, ...]
    startup: float
    cold: str | None = None


@dataclass(frozen=True)
class Modules:
    """Library modules the baseline imported lazily (so other workers can warm up too)."""

    modules: tuple[str, ...]


@dataclass(frozen=True)
class TestRecord:
    """One guard test in the baseline: outcome per repetition, slowest time, what it ran."""

    name: str
    outcomes: tuple[str, ...]
    duration: float
    lines: tuple[tuple[str, int], ...] = ()
    scripts: tuple[str, ...] = ()
    writes_state: bool = False  # changed project module-level values the later tests may read
    message: str | None = None  # how it failed, where it did


@dataclass(frozen=True)
class BaselineDone:
    tests: tuple[TestRecord, ...]


@dataclass(frozen=True)
class Result:
    """How one mutant fared. `note` says when a verdict needed a second look (the order the
    tests ran in, a timeout confirmed alone); `clean_prefix` and `clean_failing` report what
    the worker learned about the unmutated code in this test order, for the campaign to reuse.
    `log` is the output of the run that decided a failing verdict, kept only when asked."""

    id: str
    status: Status
    test: str | None = None
    message: str | None = None
    tests_run: int = 0
    guard_seconds: float = 0.0
    duration: float = 0.0
    note: str | None = None
    clean_prefix: int = 0
    clean_failing: int | None = None
    log: str | None = None  # under `--calibrate`: the guard's output (bounded) on a failing run


@dataclass(frozen=True)
class Fatal:
    message: str


Message = Baseline | Warm | Prepare | Run | Stop | Ready | Modules | BaselineDone | Result | Fatal
_KINDS = {
    cls.__name__: cls for cls in (Baseline, Warm, Prepare, Run, Stop, Ready, Modules, BaselineDone, Result, Fatal)
}


def encode(message: Message) -> bytes:
    """One JSON line."""
    return (json.dumps({"kind": type(message).__name__, **asdict(message)}) + "\n").encode()


def decode(line: bytes | str) -> Message:
    """The record a line holds (nested records and tuples restored)."""
    data = json.loads(line)
    cls = _KINDS[data.pop("kind")]
    return _build(cls, data)


def _build(cls, data: dict):
    values = {}
    for f in fields(cls):
        if f.name not in data:
            continue
        value = data[f.name]
        if f.name == "mutant":
            value = _build(MutantSpec, value)
        elif f.name == "tests" and cls is BaselineDone:
            value = tuple(_build(TestRecord, t) for t in value)
        elif f.name == "edits":
            value = tuple(tuple(e) for e in value)
        elif f.name == "lines":
            value = tuple((a, b) for a, b in value)
        elif f.name == "status":
            value = Status(value)
        elif isinstance(value, list):
            value = tuple(value)
        values[f.name] = value
    return cls(**values)
