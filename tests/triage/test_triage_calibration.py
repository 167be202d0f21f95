"""Triage on the failing runs of real mutants: the calibration corpus (tests/triage/calibration/).

Each folder there is what `injector run --calibrate` wrote for one project (the manifest labels
each log with the fault the injector put in; `python bench/calibration.py --keep DIR` writes them
again). Each kind of evidence triage reads from a guard's failure has a test on such a log: the
c10d error for a None gradient, PyTorch's scheduler-order warning next to parameters that did
not move, and what a failing assertion or a smoke check says about the loss, the parameters, the
gradients, the probabilities and the training mode.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from injector import calibrate
from triage.detectors import assertions
from triage.explain import explain

ROOT = Path(__file__).resolve().parents[2]
CORPUS = Path(__file__).resolve().parent / "calibration"
PROGRAMS = CORPUS / "programs"


def logs_of(project: str, fault: str) -> list[Path]:
    """The logs of `project`'s caught mutants of `fault`, from its manifest."""
    manifest = json.loads((CORPUS / project / "manifest.json").read_text())
    return [
        CORPUS / project / e["log"]
        for e in manifest["entries"]
        if e["fault"] == fault and e["log"] and e["status"] in calibrate.CAUGHT
    ]


def named(path: Path) -> list[str]:
    return [cause.id for cause in explain(path).causes]


def symptoms(path: Path) -> set[str]:
    return {s.name for s in explain(path).symptoms}


def only(project: str, fault: str) -> Path:
    found = logs_of(project, fault)
    assert found, f"no caught {fault} mutant in {project}'s corpus"
    return found[0]


# ---- a gradient that is None where the code uses it ----


def test_c10d_refusing_a_none_gradient_names_missing_backward():
    # two gloo ranks average gradients by hand with no backward before (a plain traceback), and
    # the same under pytest in a spawned-ranks fixture project (`E   ` lines, a campaign's log)
    for log in (PROGRAMS / "logs" / "none_grad_allreduce.log", only("spawn_ddp", "missing-backward")):
        assert {"collective-got-none", "grad-none"} <= symptoms(log)
        assert named(log)[0] == "missing-backward"


def test_a_scaler_unscaling_what_no_scaled_backward_made_names_the_scaler_then_the_backward():
    # GradScaler's own assertion: the step's backward did not go through scaler.scale(loss);
    # a bare loss.backward() is the likelier fault, a backward dropped altogether the other
    log = PROGRAMS / "logs" / "unscale_without_scale.log"
    assert "unscale-without-scale" in symptoms(log)
    assert named(log)[:2] == ["missing-grad-scaler", "missing-backward"]


def test_a_none_gradient_in_an_older_spelling_is_read_from_the_quoted_line(tmp_path):
    # pytorch/pytorch#47167 (https://github.com/pytorch/pytorch/issues/47167): the traceback
    # as posted; there the parameter took no part in the loss, so no backward reached it
    log = tmp_path / "issue-47167.log"
    log.write_text(
        'File "/Vincent2/siamese_rpn++/pysot/utils/distributed.py", line 135, in reduce_gradients\n'
        "    dist.all_reduce(param.grad.data)\n"
        "AttributeError: 'NoneType' object has no attribute 'data'\n"
    )
    assert "grad-none" in symptoms(log)
    assert named(log)[:2] == ["missing-backward", "frozen-parameters"]


# ---- PyTorch's "lr_scheduler.step() before optimizer.step()" warning ----


def test_the_scheduler_warning_with_parameters_that_never_moved_names_missing_optimizer_step():
    # the demo's guard lists every parameter as unchanged; the smoke script's loss stays flat
    for log in (only("demo", "missing-optimizer-step"), only("smoke_cli", "missing-optimizer-step")):
        assert "scheduler-before-optimizer" in symptoms(log)
        ids = named(log)
        assert ids[0] == "missing-optimizer-step"
        assert "scheduler-step-misaligned" not in ids[:1]


# ---- what a failing assertion says about the loss ----


def test_a_loss_the_test_found_unchanged_names_both_causes_of_no_update():
    # `assert 5.0 < 5.0` under `assert history[-1] < history[0]`: the same log for both faults
    for fault in ("missing-backward", "missing-optimizer-step"):
        log = only("campaign_project", fault)
        assert "loss-unchanged" in symptoms(log)
        assert set(named(log)[:2]) == {"missing-backward", "missing-optimizer-step"}


def test_a_loss_that_blew_up_or_became_nan_names_lr_too_high():
    for log in (only("campaign_project", "lr-too-high"), only("fork_ddp", "lr-too-high")):
        assert "loss-exploded" in symptoms(log)
        assert named(log)[0] == "lr-too-high"
    # `assert nan < 0.01`: a reduction summed over the batch blows up the same way
    for log in logs_of("shared_state", "wrong-loss-reduction"):
        assert "loss-exploded" in symptoms(log)
        assert "wrong-loss-reduction" in named(log)[:3]


