# Taken from pytorch/ignite tests/ignite/metrics/test_mean_squared_error.py: the two tests that
# need neither numpy nor a distributed setup, unchanged (see README.md).
import pytest
import torch

from ignite.exceptions import NotComputableError
from ignite.metrics import MeanSquaredError


def test_zero_sample():
    mse = MeanSquaredError()
    with pytest.raises(
        NotComputableError, match=r"MeanSquaredError must have at least one example before it can be computed"
    ):
        mse.compute()


def test_accumulator_detached():
    mse = MeanSquaredError()

    y_pred = torch.tensor([[2.0], [-2.0]], requires_grad=True)
    y = torch.zeros(2)
    mse.update((y_pred, y))

    assert not mse._sum_of_squared_errors.requires_grad
