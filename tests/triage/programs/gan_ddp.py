"""Program 5 of 5: a small GAN on a 2-D ring of Gaussians, DDP over 2 gloo ranks under torchrun.

Run as `torchrun --nproc-per-node 2 gan_ddp.py --fault F` (torchrun's `--tee 3` adds per-rank
`[default0]:` prefixes in one seed). Both ranks print `[it N] d_loss=.. g_loss=..` lines; Adam for
both nets. `--fault` applies one catalogued mistake. Kept for reproduction only; the tests read
the logs it left.
"""

from __future__ import annotations

import argparse
import datetime
import math
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def ring(n: int, g: torch.Generator) -> torch.Tensor:
    k = torch.randint(0, 8, (n,), generator=g).float()
    ang = k * 2 * math.pi / 8
    return torch.stack([2 * torch.cos(ang), 2 * torch.sin(ang)], 1) + 0.05 * torch.randn(n, 2, generator=g)


class G(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 2))

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.net(z)


class D(nn.Module):
    def __init__(self, fault: str) -> None:
        super().__init__()
        self.fault = fault
        self.net = nn.Sequential(nn.Linear(2, 64), nn.LeakyReLU(0.2), nn.Linear(64, 64), nn.LeakyReLU(0.2))
        self.out = nn.Linear(64, 1)
        self.aux = nn.Linear(64, 8)  # an auxiliary head kept from an earlier experiment

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.net(x)
        if self.fault == "ddp-unused-parameters":
            return self.out(h)  # the auxiliary head takes no part in the loss
        return self.out(h) + 0.0 * self.aux(h).sum(1, keepdim=True)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="healthy")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--iters", type=int, default=150)
    a = p.parse_args()
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=8))
    rank = dist.get_rank()
    torch.manual_seed(a.seed)
    gen, disc = G(), D(a.fault)
    gen, disc = DDP(gen), DDP(disc)
    lr = 1e-3 * (100 if a.fault == "lr-too-high" else 1)
    og = torch.optim.Adam(gen.parameters(), lr=lr, betas=(0.5, 0.999))
    od = torch.optim.Adam(disc.parameters(), lr=lr, betas=(0.5, 0.999))
    g = torch.Generator().manual_seed(100 * rank + a.seed)
    for it in range(1, a.iters + 1):
        real = ring(64, g)
        z = torch.randn(64, 8, generator=g)
        if a.fault == "rank-skip" and rank == 1 and it == 60:
            continue  # a rank that skips a step: every other rank waits in its all-reduce
        fake = gen(z)
        if a.fault != "missing-zero-grad":
            od.zero_grad()
        src = fake if a.fault == "backward-twice" else fake.detach()
        d_loss = F.binary_cross_entropy_with_logits(disc(real), torch.ones(64, 1)) + F.binary_cross_entropy_with_logits(
            disc(src), torch.zeros(64, 1)
        )
        d_loss.backward()
        gd = torch.nn.utils.clip_grad_norm_(disc.parameters(), float("inf")).item()
        od.step()
        if a.fault != "missing-zero-grad":
            og.zero_grad()
        g_loss = F.binary_cross_entropy_with_logits(disc(fake), torch.ones(64, 1))
        g_loss.backward()
        og.step()
        if it % 5 == 0:
            print(
                f"[it {it}] d_loss={d_loss.item():.4f} g_loss={g_loss.item():.4f} "
                f"D(x)={torch.sigmoid(disc(real)).mean().item():.3f} grad_norm={gd:.4f}",
                flush=True,
            )
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
