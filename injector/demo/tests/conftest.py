"""Shared fixtures: a tiny, seeded configuration that trains in a fraction of a second."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest
import torch

from demo_train.train import TrainConfig

# Tiny tensors: a second thread costs more in hand-off than it saves, and keeps runs repeatable.
torch.set_num_threads(1)


@pytest.fixture
def make_config() -> Callable[..., TrainConfig]:
    """Build a small TrainConfig; keyword arguments override single fields."""

    def make(**overrides: object) -> TrainConfig:
        base = TrainConfig(n_train=128, n_eval=64, batch_size=16, d_model=16, epochs=2)
        return dataclasses.replace(base, **overrides)

    return make


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)
