"""`triage explain --baseline`: a failing run read beside a healthy run of the same program.

The logs are those the training programs under `programs/` printed (real CPU runs); each
program's healthy run with seed 0 is the baseline, as the base branch's last green run would be.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from triage.cli import main
from triage.explain import explain

PROGRAMS = Path(__file__).resolve().parent / "programs"
LOGS = PROGRAMS / "logs"
MANIFEST = json.loads((PROGRAMS / "manifest.json").read_text())
EVERY_PROGRAM = sorted({m["program"] for m in MANIFEST})


def baseline(program: str) -> Path:
    return LOGS / f"{program}__healthy__s0.log"


def against(name: str):
    return explain(LOGS / name, baseline=baseline(name.split("__")[0]))


def first(d) -> list[str]:
    return [c.id for c in d.causes][:1]


@pytest.mark.parametrize("program", EVERY_PROGRAM)
def test_a_healthy_run_beside_another_healthy_run_names_nothing(program):
    # another seed of the same program: within the seed-to-seed spread, no symptom, no cause
    d = explain(LOGS / f"{program}__healthy__s1.log", baseline=baseline(program))
    assert d.causes == () and d.status == "healthy"
    assert not {s.name for s in d.symptoms} & {"worse-than-baseline", "fewer-trainable-than-baseline"}


def test_a_loss_at_the_programs_own_large_scale_is_no_sum_beside_its_baseline(tmp_path):
    # face_arcface's ArcFace head at scale 64 starts its loss near 46 in every run. With the line of
    # its settings that names the margin softmax cut out, the start alone reads as a summed loss;
    # beside the healthy seed-0 run (cut the same way) it is the program's own scale, while a loss
    # summed over the batch starts 64 times higher
    def anonymous(name: str) -> Path:
        out = tmp_path / name
        lines = (LOGS / name).read_text().splitlines(keepends=True)
        out.write_text("".join(line for line in lines if "margin" not in line))
        return out

    reference = anonymous("face_arcface__healthy__s0.log")
    alone = explain(anonymous("face_arcface__healthy__s1.log"))
    assert "wrong-loss-reduction" in [c.id for c in alone.causes]
    d = explain(anonymous("face_arcface__healthy__s1.log"), baseline=reference)
    assert "loss-scale-as-baseline" in {s.name for s in d.symptoms} and d.causes == ()
    summed = explain(anonymous("face_arcface__wrong-loss-reduction__s2.log"), baseline=reference)
    assert "loss-scale-as-baseline" not in {s.name for s in summed.symptoms}
    assert "wrong-loss-reduction" in [c.id for c in summed.causes][:3]


@pytest.mark.parametrize(
    "name",
    [
        "vae_ignite__frozen-parameters__s2.log",  # trainable parameters: 17712 (26177)
        "asr_fairseq__frozen-parameters__s3.log",  # num. model params: 136,461 (num. trained: 1,677)
        "seq2seq_onmt__frozen-parameters__s2.log",  # Trainable parameters = {'torch.float32': 68608}
        "cls_ultralog__frozen-parameters__s3.log",  # 225,046 parameters, 34,822 gradients
    ],
)
def test_fewer_trained_parameters_than_the_baseline_is_a_frozen_part(name):
    # a partly frozen model's loss still falls: alone, the log names nothing
    assert explain(LOGS / name).causes == ()
    d = against(name)
    assert "fewer-trainable-than-baseline" in {s.name for s in d.symptoms}
    assert first(d) == ["frozen-parameters"]


def test_a_rate_a_hundred_times_the_baselines_is_too_high():
    # OpenNMT-style Noam schedule, its rate 100x: alone the flat perplexity reads as a missing step
    name = "seq2seq_onmt__lr-too-high__s2.log"
    assert first(explain(LOGS / name)) == ["missing-backward"]
    d = against(name)
    assert "lr-above-baseline" in {s.name for s in d.symptoms}
    assert first(d) == ["lr-too-high"]


def test_a_schedule_stepped_apart_from_the_baselines_is_misaligned():
    # fairseq-style inverse-sqrt schedule stepped per micro-batch: its rate decays ahead
    name = "asr_fairseq__scheduler-step-misaligned__s3.log"
    assert explain(LOGS / name).causes == ()
    d = against(name)
    assert "lr-schedule-off-baseline" in {s.name for s in d.symptoms}
    assert first(d) == ["scheduler-step-misaligned"]


def test_a_run_as_good_as_its_baseline_is_not_failed_by_it():
    # the 100x rate Adam absorbed (the recommender ends as well as its baseline): the higher rate
    # is read, but the run did not fail, so no cause is named
    d = against("ncf_deepspeed__lr-too-high__s3.log")
    assert d.causes == () and d.status == "healthy"


def test_a_loggers_clock_is_no_parameter_count():
    # `[2026-11-27 18:44:12,720 INFO] Trainable parameters = {...}`: the milliseconds are no count
    d = against("seq2seq_onmt__label-out-of-range__s2.log")
    assert "fewer-trainable-than-baseline" not in {s.name for s in d.symptoms}
    assert first(d) == ["label-out-of-range"]


def test_a_run_far_behind_its_baseline_with_no_cause_is_a_failure_not_explained():
    d = against("charlm_nanolog__no-shuffle__s2.log")
    assert "worse-than-baseline" in {s.name for s in d.symptoms}
    assert d.status in ("unexplained", "explained")
    assert explain(LOGS / "charlm_nanolog__no-shuffle__s2.log").status == "healthy"


def test_a_bad_baseline_is_a_one_line_error(tmp_path, capsys):
    log = str(LOGS / "vae_ignite__healthy__s1.log")
    assert main(["explain", log, "--baseline", str(tmp_path / "missing.log")]) == 2
    assert main(["explain", log, "--baseline", "-"]) == 2
    (tmp_path / "empty.log").write_text("")
    assert main(["explain", log, "--baseline", str(tmp_path / "empty.log")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 3


def test_a_count_in_short_form_is_read_and_compared():
    # SpeechBrain prints `12.9k trainable parameters in KWSBrain` (78.6k in its baseline)
    d = against("kws_speechbrain__frozen-parameters__s3.log")
    fewer = [s for s in d.symptoms if s.name == "fewer-trainable-than-baseline"]
    assert fewer and "12,900" in fewer[0].summary and "78,600" in fewer[0].summary
    assert "frozen-parameters" in [c.id for c in d.causes][:3]


@pytest.mark.parametrize("name", ["kws_speechbrain__missing-zero-grad__s2.log", "kws_speechbrain__no-shuffle__s2.log"])
def test_an_adaptive_schedule_that_follows_a_failing_loss_is_not_misaligned(name):
    # NewBob annealing halves the rate when validation stalls: in a run that fails for another
    # reason the rate drops earlier than the baseline's, after the loss fell behind, not before
    d = against(name)
    assert "lr-schedule-off-baseline" not in {s.name for s in d.symptoms}
    assert "scheduler-step-misaligned" not in [c.id for c in d.causes]
