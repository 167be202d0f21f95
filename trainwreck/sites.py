"""Our `sitecustomize` folders: how a hook reaches the Python processes a run starts.

A folder holding a `sitecustomize.py`, put first on PYTHONPATH, makes every new interpreter of
the run import it at start-up (subprocess scripts, torchrun workers, `mp.spawn` ranks). Only
the first `sitecustomize` on the path is imported, so ours runs the next one after it: the
environment's own, or another of ours (the injector's reach recorder during a baseline).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager


def environment(site: str) -> dict[str, str]:
    """PYTHONPATH with `site` first (the rest as it is now)."""
    path = os.environ.get("PYTHONPATH")
    return {"PYTHONPATH": site + (os.pathsep + path if path else "")}


@contextmanager
def variables(values: dict[str, str]) -> Iterator[None]:
    """Within the block, these environment variables hold these values; then what they held."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def chain(site: str) -> None:
    """Run the next `sitecustomize` on sys.path after the one in `site`, which ours shadows.

    `site` is the folder the running `sitecustomize` was loaded from (its `__file__`'s): a
    checkout beside an installed copy holds two copies of each of our folders."""
    here = os.path.realpath(site)
    seen_ours = False
    for entry in sys.path:
        folder = os.path.realpath(entry or ".")
        if folder == here:
            seen_ours = True
            continue
        candidate = os.path.join(folder, "sitecustomize.py")
        if seen_ours and os.path.isfile(candidate):
            spec = importlib.util.spec_from_file_location("_trainwreck_chained_sitecustomize", candidate)
            if spec is not None and spec.loader is not None:
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
            return
