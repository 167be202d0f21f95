"""Program 6 (written after the rules were frozen): fine-tuning a pretrained 1-D conv encoder.

A small encoder is first pretrained on one synthetic signal task (inside this script, standing
in for a downloaded checkpoint), then fine-tuned with a new head on another, AdamW with a
linear warm-up/decay schedule and gradient accumulation. It logs `key=value` lines
(`train step=40 epoch=2 loss=0.8123 lr=1.2e-04 grad_norm=0.91`). Kept out of the five
programs the rules were developed on: `bench/triage_accuracy.py` reports it apart, and
`programs/README.md` records what it scored when first measured.
"""

from __future__ import annotations

import argparse
import os
import sys

import torch
import torch.nn.functional as F
from torch import nn

LENGTH = 64
CLASSES = 7
ACCUM = 4


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def signals(n: int, g: torch.Generator, task: str) -> tuple[torch.Tensor, torch.Tensor]:
    t = torch.linspace(0, 1, LENGTH)
    if task == "pretrain":  # which of three frequencies
        y = torch.randint(0, 3, (n,), generator=g)
        x = torch.sin(2 * torch.pi * (3 + 4 * y[:, None].float()) * t)
    else:  # where a bump sits, among CLASSES positions, on a noisy carrier
        y = torch.randint(0, CLASSES, (n,), generator=g)
        centers = (y.float() + 0.5) / CLASSES
        x = 2.0 * torch.exp(-((t[None, :] - centers[:, None]) ** 2) / 0.004) + 0.3 * torch.sin(9 * t)
    return (x + 0.3 * torch.randn(n, LENGTH, generator=g))[:, None, :], y


class Encoder(nn.Module):
    def __init__(self, fault: str) -> None:
        super().__init__()
        self.fault = fault
        self.conv1 = nn.Conv1d(1, 32, 5, padding=2)
        self.conv2 = nn.Conv1d(32, 64, 5, padding=2)
        self.norm = nn.LayerNorm(64)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.gelu(self.conv1(x))
        h = torch.tanh(self.conv2(h))
        if self.fault == "inplace-activation":
            h *= 0.5  # tanh's backward needs the output this scales in place
        else:
            h = h * 0.5
        return self.norm(h.mean(-1))


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="healthy")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    torch.manual_seed(a.seed)
    g = torch.Generator().manual_seed(4242 + a.seed)
    enc = Encoder(a.fault)
    # "pretrained checkpoint": a short pretraining run on another task
    px, py = signals(512, g, "pretrain")
    tmp_head = nn.Linear(64, 3)
    popt = torch.optim.Adam(list(enc.parameters()) + list(tmp_head.parameters()), lr=3e-3)
    for i in range(0, 512, 32):
        popt.zero_grad()
        F.cross_entropy(tmp_head(enc(px[i : i + 32])), py[i : i + 32]).backward()
        popt.step()
    print(
        f"loaded pretrained encoder (pretraining loss {F.cross_entropy(tmp_head(enc(px[:64])), py[:64]).item():.3f})",
        flush=True,
    )

    x, y = signals(1024, g, "finetune")
    vx, vy = signals(256, g, "finetune")
    if a.fault == "label-out-of-range":
        y = y + 1  # class ids from a 1-based annotation tool
    head = nn.Sequential(nn.Dropout(0.1), nn.Linear(64, CLASSES))
    model = nn.Sequential(enc, head)
    if a.fault == "frozen-parameters":
        for prm in model.parameters():  # meant to freeze the encoder only
            prm.requires_grad = False
        enc.norm.bias.requires_grad = True
    n_all = sum(q.numel() for q in model.parameters())
    n_train = sum(q.numel() for q in model.parameters() if q.requires_grad)
    print(f"trainable: {n_train:,} of {n_all:,} parameters", flush=True)
    lr = 2e-3 * (150 if a.fault == "lr-too-high" else 1)
    opt = torch.optim.AdamW([q for q in model.parameters() if q.requires_grad], lr=lr, weight_decay=0.01)
    epochs, micro = 5, 16
    steps = epochs * len(x) // (micro * ACCUM)
    warm = max(1, steps // 10)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warm, max(0.0, (steps - s) / (steps - warm)))
    )
    step = 0
    history = []
    for epoch in range(1, epochs + 1):
        model.train()
        perm = torch.randperm(len(x), generator=g)
        for k in range(0, len(x), micro * ACCUM):
            if a.fault != "missing-zero-grad":
                opt.zero_grad()
            total = 0.0
            for m in range(ACCUM):
                idx = perm[k + m * micro : k + (m + 1) * micro]
                logits = model(x[idx])
                if a.fault == "double-softmax":
                    loss = F.cross_entropy(F.softmax(logits, -1), y[idx])
                elif a.fault == "wrong-loss-reduction":
                    loss = F.cross_entropy(logits, y[idx], reduction="sum")
                elif a.fault == "missing-epsilon":
                    pt = F.softmax(logits * 25, -1).gather(1, y[idx][:, None])  # sharpened focal term
                    loss = (-((1 - pt) ** 2) * torch.log(pt)).mean()
                else:
                    loss = F.cross_entropy(logits, y[idx])
                (loss / ACCUM).backward()
                if a.fault == "scheduler-step-misaligned":
                    sched.step()
                if a.fault == "loss-tensor-leak":
                    history.append(logits)
                    total = total + loss / ACCUM
                else:
                    total += loss.item() / ACCUM
            gn = float(torch.nn.utils.clip_grad_norm_([q for q in model.parameters() if q.requires_grad], 5.0))
            opt.step()
            if a.fault != "scheduler-step-misaligned":
                sched.step()
            step += 1
            if step % 2 == 0:
                line = (
                    f"train step={step} epoch={epoch} loss={float(total):.4f} "
                    f"lr={sched.get_last_lr()[0]:.3e} grad_norm={gn:.4f}"
                )
                if a.fault == "loss-tensor-leak" or a.seed % 2:
                    line += f" rss={rss_mb():.1f}MB"
                print(line, flush=True)
        model.eval()
        with torch.no_grad():
            out = model(vx)
            vl = F.cross_entropy(out, vy).item()
            va = (out.argmax(1) == vy).float().mean().item()
        print(f"eval step={step} epoch={epoch} val_loss={vl:.4f} val_acc={va:.4f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
