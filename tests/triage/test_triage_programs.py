"""Triage on five independent training programs (tests/triage/programs/), each fault really run.

The programs share no code: a CNN in a plain SGD loop, an MLP under the HF Trainer, a
transformer LM under accelerate, a GRU under Lightning, a GAN under torchrun with two gloo
ranks. Their logs are committed; `programs/generate.py` reruns them.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from triage.explain import explain

PROGRAMS = Path(__file__).resolve().parent / "programs"
ALL = json.loads((PROGRAMS / "manifest.json").read_text())
MANIFEST = [m for m in ALL if not m["fresh"]]
FRESH = [m for m in ALL if m["fresh"]]
# The log alone cannot tell these apart (one error message, or parameters that never move
# either way); the right cause must be among the first three.
TOP3 = {"detached-graph", "missing-backward"}
# Faults these programs' logs do not show in any way triage can read; nothing may be named
# with confidence instead. (Lightning clips the gradients of the 200x learning rate, so the
# loss only wanders; its no-shuffle run swings like a diverging one.)
NOT_VISIBLE = {"rnn_lightning__lr-too-high__s2.log": None, "rnn_lightning__no-shuffle__s2.log": 0.8}
# Pairs a log cannot tell apart where both show: gradients summed over steps and a step too
# large both make the loss climb to NaN (SGD with momentum). Both must be in the top three.
CONFUSABLE = {frozenset({"missing-zero-grad", "lr-too-high"})}
# A fresh program's runs that get a wrong cause, as measured (programs/README.md), kept visible:
# lstm_keras's missing zero_grad (RMSprop, one epoch-mean loss per epoch) overfits from the
# first evaluation on, as a model left in eval mode does.
# vae_ignite's 200x rate collapsed the decoder to a constant output within the first ten steps:
# from the first logged point on the loss is as flat as without a backward or a step, and is
# said as that tie.
# gcn_pyg logs one full-batch step per epoch and no validation loss: summed gradients make the
# loss swing and climb, which only the unshuffled loader's swings match. simclr_mmlog's summed
# gradients, a model left in eval mode and a log-softmax over the wrong axis each leave the
# contrastive loss flat from the first logged window, said as the missing backward/step tie.
# detect_d2's frozen backbone leaves the heads to fit alone, and their box loss blows up
# 5-100x as a rate too high does; its summed box loss stays large and wavers, read as a bad
# start (tied with an unshuffled loader's swings). seq2seq_onmt's 100x rate killed the network
# before the first print: its loss is as flat as without a backward or a step (the tie).
# finetune_fastai's summed loss (64 times the mean, falling by half over eight epochs) reads as
# the bad start its bad initialisation also shows. asr_fairseq's log-softmax over time leaves the
# loss stuck near 14 bits from the first print: read as a bad start.
KNOWN_WRONG = {
    "lstm_keras__missing-zero-grad__s3.log": "missing-train-mode",
    "vae_ignite__lr-too-high__s2.log": "missing-backward",
    "gcn_pyg__missing-zero-grad__s3.log": "no-shuffle",
    "detect_d2__frozen-parameters__s2.log": "lr-too-high",
    "detect_d2__wrong-loss-reduction__s3.log": "bad-init",
    "seq2seq_onmt__lr-too-high__s2.log": "missing-backward",
    # finetune_fastai's head drawn at std 10 gives a loss in the hundreds that falls about 2x over
    # the run while the accuracy climbs, as its summed loss does: read as the sum
    # (session 31: a rising accuracy says the run learns, so neither is called saturated)
    "finetune_fastai__bad-init__s3.log": "wrong-loss-reduction",
    "asr_fairseq__wrong-softmax-dim__s2.log": "bad-init",
    # ncf_deepspeed's BCE summed over the batch (141 at the start) falls by 2x, as its mean does in
    # a healthy run: read as a saturated bad start first, the summed loss second
    "ncf_deepspeed__wrong-loss-reduction__s2.log": "bad-init",
    # imgcls_timmlog's frozen body leaves its loss flat at ln 8 from the first print, as without a
    # backward or a step (said as their tie, frozen-parameters third)
    "imgcls_timmlog__frozen-parameters__s3.log": "missing-backward",
    # charlm_nanolog's cross-entropy summed over the batch's tokens (1,923 at the start) falls
    # 1.7x in a short run: read as a saturated bad start first, the summed loss second
    "charlm_nanolog__wrong-loss-reduction__s2.log": "bad-init",
    # kws_speechbrain (program 27, first measured in session 24): its frozen encoder's loss falls
    # slowly from ln 8, read as a second softmax's floor; its loss summed over the batch rises and
    # swings as a step too large does (the baseline names the frozen part second)
    "kws_speechbrain__frozen-parameters__s3.log": "double-softmax",
    "kws_speechbrain__wrong-loss-reduction__s2.log": "lr-too-high",
    # face_arcface (program 30, first measured in session 34): its double softmax holds the loss
    # flat at 5.3 from the first print, said as the missing backward/step tie. (Its ArcFace head at
    # scale 64 starts the loss near 46, which read as a summed loss on every run until session 38:
    # the log names the margin softmax, whose loss is bounded by 2s + ln C, test below.)
    "face_arcface__double-softmax__s3.log": "missing-backward",
}


@pytest.mark.parametrize(
    ("log", "cause"),
    [
        ("lstm_keras__lr-too-high__s2.log", "lr-too-high"),  # 33.4 (an epoch's mean) -> 1.6
        ("cnn_sgd__lr-too-high__s3.log", "lr-too-high"),  # 646 -> 2.4
        ("mlp_hf__wrong-loss-reduction__s2.log", "wrong-loss-reduction"),  # 50.7 -> 8.5: stays at its scale
        ("unet_table__wrong-loss-reduction__s2.log", "wrong-loss-reduction"),
    ],
)
def test_a_huge_first_loss_is_a_scale_only_where_the_run_stays_at_it(log, cause):
    # a loss far beyond any classifier's start that then falls tenfold and more to a
    # classifier's scale is a blow-up the run recovered from, not a loss summed over the batch
    assert [c.id for c in explain(PROGRAMS / "logs" / log).causes][:1] == [cause]


def test_a_margin_softmax_named_in_the_settings_bounds_its_loss_at_twice_its_scale(tmp_path):
    # an ArcFace head multiplies cosines by s = 64: its loss starts near 46 in a healthy run, which
    # no mean cross-entropy reaches but a scaled-cosine softmax does (its bound is 2s + ln C)
    healthy = PROGRAMS / "logs" / "face_arcface__healthy__s0.log"
    report = explain(healthy)
    assert report.causes == () and report.series["loss"].scaled_cosine
    # a loss summed over the batch starts far above that bound (3206), where no initialisation
    # can put a bounded loss: the sum is named, not a saturated start
    summed = explain(PROGRAMS / "logs" / "face_arcface__wrong-loss-reduction__s2.log")
    assert [c.id for c in summed.causes][:1] == ["wrong-loss-reduction"]
    # the settings are what tell: without the line naming the margins (a face dataset named in its
    # place), the same values read as huge
    anonymous = tmp_path / "run.log"
    lines = healthy.read_text().splitlines(keepends=True)
    anonymous.write_text("".join(x if "margin" not in x else "Training: dataset  image face crops\n" for x in lines))
    assert "loss-huge-initial" in {s.name for s in explain(anonymous).symptoms}


def test_a_loss_that_climbs_while_the_rate_warms_up_is_a_rate_too_high():
    # forecast_jsonl warms its rate up over the first epoch: with a 100x rate the loss rose
    # fourfold as the rate reached its peak, then came back down as the cosine decay set in;
    # its healthy runs warm up the same way and their loss falls
    bad = explain(PROGRAMS / "logs" / "forecast_jsonl__lr-too-high__s2.log")
    assert [c.id for c in bad.causes][:1] == ["lr-too-high"]
    assert any(s.name == "loss-rose-in-warmup" for s in bad.symptoms)
    for seed in (0, 1):
        healthy = explain(PROGRAMS / "logs" / f"forecast_jsonl__healthy__s{seed}.log")
        assert not any(s.name == "loss-rose-in-warmup" for s in healthy.symptoms)


def _symptoms(log: str) -> dict[str, str]:
    return {s.name: s.summary for s in explain(PROGRAMS / "logs" / log).symptoms}


def _series(log: str) -> dict:
    from triage.series import SeriesBuilder

    builder = SeriesBuilder()
    for number, line in enumerate((PROGRAMS / "logs" / log).read_text().splitlines(), 1):
        builder.add(line, number)
    return builder.build()


def test_an_epoch_summary_line_is_no_step_of_the_batch_series():
    # textcls_hydra logs `epoch 3 | iter 25/100 | loss 0.71` four times an epoch and `epoch 3
    # done: mean loss 0.70` once: the batch series holds the 60 stepped points only
    series = _series("textcls_hydra__healthy__s0.log")
    assert len(series["loss"].points) == 15 * 4
    assert len({p.step for p in series["loss"].points}) == 60


def test_the_rate_printed_in_a_config_dump_is_read_against_the_rates_logged():
    # the YAML config says `lr: 0.5`; a MultiStepLR stepped every batch sits at 0.02 from the
    # first logged step, a factor of 100 in the code starts it at 50
    below = _symptoms("textcls_hydra__scheduler-step-misaligned__s3.log")
    assert "lr-below-configured" in below and "25x lower" in below["lr-below-configured"]
    above = _symptoms("textcls_hydra__lr-too-high__s2.log")
    assert "lr-above-configured" in above and "100x higher" in above["lr-above-configured"]
    for seed in (0, 1):  # the healthy runs log the configured 0.5, then its planned decays
        healthy = _symptoms(f"textcls_hydra__healthy__s{seed}.log")
        assert not {"lr-below-configured", "lr-above-configured"} & set(healthy)


def test_a_run_that_ends_worse_than_it_started_is_told_from_an_unshuffled_one():
    # gradients summed over steps under plain SGD: both losses end above their start; an
    # unshuffled loader's batch loss rises too (its first class block was easy) but its
    # validation improves, and its ups and downs come back every epoch
    worse = _symptoms("textcls_hydra__missing-zero-grad__s3.log")
    assert "worse-than-start" in worse and "val-noisy" not in worse
    blocks = _symptoms("textcls_hydra__no-shuffle__s3.log")
    assert "worse-than-start" not in blocks and "val-noisy" not in blocks
    assert "batch-order-repeats" in blocks
    assert [c.id for c in explain(PROGRAMS / "logs" / "textcls_hydra__no-shuffle__s3.log").causes][:1] in (
        ["no-shuffle"],
        ["missing-set-epoch"],
    )


def test_label_smoothing_is_no_loss_that_stayed_high():
    # 85% right over five classes with label smoothing 0.1: a validation loss of 0.74 is what a
    # model that knows how often it is right scores; a second softmax over ten classes sits
    # far above that
    for seed in (0, 1):
        assert "accurate-but-loss-high" not in _symptoms(f"textcls_hydra__healthy__s{seed}.log")
    assert "accurate-but-loss-high" in {
        s.name for s in explain(PROGRAMS.parent / "corpus" / "logs" / "double-softmax__kv__s2.log").symptoms
    }


def test_an_elbo_in_the_hundreds_is_no_summed_loss():
    # vae_ignite's loss is a reconstruction summed over 256 pixels plus a KL term (printed
    # beside it): 160 at the start, 42 at the end of a healthy run; without a KL term (or an
    # accuracy) nothing says it is a classifier's loss, which could not start there
    for seed in (0, 1):
        report = explain(PROGRAMS / "logs" / f"vae_ignite__healthy__s{seed}.log")
        assert report.causes == ()
        assert not {s.name for s in report.symptoms} & {"loss-huge-initial", "loss-huge-and-stuck"}
    assert "kl" in _series("vae_ignite__healthy__s0.log")


def test_memory_read_once_per_epoch_is_not_placed_in_the_validation_pass():
    # RSS printed once per epoch, after validation: every gap between two readings holds a
    # training epoch and a validation pass, so the growth of the kept losses is only "growing"
    found = _symptoms("vae_ignite__loss-tensor-leak__s3.log")
    assert "memory-growing" in found and "memory-grows-at-eval" not in found
    assert [c.id for c in explain(PROGRAMS / "logs" / "vae_ignite__loss-tensor-leak__s3.log").causes][:1] == [
        "loss-tensor-leak"
    ]


def test_validation_under_a_rate_that_never_decayed_is_not_called_noisy():
    # Adam at a constant 2e-3 (the log prints it every epoch): the weights move between
    # evaluations, and summed gradients or a frozen decoder make validation wander with them
    for log in ("vae_ignite__missing-zero-grad__s3.log", "vae_ignite__frozen-parameters__s2.log"):
        assert "val-noisy" not in _symptoms(log)


def test_a_flat_loss_alone_is_said_as_a_tie_of_the_missing_backward_and_step():
    report = explain(PROGRAMS / "logs" / "vae_ignite__missing-optimizer-step__s3.log")
    assert {c.id for c in report.tied} >= {"missing-backward", "missing-optimizer-step"}


@pytest.mark.parametrize("program", ["textcls_hydra", "vit_print", "seq2seq_onmt", "ddpm_diffusers", "tab_skorch"])
def test_a_scheduler_that_moved_the_rate_without_pytorchs_warning_puts_the_missing_backward_first(program):
    # each uses a torch scheduler: deleting the step makes PyTorch warn on the scheduler's first
    # step, deleting the backward does not. The two stay said as a tie (a rate set by hand in the
    # param groups warns of nothing), in the order the warning's absence gives
    def log(fault: str) -> Path:
        return PROGRAMS / "logs" / next(m["file"] for m in ALL if m["program"] == program and m["cause"] == fault)

    backward = explain(log("missing-backward"))
    assert [c.id for c in backward.causes][:1] == ["missing-backward"]
    assert {c.id for c in backward.tied} >= {"missing-backward", "missing-optimizer-step"}
    assert "lr-moved-without-scheduler-warning" in {s.name for s in backward.symptoms}
    stepless = explain(log("missing-optimizer-step"))
    assert [c.id for c in stepless.causes][:1] == ["missing-optimizer-step"]
    assert "lr-moved-without-scheduler-warning" not in {s.name for s in stepless.symptoms}


def test_a_loss_that_shot_up_and_came_back_to_stay_is_a_rate_too_high():
    # fastai's fit_one_cycle at 100x: the validation loss went from 4.6 to 26.9 when the body was
    # unfrozen and then down to 0.83, under the 4.6 it had reached; detectron2's at 100x: the
    # total loss from 8.7 to 91 and back to 13. A summed loss that spikes and then diverges
    # (the corpus's wrong reduction) did not come back to stay, and no healthy run spikes
    for log in (
        "finetune_fastai__lr-too-high__s2.log",
        "detect_d2__lr-too-high__s2.log",
        # timm's format at 100x: validation from 1.28 to 58 and back to 1.45, wobbling on its way
        "imgcls_timmlog__lr-too-high__s3.log",
    ):
        assert "loss-spiked-and-recovered" in _symptoms(log)
        assert [c.id for c in explain(PROGRAMS / "logs" / log).causes][:1] == ["lr-too-high"]
    for m in ALL:
        if m["cause"] is None:
            assert "loss-spiked-and-recovered" not in _symptoms(m["file"]), m["file"]


def test_a_loss_that_fell_and_then_froze_names_no_missing_update():
    # mmengine's SimCLR, its loss 4.96 falling to 4.836 in ten steps and then holding there to the
    # third decimal (the embeddings collapsed to one vector: a missing zero_grad, a softmax over
    # the wrong axis, BN left in eval mode). Parameters that never update could not move it that
    # far outside its own noise: no missing backward or step is named, the run is a failure
    # nothing explains, and the symptom is shown
    for fault in ("missing-zero-grad", "wrong-softmax-dim", "missing-train-mode"):
        log = next(m["file"] for m in ALL if m["program"] == "simclr_mmlog" and m["cause"] == fault)
        report = explain(PROGRAMS / "logs" / log)
        assert "loss-fell-then-froze" in {s.name for s in report.symptoms}
        assert not {"missing-backward", "missing-optimizer-step", "detached-graph"} & {c.id for c in report.causes}
        assert report.status == "unexplained"
    # a run that never updated draws every loss from one distribution: its first value is one
    # more sample of the same noise, so the missing backward and step stay named
    stationary = [m for m in ALL if m["cause"] in ("missing-backward", "missing-optimizer-step")]
    assert len(stationary) >= 20
    for m in stationary:
        assert "loss-fell-then-froze" not in _symptoms(m["file"]), m["file"]
    for m in ALL:
        if m["cause"] is None:
            assert "loss-fell-then-froze" not in _symptoms(m["file"]), m["file"]


def test_a_ppo_policy_no_update_moved_is_said_as_the_tie_of_a_missing_backward_and_step():
    # Stable-Baselines3's boxed tables: a PPO loss says nothing of health, but approx_kl, the KL
    # between the policy before and after each update, is a divergence on one scale for every
    # task: about 1e-2 in a healthy update, under 1e-6 where no gradient reached the policy
    for fault in ("missing-backward", "missing-optimizer-step", "detached-graph"):
        log = next(m["file"] for m in ALL if m["program"] == "ppo_sb3" and m["cause"] == fault)
        report = explain(PROGRAMS / "logs" / log)
        assert "policy-unchanged" in {s.name for s in report.symptoms}
        assert fault in [c.id for c in report.causes][:3]
        assert {c.id for c in report.tied} >= {"missing-backward", "missing-optimizer-step"}
    for seed in (0, 1):
        assert "policy-unchanged" not in _symptoms(f"ppo_sb3__healthy__s{seed}.log")
    # a policy that converged late in the run (dropout off: its updates shrink to 1e-5) moved before
    assert "policy-unchanged" not in _symptoms("ppo_sb3__missing-train-mode__s2.log")


def test_deepspeeds_rate_list_is_read_on_its_own_step_counter():
    # DeepSpeed prints `step=100, skipped=0, lr=[0.00087], mom=[(0.9, 0.999)]` (one rate per
    # parameter group) every 100 optimizer steps, beside the script's own `epoch 1 step 200 loss`
    # lines, which count batches: two counters, each read on its own
    lr = explain(PROGRAMS / "logs" / "ncf_deepspeed__healthy__s0.log").series["lr"]
    assert len(lr.points) >= 8
    assert [p.step for p in lr.points][:4] == [0, 100, 200, 300]
    assert lr.points[1].value == pytest.approx(0.001)


def test_a_tensor_in_the_results_written_as_json_is_a_kept_loss(tmp_path):
    # a run that kept its running loss as a tensor: the closing results dump meets it; the
    # traceback quotes only json.dumps(results), no loss
    run = subprocess.run(
        [sys.executable, str(PROGRAMS / "results_json.py")], capture_output=True, text=True, timeout=120
    )
    assert run.returncode != 0
    log = tmp_path / "run.log"
    log.write_text(run.stdout + run.stderr)
    report = explain(log)
    assert "tensor-not-serializable" in {s.name for s in report.symptoms}
    assert [c.id for c in report.causes][:1] == ["loss-tensor-leak"]


@pytest.mark.parametrize(("where", "first"), [("validate", "missing-no-grad-eval"), ("train_step", "cuda-oom")])
def test_memory_that_runs_out_in_evaluation_is_a_missing_no_grad(tmp_path, where, first):
    # where the training steps fit and the evaluation's forward runs out, the evaluation built
    # graphs it never needed (fresh batch 5's a-PyTorch-Tutorial-to-Image-Captioning#57); out
    # of memory in a training step is plain out of memory
    run = subprocess.run(
        [sys.executable, str(PROGRAMS / "oom_at_eval.py"), where], capture_output=True, text=True, timeout=120
    )
    assert run.returncode != 0
    log = tmp_path / "run.log"
    log.write_text(run.stdout + run.stderr)
    report = explain(log)
    assert ("oom-in-evaluation" in {s.name for s in report.symptoms}) == (where == "validate")
    assert [c.id for c in report.causes][:1] == [first]
    if where == "train_step":
        # an out-of-memory with nothing else known: its two other common causes are named after
        # it, each just over the threshold, as candidates to rule out
        rest = {c.id: c.confidence for c in report.causes[1:]}
        assert set(rest) == {"loss-tensor-leak", "missing-no-grad-eval"}
        assert max(rest.values()) < 0.5 < report.causes[0].confidence


def _warmup_run(tmp_path: Path, peak: str) -> Path:
    run = subprocess.run(
        [sys.executable, str(PROGRAMS / "warmup_nan.py"), peak], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    log = tmp_path / f"peak{peak}.log"
    log.write_text(run.stdout)
    return log


def test_a_loss_that_turns_nan_while_the_rate_still_warms_up_is_a_rate_too_high(tmp_path):
    healthy = explain(_warmup_run(tmp_path, "0.1"))
    assert healthy.causes == ()
    full = _warmup_run(tmp_path, "8")
    report = explain(full)
    assert "non-finite-in-warmup" in {s.name for s in report.symptoms}
    assert [c.id for c in report.causes][:1] == ["lr-too-high"]
    # a report quotes the log in fragments (timm's: the first epoch steady near ln 1000, then
    # NaN three epochs later): without the climb in between, the NaN looks sudden, as a missing
    # epsilon's does; the rate still rising at the NaN, at many times its first, names the step
    lines = full.read_text().splitlines(keepends=True)
    cut = tmp_path / "cut.log"
    cut.write_text("".join(lines[:6]) + "\n" + "".join(x for x in lines if "nan" in x))
    report = explain(cut)
    assert "non-finite-sudden" in {s.name for s in report.symptoms}
    assert "loss-diverging" not in {s.name for s in report.symptoms}
    assert "non-finite-in-warmup" in {s.name for s in report.symptoms}
    assert [c.id for c in report.causes][:1] == ["lr-too-high"]


def test_a_loss_flat_to_its_last_digit_repeats_no_batch_order():
    # gcn_pyg's 100x rate killed the network into a uniform guess over 6 classes: 1.7918 at every
    # epoch, its wiggles the printed digits' rounding; an unshuffled loader's swing by 6-14%
    dead = _symptoms("gcn_pyg__lr-too-high__s2.log")
    assert "batch-order-repeats" not in dead and "loss-collapsed-to-log-c" in dead
    assert [c.id for c in explain(PROGRAMS / "logs" / "gcn_pyg__lr-too-high__s2.log").causes][:1] == ["lr-too-high"]
    assert "batch-order-repeats" in _symptoms("cnn_sgd__no-shuffle__s3.log")


def test_a_contrastive_loss_over_many_views_has_no_double_softmax_floor():
    # NT-Xent over 128 views starts at ln 127 and falls slowly: the floor a second softmax over
    # 128 classes would give sits one nat under that, where a healthy run passes; over five
    # classes (mlp_hf's second softmax) the floor stays a floor
    for seed in (0, 1):
        assert "double-softmax-floor" not in _symptoms(f"simclr_mmlog__healthy__s{seed}.log")
    assert "double-softmax-floor" in _symptoms("mlp_hf__double-softmax__s3.log")


def test_five_programs_cover_the_frameworks_and_optimizers():
    progs = {m["program"] for m in MANIFEST}
    assert progs == {"cnn_sgd", "mlp_hf", "lm_accelerate", "rnn_lightning", "gan_ddp"}
    sources = " ".join((PROGRAMS / f"{p}.py").read_text() for p in progs)
    for needle in (
        "torch.optim.SGD",
        "torch.optim.Adam",
        "from transformers import Trainer",
        "import lightning",
        "from accelerate import Accelerator",
        '"gloo"',
    ):
        assert needle in sources, needle
    for p in progs:
        assert sum(1 for m in MANIFEST if m["program"] == p and m["cause"] is None) >= 2


@pytest.mark.parametrize("entry", MANIFEST, ids=lambda m: m["file"])
def test_program_run(entry):
    report = explain(PROGRAMS / "logs" / entry["file"])
    ids = [c.id for c in report.causes]
    if entry["cause"] is None:
        assert ids == [], "a healthy run must name no cause"
    elif entry["file"] in NOT_VISIBLE:
        cap = NOT_VISIBLE[entry["file"]]
        assert not ids or ids[0] == entry["cause"] or (cap is not None and report.causes[0].confidence < cap)
    elif entry["cause"] in TOP3:
        assert entry["cause"] in ids[:3]
    else:
        assert ids[:1] == [entry["cause"]]


@pytest.mark.parametrize("entry", FRESH, ids=lambda m: m["file"])
def test_fresh_program_run_never_gets_a_wrong_cause(entry):
    # written after the rules froze (programs/README.md): where its log shows too little,
    # triage must stay silent rather than name another fault
    report = explain(PROGRAMS / "logs" / entry["file"])
    ids = [c.id for c in report.causes]
    if entry["file"] in KNOWN_WRONG and entry["cause"] is None:
        assert ids[:1] == [KNOWN_WRONG[entry["file"]]]  # a false alarm, measured and kept visible
    elif entry["cause"] is None:
        assert ids == []
    elif entry["cause"] in {c.id for c in report.tied}:
        pass  # said as a tie the log cannot break, the right cause among it
    elif entry["file"] in KNOWN_WRONG:
        assert ids[:1] == [KNOWN_WRONG[entry["file"]]]
    elif entry["cause"] in TOP3 or (ids and frozenset({ids[0], entry["cause"]}) in CONFUSABLE):
        assert ids == [] or entry["cause"] in ids[:3]  # silent, or among the causes it reads the same as
    else:
        assert ids[:1] in ([], [entry["cause"]])


def test_a_perplexity_is_read_as_the_loss_it_stands_for():
    # OpenNMT-py prints the training loss only as `xent` and `ppl`, and validation only as
    # `Validation perplexity: ...`: both are losses (ln of a perplexity)
    series = explain(PROGRAMS / "logs" / "seq2seq_onmt__healthy__s0.log").series
    assert len(series["loss"].points) >= 20 and len(series["val_loss"].points) >= 5
    text = (PROGRAMS / "logs" / "seq2seq_onmt__healthy__s0.log").read_text()
    first = next(line for line in text.splitlines() if "Validation perplexity:" in line)
    assert series["val_loss"].points[0].value == pytest.approx(math.log(float(first.rsplit(" ", 1)[1])))


def test_a_model_right_far_more_often_than_a_guess_did_not_collapse_to_one():
    # its loss fell from 3.5 to 0.66 (near ln 2) while its accuracy reached 99%: no dead network
    report = explain(PROGRAMS / "logs" / "seq2seq_onmt__missing-train-mode__s2.log")
    assert "loss-collapsed-to-log-c" not in {s.name for s in report.symptoms}


def test_detectron2s_memory_in_bare_megabytes_is_read():
    # `max_mem: 338M` growing a quarter over the run while the losses train normally: the leak
    leak = explain(PROGRAMS / "logs" / "detect_d2__loss-tensor-leak__s3.log")
    assert [c.id for c in leak.causes][:1] == ["loss-tensor-leak"]
    assert explain(PROGRAMS / "logs" / "detect_d2__healthy__s0.log").series["memory"].points


def _bar_separated_run(tmp_path, name: str, backward: bool = True, step: bool = True, schedule_steps: int = 1) -> Path:
    """A real run of a small next-token model printing as Megatron-LM does: one ` [date] iteration
    10/ 300 | ... | learning rate: ... | lm loss: ... | loss scale: 1.0 | grad norm: ... |` line
    every 10 iterations and a dashed `validation loss at iteration N | lm loss value: ... |` block
    every 100. The rate warms up over 30 iterations, then follows a cosine to a tenth of its
    peak at iteration 300; `schedule_steps` advances it that many times per iteration (stepped
    per micro-batch)."""
    import math
    from datetime import datetime

    import torch

    torch.manual_seed(0)
    vocab, peak, iterations = 32, 1e-3, 300
    model = torch.nn.Sequential(torch.nn.Embedding(vocab, 16), torch.nn.Linear(16, vocab))
    optimizer = torch.optim.AdamW(model.parameters(), lr=peak)
    following = (torch.arange(vocab) * 7 + 3) % vocab  # each token has one likely successor
    lines, scheduled = [], 0
    for iteration in range(1, iterations + 1):
        tokens = torch.randint(0, vocab, (16,))
        targets = torch.where(torch.rand(16) < 0.9, following[tokens], torch.randint(0, vocab, (16,)))
        loss = torch.nn.functional.cross_entropy(model(tokens), targets)
        optimizer.zero_grad()
        if backward:
            loss.backward()
        norm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0))
        if step:
            optimizer.step()
        scheduled += schedule_steps
        done = min(scheduled, iterations)
        rate = peak * done / 30 if done < 30 else peak * (0.1 + 0.45 * (1 + math.cos(math.pi * (done - 30) / 270)))
        for group in optimizer.param_groups:
            group["lr"] = rate
        if iteration % 10 == 0:
            when = datetime(2026, 11, 27, 10, 0, 0).strftime("%Y-%m-%d %H:%M:%S")
            lines.append(
                f" [{when}] iteration {iteration:8d}/{iterations:8d} | consumed samples: {16 * iteration:12d} | "
                f"learning rate: {rate:.6E} | global batch size: {16:5d} | lm loss: {loss.item():.6E} | "
                f"loss scale: 1.0 | grad norm: {norm:.3f} | number of skipped iterations: {0:3d} |"
            )
        if iteration % 100 == 0:
            lines += [
                "-" * 95,
                f"validation loss at iteration {iteration} | lm loss value: {loss.item():.6E} |",
                "-" * 95,
            ]
    log = tmp_path / f"{name}.log"
    log.write_text("\n".join(lines) + "\n")
    return log


def _series_of(log: Path) -> dict:
    from triage.series import SeriesBuilder

    builder = SeriesBuilder()
    for number, line in enumerate(log.read_text().splitlines(), 1):
        builder.add(line, number)
    return builder.build()


def test_fields_named_in_words_between_bars_are_read(tmp_path):
    # Megatron-LM's iteration line: `| learning rate: 3.000000E-04 | ... | lm loss: 5.9E+00 |
    # loss scale: 1.0 | grad norm: 1.268 |`; its validation block's `| lm loss value: ... |`
    log = _bar_separated_run(tmp_path, "healthy")
    series = _series_of(log)
    assert {"loss", "lr", "grad_norm", "loss_scale", "val_loss"} <= set(series)
    first = log.read_text().splitlines()[0]
    assert f"grad norm: {series['grad_norm'].points[0].value:.3f}" in first
    assert f"learning rate: {series['lr'].points[0].value:.6E}" in first


def test_a_flat_loss_beside_a_live_gradient_norm_is_a_missing_step_not_a_missing_backward(tmp_path):
    step = explain(_bar_separated_run(tmp_path, "no-step", step=False))
    assert [c.id for c in step.causes][:1] == ["missing-optimizer-step"] and not step.tied
    backward = explain(_bar_separated_run(tmp_path, "no-backward", backward=False))
    assert [c.id for c in backward.causes][:1] == ["missing-backward"]
    assert "loss-flat-with-gradients" not in {s.name for s in backward.symptoms}


def test_a_schedule_at_a_tenth_of_its_peak_for_most_of_the_run_hit_its_floor_early(tmp_path):
    # a cosine to a tenth of the peak stepped 4 times an iteration reaches its floor at iteration
    # 75 of 300; stepped once, only at the end
    early = explain(_bar_separated_run(tmp_path, "per-micro-batch", schedule_steps=4))
    assert "lr-floor-early" in {s.name for s in early.symptoms}
    assert "lr-floor-early" not in {s.name for s in explain(_bar_separated_run(tmp_path, "healthy")).symptoms}


def _pairwise_epochs(tmp_path, backward: bool, step: bool = True) -> Path:
    """A real run of a small pairwise (BPR) recommender, printing each epoch as RecBole does: the
    sum of the epoch's 29 batch losses (`epoch 3 training [time: 0.02s, train loss: 20.0943]`),
    about 20 at the start (ln 2 a batch)."""
    import time

    import torch

    torch.manual_seed(0)
    users, items = torch.nn.Embedding(60, 8), torch.nn.Embedding(80, 8)
    for table in (users, items):
        torch.nn.init.normal_(table.weight, std=0.01)
    optimizer = torch.optim.Adam([*users.parameters(), *items.parameters()], lr=0.01)
    taste = torch.randint(0, 4, (60,))
    lines = []
    for epoch in range(8):
        start, total = time.time(), 0.0
        for _ in range(29):
            u = torch.randint(0, 60, (32,))
            pos = taste[u] * 20 + torch.randint(0, 20, (32,))
            neg = torch.randint(0, 80, (32,))
            score = (users(u) * items(pos)).sum(-1) - (users(u) * items(neg)).sum(-1)
            loss = -torch.nn.functional.logsigmoid(score).mean()
            optimizer.zero_grad()
            if backward:
                loss.backward()
            if step:
                optimizer.step()
            total += loss.item()
        lines.append(f"epoch {epoch} training [time: {time.time() - start:.2f}s, train loss: {total:.4f}]")
    log = tmp_path / f"bpr_{backward}_{step}.log"
    log.write_text("\n".join(lines) + "\n")
    return log


def test_an_epoch_sum_of_batch_losses_says_nothing_by_its_size(tmp_path):
    # RecBole prints the sum of the epoch's batch losses: a loss that stays near 20 is neither a
    # bad start nor a summed reduction, and a flat one is the missing backward/step tie
    for log in (_pairwise_epochs(tmp_path, backward=True), _pairwise_epochs(tmp_path, backward=False)):
        report = explain(log)
        assert report.series["loss"].epoch_sum
        assert not {"loss-huge-initial", "loss-huge-and-stuck", "loss-huge-and-learning"} & {
            s.name for s in report.symptoms
        }
    flat = explain(_pairwise_epochs(tmp_path, backward=True, step=False))
    assert {c.id for c in flat.tied} >= {"missing-backward", "missing-optimizer-step"}
    assert not _series_of(_bar_separated_run(tmp_path, "healthy"))["loss"].epoch_sum


def test_a_run_the_kernel_killed_names_host_memory_causes(tmp_path):
    # the out-of-memory killer ends a process with SIGKILL: no Python error, only the shell's
    # `Killed` line after the last loss (here the run sends itself the same signal, under bash as
    # a CI step or a nohup script runs it)
    train = (
        "import os, signal\n"
        "for step in range(1, 4):\n"
        "    print(f'epoch 1 step {step} loss {2.3 - 0.1 * step:.4f}', flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    script = tmp_path / "train.py"
    script.write_text(train)
    run = subprocess.run(["bash", "-c", f"{sys.executable} {script}; true"], capture_output=True, text=True, timeout=60)
    log = tmp_path / "run.log"
    log.write_text(run.stdout + run.stderr)
    assert " Killed " in log.read_text()
    report = explain(log)
    assert "process-killed" in {s.name for s in report.symptoms}
    assert [c.id for c in report.causes][:2] == ["loss-tensor-leak", "cuda-oom"]
    assert report.causes[0].confidence < 0.6  # candidates to rule out, not a finding


def _run_script(tmp_path: Path, source: str) -> subprocess.CompletedProcess[str]:
    """Run a small training script written for a test, as its own Python process."""
    script = tmp_path / "train.py"
    script.write_text(source)
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)


def test_an_assertion_printing_a_tensor_of_nan_reads_as_a_reported_nan(tmp_path):
    # a box regressor trained at a rate far too high, then checked as SparseR-CNN's box ops check
    # their input (`assert (boxes[:, 2:] >= boxes[:, :2]).all(), boxes`): torch prints the boxes
    train = (
        "import torch\n"
        "torch.manual_seed(0)\n"
        "net = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))\n"
        "opt = torch.optim.SGD(net.parameters(), lr=50.0)\n"
        "x, y = torch.randn(16, 8), torch.rand(16, 4)\n"
        "for step in range(100):\n"
        "    out = net(x)\n"
        "    # corners from a centre and a positive size: valid boxes whenever they are finite\n"
        "    boxes = torch.cat([out[:, :2], out[:, :2] + torch.nn.functional.softplus(out[:, 2:])], dim=1)\n"
        "    assert (boxes[:, 2:] >= boxes[:, :2]).all(), boxes\n"
        "    loss = torch.nn.functional.l1_loss(boxes, y)\n"
        "    opt.zero_grad()\n"
        "    loss.backward()\n"
        "    opt.step()\n"
        "    print(f'iter {step} loss {loss.item():.4f}', flush=True)\n"
    )
    run = _run_script(tmp_path, train)
    log = tmp_path / "run.log"
    log.write_text(run.stdout + run.stderr)
    assert "AssertionError: tensor([[" in log.read_text()
    report = explain(log)
    assert "non-finite-tensor-error" in {s.name for s in report.symptoms}
    assert [c.id for c in report.causes][:1] == ["lr-too-high"]
    # the error line alone, as a report quotes it: the two common causes of a NaN, the rate first
    line = next(x for x in log.read_text().splitlines() if x.startswith("AssertionError: tensor(["))
    alone = tmp_path / "quoted.log"
    alone.write_text(line + "\n")
    assert [c.id for c in explain(alone).causes] == ["lr-too-high", "missing-epsilon"]


@pytest.mark.parametrize("mode", ["train", "eval"])
def test_an_accuracy_that_depends_on_the_test_batch_size_is_a_missing_eval_mode(tmp_path, mode):
    # nts-net-46's report ("bs8: 0.412", "bs128: 0.726", "bs256: 0.810"), from a real run: batch
    # norm left in training mode normalises each test batch by its own statistics
    run = subprocess.run(
        [sys.executable, str(PROGRAMS / "eval_batch_size.py"), mode], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    log = tmp_path / "run.log"
    log.write_text(run.stdout + run.stderr)
    report = explain(log)
    found = "batch-size-dependent-eval-reported" in {s.name for s in report.symptoms}
    assert found == (mode == "train")
    assert [c.id for c in report.causes][:1] == (["missing-eval-mode"] if mode == "train" else [])


def test_one_pasted_step_that_waits_nearly_all_of_it_for_data_is_a_loader_bottleneck(tmp_path):
    # vindlu-10 pasted one line of iteration 200 (`time: 40.1906  data: 38.0570`); here a real loop
    # whose dataset sleeps in __getitem__ prints such lines, and one of them is quoted alone
    train = (
        "import time, torch\n"
        "class Slow(torch.utils.data.Dataset):\n"
        "    def __len__(self): return 24\n"
        "    def __getitem__(self, i):\n"
        "        time.sleep(0.05)\n"
        "        return torch.randn(8), torch.randint(0, 2, ()).item()\n"
        "net = torch.nn.Linear(8, 2)\n"
        "opt = torch.optim.SGD(net.parameters(), lr=0.1)\n"
        "end = time.time()\n"
        "for it, (x, y) in enumerate(torch.utils.data.DataLoader(Slow(), batch_size=4)):\n"
        "    data = time.time() - end\n"
        "    loss = torch.nn.functional.cross_entropy(net(x), y)\n"
        "    opt.zero_grad(); loss.backward(); opt.step()\n"
        "    step = time.time() - end\n"
        "    end = time.time()\n"
        "    print(f'step {it}  loss: {loss.item():.4f}  time: {step:.4f}  data: {data:.4f}', flush=True)\n"
    )
    run = _run_script(tmp_path, train)
    assert run.returncode == 0, run.stderr
    line = next(x for x in run.stdout.splitlines() if x.startswith("step 4 "))
    quoted = tmp_path / "quoted.log"
    quoted.write_text(line + "\n")
    report = explain(quoted)
    assert "data-wait" in {s.name for s in report.symptoms}
    assert [c.id for c in report.causes][:1] == ["dataloader-bottleneck"]
    # the first step alone (the workers starting) says nothing
    first = tmp_path / "first.log"
    first.write_text(run.stdout.splitlines()[0] + "\n")
    assert "data-wait" not in {s.name for s in explain(first).symptoms}
