"""Issue 13 round 4: kinds heldout_sknet exposed, each read from a real run's log."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from triage_corpus import without_probe

from triage.explain import explain

CORPUS = Path(__file__).resolve().parent / "calibration"
PROGRAMS = CORPUS / "programs"


def test_torch_equal_of_one_call_made_twice_is_a_repeat_that_differs() -> None:
    # heldout_sknet's missing-eval-mode: `assert torch.equal(net.predict_proba(X), ...(X))` with
    # pytest's `assert False` and the two answers: nothing was named before round 4
    report = explain(CORPUS / "heldout_sknet" / "logs" / "504c0d4c2db5.log")
    assert "repeat-differs" in {s.name for s in report.symptoms}
    assert report.causes[0].id == "missing-eval-mode"


def test_every_spelling_of_equal_reads_as_a_repeat(tmp_path: Path) -> None:
    # dropout left on, one prediction asked twice, compared by torch.allclose, torch.equal of two
    # names assigned from the same call, `(a == b).all()` and `torch.all(a == b)`: run for real
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(PROGRAMS / "repeated_calls.py")],
        capture_output=True, text=True, cwd=tmp_path, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )  # fmt: skip
    assert done.returncode == 1, done.stdout[-2000:]
    sections = re.split(r"(?m)^_{3,} (test_\w+) _{3,}$", done.stdout)
    failures = dict(zip(sections[1::2], sections[2::2], strict=True))
    assert set(failures) == {"test_allclose", "test_equal_of_two_names", "test_all_equal", "test_torch_all"}
    for name, text in failures.items():
        log = tmp_path / f"{name}.log"
        log.write_text(text)
        report = explain(log)
        assert "repeat-differs" in {s.name for s in report.symptoms}, name
        assert report.causes[0].id == "missing-eval-mode", name


def test_a_loss_that_went_under_the_softmax_floor_never_had_one() -> None:
    # heldout_sknet's missing-zero-grad (C=2): 0.62 -> 0.18 at epoch 5, then drifting back to 0.33,
    # which is where a double softmax's floor ln(e+1)-1 = 0.31 lies; but cross-entropy over
    # softmax outputs cannot go under that bound at any C, and this loss did
    report = explain(CORPUS / "heldout_sknet" / "logs" / "9c1ac081cee1.log")
    assert "double-softmax-floor" not in {s.name for s in report.symptoms}
    assert "double-softmax" not in [c.id for c in report.causes]


def test_a_per_step_list_pytest_printed_is_read_as_a_series(tmp_path) -> None:
    # shared_state's missing-zero-grad: `assert ([[4.67, 3.15, 1.15, 0.04, 0.58, 2.38, ...]] and
    # 4.57 < 0.001)`: a loss that learnt, then climbed back; summed gradients and a rate too high
    # both do that, and the log alone cannot tell which: said as a tie of the two. The training
    # probe's line (steps on gradients kept from the step before) names the missing zero_grad.
    log = CORPUS / "shared_state" / "logs" / "7ae3e0e4df27.log"
    bare = explain(without_probe(log, tmp_path))
    assert "loss-rose" in {s.name for s in bare.symptoms}
    assert {c.id for c in bare.tied} == {"missing-zero-grad", "lr-too-high"}
    probed = explain(log)
    assert probed.tied == () and probed.causes[0].id == "missing-zero-grad"


def test_a_printed_list_that_only_fell_is_not_a_rise() -> None:
    # a healthy-looking series in a failing bar check: heldout_sknet's missing-eval-mode log has
    # no printed list; the rule needs a low, then a climb back above half the start
    report = explain(CORPUS / "heldout_sknet" / "logs" / "504c0d4c2db5.log")
    assert "loss-rose" not in {s.name for s in report.symptoms}
