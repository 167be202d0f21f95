"""Symptoms read from how validation moves against training: overfitting, noisy evaluation.

Both measure a run against itself, never against an absolute scale: the yardsticks are the
run's own training loss (its batch-to-batch noise, how far it falls) and its own validation
noise. They are what a forgotten `model.train()` / `model.eval()` leaves in a log:

- `overfit-after-first-eval`: from the first evaluations on the training loss keeps falling
  while validation gets no better, so the val/train ratio grows severalfold. A model left in
  eval mode after its first evaluation trains without dropout (and with frozen batch-norm
  statistics), and memorises its training set from that step on.
- `val-noisy`: validation jumps between evaluations although the learning rate has decayed and
  the weights barely move. Evaluated in eval mode, a model is a fixed function of its weights;
  evaluated in training mode, dropout (and small-batch statistics) add fresh noise every time.

One more compares the run with its own start: `worse-than-start`, training and validation loss
both ending well above where they began (the steps made the model worse: a step too large, or
gradients summed over steps); a loader that deals classes in blocks, or overfitting, leaves the
validation loss lower than its first value.
"""

from __future__ import annotations

import bisect
import math
from statistics import median

from triage.records import Evidence, Symptom
from triage.series import Point, Series

# The symptom names this detector emits (the cause table may only name declared symptoms).
EMITS: frozenset[str] = frozenset(
    {
        "overfit-after-first-eval",
        "val-noisy",
        "worse-than-start",
    }
)

MIN_EVALS = 6
# How much wider the val/train loss ratio must get after its narrowest point in the first
# evaluations. A regularised run keeps fitting its training set a little after validation
# levels off, so some widening is normal: on the tuning runs (the corpus and scratch seeds of
# the same program) healthy runs widened at most 2.7x and runs left in eval mode at least 4.1x;
# this sits between the two, and a change must also clear the run's own noise.
GAP_GROWTH = 3.3
Z = 3.0  # standard errors a change must clear to count as one
# Validation counts as noisy when, at a decayed learning rate, it jumps by more than this share
# of the training loss's batch-to-batch noise. Both are put on the square-root scale first: a
# mean of per-sample losses has noise that grows like the square root of its level (most of it
# comes from the few samples with large losses), so a training loss that has fallen far is not
# mistaken for a quiet one. A deterministic evaluation of slowly moving weights stays well below
# it (on the tuning runs: healthy ones at most 0.02, runs with other faults at most 0.045);
# evaluation with dropout on does not (0.088 and up).
NOISE_SHARE = 0.06
# Training and validation must measure the same thing for their ratio to mean anything: at the
# first evaluation they agree within this factor (a summed loss or another criterion does not).
SAME_SCALE = 3.0
LOW_LR = 0.3  # "decayed": at most this share of the run's peak learning rate
RATE_STEP = 1.5  # two logged rates in a row this far apart: the schedule stepped, it did not glide
# Where the log shows no learning rate, the rate may not have decayed: the weights may still move
# a lot between evaluations, and their movement alone can explain more jitter: ask for twice the
# share, and be less sure.
UNDECAYED_FACTOR = 2.0
UNDECAYED_STRENGTH = 0.6


def _ev(p: Point, name: str, note: str = "") -> Evidence:
    text = f"{name} = {p.value:.6g} at step {p.step}" + (f" ({note})" if note else "")
    return Evidence(p.line, text, rank=p.rank, step=p.step)


def noise(xs: list[float], *, robust: bool = True) -> float:
    """The white-noise standard deviation of a series, from its second differences.

    Second differences cancel any locally linear trend, so a falling or rising series is not
    mistaken for a noisy one (white noise of deviation s gives differences of deviation
    s * sqrt(6)). `robust` takes their median, so one odd value does not decide; otherwise
    their mean, which uses every jump and so needs fewer evaluations to be sure.
    """
    return pooled_noise([xs], robust=robust)


def pooled_noise(segments: list[list[float]], *, robust: bool = True) -> float:
    """`noise` over several stretches of one series: their second differences pooled, none
    taken across the boundary between two stretches (a step decay of the rate)."""
    d = [abs(c - 2 * b + a) for xs in segments for a, b, c in zip(xs, xs[1:], xs[2:], strict=False)]
    if not d:
        return 0.0
    if robust:
        return median(d) / (0.6745 * math.sqrt(6))
    return sum(d) / len(d) * math.sqrt(math.pi / 2) / math.sqrt(6)


def _usable(series: Series | None) -> list[Point]:
    """Finite positive points with a line number, or nothing if the series ever went non-finite."""
    if series is None or any(not math.isfinite(p.value) for p in series.points):
        return []
    return [p for p in series.points if p.value > 0 and p.line is not None]


