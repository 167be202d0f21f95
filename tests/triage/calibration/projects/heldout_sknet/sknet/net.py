"""NeuralNet: a torch module behind an estimator interface (fit, partial_fit, predict_proba).

One epoch trains on the training part of the data and scores the validation part; the history
keeps every batch's loss and each epoch's means; with `verbose` each epoch prints a row of a
table (epoch, train_loss, valid_loss, and what subclasses add, and the duration).
"""

from __future__ import annotations

import time

import torch
from torch.utils.data import DataLoader, TensorDataset

from sknet.history import History


class NeuralNet:
    """Train `module` (a class, or an instance) with `criterion` and `optimizer`."""

    def __init__(
        self,
        module,
        criterion,
        optimizer=torch.optim.SGD,
        lr: float = 0.01,
        max_epochs: int = 10,
        batch_size: int = 128,
        train_split: float | None = 0.2,
        iterator_shuffle: bool = True,
        verbose: int = 1,
        seed: int = 0,
        **module_kwargs,
    ):
        self.module = module
        self.criterion = criterion
        self.optimizer = optimizer
        self.lr = lr
        self.max_epochs = max_epochs
        self.batch_size = batch_size
        self.train_split = train_split
        self.iterator_shuffle = iterator_shuffle
        self.verbose = verbose
        self.seed = seed
        self.module_kwargs = module_kwargs
        self.initialized_ = False

    # ---- setting up ----

    def initialize(self) -> NeuralNet:
        torch.manual_seed(self.seed)
        self.module_ = self.module(**self.module_kwargs) if isinstance(self.module, type) else self.module
        self.criterion_ = self.criterion() if isinstance(self.criterion, type) else self.criterion
        self.optimizer_ = self.optimizer(self.module_.parameters(), lr=self.lr)
        self.history = History()
        self.initialized_ = True
        self._printed_header = False
        return self

    def _set_training(self, training: bool = True) -> None:
        self.module_.train(training)
        self.criterion_.train(training)

    # ---- data ----

    def get_split(self, X: torch.Tensor, y: torch.Tensor):
        if not self.train_split:
            return (X, y), None
        g = torch.Generator().manual_seed(self.seed)
        order = torch.randperm(len(X), generator=g)
        n_valid = int(len(X) * self.train_split)
        valid, train = order[:n_valid], order[n_valid:]
        return (X[train], y[train]), (X[valid], y[valid])

    def get_iterator(self, X: torch.Tensor, y: torch.Tensor | None, training: bool = False) -> DataLoader:
        data = TensorDataset(X) if y is None else TensorDataset(X, y)
        g = torch.Generator().manual_seed(self.seed + len(self.history))
        return DataLoader(data, batch_size=self.batch_size, shuffle=self.iterator_shuffle and training, generator=g)

    # ---- steps ----

    def infer(self, Xi: torch.Tensor) -> torch.Tensor:
        return self.module_(Xi)

    def get_loss(self, y_pred: torch.Tensor, y_true: torch.Tensor, training: bool = False) -> torch.Tensor:
        return self.criterion_(y_pred, y_true)

    def train_step(self, Xi: torch.Tensor, yi: torch.Tensor) -> dict:
        self._set_training(True)
        self.optimizer_.zero_grad()
        y_pred = self.infer(Xi)
        loss = self.get_loss(y_pred, yi, training=True)
        loss.backward()
        self.optimizer_.step()
        return {"loss": loss, "y_pred": y_pred}

    def validation_step(self, Xi: torch.Tensor, yi: torch.Tensor) -> dict:
        self._set_training(False)
        with torch.no_grad():
            y_pred = self.infer(Xi)
            loss = self.get_loss(y_pred, yi, training=False)
        return {"loss": loss, "y_pred": y_pred}

    def run_single_epoch(self, iterator: DataLoader, training: bool, prefix: str) -> None:
        step_fn = self.train_step if training else self.validation_step
        for Xi, yi in iterator:
            self.history.new_batch()
            step = step_fn(Xi, yi)
            self.history.record_batch(prefix + "_loss", step["loss"].item())
            self.history.record_batch(prefix + "_batch_size", len(Xi))
            self.on_batch_end(step, yi, prefix)

    def on_batch_end(self, step: dict, yi: torch.Tensor, prefix: str) -> None:
        """A hook for subclasses: score the batch's predictions."""

    # ---- fitting ----

    def fit(self, X, y) -> NeuralNet:
        self.initialize()
        return self.partial_fit(X, y)

    def partial_fit(self, X, y, epochs: int | None = None) -> NeuralNet:
        if not self.initialized_:
            self.initialize()
        X, y = torch.as_tensor(X, dtype=torch.float32), torch.as_tensor(y)
        (X_train, y_train), valid = self.get_split(X, y)
        for _ in range(self.max_epochs if epochs is None else epochs):
            started = time.perf_counter()
            self.history.new_epoch()
            self.history.record("epoch", len(self.history))
            self.run_single_epoch(self.get_iterator(X_train, y_train, training=True), True, "train")
            self.history.record("train_loss", _mean_of(self.history[-1]["batches"], "train"))
            if valid is not None:
                self.run_single_epoch(self.get_iterator(*valid), False, "valid")
                self.history.record("valid_loss", _mean_of(self.history[-1]["batches"], "valid"))
            self.on_epoch_end()
            self.history.record("dur", time.perf_counter() - started)
            if self.verbose:
                self._print_row()
        return self

    def on_epoch_end(self) -> None:
        """A hook for subclasses: add the epoch's scores to the history."""

    # ---- predicting ----

    def forward(self, X) -> torch.Tensor:
        X = torch.as_tensor(X, dtype=torch.float32)
        self._set_training(False)
        outputs = []
        with torch.no_grad():
            for (Xi,) in self.get_iterator(X, None):
                outputs.append(self.infer(Xi))
        return torch.cat(outputs)

    def predict_proba(self, X) -> torch.Tensor:
        return self.forward(X)

    # ---- printing ----

    def _columns(self) -> list[str]:
        keys = [k for k in self.history[-1] if k not in ("batches", "epoch", "dur")]
        return ["epoch", *keys, "dur"]

    def _print_row(self) -> None:
        columns = self._columns()
        widths = [max(len(c), 7) for c in columns]
        if not self._printed_header:
            print("  ".join(c.rjust(w) for c, w in zip(columns, widths, strict=True)))
            print("  ".join("-" * w for w in widths))
            self._printed_header = True
        row = self.history[-1]
        cells = [str(row["epoch"])] + [f"{row[c]:.4f}" for c in columns[1:]]
        print("  ".join(cell.rjust(w) for cell, w in zip(cells, widths, strict=True)), flush=True)


def _mean_of(batches: list[dict], prefix: str) -> float:
    """The epoch's loss: batch losses weighted by batch size."""
    rows = [b for b in batches if prefix + "_loss" in b]
    total = sum(b[prefix + "_batch_size"] for b in rows)
    return sum(b[prefix + "_loss"] * b[prefix + "_batch_size"] for b in rows) / max(total, 1)
