"""Scale-free symptoms from the shape of the loss curve, measured against the run's own start.

A loss printed by another program has another scale (a summed loss, another task, another
number of classes), so nothing here compares a value with a fixed number. Each rule uses
ratios of the run's own values, the order of its rises and falls, or the one scale a
classifier's loss does carry: ln(C), the loss of a uniform guess over C classes.

- `loss-gradual-climb`: after its lowest point the loss climbs back over many logged points,
  no single jump making most of the rise (gradients summed over steps, a growing step size).
- `loss-sudden-jump`: one logged step multiplies the loss many times over (an update too large).
- `loss-spiked-and-recovered`: the training or validation loss shot up many times over the low
  it had reached, then came back down near that low (an update too large the run survived).
- `loss-collapsed-to-log-c`: after shooting far above where it started, the loss settles at
  ln(C) and stays: the network went dead and predicts a uniform guess (dying ReLUs).
- `non-finite-intermittent`: NaN/inf losses between finite ones: the weights are intact, the
  forward overflowed on some batches (reduced precision without loss scaling).
- `non-finite-after-unstable`: the loss swung up and down before it went non-finite.
- `grad-norm-non-finite`: the gradient norm went NaN/inf for good while the printed loss did
  not (the HF Trainer filters non-finite losses and prints 0 in their place).
- `val-loss-constant`: every evaluation printed the very same validation loss: the weights
  never changed.
- `loss-huge-and-learning` / `loss-huge-and-stuck`: a first loss far above any classifier's
  ln(C) that then falls as fast as a normal run (a loss summed instead of averaged), or barely
  moves (saturated from a bad initialisation).
"""

from __future__ import annotations

import math
from bisect import bisect_left
from statistics import median

from triage.detectors import Context
from triage.records import Evidence, Symptom
from triage.series import Point, Series, as_fraction

# The symptom names this detector emits (the cause table may only name declared symptoms).
EMITS: frozenset[str] = frozenset(
    {
        "grad-norm-non-finite",
        "loss-collapsed-to-log-c",
        "loss-falling",
        "loss-fast-climb",
        "loss-gradual-climb",
        "loss-huge-and-learning",
        "loss-huge-and-stuck",
        "loss-spiked-and-recovered",
        "loss-sudden-jump",
        "non-finite-after-unstable",
        "non-finite-early",
        "non-finite-intermittent",
        "train-loss-far-above-val",
        "val-loss-constant",
    }
)

CLIMB_POINTS = 4  # logged points the climb must span
CLIMB_RATIO = 3.0  # how far above its lowest point the loss must end up
JUMP_RATIO = 8.0  # one step multiplying the loss this much is a jump
SPIKE = 5.0  # a loss this many times the low it had reached is a spike
RECOVERED = 1.5  # and one back within this factor of that low, ending there with no second spike, recovered
SPIKE_RATIO = 2.0  # "far above where it started" for the collapse
LOG_C_TOL = 0.04  # relative distance from ln(C)
MAX_CLASSES = 30  # the uniform-guess level can be told from a coincidence only for few classes
SWING = 0.15  # a relative change counted as a rise or a fall


def detect(ctx: Context) -> list[Symptom]:
    out: list[Symptom] = []
    loss = ctx.series.get("loss")
    if loss is not None and loss.signed:
        return non_finite_shape(loss)  # an objective with no floor at zero: only a NaN says something
    if loss is not None and loss.points:
        out += climb(loss)
        out += collapse(loss, ctx.series.get("accuracy") or ctx.series.get("val_accuracy"))
        out += non_finite_shape(loss)
        # an ELBO is summed over pixels by convention, RecBole prints an epoch's sum of batch losses:
        # the scale says nothing
        if "kl" not in ctx.series and not loss.epoch_sum:
            out += huge_start(loss, ctx.series.get("accuracy") or ctx.series.get("val_accuracy"))
        out += falling(loss)
    grad = ctx.series.get("grad_norm")
    if grad is not None and grad.points:
        out += grad_non_finite(grad, loss)
    val = ctx.series.get("val_loss")
    for series in (loss, val):
        if series is not None and not series.signed:
            out += spike_recovered(series)
    if val is not None:
        out += constant_validation(val)
        if loss is not None:
            out += train_far_above_val(loss, val)
    return out


