"""Train/eval-mode symptoms on real logs: overfitting from the first evaluation, noisy validation.

The corpus program trains a heavily regularised network on a small, partly mislabelled set, so a
forgotten `model.train()` (training in eval mode after the first evaluation) overfits and a
forgotten `model.eval()` (evaluating with dropout on) makes validation noisy; see corpus/train.py.
"""

from __future__ import annotations

import json
import math
import random

import pytest
from triage_corpus import CORPUS, MANIFEST, logs_for

from triage import detectors, reader
from triage.detectors import numeric, validation
from triage.series import Point, Series, SeriesBuilder

NEW_SYMPTOMS = {"overfit-after-first-eval", "val-noisy", "batch-order-repeats"}


def scan(path):
    s = reader.scan(path)
    b = SeriesBuilder()
    for r in s.readings:
        b.add(r.text, r.line, r.rank)
    series = b.build()
    return series, detectors.detect(detectors.Context(s.events, series, s.readings))


def found(path, name):
    return [s for s in scan(path)[1] if s.name == name]


def _read(path) -> str:
    import gzip

    data = path.read_bytes()
    return (gzip.decompress(data) if path.name.endswith(".gz") else data).decode("utf-8", "replace")


@pytest.mark.parametrize("path", logs_for("missing-train-mode"), ids=lambda p: p.name)
def test_training_left_in_eval_mode_overfits_from_the_first_evaluation(path):
    series, symptoms = scan(path)
    hits = [s for s in symptoms if s.name == "overfit-after-first-eval"]
    assert len(hits) == 1
    first_eval = series["val_loss"].points[0]
    s = hits[0]
    assert s.step == first_eval.step  # the step the fault takes effect, as the catalog says
    assert s.evidence[0].line == first_eval.line and s.evidence[0].step == first_eval.step
    assert "loss" in _read(path).splitlines()[first_eval.line - 1]
    assert s.value >= validation.GAP_GROWTH
    # each piece of evidence is a line of this log with the number it quotes
    for e in s.evidence:
        quoted = e.text.split(" = ")[1].split(" ")[0]
        assert float(quoted) > 0 and e.line <= len(_read(path).splitlines())


@pytest.mark.parametrize("path", logs_for("missing-eval-mode"), ids=lambda p: p.name)
def test_evaluation_in_training_mode_is_noisy_once_the_learning_rate_has_decayed(path):
    series, symptoms = scan(path)
    s = next(s for s in symptoms if s.name == "val-noisy")
    assert s.strength == 1.0 and s.value >= validation.NOISE_SHARE
    lr = series["lr"].finite()
    peak = max(p.value for p in lr)
    at_start = [p for p in lr if p.step <= s.step][-1]
    assert at_start.value <= validation.LOW_LR * peak * 1.05
    a, b = s.evidence
    assert a.step < b.step and a.line < b.line


@pytest.mark.parametrize("path", logs_for(None), ids=lambda p: p.name)
def test_healthy_runs_show_none_of_the_new_symptoms(path):
    assert not {s.name for s in scan(path)[1]} & NEW_SYMPTOMS


@pytest.mark.parametrize("path", logs_for("missing-train-mode"), ids=lambda p: p.name)
def test_a_deterministic_evaluation_is_not_called_noisy(path):
    # left in eval mode, the model is evaluated in eval mode too: validation is smooth
    assert not found(path, "val-noisy")


def test_unshuffled_batches_repeat_every_epoch():
    epoch_steps = 8  # corpus/train.py: 512 samples, 64 per optimizer step
    periods = [s.step for path in logs_for("no-shuffle") for s in found(path, "batch-order-repeats")]
    assert len(periods) >= 2 and set(periods) == {epoch_steps}
    shuffled = [p for c in {m["cause"] for m in MANIFEST} if c not in ("no-shuffle", None) for p in logs_for(c)]
    assert not [p.name for p in shuffled if found(p, "batch-order-repeats")]


# ---- the rules themselves, on series built here ----


def pts(values, start_line=1, every=2):
    return [Point(i + 1, v, start_line + every * i) for i, v in enumerate(values)]


def interleave(train: list[float], val: list[float], per_eval: int):
    """Train points, with a validation point after every `per_eval` of them, on numbered lines."""
    t, v, line = [], [], 1
    for k, val_value in enumerate(val):
        for x in train[k * per_eval : (k + 1) * per_eval]:
            t.append(Point(len(t) + 1, x, line))
            line += 1
        v.append(Point(len(t), val_value, line))
        line += 1
    return Series("loss", t), Series("val_loss", v)


