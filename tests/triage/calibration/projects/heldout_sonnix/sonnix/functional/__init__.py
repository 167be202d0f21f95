r"""Losses (upstream: sonnix/functional/loss/ and sonnix/functional/reduction.py)."""

from __future__ import annotations

__all__ = [
    "asinh_mse_loss",
    "asinh_smooth_l1_loss",
    "log_cosh_loss",
    "msle_loss",
    "poisson_regression_loss",
    "reduce_loss",
]

import torch
from torch.nn.functional import mse_loss, smooth_l1_loss


def reduce_loss(tensor: torch.Tensor, reduction: str) -> torch.Tensor:
    r"""Return the reduced loss: ``'mean'``, ``'sum'``, ``'none'`` or ``'batchmean'``."""
    if reduction == "mean":
        return tensor.mean()
    if reduction == "sum":
        return tensor.sum()
    if reduction == "none":
        return tensor
    if reduction == "batchmean":
        return tensor.sum() / tensor.size(0)
    msg = f"Incorrect reduction: {reduction}."
    raise ValueError(msg)


def poisson_regression_loss(
    prediction: torch.Tensor, target: torch.Tensor, reduction: str = "mean", eps: float = 1e-8
) -> torch.Tensor:
    r"""Compute the Poisson regression loss."""
    loss = prediction - target.mul(prediction.clamp(min=eps).log())
    return reduce_loss(loss, reduction)


def log_cosh_loss(
    prediction: torch.Tensor, target: torch.Tensor, reduction: str = "mean", scale: float = 1.0
) -> torch.Tensor:
    r"""Compute the logarithm of the hyperbolic cosine of the prediction error."""
    return reduce_loss(
        target.sub(prediction).div(scale).cosh().log(),
        reduction=reduction,
    )


def msle_loss(prediction: torch.Tensor, target: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    r"""Compute the mean squared error (MSE) on the logarithmic transformed predictions and targets."""
    return mse_loss(prediction.log1p(), target.log1p(), reduction=reduction)


def asinh_mse_loss(prediction: torch.Tensor, target: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    r"""Compute the mean squared error (MSE) on the asinh transformed predictions and targets."""
    return mse_loss(prediction.asinh(), target.asinh(), reduction=reduction)


def asinh_smooth_l1_loss(
    prediction: torch.Tensor, target: torch.Tensor, reduction: str = "mean", beta: float = 1.0
) -> torch.Tensor:
    r"""Compute the smooth L1 loss on the asinh transformed predictions and targets."""
    return smooth_l1_loss(prediction.asinh(), target.asinh(), reduction=reduction, beta=beta)
