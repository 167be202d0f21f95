"""Ties said as ties: where the log's evidence cannot rank two causes apart, triage names neither
first, in the terminal, the PR comment, JSON and the calibration table. The logs are real runs of
the calibration corpus (tests/triage/calibration/)."""

from __future__ import annotations

import json
from pathlib import Path

from triage_corpus import without_probe

from injector import calibrate
from triage import render, ties
from triage.explain import explain

CORPUS = Path(__file__).resolve().parent / "calibration"


def log_of(project: str, fault: str, test: str = "") -> Path:
    manifest = json.loads((CORPUS / project / "manifest.json").read_text())
    return next(
        CORPUS / project / e["log"]
        for e in manifest["entries"]
        if e["fault"] == fault and e["log"] and test in str(e.get("test"))
    )


def test_the_same_error_from_two_faults_is_said_as_a_tie(tmp_path) -> None:
    # a detached loss and a forward under no_grad fail backward() with the same RuntimeError: the
    # 0.3 between them is the table's prior (which the field shows more often), not evidence. A
    # smoke-training command's plain traceback quotes only the failing line of each frame. The
    # training probe's line (the forward passes ran with gradients on) is what tells them apart.
    log = log_of("smoke_cli", "detached-graph")
    probed = explain(log)
    assert probed.tied == () and probed.causes[0].id == "detached-graph"
    report = explain(without_probe(log, tmp_path))
    assert [c.id for c in report.tied] == ["no-grad-training", "detached-graph"]
    out = render.text(report)
    assert "No single answer: the log cannot tell no-grad-training from detached-graph" in out
    comment = render.markdown(report)
    assert "**No single answer: the log cannot tell `no-grad-training` from `detached-graph`.**" in comment
    assert "Most likely" not in comment
    assert json.loads(render.json_text(report))["tied"] == ["no-grad-training", "detached-graph"]


def test_a_pytest_guard_s_long_traceback_quotes_the_step_and_breaks_the_tie() -> None:
    # `--calibrate` runs pytest guards with long tracebacks: the training step's frame quotes its
    # `with torch.no_grad():` or its `.detach()` on the way to the failing backward(); the test's
    # own snapshot of the weights (`p.detach().clone()`) is no such evidence
    for fault in ("no-grad-training", "detached-graph"):
        for project in ("demo", "library_trainer", "heldout_sknet"):
            report = explain(log_of(project, fault))
            assert report.tied == () and report.causes[0].id == fault, (project, fault)


def test_a_loss_that_never_moved_ties_a_missing_backward_with_a_missing_step(tmp_path) -> None:
    # with no backward() or no optimizer.step() the parameters never change: the guard prints the
    # same thing for both, and nothing in the log weighs more for one; the training probe's line
    # (which of the two ran) names each
    for fault in ("missing-backward", "missing-optimizer-step"):
        log = log_of("shared_state", fault, "test_training_is_logged")
        probed = explain(log)
        assert probed.tied == () and probed.causes[0].id == fault
        report = explain(without_probe(log, tmp_path))
        assert {c.id for c in report.tied} == {"missing-backward", "missing-optimizer-step"}, fault


def test_a_cause_clear_of_the_rest_is_named_most_likely() -> None:
    report = explain(log_of("library_trainer", "missing-train-mode"))
    assert report.causes and report.tied == ()
    comment = render.markdown(report)
    assert f"**Most likely: `{report.causes[0].id}`**" in comment
    assert "No single answer" not in comment


def test_the_margin_is_the_weakest_weight_in_the_table() -> None:
    # the margin is read in the table's weight units: a cause one weakest hint (0.3) below ties,
    # anything a real symptom (0.5 or more) puts apart does not
    from triage import table

    weights = [w for rule in table.load().rules.values() for w in rule.supports.values() if w > 0]
    assert min(weights) == ties.TIE_MARGIN
    assert abs(ties.score_of(table.confidence(3.7)) - 3.7) < 1e-9


def test_a_tie_is_counted_apart_from_named_first() -> None:
    entry = calibrate.Entry(
        "m1", "detached-graph", "killed", "f.py", 1, "logs/m1.log", True,
        ("no-grad-training", "detached-graph"), ("no-grad-training", "detached-graph"), ("crashed",), True,
    )  # fmt: skip
    assert entry.verdict == calibrate.TIED
    winner = calibrate.Entry(
        "m2", "no-grad-training", "killed", "f.py", 2, "logs/m2.log", True,
        ("no-grad-training", "detached-graph"), ("no-grad-training", "detached-graph"), ("crashed",), True,
    )  # fmt: skip
    assert winner.verdict == calibrate.TIED  # named first in the order, but said as a tie
    row = calibrate.Calibration((entry, winner), "corpus").total()
    assert row.first_symptomatic == 0 and row.tied_symptomatic == 2
    assert any("tied first" in line for line in calibrate.table_lines(calibrate.Calibration((entry,), "c")))
