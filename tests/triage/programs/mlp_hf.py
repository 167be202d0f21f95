"""Program 2 of 5: an MLP classifier on synthetic tabular data, trained by the HF Trainer (AdamW).

What the Trainer prints is what it prints: its dict lines, its progress bar, its train summary.
`--fault` applies one catalogued mistake to the model, the data or the TrainingArguments.
Kept for reproduction only (needs `transformers`); the tests read the logs it left.
"""

from __future__ import annotations

import argparse
import sys
import tempfile

import torch
import torch.nn.functional as F
from torch import nn

FEATURES = 24
CLASSES = 5


class Rows(torch.utils.data.Dataset):
    def __init__(self, x: torch.Tensor, y: torch.Tensor) -> None:
        self.x, self.y = x, y

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"features": self.x[i], "labels": self.y[i]}


def make_data(n: int, g: torch.Generator, centers: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    y = torch.randint(0, CLASSES, (n,), generator=g)
    x = centers[y] + 1.6 * torch.randn(n, FEATURES, generator=g)
    return x, y


class MLP(nn.Module):
    def __init__(self, fault: str) -> None:
        super().__init__()
        self.fault = fault
        self.body = nn.Sequential(nn.Linear(FEATURES, 128), nn.GELU(), nn.Linear(128, 128), nn.GELU())
        self.head = nn.Linear(128, CLASSES)
        if fault == "bad-init":
            with torch.no_grad():
                for m in self.modules():
                    if isinstance(m, nn.Linear):
                        m.weight.mul_(40.0)

    def forward(self, features: torch.Tensor, labels: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        # per-row standardisation; the guard keeps an all-zero row (every feature missing and
        # imputed with 0) from dividing 0 by 0
        eps = 0.0 if self.fault == "missing-epsilon" else 1e-6
        features = (features - features.mean(1, keepdim=True)) / (features.std(1, keepdim=True) + eps)
        logits = self.head(self.body(features))
        out = {"logits": logits}
        if labels is None:
            return out
        if self.fault == "double-softmax":
            out["loss"] = F.cross_entropy(F.softmax(logits, dim=-1), labels)
        elif self.fault == "wrong-loss-reduction":
            out["loss"] = F.cross_entropy(logits, labels, reduction="sum")
        elif self.fault == "broadcast-shape":
            # a regression-style loss on one-hot targets of another shape
            target = F.one_hot(labels, CLASSES).float()[:, None, :]
            out["loss"] = F.mse_loss(F.softmax(logits, -1), target)
        else:
            out["loss"] = F.cross_entropy(logits, labels)
        return out


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="healthy")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    from transformers import Trainer, TrainingArguments

    torch.manual_seed(a.seed)
    g = torch.Generator().manual_seed(500 + a.seed)
    centers = torch.randn(CLASSES, FEATURES, generator=g)
    x, y = make_data(1600, g, centers)
    vx, vy = make_data(400, g, centers)
    x[torch.randperm(len(x), generator=g)[:3]] = 0.0  # rows whose every feature was missing
    if a.fault == "label-out-of-range":
        y = y + 1  # classes numbered from 1 in the source file
    if a.fault == "dtype-mismatch":
        y = y.float()
    model = MLP(a.fault)
    if a.fault == "frozen-parameters":
        for prm in model.parameters():
            prm.requires_grad = False
        model.head.bias.requires_grad = True
    n_all = sum(q.numel() for q in model.parameters())
    n_train = sum(q.numel() for q in model.parameters() if q.requires_grad)
    # the line PEFT's print_trainable_parameters() writes, which many fine-tuning scripts copy
    print(f"trainable params: {n_train:,d} || all params: {n_all:,d} || trainable%: {100 * n_train / n_all:.4f}")
    lr = 1e-3 * (300 if a.fault == "lr-too-high" else 1)
    with tempfile.TemporaryDirectory() as out:
        args = TrainingArguments(
            output_dir=out,
            num_train_epochs=4,
            per_device_train_batch_size=32,
            per_device_eval_batch_size=64,
            learning_rate=lr,
            logging_steps=10,
            eval_strategy="epoch",
            save_strategy="no",
            report_to=[],
            seed=a.seed,
            use_cpu=True,
            lr_scheduler_type="linear",
            warmup_steps=10,
            max_grad_norm=0.0 if a.fault == "missing-grad-clipping" else 1.0,
            disable_tqdm=bool(a.seed % 2),
            dataloader_num_workers=0,
        )
        trainer = Trainer(model=model, args=args, train_dataset=Rows(x, y), eval_dataset=Rows(vx, vy))
        trainer.train()
    return 0


if __name__ == "__main__":
    sys.exit(main())
