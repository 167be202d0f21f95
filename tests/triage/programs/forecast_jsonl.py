"""Program 10 (written after the rules were frozen for the second time this round): a forecaster.

A regression, where the nine before it classify: a small 1-D convolutional network reads 48 steps
of three noisy sine-like channels and forecasts the next 8 steps of the first. AdamW with a linear
warm-up then cosine decay stepped every batch, dropout in the head, gradient clipping. It logs
JSON lines, as a metrics sink or a `jq`-friendly script does:

    {"event": "train", "epoch": 2, "step": 60, "loss": 0.4123, "lr": 0.00098, "grad_norm": 1.87}
    {"event": "eval", "epoch": 2, "val_mse": 0.3981, "val_mae": 0.5012}

Kept out of every program the rules were written with: `bench/triage_accuracy.py` reports it
apart, and `programs/README.md` records what it scored when first measured.
"""

from __future__ import annotations

import argparse
import json
import math
import sys

import torch
import torch.nn.functional as F
from torch import nn

WINDOW, HORIZON, CHANNELS = 48, 8, 3


def series(n: int, g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    t = torch.arange(WINDOW + HORIZON, dtype=torch.float32)
    phase = torch.rand(n, CHANNELS, 1, generator=g) * 6.28
    freq = 0.15 + 0.1 * torch.rand(n, CHANNELS, 1, generator=g)
    x = torch.sin(freq * t + phase) + 0.1 * torch.randn(n, CHANNELS, WINDOW + HORIZON, generator=g)
    x[::53, 0] = 0.0  # a dead sensor now and then: a flat, zero channel
    return x[:, :, :WINDOW], x[:, 0, WINDOW:]


class Forecaster(nn.Module):
    def __init__(self, fault: str) -> None:
        super().__init__()
        self.fault = fault
        self.conv1 = nn.Conv1d(CHANNELS, 16, 5, padding=2)
        self.conv2 = nn.Conv1d(16, 16, 5, padding=2)
        self.drop = nn.Dropout(0.3)
        self.head = nn.Linear(16 * WINDOW, HORIZON)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # each channel scaled by its own spread; a dead (flat) channel has none
        sd = x.std(dim=2, keepdim=True)
        x = (x - x.mean(dim=2, keepdim=True)) / (sd if self.fault == "missing-epsilon" else sd + 1e-4)
        h = torch.tanh(self.conv1(x))
        out = torch.tanh(self.conv2(h))
        if self.fault == "inplace-activation":
            out += h  # the residual added in place, into the output tanh's backward needs
        else:
            out = out + h
        h = out
        return self.head(self.drop(h.flatten(1)))


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="healthy")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    torch.manual_seed(a.seed)
    g = torch.Generator().manual_seed(777 + a.seed)
    x, y = series(640, g)
    vx, vy = series(160, g)
    model = Forecaster(a.fault)
    if a.fault == "frozen-parameters":
        for prm in model.conv1.parameters():
            prm.requires_grad = False
        for prm in model.head.parameters():
            prm.requires_grad = False  # meant to freeze the stem only
    base_lr = 1e-3 * (100 if a.fault == "lr-too-high" else 1)
    opt = torch.optim.AdamW([q for q in model.parameters() if q.requires_grad], lr=base_lr, weight_decay=0.01)
    epochs, batch = 8, 32
    steps_per_epoch = len(x) // batch
    total_steps, warmup = epochs * steps_per_epoch, steps_per_epoch

    def rate(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        return 0.5 * (1 + math.cos(math.pi * (step - warmup) / (total_steps - warmup)))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, rate)
    history = []
    step = 0
    for epoch in range(1, epochs + 1):
        if a.fault != "missing-train-mode" or epoch == 1:
            model.train()
        order = torch.randperm(len(x), generator=g)
        for k in range(0, len(x) - batch + 1, batch):
            idx = order[k : k + batch]
            if a.fault != "missing-zero-grad":
                opt.zero_grad()
            if a.fault == "no-grad-training":
                with torch.no_grad():
                    pred = model(x[idx])
            else:
                pred = model(x[idx])
            target = y[idx]
            if a.fault == "broadcast-shape":
                target = target[:, :1]  # the first step of the horizon only
            reduction = {"wrong-loss-reduction": "sum", "non-scalar-backward": "none"}.get(a.fault, "mean")
            loss = F.mse_loss(pred, target, reduction=reduction)
            if a.fault == "detached-graph":
                loss = loss.detach()
            if a.fault != "missing-backward":
                loss.backward()
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            if a.fault != "missing-optimizer-step":
                opt.step()
            sched.step()
            step += 1
            history.append(loss if a.fault == "loss-tensor-leak" else loss.item())
            if step % 10 == 0:
                line = {
                    "event": "train",
                    "epoch": epoch,
                    "step": step,
                    "loss": round(loss.item(), 5),
                    "lr": round(sched.get_last_lr()[0], 7),
                    "grad_norm": round(float(norm), 4),
                }
                print(json.dumps(line))
        model.eval()
        with torch.no_grad():
            out = model(vx)
            mse = F.mse_loss(out, vy.to(out.dtype)).item()
            mae = (out - vy).abs().mean().item()
        print(json.dumps({"event": "eval", "epoch": epoch, "val_mse": round(mse, 5), "val_mae": round(mae, 5)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