def train_far_above_val(loss: Series, val: Series) -> list[Symptom]:
    """A training loss many times the validation loss, all along: the two are not on one scale.

    Training and evaluation compute the same criterion on the same kind of data; a training
    loss five times the validation one at every evaluation is a loss summed over the batch
    where the evaluation averages (or another criterion altogether), not overfitting, which
    goes the other way.
    """
    vals = [p for p in val.points if math.isfinite(p.value) and p.value > 0 and p.line is not None]
    train = [p for p in loss.points if math.isfinite(p.value) and p.value > 0 and p.line is not None]
    if len(vals) < 2 or len(train) < 4:
        return []
    train.sort(key=lambda p: p.line or 0)
    train_lines = [p.line or 0 for p in train]  # searched, not scanned: a big log has thousands
    ratios = []
    for v in vals:
        i = bisect_left(train_lines, v.line or 0)
        before = train[max(0, i - 3) : i]  # the last three training losses before the evaluation
        if before:
            ratios.append(median(p.value for p in before) / v.value)
    if len(ratios) < 2 or min(ratios) < 5:
        return []
    v = vals[-1]
    return [
        Symptom(
            "train-loss-far-above-val",
            f"the training loss was {min(ratios):.3g}x to {max(ratios):.3g}x the validation loss at "
            f"every evaluation: the two are not on one scale (a loss summed over the batch?)",
            (_ev(v, val.name, "last evaluation"), _ev(train[-1], loss.name, "last training loss")),
            value=min(ratios),
        )
    ]


