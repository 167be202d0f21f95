import pytest
import torch


@pytest.fixture
def model():
    torch.manual_seed(0)
    return torch.nn.Linear(4, 1)
