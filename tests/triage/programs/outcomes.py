"""Did a fresh program's run fail? The check its project's CI would make on its headline figure.

Triage is run on failing runs. A fault that leaves a run as good as a healthy one (Adam and
clipping absorbing a 100x learning rate, a missing `zero_grad` under RMSprop) is a run nobody
would triage, and silence is the right answer for it. So the bench reports the fresh programs
twice: over every faulty run, and over the runs that failed by this check.

A run failed when it exited non-zero, printed no headline figure, or ended with a headline
figure worse than the worse of the program's two healthy runs by more than `SHORTFALL` of
what a healthy run gains over training. Losses are compared on a log scale (a loss twice
another's is as far behind at 2.0 as at 0.02); scores (accuracy, AP, reward) on their own scale.
Each program's headline is the figure its author's evaluation prints, read with its own
pattern below, not with anything triage reads.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

SHORTFALL = 0.25
# program -> (pattern whose last group is the headline figure, "loss" (lower is better) or "score")
HEADLINES: dict[str, tuple[str, str]] = {
    "asr_fairseq": (r"valid on 'valid' subset \| loss ([-\d.eE+]+|nan|inf)", "loss"),
    "ddpm_diffusers": (r"Step \d+: train_loss=\S+ val_loss=([-\d.eE+]+|nan|inf)", "loss"),
    "detect_d2": (r"copypaste: ([-\d.]+|nan),[-\d.]+,", "score"),
    "finetune_fastai": (r"^\d+\s+\S+\s+\S+\s+([-\d.]+|nan)\s+\S+\s+\d\d:\d\d\s*$", "score"),
    "finetune_fresh": (r"val_acc=([-\d.]+|nan)", "score"),
    "forecast_jsonl": (r'"val_mse": ([-\d.eE+]+|NaN|Infinity)', "loss"),
    "gcn_pyg": (r"Val: ([-\d.]+|nan), Test", "score"),
    "lstm_keras": (r"val_accuracy: ([-\d.]+|nan)", "score"),
    "ppo_sb3": (r"\|\s+mean_reward\s+\|\s+([-\d.eE+]+|nan)\s+\|", "score"),
    "seq2seq_onmt": (r"Validation accuracy: ([-\d.]+|nan)", "score"),
    "simclr_mmlog": (r"Epoch\(val\).*knn_top1: ([-\d.]+|nan)", "score"),
    "textcls_hydra": (r"validation: loss=\S+ accuracy=([-\d.]+|nan)", "score"),
    "unet_table": (r"validation: loss=([-\d.eE+]+|nan|inf)", "loss"),
    "vae_ignite": (r"Validation Results - Epoch\[\d+\] Avg loss: ([-\d.eE+]+|nan|inf)", "loss"),
    "vit_print": (r"val\s+\| loss \S+ \| acc ([-\d.]+|nan)%", "score"),
    "ncf_deepspeed": (r"Eval epoch \d+: HR@10 = ([-\d.]+|nan)", "score"),
    "charlm_nanolog": (r"step \d+: train loss \S+, val loss ([-\d.eE+]+|nan|inf)", "loss"),
    # the test error of the best checkpoint, the recipe's last line
    "kws_speechbrain": (r"test error: ([-\d.eE+]+|nan|inf)", "loss"),
    # the top-1 accuracy on the `all` row under each validation's `classes top1_acc top5_acc` header
    "cls_ultralog": (r"^\s+all\s+([-\d.]+|nan)\s+[-\d.]+\s*$", "score"),
    # the running mean over the whole validation set, on each evaluation's last batch line
    "imgcls_timmlog": (r"Test: \[\s*(?P<n>\d+)/(?P=n)\].*?Acc@1:\s*\S+\s*\(\s*([-\d.]+|nan)\s*\)", "score"),
    # the script's own line after reloading the best checkpoint
    "tab_skorch": (r"test accuracy: ([-\d.]+|nan)", "score"),
    # the script's own line after training: the evaluator's best key metric
    "seg_monai": (r"best val_mean_dice: ([-\d.]+|nan)", "score"),
    # the script's own line after the last verification
    "face_arcface": (r"final verification accuracy-flip: ([-\d.]+|nan)", "score"),
}


def headlines(program: str, text: str) -> list[float]:
    """Every headline figure the run printed, in order."""
    pattern, _ = HEADLINES[program]
    values = []
    for match in re.finditer(pattern, text, re.MULTILINE):
        try:
            values.append(float(match.group(match.re.groups)))
        except ValueError:
            values.append(math.nan)
    return values


def _scale(value: float, kind: str) -> float:
    return math.log(max(value, 1e-12)) if kind == "loss" else value


def outcomes(manifest: list[dict], logs: Path) -> dict[str, bool]:
    """file -> whether that faulty run failed, for every faulty run of a program in HEADLINES."""
    by_program: dict[str, list[dict]] = {}
    for m in manifest:
        if m["program"] in HEADLINES:
            by_program.setdefault(m["program"], []).append(m)
    failed: dict[str, bool] = {}
    for program, runs in by_program.items():
        kind = HEADLINES[program][1]
        healthy = [headlines(program, _read(logs / m["file"])) for m in runs if m["cause"] is None]
        healthy = [h for h in healthy if h and all(math.isfinite(v) for v in h)]
        if not healthy:
            raise ValueError(f"{program}: no healthy run printed its headline figure")
        lasts = [_scale(h[-1], kind) for h in healthy]
        firsts = [_scale(h[0], kind) for h in healthy]
        worst = max(lasts) if kind == "loss" else min(lasts)
        gain = abs(sum(firsts) / len(firsts) - sum(lasts) / len(lasts))
        for m in runs:
            if m["cause"] is None:
                continue
            values = headlines(program, _read(logs / m["file"]))
            if m["exit"] != 0 or not values or not math.isfinite(values[-1]):
                failed[m["file"]] = True
                continue
            last = _scale(values[-1], kind)
            behind = last - worst if kind == "loss" else worst - last
            failed[m["file"]] = behind > SHORTFALL * gain
    return failed


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")
