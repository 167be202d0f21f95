"""Program 7 (written after the rules were frozen for fresh batch 2): a tiny vision transformer.

Synthetic 16x16 images (a textured blob at one of six places on a black background) are cut
into 4x4 patches, each patch normalised by its own pixel statistics (as masked-autoencoder
recipes do), embedded and passed through two transformer encoder layers. SGD with Nesterov
momentum and a cosine schedule; the script logs with bare `print(f"...")` lines in a
pipe-separated layout with the accuracy as a percentage:

    [03/08] it 0040 | loss 1.2345 | acc 56.2% | lr 4.12e-02 | rss 312M
      val   | loss 1.1111 | acc 61.3%

Kept out of every program the rules were written with: `bench/triage_accuracy.py` reports it
apart, and `programs/README.md` records what it scored when first measured.
"""

from __future__ import annotations

import argparse
import math
import os
import sys

import torch
import torch.nn.functional as F
from torch import nn

SIZE, PATCH, CLASSES, DIM = 16, 4, 6, 48


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def images(n: int, g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    y = torch.randint(0, CLASSES, (n,), generator=g)
    x = torch.zeros(n, 1, SIZE, SIZE)
    rows, cols = (y // 3) * 8 + 2, (y % 3) * 5 + 1
    for i in range(n):
        r, c = int(rows[i]), int(cols[i])
        x[i, 0, r : r + 4, c : c + 4] = 0.5 + torch.rand(4, 4, generator=g)
    return x, y


class ViT(nn.Module):
    def __init__(self, fault: str) -> None:
        super().__init__()
        self.fault = fault
        n = (SIZE // PATCH) ** 2
        self.embed = nn.Linear(PATCH * PATCH, DIM)
        self.pos = nn.Parameter(torch.randn(1, n, DIM) * 0.02)
        layer = nn.TransformerEncoderLayer(DIM, 4, 2 * DIM, dropout=0.1, batch_first=True)
        self.blocks = nn.TransformerEncoder(layer, 2)
        self.head = nn.Linear(DIM, CLASSES)

    def patches(self, x: torch.Tensor) -> torch.Tensor:
        p = x.unfold(2, PATCH, PATCH).unfold(3, PATCH, PATCH).reshape(x.shape[0], -1, PATCH * PATCH)
        mu, var = p.mean(-1, keepdim=True), p.var(-1, keepdim=True)
        if self.fault == "missing-epsilon":
            return (p - mu) / var.sqrt()  # a black patch has no variance: 0/0
        return (p - mu) / (var + 1e-6).sqrt()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.embed(self.patches(x)) + self.pos
        h = self.blocks(h)
        if self.fault == "shape-mismatch":
            return self.head(h.flatten(1))  # pooled the wrong way: 16 tokens x DIM into a DIM head
        return self.head(h.mean(1))


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="healthy")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    torch.manual_seed(a.seed)
    g = torch.Generator().manual_seed(777 + a.seed)
    x, y = images(768, g)
    vx, vy = images(192, g)
    if a.fault == "label-out-of-range":
        y = y + 1  # classes counted from 1 in the annotation export
    if a.fault == "dtype-mismatch":
        y = y.float()  # labels read from a float column
    model = ViT(a.fault)
    if a.fault == "frozen-parameters":
        for name, prm in model.named_parameters():
            prm.requires_grad = name.startswith("head.bias")  # meant: freeze the embedding only
    params = [q for q in model.parameters() if q.requires_grad]
    print(
        f"ViT: {sum(q.numel() for q in model.parameters()):,} parameters, {sum(q.numel() for q in params):,} trainable"
    )
    lr = 0.05 * (100 if a.fault == "lr-too-high" else 1)
    opt = torch.optim.SGD(params, lr=lr, momentum=0.9, nesterov=True, weight_decay=1e-4)
    epochs, batch = 8, 32
    total_steps = epochs * len(x) // batch
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.5 * (1 + math.cos(math.pi * s / total_steps)))
    kept = []
    it = 0
    for epoch in range(1, epochs + 1):
        model.train()
        order = torch.randperm(len(x), generator=g)
        for k in range(0, len(x), batch):
            idx = order[k : k + batch]
            if a.fault != "missing-zero-grad":
                opt.zero_grad()
            if a.fault == "no-grad-training":
                with torch.no_grad():
                    logits = model(x[idx])
            else:
                logits = model(x[idx])
            if a.fault == "non-scalar-backward":
                loss = F.cross_entropy(logits, y[idx], reduction="none")
            else:
                loss = F.cross_entropy(logits, y[idx])
            if a.fault != "missing-backward":
                loss.backward()
            if a.fault != "missing-optimizer-step":
                opt.step()
            sched.step()
            it += 1
            if a.fault == "loss-tensor-leak":
                kept.append(loss)  # a running list of losses, graphs and all
            if it % 4 == 0:
                acc = (logits.argmax(1) == y[idx]).float().mean().item()
                print(
                    f"[{epoch:02d}/{epochs:02d}] it {it:04d} | loss {loss.mean().item():.4f} | acc {acc:.1%} "
                    f"| lr {sched.get_last_lr()[0]:.2e} | rss {rss_mb():.0f}M"
                )
        model.eval()
        with torch.no_grad():
            out = model(vx)
            vl = F.cross_entropy(out, vy).item()
            va = (out.argmax(1) == vy).float().mean().item()
        print(f"  val   | loss {vl:.4f} | acc {va:.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
