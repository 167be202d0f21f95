r"""Implement a context manager that restores the mode of every submodule (upstream: sonnix/utils/mode.py)."""

from __future__ import annotations

__all__ = ["module_mode"]

from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Generator

    from torch import nn


@contextmanager
def module_mode(module: nn.Module) -> Generator[None]:
    r"""Implement a context manager that restores the mode (train or
    eval) of every submodule individually."""
    modes = {}
    for name, submodule in module.named_modules():
        modes[name] = submodule.training
    try:
        yield
    finally:
        for name, submodule in module.named_modules():
            submodule.train(modes[name])
