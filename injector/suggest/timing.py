"""A pytest plugin that times each test in wall and CPU seconds (`-p injector.suggest.timing`).

CPU time is the test process's own (`time.process_time`) plus that of the child processes it
waited for (DDP ranks, scripts: `RUSAGE_CHILDREN`), over the test's setup, call and teardown.
On a loaded machine the wall time grows with the load and the CPU time does not: CPU time is
the fair number. torch's one-off lazy initialisation (the first forward/backward/optimizer
step of a process) is paid at session start and reported apart, since in a real suite the
first test of the session pays it, whichever that is.

`injector suggest` holds its suggestions to a CPU-time limit with it, and bench/suggest.py
reports with it: `TRAINWRECK_TEST_TIMES=out.json python -m pytest -p injector.suggest.timing`.
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ENV = "TRAINWRECK_TEST_TIMES"
TIMES: list[dict[str, Any]] = []  # a plugin's state lives as long as its pytest session
WARMUP: dict[str, float] = {}


def _children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def pytest_sessionstart(session: pytest.Session) -> None:
    started, cpu = time.perf_counter(), time.process_time()
    import torch

    model = torch.nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    torch.nn.functional.cross_entropy(model(torch.randn(8, 4)), torch.zeros(8, dtype=torch.long)).backward()
    optimizer.step()
    WARMUP.update(wall=time.perf_counter() - started, cpu=time.process_time() - cpu)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    started, cpu, children = time.perf_counter(), time.process_time(), _children()
    yield
    TIMES.append(
        {
            "test": item.nodeid,
            "wall": time.perf_counter() - started,
            "cpu": time.process_time() - cpu,
            "children_cpu": _children() - children,
        }
    )


def pytest_sessionfinish(session: pytest.Session) -> None:
    path = os.environ.get(ENV)
    if path:
        with open(path, "w", encoding="utf-8") as handle:
            json.dump({"warmup": WARMUP, "tests": TIMES}, handle)


def read(path: Path) -> dict[str, float]:
    """The CPU seconds (own and children's) of each test in a file this plugin wrote, by node id."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return {t["test"]: float(t["cpu"]) + float(t["children_cpu"]) for t in data["tests"]}
    except (OSError, ValueError, KeyError, TypeError):
        return {}
