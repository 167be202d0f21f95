"""A short run that keeps its running loss as a tensor and writes its results as JSON at the end.

The kept loss (`running += loss`, no `.item()`) holds every step's graph; nothing fails until the
closing results dump meets a tensor where a number belongs, as in a training script that prints
its final metrics as JSON (timm's `--result`). Run by tests/triage/test_triage_programs.py.
"""

from __future__ import annotations

import json

import torch
from torch import nn


def main() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(64, 8), torch.randint(0, 3, (64,))
    running = 0.0
    for step in range(1, 21):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        running += loss
        if step % 5 == 0:
            print(f"step {step} loss {loss.item():.4f}")
    results = {"epochs": 1, "train_loss_avg": running / 20}
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
