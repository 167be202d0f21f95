"""A failing run read beside a healthy run of the same program (`triage explain --baseline`).

In CI the base branch's last green run of the same smoke training is usually at hand. Its log
is the reference a single log lacks: how far a healthy run gets, how many parameters train,
what rate it logs and how that rate moves. Each comparison is scale-free (a ratio to the
baseline at the same step), so no number from any one program is built in.

* `worse-than-baseline`: the run ends far behind the baseline at the same step (validation loss
  1.5x, training loss 2x, or an accuracy a tenth lower with its error 1.5x). Healthy runs of one
  program with other seeds stay within 1.25x of each other on validation and 1.6x on a noisy
  training loss (tests/triage/programs: every program's two healthy runs). It is a failure,
  with or without a cause.
* `fewer-trainable-than-baseline`: a parameter count the log prints fell while the model's total
  did not (`136,461 (num. trained: 1,677)` against `136,461 (num. trained: 136,461)`), or a
  count named trainable fell: parts of the model no longer train.
* `lr-above-baseline`: the rate logged is ten times the baseline's at the same steps.
* `loss-scale-as-baseline`: the run's first logged loss is within 1.5x of the baseline's first: the
  loss has the program's own scale, so a start far above a mean cross-entropy is how this program's
  loss starts (a margin softmax at scale 64 starts near 46), not a sum over the batch or a
  saturated start (a loss summed over a batch of 64 starts 64 times the baseline's).
* `lr-schedule-off-baseline`: through the first half of the run the rate stands apart from the
  baseline's at the same steps (its median ratio beyond 1.3x either way; a warm-up's first two
  logged rates left out, since they differ with where each log's steps fall), while its loss is
  still within 1.5x of the baseline's: the schedule is stepped at another rate. (Where the loss
  fell behind first, an adaptive schedule is following the failure.)

The symptoms name causes only through the cause table, and only on a run that failed.
"""

from __future__ import annotations

import math
import os
import re
from bisect import bisect_right
from dataclasses import dataclass
from statistics import median

from trainwreck.errors import BadInputError
from triage import reader
from triage.detectors.signatures import parse_count
from triage.reader import Reading
from triage.records import Evidence, Symptom
from triage.series import Point, Series, SeriesBuilder

EMITS = frozenset(
    {
        "worse-than-baseline",
        "fewer-trainable-than-baseline",
        "lr-above-baseline",
        "lr-schedule-off-baseline",
        "loss-scale-as-baseline",
    }
)
# how far behind the baseline, at the same step, counts as failed (see the module docstring)
VAL_LOSS_RATIO = 1.5
TRAIN_LOSS_RATIO = 2.0
ACCURACY_DROP = 0.1
LR_RATIO = 10.0
SCHEDULE_OFF = 1.3  # healthy runs of one program with other seeds log rates within a few percent
SAME_SCALE = 1.5  # a first loss within this factor of the baseline's has the program's scale (a sum over two is 2x)


@dataclass(frozen=True)
class Reference:
    """What the baseline run's log says: its series and its printed lines."""

    path: str
    series: dict[str, Series]
    readings: list[Reading]


def read(path: str | os.PathLike[str]) -> Reference:
    """The baseline run's series and lines (BadInputError for what is no log)."""
    if str(path) == "-":
        raise BadInputError("--baseline: a file, not standard input (the run's log may come from there)")
    with reader.start(path) as begun:
        builder = SeriesBuilder()
        scan = begun.collect(each=lambda rd: builder.add(rd.text, rd.line, rd.rank))
    if scan.bytes_read == 0:
        raise BadInputError(f"{scan.path}: empty baseline log")
    return Reference(scan.path, builder.build(), scan.readings)


def compare(series: dict[str, Series], readings: list[Reading], base: Reference) -> list[Symptom]:
    """The symptoms of a run against its baseline."""
    out: list[Symptom] = []
    worse = _worse(series, base)
    if worse is not None:
        out.append(worse)
    out.extend(_fewer_trainable(readings, base))
    out.extend(_rate(series, base))
    scale = _same_scale(series, base)
    if scale is not None:
        out.append(scale)
    return out


def _same_scale(series: dict[str, Series], base: Reference) -> Symptom | None:
    """The run's first loss beside the baseline's first: within SAME_SCALE of it either way."""
    run, ref = series.get("loss"), base.series.get("loss")
    if run is None or ref is None or run.signed or ref.signed or run.epoch_sum != ref.epoch_sum:
        return None
    mine = next((p for p in run.points if math.isfinite(p.value)), None)
    theirs = next((p for p in ref.points if math.isfinite(p.value)), None)
    if mine is None or theirs is None or mine.value <= 0 or theirs.value <= 0:
        return None
    ratio = mine.value / theirs.value
    if not 1 / SAME_SCALE <= ratio <= SAME_SCALE:
        return None
    return Symptom(
        "loss-scale-as-baseline",
        f"the first {run.name} is {mine.value:.4g}, {ratio:.3g}x the baseline's first {theirs.value:.4g}: "
        "the loss has this program's own scale",
        _evidence(mine, theirs, base.path),
        step=mine.step,
        value=ratio,
    )


