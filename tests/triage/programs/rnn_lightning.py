"""Program 4 of 5: a GRU sequence classifier trained with PyTorch Lightning (Adam).

Lightning's own output is the log: its model summary (with the trainable-parameter count), its
progress bar with `train_loss` on it, its warnings. `--fault` applies one catalogued mistake.
Kept for reproduction only (needs `lightning`); the tests read the logs it left.
"""

from __future__ import annotations

import argparse
import sys

import torch
import torch.nn.functional as F
from torch import nn

CLASSES = 4
LENGTH = 40


def make_data(n: int, g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """The class is which of four slow waves runs under the noise."""
    y = torch.randint(0, CLASSES, (n,), generator=g)
    t = torch.arange(LENGTH).float()
    freq = (y.float() + 1)[:, None] * 0.08
    x = torch.sin(freq * t[None, :] + torch.rand(n, 1, generator=g) * 6.28)
    x = x + 0.9 * torch.randn(n, LENGTH, generator=g)
    return x[:, :, None], y


class SlowReads(torch.utils.data.Dataset):
    """Samples read from a network share: now and then one read stalls for seconds."""

    def __init__(self, inner: torch.utils.data.Dataset) -> None:
        self.inner = inner

    def __len__(self) -> int:
        return len(self.inner)  # type: ignore[arg-type]

    def __getitem__(self, i: int):
        import time

        time.sleep(3.0 if i % 97 == 13 else 0.002)
        return self.inner[i]


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="healthy")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--epochs", type=int, default=6)
    a = p.parse_args()
    import lightning as L

    class Seq(L.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.rnn = nn.GRU(1, 48, batch_first=True, num_layers=2)
            self.head = nn.Linear(48, CLASSES)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            out, _ = self.rnn(x)
            h = out[:, -1]
            h = torch.tanh(h)
            if a.fault == "inplace-activation":
                h += 0.1  # tanh's backward needs the output this overwrites
            else:
                h = h + 0.1
            if a.fault == "shape-mismatch":
                h = out.reshape(out.shape[0], -1)
            return self.head(h)

        def training_step(self, batch, idx):
            x, y = batch
            logits = self(x)
            if a.fault == "broadcast-shape":
                loss = F.mse_loss(
                    logits.softmax(-1)[:, :1], F.one_hot(y, CLASSES).float().argmax(1, keepdim=True).float().T
                )
            else:
                loss = F.cross_entropy(logits, y)
            self.log("train_loss", loss, prog_bar=True)
            return loss

        def validation_step(self, batch, idx):
            x, y = batch
            logits = self(x)
            self.log("val_loss", F.cross_entropy(logits, y), prog_bar=True)
            self.log("val_acc", (logits.argmax(1) == y).float().mean(), prog_bar=True)

        def configure_optimizers(self):
            lr = 3e-3 * (200 if a.fault == "lr-too-high" else 1)
            return torch.optim.Adam(self.parameters(), lr=lr)

    L.seed_everything(a.seed)
    g = torch.Generator().manual_seed(900 + a.seed)
    x, y = make_data(960, g)
    vx, vy = make_data(240, g)
    if a.fault == "label-out-of-range":
        y[::7] = -1  # missing labels encoded as -1
    if a.fault == "no-shuffle":
        o = torch.argsort(y, stable=True)
        x, y = x[o], y[o]
    model = Seq()
    if a.fault == "frozen-parameters":
        model.rnn.requires_grad_(False)
        model.head.weight.requires_grad_(False)
    data = torch.utils.data.TensorDataset(x, y)
    if a.fault == "dataloader-bottleneck":
        data = SlowReads(data)
    train = torch.utils.data.DataLoader(
        data,
        batch_size=24,
        shuffle=a.fault != "no-shuffle",
        **({"num_workers": 1, "timeout": 2} if a.fault == "dataloader-bottleneck" else {}),
    )
    val = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(vx, vy), batch_size=120)
    # the tqdm bar most Lightning users see in CI (one seed keeps the rich bar Lightning picks
    # when `rich` is installed: it prints the final state only)
    bars = [] if a.seed == 1 else [L.pytorch.callbacks.TQDMProgressBar(refresh_rate=4)]
    trainer = L.Trainer(
        max_epochs=a.epochs,
        accelerator="cpu",
        devices=1,
        log_every_n_steps=5,
        enable_checkpointing=False,
        logger=False,
        callbacks=bars,
        gradient_clip_val=None if a.fault == "missing-grad-clipping" else 1.0,
    )
    trainer.fit(model, train, val)
    return 0


if __name__ == "__main__":
    sys.exit(main())
