"""A short run whose learning rate warms up linearly to a peak: `python warmup_nan.py PEAK`.

An MLP learns four classes with SGD and momentum under `LambdaLR` (a linear warm-up over the first
1000 of 1200 steps, then constant), printing a line every tenth step as timm's train loop does.
With a peak of 0.1 it trains; with a peak of 8 the loss climbs and turns NaN while the rate is
still rising. Run by tests/triage/test_triage_programs.py.
"""

from __future__ import annotations

import math
import sys

import torch
from torch import nn

WARMUP = 1000
STEPS = 1200


def main() -> None:
    peak = float(sys.argv[1])
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4))
    opt = torch.optim.SGD(model.parameters(), lr=peak, momentum=0.9)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / WARMUP))
    x = torch.randn(1024, 16)
    y = (x[:, :2] > 0).long() @ torch.tensor([1, 2])
    for step in range(STEPS):
        i = torch.randint(0, 1024, (64,))
        loss = nn.functional.cross_entropy(model(x[i]), y[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if step % 10 == 0:
            value = loss.item()
            shown = f"{value:9.6f}" if math.isfinite(value) else f"{value:>9}"
            lr = opt.param_groups[0]["lr"]
            print(f"Train: 0 [{step:4d}/{STEPS} ({100 * step // STEPS:3d}%)]  Loss: {shown}  LR: {lr:.3e}", flush=True)


if __name__ == "__main__":
    main()
