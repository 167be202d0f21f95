"""Program 12 (written for issue 9's fresh program 12 without reading triage's rules): a VAE.

A generative model, where most before it classify: a small convolutional variational autoencoder
on synthetic 16x16 grayscale images of bars, squares and soft blobs at random positions (now and
then a blank frame), with batch norm and dropout in the encoder. The loss is a summed
binary cross-entropy reconstruction plus a KL term whose weight beta warms up over the first
epochs; Adam, gradient-norm clipping, ReduceLROnPlateau on the validation loss. The script prints
as PyTorch-Ignite's engine and its usual handlers do (ignite itself is not used):

    Engine run starting with max_epochs=12.
    Epoch[1] Iteration[50/100] Loss: 81.42 Recon: 79.10 KL: 11.60 beta: 0.12
    Validation Results - Epoch[1] Avg loss: 71.55 Avg recon: 69.02 Avg KL: 12.63
    Epoch[1] lr: 0.002 RSS: 301.2 MB
    Epoch[1] Complete. Time taken: 00:00:01.402
    Engine run complete. Time taken: 00:00:17.123

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

SIZE, LATENT = 16, 8


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def elapsed(t0: float) -> str:
    s = time.perf_counter() - t0
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{int(h):02d}:{int(m):02d}:{sec:06.3f}"


def shapes(n: int, g: torch.Generator) -> torch.Tensor:
    """n images in [0, 1], one or two shapes each, drawn on a float64 grid."""
    yy, xx = torch.meshgrid(
        torch.arange(SIZE, dtype=torch.float64), torch.arange(SIZE, dtype=torch.float64), indexing="ij"
    )
    out = torch.zeros(n, 1, SIZE, SIZE, dtype=torch.float64)
    for i in range(n):
        if torch.rand(1, generator=g).item() < 0.0006:
            continue  # a dropped frame: the canvas stays blank
        for _ in range(1 + int(torch.rand(1, generator=g).item() < 0.4)):
            kind = int(torch.randint(0, 4, (1,), generator=g))
            r0, c0 = (int(v) for v in torch.randint(0, SIZE - 3, (2,), generator=g))
            if kind == 0:  # horizontal bar
                length = int(torch.randint(5, 12, (1,), generator=g))
                img = ((yy >= r0) & (yy < r0 + 2) & (xx >= c0 - 4) & (xx < c0 - 4 + length)).double()
            elif kind == 1:  # vertical bar
                length = int(torch.randint(5, 12, (1,), generator=g))
                img = ((xx >= c0) & (xx < c0 + 2) & (yy >= r0 - 4) & (yy < r0 - 4 + length)).double()
            elif kind == 2:  # filled square
                side = int(torch.randint(3, 7, (1,), generator=g))
                img = ((yy >= r0) & (yy < r0 + side) & (xx >= c0) & (xx < c0 + side)).double()
            else:  # soft blob
                sigma = 1.0 + 1.5 * torch.rand(1, generator=g, dtype=torch.float64)
                img = torch.exp(-((yy - r0 - 1.5) ** 2 + (xx - c0 - 1.5) ** 2) / (2 * sigma**2))
            out[i, 0] = torch.maximum(out[i, 0], img)
    return out


class VAE(nn.Module):
    def __init__(self, fault: str) -> None:
        super().__init__()
        self.fault = fault
        # two stride-2 convolutions: 16x16 -> 8x8 -> 4x4
        feat = 32 * (SIZE // 2) ** 2 if fault == "shape-mismatch" else 32 * (SIZE // 4) ** 2
        self.encoder = nn.Sequential(
            nn.Conv2d(1, 16, 3, stride=2, padding=1),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.Conv2d(16, 32, 3, stride=2, padding=1),
            nn.BatchNorm2d(32),
            nn.ReLU(),
            nn.Flatten(),
            nn.Dropout(0.1),
        )
        self.head = nn.Linear(feat, 2 * LATENT)
        self.fc = nn.Linear(LATENT, 32 * (SIZE // 4) ** 2)
        self.decoder = nn.Sequential(
            nn.ConvTranspose2d(32, 16, 4, stride=2, padding=1),
            nn.ReLU(),
            nn.ConvTranspose2d(16, 1, 4, stride=2, padding=1),
        )

    def encode(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        # contrast-normalise each image before the encoder
        mean = x.mean(dim=(1, 2, 3), keepdim=True)
        sd = x.std(dim=(1, 2, 3), keepdim=True)
        x = (x - mean) / (sd if self.fault == "missing-epsilon" else sd + 1e-5)
        mu, logvar = self.head(self.encoder(x)).chunk(2, dim=1)
        return mu, logvar

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        h = F.relu(self.fc(z)).view(-1, 32, SIZE // 4, SIZE // 4)
        return self.decoder(h)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        mu, logvar = self.encode(x)
        z = mu + torch.exp(0.5 * logvar) * torch.randn_like(mu)
        return self.decode(z), mu, logvar


def vae_loss(
    logits: torch.Tensor, x: torch.Tensor, mu: torch.Tensor, logvar: torch.Tensor, beta: float, fault: str
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    bce = F.binary_cross_entropy_with_logits(logits, x, reduction="none")
    # summed over the pixels of an image, averaged over the batch
    recon = bce.mean() if fault == "wrong-loss-reduction" else bce.sum(dim=(1, 2, 3)).mean()
    kl = (-0.5 * (1 + logvar - mu.pow(2) - logvar.exp()).sum(dim=1)).mean()
    return recon + beta * kl, recon, kl


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="healthy")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    fault = a.fault
    torch.manual_seed(a.seed)
    g = torch.Generator().manual_seed(1234 + a.seed)
    train_x, val_x = shapes(3200, g), shapes(640, g)
    if fault != "dtype-mismatch":
        train_x, val_x = train_x.float(), val_x.float()

    model = VAE(fault)
    if fault == "frozen-parameters":
        for prm in model.decoder.parameters():
            prm.requires_grad = False
    n_params = sum(q.numel() for q in model.parameters() if q.requires_grad)
    print(f"Model: VAE(latent={LATENT}), trainable parameters: {n_params}")
    lr = 2e-3 * (200 if fault == "lr-too-high" else 1)
    opt = torch.optim.Adam(model.parameters(), lr=lr, betas=(0.9, 0.999))
    sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="min", factor=0.5, patience=1)
    max_epochs, batch, log_every, warmup_epochs = 12, 32, 10, 4
    iters = len(train_x) // batch
    history = []

    def train_step(x: torch.Tensor, beta: float) -> tuple[float, float, float]:
        if fault != "missing-train-mode":
            model.train()
        if fault != "missing-zero-grad":
            opt.zero_grad()
        if fault == "no-grad-training":
            with torch.no_grad():
                logits, mu, logvar = model(x)
        else:
            logits, mu, logvar = model(x)
        if fault == "detached-graph":
            logits = logits.detach()
        loss, recon, kl = vae_loss(logits, x, mu, logvar, beta, fault)
        if fault != "missing-backward":
            loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=50.0)
        if fault != "missing-optimizer-step":
            opt.step()
        if fault == "scheduler-step-misaligned":
            sched.step(loss.item())
        history.append(loss if fault == "loss-tensor-leak" else loss.item())
        return loss.item(), recon.item(), kl.item()

    def evaluate() -> tuple[float, float, float]:
        model.eval()
        tot = rec = kls = 0.0
        with torch.no_grad():
            for k in range(0, len(val_x), 128):
                x = val_x[k : k + 128]
                logits, mu, logvar = model(x)
                loss, recon, kl = vae_loss(logits, x, mu, logvar, 1.0, fault)
                tot += loss.item() * len(x)
                rec += recon.item() * len(x)
                kls += kl.item() * len(x)
        n = len(val_x)
        return tot / n, rec / n, kls / n

    if fault == "missing-train-mode":
        model.train()
    print(f"Engine run starting with max_epochs={max_epochs}.")
    t_run = time.perf_counter()
    for epoch in range(1, max_epochs + 1):
        t_epoch = time.perf_counter()
        order = torch.randperm(len(train_x), generator=g)
        for it in range(1, iters + 1):
            step = (epoch - 1) * iters + it
            beta = min(1.0, step / (warmup_epochs * iters))
            x = train_x[order[(it - 1) * batch : it * batch]]
            loss, recon, kl = train_step(x, beta)
            if it % log_every == 0:
                print(
                    f"Epoch[{epoch}] Iteration[{it}/{iters}] Loss: {loss:.2f} Recon: {recon:.2f} "
                    f"KL: {kl:.2f} beta: {beta:.2f}"
                )
        # the epoch-completed handlers, then the engine's own line (it times them too)
        v_loss, v_rec, v_kl = evaluate()
        print(f"Validation Results - Epoch[{epoch}] Avg loss: {v_loss:.2f} Avg recon: {v_rec:.2f} Avg KL: {v_kl:.2f}")
        if fault != "scheduler-step-misaligned":
            sched.step(v_loss)
        print(f"Epoch[{epoch}] lr: {opt.param_groups[0]['lr']} RSS: {rss_mb():.1f} MB")
        print(f"Epoch[{epoch}] Complete. Time taken: {elapsed(t_epoch)}")
    print(f"Engine run complete. Time taken: {elapsed(t_run)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