def test_a_last_loss_against_a_fixed_bar_is_no_symptom():
    # `assert 2.206 < 0.05`: training fell short, as it does for every fault
    log = only("demo", "lr-too-high")
    assert not symptoms(log) & {"loss-exploded", "loss-rose", "loss-unchanged", "loss-barely-moved"}
    assert not calibrate.shows_behaviour(log.read_text())


def test_a_score_that_rose_is_no_loss_that_rose():
    # `assert after > before + 3.0` on a signal-to-noise ratio (higher is better): found by the
    # held-out project's first measurement, where it was read as a loss that rose
    log = only("heldout_denoise", "scheduler-step-misaligned")
    assert "assert after > before + 3.0" in log.read_text()
    assert "loss-rose" not in symptoms(log)
    # the names alone count where the lines that set them read a loss (fitkit's window means)
    lines = only("library_trainer", "double-softmax").read_text().splitlines()
    failing = next(i for i, line in enumerate(lines) if line.startswith(">       assert last < 0.5 * first"))
    code, rewrite = lines[failing][1:].strip(), lines[failing + 1][1:].strip()
    assert assertions._compared_losses(code, rewrite, lines[:failing]) == pytest.approx((1.1054670, 0.7459572))
    assert assertions._compared_losses(code, rewrite, []) is None


# ---- parameters, gradients, probabilities, modes ----


def test_parameters_a_guard_reports_unchanged():
    # the demo's test lists them (`assert not ['embed.weight', ...]`); fitkit's says so in words
    for log in (only("demo", "missing-backward"), only("library_trainer", "missing-backward")):
        assert "params-unchanged" in symptoms(log)
        assert named(log)[0] == "missing-backward"


def test_gradients_still_set_where_the_test_expected_them_cleared_name_missing_zero_grad():
    log = only("demo", "missing-zero-grad")
    assert "grads-not-cleared" in symptoms(log)
    assert named(log)[0] == "missing-zero-grad"


def test_probabilities_that_do_not_sum_to_one_name_the_softmax_axis():
    # an assert_close on `probs.sum(dim=-1)` in pytest, a smoke script's own words
    for log in (only("demo", "wrong-softmax-dim"), only("command_guard", "wrong-softmax-dim")):
        assert "probs-not-normalised" in symptoms(log)
        assert named(log)[0] == "wrong-softmax-dim"


def test_a_model_asserted_in_the_wrong_mode():
    still = only("campaign_project", "missing-eval-mode")  # `assert model.training is False`
    assert "model-still-training" in symptoms(still) and named(still)[0] == "missing-eval-mode"
    left = only("library_trainer", "missing-train-mode")  # `assert trainer.model.training`
    assert "model-not-training" in symptoms(left) and named(left)[0] == "missing-train-mode"


def test_one_evaluation_repeated_with_two_answers_names_missing_eval_mode():
    # `first = evaluate(...)`, `second = evaluate(...)`, `assert first == second`; and inline
    for log in (only("demo", "missing-eval-mode"), only("library_trainer", "missing-eval-mode")):
        assert "repeat-differs" in symptoms(log)
        assert named(log)[0] == "missing-eval-mode"


def test_nan_in_a_computed_tensor_names_missing_epsilon():
    log = only("demo", "missing-epsilon")  # a layer norm fed zeros, `assert torch.isfinite(out).all()`
    assert "output-non-finite" in symptoms(log)
    assert named(log)[0] == "missing-epsilon"


def test_no_grad_and_detach_stay_both_in_the_top_three_when_the_log_cannot_tell():
    # the traceback quotes only the failing backward() line: the error is the same for both
    for project in ("demo", "library_trainer", "smoke_cli"):
        for fault in ("no-grad-training", "detached-graph"):
            for log in logs_of(project, fault):
                assert {"no-grad-training", "detached-graph"} <= set(named(log)[:3])


def test_a_smoke_check_that_passed_names_nothing():
    log = PROGRAMS / "logs" / "smoke_cli_passed.log"  # `python train.py --smoke` on the clean code
    assert "smoke check passed: loss" in log.read_text()
    assert named(log) == []


# ---- the rule for "shows a training symptom", and the bench ----


@pytest.mark.parametrize(
    ("project", "fault", "shows"),
    [
        ("campaign_project", "missing-backward", True),  # `assert 5.0 < 5.0`: two losses compared
        ("command_guard", "double-softmax", True),  # "loss did not drop enough: 1.415 -> 1.123"
        ("campaign_project", "missing-eval-mode", True),  # `assert model.training is False`
        ("demo", "double-softmax", False),  # `assert 0.777 < 0.05`: the last loss against a bar
    ],
)
def test_a_guard_verdict_shows_a_training_symptom_when_it_shows_behaviour(project, fault, shows):
    assert calibrate.shows_behaviour(only(project, fault).read_text()) is shows


