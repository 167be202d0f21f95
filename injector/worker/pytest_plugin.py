"""The pytest plugin through which a worker takes over pytest's run loop.

pytest imports the guard's test modules and collects them once, as usual; then, instead of
running them, `pytest_runtestloop` hands the collected items to the worker, which serves the
campaign's commands until it is told to stop.

If importing the tests started CUDA, no child forked from this process could use the GPU, so
the worker starts over as a cold one (see `Worker.restart_cold`). A cold worker's children each
collect the tests themselves, and hand the items to `hand` instead.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from injector.worker import forking
from injector.worker.output import collection_problem, report_message

CUDA_AT_IMPORT = "importing the guard's tests starts CUDA, so each run imports them afresh in its own process"


class TakeOver:
    def __init__(self, worker, hand: Callable[[list, list[str]], None] | None = None) -> None:
        self.worker = worker
        self.hand = hand
        self.errors: list[str] = []

    def pytest_collectreport(self, report) -> None:
        if report.failed:
            self.errors.append(f"{report.nodeid or 'collection'}: {report_message(report)}")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_fixture_setup(self, fixturedef, request):
        if fixturedef.scope == "function":
            yield
            return
        recording = self.worker.shared_fixture(fixturedef.argname)
        next(recording)
        try:
            yield
        finally:
            next(recording, None)

    def pytest_runtestloop(self, session) -> bool:
        if self.hand is not None:
            self.hand(list(session.items), self.errors)
        elif (problem := collection_problem(self.errors, len(session.items))) is not None:
            self.worker.fatal(problem)
        elif forking.cuda_started():
            self.worker.restart_cold(CUDA_AT_IMPORT)
        else:
            self.worker.serve(session.items, startup=time.monotonic() - self.worker.started)
        return True
