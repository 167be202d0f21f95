"""`triage explain`: from a log (and optionally a diff and telemetry) to a ranked report.

This is the one place the pieces meet: read the log, build series, run the detectors, add
diff and telemetry symptoms, rank causes with the table. Rendering lives in `triage.render`.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field

from triage import detectors, reader, table
from triage.detectors import telemetry as telemetry_mod
from triage.errors import BadInputError
from triage.records import Cause, Symptom
from triage.series import Point, Series, SeriesBuilder, parse_reading

# Symptoms that mean the run failed, whether or not a cause explains them.
FAILURE_SYMPTOMS = frozenset({
    "crashed", "loss-non-finite", "loss-diverging", "log-stopped", "job-cancelled",
    "collective-timeout", "out-of-memory", "gpu-idle",
})


@dataclass(frozen=True)
class Report:
    """Everything `triage explain` found about one run."""

    log: str
    causes: tuple[Cause, ...]
    symptoms: tuple[Symptom, ...]
    series: dict[str, Series] = field(repr=False)
    lines: int = 0
    sampled: bool = False
    skipped_bytes: int = 0
    ranks: tuple[int, ...] = ()
    failure_step: int | None = None
    threshold: float = 0.0

    @property
    def status(self) -> str:
        """"explained" (a cause found), "unexplained" (a failure, no known cause) or "healthy"."""
        if self.causes:
            return "explained"
        if any(s.name in FAILURE_SYMPTOMS for s in self.symptoms):
            return "unexplained"
        return "healthy"

    def to_json(self) -> dict[str, object]:
        return {
            "log": self.log,
            "status": self.status,
            "causes": [c.to_json() for c in self.causes],
            "symptoms": [s.to_json() for s in self.symptoms],
            "series": {name: s.summary() for name, s in self.series.items()},
            "failure_step": self.failure_step,
            "lines": self.lines,
            "sampled": self.sampled,
            "skipped_bytes": self.skipped_bytes,
            "ranks": list(self.ranks),
            "threshold": self.threshold,
        }


def explain(log: str | os.PathLike[str], *, diff: str | os.PathLike[str] | None = None,
            telemetry: str | os.PathLike[str] | None = None,
            causes: str | os.PathLike[str] | None = None,
            max_bytes: int = reader.MAX_BYTES) -> Report:
    """Read `log` and return the ranked causes; raise BadInputError for input that is not a log."""
    tab = table.load(causes)
    scan = reader.scan(log, max_bytes=max_bytes)
    if scan.bytes_read == 0:
        raise BadInputError(f"{log}: empty log, nothing to explain")
    builder = SeriesBuilder()
    for rd in scan.readings:
        builder.add(rd.text, rd.line, rd.rank)
    series = builder.build()
    if scan.sampled and scan.offsets:
        _pin_first_non_finite(scan, series)
    ctx = detectors.Context(scan.events, series, scan.readings)
    if telemetry is not None:
        ctx.telemetry = telemetry_mod.load(telemetry)
        ctx.telemetry_path = str(telemetry)
    symptoms = detectors.detect(ctx)
    ranked = table.rank(symptoms, tab)
    if diff is not None:
        from triage import diffs

        diff_symptoms = diffs.symptoms(diff)
        # a diff is evidence about a failure, not a failure: on a healthy run it names nothing
        if ranked or any(s.name in FAILURE_SYMPTOMS for s in symptoms):
            symptoms += diff_symptoms
            ranked = table.rank(symptoms, tab)
    return Report(str(log), tuple(ranked), tuple(symptoms), series, scan.lines, scan.sampled,
                  scan.skipped_bytes, tuple(sorted(scan.ranks)), _failure_step(symptoms, series),
                  tab.threshold)


_NON_FINITE = re.compile(rb"(?<![A-Za-z_])(?:nan|NaN|inf|Inf)(?![A-Za-z_])")


def _pin_first_non_finite(scan: reader.Scan, series: dict[str, Series]) -> None:
    """In a sampled log, find the exact first non-finite loss between the two samples around it."""
    loss = series.get("loss")
    if loss is None:
        return
    idx = next((i for i, p in enumerate(loss.points) if not math.isfinite(p.value)), None)
    if not idx:
        return
    prev, bad = loss.points[idx - 1], loss.points[idx]
    start = scan.offsets.get(prev.line) if prev.line is not None else None
    end = scan.offsets.get(bad.line) if bad.line is not None else None
    if start is None or end is None or end <= start or prev.line is None:
        return
    # skip the previous sample's own line, then look for the first line with a non-finite word
    found = reader.first_match_between(scan.path, start, end, _NON_FINITE)
    while found is not None:
        skipped, raw = found
        line = prev.line + skipped
        for rd in reader.split_readings(line, raw):
            step, metrics = parse_reading(rd.text)
            value = metrics.get("loss")
            if value is not None and not math.isfinite(value):
                loss.points.insert(idx, Point(step if step is not None else bad.step, value, line, rd.rank))
                return
        return


def _failure_step(symptoms: list[Symptom], series: dict[str, Series]) -> int | None:
    """The step the run failed at: the first non-finite loss, or the last step before a crash."""
    for s in symptoms:
        if s.name == "loss-non-finite" and s.step is not None:
            return s.step
    crash = [s for s in symptoms if s.name in ("crashed",) or s.name in FAILURE_SYMPTOMS and s.name != "loss-diverging"]
    loss = series.get("loss") or series.get("val_loss")
    if crash and loss and loss.points:
        line = min(s.first_line for s in crash)
        before = [p for p in loss.points if p.line is not None and p.line < line]
        if before:
            return before[-1].step
    for s in symptoms:
        if s.name == "loss-diverging" and s.step is not None:
            return s.step
    return None
