r"""A stand-in for coola.random.torch_seed (upstream imports it from the coola package): run a
block under a fixed torch seed and restore the random state afterwards."""

from __future__ import annotations

__all__ = ["torch_seed"]

from contextlib import contextmanager
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from collections.abc import Generator


@contextmanager
def torch_seed(seed: int) -> Generator[None]:
    state = torch.get_rng_state()
    try:
        torch.manual_seed(seed)
        yield
    finally:
        torch.set_rng_state(state)
