"""Symptom detectors: small units that turn a log's events and series into named symptoms.

Each detector is a function `(Context) -> list[Symptom]`; `DETECTORS` lists them in the order
they run. They never raise on odd input: a detector that finds nothing it understands returns
nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

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
    from triage.detectors import numeric, progress, shape, signatures, telemetry

    return (signatures.detect, numeric.detect, shape.detect, progress.detect, telemetry.detect)


def detect(ctx: Context) -> list[Symptom]:
    """Run every detector and return their symptoms, earliest evidence first."""
    out: list[Symptom] = []
    for detector in all_detectors():
        out.extend(detector(ctx))
    return sorted(out, key=lambda s: s.first_line)
