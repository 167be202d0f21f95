"""Numeric symptoms read off the metric series: non-finite values, trends, plateaus, growth.

Thresholds are deliberately conservative: a healthy run's ordinary noise (a loss that bounces
while it falls, a warm-up, a cosine schedule reaching its floor at the end) must not raise a
symptom. Each symptom cites the points that made it.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import Counter
from operator import mul
from statistics import median

from triage.detectors import Context, validation
from triage.detectors.shape import constant_validation
from triage.reader import Reading
from triage.records import Evidence, Symptom
from triage.series import Point, Series, as_fraction

# The symptom names this detector emits (the cause table may only name declared symptoms);
# the validation helpers it calls emit their own.
HELPERS = ("validation",)
EMITS: frozenset[str] = frozenset(
    {
        "accurate-but-loss-high",
        "batch-order-repeats",
        "data-wait",
        "double-softmax-floor",
        "grad-norm-exploding",
        "grad-norm-linear-growth",
        "grad-norm-zero",
        "loss-at-log-c",
        "loss-diverging",
        "loss-flat",
        "loss-flat-with-gradients",
        "loss-flat-in-warmup",
        "loss-fell-then-froze",
        "loss-huge-initial",
        "loss-huge-then-recovered",
        "loss-non-finite",
        "loss-oscillating",
        "lr-above-configured",
        "lr-below-configured",
        "loss-rose-in-warmup",
        "loss-scale-collapse",
        "loss-swings-back-to-low",
        "lr-floor-early",
        "lr-moved-without-scheduler-warning",
        "memory-growing",
        "memory-grows-at-eval",
        "non-finite-after-climb",
        "non-finite-early",
        "non-finite-in-warmup",
        "non-finite-sudden",
        "policy-unchanged",
        "step-time-stalls",
        "val-loss-far-above-train",
    }
)


def detect(ctx: Context) -> list[Symptom]:
    s = ctx.series
    out: list[Symptom] = []
    loss = s.get("loss") or s.get("val_loss")
    grad = s.get("grad_norm")
    if loss is not None and loss.points:
        out += non_finite(loss, grad)
        if loss.signed:
            # a policy-gradient, a generator's or a negative-ELBO objective: it has no floor at
            # zero to fall towards, so its shape says nothing of divergence or plateaus; only a
            # NaN does
            loss = None
    if loss is not None and loss.points:
        out += divergence(loss)
        out += plateaus(
            loss, grad, s.get("accuracy") or s.get("val_accuracy"), huge_means_sum="kl" not in s and not loss.epoch_sum
        )
        if not any(x.name == "double-softmax-floor" for x in out):
            out += val_softmax_floor(s)
        out += oscillation(loss)
        out += swings_back_to_low(loss)
        out += repeating_batches(loss)
        out += accuracy_vs_loss(s)
    if "lr" in s and loss is not None:
        out = flat_while_warming_up(out, loss, s["lr"])
    if grad is not None and grad.points:
        out += grad_trends(grad)
        if any(x.name == "loss-flat" for x in out):
            out += gradients_without_progress(grad)
    if "lr" in s:
        out += lr_floor(s["lr"])
        out += lr_against_configured(s["lr"])
        if loss is not None and loss.name == "loss":
            out += warmup_blowup(loss, s["lr"])
            out += non_finite_in_warmup(loss, s["lr"])
    if "loss_scale" in s:
        out += scale_collapse(s["loss_scale"])
    if "memory" in s:
        out += memory_growth(s["memory"], s.get("val_loss") or s.get("val_accuracy"))
    if "val_loss" in s and "loss" in s and not s["loss"].signed and not s["val_loss"].signed:
        out += validation.overfit_after_first_eval(s["loss"], s["val_loss"])
        out += validation.noisy_validation(s["loss"], s["val_loss"], s.get("lr"))
        out += validation.worse_than_start(s["loss"], s["val_loss"])
    if "data_time" in s and "batch_time" in s:
        out += data_wait(s["data_time"], s["batch_time"])
    elif "data_time" in s and "update_time" in s:
        out += data_wait(s["data_time"], s["update_time"], apart=True)
    elif "batch_time" in s:
        out += step_stalls(s["batch_time"])
    if "policy_kl" in s:
        out += policy_unchanged(s["policy_kl"])
    val = s.get("val_loss")
    if "lr" in s and (any(x.name == "loss-flat" for x in out) or (val is not None and constant_validation(val))):
        out += scheduler_without_warning(s["lr"], ctx.events)
    return out


UNMOVED_KL = 1e-5  # nats: a PPO update moves its policy by about 1e-2 (SB3's target_kl is 0.01-0.05)


def policy_unchanged(kl: Series) -> list[Symptom]:
    """A policy-gradient run whose every update left the policy where it was: the KL between the
    policy before and after each update (PPO's `approx_kl`, a divergence in nats, so one scale
    for every task) stayed at `UNMOVED_KL` or below. The updates computed no gradient for the
    policy or never applied one: a missing backward or step, a detached or frozen policy."""
    pts = kl.finite()
    if len(pts) < 3 or max(abs(p.value) for p in pts) > UNMOVED_KL:
        return []
    top = max(pts, key=lambda p: abs(p.value))
    return [
        Symptom(
            "policy-unchanged",
            f"in all {len(pts)} updates logged the policy moved by a KL of at most {abs(top.value):.2g}: "
            "the updates left it where it was",
            (_ev(pts[0], kl.name, "first update"), _ev(top, kl.name, "largest")),
            step=pts[0].step,
            value=abs(top.value),
        )
    ]


_SCHEDULER_WARNING = "lr_scheduler.step()"


def scheduler_without_warning(lr: Series, events: list[Reading]) -> list[Symptom]:
    """A learning rate that moved over the run, in a log where PyTorch never warned that the
    scheduler stepped before the optimizer. PyTorch's schedulers warn on their first step when
    the optimizer has not stepped yet, so where a scheduler moved the rate and no warning came,
    the optimizer did step: of a missing backward and a missing step, the backward. Weak: a rate
    written into the parameter groups by hand (nanoGPT's `get_lr`) moves with no scheduler to
    warn, so it only orders the two and leaves them said as a tie."""
    pts = lr.finite()
    if len(pts) < 3 or any(_SCHEDULER_WARNING in rd.text for rd in events):
        return []
    lo, hi = min(p.value for p in pts), max(p.value for p in pts)
    if hi <= 0 or hi - lo <= 0.01 * hi:
        return []
    moved = next(p for p in pts if abs(p.value - pts[0].value) > 0.01 * hi)
    return [
        Symptom(
            "lr-moved-without-scheduler-warning",
            f"the learning rate moved ({pts[0].value:.3g} to {moved.value:.3g} by step {moved.step}) and "
            "PyTorch never warned that the scheduler stepped before the optimizer: the optimizer stepped",
            (_ev(pts[0], "lr", "first"), _ev(moved, "lr", "moved")),
            step=moved.step,
            value=moved.value / pts[0].value if pts[0].value else None,
        )
    ]


def _ev(p: Point, name: str, note: str = "") -> Evidence:
    text = f"{name} = {p.value:.6g} at step {p.step}" + (f" ({note})" if note else "")
    return Evidence(p.line, text, rank=p.rank, step=p.step)


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def _std(xs: list[float]) -> float:
    m = _mean(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / len(xs))


def non_finite(loss: Series, grad: Series | None) -> list[Symptom]:
    """The first non-finite loss, and whether it came suddenly or after a climb."""
    pts = loss.points
    bad_i = next((i for i, p in enumerate(pts) if not math.isfinite(p.value)), None)
    if bad_i is None:
        return []
    bad = pts[bad_i]
    before = [p for p in pts[:bad_i] if math.isfinite(p.value)]
    ev = [_ev(bad, loss.name, "first non-finite value")]
    if before:
        ev.append(_ev(before[-1], loss.name, "last finite value"))
    out = [
        Symptom(
            "loss-non-finite",
            f"{loss.name} became {bad.value} at step {bad.step}",
            tuple(ev),
            step=bad.step,
            value=bad.value,
        )
    ]
    if bad_i == 0:
        # "from the start" only where the start was seen: a run of points, or step 0/1 itself
        if not loss.per_epoch and (len(pts) >= 2 or (loss.explicit_steps and bad.step <= 1)):
            out.append(
                Symptom(
                    "non-finite-early",
                    f"{loss.name} was non-finite from the start (step {bad.step})",
                    tuple(ev),
                    step=bad.step,
                )
            )
        return out
    vals = [p.value for p in before]
    climbed = len(vals) >= 2 and max(vals[-3:]) > 3 * min(vals)
    g_climbed = False
    if grad is not None:
        g_before = [p.value for p in grad.points if math.isfinite(p.value) and (p.line or 0) <= (bad.line or 0)]
        if len(g_before) >= 3:
            g_climbed = g_before[-1] > 5 * median(g_before[: max(1, len(g_before) // 2)])
    if climbed or g_climbed:
        out.append(
            Symptom(
                "non-finite-after-climb",
                f"{loss.name} and/or gradient norm climbed before turning non-finite",
                tuple(ev),
                step=bad.step,
            )
        )
    elif vals and not _swinging(vals):
        out.append(
            Symptom(
                "non-finite-sudden",
                f"{loss.name} was finite and steady, then non-finite at step {bad.step}",
                tuple(ev),
                step=bad.step,
            )
        )
    return out


def _swinging(vals: list[float], swing: float = 0.15) -> bool:
    """True if the values rose and fell by more than `swing` a step, twice or more."""
    pos = [v for v in vals if v > 0]
    moves = [math.log(b / a) for a, b in zip(pos, pos[1:], strict=False)]
    signs = [1 if m > math.log(1 + swing) else -1 for m in moves if abs(m) > math.log(1 + swing)]
    return sum(1 for a, b in zip(signs, signs[1:], strict=False) if a != b) >= 2 and signs.count(1) >= 2


def divergence(loss: Series) -> list[Symptom]:
    pts = loss.finite()
    if len(pts) < 4:
        return []
    lo_i = min(range(len(pts)), key=lambda i: pts[i].value)
    hi_i = max(range(lo_i, len(pts)), key=lambda i: pts[i].value)
    lo, hi = pts[lo_i], pts[hi_i]
    if hi_i > lo_i and hi.value > 5 * max(lo.value, 1e-8) and hi.value > 1.5 * abs(pts[0].value):
        return [
            Symptom(
                "loss-diverging",
                f"{loss.name} rose from {lo.value:.4g} (step {lo.step}) to {hi.value:.4g} (step {hi.step})",
                (_ev(lo, loss.name, "lowest"), _ev(hi, loss.name, "highest after it")),
                step=hi.step,
                value=hi.value / max(lo.value, 1e-8),
            )
        ]
    return []


def _falls_steadily(vals: list[float]) -> bool:
    """Whether the means of 4 or 5 consecutive stretches of `vals` (3 points at least each) fall
    every time: a slow but steady descent is learning, not a plateau (a loss that only wanders
    around one level, as without an optimizer step, does that about once in 24 to 120 runs)."""
    parts = min(5, len(vals) // 3)
    if parts < 4:
        return False
    size = len(vals) // parts
    means = [_mean(vals[i * size : (i + 1) * size]) for i in range(parts)]
    return all(b < a for a, b in zip(means, means[1:], strict=False))


def _rises_steadily(vals: list[float]) -> bool:
    """The mirror of _falls_steadily: a loss creeping up stretch after stretch is drifting away
    (a run diverging slowly), not sitting where a model that never updates sits."""
    return _falls_steadily([-v for v in vals])


FROZEN_SPREAD = 0.002  # the frozen half's standard deviation, as a share of its mean
FELL_BY = 10.0  # how many of those standard deviations the first value sits above it
FELL_AT_LEAST = 0.01  # and by what share of the level it froze at (more than a printed digit)


def fell_then_froze(vals: list[float]) -> float | None:
    """Where the loss sits, if it fell from its first value and then froze: its second half
    varies by under 0.2% of its mean, and the first value lies more than ten of those standard
    deviations above it, and at least 1% above it (a loss printed to four digits that never
    moves can differ in its last digit only). A run whose parameters never change (no backward,
    no step) draws every loss from one distribution, so its first value is one more sample of
    the same noise; a model that collapsed to one output (every batch scores the same) sits
    still at a level it fell to. Scale-free: the fall is measured in the run's own noise and as
    a share of the level, not in loss units."""
    if len(vals) < 8:
        return None
    tail = vals[len(vals) // 2 :]
    mean = _mean(tail)
    if mean <= 0:
        return None
    spread = _std(tail)
    fall = vals[0] - mean
    if spread > FROZEN_SPREAD * mean or fall <= FELL_BY * spread or fall < FELL_AT_LEAST * mean:
        return None
    return mean


def plateaus(
    loss: Series, grad: Series | None, accuracy: Series | None = None, huge_means_sum: bool = True
) -> list[Symptom]:
    """A loss that does not move, where it sits, and whether it sits at a double-softmax floor."""
    pts = loss.finite()
    out: list[Symptom] = []
    # an epoch's loss is a mean over its steps: five of them (early stopping with a patience of
    # four ends a run that never improved there) weigh as much as eight noisy steps
    if len(pts) < (5 if loss.per_epoch else 8):
        return out
    vals = [p.value for p in pts]
    k = max(2, len(vals) // 5)
    head, tail = _mean(vals[:k]), _mean(vals[-k:])
    first, huge = vals[0], loss.huge_above
    if first > huge and tail < 0.1 * first and tail < huge:
        # far beyond any classifier's starting loss, then down to a classifier's scale within
        # the run: the first steps blew the loss up and the run came back (a summed loss stays
        # at its scale, a tenth of its start at the least)
        out.append(
            Symptom(
                "loss-huge-then-recovered",
                f"the first {loss.name} is {first:.4g}, then it falls to {tail:.4g} "
                f"({first / tail:.0f}x lower): a blow-up at the start the run recovered from",
                (_ev(pts[0], loss.name, "first value"), _ev(pts[-1], loss.name, "last")),
                value=first / tail,
            )
        )
    elif first > huge and huge_means_sum and not loss.starts_mid_run:
        # (not where a KL term is logged beside the loss: a VAE's ELBO is summed over pixels and
        # starts in the hundreds when nothing is wrong)
        out.append(
            Symptom(
                "loss-huge-initial",
                f"the first {loss.name} is {first:.4g}, far above a classifier's starting loss",
                (_ev(pts[0], loss.name, "first value"),),
                value=first,
            )
        )
    if (
        head > 0
        and abs(tail - head) / head < 0.05
        and _std(vals) / max(abs(_mean(vals)), 1e-12) < 0.1
        and not _falls_steadily(vals)
        and not _rises_steadily(vals)
    ):
        out.append(
            Symptom(
                "loss-flat",
                f"{loss.name} stayed at about {tail:.4g} from step {pts[0].step} to step {pts[-1].step}",
                (_ev(pts[0], loss.name, "first"), _ev(pts[-1], loss.name, "last")),
                value=tail,
            )
        )
        froze = fell_then_froze(vals)
        if froze is not None:
            out.append(
                Symptom(
                    "loss-fell-then-froze",
                    f"{loss.name} fell from {first:.4g} to {froze:.4g} and then held there to within a "
                    f"fraction of a percent: it moved, so the parameters were updated, then it stopped",
                    (_ev(pts[0], loss.name, "first"), _ev(pts[-1], loss.name, "last")),
                    value=froze,
                )
            )
        c = round(math.exp(tail)) if 0 < tail < 5 else 0  # ln 100 < 5; a flat 1e31 must not overflow
        if 2 <= c <= 100 and abs(math.log(c) - tail) < 0.02 * tail:
            out.append(
                Symptom(
                    "loss-at-log-c",
                    f"{loss.name} sits at ln({c}) = {math.log(c):.4g}, the loss of a uniform guess over {c} classes",
                    (_ev(pts[-1], loss.name),),
                    value=tail,
                )
            )
    floor = softmax_floor(loss, first, averaged=loss.per_epoch)
    # the floor depends on how often the model is right: where the log says, it can rule the
    # floor out (a model right on 60% of samples cannot sit where one right on all of them does)
    acc = accuracy.finite()[-1].value if accuracy is not None and accuracy.finite() else None
    acc = as_fraction(acc) if acc is not None else acc
    if (
        floor is not None
        and acc is not None
        and 0 < acc < 0.9
        and softmax_floor(loss, first, acc, loss.per_epoch) is None
    ):
        floor = None
    if floor is not None:
        out.append(floor)
    return out


def softmax_floor(loss: Series, start: float, accuracy: float = 1.0, averaged: bool = False) -> Symptom | None:
    """A loss that fell from ln(C) (`start`) and stalled where cross-entropy over probabilities must.

    Cross-entropy applied to softmax outputs instead of logits scores a confident right answer
    ln(e + C - 1) - 1 and a confident wrong one ln(e + C - 1): a model right on a share
    `accuracy` of samples cannot get below ln(e + C - 1) - accuracy, and sits there once it is
    confident. (With accuracy 1 that is the familiar floor ln(e + C - 1) - 1.)

    `averaged`: `start` is the mean over the first epoch, already under ln(C) by what the model
    learnt in it, so C is at least e**start: the smallest whole count that is.
    """
    pts = loss.finite()
    if len(pts) < 8:
        return None
    vals = [p.value for p in pts]
    tail = _mean(vals[-max(2, len(vals) // 5) :])
    if not 0.58 <= start <= 7.6:  # ln 1.8 .. ln 2000: a uniform guess over 2 to 2000 classes
        return None
    c_est = math.ceil(math.exp(start)) if averaged else math.exp(start)
    if not 1.8 <= c_est <= FLOOR_MAX_CLASSES:
        # over many classes the floor is about one nat under ln(C): a loss still on its way down
        # (a contrastive loss over 127 other views, a model that has barely started) passes it
        return None
    floor = math.log(math.e + c_est - 1) - accuracy
    # the floor is a bound, at any C: no sample's cross-entropy over softmax outputs can go below
    # ln(e + C - 1) - 1 (a confident right answer), so a loss that has been clearly under it (a
    # run that learnt, then drifted back up to where the floor would be) never had one
    if min(vals) < 0.9 * (math.log(math.e + c_est - 1) - 1):
        return None
    # stalled there: the last stretch no lower than the one before it (a healthy run that is
    # still falling may pass the floor on its way down)
    k = max(2, len(vals) // 6)
    stalled = median(vals[-k:]) >= 0.97 * median(vals[-2 * k : -k])
    if tail < 0.9 * start and abs(tail - floor) / floor < 0.1 and stalled:
        where = "" if accuracy == 1.0 else f" at accuracy {accuracy:.3g}"
        return Symptom(
            "double-softmax-floor",
            f"{loss.name} fell from about ln {c_est:.0f} = {start:.4g} and stalled at "
            f"{tail:.4g}, the floor of cross-entropy over softmax outputs{where} "
            f"(ln(e+C-1)-{accuracy:.3g} = {floor:.4g})",
            (_ev(pts[0], loss.name, "first"), _ev(pts[-1], loss.name, "last")),
            value=tail,
        )
    return None


def val_softmax_floor(s: dict[str, Series]) -> list[Symptom]:
    """The softmax floor seen on validation, where the validation accuracy says where it lies.

    With some wrong training labels the training loss of even a perfect model sits above the
    floor; validation, with its accuracy logged beside it, still shows it. The model must be
    right more often than not, or the floor is too close to ln(C) to tell from not learning.
    """
    train, val, acc = s.get("loss"), s.get("val_loss"), s.get("val_accuracy")
    if train is None or val is None or acc is None or not train.finite() or not acc.finite():
        return []
    a = acc.finite()[-1].value
    a = as_fraction(a)
    if not 0.5 <= a <= 1:
        return []
    found = softmax_floor(val, train.finite()[0].value, a, train.per_epoch)
    return [found] if found is not None else []


def oscillation(loss: Series) -> list[Symptom]:
    """A loss that keeps swinging at a high level instead of settling."""
    pts = loss.finite()
    if len(pts) < 12 or len(pts) < len(loss.points) * 0.8:
        return []
    vals = [p.value for p in pts]
    first = _mean(vals[:2])
    second = vals[len(vals) // 2 :]
    if first <= 0 or max(second) > 5 * first:
        return []
    if _mean(second) >= 0.35 * first and _std(second) >= 0.15 * first:
        # swings as large as the level itself are sure; smaller ones could be a small batch's
        # noise on a loss that is slow to fall, and count for less
        strength = 1.0 if _std(second) >= 0.5 * _mean(second) else 0.6
        hi = max(pts[len(pts) // 2 :], key=lambda p: p.value)
        lo = min(pts[len(pts) // 2 :], key=lambda p: p.value)
        return [
            Symptom(
                "loss-oscillating",
                f"in the second half of the run {loss.name} still swings between {lo.value:.3g} and {hi.value:.3g}",
                (_ev(lo, loss.name, "low"), _ev(hi, loss.name, "high")),
                value=_std(second) / first,
                strength=strength,
            )
        ]
    return []


SWING_RATIO = 10.0  # a swing: from the second half's floor to ten times it and back
SWING_BAND = 3.0  # "back at the floor": within three times the floor


def swings_back_to_low(loss: Series) -> list[Symptom]:
    """A loss that drops near zero, jumps many times higher and comes back, again and again.

    A model fitting one block of same-class batches after another does this: each block is
    learnt (the loss sinks), the next one is new (it jumps). A learning rate too high jumps
    and stays up; noise on a healthy loss never spans ten times its floor. Scale-free: only
    ratios to the second half's own floor count.
    """
    pts = loss.finite()
    if len(pts) < 12:
        return []
    half = pts[len(pts) // 2 :]
    floor = min(p.value for p in half)
    if floor <= 0:
        return []
    returns = 0
    high: Point | None = None
    peak = half[0]
    for p in half:
        if p.value >= SWING_RATIO * floor:
            high = high if high is not None and high.value >= p.value else p
        elif p.value <= SWING_BAND * floor and high is not None:
            returns += 1
            peak = high
            high = None
    if returns < 2:
        return []
    lo = min(half, key=lambda p: p.value)
    return [
        Symptom(
            "loss-swings-back-to-low",
            f"{loss.name} jumped to {SWING_RATIO:g}x its floor of {floor:.3g} and sank back {returns} times "
            "in the second half of the run",
            (_ev(lo, loss.name, "floor"), _ev(peak, loss.name, "a jump")),
            value=float(returns),
        )
    ]


REPEAT_Z = 4.0  # standard errors a correlation must clear, at one period and at two
REPEAT_POINTS = 800
FLOOR_MAX_CLASSES = 30  # the double-softmax floor is told from a slow fall only for a few classes
BELOW_CONFIGURED = 10.0  # every logged rate this many times under the configured one
ABOVE_CONFIGURED = 30.0  # or this many times over it (a linear scaling rule reaches 8-16x)
REPEAT_MULTIPLES = 4
REPEAT_WIGGLE = 0.01  # the median batch-to-batch wiggle must be 1% of the loss at least  # the repeat is looked for one, two, three and four periods later


def repeating_batches(loss: Series) -> list[Symptom]:
    """A training loss whose ups and downs repeat with a fixed period: the same batches every epoch.

    With shuffling, which samples share a batch changes every epoch and the batch-to-batch
    wiggles of the loss do not repeat. Without it (or with a sampler that is never told the
    epoch) every epoch replays the same batches in the same order, and the wiggles come back
    one epoch later. The loss is detrended with a running median, then the correlation of the
    wiggles with themselves one and two periods later must both be far outside chance
    (REPEAT_Z standard errors, 1/sqrt(pairs) each, for the shortest period that qualifies).
    """
    pts = [p for p in loss.finite() if p.value > 0]
    if len(pts) < 24 or len(pts) < len(loss.points) * 0.8:
        return []
    # the first epoch is a transient (a sorted loader's first class block, the fast early fall)
    # whose swings would drown the repeats: look at the rest
    pts = pts[len(pts) // 3 :][-REPEAT_POINTS:]  # the search costs points x periods
    n = len(pts)
    logs = [math.log(p.value) for p in pts]
    # what is left after a running median of nine points: batch-to-batch wiggles, not the trend
    wiggle = [logs[i] - median(logs[max(0, i - 4) : i + 5]) for i in range(n)]
    if median(abs(w) for w in wiggle) < REPEAT_WIGGLE:
        return []  # a loss flat to its last printed digit: its wiggles are rounding, not batches
    for period in range(2, min(n // 3, REPEAT_POINTS // 4) + 1):
        z1 = _corr(wiggle[:-period], wiggle[period:]) * math.sqrt(n - period)
        if z1 < REPEAT_Z:
            continue
        # the repeat must come back at every later multiple of the period too: their
        # correlations pooled (each about N(0, 1) by chance, so their sum over sqrt(count))
        later = [
            _corr(wiggle[: -k * period], wiggle[k * period :]) * math.sqrt(n - k * period)
            for k in range(2, REPEAT_MULTIPLES + 1)
            if n - k * period >= 2 * period
        ]
        if not later:
            continue
        z2 = sum(later) / math.sqrt(len(later))
        if z2 < REPEAT_Z:
            continue
        # cite the period's largest wiggle and its repeat one period later
        i = max(range(period, 2 * period), key=lambda k: wiggle[k])
        a, b = pts[i], pts[i + period]
        return [
            Symptom(
                "batch-order-repeats",
                f"the training loss repeats the same ups and downs every {period} logged "
                f"points ({b.step - a.step} steps; correlation {z1 / math.sqrt(n - period):.2f} "
                f"one period later, {later[0] / math.sqrt(n - 2 * period):.2f} two): the batches "
                "come in the same order every epoch",
                (_ev(a, loss.name, "high point"), _ev(b, loss.name, "one period later")),
                step=b.step - a.step,
                value=z1 / math.sqrt(n - period),
            )
        ]
    return []


def _corr(xs: list[float], ys: list[float]) -> float:
    # map(mul) keeps the loops in C: the period search calls this hundreds of times on a long run
    mx, my = _mean(xs), _mean(ys)
    dx = [x - mx for x in xs]
    dy = [y - my for y in ys]
    sxx, syy = sum(map(mul, dx, dx)), sum(map(mul, dy, dy))
    if sxx == 0 or syy == 0:
        return 0.0
    return sum(map(mul, dx, dy)) / math.sqrt(sxx * syy)


# How far above a calibrated model's cross-entropy a loss must sit, at the accuracy logged, to
# say "accurate but the loss stayed high": cross-entropy over softmax outputs sits at least 2.3x
# above it for ten classes or more (ln(e + C - 1) - a against the calibrated loss), a softmax
# over the wrong axis about ten times.
CALIBRATED_FACTOR = 2.0


def calibrated_loss(accuracy: float, classes: float) -> float:
    """The cross-entropy of a model right on a share `accuracy` of samples over `classes` classes
    that knows it: probability `accuracy` on its answer, the rest spread over the other classes."""
    a = min(max(accuracy, 1e-6), 1 - 1e-6)
    return -a * math.log(a) - (1 - a) * math.log((1 - a) / max(classes - 1, 1.0))


def accuracy_vs_loss(s: dict[str, Series]) -> list[Symptom]:
    """Accuracy that is high while the loss stays high: the loss is not measuring what it should."""
    acc = s.get("val_accuracy") or s.get("accuracy")
    vloss = s.get("val_loss")
    tloss = s.get("loss")
    out: list[Symptom] = []
    if acc is None or len(acc.finite()) < 2:
        return out
    a_last = acc.finite()[-1]
    a_val = as_fraction(a_last.value)
    if a_val < 0.8:
        return out
    # the loss "stayed" only against a start that had not learned yet: where the log opens on a
    # model already right most of the time (its first point an epoch's mean, or a log joined
    # late), the error rate has not even halved and the first loss is no untrained baseline
    a_first = acc.finite()[0].value
    a_first = as_fraction(a_first)
    if 1 - a_val > 0.5 * (1 - a_first):
        return out
    ref = vloss if vloss is not None and len(vloss.finite()) >= 2 else tloss
    if ref is None or len(ref.finite()) < 2:
        return out
    r0, r1 = ref.finite()[0], ref.finite()[-1]
    # against the run's own scale: a loss several times what a model right on a share a_val of
    # C classes scores when it knows how often it is right (C read off the first training loss,
    # a uniform guess's ln C); label smoothing, a few classes or an honest margin of doubt keep
    # a healthy loss near that, a second softmax or the wrong axis put it far above
    start = tloss.finite()[0].value if tloss is not None and tloss.finite() else None
    if (
        start is not None
        and 0.58 <= start <= 7.6
        and r1.value < CALIBRATED_FACTOR * calibrated_loss(a_val, math.exp(start))
    ):
        return out
    if r1.value >= 0.5 * r0.value and r1.value > 0.3:
        out.append(
            Symptom(
                "accurate-but-loss-high",
                f"accuracy reached {a_val:.3g} while {ref.name} stayed at {r1.value:.3g} (from {r0.value:.3g})",
                (_ev(a_last, acc.name), _ev(r1, ref.name)),
                value=r1.value / r0.value,
            )
        )
    if vloss is not None and tloss is not None and len(tloss.finite()) >= 4:
        t1 = _mean([p.value for p in tloss.finite()[-3:]])
        if t1 > 0 and r1 is not None and vloss is ref and r1.value > 2.5 * t1 and r1.value >= 0.5 * r0.value:
            out.append(
                Symptom(
                    "val-loss-far-above-train",
                    f"validation loss {r1.value:.3g} is {r1.value / t1:.1f}x the training loss "
                    f"{t1:.3g} while accuracy is {a_val:.3g}",
                    (_ev(r1, vloss.name), _ev(tloss.finite()[-1], tloss.name)),
                    value=r1.value / t1,
                )
            )
    return out


def gradients_without_progress(grad: Series) -> list[Symptom]:
    """`loss-flat-with-gradients`: beside a flat loss, a gradient norm that stays well above zero
    at every logged step. Backward runs and yields gradients, yet nothing moves: the update is what
    is missing (a backward that never ran logs a norm of zero, or none)."""
    pts = [p for p in grad.points if math.isfinite(p.value)]
    if len(pts) < 3 or len(pts) < 0.8 * len(grad.points) or min(p.value for p in pts) <= 1e-8:
        return []
    return [
        Symptom(
            "loss-flat-with-gradients",
            f"the gradient norm stays between {min(p.value for p in pts):.3g} and "
            f"{max(p.value for p in pts):.3g} over {len(pts)} logged steps while the loss does not move",
            (_ev(pts[0], grad.name), _ev(pts[-1], grad.name)),
        )
    ]


def grad_trends(grad: Series) -> list[Symptom]:
    pts = grad.points
    out: list[Symptom] = []
    fin = []
    for p in pts:
        if not math.isfinite(p.value):
            break
        fin.append(p)
    vals = [p.value for p in fin]
    if len(pts) >= 3 and sum(1 for p in pts if math.isfinite(p.value) and abs(p.value) < 1e-12) >= 0.8 * len(pts):
        out.append(
            Symptom(
                "grad-norm-zero",
                f"the gradient norm is zero at {len(pts)} logged steps",
                (_ev(pts[0], grad.name), _ev(pts[-1], grad.name)),
            )
        )
        return out
    if len(vals) >= 3:
        # a jump counts only if it also towers over the run's usual gradient norm so far:
        # a healthy run's norm can jump 10x from a near-zero value
        ratios = [
            (b / a, i)
            for i, (a, b) in enumerate(zip(vals, vals[1:], strict=False))
            if a > 0 and i >= 2 and b >= 10 * a and b > 10 * median(vals[: i + 1])
        ]
        if ratios:
            worst, i = max(ratios)
            if worst >= 10:
                out.append(
                    Symptom(
                        "grad-norm-exploding",
                        f"the gradient norm jumped {worst:.3g}x between steps {fin[i].step} and {fin[i + 1].step}",
                        (_ev(fin[i], grad.name), _ev(fin[i + 1], grad.name)),
                        step=fin[i + 1].step,
                        value=worst,
                    )
                )
    # roughly linear growth: the signature of gradients summed over steps
    cap = next((i for i, v in enumerate(vals) if v > 12 * max(vals[0], 1e-12)), len(vals))
    seg = fin[:cap]
    if len(seg) >= 6:
        xs = [float(p.step) for p in seg]
        ys = [p.value for p in seg]
        ups = sum(1 for a, b in zip(ys, ys[1:], strict=False) if b > a) / (len(ys) - 1)
        r2, slope = _fit(xs, ys)
        if ups >= 0.7 and r2 >= 0.8 and slope > 0 and ys[-1] >= 4 * ys[0]:
            out.append(
                Symptom(
                    "grad-norm-linear-growth",
                    f"the gradient norm grew steadily from {ys[0]:.3g} to {ys[-1]:.3g} over "
                    f"steps {seg[0].step}-{seg[-1].step} (linear fit R^2 = {r2:.2f})",
                    (_ev(seg[0], grad.name), _ev(seg[-1], grad.name)),
                    value=r2,
                )
            )
    return out


def _fit(xs: list[float], ys: list[float]) -> tuple[float, float]:
    mx, my = _mean(xs), _mean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=False))
    if sxx == 0 or syy == 0:
        return 0.0, 0.0
    return sxy * sxy / (sxx * syy), sxy / sxx


def lr_floor(lr: Series) -> list[Symptom]:
    """A schedule that reaches its floor long before the run ends."""
    pts = lr.finite()
    if len(pts) < 8:
        return []
    vals = [p.value for p in pts]
    peak_i = max(range(len(vals)), key=lambda i: vals[i])
    after = vals[peak_i:]
    floor = min(after)
    # a floor a fifth of the peak or lower (Megatron's and many recipes' minimum is a tenth of the
    # peak rate, which a logged peak a step off the true one may not quite reach)
    if floor < 0 or vals[peak_i] <= 0 or vals[peak_i] < 5 * floor:
        return []
    # a schedule that decays to exactly zero has reached its floor within 1% of its peak; one
    # that keeps decaying geometrically (a StepLR stepped every batch) has none, but a thousandth
    # of its peak moves the weights no more than a floor would
    near = max(floor * 1.05, vals[peak_i] * 0.01) if floor == 0 else max(floor * 1.05, vals[peak_i] * 1e-3)
    reach = next(i for i, v in enumerate(after) if v <= near) + peak_i
    frac = (reach + 1) / len(vals)
    if frac <= 0.6 and all(v <= near for v in vals[reach:]):
        return [
            Symptom(
                "lr-floor-early",
                f"the learning rate reached its floor {floor:.3g} at step {pts[reach].step}, "
                f"{100 * frac:.0f}% into the run, and stayed there",
                (_ev(pts[peak_i], "lr", "peak"), _ev(pts[reach], "lr", "floor reached")),
                step=pts[reach].step,
                value=frac,
            )
        ]
    return []


def lr_against_configured(lr: Series) -> list[Symptom]:
    """The rates a run logged against the one it printed once before training (a config dump's
    `lr: 0.5`, an argparse Namespace):

    - `lr-below-configured`: every logged rate, from the first logged step on, at least
      `BELOW_CONFIGURED` times lower: the schedule ran its decay before the run logged anything
      (a per-epoch schedule stepped every batch); a warm-up would climb to the configured rate;
    - `lr-above-configured`: the first logged rate at least `ABOVE_CONFIGURED` times higher: the
      code multiplied the rate it was given (a scaling rule applied twice, a factor in the wrong
      place); a schedule may bring it down later, a warm-up would start below it.
    """
    pts = lr.finite()
    if len(pts) < 8 or not lr.strays:
        return []
    first = pts[0].line
    before = [p for p in lr.strays if p.line is not None and first is not None and p.line < first]
    if not before or before[-1].value <= 0:
        return []
    configured = before[-1]
    top, start = max(p.value for p in pts), pts[0].value
    evidence = (_ev(configured, "lr", "configured"), _ev(pts[0], "lr", "first logged"))
    if top > 0 and top * BELOW_CONFIGURED <= configured.value:
        return [
            Symptom(
                "lr-below-configured",
                f"the run was configured with a learning rate of {configured.value:.3g}, but every "
                f"logged rate, from the first (step {pts[0].step}) on, is at most {top:.3g} "
                f"({configured.value / top:.3g}x lower)",
                evidence,
                step=pts[0].step,
                value=configured.value / top,
            )
        ]
    if start >= ABOVE_CONFIGURED * configured.value:
        return [
            Symptom(
                "lr-above-configured",
                f"the run was configured with a learning rate of {configured.value:.3g}, but it "
                f"started at {start:.3g} ({start / configured.value:.3g}x higher)",
                evidence,
                step=pts[0].step,
                value=start / configured.value,
            )
        ]
    return []


def warmup_blowup(loss: Series, lr: Series) -> list[Symptom]:
    """A loss that climbed while the learning rate warmed up: at the rate's peak the loss is at
    least twice its first value and its low point before (a healthy warm-up's loss falls). Read
    against the run's own start and the run's own schedule, so scale-free in both."""
    rates = lr.finite()
    if len(rates) < 3 or rates[0].value <= 0:
        return []
    peak_i = max(range(len(rates)), key=lambda i: rates[i].value)
    peak = rates[peak_i]
    if peak_i == 0 or peak.value < 1.5 * rates[0].value:
        return []  # no warm-up: the rate started at its peak
    pts = [p for p in loss.finite() if p.step <= peak.step]
    if len(pts) < 2 or pts[0].value <= 0:
        return []
    low = min(pts, key=lambda p: p.value)
    top = max(pts[pts.index(low) :], key=lambda p: p.value)
    if top.value >= 2 * pts[0].value and top.value >= 2 * low.value:
        return [
            Symptom(
                "loss-rose-in-warmup",
                f"{loss.name} rose from {pts[0].value:.4g} to {top.value:.4g} (step {top.step}) while the "
                f"learning rate warmed up to {peak.value:.3g}",
                (
                    _ev(pts[0], loss.name, "first"),
                    _ev(top, loss.name, "highest in the warm-up"),
                    _ev(peak, "lr", "peak"),
                ),
                step=top.step,
                value=top.value / pts[0].value,
            )
        ]
    return []


def non_finite_in_warmup(loss: Series, lr: Series) -> list[Symptom]:
    """A loss that turned non-finite while the learning rate was still rising, after the run had
    trained with finite losses at lower rates: the rate at the first NaN is above the rate at
    the last finite loss and at least twice the run's first rate (a warm-up, or a rate scaled up
    by hand, reaching a step the weights cannot take). Read on the run's own schedule; a NaN
    after the rate has levelled off or decayed, or within the first few logged steps (a zero
    the first batches hit says as much), says nothing here."""
    pts = loss.points
    bad_i = next((i for i, p in enumerate(pts) if not math.isfinite(p.value)), None)
    rates = [r for r in lr.finite() if r.line is not None]
    if bad_i is None or bad_i < 3 or len(rates) < 2 or rates[0].value <= 0 or pts[bad_i].line is None:
        return []
    bad, last = pts[bad_i], pts[bad_i - 1]

    lines = [r.line or 0 for r in rates]

    def rate_at(p: Point) -> Point | None:
        """The rate logged last at or before the line of `p`."""
        if p.line is None:
            return None
        i = bisect_right(lines, p.line) - 1
        return rates[i] if i >= 0 else None

    at_bad, at_last = rate_at(bad), rate_at(last)
    if at_bad is None or at_last is None or at_bad is at_last:
        return []
    if at_bad.value <= at_last.value or at_bad.value < 2 * rates[0].value:
        return []
    return [
        Symptom(
            "non-finite-in-warmup",
            f"{loss.name} turned {bad.value} at step {bad.step} as the learning rate rose from "
            f"{at_last.value:.3g} to {at_bad.value:.3g} ({at_bad.value / rates[0].value:.3g}x its first value)",
            (
                _ev(bad, loss.name, "first non-finite value"),
                _ev(at_last, "lr", "at the last finite loss"),
                _ev(at_bad, "lr", "at the first non-finite loss"),
            ),
            step=bad.step,
            value=at_bad.value / rates[0].value,
        )
    ]


def scale_collapse(scale: Series) -> list[Symptom]:
    pts = scale.finite()
    if len(pts) < 3:
        return []
    drops = sum(1 for a, b in zip(pts, pts[1:], strict=False) if b.value < a.value)
    if drops >= 4 and (pts[-1].value <= pts[0].value / 256 or pts[-1].value < 1):
        return [
            Symptom(
                "loss-scale-collapse",
                f"the AMP loss scale fell from {pts[0].value:.3g} to {pts[-1].value:.3g}: "
                "inf/NaN gradients at step after step",
                (_ev(pts[0], "loss scale"), _ev(pts[-1], "loss scale")),
                value=pts[-1].value,
            )
        ]
    return []


def _any_between(sorted_lines: list[int], a: int, b: int) -> bool:
    """True if some line lies strictly between a and b (a bisection: big logs have thousands)."""
    i = bisect_right(sorted_lines, a)
    return i < len(sorted_lines) and sorted_lines[i] < b


def memory_growth(mem: Series, val: Series | None) -> list[Symptom]:
    """Memory that keeps growing to the end of the run (not a warm-up that levels off)."""
    pts = mem.finite()
    if len(pts) < 8:
        return []
    vals = [p.value for p in pts]
    n = len(vals)
    first_half = vals[n // 2] - vals[0]
    second_half = vals[-1] - vals[n // 2]
    ups = sum(1 for a, b in zip(vals[n // 2 :], vals[n // 2 + 1 :], strict=False) if b > a) / max(1, n - n // 2 - 1)
    total = vals[-1] - vals[0]
    # a few percent of drift is the allocator settling in; a leak keeps adding to it
    if not (total > 0.04 * abs(vals[0]) and second_half > 0.4 * max(first_half, 0) and second_half > 0 and ups >= 0.1):
        return []
    ev = (_ev(pts[0], "memory", "first"), _ev(pts[-1], "memory", "last"))
    # where does the growth happen: across validation passes, or at every step? Only a log that
    # reads the memory during training too can say: where every reading has a validation pass
    # since the one before (memory printed once per epoch), each gap holds both
    val_lines = sorted(p.line for p in val.points if p.line is not None) if val is not None else []
    apart = [(a, b) for a, b in zip(pts, pts[1:], strict=False) if a.line is not None and b.line is not None]
    if val_lines and any(not _any_between(val_lines, a.line, b.line) for a, b in apart):  # type: ignore[arg-type]
        at_eval = 0.0
        for a, b in zip(pts, pts[1:], strict=False):
            if (
                b.value > a.value
                and a.line is not None
                and b.line is not None
                and _any_between(val_lines, a.line, b.line)
            ):
                at_eval += b.value - a.value
        grown = sum(max(0.0, b - a) for a, b in zip(vals, vals[1:], strict=False))
        if grown > 0 and at_eval / grown >= 0.7:
            return [
                Symptom(
                    "memory-grows-at-eval",
                    f"memory grew from {vals[0]:.4g} to {vals[-1]:.4g}, "
                    f"{100 * at_eval / grown:.0f}% of it across validation passes",
                    ev,
                    value=total,
                )
            ]
    return [
        Symptom(
            "memory-growing",
            f"memory grew steadily from {vals[0]:.4g} to {vals[-1]:.4g} over steps {pts[0].step}-{pts[-1].step}",
            ev,
            value=total,
        )
    ]


FEW_POINTS_SHARE = 0.8  # the data wait's share of a step that one or two logged steps must show


def _waits(pair: tuple[Point, Point, float], batch: Series, share: float, where: str) -> list[Symptom]:
    d, b, _ = pair
    summary = f"waiting for data takes {100 * share:.0f}% of {where}"
    return [Symptom("data-wait", summary, (_ev(d, "data_time"), _ev(b, batch.name)), value=share)]


def data_wait(data: Series, batch: Series, apart: bool = False) -> list[Symptom]:
    """`data-wait`: the loader's wait takes half of each step, or the steps stall on it again and
    again (lerobot's `data_s:13.330` beside `updt_s:0.302`, then 0.001, then 0.595 eight steps
    later) so that it takes half the logged time. `apart`: `batch` is the update's time alone
    (lerobot's `updt_s`), not the whole step's. A first step's wait (workers starting) is left out."""
    pairs = [
        (d, b, d.value + b.value if apart else b.value)
        for d, b in zip(data.finite(), batch.finite(), strict=False)
        if b.value > 0 and d.value >= 0
    ]
    if pairs and pairs[0][0].step is not None and pairs[0][0].step <= 1:
        pairs = pairs[1:]
    if 0 < len(pairs) < 3 and (not data.explicit_steps or all(p[0].step > 1 for p in pairs)):
        # a pasted line or two of a run under way (vindlu's `time: 40.1906  data: 38.0570` at
        # iteration 200; a line whose step is printed and is the first says only that the workers
        # started): only a wait that is nearly the whole step says enough
        share = min(d.value / total for d, _, total in pairs)
        return _waits(pairs[0], batch, share, "the step the log shows") if share >= FEW_POINTS_SHARE else []
    if len(pairs) < 3:
        return []
    share = median(d.value / total for d, _, total in pairs)
    if share >= 0.5:
        return _waits(pairs[len(pairs) // 2], batch, share, "each step")
    stalls = [(d, b) for d, b, total in pairs if d.value >= 0.5 * total]
    waited = sum(d.value for d, _, _ in pairs) / sum(total for _, _, total in pairs)
    if len(stalls) >= 2 and waited >= 0.5:
        (d, b), (last, _) = stalls[0], stalls[-1]
        return [
            Symptom(
                "data-wait",
                f"the steps stalled waiting for data {len(stalls)} times (at steps {d.step} and {last.step} among "
                f"them): waiting took {100 * waited:.0f}% of the logged time",
                (_ev(d, "data_time"), _ev(b, batch.name), _ev(last, "data_time")),
                value=waited,
                # weaker than a wait at every step: a stall now and then also slows a loader that
                # keeps up on the whole
                strength=0.6,
            )
        ]
    return []


def step_stalls(batch: Series) -> list[Symptom]:
    """`step-time-stalls`: with no loader time logged, steps that take five times the fastest
    one again and again, the time above the fastest step half the logged time (clip4clip's
    `Time/step` swinging between 4 s and 45 s): what a loader that cannot keep up makes. The
    first step (start-up) is left out."""
    pts = [p for p in batch.finite() if p.value > 0]
    # one kind of line only (a log printing an epoch's time and its evaluation's is no step series)
    shapes = Counter(batch.templates.get(id(p), ()) for p in pts)
    if len(shapes) > 1:
        return []
    if pts and pts[0].step is not None and pts[0].step <= 1:
        pts = pts[1:]
    if len(pts) < 5:
        return []
    fastest = min(p.value for p in pts)
    slow = [p for p in pts if p.value >= 5 * fastest]
    total = sum(p.value for p in pts)
    above = (total - fastest * len(pts)) / total
    if len(slow) < 3 or above < 0.5:
        return []
    return [
        Symptom(
            "step-time-stalls",
            f"{len(slow)} of {len(pts)} steps took over five times the fastest ({fastest:.3g}), up to "
            f"{max(p.value for p in slow):.3g}: {100 * above:.0f}% of the logged time is spent above the fastest step",
            (_ev(min(pts, key=lambda p: p.value), "batch_time", "fastest"), _ev(slow[0], "batch_time", "a stall")),
            value=above,
        )
    ]


def flat_while_warming_up(out: list[Symptom], loss: Series, lr: Series) -> list[Symptom]:
    """A loss flat over steps where the logged rate is zero, or still rising at every logged step
    (a warm-up, lerobot's 1.8e-06 to 3.4e-06): the rate explains it, so it is no sign of a missing
    backward or step. `loss-flat` becomes `loss-flat-in-warmup`, which no cause takes."""
    flat = next((x for x in out if x.name == "loss-flat"), None)
    if flat is None or not loss.points:
        return out
    first, last = loss.points[0].step, loss.points[-1].step
    if first is None or last is None:
        return out
    rates = [p.value for p in lr.finite() if p.step is not None and first <= p.step <= last]
    if len(rates) < 3:
        return out
    zero = all(v == 0 for v in rates)
    rising = all(b > a for a, b in zip(rates, rates[1:], strict=False)) and rates[-1] >= 1.5 * rates[0]
    if not (zero or rising):
        return out
    said = "is zero" if zero else f"is still warming up ({rates[0]:.3g} to {rates[-1]:.3g})"
    warm = Symptom("loss-flat-in-warmup", f"{flat.summary}, while the logged learning rate {said}", flat.evidence)
    return [warm if x is flat else x for x in out if x.name != "loss-fell-then-froze"]