def overfitting_run(scale: float = 1.0, start: int = 1):
    rnd = random.Random(0)
    train, val = [], []
    for k in range(40):
        # learns until eval `start`, then memorises: train keeps falling, validation turns up
        level = 2.3 * math.exp(-k / 2) + 0.6 if k <= start else 0.6 * math.exp(-(k - start) / 8) + 0.05
        train += [scale * level * math.exp(rnd.gauss(0, 0.1)) for _ in range(4)]
        val.append(2.3 * math.exp(-k / 2) + 0.3 + 0.004 * max(0, k - start))
    return train, val


def test_overfitting_needs_training_and_validation_on_one_scale():
    train, val = overfitting_run()
    loss, vloss = interleave(train, val, 4)
    assert [s.name for s in validation.overfit_after_first_eval(loss, vloss)] == ["overfit-after-first-eval"]
    # the same run with a summed training loss (16x): the ratio means nothing, nothing is said
    loss16, vloss16 = interleave([16 * x for x in train], val, 4)
    assert validation.overfit_after_first_eval(loss16, vloss16) == []


def test_overfitting_that_starts_late_is_not_blamed_on_the_first_evaluation():
    train, val = overfitting_run(start=25)
    loss, vloss = interleave(train, val, 4)
    assert validation.overfit_after_first_eval(loss, vloss) == []


def test_noise_estimate_ignores_trends():
    assert validation.noise([0.5 * i for i in range(30)]) == pytest.approx(0.0)
    rnd = random.Random(1)
    white = [rnd.gauss(0, 0.2) for _ in range(4000)]
    assert validation.noise(white) == pytest.approx(0.2, rel=0.1)
    assert validation.noise(white, robust=False) == pytest.approx(0.2, rel=0.1)


def test_without_a_decayed_learning_rate_validation_must_be_twice_as_noisy():
    rnd = random.Random(2)
    train = [0.5 * math.exp(rnd.gauss(0, 0.15)) for _ in range(200)]
    # at the training loss's level, validation jitters by ~9% of its noise: enough at a decayed
    # rate only
    jitter = 0.5 * 0.15 * 0.09
    val = [0.5 + rnd.gauss(0, jitter) for _ in range(50)]
    loss, vloss = interleave(train, val, 4)
    lines = sorted(p.line for p in loss.points)
    decaying = Series(
        "lr",
        [Point(i + 1, 0.1 * (0.5 + 0.5 * math.cos(math.pi * i / len(lines))), line) for i, line in enumerate(lines)],
    )
    constant = Series("lr", [Point(i + 1, 0.1, line) for i, line in enumerate(lines)])
    noisy = validation.noisy_validation(loss, vloss, decaying)
    assert [s.name for s in noisy] == ["val-noisy"] and noisy[0].strength == 1.0
    assert validation.noisy_validation(loss, vloss, constant) == []


def test_the_repeat_detector_needs_a_real_repeat():
    rnd = random.Random(3)
    pattern = [rnd.gauss(0, 0.2) for _ in range(6)]
    trend = [2.0 * math.exp(-i / 40) + 0.3 for i in range(120)]
    repeating = Series("loss", pts([t * math.exp(pattern[i % 6] + rnd.gauss(0, 0.03)) for i, t in enumerate(trend)]))
    shuffled = Series("loss", pts([t * math.exp(rnd.gauss(0, 0.2)) for t in trend]))
    hit = numeric.repeating_batches(repeating)
    assert [s.name for s in hit] == ["batch-order-repeats"] and hit[0].step == 6
    assert numeric.repeating_batches(shuffled) == []


# ---- the corpus and its held-out set stay what the bench measures ----


@pytest.mark.parametrize("root", [CORPUS, CORPUS / "heldout"], ids=["corpus", "heldout"])
def test_every_manifest_entry_has_its_log_and_no_log_is_unlabelled(root):
    manifest = json.loads((root / "manifest.json").read_text())
    listed = {m["file"] for m in manifest}
    on_disk = {p.name for p in (root / "logs").iterdir()}
    assert listed == on_disk
    assert any(m["cause"] is None for m in manifest)


def test_held_out_runs_use_seeds_the_corpus_never_used():
    held = json.loads((CORPUS / "heldout" / "manifest.json").read_text())
    used = {(m["cause"], m["seed"]) for m in MANIFEST}
    assert not {(m["cause"], m["seed"]) for m in held} & used
