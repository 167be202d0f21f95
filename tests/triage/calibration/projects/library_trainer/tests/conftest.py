import pytest
import torch
from torch.utils.data import TensorDataset

from fitkit import MLPClassifier, Trainer, TrainerConfig


def blobs(n, seed):
    g = torch.Generator().manual_seed(seed)
    centers = torch.tensor([[2.0, 0.0, 0.0, 0.0], [0.0, 2.0, 0.0, 0.0], [0.0, 0.0, 2.0, 0.0]])
    y = torch.randint(0, 3, (n,), generator=g)
    x = centers[y] + 0.5 * torch.randn(n, 4, generator=g)
    return TensorDataset(x, y)


@pytest.fixture
def train_set():
    return blobs(96, seed=1)


@pytest.fixture
def eval_set():
    return blobs(48, seed=2)


@pytest.fixture
def make_trainer():
    def make(**overrides):
        torch.manual_seed(0)
        model = MLPClassifier(4, 3, hidden=16, dropout=overrides.pop("dropout", 0.2))
        return Trainer(model, TrainerConfig(**overrides))

    return make
