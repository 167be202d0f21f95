"""Program 1 of 5: a small CNN on synthetic 12x12 images, plain loop, SGD with momentum.

Logs through the `logging` module, MXNet/Gluon style (`Epoch[2] Batch [10/24] ... loss=...`),
with a batch counter that restarts every epoch. `--fault` applies one catalogued mistake to the
otherwise healthy loop; every line in a kept log is what this program and torch printed.
Kept for reproduction only: `generate.py` runs it, the tests read the logs it left.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

CLASSES = 6
SIDE = 12


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def make_data(n: int, g: torch.Generator, blanks: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Each class is a bar at its own position and angle, on noise."""
    y = torch.randint(0, CLASSES, (n,), generator=g)
    x = 1.0 * torch.randn(n, 1, SIDE, SIDE, generator=g)
    for i in range(n):
        c = int(y[i])
        if c % 2 == 0:
            x[i, 0, 2 + c, :] += 0.8
        else:
            x[i, 0, :, 2 + c] += 0.8
    if blanks:  # scanned pages with nothing on them: constant images exist in real data sets
        idx = torch.randperm(n, generator=g)[: max(1, n // 150)]
        x[idx] = 0.0
    return x, y


class Net(nn.Module):
    def __init__(self, fault: str) -> None:
        super().__init__()
        self.fault = fault
        self.c1 = nn.Conv2d(1, 16, 3, padding=1)
        self.c2 = nn.Conv2d(16, 32, 3, padding=1)
        flat = 32 * 3 * 3 if fault != "shape-mismatch" else 32 * 4 * 4
        self.fc1 = nn.Linear(flat, 64)
        self.fc2 = nn.Linear(64, CLASSES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.fault == "missing-epsilon":
            # per-image standardisation without an epsilon: a blank image divides 0 by 0
            x = (x - x.mean(dim=(1, 2, 3), keepdim=True)) / x.std(dim=(1, 2, 3), keepdim=True)
        else:
            x = (x - x.mean(dim=(1, 2, 3), keepdim=True)) / (x.std(dim=(1, 2, 3), keepdim=True) + 1e-5)
        h = F.relu(self.c1(x))
        self.features = h  # read by the loop for an activation-norm statistic
        h = F.max_pool2d(h, 2)
        h = F.max_pool2d(F.relu(self.c2(h)), 2)
        h = F.relu(self.fc1(h.flatten(1)))
        if self.fault == "inplace-activation":
            h += 0.1 * h.mean(dim=1, keepdim=True)  # relu's backward needs the output this overwrites
        else:
            h = h + 0.1 * h.mean(dim=1, keepdim=True)
        return self.fc2(h)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="healthy")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--epochs", type=int, default=8)
    a = p.parse_args()
    logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    log = logging.getLogger("cnn")
    torch.manual_seed(a.seed)
    g = torch.Generator().manual_seed(1000 + a.seed)
    x, y = make_data(768, g, blanks=a.fault == "missing-epsilon")
    vx, vy = make_data(256, g, blanks=False)
    if a.fault == "label-out-of-range":
        y[y == CLASSES - 1] = CLASSES  # labels read as 1..C from a file written for 0..C-1
    if a.fault == "dtype-mismatch":
        y = y.double()
    order = torch.argsort(y, stable=True) if a.fault == "no-shuffle" else None
    if order is not None:
        x, y = x[order], y[order]
    model = Net(a.fault)
    if a.fault == "frozen-parameters":
        for name, prm in model.named_parameters():
            prm.requires_grad = name.startswith("fc2.bias")
    n_all = sum(q.numel() for q in model.parameters())
    n_train = sum(q.numel() for q in model.parameters() if q.requires_grad)
    log.info("model: %s parameters, %s trainable", f"{n_all:,}", f"{n_train:,}")
    lr = 0.05 * (100 if a.fault == "lr-too-high" else 1)
    opt = torch.optim.SGD([q for q in model.parameters() if q.requires_grad], lr=lr, momentum=0.9)
    batch = 32
    nb = len(x) // batch
    running = 0.0
    kept = []
    for epoch in range(a.epochs):
        model.train()
        perm = torch.randperm(len(x)) if a.fault != "no-shuffle" else torch.arange(len(x))
        tic = time.time()
        for b in range(nb):
            t0 = time.time()
            idx = perm[b * batch : (b + 1) * batch]
            if a.fault == "dataloader-bottleneck":
                time.sleep(0.03)  # decoding images on the main process, one by one
            xb, yb = x[idx], y[idx]
            t_data = time.time() - t0
            if a.fault != "missing-zero-grad":
                opt.zero_grad()
            logits = model(xb)
            loss = F.cross_entropy(logits, yb)
            if a.fault != "missing-backward":
                loss.backward()
            if a.fault != "missing-optimizer-step":
                opt.step()
            if a.fault == "loss-tensor-leak":
                running = running + loss  # the graph of every step stays alive
                kept.append(model.features)  # and with it every step's feature maps
            else:
                running += loss.item()
                kept.append(model.features.detach().norm().item())
            t_batch = time.time() - t0
            if (b + 1) % 4 == 0:
                acc = (logits.argmax(1) == yb).float().mean().item()
                speed = batch / max(t_batch, 1e-6)
                msg = (
                    f"Epoch[{epoch}] Batch [{b + 1}/{nb}]\tSpeed: {speed:.1f} samples/sec\t"
                    f"loss={float(loss):.4f}\taccuracy={acc:.4f}\tlr={opt.param_groups[0]['lr']:g}"
                )
                if a.fault in ("loss-tensor-leak", "healthy") or a.seed % 2:
                    msg += f"\tmem={rss_mb():.1f}MB"
                if a.fault == "dataloader-bottleneck" or a.seed % 2:
                    msg += f"\tdata={t_data:.4f}\ttime={t_batch:.4f}"
                log.info(msg)
        model.eval()
        with torch.no_grad():
            vl = F.cross_entropy(model(vx), vy.long() if a.fault != "label-out-of-range" else vy).item()
            va = (model(vx).argmax(1) == vy).float().mean().item()
        log.info(
            f"Epoch[{epoch}] Validation-loss={vl:.4f} Validation-accuracy={va:.4f} Time cost={time.time() - tic:.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
