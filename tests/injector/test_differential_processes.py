"""Campaign verdicts against the naive truth on a test that runs `python train.py`, a
smoke-training command guard run as `python -m`, tests that share module-level state, a step
function built by a factory, and a source file that is a symlink (see differential_truth.py)."""

from __future__ import annotations

import json

import pytest
from differential_truth import campaign, check_case, lay_out, stale_records

from injector.cli import main


@pytest.mark.parametrize(
    ("case", "jobs"),
    [
        ("subprocess_script", 2),
        ("command_guard", 2),  # one worker: test_where_a_gpu_may_be_used_... below
        ("shared_state", 1),
        ("shared_state", 2),
        ("nested_factory", 1),
        ("nested_factory", 2),
        ("symlinked", 2),
    ],
)
def test_every_outcome_equals_applying_the_mutant_by_hand(case, jobs, tmp_path, capsys):
    check_case(case, jobs, tmp_path, capsys)


def test_tests_imported_afresh_for_every_mutant_give_the_same_outcomes(tmp_path, capsys):
    """`--fresh`: every run collects the tests in its own child, as a worker whose tests start
    CUDA when imported must (tests/injector/test_differential_cuda.py checks that on a GPU); on
    tests that share module-level state, where a run that imports them afresh differs most."""
    report = check_case("shared_state", 2, tmp_path, capsys, "--fresh")
    assert report["baseline"]["cold"].startswith("--fresh")


def test_a_worker_whose_collection_started_cuda_starts_over_cold(tmp_path):
    """Without a GPU, a conftest stands in for tests that put a tensor on the GPU at import (the
    real thing runs in test_differential_cuda.py): the worker must not fork runs from a process
    that started CUDA, so it starts over and every child collects the tests itself."""
    _, warm, _ = campaign("nested_factory", tmp_path / "warm")
    project, _ = lay_out("nested_factory", tmp_path / "cold")
    (project / "conftest.py").write_text("import torch\n\ntorch.cuda.is_initialized = lambda: True\n")
    report_path, markdown = tmp_path / "cold.json", tmp_path / "cold.md"
    assert main(["run", str(project), "--no-cache", "--json", str(report_path), "--markdown", str(markdown)]) == 0
    cold = json.loads(report_path.read_text())
    assert "starts CUDA" in cold["baseline"]["cold"] and "starts CUDA" in markdown.read_text()
    verdicts = {(o["line"], o["operator"]): o["status"] for o in warm["outcomes"]}
    assert {(o["line"], o["operator"]): o["status"] for o in cold["outcomes"]} == verdicts


def test_where_a_gpu_may_be_used_library_imports_are_tried_in_a_child_first(tmp_path, capsys, monkeypatch):
    """With a GPU, a library that starts CUDA when imported must not be imported where runs are
    forked from: the worker imports the guard script's libraries in a child first and checks.
    On this CPU nothing starts CUDA, so the libraries are imported and the verdicts stand."""
    monkeypatch.setattr("injector.campaign.gpu_count", lambda: 1)
    report = check_case("command_guard", 1, tmp_path, capsys)
    assert report["device"] == "cuda (1 GPU)" and not report["baseline"]["cold"]


def test_tests_that_share_state_are_judged_as_the_guard_runs_them(tmp_path):
    """shared_state: a fast test relies on a file a slower, earlier test writes; another test
    only reads what the training code left in a module-level list."""
    project, report, markdown = campaign("shared_state", tmp_path)
    assert "kills re-judged in collection order" in markdown
    session = [o for o in report["outcomes"] if o["file"] == "trainer/session.py"]
    assert session and all(o["status"] == "killed" and "collection order" in o["note"] for o in session)
    [zero_grad] = [
        o for o in report["outcomes"] if o["file"] == "trainer/history.py" and o["operator"] == "missing-zero-grad"
    ]
    assert zero_grad["status"] == "killed"
    assert zero_grad["test"] == "tests/test_history.py::test_the_logged_run_converged"
    assert not (project / "session.json").exists()


def test_code_no_test_runs_is_no_coverage_even_inside_a_covered_function(tmp_path):
    """nested_factory: the AMP branch and the clipping line never run on CPU; the step
    built at import (a closure made before any mutant) still runs each mutant."""
    project, report, _ = campaign("nested_factory", tmp_path)
    source = (project / "trainer" / "steps.py").read_text().splitlines()
    by_status: dict[str, set[str]] = {}
    for outcome in report["outcomes"]:
        by_status.setdefault(outcome["status"], set()).add(source[outcome["line"] - 1].strip())
    assert {
        "scaler.scale(loss).backward()",
        "scaler.step(optimizer)",
        "torch.nn.utils.clip_grad_norm_(model.parameters(), clip)",
    } <= by_status["no_coverage"]
    assert {"optimizer.zero_grad()", "loss.backward()", "optimizer.step()"} <= by_status["killed"]


def test_the_recorded_naive_truth_is_current():
    """The by-hand verdicts recorded for the fixtures (differential_truth.py) are only used while
    their key is that of what would run now; a fixture, an operator or torch that changed makes
    the differential tests run them all afresh, slower but right, and this test says so."""
    stale = stale_records()
    assert not stale, (
        f"the naive truth recorded for {', '.join(stale)} is out of date: "
        f"python tests/injector/differential_truth.py --record {' '.join(stale)}"
    )