# ---- how far the run got ----


def _tail(points: list[Point]) -> list[Point]:
    finite = [p for p in points if math.isfinite(p.value)]
    return finite[-max(1, len(finite) // 3) :]


def _at_steps(base: list[Point], first: int, last: int) -> list[Point]:
    """The baseline's finite points over the run's step range; its last ones up to `last` where
    it logged none in the range."""
    finite = [p for p in base if math.isfinite(p.value)]
    inside = [p for p in finite if first <= p.step <= last]
    if inside:
        return inside
    before = [p for p in finite if p.step <= last]
    return before[-3:]


def _mean(points: list[Point]) -> float:
    return sum(p.value for p in points) / len(points)


def _worse(series: dict[str, Series], base: Reference) -> Symptom | None:
    for name, ratio in (("val_loss", VAL_LOSS_RATIO), ("loss", TRAIN_LOSS_RATIO)):
        run, ref = series.get(name), base.series.get(name)
        if run is None or ref is None or run.signed or ref.signed or run.epoch_sum != ref.epoch_sum:
            continue
        tail = _tail(run.points)
        if not tail:
            continue
        against = _at_steps(ref.points, tail[0].step, tail[-1].step)
        if not against:
            continue
        mine, theirs = _mean(tail), _mean(against)
        if theirs <= 0 or mine <= 0:
            continue
        if mine / theirs >= ratio:
            return Symptom(
                "worse-than-baseline",
                f"{name} ends at {mine:.4g}, {mine / theirs:.3g}x the baseline's {theirs:.4g} at the same steps",
                _evidence(tail[-1], against[-1], base.path),
                step=tail[-1].step,
                value=mine / theirs,
            )
    for name in ("val_accuracy", "accuracy"):
        run, ref = series.get(name), base.series.get(name)
        if run is None or ref is None:
            continue
        tail = _tail(run.points)
        against = _at_steps(ref.points, tail[0].step, tail[-1].step) if tail else []
        if not tail or not against:
            continue
        mine, theirs = _fraction(_mean(tail)), _fraction(_mean(against))
        if theirs - mine >= ACCURACY_DROP and (1 - mine) >= 1.5 * (1 - theirs):
            return Symptom(
                "worse-than-baseline",
                f"{name} ends at {mine:.3g}, against the baseline's {theirs:.3g} at the same steps",
                _evidence(tail[-1], against[-1], base.path),
                step=tail[-1].step,
                value=(1 - mine) / max(1 - theirs, 1e-9),
            )
    return None


def _fraction(accuracy: float) -> float:
    return accuracy / 100 if accuracy > 1.0 else accuracy


# ---- parameters that no longer train ----

_PARAMETER_LINE = re.compile(r"param|trainable|trained\b|gradients\b", re.I)
_TRAINABLE_WORD = re.compile(r"(?<!non-)(?<!non )\b(?:trainable|trained|gradients|requires_grad)\b", re.I)
# a count, with a thousands separator or a unit (SpeechBrain's `21.5k trainable parameters`)
_COUNT = re.compile(r"(?<![\w.])(?:\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)\s?[kKMB]?(?![\w.])")


# a logger's clock and date (`2026-11-27 18:44:12,720`, `[11/27 10:00:01]`): no counts
_STAMP = re.compile(r"\d{4}[-/]\d{2}[-/]\d{2}|\d{1,2}/\d{1,2}(?:/\d{2,4})?|\d{1,2}:\d{2}(?::\d{2})?(?:[.,]\d+)?")


def _counts(text: str) -> list[float]:
    plain = _STAMP.sub(" ", text)
    return [n for m in _COUNT.finditer(plain) if (n := parse_count(m.group(0))) is not None]


def _shape(text: str) -> str:
    return _COUNT.sub("#", _STAMP.sub(" ", text)).strip()


def _parameter_lines(readings: list[Reading]) -> dict[str, tuple[Reading, list[float]]]:
    """Each parameter-count line's shape (its text without numbers) -> its first reading."""
    out: dict[str, tuple[Reading, list[float]]] = {}
    for rd in readings:
        if rd.index != 0 or len(rd.text) > 400 or not _PARAMETER_LINE.search(rd.text):
            continue
        counts = _counts(rd.text)
        if counts:
            out.setdefault(_shape(rd.text), (rd, counts))
    return out


def _fewer_trainable(readings: list[Reading], base: Reference) -> list[Symptom]:
    mine, theirs = _parameter_lines(readings), _parameter_lines(base.readings)
    fell: list[tuple[Reading, float, float]] = []
    kept: list[float] = []
    for shape, (rd, counts) in mine.items():
        if shape not in theirs:
            continue
        ref = theirs[shape][1]
        if len(ref) != len(counts):
            continue
        for now, before in zip(counts, ref, strict=True):
            if before >= 10 and now <= 0.95 * before:
                fell.append((rd, now, before))
            elif before >= 1000 and now == before:
                kept.append(before)
    for rd, now, before in fell:
        # the model is the same (a total of its size unchanged), or the count is named trainable
        if _TRAINABLE_WORD.search(rd.text) or any(total >= 0.5 * before for total in kept):
            share = f"{now:,.0f} against the baseline's {before:,.0f}"
            return [
                Symptom(
                    "fewer-trainable-than-baseline",
                    f"fewer parameters train than in the baseline: {share}",
                    (Evidence(rd.line, rd.text.strip()[:300], rank=rd.rank),),
                    value=now / before,
                )
            ]
    return []


# ---- the learning rate ----


def _matched(run: Series, ref: Series) -> list[tuple[Point, float]]:
    """Each of the run's finite rate points with the baseline's rate at the same step (its
    latest at or before it)."""
    base = sorted((p.step, k, p.value) for k, p in enumerate(ref.points) if math.isfinite(p.value))
    steps = [step for step, _, _ in base]
    out = []
    for p in run.points:
        at = bisect_right(steps, p.step)
        if math.isfinite(p.value) and at and base[at - 1][2] > 0:
            out.append((p, base[at - 1][2]))
    return out


def _rate(series: dict[str, Series], base: Reference) -> list[Symptom]:
    run, ref = series.get("lr"), base.series.get("lr")
    if run is None or ref is None:
        return []
    pairs = _matched(run, ref)
    if len(pairs) < 2:
        return []
    ratios = [p.value / b for p, b in pairs]
    typical = median(ratios)
    if typical >= LR_RATIO:
        point, theirs = pairs[0]
        return [
            Symptom(
                "lr-above-baseline",
                f"the logged rate is {typical:.3g}x the baseline's at the same steps ({point.value:.3g} against {theirs:.3g})",
                _evidence(point, None, base.path),
                step=point.step,
                value=typical,
            )
        ]
    # the first logged rates of a warm-up differ with where each log's steps fall: from the third
    # on, over the first half of the run, the rate must stand apart from the baseline's
    early = ratios[2 : max(3, len(ratios) // 2)]
    if len(early) < 3 or 1 / SCHEDULE_OFF < median(early) < SCHEDULE_OFF:
        return []
    k = 2 + next(k for k, r in enumerate(early) if not 1 / SCHEDULE_OFF < r < SCHEDULE_OFF)
    p, b = pairs[k]
    if _failing_by(series, base, p.step):
        return []  # the rate moved after the run had failed: an adaptive schedule following the loss
    return [
        Symptom(
            "lr-schedule-off-baseline",
            f"the rate stands at {p.value:.3g} against the baseline's {b:.3g} at step {p.step}, and apart from it "
            "through the first half of the run",
            _evidence(p, None, base.path),
            step=p.step,
            value=ratios[k],
        )
    ]


def _failing_by(series: dict[str, Series], base: Reference, step: int) -> bool:
    """Whether the run's loss already stood far behind the baseline's by `step`: a schedule that
    reacts to the loss (ReduceLROnPlateau, NewBob) then moves apart because the run failed, not
    the other way round."""
    for name in ("loss", "val_loss"):
        run, ref = series.get(name), base.series.get(name)
        if run is None or ref is None:
            continue
        mine = [p for p in run.points if p.step <= step]
        theirs = [p for p in ref.points if p.step <= step and math.isfinite(p.value)]
        if not mine or not theirs:
            continue
        if not math.isfinite(mine[-1].value) or (theirs[-1].value > 0 and mine[-1].value >= 1.5 * theirs[-1].value):
            return True
    return False


def _evidence(point: Point, theirs: Point | None, path: str) -> tuple[Evidence, ...]:
    out = [Evidence(point.line, f"step {point.step}: {point.value:.4g}", rank=point.rank)]
    if theirs is not None:
        out.append(Evidence(theirs.line, f"baseline {path}, step {theirs.step}: {theirs.value:.4g}", source="baseline"))
    return tuple(out)
