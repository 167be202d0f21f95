"""NeuralNetClassifier: a NeuralNet whose module outputs class probabilities."""

from __future__ import annotations

import torch

from sknet.net import NeuralNet


class NeuralNetClassifier(NeuralNet):
    """Classification: NLLLoss on the log of the module's probabilities, `predict` by argmax,
    `score` by accuracy, and the validation accuracy in the history."""

    def __init__(self, module, criterion=torch.nn.NLLLoss, **kwargs):
        super().__init__(module, criterion=criterion, **kwargs)

    def get_loss(self, y_pred: torch.Tensor, y_true: torch.Tensor, training: bool = False) -> torch.Tensor:
        if isinstance(self.criterion_, torch.nn.NLLLoss):
            eps = torch.finfo(y_pred.dtype).eps
            y_pred = torch.log(y_pred + eps)
        return super().get_loss(y_pred, y_true, training=training)

    def on_batch_end(self, step: dict, yi: torch.Tensor, prefix: str) -> None:
        if prefix == "valid":
            hits = (step["y_pred"].argmax(dim=1) == yi).sum().item()
            self.history.record_batch("valid_hits", hits)

    def on_epoch_end(self) -> None:
        batches = [b for b in self.history[-1]["batches"] if "valid_hits" in b]
        if batches:
            seen = sum(b["valid_batch_size"] for b in batches)
            self.history.record("valid_acc", sum(b["valid_hits"] for b in batches) / seen)

    def predict(self, X) -> torch.Tensor:
        return self.predict_proba(X).argmax(dim=1)

    def score(self, X, y) -> float:
        y = torch.as_tensor(y)
        return (self.predict(X) == y).float().mean().item()
