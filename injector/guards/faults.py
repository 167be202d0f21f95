"""The fault ids a guard watcher targets, readable without importing torch."""

from __future__ import annotations

WATCHED: frozenset[str] = frozenset(
    {
        "missing-zero-grad",
        "missing-optimizer-step",
        "missing-backward",
        "detached-graph",
        "no-grad-training",
        "missing-eval-mode",
        "missing-train-mode",
        "missing-no-grad-eval",
        "wrong-softmax-dim",
        "double-softmax",
        "wrong-loss-reduction",
        "missing-grad-clipping",
        "scheduler-step-misaligned",
        "no-shuffle",
        "missing-set-epoch",
        "loss-tensor-leak",
        "missing-grad-scaler",
        "rank-skip",
        "lr-too-high",
        "inplace-activation",
        "missing-epsilon",
        "missing-attention-mask",
        "device-mismatch",
    }
)
