"""Single-process stand-in for ``ignite.distributed`` (not upstream code).

The real package wraps native torch.distributed, Horovod and XLA backends. This trimmed copy
only ever runs in one process, so each helper answers as upstream does when no distributed
configuration is set up: world size 1, rank 0, CPU device, and collectives that return their
input unchanged.
"""

from typing import Any

import torch

has_native_dist_support = False
has_xla_support = False
has_hvd_support = False


def device() -> torch.device:
    return torch.device("cpu")


def get_world_size() -> int:
    return 1


def get_rank() -> int:
    return 0


def all_reduce(
    tensor: torch.Tensor | float, op: str = "SUM", group: Any | list[int] | None = None
) -> torch.Tensor | float:
    return tensor


def all_gather(tensor: torch.Tensor | float | str | Any, group: Any | list[int] | None = None) -> Any:
    if isinstance(tensor, torch.Tensor):
        return tensor
    return [tensor]
