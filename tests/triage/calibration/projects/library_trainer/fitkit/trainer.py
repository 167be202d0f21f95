"""The Trainer: fit a classifier with AdamW, linear warm-up and gradient clipping."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset

logger = logging.getLogger(__name__)


@dataclass
class TrainerConfig:
    lr: float = 1e-2
    epochs: int = 3
    batch_size: int = 16
    warmup_steps: int = 4
    max_grad_norm: float = 1.0
    weight_decay: float = 0.0
    log_every: int = 1
    seed: int = 0


class Trainer:
    """Fits a model on a dataset of (features, label) pairs and reports what it did."""

    def __init__(self, model: nn.Module, config: TrainerConfig | None = None):
        self.model = model
        self.config = config or TrainerConfig()
        self.optimizer = torch.optim.AdamW(
            model.parameters(), lr=self.config.lr, weight_decay=self.config.weight_decay
        )
        warmup = max(1, self.config.warmup_steps)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda step: min(1.0, (step + 1) / warmup)
        )
        self.global_step = 0

    def training_step(self, x: torch.Tensor, y: torch.Tensor) -> tuple[float, float]:
        self.optimizer.zero_grad()
        logits = self.model(x)
        loss = F.cross_entropy(logits, y)
        loss.backward()
        grad_norm = nn.utils.clip_grad_norm_(self.model.parameters(), self.config.max_grad_norm)
        self.optimizer.step()
        self.scheduler.step()
        return loss.item(), float(grad_norm)

    def fit(self, train_set: Dataset, eval_set: Dataset | None = None) -> dict[str, list[float]]:
        torch.manual_seed(self.config.seed)
        loader = DataLoader(train_set, batch_size=self.config.batch_size, shuffle=True)
        history: dict[str, list[float]] = {"loss": [], "eval_loss": [], "eval_accuracy": []}
        for epoch in range(self.config.epochs):
            self.model.train()
            for x, y in loader:
                loss, grad_norm = self.training_step(x, y)
                self.global_step += 1
                history["loss"].append(loss)
                if self.global_step % self.config.log_every == 0:
                    logger.info(
                        "epoch %d step %d loss=%.4f lr=%.3e grad_norm=%.4f",
                        epoch, self.global_step, loss, self.scheduler.get_last_lr()[0], grad_norm,
                    )
                if not math.isfinite(loss):
                    raise FloatingPointError(f"loss became {loss} at step {self.global_step}")
            if eval_set is not None:
                eval_loss, accuracy = self.evaluate(eval_set)
                history["eval_loss"].append(eval_loss)
                history["eval_accuracy"].append(accuracy)
                logger.info("epoch %d val_loss=%.4f val_acc=%.3f", epoch, eval_loss, accuracy)
        return history

    def evaluate(self, eval_set: Dataset) -> tuple[float, float]:
        was_training = self.model.training
        self.model.eval()
        loader = DataLoader(eval_set, batch_size=64)
        total, correct, count = 0.0, 0, 0
        with torch.no_grad():
            for x, y in loader:
                logits = self.model(x)
                total += F.cross_entropy(logits, y, reduction="sum").item()
                correct += (logits.argmax(-1) == y).sum().item()
                count += len(y)
        self.model.train(was_training)
        return total / count, correct / count
