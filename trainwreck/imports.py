"""Finders that watch one import: what the rest of the import system would find."""

from __future__ import annotations

import sys
from typing import Any


def spec_elsewhere(finder: object, name: str, path: Any = None, target: Any = None) -> Any:
    """The spec the finders on sys.meta_path other than `finder` give for `name`, or None: a
    finder that wraps a module's loader starts from it."""
    for other in sys.meta_path:
        if other is finder or not hasattr(other, "find_spec"):
            continue
        spec = other.find_spec(name, path, target)
        if spec is not None:
            return spec
    return None
