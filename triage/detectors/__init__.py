"""Symptom detectors: small units that turn a log's events and series into named symptoms.

Each detector is a function `(Context) -> list[Symptom]`; `DETECTORS` lists them in the order
they run. They never raise on odd input: a detector that finds nothing it understands returns
nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache

from triage.reader import Reading
from triage.records import Symptom
from triage.series import Series


@dataclass
class Context:
    """What the detectors look at: events (keyword lines), metric series and telemetry samples."""

    events: list[Reading]
    series: dict[str, Series]
    readings: list[Reading] = field(default_factory=list)
    telemetry: list[dict[str, float]] = field(default_factory=list)
    telemetry_path: str | None = None


Detector = Callable[[Context], list[Symptom]]


def all_detectors() -> tuple[Detector, ...]:
    from triage.detectors import assertions, numeric, probe, progress, shape, signatures, telemetry

    return (
        signatures.detect,
        numeric.detect,
        shape.detect,
        progress.detect,
        telemetry.detect,
        assertions.detect,
        probe.detect,
    )


@cache
def emitted_by(detector: Detector) -> frozenset[str]:
    """The symptom names `detector` declares (its module's `EMITS`, helpers' included)."""
    import importlib

    module = importlib.import_module(detector.__module__)
    names = set(module.EMITS)
    for helper in getattr(module, "HELPERS", ()):
        names |= importlib.import_module(f"{__name__}.{helper}").EMITS
    return frozenset(names)


@cache
def symptom_names() -> frozenset[str]:
    """Every symptom name a detector can emit: the vocabulary the cause table is checked against
    (a PR diff adds `diff:<fault id>` symptoms, see triage.diffs; a baseline run its comparisons,
    see triage.baseline)."""
    from triage import baseline  # a healthy run of the same program read beside this one

    names: set[str] = set(baseline.EMITS)
    for detector in all_detectors():
        names |= emitted_by(detector)
    return frozenset(names)


def detect(ctx: Context) -> list[Symptom]:
    """Run every detector and return their symptoms, earliest evidence first."""
    out: list[Symptom] = []
    for detector in all_detectors():
        found = detector(ctx)
        # A name no detector declares could never be matched by a cause: a bug, caught by tests.
        declared = emitted_by(detector)
        assert all(s.name in declared for s in found), (detector.__module__, found)
        out.extend(found)
    return sorted(out, key=lambda s: s.first_line)
