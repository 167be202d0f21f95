"""`triage explain`: from a log (and optionally a diff and telemetry) to a ranked report.

This is the one place the pieces meet: read the log, build series, run the detectors, add
diff and telemetry symptoms, rank causes with the table. Rendering lives in `triage.render`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Literal

from trainwreck.errors import BadInputError
from triage import detectors, reader, table
from triage.detectors import telemetry as telemetry_mod
from triage.records import Cause, Symptom
from triage.series import Series, SeriesBuilder

# Symptoms that mean the run failed, whether or not a cause explains them.
FAILURE_SYMPTOMS = frozenset(
    {
        "crashed",
        "loss-non-finite",
        "loss-diverging",
        "log-stopped",
        "job-cancelled",
        "collective-timeout",
        "out-of-memory",
        "gpu-idle",
        # a loss frozen at one level after it moved: a model collapsed to one output
        "loss-fell-then-froze",
        # ended far behind a healthy run of the same program (`--baseline`)
        "worse-than-baseline",
    }
)


Status = Literal["explained", "unexplained", "healthy"]


@dataclass(frozen=True)
class Diagnosis:
    """Everything `triage explain` found about one run."""

    log: str
    causes: tuple[Cause, ...]
    symptoms: tuple[Symptom, ...]
    series: dict[str, Series] = field(repr=False)
    lines: int = 0
    sampled: bool = False
    cut_lines: int = 0
    events_thinned: int = 0
    crowded_blocks: int = 0
    ranks: tuple[int, ...] = ()
    failure_step: int | None = None
    threshold: float = 0.0

    @property
    def status(self) -> Status:
        """ "explained" (a cause found), "unexplained" (a failure, no known cause) or "healthy"."""
        if self.causes:
            return "explained"
        if self.failures:
            return "unexplained"
        return "healthy"

    @property
    def tied(self) -> tuple[Cause, ...]:
        """The causes tied first (see triage.ties): empty when the first cause stands alone."""
        from triage.ties import tied_first

        return tied_first(self.causes)

    @property
    def failures(self) -> tuple[Symptom, ...]:
        """The symptoms that mean the run failed (a crash, a non-finite loss, a hang, ...)."""
        return tuple(s for s in self.symptoms if s.name in FAILURE_SYMPTOMS)

    def to_json(self) -> dict[str, object]:
        return {
            "log": self.log,
            "status": self.status,
            "causes": [c.to_json() for c in self.causes],
            "tied": [c.id for c in self.tied],
            "symptoms": [s.to_json() for s in self.symptoms],
            "series": {name: s.summary() for name, s in self.series.items()},
            "failure_step": self.failure_step,
            "lines": self.lines,
            "sampled": self.sampled,
            "cut_lines": self.cut_lines,
            "events_thinned": self.events_thinned,
            "crowded_blocks": self.crowded_blocks,
            "ranks": list(self.ranks),
            "threshold": self.threshold,
        }


def explain(
    log: str | os.PathLike[str] | reader.Begun,
    *,
    diff: str | os.PathLike[str] | None = None,
    telemetry: str | os.PathLike[str] | None = None,
    causes: str | os.PathLike[str] | None = None,
    search_cwd: bool = False,
    baseline: str | os.PathLike[str] | None = None,
) -> Diagnosis:
    """Read `log` ("-": standard input, or a reading already begun) and return the ranked causes;
    raise BadInputError for input that is not a log. The cause table is ours, extended by `causes`; with `search_cwd`
    (a person's own `triage explain`) by `trainwreck-causes.yaml` in the cwd when `causes` is
    not given. `baseline`: the log of a healthy run of the same program (the base branch's last
    green run), which the run is read against (triage.baseline)."""
    if baseline is not None:
        from triage import baseline as baseline_mod

        reference = baseline_mod.read(baseline)
    with log if isinstance(log, reader.Begun) else reader.start(log) as begun:  # workers read while the table loads
        tab = table.load(causes, search_cwd=search_cwd)
        builder = SeriesBuilder()
        add = builder.add
        # metrics are parsed while the rest of the log is still being read
        scan = begun.collect(each=lambda rd: add(rd.text, rd.line, rd.rank))
    if scan.bytes_read == 0:
        raise BadInputError(f"{scan.path}: empty log, nothing to explain")
    series = builder.build()
    ctx = detectors.Context(scan.events, series, scan.readings)
    if telemetry is not None:
        ctx.telemetry = telemetry_mod.load(telemetry)
        ctx.telemetry_path = str(telemetry)
    symptoms = detectors.detect(ctx)
    if baseline is not None:
        against = baseline_mod.compare(series, scan.readings, reference)
        # a baseline is evidence about a failure: beside a run as good as it, it names nothing
        if any(s.name in FAILURE_SYMPTOMS for s in symptoms + against) or table.rank(symptoms, tab):
            symptoms += against
    ranked = table.rank(symptoms, tab)
    if diff is not None:
        from triage import diffs

        diff_symptoms = diffs.symptoms(diff)
        # a diff is evidence about a failure, not a failure: on a healthy run it names nothing
        if ranked or any(s.name in FAILURE_SYMPTOMS for s in symptoms):
            symptoms += diff_symptoms
            ranked = table.rank(symptoms, tab)
    return Diagnosis(
        scan.path,
        tuple(ranked),
        tuple(symptoms),
        series,
        scan.lines,
        scan.sampled,
        scan.cut_lines,
        scan.events_thinned,
        scan.crowded_blocks,
        tuple(sorted(scan.ranks)),
        _failure_step(symptoms, series),
        tab.threshold,
    )


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
