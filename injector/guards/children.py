"""Watching the Python processes that watched code starts (scripts, torchrun, mp.spawn ranks).

Forked processes inherit the hooks as they are. Processes started afresh cannot: while a
`watch` block runs, the fault ids travel in an environment variable and a `sitecustomize` on
PYTHONPATH starts the same watchers in every new interpreter. A violation there raises where it
happens (the process fails, as the parent's test sees); a whole-run check that fails at exit
ends the process with EXIT_FAILED. Any other `sitecustomize` on the path still runs after ours.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from trainwreck import sites

ENV = "TRAINWRECK_WATCH"
SITE = str(Path(__file__).parent / "site")
EXIT_FAILED = 70


@contextmanager
def passed_on(faults: tuple[str, ...], options: dict[str, object]) -> Iterator[None]:
    """Within the block, new Python processes watch `faults` as this one does."""
    spec = json.dumps({"faults": list(faults), "options": options})
    with sites.variables({ENV: spec, **sites.environment(SITE)}):
        yield


@contextmanager
def forked_ranks(verdicts: Callable[[], None]) -> Iterator[None]:
    """Within the block, ranks that `torch.multiprocessing.spawn` / `start_processes` would
    start afresh are forked, while CUDA is not initialised here (a forked process cannot use
    it): each fresh rank would import torch again (about 2 s of CPU each) only to install the
    watchers this process already has. A forked rank inherits them, and runs `verdicts` after
    its function returns, so a whole-run check fails the rank as it would in a fresh one."""
    import torch
    import torch.multiprocessing as tmp

    module = sys.modules["torch.multiprocessing.spawn"]
    original = module.start_processes

    def start_processes(fn: Callable, args: tuple = (), *rest: Any, **kwargs: Any) -> Any:
        method = kwargs.get("start_method", rest[3] if len(rest) > 3 else "spawn")
        if method == "spawn" and "fork" in tmp.get_all_start_methods() and not torch.cuda.is_initialized():
            kwargs["start_method"] = "fork"
            rest = rest[:3]
            fn = functools.partial(_then, fn, verdicts)
        return original(fn, args, *rest, **kwargs)

    for owner in (module, tmp):
        setattr(owner, "start_processes", start_processes)  # noqa: B010 (torch's stubs lack it)
    try:
        yield
    finally:
        for owner in (module, tmp):
            setattr(owner, "start_processes", original)  # noqa: B010


def _then(fn: Callable, verdicts: Callable[[], None], *args: Any) -> None:
    import torch

    # the intra-op thread pool does not survive a fork: a parent that trained before the block (an
    # earlier test, a warm-up) leaves a rank that would hang in its first parallel op
    torch.set_num_threads(1)
    fn(*args)
    verdicts()


def watch_this_process(site: str = SITE) -> None:
    """Start the watchers the parent passed on, for the life of this process (our
    sitecustomize, loaded from `site`, calls this)."""
    spec = os.environ.get(ENV)
    sites.chain(site)
    if not spec:
        return
    try:
        data = json.loads(spec)
        faults = tuple(data["faults"])
        options = dict(data["options"])
    except (ValueError, KeyError, TypeError):
        return
    from injector.guards import watchers

    made = watchers.make(faults, options)
    for watcher in made:
        watcher.start()

    def verdicts() -> None:
        for watcher in made:
            watcher.stop()
        for watcher in made:
            try:
                watcher.verdict()
            except AssertionError as failure:
                print(f"trainwreck guard: {failure}", file=sys.stderr, flush=True)
                os._exit(EXIT_FAILED)

    atexit.register(verdicts)
