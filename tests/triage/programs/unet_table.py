"""Program 8 (written after the rules were frozen for fresh batch 3): a small U-Net segmenting blobs.

Synthetic 32x32 grey images hold one to three bright discs on a noisy background; the target is
the binary mask of the discs. A two-level U-Net (skip connections, batch norm, transposed-conv
upsampling) is trained with Adam, a step-decay schedule and a loss of binary cross-entropy
plus soft Dice. The script logs through the `logging` module as a fixed-width table whose
header is printed once per epoch, and a validation line in another layout:

    2026-01-01 12:00:00,000 | INFO | seg | epoch  step   loss      dice    lr         mem_MB
    2026-01-01 12:00:00,000 | INFO | seg |     1     8   1.04211   0.1702  1.000e-03  210.4
    2026-01-01 12:00:00,000 | INFO | seg | validation: loss=0.8812 dice=0.3311 (64 images)

Kept out of every program the rules were written with: `bench/triage_accuracy.py` reports it
apart, and `programs/README.md` records what it scored when first measured.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

import torch
import torch.nn.functional as F
from torch import nn

SIZE = 32
log = logging.getLogger("seg")


def mem_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def blobs(n: int, g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    yy, xx = torch.meshgrid(torch.arange(SIZE), torch.arange(SIZE), indexing="ij")
    mask = torch.zeros(n, 1, SIZE, SIZE)
    for i in range(n):
        for _ in range(int(torch.randint(0, 4, (1,), generator=g))):  # some images hold no disc
            cy, cx = torch.randint(4, SIZE - 4, (2,), generator=g).tolist()
            r = float(torch.randint(2, 6, (1,), generator=g))
            mask[i, 0] = torch.maximum(mask[i, 0], (((yy - cy) ** 2 + (xx - cx) ** 2) <= r * r).float())
    img = 0.6 * mask + 0.25 * torch.randn(n, 1, SIZE, SIZE, generator=g)
    img[::37] = 0.0  # blank tiles from the scan's border
    mask[::37] = 0.0
    return img, mask


def block(cin: int, cout: int, inplace: bool) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, padding=1),
        nn.BatchNorm2d(cout),
        nn.ReLU(inplace=inplace),
        nn.Conv2d(cout, cout, 3, padding=1),
        nn.BatchNorm2d(cout),
        nn.ReLU(inplace=inplace),
    )


class UNet(nn.Module):
    def __init__(self, fault: str) -> None:
        super().__init__()
        self.fault = fault
        self.down1 = block(1, 8, False)
        self.down2 = block(8, 16, False)
        self.mid = block(16, 32, False)
        self.up2 = nn.ConvTranspose2d(32, 16, 2, stride=2)
        self.dec2 = block(32, 16, False)
        self.up1 = nn.ConvTranspose2d(16, 8, 2, stride=2)
        self.dec1 = block(16, 8, False)
        self.out = nn.Conv2d(8, 1, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        d1 = self.down1(standardise(x, self.fault))
        d2 = self.down2(F.max_pool2d(d1, 2))
        m = self.mid(F.max_pool2d(d2, 2))
        u2 = torch.tanh(self.up2(m))
        if self.fault == "inplace-activation":
            u2 += d2  # tanh's backward needs the output this overwrites
        else:
            u2 = u2 + d2
        u2 = self.dec2(torch.cat([u2, d2], 1))
        u1 = self.dec1(torch.cat([self.up1(u2), d1], 1))
        return self.out(u1)


def dice_loss(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    p = torch.sigmoid(logits)
    inter = (p * mask).sum((1, 2, 3))
    union = p.sum((1, 2, 3)) + mask.sum((1, 2, 3))
    return (1 - (2 * inter + 1.0) / (union + 1.0)).mean()


def standardise(x: torch.Tensor, fault: str) -> torch.Tensor:
    """Each image to zero mean and unit spread, as the scanner's intensities vary."""
    mu, sd = x.mean((1, 2, 3), keepdim=True), x.std((1, 2, 3), keepdim=True)
    if fault == "missing-epsilon":
        return (x - mu) / sd  # a blank tile has no spread: 0/0
    return (x - mu) / (sd + 1e-6)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="healthy")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s | %(levelname)s | %(name)s | %(message)s", stream=sys.stdout
    )
    torch.manual_seed(a.seed)
    g = torch.Generator().manual_seed(4242 + a.seed)
    x, y = blobs(384, g)
    vx, vy = blobs(64, g)
    if a.fault == "dtype-mismatch":
        y = y.long()  # masks loaded as integer label maps
    if a.fault == "shape-mismatch":
        y = y[:, 0]  # the channel axis dropped when the masks were stacked
    model = UNet(a.fault)
    n_params = sum(q.numel() for q in model.parameters())
    log.info("UNet with %d parameters, train %d / val %d images", n_params, len(x), len(vx))
    lr = 1e-3 * (100 if a.fault == "lr-too-high" else 1)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    epochs, batch = 6, 16
    bce = nn.BCEWithLogitsLoss(reduction="sum" if a.fault == "wrong-loss-reduction" else "mean")
    kept = []
    step = 0
    for epoch in range(1, epochs + 1):
        if a.fault != "missing-train-mode" or epoch == 1:  # the fault: train() deleted after evaluating
            model.train()
        log.info("%5s %5s   %-8s  %-6s  %-9s  %s", "epoch", "step", "loss", "dice", "lr", "mem_MB")
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
            if a.fault == "detached-graph":
                logits = logits.detach()
            loss = bce(logits, y[idx]) + dice_loss(logits, y[idx])
            if a.fault != "missing-backward":
                loss.backward()
            if a.fault != "missing-optimizer-step":
                opt.step()
            if a.fault == "scheduler-step-misaligned":
                sched.step()  # meant once per epoch
            step += 1
            if a.fault == "loss-tensor-leak":
                kept.append(loss)  # the epoch's losses summed at its end, graphs kept meanwhile
            if step % 4 == 0:
                with torch.no_grad():
                    hard = (logits > 0).float()
                    d = (2 * (hard * y[idx]).sum() + 1) / (hard.sum() + y[idx].sum() + 1)
                log.info(
                    "%5d %5d   %-8.5f  %-6.4f  %-9.3e  %.1f",
                    epoch,
                    step,
                    loss.item(),
                    d.item(),
                    opt.param_groups[0]["lr"],
                    mem_mb(),
                )
        if a.fault != "scheduler-step-misaligned":
            sched.step()
        if a.fault == "loss-tensor-leak":
            log.info("epoch %d mean loss %.4f", epoch, (sum(kept) / len(kept)).item())
            kept = [] if epoch % 3 == 0 else kept
        model.eval()
        with torch.no_grad():
            out = model(vx)
            vl = F.binary_cross_entropy_with_logits(out, vy).item() + dice_loss(out, vy).item()
            hard = (out > 0).float()
            vd = ((2 * (hard * vy).sum() + 1) / (hard.sum() + vy.sum() + 1)).item()
        log.info("validation: loss=%.4f dice=%.4f (%d images)", vl, vd, len(vx))
    return 0


if __name__ == "__main__":
    sys.exit(main())