def falling(loss: Series) -> list[Symptom]:
    """A loss that fell well below where it started and stayed finite: the model is learning."""
    pts = loss.points
    if len(pts) < 6 or any(not math.isfinite(p.value) for p in pts):
        return []
    vals = [p.value for p in pts]
    k = max(2, len(vals) // 5)
    head, tail = median(vals[:k]), median(vals[-k:])
    if head <= 0 or tail < 0 or tail > 0.7 * head or max(vals[k:]) > 3 * head:
        return []
    return [
        Symptom(
            "loss-falling",
            f"{loss.name} fell from about {head:.4g} to {tail:.4g}: the model learns",
            (_ev(pts[0], loss.name, "first"), _ev(pts[-1], loss.name, "last")),
            value=tail / head,
        )
    ]


def ratio(log_ratio: float) -> float:
    """The factor a difference of logs stands for, capped where a float would overflow (a loss
    printed at 1e31 after one at 1e-300 is still a finite difference of logs)."""
    return math.exp(min(log_ratio, 700.0))


def _ev(p: Point, name: str, note: str = "") -> Evidence:
    text = f"{name} = {p.value:.6g} at step {p.step}" + (f" ({note})" if note else "")
    return Evidence(p.line, text, rank=p.rank, step=p.step)


def _finite_run(series: Series) -> list[Point]:
    """The positive finite points before the first non-finite one."""
    out = []
    for p in series.points:
        if not math.isfinite(p.value):
            break
        if p.value > 0:
            out.append(p)
    return out


def climb(loss: Series) -> list[Symptom]:
    """A loss that climbs back from its lowest point, gradually or in one jump."""
    pts = _finite_run(loss)
    if len(pts) < 6:
        return []
    logs = [math.log(p.value) for p in pts]
    lo = min(range(len(pts)), key=lambda i: logs[i])
    tail = logs[lo:]
    if len(tail) < 2:
        return []
    hi = lo + max(range(len(tail)), key=lambda i: tail[i])
    rise = logs[hi] - logs[lo]
    out: list[Symptom] = []
    steps = [b - a for a, b in zip(logs[lo:hi], logs[lo + 1 : hi + 1], strict=False)]
    biggest = max(steps) if steps else 0.0
    if rise >= math.log(CLIMB_RATIO) and hi - lo >= CLIMB_POINTS and biggest < 0.5 * rise:
        ups = sum(1 for s in steps if s > 0) / len(steps)
        # it must also stay up: a climb the run recovers from is noise around a minimum
        end = median(logs[-max(2, (len(logs) - lo) // 4) :])
        if ups >= 0.6 and end - logs[lo] >= 0.6 * rise:
            out.append(
                Symptom(
                    "loss-gradual-climb",
                    f"{loss.name} climbed back from {pts[lo].value:.4g} (step {pts[lo].step}) to "
                    f"{pts[hi].value:.4g} (step {pts[hi].step}) over {hi - lo} logged points, rising at "
                    f"{100 * ups:.0f}% of them, no single step making half of the rise",
                    (_ev(pts[lo], loss.name, "lowest"), _ev(pts[hi], loss.name, "highest after it")),
                    step=pts[hi].step,
                    value=ratio(rise),
                )
            )
    # an explosion: ten times up within a few logged points of the lowest one
    for j in range(lo + 1, min(len(logs), lo + 4)):
        if logs[j] - logs[lo] >= math.log(10) and j < len(logs) - 1:
            out.append(
                Symptom(
                    "loss-fast-climb",
                    f"{loss.name} rose {ratio(logs[j] - logs[lo]):.3g}x within {j - lo} logged points, "
                    f"from {pts[lo].value:.4g} (step {pts[lo].step}) to {pts[j].value:.4g} (step {pts[j].step})",
                    (_ev(pts[lo], loss.name, "lowest"), _ev(pts[j], loss.name, "after the climb")),
                    step=pts[j].step,
                    value=ratio(logs[j] - logs[lo]),
                )
            )
            break
    jumps = [(logs[i + 1] - logs[i], i) for i in range(len(logs) - 1)]
    big, i = max(jumps)
    if big >= math.log(JUMP_RATIO) and logs[i + 1] > max(logs[: i + 1]):
        out.append(
            Symptom(
                "loss-sudden-jump",
                f"{loss.name} jumped {ratio(big):.3g}x in one logged step, from {pts[i].value:.4g} "
                f"(step {pts[i].step}) to {pts[i + 1].value:.4g} (step {pts[i + 1].step})",
                (_ev(pts[i], loss.name, "before"), _ev(pts[i + 1], loss.name, "after the jump")),
                step=pts[i + 1].step,
                value=ratio(big),
            )
        )
    return out


def spike_recovered(series: Series) -> list[Symptom]:
    """A loss that shot up `SPIKE` times over the lowest value it had reached, then came back
    within `RECOVERED` times of that low: the weights were thrown far off and found their way
    back (a rate too high under an adaptive optimizer, a fine-tuning rate applied to a freshly
    unfrozen body). The spike must also stand above the run's first value: a per-batch loss
    near zero multiplies by noise alone; and the low must be a mean's (under `Series.huge_above`): a
    loss summed over the batch swings by its own scale, which the summed loss explains. Read against the run's own low and start, so on any
    scale; a loss that does not come back, or rises again half as far, is a climb or a divergence,
    not this."""
    pts = _finite_run(series)
    if len(pts) < 4:
        return []
    low = 0
    for i in range(1, len(pts) - 1):
        if (
            pts[i].value >= SPIKE * pts[low].value
            and pts[i].value > pts[0].value
            and pts[low].value < series.huge_above
        ):
            k = next((k for k in range(i + 1, len(pts)) if pts[k].value <= RECOVERED * pts[low].value), None)
            back = pts[k] if k is not None else None
            if (
                back is not None
                and pts[-1].value <= RECOVERED * pts[low].value
                and max(p.value for p in pts[k:]) < SPIKE / 2 * pts[low].value
            ):
                return [
                    Symptom(
                        "loss-spiked-and-recovered",
                        f"{series.name} shot up {pts[i].value / pts[low].value:.3g}x, from {pts[low].value:.4g} "
                        f"(step {pts[low].step}) to {pts[i].value:.4g} (step {pts[i].step}), then came back "
                        f"to {back.value:.4g} (step {back.step})",
                        (
                            _ev(pts[low], series.name, "low before"),
                            _ev(pts[i], series.name, "spike"),
                            _ev(back, series.name, "back"),
                        ),
                        step=pts[i].step,
                        value=pts[i].value / pts[low].value,
                    )
                ]
        if pts[i].value < pts[low].value:
            low = i
    return []


def log_c(value: float) -> int | None:
    """The class count C whose uniform-guess loss ln(C) is `value`, if one is close enough."""
    if not 0.6 < value < 3.5:  # ln 2 .. ln 30: beyond, some ln(C) lies near any value at all
        return None
    c = round(math.exp(value))
    spacing = math.log(c + 1) - math.log(c)
    if 2 <= c <= MAX_CLASSES and abs(math.log(c) - value) <= min(LOG_C_TOL * value, 0.3 * spacing):
        return c
    return None


def collapse(loss: Series, accuracy: Series | None = None) -> list[Symptom]:
    """A loss that shot up, then sat at ln(C) for the rest of the run, where a logged accuracy
    does not say the model answers far better than a uniform guess does."""
    pts = loss.finite()
    if len(pts) < 8:
        return []
    vals = [p.value for p in pts]
    k = max(3, len(vals) * 2 // 5)
    rest = vals[-k:]
    level = median(rest)
    c = log_c(level)
    if c is None:
        return []
    # settled: most of the last stretch within a few percent of ln(C), and no trend in it
    near = sum(1 for v in rest if abs(v - math.log(c)) <= 0.12 * math.log(c)) / len(rest)
    peak_i = max(range(len(vals) - k), key=lambda i: vals[i]) if len(vals) > k else None
    if peak_i is None or near < 0.6:
        return []
    start = vals[0]
    peak = vals[peak_i]
    # A classifier starts near ln(C) and a dead one ends there: the start is at the plateau (or
    # the loss had already exploded by the first print), and somewhere the loss shot far above
    # it. A healthy run that merely ends near some ln(k) started well above its end instead.
    at_start = abs(start - level) <= 0.25 * level
    # a dead network answers the same whatever the input: its loss barely moves from batch to
    # batch, where a live one that merely ended near some ln(C) still wanders
    flat = median(abs(v - level) for v in rest) <= 0.05 * level
    if not (peak >= 8 * level or (peak >= 5 * level and flat) or (at_start and peak >= SPIKE_RATIO * level)):
        return []
    if accuracy is not None and _beats_a_guess(accuracy, c):
        return []  # a model that is right far more often than 1/C is no uniform guess
    return [
        Symptom(
            "loss-collapsed-to-log-c",
            f"{loss.name} shot up to {peak:.4g} (step {pts[peak_i].step}) and then sat at {level:.4g} = "
            f"ln({c}), the loss of a uniform guess over {c} classes, for the last {k} logged points: "
            f"the network stopped responding to its input",
            (_ev(pts[peak_i], loss.name, "peak"), _ev(pts[-1], loss.name, f"ln({c})")),
            step=pts[peak_i].step,
            value=level,
        )
    ]


def _beats_a_guess(accuracy: Series, c: int) -> bool:
    """True if the last logged accuracy (a fraction or a percentage) is more than halfway from a
    uniform guess's 1/C to always right."""
    last = accuracy.finite()
    if not last:
        return False
    return as_fraction(last[-1].value) > 1 / c + 0.5 * (1 - 1 / c)


def non_finite_shape(loss: Series) -> list[Symptom]:
    """How the loss went non-finite: between finite values, or after swinging up and down."""
    pts = loss.points
    bad = [i for i, p in enumerate(pts) if not math.isfinite(p.value)]
    if not bad:
        return []
    out: list[Symptom] = []
    first = bad[0]
    after = [p for p in pts[first + 1 :] if math.isfinite(p.value)]
    if len(after) >= 2:
        recovered = after[-1]
        out.append(
            Symptom(
                "non-finite-intermittent",
                f"{loss.name} was non-finite at {len(bad)} of {len(pts)} logged points but finite again "
                f"after them (last {recovered.value:.4g} at step {recovered.step}): the weights survived, "
                "the forward pass overflowed on some batches",
                (_ev(pts[first], loss.name, "first non-finite"), _ev(recovered, loss.name, "finite again")),
                step=pts[first].step,
                value=float(len(bad)),
            )
        )
    before = [p.value for p in pts[:first] if math.isfinite(p.value) and p.value > 0]
    if len(before) >= 4:
        moves = [math.log(b / a) for a, b in zip(before, before[1:], strict=False)]
        signs = [1 if m > math.log(1 + SWING) else -1 if m < -math.log(1 + SWING) else 0 for m in moves]
        signs = [s for s in signs if s]
        flips = sum(1 for a, b in zip(signs, signs[1:], strict=False) if a != b)
        if flips >= 2 and sum(1 for s in signs if s > 0) >= 2:
            out.append(
                Symptom(
                    "non-finite-after-unstable",
                    f"before turning non-finite at step {pts[first].step}, {loss.name} swung up and down "
                    f"{flips} times by more than {100 * SWING:.0f}% a step",
                    (_ev(pts[first], loss.name, "first non-finite"),),
                    step=pts[first].step,
                    value=float(flips),
                )
            )
    return out


def huge_start(loss: Series, accuracy: Series | None) -> list[Symptom]:
    """A first loss no averaged cross-entropy reaches, and whether the run then learns."""
    pts = _finite_run(loss)
    if len(pts) < 6 or pts[0].value <= loss.huge_above:
        return []
    vals = [p.value for p in pts]
    head = median(vals[:3])
    tail = median(vals[-max(3, len(vals) // 5) :])
    if head <= loss.huge_above or tail <= 0:
        return []
    # a huge start that soon falls to a classifier's level is an explosion, not a scale
    if min(vals) < head / 30:
        return []
    fell = head / tail
    rose = _accuracy_rose(accuracy)
    if fell >= 3.0 or (fell >= 1.25 and rose is not None):
        # (a loss logged once per epoch has its first epoch's learning in its first point, so
        # it falls less; the accuracy logged beside it says whether the model learns)
        how = f"{fell:.3g}x as a normal run falls" if fell >= 3.0 else f"{fell:.3g}x while {rose}"
        return [
            Symptom(
                "loss-huge-and-learning",
                f"{loss.name} started at {head:.4g}, far above a mean cross-entropy, and fell "
                f"{how}: the loss has another scale (summed?)",
                (_ev(pts[0], loss.name, "first"), _ev(pts[-1], loss.name, "last")),
                value=fell,
            )
        ]
    # where the log shows no start, none was saturated; a scaled-cosine softmax's loss is bounded
    # (by 2s + ln C) whatever the weights, so no initialisation starts it above the bound
    if fell < 2.5 and not loss.starts_mid_run and not loss.scaled_cosine:
        return [
            Symptom(
                "loss-huge-and-stuck",
                f"{loss.name} started at {head:.4g}, far above a mean cross-entropy, and fell "
                f"only {fell:.3g}x over the run: saturated from the start",
                (_ev(pts[0], loss.name, "first"), _ev(pts[-1], loss.name, "last")),
                value=fell,
            )
        ]
    return []


def _accuracy_rose(accuracy: Series | None) -> str | None:
    """How a logged accuracy rose, where it closed at least a third of its gap to always right
    between its first and its last point (the model learns); else None."""
    pts = accuracy.finite() if accuracy is not None else []
    if len(pts) < 3:
        return None
    first, last = as_fraction(pts[0].value), as_fraction(pts[-1].value)
    if not 0 <= first < 1 or last - first < (1 - first) / 3:
        return None
    return (
        f"{accuracy.name if accuracy is not None else 'accuracy'} rose from {pts[0].value:.4g} to {pts[-1].value:.4g}"
    )


def constant_validation(val: Series) -> list[Symptom]:
    """Every evaluation printing the same validation loss: the weights never changed."""
    pts = val.points
    if len(pts) < 3 or any(not math.isfinite(p.value) for p in pts):
        return []
    if len({p.value for p in pts}) != 1:
        return []
    return [
        Symptom(
            "val-loss-constant",
            f"all {len(pts)} evaluations printed the same {val.name}, {pts[0].value:.6g}: "
            "the weights did not change between them",
            (_ev(pts[0], val.name, "first evaluation"), _ev(pts[-1], val.name, "last evaluation")),
            value=pts[0].value,
        )
    ]


def grad_non_finite(grad: Series, loss: Series | None) -> list[Symptom]:
    """A gradient norm that turned non-finite and stayed so, where the loss shows nothing.

    A norm that is NaN now and then, between finite ones, is a dynamic loss scaler skipping a
    step, as it should; only one that never recovers means the weights are gone.
    """
    if loss is not None and any(not math.isfinite(p.value) for p in loss.points):
        return []  # the loss says it better
    pts = grad.points
    if len(pts) < 2:
        return []  # one norm alone ("I frequently observe grad_norm: nan"): nothing says it stayed
    first = next((i for i, p in enumerate(pts) if not math.isfinite(p.value)), None)
    if first is None or any(math.isfinite(p.value) for p in pts[first + 1 :]):
        return []
    if len(pts) - first < 2 and first != len(pts) - 1:
        return []
    bad = pts[first]
    ev = (_ev(bad, grad.name, "first non-finite"),) + (
        (_ev(pts[first - 1], grad.name, "last finite"),) if first else ()
    )
    out = [
        Symptom(
            "grad-norm-non-finite",
            f"the gradient norm became {bad.value} at step {bad.step} and "
            f"stayed so for the remaining {len(pts) - first - 1} logged steps",
            ev,
            step=bad.step,
        )
    ]
    if first == 0 and len(pts) >= 2:
        out.append(
            Symptom(
                "non-finite-early",
                f"the gradient norm was non-finite from the first logged step ({bad.step})",
                ev,
                step=bad.step,
            )
        )
    return out
