"""Ready-made modules for quick experiments and for the tests."""

from __future__ import annotations

import torch
from torch import nn


class MLPModule(nn.Module):
    """A multi-layer perceptron: `num_hidden` hidden layers of `hidden_units`, dropout between
    layers, an optional non-linearity after the output layer."""

    def __init__(
        self,
        input_units: int = 20,
        output_units: int = 2,
        hidden_units: int = 10,
        num_hidden: int = 1,
        nonlin: nn.Module | None = None,
        output_nonlin: nn.Module | None = None,
        dropout: float = 0.0,
    ):
        super().__init__()
        self.nonlin = nonlin if nonlin is not None else nn.ReLU()
        self.output_nonlin = output_nonlin
        layers: list[nn.Module] = []
        width = input_units
        for _ in range(num_hidden):
            layers += [nn.Linear(width, hidden_units), self.nonlin, nn.Dropout(dropout)]
            width = hidden_units
        layers.append(nn.Linear(width, output_units))
        self.sequential = nn.Sequential(*layers)

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        X = self.sequential(X)
        if self.output_nonlin is not None:
            X = self.output_nonlin(X)
        return X


def make_classifier(output_units: int = 2, **kwargs):
    """A module class for classification: an MLP whose outputs are probabilities."""

    class ClassifierModule(MLPModule):
        def __init__(self, **more):
            merged = {**kwargs, **more}
            super().__init__(output_units=output_units, output_nonlin=nn.Softmax(dim=-1), **merged)

    return ClassifierModule