def intervals(train: list[Point], val: list[Point]) -> list[tuple[Point, list[Point]]]:
    """Each evaluation with the training points logged since the one before it (both in log order)."""
    out: list[tuple[Point, list[Point]]] = []
    j = 0
    for v in val:
        start = j
        while j < len(train) and (train[j].line or 0) <= (v.line or 0):
            j += 1
        out.append((v, train[start:j]))
    return out


WORSE = 1.3  # "well above where it began": this many times the run's own first values


def worse_than_start(loss: Series | None, val: Series | None) -> list[Symptom]:
    """Training and validation loss both ending well above where they began: the steps made the
    model worse. Each end is the median of the last fifth of its points against the median of
    the first fifth (validation: its first and last evaluations), so one noisy point decides
    nothing; a run that went non-finite is another symptom's."""
    train, vals = _usable(loss), _usable(val)
    if len(train) < 8 or len(vals) < 3:
        return []
    k = max(2, len(train) // 5)
    head, tail = median(p.value for p in train[:k]), median(p.value for p in train[-k:])
    kv = max(1, len(vals) // 5)
    v_head, v_tail = median(p.value for p in vals[:kv]), median(p.value for p in vals[-kv:])
    if tail < WORSE * head or v_tail < WORSE * v_head:
        return []
    return [
        Symptom(
            "worse-than-start",
            f"training loss ended at about {tail:.4g} from {head:.4g} and validation loss at "
            f"{v_tail:.4g} from {v_head:.4g}: the run made the model worse",
            (
                _ev(train[0], loss.name if loss else "loss", "first"),
                _ev(train[-1], loss.name if loss else "loss", "last"),
                _ev(vals[0], val.name if val else "val_loss", "first evaluation"),
                _ev(vals[-1], val.name if val else "val_loss", "last evaluation"),
            ),
            value=tail / head,
        )
    ]


def overfit_after_first_eval(loss: Series | None, val: Series | None) -> list[Symptom]:
    """Training loss pulling away from validation from the first evaluations on.

    The gap is the ratio of validation loss to the training loss logged since the evaluation
    before. It must be lowest within the first quarter of evaluations and grow by
    GAP_GROWTH or more by the last quarter, well outside its own noise, while validation
    ends no better than where the gap was lowest: the fitting that went on was overfitting.
    """
    train, vals = _usable(loss), _usable(val)
    if len(vals) < MIN_EVALS or not train:
        return []
    spans = intervals(train, vals)
    if not spans[0][1]:
        return []  # no training logged before the first evaluation: nothing to place it after
    if abs(math.log(spans[0][0].value / spans[0][1][-1].value)) > math.log(SAME_SCALE):
        return []
    pairs = [(v, sum(p.value for p in pts) / len(pts)) for v, pts in spans[1:] if pts]
    n = len(pairs)
    if n < MIN_EVALS - 1:
        return []
    q = max(2, n // 4)
    gap = [math.log(v.value / t) for v, t in pairs]
    # a running median of three: the low point of the gap, not of one noisy evaluation
    smooth = [median(gap[max(0, i - 1) : i + 2]) for i in range(n)]
    low = min(range(n), key=lambda i: smooth[i])
    if low >= q:
        return []  # the gap kept closing for a while: ordinary training, not this
    late = median(gap[-q:])
    widened = late - smooth[low]
    sigma_g = noise(gap)
    if widened < math.log(GAP_GROWTH) or widened < Z * 1.25 * sigma_g * math.sqrt(1 / q + 1 / 3):
        return []
    v_low = median(v.value for v, _ in pairs[max(0, low - 1) : low + 2])
    v_late = median(v.value for v, _ in pairs[-q:])
    sigma_v = noise([v.value for v, _ in pairs])
    if v_late < v_low - Z * 1.25 * sigma_v * math.sqrt(1 / q + 1 / 3):
        return []  # validation still improved: the model was learning, not only memorising
    t_low = median(t for _, t in pairs[max(0, low - 1) : low + 2])
    t_late = median(t for _, t in pairs[-q:])
    first = spans[0][0]
    lowest = pairs[low][0]
    growth = math.exp(min(widened, 700.0))  # a ratio past 1e304 is as good as infinite
    vname = val.name if val else "val_loss"
    tname = loss.name if loss else "loss"
    summary = (
        f"from the first evaluation (step {first.step}) the training loss pulls away from "
        f"validation: it fell from {t_low:.3g} to {t_late:.3g} while validation loss went from "
        f"{v_low:.3g} to {v_late:.3g} (val/train ratio {growth:.1f}x wider than at step "
        f"{lowest.step})"
    )
    evidence = (
        _ev(first, vname, "first evaluation"),
        _ev(lowest, vname, "train/val gap at its narrowest"),
        _ev(vals[-1], vname, "last evaluation"),
        _ev(train[-1], tname, "last training loss"),
    )
    return [Symptom("overfit-after-first-eval", summary, evidence, step=first.step, value=growth)]


def noisy_validation(loss: Series | None, val: Series | None, lr: Series | None) -> list[Symptom]:
    """Validation that keeps jumping between evaluations once the learning rate has decayed."""
    train, vals = _usable(loss), _usable(val)
    if len(vals) < MIN_EVALS * 2 or len(train) < 8:
        return []
    window, decayed = quiet_window(vals, lr)
    if not decayed and lr is not None and len([p for p in lr.finite() if p.line is not None]) >= 4:
        # the log shows a rate that never decayed: the weights move a lot between evaluations,
        # and their movement alone jitters validation (only a log that shows no rate at all
        # is read with the stricter undecayed bar)
        return []
    if len(window) < MIN_EVALS:
        return []
    values = [p.value for p in window]
    # a jump where the schedule changed the rate (a step decay between two evaluations) is the
    # schedule's doing: only evaluations made at one rate are compared with each other
    segments = _same_rate(window, lr)
    settled = [p.value for p in vals[len(vals) // 4 :]]
    if max(settled) > 10 * min(settled):
        return []  # a diverging or recovering run is not "noisy"
    first = vals.index(window[0])
    lo = (vals[first - 1].line or 0) if first else 0
    hi = window[-1].line
    t_values = [p.value for p in train if p.line is not None and lo < p.line <= (hi or 0)]
    # the training loss's point-to-point spread is batch noise only where it is logged more
    # often than validation: an epoch's mean loss (one per evaluation, as Keras prints it) is
    # an average over many batches, its spread no yardstick for a single evaluation's
    if len(t_values) < 8 or len(t_values) < 2 * len(window):
        return []
    if sum(max(0, len(seg) - 2) for seg in segments) < MIN_EVALS - 2:
        return []
    sigma_v, sigma_t = pooled_noise(segments, robust=False), noise(t_values, robust=False)
    if sigma_t <= 0:
        return []
    share = (sigma_v / math.sqrt(median(values))) / (sigma_t / math.sqrt(median(t_values)))
    need = NOISE_SHARE * (1 if decayed else UNDECAYED_FACTOR)
    if share < need:
        return []
    a, b = max(zip(window, window[1:], strict=False), key=lambda ab: abs(ab[1].value - ab[0].value))
    where = (
        f"after the learning rate decayed (from step {window[0].step})" if decayed else f"from step {window[0].step}"
    )
    name = val.name if val else "val_loss"
    summary = (
        f"validation loss jumps between evaluations {where} by {share:.2f}x the training "
        f"loss's batch-to-batch noise; an evaluation in eval mode moves under {need:.2g}x"
    )
    return [
        Symptom(
            "val-noisy",
            summary,
            (_ev(a, name), _ev(b, name, "largest jump")),
            step=window[0].step,
            value=share,
            strength=1.0 if decayed else UNDECAYED_STRENGTH,
        )
    ]


def _same_rate(window: list[Point], lr: Series | None) -> list[list[float]]:
    """The window's validation values split where the learning rate dropped or rose at once
    between two evaluations (a step decay: two logged rates in a row at least `RATE_STEP` apart);
    a rate that moves a little every step (a cosine) splits nothing."""
    rates = [p for p in lr.finite() if p.line is not None and p.value > 0] if lr is not None else []
    jumps = [
        b.line or 0
        for a, b in zip(rates, rates[1:], strict=False)
        if max(a.value, b.value) >= RATE_STEP * min(a.value, b.value)
    ]
    segments: list[list[float]] = [[]]
    previous: Point | None = None
    for v in window:
        if previous is not None and any((previous.line or 0) < j <= (v.line or 0) for j in jumps):
            segments.append([])
        segments[-1].append(v.value)
        previous = v
    return segments


def quiet_window(vals: list[Point], lr: Series | None) -> tuple[list[Point], bool]:
    """The evaluations made at a decayed learning rate, or else the last three quarters of them."""
    settled = vals[len(vals) // 4 :]
    rates = [p for p in lr.finite() if p.line is not None] if lr is not None else []
    if len(rates) < 4:
        return settled, False
    peak_i = max(range(len(rates)), key=lambda i: rates[i].value)
    peak = rates[peak_i].value
    if peak <= 0:
        return settled, False
    lines = [r.line or 0 for r in rates]
    quiet = []
    for v in settled:
        i = bisect.bisect_left(lines, v.line or 0) - 1  # the rate in force when it was evaluated
        if i >= peak_i and rates[i].value <= LOW_LR * peak:
            quiet.append(v)
    return (quiet, True) if len(quiet) >= MIN_EVALS else (settled, False)