def test_the_bench_rescores_the_kept_corpora_by_split():
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "calibration.py"),
            "--corpus",
            str(CORPUS),
            "--projects",
            "demo,heldout_denoise",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "== tuned projects pooled: demo" in done.stdout
    assert "== held-out projects pooled: heldout_denoise" in done.stdout
    assert "tuned: named first " in done.stdout and "in the top 3 " in done.stdout
    assert "(the rule: a log shows a training symptom" in done.stdout


def test_a_kill_signal_named_in_quoted_source_is_not_a_cancelled_job():
    # pytest quotes torch/multiprocessing/spawn.py, whose comments and log calls name SIGKILL
    # and SIGTERM; torch's own "Terminating process N via signal SIGTERM" (a sibling rank
    # failed) is not a job stopped from outside either.
    log = CORPUS / "spawn_ddp" / "logs" / "f5477cbb886d.log"
    text = log.read_text()
    assert "# Try SIGKILL" in text and "Terminating process" in text
    assert "job-cancelled" not in symptoms(log)


def test_a_loss_falling_slowly_but_steadily_is_not_a_plateau():
    # smoke_cli's double-softmax run: 3.335 -> 3.195 over 60 steps, falling at every stretch;
    # the optimizer stepped, so "the loss is flat" (missing-optimizer-step's evidence) is wrong.
    log = only("smoke_cli", "double-softmax")
    assert "loss-flat" not in symptoms(log)
    assert "missing-optimizer-step" not in named(log)[:1]


# ---- a loss that learns slowly from a uniform guess; a huge first loss; a kept loss ----


def _slow_learner_runs() -> list[tuple[str, str]]:
    """(variant, verdict line) for each run of programs/slow_learners.py, from its log."""
    runs = []
    for line in (PROGRAMS / "logs" / "slow_learners.log").read_text().splitlines():
        m = re.match(r"^\[\d+ classes, ([^,]+), seed \d+, ln C = [\d.]+\] (loss .*)$", line)
        if m:
            runs.append((m.group(1), m.group(2)))
    return runs


def test_a_loss_that_fell_short_from_exactly_ln_c_names_the_second_softmax(tmp_path):
    # 48 real runs: a second softmax starts on ln(C) to a tenth of the spacing and falls slowly;
    # a frozen layer or a small step fall as slowly from wherever the initial outputs sit
    runs = _slow_learner_runs()
    assert len(runs) == 48
    first: dict[str, list[str | None]] = {}
    for i, (variant, verdict) in enumerate(runs):
        log = tmp_path / f"run{i}.log"
        log.write_text(f"smoke check failed: {verdict}\n" if "did not" in verdict else f"{verdict}\n")
        ids = named(log)
        first.setdefault(variant, []).append(ids[0] if ids else None)
    assert first["second softmax"] == ["double-softmax"] * 12
    assert first["as written"] == [None] * 12  # every healthy run met the bar: nothing to explain
    others = first["first layer frozen"] + first["lr 30x smaller"]
    # 10 of 24 also start near some ln(k) (all of C = 3, whose spacing is wide; at C = 28 the
    # ln(k) lie close): evidence of about 2.4 to 1, not proof
    assert others.count("double-softmax") <= 10
    # the fixture projects' double-softmax mutants: a smoke verdict, a pytest assertion, a
    # smoke script whose loss fell 4% (also "barely moved": no backward or step would do that)
    for project in ("command_guard", "library_trainer", "smoke_cli"):
        log = only(project, "double-softmax")
        assert "loss-slow-from-uniform" in symptoms(log)
        assert named(log)[0] == "double-softmax"


def test_a_loss_that_fell_short_from_elsewhere_is_not_a_second_softmax():
    # nested_factory's missing-zero-grad: `assert 1.87 < (3.52 / 4)` on a regression (MSE)
    log = only("nested_factory", "missing-zero-grad")
    assert "loss-slow-from-uniform" not in symptoms(log)
    assert "double-softmax" not in named(log)


def test_a_first_loss_far_above_a_classifiers_names_the_summed_reduction():
    # `assert nan < 598.37` under `assert losses[-1] < losses[0]`: a loss summed over the batch
    # starts hundreds of times above a mean one; a NaN alone (`assert nan < 0.01`) does not say
    summed = CORPUS / "shared_state" / "logs" / "1691f0e08e22.log"
    assert "loss-huge-initial" in symptoms(summed)
    assert named(summed)[0] == "wrong-loss-reduction"
    for log in logs_of("shared_state", "lr-too-high"):
        assert "loss-huge-initial" not in symptoms(log)
        assert named(log)[0] == "lr-too-high"


def test_loss_values_that_are_no_numbers_name_the_kept_loss_tensor():
    # torch tensors kept in a history fail where plain Python meets them: statistics.mean under
    # pytest, json.dumps in a script; the fixture project's own loss objects do not compare
    for log in (
        PROGRAMS / "logs" / "kept_loss_pytest.log",
        PROGRAMS / "logs" / "kept_loss_script.log",
        only("campaign_project", "loss-tensor-leak"),
    ):
        assert "loss-not-a-number" in symptoms(log)
        assert named(log)[0] == "loss-tensor-leak"
