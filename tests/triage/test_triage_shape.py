"""Scale-free loss-shape symptoms and the signatures of other versions, on logs of real runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from triage import detectors, reader
from triage.series import SeriesBuilder

HERE = Path(__file__).resolve().parent
PROGRAM_LOGS = HERE / "programs" / "logs"
WORLD = HERE / "world" / "excerpts"


def symptoms(path: Path) -> dict[str, object]:
    scan = reader.scan(path)
    b = SeriesBuilder()
    for r in scan.readings:
        b.add(r.text, r.line, r.rank)
    return {s.name: s for s in detectors.detect(detectors.Context(scan.events, b.build(), scan.readings))}


# a run with a known fault -> the symptom its loss, gradient norm or printout must show
CASES = [
    (PROGRAM_LOGS / "mlp_hf__lr-too-high__s2.log", "loss-collapsed-to-log-c"),
    (PROGRAM_LOGS / "cnn_sgd__lr-too-high__s3.log", "loss-collapsed-to-log-c"),
    (PROGRAM_LOGS / "cnn_sgd__missing-zero-grad__s2.log", "loss-gradual-climb"),
    (PROGRAM_LOGS / "lm_accelerate__lr-too-high__s3.log", "loss-fast-climb"),
    (PROGRAM_LOGS / "cnn_sgd__missing-backward__s2.log", "val-loss-constant"),
    (PROGRAM_LOGS / "cnn_sgd__missing-optimizer-step__s3.log", "val-loss-constant"),
    (PROGRAM_LOGS / "mlp_hf__missing-epsilon__s3.log", "grad-norm-non-finite"),
    (PROGRAM_LOGS / "mlp_hf__wrong-loss-reduction__s2.log", "loss-huge-and-learning"),
    (PROGRAM_LOGS / "mlp_hf__bad-init__s2.log", "loss-huge-and-stuck"),
    (PROGRAM_LOGS / "cnn_sgd__no-shuffle__s3.log", "batch-order-repeats"),
    (PROGRAM_LOGS / "cnn_sgd__loss-tensor-leak__s2.log", "memory-growing"),
    (PROGRAM_LOGS / "cnn_sgd__frozen-parameters__s2.log", "few-trainable-parameters"),  # "6 trainable"
    (PROGRAM_LOGS / "rnn_lightning__frozen-parameters__s3.log", "few-trainable-parameters"),  # "21.5 K"
    (PROGRAM_LOGS / "mlp_hf__frozen-parameters__s3.log", "few-trainable-parameters"),  # PEFT's line
    (PROGRAM_LOGS / "cnn_sgd__dtype-mismatch__s2.log", "dtype-mismatch"),
    (PROGRAM_LOGS / "lm_accelerate__graph-break__s3.log", "recompiling"),
    (PROGRAM_LOGS / "rnn_lightning__dataloader-bottleneck__s3.log", "dataloader-timeout"),  # worker stalled
    (PROGRAM_LOGS / "finetune_fresh__scheduler-step-misaligned__s3.log", "lr-floor-early"),  # decays to 0
    (PROGRAM_LOGS / "finetune_fresh__wrong-loss-reduction__s3.log", "train-loss-far-above-val"),
    (WORLD / "gemma-pytorch-24.log", "non-finite-intermittent"),  # HF dict log, NaN between finite
    (WORLD / "sequence-tagging-47.log", "non-finite-after-unstable"),
    (WORLD / "aihwkit-446.log", "loss-gradual-climb"),  # "Loss error: 0.08"
    (WORLD / "gtad-30.log", "out-of-memory"),  # no exception prefix, 'cached'
    (WORLD / "sqlnet-41.log", "label-out-of-range"),  # THNN, quote closed with '
    (WORLD / "traisformer-19.log", "label-out-of-range"),  # ATen Loss.cu, quote closed with `
    (WORLD / "rfb-esrgan-pytorch-2.log", "broadcast-warning"),  # sizes wrapped onto a new line
    (WORLD / "comfyui-mochiwrapper-44.log", "recompiling"),  # glog W-prefixed dynamo lines
    (WORLD / "fast-reid-501.log", "scheduler-before-optimizer"),
    (WORLD / "dataset-distillation-11.log", "loss-non-finite-reported"),
    (WORLD / "pytorch-64586.log", "memory-growth-reported"),
    (WORLD / "llamafactory-6827.log", "out-of-memory"),  # "CUDA OOM" in a title
]


@pytest.mark.parametrize("path,name", CASES, ids=lambda x: getattr(x, "name", x))
def test_fault_shows_its_symptom(path, name):
    assert name in symptoms(path)


FAILURE_SHAPES = {
    "loss-gradual-climb",
    "loss-fast-climb",
    "loss-sudden-jump",
    "loss-collapsed-to-log-c",
    "non-finite-intermittent",
    "non-finite-after-unstable",
    "val-loss-constant",
    "grad-norm-non-finite",
    "loss-huge-and-learning",
    "loss-huge-and-stuck",
    "batch-order-repeats",
    "memory-growing",
    "few-trainable-parameters",
}
# (a weak `loss-oscillating` may show on a healthy small-batch run that is slow to start; the
# loss falling outweighs it, see test_triage_programs.py, where no healthy run names a cause)


@pytest.mark.parametrize("path", sorted(PROGRAM_LOGS.glob("*__healthy__*.log")), ids=lambda p: p.name)
def test_healthy_runs_show_no_failure_shape(path):
    found = set(symptoms(path))
    assert not FAILURE_SHAPES & found, sorted(FAILURE_SHAPES & found)


def test_oom_counter_of_zero_is_not_an_oom():
    # fairseq prints `oom=0` on every healthy line (tests/triage/world, the fairseq excerpt)
    assert "out-of-memory" not in symptoms(WORLD / "fairseq-940-healthy.log")
