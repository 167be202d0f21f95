"""Regenerate the five-program corpus: run each program once per (fault, seed), keep what it printed.

    python tests/triage/programs/generate.py [--jobs 2] [--only PROGRAM]

Needs `transformers`, `lightning` and `accelerate` beside torch (the test suite does not: it
reads the committed logs). Rewrites `logs/` and `manifest.json` (file, program, cause, seed).
Each program is its own training code, framework and logging style, so that evaluating
leave-one-program-out (`bench/triage_accuracy.py`) measures how far triage carries to code it
was not tuned on. stdout and stderr are interleaved as CI captures them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
# program -> (its faults, how it is launched)
PROGRAMS: dict[str, tuple[tuple[str, ...], str]] = {
    "cnn_sgd": (
        (
            "missing-zero-grad",
            "lr-too-high",
            "missing-backward",
            "missing-optimizer-step",
            "frozen-parameters",
            "inplace-activation",
            "label-out-of-range",
            "shape-mismatch",
            "dtype-mismatch",
            "no-shuffle",
            "loss-tensor-leak",
            "dataloader-bottleneck",
            "missing-epsilon",
        ),
        "python",
    ),
    "mlp_hf": (
        (
            "lr-too-high",
            "frozen-parameters",
            "label-out-of-range",
            "dtype-mismatch",
            "bad-init",
            "double-softmax",
            "wrong-loss-reduction",
            "missing-epsilon",
            "broadcast-shape",
        ),
        "python",
    ),
    "lm_accelerate": (
        (
            "missing-zero-grad",
            "lr-too-high",
            "scheduler-step-misaligned",
            "backward-twice",
            "non-scalar-backward",
            "no-grad-training",
            "detached-graph",
            "graph-break",
            "missing-no-grad-eval",
            "loss-tensor-leak",
        ),
        "python",
    ),
    "rnn_lightning": (
        (
            "lr-too-high",
            "frozen-parameters",
            "label-out-of-range",
            "shape-mismatch",
            "no-shuffle",
            "broadcast-shape",
            "inplace-activation",
            "dataloader-bottleneck",
        ),
        "python",
    ),
    "gan_ddp": (
        ("ddp-unused-parameters", "rank-skip", "backward-twice", "missing-zero-grad", "lr-too-high"),
        "torchrun",
    ),
}
# The thirteen faults every program written in session 18 implements, each adding one of its own.
SESSION18_FAULTS = (
    "missing-zero-grad",
    "lr-too-high",
    "no-shuffle",
    "missing-backward",
    "missing-optimizer-step",
    "frozen-parameters",
    "missing-train-mode",
    "missing-eval-mode",
    "loss-tensor-leak",
    "scheduler-step-misaligned",
    "detached-graph",
    "no-grad-training",
    "wrong-loss-reduction",
)
# Written after the rules were frozen and measured once before any change (programs/README.md):
# reported apart from the five, never part of leave-one-program-out.
FRESH: dict[str, tuple[tuple[str, ...], str]] = {
    "finetune_fresh": (
        (
            "lr-too-high",
            "frozen-parameters",
            "missing-zero-grad",
            "scheduler-step-misaligned",
            "label-out-of-range",
            "double-softmax",
            "loss-tensor-leak",
            "wrong-loss-reduction",
            "missing-epsilon",
            "inplace-activation",
        ),
        "python",
    ),
    # written after the rules were frozen again for issue 9's fresh batch 2
    "vit_print": (
        (
            "lr-too-high",
            "missing-zero-grad",
            "missing-backward",
            "missing-optimizer-step",
            "label-out-of-range",
            "shape-mismatch",
            "dtype-mismatch",
            "no-grad-training",
            "non-scalar-backward",
            "missing-epsilon",
            "loss-tensor-leak",
            "frozen-parameters",
        ),
        "python",
    ),
    # written after the rules were frozen for issue 9's fresh batch 3
    "unet_table": (
        (
            "lr-too-high",
            "missing-zero-grad",
            "missing-backward",
            "missing-optimizer-step",
            "inplace-activation",
            "shape-mismatch",
            "dtype-mismatch",
            "no-grad-training",
            "detached-graph",
            "missing-epsilon",
            "loss-tensor-leak",
            "missing-train-mode",
            "wrong-loss-reduction",
            "scheduler-step-misaligned",
        ),
        "python",
    ),
    # written after the rules were frozen for issue 9's fresh batch 4
    "lstm_keras": (
        (
            "lr-too-high",
            "missing-zero-grad",
            "missing-backward",
            "missing-optimizer-step",
            "frozen-parameters",
            "label-out-of-range",
            "dtype-mismatch",
            "shape-mismatch",
            "no-grad-training",
            "detached-graph",
            "backward-twice",
            "non-scalar-backward",
            "missing-epsilon",
            "no-shuffle",
        ),
        "python",
    ),
    # written after issue 9's rules were last changed (session 6), before triage read its logs
    "forecast_jsonl": (
        (
            "lr-too-high",
            "missing-zero-grad",
            "missing-backward",
            "missing-optimizer-step",
            "no-grad-training",
            "detached-graph",
            "wrong-loss-reduction",
            "missing-epsilon",
            "loss-tensor-leak",
            "frozen-parameters",
            "broadcast-shape",
            "non-scalar-backward",
            "inplace-activation",
            "missing-train-mode",
        ),
        "python",
    ),
    # written for issue 9's fresh program 11 without reading triage's rules
    "textcls_hydra": (
        (
            "lr-too-high",
            "missing-zero-grad",
            "missing-backward",
            "missing-optimizer-step",
            "frozen-parameters",
            "label-out-of-range",
            "shape-mismatch",
            "dtype-mismatch",
            "no-grad-training",
            "detached-graph",
            "missing-epsilon",
            "no-shuffle",
            "missing-train-mode",
            "scheduler-step-misaligned",
        ),
        "python",
    ),
    # written for issue 9's fresh program 12 without reading triage's rules
    "vae_ignite": (
        (
            "lr-too-high",
            "missing-zero-grad",
            "missing-backward",
            "missing-optimizer-step",
            "frozen-parameters",
            "shape-mismatch",
            "dtype-mismatch",
            "no-grad-training",
            "detached-graph",
            "missing-epsilon",
            "missing-train-mode",
            "scheduler-step-misaligned",
            "wrong-loss-reduction",
            "loss-tensor-leak",
        ),
        "python",
    ),
    # written for issue 9's fresh program 13 without reading triage's rules
    "gcn_pyg": (
        (
            "lr-too-high",
            "missing-zero-grad",
            "missing-backward",
            "missing-optimizer-step",
            "missing-eval-mode",
            "missing-train-mode",
            "wrong-softmax-dim",
            "double-softmax",
            "label-out-of-range",
            "shape-mismatch",
            "dtype-mismatch",
            "no-grad-training",
            "missing-epsilon",
            "frozen-parameters",
        ),
        "python",
    ),
    # written for issue 9's fresh program 14 without reading triage's rules
    "simclr_mmlog": (
        (
            "lr-too-high",
            "missing-zero-grad",
            "missing-backward",
            "missing-optimizer-step",
            "missing-epsilon",
            "wrong-softmax-dim",
            "detached-graph",
            "no-grad-training",
            "missing-train-mode",
            "missing-eval-mode",
            "dataloader-bottleneck",
            "no-shuffle",
            "scheduler-step-misaligned",
            "loss-tensor-leak",
        ),
        "python",
    ),
    # written for issue 9's fresh program 15 without reading triage's rules
    "seq2seq_onmt": (
        (
            "lr-too-high",
            "missing-zero-grad",
            "missing-backward",
            "missing-optimizer-step",
            "missing-train-mode",
            "missing-eval-mode",
            "scheduler-step-misaligned",
            "loss-tensor-leak",
            "frozen-parameters",
            "missing-attention-mask",
            "no-shuffle",
            "wrong-softmax-dim",
            "label-out-of-range",
            "detached-graph",
        ),
        "python",
    ),
    # written for issue 9's fresh program 16 without reading triage's rules
    "detect_d2": (
        (
            "lr-too-high",
            "missing-zero-grad",
            "missing-backward",
            "missing-optimizer-step",
            "missing-train-mode",
            "missing-eval-mode",
            "no-shuffle",
            "loss-tensor-leak",
            "frozen-parameters",
            "wrong-loss-reduction",
            "missing-epsilon",
            "scheduler-step-misaligned",
            "label-out-of-range",
            "dataloader-bottleneck",
        ),
        "python",
    ),
    # written for issue 9's fresh program 18 without reading triage's rules
    "finetune_fastai": (
        (
            "lr-too-high",
            "missing-zero-grad",
            "missing-backward",
            "missing-optimizer-step",
            "missing-train-mode",
            "missing-eval-mode",
            "no-shuffle",
            "frozen-parameters",
            "double-softmax",
            "scheduler-step-misaligned",
            "loss-tensor-leak",
            "wrong-loss-reduction",
            "label-out-of-range",
            "bad-init",
        ),
        "python",
    ),
    # written for issue 9's fresh program 17 without reading triage's rules
    "asr_fairseq": (
        (
            "lr-too-high",
            "missing-zero-grad",
            "missing-backward",
            "missing-optimizer-step",
            "missing-train-mode",
            "missing-eval-mode",
            "no-shuffle",
            "scheduler-step-misaligned",
            "loss-tensor-leak",
            "frozen-parameters",
            "wrong-softmax-dim",
            "wrong-loss-reduction",
            "detached-graph",
            "dtype-mismatch",
        ),
        "python",
    ),
    # written for issue 9's fresh program 19 without reading triage's rules
    "ppo_sb3": (
        (
            "lr-too-high",
            "missing-zero-grad",
            "missing-backward",
            "missing-optimizer-step",
            "missing-train-mode",
            "missing-eval-mode",
            "no-grad-training",
            "detached-graph",
            "wrong-softmax-dim",
            "double-softmax",
            "loss-tensor-leak",
            "frozen-parameters",
            "wrong-loss-reduction",
            "missing-epsilon",
        ),
        "python",
    ),
    # written for issue 9's fresh program 20 without reading triage's rules
    "ddpm_diffusers": (
        (
            "frozen-parameters",
            "lr-too-high",
            "no-shuffle",
            "no-grad-training",
            "detached-graph",
            "missing-epsilon",
            "wrong-loss-reduction",
            "missing-backward",
            "loss-tensor-leak",
            "scheduler-step-misaligned",
            "missing-optimizer-step",
            "missing-zero-grad",
            "missing-eval-mode",
            "missing-train-mode",
        ),
        "python",
    ),
    # written for issue 9's fresh program 23 without reading triage's rules
    "ncf_deepspeed": ((*SESSION18_FAULTS, "missing-epsilon"), "python"),
    # written for issue 9's fresh program 24 without reading triage's rules
    "charlm_nanolog": ((*SESSION18_FAULTS, "missing-attention-mask"), "python"),
    # written for issue 9's fresh program 25 without reading triage's rules
    "imgcls_timmlog": ((*SESSION18_FAULTS, "wrong-softmax-dim"), "python"),
    # written for issue 9's fresh program 26 without reading triage's rules (session 24)
    "cls_ultralog": ((*SESSION18_FAULTS, "double-softmax"), "python"),
    # written for issue 9's fresh program 27 without reading triage's rules (session 24)
    "kws_speechbrain": ((*SESSION18_FAULTS, "double-softmax"), "python"),
    # written for issue 9's fresh program 28 without reading triage's rules (session 31)
    "tab_skorch": ((*SESSION18_FAULTS, "double-softmax"), "python"),
    # written for issue 9's fresh program 29 without reading triage's rules (session 31)
    "seg_monai": ((*SESSION18_FAULTS, "double-softmax"), "python"),
    # written for issue 9's fresh program 30 without reading triage's rules (session 34)
    "face_arcface": ((*SESSION18_FAULTS, "double-softmax"), "python"),
}
HEALTHY_SEEDS = (0, 1)
TIMEOUT_S = 240


def runs(only: str | None = None) -> list[dict]:
    out = []
    for prog, (faults, launch) in {**PROGRAMS, **FRESH}.items():
        if only and prog != only:
            continue
        for seed in HEALTHY_SEEDS:
            out.append({"program": prog, "fault": "healthy", "seed": seed, "launch": launch})
        for k, fault in enumerate(faults):
            out.append({"program": prog, "fault": fault, "seed": 2 + k % 2, "launch": launch})
    return out


def name(run: dict) -> str:
    return f"{run['program']}__{run['fault']}__s{run['seed']}.log"


def execute(run: dict, logs: Path) -> dict:
    script = str(HERE / f"{run['program']}.py")
    args = ["--fault", run["fault"], "--seed", str(run["seed"])]
    if run["launch"] == "torchrun":
        tee = ["--tee", "3"] if run["seed"] % 2 else []
        cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", *tee, script, *args]
    else:
        cmd = [sys.executable, script, *args]
    env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false")
    try:
        proc = subprocess.run(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=TIMEOUT_S,
            env=env,
            cwd=HERE,
            start_new_session=True,
        )
        text, code = proc.stdout, proc.returncode
    except subprocess.TimeoutExpired as exc:
        text, code = (exc.stdout or b"") + b"\nTerminated\n", -15
    (logs / name(run)).write_bytes(text)
    return {
        "file": name(run),
        "program": run["program"],
        "cause": None if run["fault"] == "healthy" else run["fault"],
        "seed": run["seed"],
        "exit": code,
        "fresh": run["program"] in FRESH,
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--only", help="regenerate one program's logs")
    a = p.parse_args()
    logs = HERE / "logs"
    logs.mkdir(exist_ok=True)
    todo = runs(a.only)
    with ThreadPoolExecutor(a.jobs) as pool:
        done = list(pool.map(lambda r: execute(r, logs), todo))
    path = HERE / "manifest.json"
    old = json.loads(path.read_text()) if a.only and path.is_file() else []
    keep = [m for m in old if m["program"] != a.only]
    manifest = sorted(keep + done, key=lambda m: (m["program"], m["cause"] or "", m["seed"]))
    path.write_text(json.dumps(manifest, indent=1) + "\n")
    for m in done:
        print(f"{m['exit']:>4}  {m['file']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
