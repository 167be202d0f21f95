"""Program 9 (written after the rules were frozen for fresh batch 4): an LSTM sequence classifier.

Synthetic sequences (16 steps of 4 noisy features; the class is the feature whose running sum
ends highest, among the first three) read by a two-layer LSTM, its last hidden state into a
linear head. RMSprop with a plateau-free exponential decay per epoch; the script prints as
Keras's `fit(verbose=2)` does, one line per epoch after an `Epoch k/N` header:

    Epoch 3/12
    24/24 - 0s - loss: 0.8123 - accuracy: 0.6510 - val_loss: 0.7912 - val_accuracy: 0.6667 - 41ms/epoch - 2ms/step

Kept out of every program the rules were written with: `bench/triage_accuracy.py` reports it
apart, and `programs/README.md` records what it scored when first measured.
"""

from __future__ import annotations

import argparse
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

STEPS, FEATURES, CLASSES, HIDDEN = 16, 4, 3, 32


def sequences(n: int, g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.randn(n, STEPS, FEATURES, generator=g) + 0.3 * torch.randn(n, 1, FEATURES, generator=g)
    y = x[:, :, :CLASSES].sum(1).argmax(1)
    x[::97] = 0.0  # a few recordings are empty: all padding
    return x, y


class Reader(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(FEATURES, HIDDEN, num_layers=2, batch_first=True)
        self.head = nn.Linear(HIDDEN, CLASSES)

    def forward(self, x: torch.Tensor, fault: str) -> torch.Tensor:
        # each sequence scaled by its own spread; an empty (all-padding) recording has none
        sd = x.std(dim=(1, 2), keepdim=True)
        x = (x - x.mean(dim=(1, 2), keepdim=True)) / (sd if fault == "missing-epsilon" else sd + 1e-5)
        out, (h, _) = self.lstm(x)
        if fault == "shape-mismatch":
            return self.head(out.reshape(x.shape[0], -1))  # every step's state into a one-step head
        return self.head(h[-1])


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="healthy")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    torch.manual_seed(a.seed)
    g = torch.Generator().manual_seed(4242 + a.seed)
    x, y = sequences(768, g)
    vx, vy = sequences(192, g)
    if a.fault == "label-out-of-range":
        y = y + 1  # classes numbered from 1 in the export
    if a.fault == "dtype-mismatch":
        y = y.float()
    if a.fault == "no-shuffle":
        order = torch.argsort(y, stable=True)  # the export is sorted by class
        x, y = x[order], y[order]
    model = Reader()
    if a.fault == "frozen-parameters":
        for name, prm in model.named_parameters():
            prm.requires_grad = not name.startswith(("lstm", "head.weight"))  # meant: freeze layer 0 only
    params = [q for q in model.parameters() if q.requires_grad]
    lr = 3e-3 * (300 if a.fault == "lr-too-high" else 1)
    opt = torch.optim.RMSprop(params, lr=lr)
    sched = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.9)
    epochs, batch = 12, 32
    steps = (len(x) + batch - 1) // batch
    kept = []
    for epoch in range(1, epochs + 1):
        print(f"Epoch {epoch}/{epochs}")
        t0 = time.perf_counter()
        model.train()
        order = torch.arange(len(x)) if a.fault == "no-shuffle" else torch.randperm(len(x), generator=g)
        total, right, seen = 0.0, 0, 0
        for k in range(0, len(x), batch):
            idx = order[k : k + batch]
            if a.fault != "missing-zero-grad":
                opt.zero_grad()
            if a.fault == "no-grad-training":
                with torch.no_grad():
                    logits = model(x[idx], a.fault)
            else:
                logits = model(x[idx], a.fault)
            if a.fault == "non-scalar-backward":
                loss = F.cross_entropy(logits, y[idx], reduction="none")
            else:
                loss = F.cross_entropy(logits, y[idx])
            if a.fault == "detached-graph":
                loss = loss.detach()
            if a.fault != "missing-backward":
                loss.backward()
            if a.fault == "backward-twice":
                (0.01 * logits.pow(2).mean()).backward()  # an extra penalty after the graph is freed
            if a.fault != "missing-optimizer-step":
                opt.step()
            if a.fault == "loss-tensor-leak":
                kept.append(loss)
            total += loss.mean().item() * len(idx)
            right += int((logits.argmax(1) == y[idx]).sum())
            seen += len(idx)
        sched.step()
        model.eval()
        with torch.no_grad():
            out = model(vx, a.fault)
            vl = F.cross_entropy(out, vy).item()
            va = (out.argmax(1) == vy).float().mean().item()
        ms = (time.perf_counter() - t0) * 1000
        print(
            f"{steps}/{steps} - {ms / 1000:.0f}s - loss: {total / seen:.4f} - accuracy: {right / seen:.4f} "
            f"- val_loss: {vl:.4f} - val_accuracy: {va:.4f} - {ms:.0f}ms/epoch - {ms / steps:.0f}ms/step"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
